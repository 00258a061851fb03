"""How a run is isolated: the machinery behind sandbox.py (bubblewrap, slots, cgroups, zygote,
pump).

sandbox.py tells the story (limits, run_tests, run_many, judging). It calls `detect` once per
process and `launch` once per program; everything here serves one launch: start a fresh sandbox,
bring the program in, write its job and stdin while reading its stdout, stderr and R's result
channel, enforce the limits, kill the sandbox and sweep the slot. The programs that run inside (and,
for the zygote, beside) the sandbox are real Python files, sandbox_programs/runner.py and
sandbox_programs/zygote.py, read here as text and handed to the sandbox's interpreter.

Modes (`detect`): "full" (root + bwrap + cgroup v1 + a uid per slot; programs started through the
slot's zygote unless SANDBOX_ZYGOTE=0), "bwrap" (not root or no cgroups: bwrap as the caller's uid,
rlimits only), "none" (no usable bwrap: a plain child with rlimits). `lim` arguments are
``sandbox.Limits``.

On a shared machine: slot locks live in a per-user directory (`slot_dir`), which must be this user's
own 0700 directory; cgroups are used in full mode only (root only), under this process's own cgroup.
"""
from __future__ import annotations

import fcntl
import marshal
import math
import os
import resource
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

PROGRAMS = Path(__file__).resolve().with_name("sandbox_programs")
RUNNER = (PROGRAMS / "runner.py").read_text()  # R, the trusted runner: see its docstring
# the per-slot pre-started interpreter: see its docstring
ZYGOTE = (PROGRAMS / "zygote.py").read_text()

# The interpreter that runs the candidate's code: the system Python (SANDBOX_PYTHON overrides it),
# NOT this process's interpreter or venv. The code sees that Python's version and standard library
# only, none of the venv's packages. Why: it runs with -s -S as an unprivileged slot uid inside
# bwrap, where only the interpreter, its stdlib and the shared libraries it links are bound
# read-only; a venv (often under a home directory) is neither bound there nor meant to be readable
# by other uids.
PYTHON = os.environ.get("SANDBOX_PYTHON", "/usr/bin/python3")
# slot i runs as uid UID_BASE + i (full mode)
UID_BASE = int(os.environ.get("SANDBOX_UID_BASE", "61000"))
MAX_SLOTS = 64
CG_NAME = "pysandbox"  # full mode: <this process's cgroup>/pysandbox/slot<i>, per controller
# The environment of every sandboxed process, and all of it. PYTHONHASHSEED=0: the hash of a str
# or bytes (so the order of a set of strings) is the same in every run, every slot and every
# process of a run -- the policy is reproducible verdicts. Without it, the zygote's one random seed
# was the seed of every program its slot ran (the plain path: a fresh one per run), so a program
# right only by a lucky order of a set passed on some slots and failed on others, at random per
# batch. Such a program is still wrong on a judge with random seeds; here its verdict is fixed.
# Because the interpreters read it, they start with -s rather than -I (-I ignores the environment);
# the environment is this dict only, and the runner and the zygote drop the current directory from
# sys.path (what -I did: the sandbox's /tmp is the candidate's to write).
# OUTPUT_PATH: where HackerRank's judge reads a program's answer, and its template writes it
# (``fptr = open(os.environ['OUTPUT_PATH'], 'w')``, in the solutions that TACO and other sets took
# from there): the program's stdout here; without it such a right solution was a KeyError.
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "OUTPUT_PATH": "/dev/stdout"}
NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup")  # the user namespace first
NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
# Modules the zygote imports once, so that programs find them loaded (HumanEval: typing alone is
# ~12 ms of start-up per program). Only modules without per-process state (no `random`: a forked
# copy would repeat its sequence; `random` reseeds itself after fork anyway, but stays out).
PRELOAD = ("typing", "collections", "math", "re", "functools", "itertools", "heapq", "bisect",
           "string", "operator", "copy", "hashlib", "marshal", "_ctypes")


# A small seccomp filter (EPERM for a few system calls; everything else allowed), installed in every
# sandboxed process. Not a full syscall policy (see sandbox.py's residual risks); it closes:
#   * kernel keyrings (add_key, request_key, keyctl): keys belong to the uid, not to a namespace,
#     and outlive the sandbox until the kernel's key GC runs (seconds) -- a program could leave
#     data there, user-readable by serial number, for the next program of its slot (same uid);
#   * interfaces no program here needs that are a large kernel attack surface: bpf, userfaultfd,
#     perf_event_open, io_uring;
#   * sync and syncfs: the sandbox's files are on tmpfs, so these reach only the host's disks. One
#     sync() writes back every dirty page of every filesystem, and a program calls it ~350 times a
#     second -- a disk-I/O denial of service for the host and every other run. (fsync and
#     fdatasync act on the caller's own file only, a tmpfs file here, and stay allowed.)
# Any other architecture (i386 syscalls through int 0x80 on x86_64, x32) is refused outright, since
# its syscall numbers differ.
SECCOMP_DENY = {  # AUDIT_ARCH_*: (add_key, request_key, keyctl, perf_event_open, bpf, userfaultfd,
    #                             io_uring_setup, io_uring_enter, io_uring_register, sync, syncfs)
    "x86_64": (0xC000003E, (248, 249, 250, 298, 321, 323, 425, 426, 427, 162, 306)),
    "aarch64": (0xC00000B7, (217, 218, 219, 241, 280, 282, 425, 426, 427, 81, 267)),
}


def seccomp_filter() -> bytes:
    """The filter as a classic-BPF program (struct sock_filter[]); b"" on another architecture.

    >>> len(seccomp_filter()) % 8, seccomp_filter()[-8:] == bytes.fromhex("0600000001000500")
    (0, True)
    """
    arch = SECCOMP_DENY.get(os.uname().machine)
    if arch is None or not os.path.exists("/proc/sys/kernel/seccomp/actions_avail"):
        return b""  # another architecture, or a kernel without seccomp filters
    audit_arch, nrs = arch
    n_checks = len(nrs) + 1
    prog = [(0x20, 0, 0, 4),  # A = seccomp_data.arch
            (0x15, 0, n_checks + 2, audit_arch),  # another ABI: deny
            (0x20, 0, 0, 0),  # A = seccomp_data.nr
            (0x35, n_checks, 0, 0x40000000)]  # x32 (nr >= 2**30): deny
    prog += [(0x15, n_checks - 1 - i, 0, nr) for i, nr in enumerate(nrs)]  # a denied nr
    prog += [(0x06, 0, 0, 0x7FFF0000),  # SECCOMP_RET_ALLOW
             (0x06, 0, 0, 0x00050000 | 1)]  # SECCOMP_RET_ERRNO | EPERM
    return b"".join(code.to_bytes(2, "little") + bytes((jt, jf)) + k.to_bytes(4, "little")
                    for code, jt, jf, k in prog)


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program under test), or isolation was required and
    missing."""


@dataclass
class Run:
    """What one launch saw."""
    hello: bool = False
    returncode: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    frames: list = None  # authenticated frames from R (decoded)
    killed: str = ""  # "", "timeout", "output", "channel"
    oom: bool = False
    cpu_s: float = 0.0
    cpu_budget: float = 0.0


# --------------------------------------------------------------------------------------------
# Which mode, which files to bind.
# --------------------------------------------------------------------------------------------
def detect(probe_limits) -> dict:
    """Decide the isolation mode (full / bwrap / none); the zygote is probed with `probe_limits`."""
    s: dict = {"python": os.path.realpath(PYTHON)}
    if not os.path.exists(s["python"]):
        raise SandboxError(f"sandbox interpreter {PYTHON} not found. Sandboxed code runs under the "
                           f"system Python, not this process's venv: install it (apt-get install "
                           f"-y python3) or set SANDBOX_PYTHON to a python3 readable by every user")
    if not os.access(s["python"], os.X_OK):
        raise SandboxError(f"sandbox interpreter {PYTHON} is not executable; set SANDBOX_PYTHON to "
                           f"a python3 (default /usr/bin/python3)")
    # a slot directory owned by someone else is an error now, not at the first run
    os.close(open_slot_dir())
    bwrap = shutil.which("bwrap")
    s["prlimit"] = shutil.which("prlimit")
    root = os.geteuid() == 0
    cg = {c: _own_cgroup(c) for c in ("memory", "pids", "cpuacct")}
    mode, why = "none", "bubblewrap not found (apt-get install -y bubblewrap)"
    if bwrap:
        s["binds"], s["links"] = _bind_paths(s["python"])
        s["bwrap"] = bwrap
        s["setpriv"] = shutil.which("setpriv")
        s["disable_userns"] = "--disable-userns" in subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True).stdout
        mode, why = "bwrap", ""
        probe = _probe_bwrap(s, UID_BASE if root else None)
        if probe:
            mode, why = "none", (f"bubblewrap does not work here ({probe.strip()[:300]}); as a "
                                 f"non-root user it needs unprivileged user namespaces (sysctl "
                                 f"kernel.unprivileged_userns_clone=1, or run as root)")
        elif not root:
            why = ("not root: one uid for all runs and no cgroups (memory by RLIMIT_AS, processes"
                   " by RLIMIT_NPROC)")
        elif not all(cg.values()):
            why = ("cgroup v1 memory/pids/cpuacct not writable: memory by RLIMIT_AS, processes by"
                   " RLIMIT_NPROC")
        else:
            mode = "full"
    s["mode"], s["why"], s["root"] = mode, why, root
    s["cg"] = {c: os.path.join(p, CG_NAME) for c, p in cg.items()} if mode == "full" else {}
    if mode == "full" and os.environ.get("SANDBOX_ZYGOTE", "1") != "0":
        s["zygote"] = True
        why_not = _probe_zygote(s, probe_limits)
        if why_not:
            s["zygote"] = False
            print(f"sandbox.py: note: pre-started interpreters unavailable, one interpreter start "
                  f"per run ({why_not.strip()[:300]})", file=sys.stderr)
    if mode != "full":
        warnings.warn(f"\n{'!' * 78}\nsandbox.py: WEAK ISOLATION (mode {mode!r}): {why}.\n"
                      f"Untrusted code is NOT fully contained. Set SANDBOX_REQUIRE_ISOLATION=1 to "
                      f"refuse.\n{'!' * 78}", RuntimeWarning, stacklevel=3)
        print(f"sandbox.py: WARNING: weak isolation mode {mode!r}: {why}", file=sys.stderr)
    return s


def _own_cgroup(controller: str) -> str | None:
    """Path of this process's cgroup v1 directory for `controller`, if that hierarchy is mounted
    writable."""
    root = f"/sys/fs/cgroup/{controller}"
    try:
        for line in open("/proc/self/cgroup"):
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if controller in ctrls.split(","):
                d = os.path.join(root, path.lstrip("/"))
                return d if os.access(d, os.W_OK) else None
    except OSError:
        pass
    return None


def _bind_paths(python: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Directories to bind read-only (interpreter, stdlib, linked libraries) and top-level
    symlinks."""
    exe = os.path.realpath(python)
    try:
        out = subprocess.run([exe, "-I", "-S", "-c",
                              "import sys,sysconfig;print(sysconfig.get_path('stdlib'));"
                              "print(sysconfig.get_path('platstdlib'));"
                              "print(sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, env={})
        why = "" if out.returncode == 0 and len(out.stdout.split("\n")) >= 3 else \
            f"exit status {out.returncode}: {out.stderr.strip()[-300:]}"
    except (OSError, subprocess.SubprocessError) as e:
        why = str(e)
    if why:
        named = PYTHON if os.path.realpath(PYTHON) == exe else python
        raise SandboxError(f"sandbox interpreter {named} does not run as python3 ({why}); set "
                           f"SANDBOX_PYTHON to a working python3 (default /usr/bin/python3)")
    stdlib, platstdlib = out.stdout.split("\n")[:2]
    dirs = {exe, os.path.realpath(stdlib), os.path.realpath(platstdlib)}
    elves = [exe]
    dyn = os.path.join(platstdlib, "lib-dynload")
    if os.path.isdir(dyn):
        elves += [os.path.join(dyn, f) for f in os.listdir(dyn) if f.endswith(".so")]
    ldd = subprocess.run(["ldd", *elves], capture_output=True, text=True, timeout=60).stdout
    for line in ldd.splitlines():
        for tok in line.split():
            if tok.startswith("/") and ".so" in tok:
                p = tok
                for _ in range(10):  # every directory along the symlink chain
                    dirs.add(os.path.dirname(os.path.realpath(os.path.dirname(p)) + "/x"))
                    if not os.path.islink(p):
                        break
                    p = os.path.join(os.path.dirname(p), os.readlink(p))
                dirs.add(os.path.dirname(os.path.realpath(p)))
    dirs = sorted(d for d in dirs if d not in ("/", "/usr", "/etc", "/root", "/home", "/tmp"))
    # keep only top-most directories (a bound parent covers its children)
    keep = [d for d in dirs if not any(d != o and d.startswith(o + "/") for o in dirs)]
    links = [(os.readlink(f"/{n}"), f"/{n}")
             for n in ("lib", "lib64", "lib32", "libx32", "bin", "sbin") if os.path.islink(f"/{n}")]
    # `python3` and `python` on the sandbox's PATH are the interpreter itself, as on a judge: a
    # program that starts Python again (subprocess.run(["python3", ...])) found no python3
    for name in ("/usr/bin/python3", "/usr/bin/python"):
        if name != exe and not any(name.startswith(d + "/") for d in keep):
            links.append((exe, name))
    return keep, links


def _probe_zygote(s: dict, lim) -> str:
    """'' if a program runs through the zygote path (see zygote.py), else why not."""
    try:
        run = _launch_zygote(s, "stdio", "print(input() * 2)", b"21\n", lim, 1)
    except Exception as e:  # noqa: BLE001 - any failure means "unusable"
        return repr(e)
    if run.hello and run.returncode == 0 and run.stdout == b"2121\n":
        return ""
    return run.stderr.decode("utf-8", "replace") or f"exit status {run.returncode}"


def _probe_bwrap(s: dict, uid: int | None) -> str:
    cmd = _bwrap_argv(s, 64 << 20) + [s["python"], "-I", "-S", "-c", "print('ok')"]
    try:
        kw = dict(user=uid, group=uid, extra_groups=[]) if uid is not None else {}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env={}, cwd="/", **kw)
    except Exception as e:  # noqa: BLE001 - any failure means "unusable"
        return repr(e)
    return "" if p.stdout.strip() == "ok" else (p.stderr or f"exit {p.returncode}")


def _bwrap_argv(s: dict, tmp_bytes: int) -> list[str]:
    a = [s["bwrap"], "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
         "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
         "--hostname", "sandbox"]
    if s.get("disable_userns"):
        a.append("--disable-userns")
    for d in s["binds"]:
        a += ["--ro-bind", d, d]
    for target, name in s["links"]:
        a += ["--symlink", target, name]
    # bwrap's --dev is a writable tmpfs with no size cap (only the memory cgroup bounded files
    # written there): /dev is made read-only, and /dev/shm (POSIX semaphores and shared memory:
    # multiprocessing) becomes a tmpfs capped like /tmp
    a += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/dev/shm",
          "--remount-ro", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp",
          "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    for name, value in SANDBOX_ENV.items():
        a += ["--setenv", name, value]
    return a + ["--"]


# --------------------------------------------------------------------------------------------
# Slots: a uid and a cgroup per controller for each concurrent run, held by an flock.
# --------------------------------------------------------------------------------------------
def slot_dir() -> str:
    """The directory of this user's slot lock files: one per effective uid, so that users never
    share it.

    Not under $XDG_RUNTIME_DIR: every process of a user must find the same locks, and an
    environment variable can differ between them (sudo, cron, a login shell).

    >>> slot_dir() == f"/tmp/.pysandbox-slots-{os.geteuid()}"
    True
    """
    return f"/tmp/.pysandbox-slots-{os.geteuid()}"


def open_slot_dir() -> int:
    """A descriptor of the slot directory, created 0700 if missing; SandboxError if it is not this
    user's own."""
    path, uid = slot_dir(), os.geteuid()
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise SandboxError(f"sandbox slot directory {path} cannot be created ({e.strerror}); fix: "
                           f"make /tmp writable for uid {uid}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        fd, st, why = -1, None, e.strerror
        try:
            st = os.lstat(path)
        except OSError:
            pass
    else:
        st, why = os.fstat(fd), ""
    if st is None or not stat.S_ISDIR(st.st_mode):
        kind = why if st is None else "a symlink" if stat.S_ISLNK(st.st_mode) else "a file"
        problem, fix = f"is not a directory (it is {kind})", f"remove it (rm {path})"
    elif st.st_uid != uid:
        who = "root" if st.st_uid == 0 else f"uid {st.st_uid} or root"
        problem, fix = (f"is owned by uid {st.st_uid}, not by this user (uid {uid})",
                        f"remove it (as {who}: rm -r {path})")
    elif st.st_mode & 0o077:
        problem, fix = f"is open to other users (mode {st.st_mode & 0o777:o})", f"chmod 700 {path}"
    elif fd < 0:
        problem, fix = f"cannot be opened ({why})", f"chmod 700 {path}"
    else:
        return fd
    if fd >= 0:
        os.close(fd)
    raise SandboxError(f"sandbox slot directory {path} {problem}; fix: {fix} and run again")


class _Slot:
    """One concurrent run: a uid and a cgroup per controller, held by an flock across processes."""

    def __init__(self, s: dict):
        self.s = s
        dfd = open_slot_dir()
        try:
            while True:
                for i in range(MAX_SLOTS):
                    fd = os.open(f"{i}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                                 0o600, dir_fd=dfd)
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        os.close(fd)
                        continue
                    self.i, self.fd = i, fd
                    self.uid = UID_BASE + i if s["root"] else None
                    self.cg = {c: f"{p}/slot{i}" for c, p in s["cg"].items()}
                    if self.cg:
                        self._make_cgroups()
                    return
                time.sleep(0.01)
        finally:
            os.close(dfd)

    def _make_cgroups(self):
        for c, d in self.cg.items():
            if not os.path.isdir(d):
                os.makedirs(d, exist_ok=True)
            os.chown(f"{d}/cgroup.procs", self.uid, self.uid)  # the slot uid moves itself in
        self.sweep()

    def _write(self, c: str, name: str, value) -> bool:
        try:
            with open(f"{self.cg[c]}/{name}", "w") as f:
                f.write(str(value))
            return True
        except OSError:
            return False

    def _read(self, c: str, name: str) -> str:
        try:
            with open(f"{self.cg[c]}/{name}") as f:
                return f.read()
        except OSError:
            return ""

    def prepare(self, lim):
        if not self.cg:
            return
        mem = (lim.memory_mb + 64) << 20
        # fails if below the current limit: retried
        self._write("memory", "memory.memsw.limit_in_bytes", mem)
        self._write("memory", "memory.limit_in_bytes", mem)
        self._write("memory", "memory.memsw.limit_in_bytes", mem)
        self._write("memory", "memory.max_usage_in_bytes", 0)
        self._write("memory", "memory.failcnt", 0)
        unreaped = int(self._read("pids", "pids.current").strip() or 0)  # zombies still counted
        self._write("pids", "pids.max", lim.max_processes + unreaped)
        self._write("cpuacct", "cpuacct.usage", 0)
        self.oom0 = self.oom_kills()

    def oom_kills(self) -> int:
        for line in self._read("memory", "memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def cpu_s(self) -> float:
        v = self._read("cpuacct", "cpuacct.usage").strip()
        return int(v) / 1e9 if v else 0.0

    def settle(self, run: Run):
        """After a run: its CPU time and whether it was OOM-killed (from the cgroups), then sweep
        the slot."""
        if self.cg:
            run.cpu_s = self.cpu_s()
            run.oom = self.oom_kills() > self.oom0
        self.sweep()

    def sweep(self, budget_s: float = 5.0):
        """SIGKILL everything left in the slot's cgroups until they are empty."""
        end = time.monotonic() + budget_s
        while self.cg:
            pids = set()
            for c in self.cg:
                pids.update(int(x) for x in self._read(c, "cgroup.procs").split())
            # dead tasks not yet reaped by init still count in pids.current: see prepare()
            if not pids:
                return
            if time.monotonic() > end:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.0005)

    def release(self):
        self.drop_standby()
        os.close(self.fd)

    # A slot leased for a whole run_many keeps one bwrap started ahead (see _Bwrap): its set-up
    # (namespaces, mounts) overlaps the previous program. Nothing runs in it until a program is
    # sent.
    standby = None

    def take_sandbox(self, s: dict, tmp_bytes: int) -> "_Bwrap":
        b, self.standby = self.standby, None
        if b is not None and b.tmp_bytes == tmp_bytes and b.proc.poll() is None:
            return b
        if b is not None:
            b.close()
        return _Bwrap(s, self.uid, tmp_bytes)

    def prestart(self, s: dict, tmp_bytes: int):
        if self.standby is None:
            self.standby = _Bwrap(s, self.uid, tmp_bytes)

    def drop_standby(self):
        b, self.standby = self.standby, None
        if b is not None:
            b.close()


_thread = threading.local()  # inside run_many: the worker thread's SlotLease and slot


class SlotLease:
    """Slots held for a batch (run_many): each worker thread keeps the slot of its first run, and
    the next program's sandbox started ahead in it, until `release` (zygote path only)."""

    def __init__(self):
        self.slots: list[_Slot] = []

    def bind(self):
        """Make this thread's runs use the lease (call it in the worker thread)."""
        if getattr(_thread, "lease", None) is not self:
            _thread.lease, _thread.slot = self, None

    def release(self):
        for slot in self.slots:
            slot.release()


def _cpu_rlimit(cpu_budget: float) -> int:
    """RLIMIT_CPU's soft limit (SIGXCPU: classified as timeout); the hard limit, 1 s later, is
    SIGKILL."""
    return math.ceil(cpu_budget) + 1


# RLIMIT_CORE of exactly 1 byte, not 0: where kernel.core_pattern pipes core dumps to a helper
# (apport, systemd-coredump), the kernel ignores RLIMIT_CORE and starts the helper, as root and
# outside the sandbox's limits, for every crash (os.abort(), a segfault through ctypes): it reads
# the whole dump and writes it to the host's disk. A limit of 1 is the kernel's one exception
# (fs/coredump.c: "RLIMIT_CORE is set to 1, aborting core"); for a core file it is too small.
CORE_LIMIT = 1


def _join_script(cgroup_procs: list[str], lim, cpu_budget: float, mem_rlimit: bool,
                 nproc: bool, prlimit: str | None = None) -> str:
    """Shell run as the slot uid: join the slot's cgroups, set rlimits, exec bwrap (dash: one ulimit
    each; ulimit counts the core limit in blocks, so `prlimit` sets CORE_LIMIT where it exists)."""
    steps = [f'echo $$ > "{p}" || exit 99' for p in cgroup_procs]
    if prlimit:
        steps.append(f"{prlimit} --pid $$ --core={CORE_LIMIT}:{CORE_LIMIT} 2>/dev/null"
                     " || ulimit -c 0 || exit 98")
    cpu = _cpu_rlimit(cpu_budget)
    ulimits = [("S -t", cpu), ("H -t", cpu + 1), ("f", lim.max_file_mb * 2048),
               ("n", lim.max_open_files)] + ([] if prlimit else [("c", 0)])
    if mem_rlimit:
        ulimits.append(("v", (lim.memory_mb + 512) << 10))
    if nproc:
        ulimits.append(("p", lim.max_processes))
    steps += [f"ulimit -{k} {v} || exit 98" for k, v in ulimits]
    return "; ".join(steps + ['exec "$@"'])


def _rlimits(lim, cpu_budget: float) -> list[tuple[int, int, int]]:
    """The second line of limits (the cgroups are the first), as _join_script sets them in full
    mode."""
    cpu = _cpu_rlimit(cpu_budget)
    fsize = lim.max_file_mb << 20
    return [(resource.RLIMIT_CORE, CORE_LIMIT, CORE_LIMIT), (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_FSIZE, fsize, fsize),
            (resource.RLIMIT_NOFILE, lim.max_open_files, lim.max_open_files)]


# --------------------------------------------------------------------------------------------
# The zygote path's processes: a zygote per slot, a fresh bwrap per program.
# --------------------------------------------------------------------------------------------
class _Zygote:
    """This process's zygote for one slot index (root, outside every sandbox; see zygote.py)."""

    _all: dict = {}
    _lock = threading.Lock()

    def __init__(self, s: dict):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [s["python"], "-s", "-S", "-B", "-c", ZYGOTE, str(theirs.fileno()), RUNNER,
             ",".join(PRELOAD)],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=dict(SANDBOX_ENV), cwd="/", start_new_session=True)
        theirs.close()
        self.sock.settimeout(30)
        try:
            ready = self.sock.recv(16)
        except OSError:
            ready = b""
        self.sock.settimeout(None)
        if ready != b"ready":
            self.close()
            raise SandboxError("the sandbox zygote did not start")

    def close(self):
        self.sock.close()
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()

    @classmethod
    def get(cls, s: dict, i: int) -> "_Zygote":
        with cls._lock:
            z = cls._all.get(i)
            if z is not None and z.proc.poll() is None:
                return z
            if z is not None:
                z.close()
            z = cls._all[i] = _Zygote(s)
            return z

    @classmethod
    def drop(cls, i: int):
        with cls._lock:
            z = cls._all.pop(i, None)
        if z is not None:
            z.close()

    @classmethod
    def _forget_after_fork(cls):  # a forked child must not talk to its parent's zygotes
        for z in cls._all.values():
            z.sock.close()
        cls._all = {}
        cls._lock = threading.Lock()


os.register_at_fork(after_in_child=_Zygote._forget_after_fork)


class _Bwrap:
    """A fresh bwrap sandbox that sets itself up and then waits on --block-fd (never released: the
    program is brought in by the zygote; the sandbox is killed after one program). It runs as the
    slot's uid, started through setpriv where available so that no parent-sized fork is needed.

    Waiting there, bwrap is the sandbox's pid 1: the slot uid, like the program, but outside the
    slot's cgroups and seccomp filter, and holding a descriptor of the host's /proc. It keeps one
    capability (CAP_WAKE_ALARM, of no use in a user namespace) that the program lacks, and ptrace(2)
    denies access to a process whose capabilities are not a subset of the caller's: no ptrace of
    pid 1, no /proc/1/mem (code run there would escape the limits and the filter), no following its
    descriptors (the host's /proc listed every host process)."""

    def __init__(self, s: dict, uid: int, tmp_bytes: int):
        self.tmp_bytes = tmp_bytes
        self.block_r, self.block_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.inner = None
        argv = _bwrap_argv(s, tmp_bytes)[:-1] + ["--cap-add", "CAP_WAKE_ALARM",
                                                 "--block-fd", str(self.block_r), "--",
                                                 s["python"], "-I", "-S", "-c", ""]
        kw = {}
        if s.get("setpriv"):
            argv = [s["setpriv"], f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"] + argv
        else:
            kw = dict(user=uid, group=uid, extra_groups=[])
        try:
            self.proc = subprocess.Popen(argv, pass_fds=(self.block_r,), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err_w, env={}, cwd="/",
                                         start_new_session=True, **kw)
        except BaseException:
            for fd in (self.block_r, self.block_w, self.err_r):
                os.close(fd)
            raise
        finally:
            os.close(err_w)

    def wait_ready(self, deadline: float) -> int | None:
        """Host pid of bwrap's sandboxed child once it waits on --block-fd (the sandbox is fully set
        up)."""
        want = f"0 {self.block_r:#x} "
        proc, inner = self.proc, None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return None
            try:
                if inner is None:
                    kids = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
                    inner = int(kids[0]) if kids else None
                if inner is not None and open(f"/proc/{inner}/syscall").read().startswith(want):
                    return inner
            except (OSError, ValueError):
                inner = None
            time.sleep(0.0003)
        return None

    def close(self):
        _kill(self.proc)
        for fd in (self.block_r, self.block_w, self.err_r):
            try:
                os.close(fd)
            except OSError:
                pass


def _namespaces(inner: int, opened: list[int]) -> tuple[list[str], list[int]]:
    """Descriptors of the sandbox's namespaces, in the order K must enter them: the user namespace
    that owns the mount namespace, the others, then the sandbox's own user namespace if it is a
    nested one (bwrap --disable-userns nests one so that no further user namespace can be made
    inside)."""
    names, fds = [], []
    for n in NAMESPACES:
        fd = os.open(f"/proc/{inner}/ns/{n}", os.O_RDONLY | os.O_CLOEXEC)
        opened.append(fd)
        if os.readlink(f"/proc/{inner}/ns/{n}") != os.readlink(f"/proc/self/ns/{n}"):
            names.append(n)
            fds.append(fd)
        elif n != "cgroup":  # every other namespace must be the sandbox's own
            raise SandboxError(f"bwrap's sandbox shares the {n} namespace")
    owner = fcntl.ioctl(fds[names.index("mnt")], NS_GET_USERNS)
    opened.append(owner)
    user = fds[0]
    if os.readlink(f"/proc/self/fd/{owner}") != os.readlink(f"/proc/self/fd/{user}"):
        return ["user (owner)"] + names[1:] + ["user"], [owner] + fds[1:] + [user]
    return names, fds


# --------------------------------------------------------------------------------------------
# One launch: start the sandbox, feed it, read it, kill it.
# --------------------------------------------------------------------------------------------
def launch(s: dict, mode: str, job, stdin: bytes | None, lim, n_tests: int) -> Run:
    """One program in one fresh sandbox (state `s` from `detect`): through the slot's zygote in full
    mode, else a plain start. `job` is R's job (see runner.py) without the secret, which is made
    here."""
    if s.get("zygote"):
        return _launch_zygote(s, mode, job, stdin, lim, n_tests)
    return _launch_plain(s, mode, job, stdin, lim, n_tests)


def _budget(mode: str, job, lim, n_tests: int) -> tuple[bytes, float, tuple, bytes]:
    """A fresh secret, the CPU budget (+ start-up), the wall-clock backstop (the launch's, and each
    test's: `_pump`) and R's job frame.

    By default a test may take 3 x its CPU time + 2 s of wall-clock time, the launch 3 x its whole
    budget + 2 s. Per test, because a program that sleeps (a deadlock, ``queue.get()``, a
    ``time.sleep``) uses no CPU: with one backstop for the launch, a call-based task of 10 tests
    held its slot for 63 s when its function slept in the first call, 25 x the time of a program
    that loops forever (the CPU budget kills that one in 2.3 s)."""
    secret = os.urandom(16)
    cpu_budget = lim.timeout_s * n_tests + 0.3
    if lim.wall_timeout_s is not None:
        wall = (lim.wall_timeout_s, lim.wall_timeout_s)
    else:
        wall = (3 * cpu_budget + 2.0, 3 * (lim.timeout_s + 0.3) + 2.0)
    job_bytes = marshal.dumps((secret,) + job if mode != "stdio" else job)
    return secret, cpu_budget, wall, len(job_bytes).to_bytes(4, "little") + job_bytes


def _launch_zygote(s: dict, mode: str, job, stdin: bytes | None, lim, n_tests: int) -> Run:
    secret, cpu_budget, wall, job_bytes = _budget(mode, job, lim, n_tests)
    run = Run(frames=[], cpu_budget=cpu_budget)
    lease = getattr(_thread, "lease", None)
    slot = _thread.slot if lease is not None else None
    if slot is None:
        slot = _Slot(s)
        if lease is not None:
            _thread.slot = slot
            lease.slots.append(slot)
    # parent-side and sandbox-side descriptors; closed by _pump
    ours, theirs, closed = [], [], set()
    bw = None
    try:
        slot.prepare(lim)
        pipes = [os.pipe() for _ in range(6)]  # stdin, stdout, stderr, job, chan, status
        ((in_r, in_w), (out_r, out_w), (err_r, err_w), (job_r, job_w), (chan_r, chan_w),
         (st_r, st_w)) = pipes
        if stdin is None:
            os.close(in_w)
            in_w = -1
            ours += [out_r, err_r, job_w, chan_r, st_r]
        else:
            ours += [in_w, out_r, err_r, job_w, chan_r, st_r]
        theirs += [in_r, out_w, err_w, job_r, chan_w, st_w]
        _give_stdio(slot.uid, in_r, out_w, err_w)
        start = time.monotonic()
        bw = slot.take_sandbox(s, lim.tmp_mb << 20)
        inner = bw.wait_ready(start + min(wall[0], 30.0))
        if inner is None:
            os.write(err_w, b"sandbox: bwrap did not set up the sandbox\n")
        else:
            nsnames, nsfds = _namespaces(inner, theirs)
            spec = (slot.uid, [f"{d}/cgroup.procs" for d in slot.cg.values()],
                    _rlimits(lim, cpu_budget), nsnames, mode, seccomp_filter())
            try:
                socket.send_fds(_Zygote.get(s, slot.i).sock, [marshal.dumps(spec)],
                                nsfds + [in_r, out_w, err_w, job_r, chan_w, st_w])
            except OSError as e:
                _Zygote.drop(slot.i)
                os.write(err_w, f"sandbox: the zygote is gone ({e})\n".encode())
        if lease is not None:
            # the next program's sandbox sets itself up meanwhile
            slot.prestart(s, lim.tmp_mb << 20)
        for fd in theirs:
            os.close(fd)
        theirs = []
        writers = {job_w: job_bytes} if stdin is None else {job_w: job_bytes, in_w: stdin}
        readers = {out_r: "out", err_r: "err", bw.err_r: "err", chan_r: "chan", st_r: "status"}
        _pump(bw.proc, run, slot, writers, readers, secret, lim, cpu_budget, start, wall, closed)
    finally:
        _close(theirs + ours, closed)
        if bw is not None:
            bw.close()
        slot.settle(run)
        if lease is None:
            slot.release()
    return run


def _give_stdio(uid: int | None, *pipes: int):
    """The program's stdin, stdout and stderr pipes become the slot uid's. Created by root (mode
    0600), they could be used through the descriptors but not opened by name: a program that wrote
    to /dev/stdout (``sys.stdout = open("/dev/stdout", "w")``) or read /dev/stdin was a runtime
    error (PermissionError), whatever its answer. Only these three: job and chan stay root's."""
    if uid is not None:
        for fd in pipes:
            os.fchown(fd, uid, uid)


def _launch_plain(s: dict, mode: str, job, stdin: bytes | None, lim, n_tests: int) -> Run:
    secret, cpu_budget, wall, job_bytes = _budget(mode, job, lim, n_tests)
    slot = _Slot(s)
    run = Run(frames=[], cpu_budget=cpu_budget)
    ours, theirs, closed = [], [], set()  # as in _launch_zygote
    proc, workdir = None, None
    try:
        slot.prepare(lim)
        (job_r, job_w), (chan_r, chan_w), (out_r, out_w), (err_r, err_w) = [
            os.pipe() for _ in range(4)]
        in_r, in_w = os.pipe() if stdin is not None else (subprocess.DEVNULL, -1)
        ours += [job_w, chan_r, out_r, err_r] + ([in_w] if stdin is not None else [])
        theirs += [job_r, chan_w, out_w, err_w] + ([in_r] if stdin is not None else [])
        _give_stdio(slot.uid, *theirs[2:])
        script = _join_script([f"{d}/cgroup.procs" for d in slot.cg.values()], lim, cpu_budget,
                              mem_rlimit=not slot.cg, nproc=not slot.cg and slot.uid is not None,
                              prlimit=s.get("prlimit"))
        inner = [s["python"], "-s", "-S", "-B", "-c", RUNNER, str(job_r), str(chan_w), mode]
        bwrap, keep = _bwrap_argv(s, lim.tmp_mb << 20) if s["mode"] != "none" else [], ()
        bpf = seccomp_filter()
        if bwrap and bpf:  # bwrap reads the filter from a descriptor and installs it
            bpf_r, bpf_w = os.pipe()
            theirs.append(bpf_r)
            os.write(bpf_w, bpf)
            os.close(bpf_w)
            bwrap[-1:], keep = ["--seccomp", str(bpf_r), "--"], (bpf_r,)
        argv = ["/bin/sh", "-c", script, "sh"] + bwrap + inner
        kw = dict(user=slot.uid, group=slot.uid, extra_groups=[]) if slot.uid is not None else {}
        env, cwd = {}, "/"
        # weak mode: at least a private work directory and no inherited environment
        if s["mode"] == "none":
            workdir = tempfile.mkdtemp(prefix="sandbox-")
            if slot.uid is not None:
                os.chown(workdir, slot.uid, slot.uid)
            env, cwd = {**SANDBOX_ENV, "PATH": "/usr/bin:/bin", "HOME": workdir,
                        "TMPDIR": workdir}, workdir
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=in_r, stdout=out_w, stderr=err_w,
                                pass_fds=(job_r, chan_w) + keep, env=env, cwd=cwd,
                                start_new_session=True, **kw)
        for fd in theirs:
            os.close(fd)
        theirs = []
        writers = {job_w: job_bytes} if stdin is None else {job_w: job_bytes, in_w: stdin}
        _pump(proc, run, slot, writers, {out_r: "out", err_r: "err", chan_r: "chan"}, secret, lim,
              cpu_budget, start, wall, closed)
    finally:
        if proc is not None:
            _kill(proc)
            run.returncode = proc.returncode
        _close(theirs + ours, closed)
        slot.settle(run)
        slot.release()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return run


_READ_EVERY_S = 0.002  # the pump reads the program's stdout/stderr at most this often


def _pump(proc: subprocess.Popen, run: Run, slot: _Slot, writers: dict[int, bytes],
          readers: dict[int, str], secret: bytes, lim, cpu_budget: float, start: float,
          wall: tuple[float, float], closed: set):
    """Write the job and stdin while reading the program's pipes; enforce the caps and the CPU/wall
    limits. wall: (the launch's backstop, a test's), in seconds from `start`: each result frame
    from R gives the next test its own (`_budget`). CPU time likewise: the launch's `cpu_budget`,
    and each test's own, lim.timeout_s + 0.3 s from the previous result (the first: from the
    start, its code's loading included, as a judge that runs the program per test counts it).

    writers: descriptor -> bytes for it; each is closed (and added to `closed`) once written, when
      the program stops reading it (EPIPE), or when the pump ends.
    readers: descriptor -> "out" (stdout, capped -> killed "output"), "err" (stderr: the tail is
      kept), "chan" (R's frames, see _frames) or "status" (zygote path: K writes R's wait status;
      its EOF means K is gone, so the sandbox `proc` is killed, as bwrap would end it, and the
      other pipes reach EOF). Readers are read to EOF, never closed here.
    The run ends when every reader is at EOF, R says it is done, a cap is passed or a limit is
    reached."""
    writers = {fd: memoryview(data) for fd, data in writers.items()}
    readers = dict(readers)
    out, err, chan, status = bytearray(), bytearray(), bytearray(), bytearray()
    chan_cap = 64 << 20
    for fd in list(writers) + list(readers):
        os.set_blocking(fd, False)
    poller = select.poll()
    for fd in writers:
        poller.register(fd, select.POLLOUT)
    for fd in readers:
        poller.register(fd, select.POLLIN)
    done = False
    streams_due = 0.0  # when the pump may next read stdout/stderr (see below)
    next_cpu = cpu_mark = 0.0  # cpu_mark: the CPU time when the test under way began
    test_cpu = lim.timeout_s + 0.3
    deadline = start + min(wall)
    try:
        while readers and not done:
            now = time.monotonic()
            if now >= deadline:
                run.killed = "timeout"
                break
            if slot.cg and now >= next_cpu:
                next_cpu = now + 0.02
                # one budget for all the tests let one test take the others' time: 0.5 s per
                # test, a call of 1.3 s passed among four tests, a timeout when run alone
                cpu = slot.cpu_s()
                if cpu > cpu_budget or cpu - cpu_mark > test_cpu:
                    run.killed = "timeout"
                    break
            # The parent's CPU per byte of the program's stdout/stderr is bounded by waking at most
            # every _READ_EVERY_S for them: a pipe written a few bytes at a time woke the pump per
            # write (os.write(2, b"x") in a loop: ~0.6 s of the parent's CPU per second of the
            # program, under the GIL, outside every limit; 64 KiB writes: 1.2 s). A stream with data
            # waits until the next such tick; the pipe holds what comes meanwhile, and a writer that
            # fills it waits, off the CPU. R's result channel is read at once.
            if streams_due > now:
                time.sleep(min(streams_due, deadline) - now)
                streams_due = 0.0
                continue
            for fd, ev in poller.poll(min(20.0, (deadline - now) * 1000 + 1)):
                if fd in writers:
                    try:
                        n = os.write(fd, writers[fd][:1 << 16])
                        writers[fd] = writers[fd][n:]
                        if len(writers[fd]):
                            continue
                    except BlockingIOError:
                        continue
                    except OSError:  # EPIPE: the program does not read its input; fine
                        pass
                    poller.unregister(fd)
                    del writers[fd]
                    os.close(fd)
                    closed.add(fd)
                    continue
                kind = readers.get(fd)
                if kind is None:
                    continue
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    poller.unregister(fd)
                    del readers[fd]
                    # K is gone: R has ended (or never started); end the sandbox
                    if kind == "status":
                        _kill_group(proc)
                    continue
                if kind in ("out", "err"):
                    streams_due = time.monotonic() + _READ_EVERY_S
                if kind == "out":
                    out += data
                    if len(out) > lim.max_output_bytes:
                        run.killed = "output"
                        done = True
                elif kind == "err":
                    err += data
                    if len(err) > 2 * lim.max_stderr_bytes:
                        del err[:len(err) - lim.max_stderr_bytes]
                elif kind == "status":
                    status += data
                else:
                    chan += data
                    if len(chan) > chan_cap:
                        run.killed = "output"
                        done = True
                    seen = len(run.frames)
                    done = _frames(chan, run, secret) or done
                    if len(run.frames) > seen:  # a test's result: the next test's time
                        deadline = min(start + wall[0], time.monotonic() + wall[1])
                        cpu_mark = slot.cpu_s() if slot.cg else 0.0
    finally:
        for fd in writers:
            os.close(fd)
            closed.add(fd)
    if len(status) >= 4:
        run.returncode = os.waitstatus_to_exitcode(
            int.from_bytes(status[:4], "little", signed=True))
    run.stdout = bytes(out[:lim.max_output_bytes])
    run.stderr = bytes(err[-lim.max_stderr_bytes:])


def _frames(buf: bytearray, run: Run, secret: bytes) -> bool:
    """Consume complete frames from the channel buffer. Returns True once R says it is done."""
    while len(buf) >= 4:
        n = int.from_bytes(buf[:4], "little")
        if len(buf) < 4 + n:
            return False
        frame = bytes(buf[4:4 + n])
        del buf[:4 + n]
        if not run.hello:
            run.hello = frame == b"hello"
            continue
        if not frame.startswith(secret):
            run.killed = "channel"
            return True
        try:
            msg = marshal.loads(frame[len(secret):])
        except Exception:  # noqa: BLE001
            run.killed = "channel"
            return True
        if msg == ("done",):
            return True
        run.frames.append(msg)
    return False


def _close(fds: list[int], closed: set):
    """Close the descriptors of a launch that the pump has not closed already."""
    for fd in fds:
        if fd not in closed:
            os.close(fd)


def _kill_group(proc: subprocess.Popen):
    """SIGKILL bwrap's session (its death kills the sandbox's PID namespace: --die-with-parent)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill(proc: subprocess.Popen):
    """_kill_group, then reap `proc` and close its pipes."""
    _kill_group(proc)
    proc.wait()
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f:
            try:
                f.close()
            except OSError:
                pass
