"""The zygote: a pre-started, pre-imported interpreter for one slot, whose children enter the
sandbox.

It runs as root OUTSIDE every sandbox (full isolation mode only), one per slot, and never runs
untrusted code or sees a job. sandbox.py never imports this file: sandbox_isolation.py reads its
text and starts it as ``python -s -S -B -c <this text> SOCK RUNNER PRELOAD``. Imported (linters,
doctest collection), it only defines its functions.

What it receives
  * argv: SOCK, the descriptor of its end of a SOCK_SEQPACKET socket pair; RUNNER, the text of
    runner.py; PRELOAD, a comma-separated list of modules to import once (programs find them
    loaded).
  * Per program, one message on SOCK: ``marshal`` of (uid, cgroup.procs paths, rlimits, namespace
    names, mode, seccomp filter), with descriptors: the fresh sandbox's namespace files (bwrap
    waits on --block-fd in it, set up), then the program's stdin, stdout, stderr, job, chan and
    status pipes.
What it sends back
  * b"ready" on SOCK once, when it is ready for programs. It leaves when SOCK reaches EOF.
  * Per program, nothing itself: it forks K, which joins the slot's cgroups, becomes the slot uid,
    enters the sandbox's user/mount/pid/net/ipc/uts/cgroup namespaces, drops every capability
    (bounding set, capset, no_new_privs), installs the seccomp filter, keeps only the program's
    pipes (as descriptors 0-5), sets the rlimits and forks R -- pid 2 of the sandbox -- which runs
    RUNNER exactly as ``python -s -S -B -c RUNNER 3 4 mode`` would, without paying for the
    interpreter's start-up and the usual imports. K writes R's wait status (4 bytes, little-endian,
    signed) to the status pipe and exits; if K fails before R starts, it writes ``sandbox:
    <error>`` to the program's stderr and exits 70.
"""
import builtins
import ctypes
import gc
import marshal
import os
import resource
import signal
import socket
import sys

PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 23, 24, 36, 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
CAP_SYS_ADMIN = 21
LINUX_CAPABILITY_VERSION_3 = 0x20080522


def check(libc, r, what):
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def enter(libc, spec, fds):
    """K: from root outside to the slot uid inside the fresh sandbox; returns (only in R) the
    mode."""
    uid, cgroups, rlimits, nsnames, mode, bpf = spec
    ns, (stdin, stdout, stderr, job, chan, status) = fds[:len(nsnames)], fds[len(nsnames):]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for path in cgroups:  # still root: join the slot's cgroups (memory, pids, cpuacct)
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    os.setsid()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getgroups():
        raise OSError("could not become uid %d" % uid)
    for name, fd in zip(nsnames, ns):  # the user namespace first: it grants the rights for the rest
        check(libc, libc.setns(fd, 0), "setns " + name)
    os.chdir("/tmp")
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability
    hdr, data = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)()
    check(libc, libc.capset(hdr, data), "capset")
    check(libc, libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    check(libc, libc.capget(hdr, data), "capget")
    if any(data) or libc.prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0:
        raise OSError("capabilities were not dropped")
    if bpf:  # the seccomp filter (sandbox_isolation.seccomp_filter): for K, R and C
        prog = ctypes.create_string_buffer(bpf, len(bpf))

        class Fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        fprog = Fprog(len(bpf) // 8, ctypes.addressof(prog))
        check(libc, libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
              "PR_SET_SECCOMP")
    keep = [os.dup(fd) for fd in (stdin, stdout, stderr, job, chan, status)]
    for i, fd in enumerate(keep):
        os.dup2(fd, i)
    os.closerange(6, 1 << 20)  # the zygote's socket, the namespace files, every other descriptor
    for res, soft, hard in rlimits:
        resource.setrlimit(res, (soft, hard))
    pid = os.fork()
    if pid == 0:
        os.close(5)
        return mode
    for fd in range(5):
        os.close(fd)
    status = os.waitpid(pid, 0)[1]
    try:
        os.write(5, status.to_bytes(4, "little", signed=True))
    finally:
        os._exit(0)


def serve(sock_fd, libc):
    """The zygote's loop: one K per message. Returns only in R, with the program's mode."""
    sock = socket.socket(fileno=sock_fd)
    sock.sendall(b"ready")
    gc.collect()
    gc.freeze()
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 64)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        spec = marshal.loads(msg)
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                return enter(libc, spec, fds)  # returns only in R
            except BaseException as e:
                try:
                    os.write(fds[len(spec[3]) + 2],
                             ("sandbox: %s: %s\n" % (type(e).__name__, e)).encode())
                finally:
                    os._exit(70)
        for fd in fds:
            os.close(fd)


def main():
    """Start up, serve; in R, return the runner's code object (with sys.argv set as R expects
    it)."""
    # started with -s, not -I (it reads PYTHONHASHSEED): -c put the current directory on sys.path
    sys.path[:] = [p for p in sys.path if p]
    sock_fd = int(sys.argv[1])
    runner = compile(sys.argv[2], "<runner>", "exec")
    for m in sys.argv[3].split(","):
        try:
            __import__(m)
        except Exception:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    # If K dies before R (the sweep kills both), R is reparented here, not to the host's init, and
    # -- SIGCHLD ignored -- reaped at once, so the sandbox's PID namespace can end.
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # K processes are reaped by the kernel
    # No PR_SET_PDEATHSIG: it would fire when the *thread* that started the zygote ends. The zygote
    # leaves when its socket reaches EOF, i.e. when the parent process is gone.
    mode = serve(sock_fd, libc)
    sys.argv = ["-c", "3", "4", mode]
    return runner


if __name__ == "__main__":
    exec(main(), {"__name__": "__main__", "__builtins__": builtins})
