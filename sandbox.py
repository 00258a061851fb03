"""Run untrusted Python against tests, isolated, and judge it so that it cannot fake a pass.

Reward functions for code (Skywork-OR1 §3, Qwen3 reasoning RL) execute whatever the policy wrote.
An RL policy finds every hole in the checker, so the checker lives outside the code it checks.

    >>> run_tests("print(int(input()) * 2)", [{"input": "21\\n", "output": "42\\n"}]).verdict
    'accepted'
    >>> run_tests("def f(x): return x + 1", [{"fn_name": "f", "args": [1], "expected": 2}]).passed
    1

Test kinds (fixed API, see DESIGN.md):
  {"input": str, "output": str}            stdin/stdout; one sandbox launch per test.
  {"fn_name": str, "args": list, "expected"} call-based; the expected value never enters the sandbox.
  {"assert": str}                          statements run after the code (HumanEval's ``check``).

How a run is isolated ("full" mode: root + bubblewrap + cgroup v1)
  * Each run is a fresh ``bwrap`` with new user, PID, network, IPC, UTS and mount namespaces,
    ``--die-with-parent``, ``--new-session``, a fresh /proc and /dev, a size-capped tmpfs /tmp as
    the per-run work directory, and only the interpreter, its standard library and the shared
    libraries it links bound read-only. The environment is empty (PATH/HOME/LANG only).
  * The interpreter is not started per run: a pre-imported zygote per slot (outside every sandbox,
    never given a job) forks a process that joins the slot's cgroups, becomes the slot uid, enters
    the fresh bwrap's namespaces (bwrap waits on --block-fd once set up), drops every capability and
    forks the runner as the sandbox's pid 2 (see ZYGOTE). In run_many each worker keeps its slot and
    starts the next program's bwrap ahead. SANDBOX_ZYGOTE=0 starts an interpreter per run instead.
  * It runs as an unprivileged uid, one per concurrent slot (61000+i, no passwd entry needed), so
    root-only files stay unreadable and the launcher's environment is not in /proc/1/environ.
  * Limits: CPU time of the whole process tree (cgroup cpuacct, polled) with a wall-clock backstop
    for sleepers; memory (+swap) and process count by a pre-created cgroup per slot; RLIMIT_CPU,
    RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_CORE=0 as a second line. When a run ends, its bwrap is
    killed (which kills the PID namespace) and the slot's cgroup is swept until it is empty.
  * Output is read while stdin is written (no pipe deadlock), capped (stdout 1 MiB -> verdict
    ``output_limit``; the last 64 KiB of stderr are kept).

How it is judged
  * Syntax errors are found by ``compile`` in the parent; nothing runs (``syntax_error``).
  * stdin/stdout: CRLF, trailing whitespace and trailing blank lines are normalised, the rest is
    exact; optional ``float_tol``; NaN never equal; exit status must be 0.
  * Call-based and assert tests use two processes in the sandbox: a trusted runner R and the
    candidate process C (forked from R *before* R has read the tests or the per-run secret).
    C executes the code; R calls C's functions over a pipe, with arguments marshalled fresh for
    every call (a deep copy) and return values accepted only if they are built from exact
    builtin types (``marshal`` refuses an int subclass or an object with a lying ``__eq__``).
    Call-based: R forwards the values to the parent, which compares them with strict, type-aware
    equality (bool is not int, NaN != NaN, list~tuple, int~float by value, optional float_tol).
    Assert: the test statements run in R, with R's own untouched builtins, on plain values only;
    the candidate's functions are proxies into C. So ``os._exit(0)``, ``sys.exit(0)``, ``atexit``,
    patched builtins, a printed "PASSED" or a lying ``__eq__`` in C cannot make a check pass.
    R reports each result over a separate pipe, every frame prefixed by a per-run secret; R is
    non-dumpable (prctl), so C can neither read its memory nor open its file descriptors.
  * A failure of the sandbox itself (bwrap cannot start, R never says hello) is retried and then
    raised as ``SandboxError``; it is never scored as a wrong answer.

What it does not guarantee (residual risks)
  * No seccomp filter: the kernel's full syscall surface is reachable; a kernel or bubblewrap bug
    (user-namespace privilege escalation) defeats it. Keep the kernel patched.
  * CPU time is polled every 20 ms, so a run may overrun its limit by about that much.
  * Assert tests that need candidate objects other than plain values (instances, generators,
    functions passed as arguments) cannot cross the proxy and fail; keyword/positional semantics
    otherwise match a normal call, but in-place mutation of an argument is not seen by the test.
  * ``marshal.loads`` in R and in the parent reads data that C produced (R validates the types
    before forwarding); a memory-safety bug in ``marshal`` would be a way out of R.
  * Weaker modes: without root, bwrap runs as the caller's uid with no cgroups (rlimits only);
    without bwrap/user namespaces the code runs as a plain child with rlimits (no filesystem or
    network isolation). Both print a loud warning; ``require_isolation=True`` or
    ``SANDBOX_REQUIRE_ISOLATION=1`` makes them an error instead.

CLI: ``python sandbox.py FILE.jsonl`` (rows ``{"code": ..., "tests": [...]}``) prints a verdict table.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import marshal
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields

VERDICTS = ("accepted", "wrong_answer", "runtime_error", "timeout", "memory_limit",
            "output_limit", "syntax_error")


@dataclass
class Result:
    verdict: str  # one of VERDICTS
    passed: int  # tests passed
    total: int  # tests given
    detail: str = ""  # first failure, human-readable
    time_s: float = 0.0  # wall time of the whole run_tests call


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program under test), or isolation was required and missing."""


@dataclass
class Limits:
    timeout_s: float = 2.0  # CPU seconds per test (the whole process tree counts)
    memory_mb: int = 512  # memory for the program (cgroup, incl. tmpfs files); the runner gets 64 MiB more
    wall_timeout_s: float | None = None  # wall-clock backstop per launch; default 3 * CPU budget + 2 s
    max_output_bytes: int = 1 << 20  # stdout cap -> output_limit
    max_stderr_bytes: int = 64 << 10  # keep the last this-many bytes of stderr
    max_processes: int = 32  # pids.max of the slot's cgroup (threads count)
    max_file_mb: int = 16  # RLIMIT_FSIZE
    max_open_files: int = 64  # RLIMIT_NOFILE
    tmp_mb: int = 64  # size of the tmpfs work directory /tmp
    float_tol: float | None = None  # relative/absolute tolerance for floats (stdout tokens and values)
    stop_on_failure: bool = False  # stop a task at its first failing test (remaining count as failed)
    require_isolation: bool | None = None  # refuse weak modes; default from SANDBOX_REQUIRE_ISOLATION
    retries: int = 2  # re-runs after a failure of the sandbox itself


# --------------------------------------------------------------------------------------------
# The trusted runner, executed by the sandbox's interpreter as `python -I -S -c RUNNER job chan mode`.
# Frames on every pipe: 4-byte little-endian length + payload. Stdlib C modules only (fast start).
# --------------------------------------------------------------------------------------------
RUNNER = r'''
import os, sys, marshal, builtins
JOB, CHAN, MODE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def send(fd, b):
    b = len(b).to_bytes(4, "little") + b
    while b:
        b = b[os.write(fd, b):]
def readn(fd, n):
    parts, got = [], 0
    while got < n:
        c = os.read(fd, min(n - got, 1 << 20))
        if not c:
            return None
        parts.append(c); got += len(c)
    return b"".join(parts)
def recv(fd, cap=1 << 28):
    h = readn(fd, 4)
    if h is None:
        return None
    n = int.from_bytes(h, "little")
    return None if n > cap else readn(fd, n)
def _exit(code=None):
    raise SystemExit(code)
builtins.exit = builtins.quit = _exit  # -S skips site, which normally defines them
send(CHAN, b"hello")
if MODE == "stdio":
    code = marshal.loads(recv(JOB)); os.close(JOB); os.close(CHAN)
    main = type(sys)("__main__"); main.__file__ = "/tmp/main.py"; main.__builtins__ = builtins
    sys.modules["__main__"] = main; sys.argv = ["main.py"]
    del send, readn, recv, JOB, CHAN, MODE
    exec(compile(code, "main.py", "exec"), main.__dict__)
    raise SystemExit(0)
import _ctypes
class _int(_ctypes._SimpleCData): _type_ = "i"
class _fn(_ctypes.CFuncPtr): _flags_ = _ctypes.FUNCFLAG_CDECL; _restype_ = _int
prctl = _fn(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"))
if prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0: C may not ptrace R or open /proc/R/{mem,fd}
    raise SystemExit("prctl failed")
c_in, to_c = os.pipe(); c_out, from_c = os.pipe()
if os.fork() == 0:
    # ---- C: the candidate process. It never holds the tests, the secret or the channel. ----
    os.close(JOB); os.close(CHAN); os.close(to_c); os.close(c_out)
    prctl(4, 1, 0, 0, 0)
    g = {"__name__": "solution", "__builtins__": builtins}
    def reply(obj):
        try:
            send(from_c, marshal.dumps(obj, 2))
        except BaseException:
            os._exit(3)
    try:
        exec(compile(marshal.loads(recv(c_in)), "solution.py", "exec"), g)
        names = {}
        for k, v in list(g.items()):
            if k.startswith("__"):
                continue
            if type(v) is type(sys):
                names[k] = ("mod", str(v.__name__))
            elif callable(v):
                names[k] = ("fn", b"")
            else:
                try:
                    names[k] = ("val", marshal.dumps(v, 2))
                except Exception:
                    pass
        msg = ("loaded", names)
    except BaseException as e:
        msg = ("error", type(e).__name__, "%s" % (e,))
    reply(msg)
    while True:
        m = recv(c_in)
        if m is None:
            os._exit(0)
        name, blob = marshal.loads(m)
        try:
            args, kwargs = marshal.loads(blob)
            f = g.get(name)
            if f is None and "Solution" in g:
                f = getattr(g["Solution"](), name)
            if f is None:
                raise NameError("name %r is not defined" % name)
            value = f(*args, **kwargs)
            try:
                msg = ("ok", marshal.dumps(value, 2))
            except Exception:
                msg = ("bad", type(value).__name__)
        except BaseException as e:
            msg = ("error", type(e).__name__, "%s" % (e,))
        reply(msg)
# ---- R: the trusted runner. ----
os.close(c_in); os.close(from_c)
secret, code, tests = marshal.loads(recv(JOB)); os.close(JOB)
PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
def plain(v, depth=0):
    t = type(v)
    if t not in PLAIN or depth > 500:
        raise TypeError("value of type %s cannot leave the sandbox" % t.__name__)
    if t is list or t is tuple or t is set or t is frozenset:
        for x in v:
            plain(x, depth + 1)
    elif t is dict:
        for k, x in v.items():
            plain(k, depth + 1); plain(x, depth + 1)
    return v
def report(obj):
    send(CHAN, secret + marshal.dumps(obj))
def c_reply():
    m = recv(c_out)
    if m is None:
        raise Dead("the candidate process ended (killed, crashed or exited)")
    r = marshal.loads(m)
    if type(r) is not tuple or not r or r[0] not in ("ok", "bad", "error", "loaded"):
        raise Dead("garbled reply from the candidate process")
    return r
class Dead(Exception):
    pass
class CandidateError(Exception):
    pass
class Untransferable(CandidateError):
    pass
def raised(r):
    etype, text = str(r[1])[:100], str(r[2])[:2000]
    base = getattr(builtins, etype, None)
    try:
        if not (isinstance(base, type) and issubclass(base, Exception)) or base is AssertionError:
            raise TypeError
        cls = type(etype, (base, CandidateError), {})
    except Exception:
        cls = CandidateError
    return cls("%s: %s" % (etype, text) if cls is CandidateError else text)
def call(name, args, kwargs):
    send(to_c, marshal.dumps((name, marshal.dumps((args, kwargs), 2))))
    r = c_reply()
    if r[0] == "ok":
        return plain(marshal.loads(r[1]))
    if r[0] == "bad":
        raise Untransferable("returned a value of type %s (only builtin plain types are accepted)" % str(r[1])[:100])
    raise raised(r)
send(to_c, marshal.dumps(code))
try:
    loaded = c_reply()
except Dead as e:
    loaded = ("dead", str(e))
if loaded[0] != "loaded":
    why = ("error", "%s: %s" % (loaded[1], loaded[2])) if loaded[0] == "error" else ("dead", str(loaded[-1]))
    for i in range(len(tests)):
        report((i,) + why)
    report(("done",)); os._exit(0)
if MODE == "call":
    for i, (name, blob) in enumerate(tests):
        send(to_c, marshal.dumps((name, blob)))
        try:
            r = c_reply()
            if r[0] == "ok":
                out = ("ok", marshal.dumps(plain(marshal.loads(r[1]))))
            elif r[0] == "bad":
                out = ("bad", "returned a value of type %s (only builtin plain types are accepted)" % str(r[1])[:100])
            else:
                out = ("error", "%s: %s" % (str(r[1])[:100], str(r[2])[:2000]))
        except Dead as e:
            report((i, "dead", str(e))); break
        except Exception as e:
            out = ("bad", "%s: %s" % (type(e).__name__, e))
        report((i,) + out)
else:
    def proxy(name):
        def f(*args, **kwargs):
            try:
                plain(args); plain(kwargs)
            except TypeError as e:
                raise TypeError("argument cannot be sent to the candidate: %s" % e)
            return call(name, args, kwargs)
        f.__name__ = f.__qualname__ = name
        return f
    tg = {"__name__": "__main__", "__builtins__": builtins}
    for k, (kind, x) in loaded[1].items():
        k = str(k)
        if hasattr(builtins, k):  # a candidate `def abs(x): return 0` must not change the test's abs
            continue
        try:
            if kind == "fn":
                tg[k] = proxy(k)
            elif kind == "val":
                tg[k] = plain(marshal.loads(x))
            elif kind == "mod":
                __import__(str(x)); tg[k] = sys.modules[str(x)]
        except Exception:
            pass
    for i, src in enumerate(tests):
        try:
            exec(compile(src, "<test %d>" % i, "exec"), tg)
            out = ("pass",)
        except Dead as e:
            report((i, "dead", str(e))); break
        except AssertionError as e:
            out = ("fail", "AssertionError: %s" % (e,))
        except Untransferable as e:
            out = ("fail", str(e))
        except CandidateError as e:
            out = ("error", str(e))
        except BaseException as e:
            out = ("error", "%s: %s" % (type(e).__name__, e))
        report((i,) + out)
report(("done",))
os._exit(0)
'''


# --------------------------------------------------------------------------------------------
# The zygote (full mode): one pre-started, pre-imported interpreter per slot, OUTSIDE every sandbox,
# that never runs untrusted code and never sees a job. Per program the parent starts a fresh bwrap
# (``--block-fd``: its namespaces and mounts are set up, then it waits), opens that sandbox's
# namespace files and hands them to the zygote with the program's pipes. The zygote forks K, which
# joins the slot's cgroups, sets the rlimits, becomes the slot uid, enters the fresh sandbox's
# user/mount/pid/net/ipc/uts/cgroup namespaces, drops every capability (bounding set, capset,
# no_new_privs), keeps only the program's pipes, and forks R -- pid 2 of the sandbox -- which
# runs RUNNER exactly as `python -I -S -B -c RUNNER 3 4 mode` would, but without paying for the
# interpreter's start-up and the usual imports. K reports R's exit status and exits.
# --------------------------------------------------------------------------------------------
ZYGOTE = r"""
import os, sys, marshal, socket, signal, builtins, resource, ctypes, gc
SOCK = int(sys.argv[1])
RUNNER_CODE = compile(sys.argv[2], "<runner>", "exec")
for _m in sys.argv[3].split(","):
    try:
        __import__(_m)
    except Exception:
        pass
libc = ctypes.CDLL(None, use_errno=True)
# PR_SET_CHILD_SUBREAPER: if K dies before R (the sweep kills both), R is reparented here, not to the
# host's init, and -- SIGCHLD ignored -- reaped at once, so the sandbox's PID namespace can end.
libc.prctl(36, 1, 0, 0, 0)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # K processes are reaped by the kernel
# No PR_SET_PDEATHSIG: it would fire when the *thread* that started the zygote ends. The zygote
# leaves when its socket reaches EOF, i.e. when the parent process is gone.
del _m

def _check(r, what):
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))

def _enter(spec, fds):
    uid, cgroups, rlimits, nsnames, mode = spec
    ns, (stdin, stdout, stderr, job, chan, status) = fds[:len(nsnames)], fds[len(nsnames):]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for path in cgroups:  # still root: join the slot's cgroups (memory, pids, cpuacct)
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    os.setsid()
    os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getgroups():
        raise OSError("could not become uid %d" % uid)
    for name, fd in zip(nsnames, ns):  # the user namespace first: it grants the rights for the rest
        _check(libc.setns(fd, 0), "setns " + name)
    os.chdir("/tmp")
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last capability)
    hdr, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
    _check(libc.capset(hdr, data), "capset")
    _check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    _check(libc.capget(hdr, data), "capget")
    if any(data) or libc.prctl(23, 21, 0, 0, 0) != 0:  # no capability left, CAP_SYS_ADMIN not in the bounding set
        raise OSError("capabilities were not dropped")
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

def _serve():
    sock = socket.socket(fileno=SOCK)
    sock.sendall(b"ready")
    gc.collect(); gc.freeze()
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
                return _enter(spec, fds)  # returns only in R
            except BaseException as e:
                try:
                    os.write(fds[len(spec[3]) + 2], ("sandbox: %s: %s\n" % (type(e).__name__, e)).encode())
                finally:
                    os._exit(70)
        for fd in fds:
            os.close(fd)

_mode = _serve()
sys.argv = ["-c", "3", "4", _mode]
del _serve, _enter, _check, _mode, SOCK, libc
exec(RUNNER_CODE, {"__name__": "__runner__", "__builtins__": builtins})
"""
# Modules the zygote imports once, so that programs find them loaded (HumanEval: typing alone is
# ~12 ms of start-up per program). Only modules without per-process state (no `random`: a forked
# copy would repeat its sequence; `random` reseeds itself after fork anyway, but stays out).
PRELOAD = ("typing", "collections", "math", "re", "functools", "itertools", "heapq", "bisect", "string",
           "operator", "copy", "hashlib", "marshal", "_ctypes")


# --------------------------------------------------------------------------------------------
# Isolation set-up: which mode, which files to bind, per-slot uid and cgroups.
# --------------------------------------------------------------------------------------------
PYTHON = os.environ.get("SANDBOX_PYTHON", "/usr/bin/python3")
UID_BASE = int(os.environ.get("SANDBOX_UID_BASE", "61000"))
MAX_SLOTS = 64
SLOT_DIR = "/tmp/.pysandbox-slots"
CG_NAME = "pysandbox"
_setup_lock = threading.Lock()
_setup: dict | None = None


def _own_cgroup(controller: str) -> str | None:
    """Path of this process's cgroup v1 directory for `controller`, if that hierarchy is mounted writable."""
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
    """Directories to bind read-only (interpreter, stdlib, linked libraries) and top-level symlinks."""
    exe = os.path.realpath(python)
    out = subprocess.run([exe, "-I", "-S", "-c",
                          "import sys,sysconfig;print(sysconfig.get_path('stdlib'));"
                          "print(sysconfig.get_path('platstdlib'));print(sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=30, env={})
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
    links = [(os.readlink(f"/{n}"), f"/{n}") for n in ("lib", "lib64", "lib32", "libx32", "bin", "sbin")
             if os.path.islink(f"/{n}")]
    return keep, links


def _detect() -> dict:
    """Decide the isolation mode once per process (full / bwrap / none)."""
    s: dict = {"python": os.path.realpath(PYTHON)}
    if not os.path.exists(s["python"]):
        raise SandboxError(f"sandbox interpreter {PYTHON} not found (apt-get install -y python3, or set SANDBOX_PYTHON)")
    bwrap = shutil.which("bwrap")
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
            mode, why = "none", f"bubblewrap does not work here ({probe.strip()[:300]})"
        elif not root:
            why = "not root: one uid for all runs and no cgroups (memory by RLIMIT_AS, processes by RLIMIT_NPROC)"
        elif not all(cg.values()):
            why = "cgroup v1 memory/pids/cpuacct not writable: memory by RLIMIT_AS, processes by RLIMIT_NPROC"
        else:
            mode = "full"
    s["mode"], s["why"], s["root"] = mode, why, root
    s["cg"] = {c: os.path.join(p, CG_NAME) for c, p in cg.items()} if mode == "full" else {}
    if mode == "full" and os.environ.get("SANDBOX_ZYGOTE", "1") != "0":
        s["zygote"] = True
        why_not = _probe_zygote(s)
        if why_not:
            s["zygote"] = False
            print(f"sandbox.py: note: pre-started interpreters unavailable, one interpreter start per run "
                  f"({why_not.strip()[:300]})", file=sys.stderr)
    if mode != "full":
        warnings.warn(f"\n{'!' * 78}\nsandbox.py: WEAK ISOLATION (mode {mode!r}): {why}.\n"
                      f"Untrusted code is NOT fully contained. Set SANDBOX_REQUIRE_ISOLATION=1 to refuse.\n{'!' * 78}",
                      RuntimeWarning, stacklevel=3)
        print(f"sandbox.py: WARNING: weak isolation mode {mode!r}: {why}", file=sys.stderr)
    return s


def _probe_zygote(s: dict) -> str:
    """'' if a program runs through the zygote path (see ZYGOTE), else why not."""
    try:
        run = _launch_zygote(s, "stdio", "print(input() * 2)", b"21\n", Limits(), 1)
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
    a += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp",
          "--remount-ro", "/", "--chdir", "/tmp", "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
          "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8", "--"]
    return a


def _state() -> dict:
    global _setup
    with _setup_lock:
        if _setup is None:
            _setup = _detect()
        return _setup


class _Slot:
    """One concurrent run: a uid and a cgroup per controller, held by an flock across processes."""

    def __init__(self, s: dict):
        self.s = s
        os.makedirs(SLOT_DIR, mode=0o700, exist_ok=True)
        while True:
            for i in range(MAX_SLOTS):
                fd = os.open(f"{SLOT_DIR}/{i}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
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

    def prepare(self, lim: Limits):
        if not self.cg:
            return
        mem = (lim.memory_mb + 64) << 20
        self._write("memory", "memory.memsw.limit_in_bytes", mem)  # fails if below current limit: retried
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

    def sweep(self, budget_s: float = 5.0):
        """SIGKILL everything left in the slot's cgroups until they are empty."""
        end = time.monotonic() + budget_s
        while self.cg:
            pids = set()
            for c in self.cg:
                pids.update(int(x) for x in self._read(c, "cgroup.procs").split())
            if not pids:  # dead tasks not yet reaped by init still count in pids.current: see prepare()
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
    # (namespaces, mounts) overlaps the previous program. Nothing runs in it until a program is sent.
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


def _join_script(cgroup_procs: list[str], lim: Limits, cpu_budget: float, mem_rlimit: bool, nproc: bool) -> str:
    """Shell run as the slot uid: join the slot's cgroups, set rlimits, exec bwrap (dash: one ulimit each)."""
    steps = [f'echo $$ > "{p}" || exit 99' for p in cgroup_procs]
    cpu = math.ceil(cpu_budget) + 1  # soft limit -> SIGXCPU (classified as timeout); hard limit 1 s later -> SIGKILL
    ulimits = [("c", 0), ("S -t", cpu), ("H -t", cpu + 1), ("f", lim.max_file_mb * 2048), ("n", lim.max_open_files)]
    if mem_rlimit:
        ulimits.append(("v", (lim.memory_mb + 512) << 10))
    if nproc:
        ulimits.append(("p", lim.max_processes))
    steps += [f"ulimit -{k} {v} || exit 98" for k, v in ulimits]
    return "; ".join(steps + ['exec "$@"'])


# --------------------------------------------------------------------------------------------
# One launch: start the sandbox, feed it, read it, kill it.
# --------------------------------------------------------------------------------------------
@dataclass
class _Run:
    hello: bool = False
    returncode: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    frames: list = None  # authenticated frames from R (decoded)
    killed: str = ""  # "", "timeout", "output", "channel"
    oom: bool = False
    cpu_s: float = 0.0
    cpu_budget: float = 0.0


def _launch(mode: str, job, stdin: bytes | None, lim: Limits, n_tests: int) -> _Run:
    """One program in one fresh sandbox: through the slot's zygote in full mode, else a plain start."""
    s = _state()
    if s.get("zygote"):
        return _launch_zygote(s, mode, job, stdin, lim, n_tests)
    return _launch_plain(s, mode, job, stdin, lim, n_tests)


SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup")  # the user namespace first


_lease = threading.local()  # inside run_many: the worker thread's slot


class _Zygote:
    """This process's zygote for one slot index (root, outside every sandbox; see ZYGOTE)."""

    _all: dict = {}
    _lock = threading.Lock()

    def __init__(self, s: dict):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [s["python"], "-I", "-S", "-B", "-c", ZYGOTE, str(theirs.fileno()), RUNNER, ",".join(PRELOAD)],
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


def _rlimits(lim: Limits, cpu_budget: float) -> list[tuple[int, int, int]]:
    """The second line of limits (the cgroups are the first), as _join_script sets them in full mode."""
    import resource
    cpu = math.ceil(cpu_budget) + 1  # soft limit -> SIGXCPU (classified as timeout); hard 1 s later -> SIGKILL
    fsize = lim.max_file_mb << 20
    return [(resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_FSIZE, fsize, fsize), (resource.RLIMIT_NOFILE, lim.max_open_files, lim.max_open_files)]


class _Bwrap:
    """A fresh bwrap sandbox that sets itself up and then waits on --block-fd (never released: the
    program is brought in by the zygote; the sandbox is killed after one program). It runs as the
    slot's uid, started through setpriv where available so that no parent-sized fork is needed."""

    def __init__(self, s: dict, uid: int, tmp_bytes: int):
        self.tmp_bytes = tmp_bytes
        self.block_r, self.block_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.inner = None
        argv = _bwrap_argv(s, tmp_bytes)[:-1] + ["--block-fd", str(self.block_r), "--", s["python"], "-I", "-S",
                                                 "-c", ""]
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
        """Host pid of bwrap's sandboxed child once it waits on --block-fd (the sandbox is fully set up)."""
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
    """Descriptors of the sandbox's namespaces, in the order K must enter them: the user namespace that
    owns the mount namespace, the others, then the sandbox's own user namespace if it is a nested one
    (bwrap --disable-userns nests one so that no further user namespace can be made inside)."""
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


NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace


def _launch_zygote(s: dict, mode: str, job, stdin: bytes | None, lim: Limits, n_tests: int) -> _Run:
    secret = os.urandom(16)
    cpu_budget = lim.timeout_s * n_tests + 0.3
    wall = lim.wall_timeout_s if lim.wall_timeout_s is not None else 3 * cpu_budget + 2.0
    job_bytes = marshal.dumps((secret,) + job if mode != "stdio" else job)
    job_bytes = len(job_bytes).to_bytes(4, "little") + job_bytes
    run = _Run(frames=[], cpu_budget=cpu_budget)
    leased = getattr(_lease, "slots", None)
    slot = getattr(_lease, "slot", None) if leased is not None else None
    if slot is None:
        slot = _Slot(s)
        if leased is not None:
            _lease.slot = slot
            leased.append(slot)
    ours, theirs, closed = [], [], set()  # parent-side and sandbox-side descriptors; closed by _pump_fds
    proc = None
    try:
        slot.prepare(lim)
        pipes = [os.pipe() for _ in range(6)]  # stdin, stdout, stderr, job, chan, status; block
        (in_r, in_w), (out_r, out_w), (err_r, err_w), (job_r, job_w), (chan_r, chan_w), (st_r, st_w) = pipes
        if stdin is None:
            os.close(in_w)
            in_w = -1
            ours += [out_r, err_r, job_w, chan_r, st_r]
        else:
            ours += [in_w, out_r, err_r, job_w, chan_r, st_r]
        theirs += [in_r, out_w, err_w, job_r, chan_w, st_w]
        start = time.monotonic()
        bw = slot.take_sandbox(s, lim.tmp_mb << 20)
        proc = bw.proc
        inner = bw.wait_ready(start + min(wall, 30.0))
        if inner is None:
            os.write(err_w, b"sandbox: bwrap did not set up the sandbox\n")
        else:
            nsnames, nsfds = _namespaces(inner, theirs)
            spec = (slot.uid, [f"{d}/cgroup.procs" for d in slot.cg.values()], _rlimits(lim, cpu_budget),
                    nsnames, mode)
            try:
                socket.send_fds(_Zygote.get(s, slot.i).sock, [marshal.dumps(spec)],
                                nsfds + [in_r, out_w, err_w, job_r, chan_w, st_w])
            except OSError as e:
                _Zygote.drop(slot.i)
                os.write(err_w, f"sandbox: the zygote is gone ({e})\n".encode())
        if leased is not None:
            slot.prestart(s, lim.tmp_mb << 20)  # the next program's sandbox sets itself up meanwhile
        for fd in theirs:
            os.close(fd)
        theirs = []
        _pump_fds(proc, run, slot, stdin, job_bytes, in_w, out_r, bw.err_r, err_r, job_w, chan_r, st_r, secret,
                  lim, cpu_budget, start + wall, closed)
    finally:
        for fd in theirs + ours:
            if fd not in closed:
                os.close(fd)
        if proc is not None:
            bw.close()
        if slot.cg:
            run.cpu_s = slot.cpu_s()
            run.oom = slot.oom_kills() > slot.oom0
        slot.sweep()
        if leased is None:
            slot.release()
    return run


def _pump_fds(proc, run: _Run, slot, stdin, job_bytes, in_w, out_r, bwrap_err_r, err_r, job_w, chan_r, st_r,
              secret, lim, cpu_budget, deadline, closed: set):
    """_pump for the zygote path: raw descriptors, and the run ends when K reports R's exit status
    (then the sandbox is killed, as bwrap would end it, and the pipes are drained to EOF)."""
    writers = {job_w: memoryview(job_bytes)}
    if stdin is not None:
        writers[in_w] = memoryview(stdin)
    readers = {out_r: "out", err_r: "err", bwrap_err_r: "err", chan_r: "chan", st_r: "status"}
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
    next_cpu = 0.0
    try:
        while readers and not done:
            now = time.monotonic()
            if now >= deadline:
                run.killed = "timeout"
                break
            if slot.cg and now >= next_cpu:
                next_cpu = now + 0.02
                if slot.cpu_s() > cpu_budget:
                    run.killed = "timeout"
                    break
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
                    if kind == "status":  # K is gone: R has ended (or never started); end the sandbox
                        _kill_group(proc)
                    continue
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
                    done = _frames(chan, run, secret) or done
    finally:
        for fd in writers:
            os.close(fd)
            closed.add(fd)
    if len(status) >= 4:
        run.returncode = os.waitstatus_to_exitcode(int.from_bytes(status[:4], "little", signed=True))
    run.stdout = bytes(out[:lim.max_output_bytes])
    run.stderr = bytes(err[-lim.max_stderr_bytes:])


def _kill_group(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # bwrap; --die-with-parent takes its sandbox's PID 1 along
    except (ProcessLookupError, PermissionError):
        pass


def _launch_plain(s: dict, mode: str, job, stdin: bytes | None, lim: Limits, n_tests: int) -> _Run:
    secret = os.urandom(16)
    cpu_budget = lim.timeout_s * n_tests + 0.3  # + interpreter start-up
    wall = lim.wall_timeout_s if lim.wall_timeout_s is not None else 3 * cpu_budget + 2.0
    job_bytes = marshal.dumps((secret,) + job if mode != "stdio" else job)
    job_bytes = len(job_bytes).to_bytes(4, "little") + job_bytes
    slot = _Slot(s)
    job_r, job_w = os.pipe()
    chan_r, chan_w = os.pipe()
    run = _Run(frames=[], cpu_budget=cpu_budget)
    proc, workdir = None, None
    try:
        slot.prepare(lim)
        script = _join_script([f"{d}/cgroup.procs" for d in slot.cg.values()], lim, cpu_budget,
                              mem_rlimit=not slot.cg, nproc=not slot.cg and slot.uid is not None)
        inner = [s["python"], "-I", "-S", "-B", "-c", RUNNER, str(job_r), str(chan_w), mode]
        argv = ["/bin/sh", "-c", script, "sh"] + (_bwrap_argv(s, lim.tmp_mb << 20) if s["mode"] != "none" else []) + inner
        kw = dict(user=slot.uid, group=slot.uid, extra_groups=[]) if slot.uid is not None else {}
        env, cwd = {}, "/"
        if s["mode"] == "none":  # weak mode: at least a private work directory and no inherited environment
            workdir = tempfile.mkdtemp(prefix="sandbox-")
            if slot.uid is not None:
                os.chown(workdir, slot.uid, slot.uid)
            env, cwd = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir}, workdir
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(job_r, chan_w),
                                env=env, cwd=cwd, start_new_session=True, **kw)
        os.close(job_r); os.close(chan_w)
        job_r = chan_w = -1
        fds, job_w, chan_r = (job_w, chan_r), -1, -1
        _pump(proc, run, slot, stdin, job_bytes, *fds, secret, lim, cpu_budget, start + wall)
    finally:
        for fd in (job_r, job_w, chan_r, chan_w):
            if fd >= 0:
                os.close(fd)
        if proc is not None:
            _kill(proc)
            run.returncode = proc.returncode
        if slot.cg:
            run.cpu_s = slot.cpu_s()
            run.oom = slot.oom_kills() > slot.oom0
        slot.sweep()
        slot.release()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return run


def _kill(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # bwrap's session; its death kills the PID namespace
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f:
            try:
                f.close()
            except OSError:
                pass


def _pump(proc, run: _Run, slot: _Slot, stdin, job_bytes, job_w, chan_r, secret, lim, cpu_budget, deadline):
    """Write stdin and the job while reading stdout, stderr and the channel; enforce caps and limits."""
    writers = {job_w: memoryview(job_bytes)}
    if stdin is not None:
        writers[proc.stdin.fileno()] = memoryview(stdin)
    readers = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err", chan_r: "chan"}
    out, err, chan = bytearray(), bytearray(), bytearray()
    chan_cap = 64 << 20
    for fd in list(writers) + list(readers):
        os.set_blocking(fd, False)
    poller = select.poll()
    for fd in writers:
        poller.register(fd, select.POLLOUT)
    for fd in readers:
        poller.register(fd, select.POLLIN)
    done = False
    next_cpu = 0.0
    try:
        while readers and not done:
            now = time.monotonic()
            if now >= deadline:
                run.killed = "timeout"
                break
            if slot.cg and now >= next_cpu:
                next_cpu = now + 0.02
                if slot.cpu_s() > cpu_budget:
                    run.killed = "timeout"
                    break
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
                    if fd == job_w:
                        os.close(job_w)
                    else:
                        proc.stdin.close()
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
                    continue
                if kind == "out":
                    out += data
                    if len(out) > lim.max_output_bytes:
                        run.killed = "output"
                        done = True
                elif kind == "err":
                    err += data
                    if len(err) > 2 * lim.max_stderr_bytes:
                        del err[:len(err) - lim.max_stderr_bytes]
                else:
                    chan += data
                    if len(chan) > chan_cap:
                        run.killed = "output"
                        done = True
                    done = _frames(chan, run, secret) or done
    finally:
        if job_w in writers:
            os.close(job_w)
        os.close(chan_r)
    run.stdout = bytes(out[:lim.max_output_bytes])
    run.stderr = bytes(err[-lim.max_stderr_bytes:])


def _frames(buf: bytearray, run: _Run, secret: bytes) -> bool:
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


# --------------------------------------------------------------------------------------------
# Judging.
# --------------------------------------------------------------------------------------------
def normalise_output(text: str) -> list[str]:
    """CRLF -> LF, strip trailing whitespace per line, drop trailing blank lines.

    >>> normalise_output("1 2 \\r\\n3\\n\\n")
    ['1 2', '3']
    """
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _float_eq(a: float, b: float, tol: float | None) -> bool:
    if math.isnan(a) or math.isnan(b):
        return False
    if tol is None:
        return a == b
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def outputs_match(got: str, expected: str, float_tol: float | None = None) -> bool:
    """stdin/stdout comparison: normalised lines equal as text; with float_tol, numeric tokens are
    compared as numbers within tol (and a NaN token then never matches).

    >>> outputs_match("0.333334\\n", "0.333333", float_tol=1e-5), outputs_match("nan", "nan", 1e-9)
    (True, False)
    """
    g, e = normalise_output(got), normalise_output(expected)
    if float_tol is None:
        return g == e
    if len(g) != len(e):
        return False
    for lg, le in zip(g, e):
        tg, te = lg.split(), le.split()
        if len(tg) != len(te):
            return False
        for a, b in zip(tg, te):
            try:
                fa, fb = float(a), float(b)
            except ValueError:
                if a != b:
                    return False
                continue
            if not _float_eq(fa, fb, float_tol):
                return False
    return True


def values_equal(expected, got, float_tol: float | None = None, _depth: int = 0) -> bool:
    """Strict, type-aware equality for call-based results (both sides are plain builtin values).

    bool only equals bool; int and float compare by value (JSON cannot keep 2 and 2.0 apart);
    NaN equals nothing; list and tuple are interchangeable (JSON has no tuple), as are set and
    frozenset; dict keys must match and values compare recursively.

    >>> values_equal(1, True), values_equal([1, 2.0], (1, 2)), values_equal(float("nan"), float("nan"))
    (False, True, False)
    """
    if _depth > 1000:
        return False
    te, tg = type(expected), type(got)
    num = (int, float)
    if te is bool or tg is bool:
        return te is tg and expected == got
    if te in num and tg in num:
        if te is int and tg is int:
            return expected == got
        return _float_eq(float(expected), float(got), float_tol) if not (
            te is int and abs(expected) > 2 ** 53 or tg is int and abs(got) > 2 ** 53) else expected == got
    if te is complex or tg is complex:
        if te not in (*num, complex) or tg not in (*num, complex):
            return False
        e, g = complex(expected), complex(got)
        return _float_eq(e.real, g.real, float_tol) and _float_eq(e.imag, g.imag, float_tol)
    seq, sets = (list, tuple), (set, frozenset)
    if te in seq and tg in seq:
        return len(expected) == len(got) and all(
            values_equal(a, b, float_tol, _depth + 1) for a, b in zip(expected, got))
    if te in sets and tg in sets:
        if any(isinstance(x, float) and math.isnan(x) for x in (*expected, *got)):
            return False
        return expected == got
    if te is dict and tg is dict:
        if len(expected) != len(got):
            return False
        for k, v in expected.items():
            if k not in got:
                return False
            if not values_equal(v, got[k], float_tol, _depth + 1):
                return False
        return True
    if te in (str, bytes, type(None)) and te is tg:
        return expected == got
    return False


def _classify_end(run: _Run, what: str, hint: str = "") -> tuple[str, str]:
    """Why a launch ended without a result for `what`."""
    if run.killed == "output":
        return "output_limit", f"{what}: output exceeded the limit"
    if run.oom or _last_exception(run.stderr) == "MemoryError":
        return "memory_limit", f"{what}: memory limit exceeded"
    if run.killed == "timeout" or run.cpu_s > run.cpu_budget or (
            run.returncode is not None and run.returncode in (128 + signal.SIGXCPU, -signal.SIGXCPU)):
        return "timeout", f"{what}: time limit exceeded (cpu {run.cpu_s:.2f}s)"
    if run.killed == "channel":
        return "runtime_error", f"{what}: tampering with the result channel"
    tail = run.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return "runtime_error", f"{what}: {hint or f'exit status {run.returncode}'}; " + " | ".join(tail)[-500:]


def _last_exception(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1].split(":")[0].strip() if lines else ""


def _run_with_retries(mode, job, stdin, lim, n) -> _Run:
    last = ""
    for attempt in range(lim.retries + 1):
        run = _launch(mode, job, stdin, lim, n)
        if run.hello:
            return run
        last = run.stderr.decode("utf-8", "replace")[-500:] or f"exit status {run.returncode}"
        time.sleep(0.05 * (attempt + 1))
    raise SandboxError(f"the sandbox failed to start {lim.retries + 1} times: {last}")


def _judge_stdio(code, test, lim) -> tuple[str, str]:
    stdin = test.get("input", "")
    stdin = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    run = _run_with_retries("stdio", code, stdin, lim, 1)
    if run.killed or run.oom or run.cpu_s > run.cpu_budget or run.returncode != 0:
        return _classify_end(run, "stdin/stdout test")
    got = run.stdout.decode("utf-8", "replace")
    if outputs_match(got, str(test["output"]), lim.float_tol):
        return "accepted", ""
    return "wrong_answer", f"expected {str(test['output'])[:200]!r}, got {got[:200]!r}"


def _judge_calls(code, tests, lim) -> list[tuple[str, str]]:
    job = (code, [(str(t["fn_name"]), marshal.dumps((list(t.get("args", [])), dict(t.get("kwargs", {}))), 2))
                  for t in tests])
    run = _run_with_retries("call", job, None, lim, len(tests))
    by_idx = {m[0]: m[1:] for m in run.frames if type(m) is tuple and m and type(m[0]) is int}
    out = []
    for i, t in enumerate(tests):
        r = by_idx.get(i)
        name = f"call test {i} ({t['fn_name']})"
        if r is None or r[0] == "dead":
            out.append(_classify_end(run, name, str(r[1]) if r else ""))
        elif r[0] == "ok":
            got = marshal.loads(r[1])
            if values_equal(t["expected"], got, lim.float_tol):
                out.append(("accepted", ""))
            else:
                out.append(("wrong_answer", f"{name}: expected {t['expected']!r:.200}, got {got!r:.200}"))
        elif r[0] == "bad":
            out.append(("wrong_answer", f"{name}: {r[1]}"))
        else:
            out.append(("runtime_error", f"{name}: {r[1]}"[:1000]))
    return out


def _judge_asserts(code, tests, lim) -> list[tuple[str, str]]:
    run = _run_with_retries("assert", (code, [str(t["assert"]) for t in tests]), None, lim, len(tests))
    by_idx = {m[0]: m[1:] for m in run.frames if type(m) is tuple and m and type(m[0]) is int}
    out = []
    for i in range(len(tests)):
        r = by_idx.get(i)
        if r is None or r[0] == "dead":
            out.append(_classify_end(run, f"assert test {i}", str(r[1]) if r else ""))
        elif r[0] == "pass":
            out.append(("accepted", ""))
        elif r[0] == "fail":
            out.append(("wrong_answer", f"assert test {i}: {r[1]}"[:1000]))
        else:
            out.append(("runtime_error", f"assert test {i}: {r[1]}"[:1000]))
    return out


def run_tests(code: str, tests: list[dict], timeout_s: float = 2.0, memory_mb: int = 512, **limits) -> Result:
    """Run `code` against `tests` in the sandbox; see the module docstring. Further limits: `Limits` fields."""
    start = time.monotonic()
    names = {f.name for f in fields(Limits)}
    unknown = set(limits) - names
    if unknown:
        raise TypeError(f"run_tests: unknown limit(s) {sorted(unknown)}; known: {sorted(names)}")
    lim = Limits(timeout_s=timeout_s, memory_mb=memory_mb, **limits)
    if lim.require_isolation is None:
        lim.require_isolation = os.environ.get("SANDBOX_REQUIRE_ISOLATION", "") not in ("", "0")
    if lim.require_isolation and _state()["mode"] == "none":
        raise SandboxError(f"isolation required but unavailable: {_state()['why']}")
    total = len(tests)
    if not isinstance(code, str):
        return Result("syntax_error", 0, total, "code is not a string", time.monotonic() - start)
    try:
        compile(code, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return Result("syntax_error", 0, total, f"{type(e).__name__}: {e}"[:500], time.monotonic() - start)
    if not tests:
        raise ValueError("run_tests: no tests given")
    kinds = ["assert" if "assert" in t else "call" if "fn_name" in t else "stdio" if "input" in t else None
             for t in tests]
    if None in kinds:
        raise ValueError(f"run_tests: test {kinds.index(None)} is none of stdin/stdout, call-based or assert")
    verdicts: list[tuple[str, str] | None] = [None] * total
    groups = {k: [i for i in range(total) if kinds[i] == k] for k in ("call", "assert")}
    for kind, idx in groups.items():
        if idx:
            res = (_judge_calls if kind == "call" else _judge_asserts)(code, [tests[i] for i in idx], lim)
            for i, r in zip(idx, res):
                verdicts[i] = r
    for i in range(total):
        if kinds[i] == "stdio":
            if lim.stop_on_failure and any(v and v[0] != "accepted" for v in verdicts):
                verdicts[i] = ("wrong_answer", "not run (stop_on_failure)")
                continue
            verdicts[i] = _judge_stdio(code, tests[i], lim)
            if verdicts[i][0] in ("timeout", "memory_limit"):  # would fail the same way again: stop
                for j in range(i + 1, total):
                    if kinds[j] == "stdio":
                        verdicts[j] = ("wrong_answer", f"not run after test {i}'s {verdicts[i][0]}")
                break
    passed = sum(v[0] == "accepted" for v in verdicts)
    bad = next((v for v in verdicts if v[0] != "accepted"), None)
    if bad is None:
        return Result("accepted", passed, total, "", time.monotonic() - start)
    return Result(bad[0], passed, total, bad[1], time.monotonic() - start)


def run_many(jobs: list[tuple[str, list[dict]]], workers: int | None = None, **limits) -> list[Result]:
    """run_tests over (code, tests) pairs in parallel (default: one worker per core); results in order."""
    workers = workers or os.cpu_count() or 1
    _state()  # detect once, before the threads start
    leased: list = []  # each worker thread keeps one slot (and its next sandbox, started ahead) for the batch

    def work(job):
        if getattr(_lease, "slots", None) is not leased:
            _lease.slots, _lease.slot = leased, None
        return run_tests(job[0], job[1], **limits)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, jobs))
    finally:
        for slot in leased:
            slot.release()


def isolation_mode() -> str:
    """'full' (bwrap + per-slot uid + cgroups), 'bwrap' (no cgroups or no uid switch) or 'none'."""
    return _state()["mode"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run {code, tests} rows of a jsonl file in the sandbox.")
    ap.add_argument("file", help="jsonl: one {\"code\": str, \"tests\": [...]} object per line "
                                 "(optional: \"name\"/\"task_id\")")
    ap.add_argument("--workers", type=int, default=None, help="parallel runs (default: cores)")
    ap.add_argument("--timeout", type=float, default=2.0, help="CPU seconds per test")
    ap.add_argument("--memory", type=int, default=512, help="memory limit in MiB")
    ap.add_argument("--float-tol", type=float, default=None, help="tolerance for floats")
    args = ap.parse_args(argv)
    rows = []
    with open(args.file) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    ap.error(f"{args.file}:{n}: not valid JSON ({e})")
    for n, r in enumerate(rows, 1):
        if "code" not in r or "tests" not in r:
            ap.error(f"{args.file}: row {n} needs 'code' and 'tests' keys")
    start = time.monotonic()
    results = run_many([(r["code"], r["tests"]) for r in rows], workers=args.workers,
                       timeout_s=args.timeout, memory_mb=args.memory, float_tol=args.float_tol)
    elapsed = time.monotonic() - start
    print(f"{'#':>4}  {'name':<24} {'verdict':<14} {'passed':>9} {'time':>7}  detail")
    for n, (r, res) in enumerate(zip(rows, results), 1):
        name = str(r.get("name", r.get("task_id", "")))[:24]
        detail = res.detail.replace("\n", " ")[:60]
        print(f"{n:>4}  {name:<24} {res.verdict:<14} {f'{res.passed}/{res.total}':>9} {res.time_s:>6.2f}s  {detail}")
    counts = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    print("\n" + ", ".join(f"{v}: {c}" for v, c in counts.items() if c) +
          f"  ({len(rows)} programs in {elapsed:.1f}s, isolation {isolation_mode()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
