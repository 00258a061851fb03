"""Run untrusted Python against tests, isolated, and judge it so that it cannot fake a pass.

Reward functions for code (Skywork-OR1 §3, Qwen3 reasoning RL) execute whatever the policy wrote.
An RL policy finds every hole in the checker, so the checker lives outside the code it checks.

    >>> run_tests("print(int(input()) * 2)", [{"input": "21\\n", "output": "42\\n"}]).verdict
    'accepted'
    >>> run_tests("def f(x): return x + 1", [{"fn_name": "f", "args": [1], "expected": 2}]).passed
    1

Test kinds (a fixed API that outside harnesses call):
  {"input": str, "output": str}            stdin/stdout; one sandbox launch per test.
  {"fn_name": str, "args": list, "expected"} call-based; the expected value never enters the
                                           sandbox.
  {"assert": str}                          statements run after the code (HumanEval's ``check``).
A malformed test (another key or type, an empty assert, an assert that imports a module the
sandbox's Python lacks) is a ValueError before anything runs (`check_tests`).

Where things are: this file is the story -- the limits, run_tests and run_many, and judging
(second half). What is checked before anything runs (the test tables, the code's size and syntax)
is sandbox_checks.py. The isolation machinery (bubblewrap, slots, cgroups, the zygote, the pump
that feeds and reads a run) is sandbox_isolation.py; the programs that run inside the sandbox, and
beside it, are real Python files: sandbox_programs/runner.py (R, below) and
sandbox_programs/zygote.py.

Which Python runs the candidate's code: the system interpreter, not this process's venv
  * ``SANDBOX_PYTHON`` (default /usr/bin/python3), started with ``-s -S``. The candidate sees
    that Python's version and standard library only: none of the training venv's packages. A
    solution that imports numpy fails; a test that does (HumanEval+'s, MBPP+'s) would fail every
    program, and is refused before anything runs, naming the module. ``python3`` and ``python`` on
    its PATH are that interpreter (a program may start Python again, as on a judge).
  * The hash seed is 0 (PYTHONHASHSEED): a str's hash, so the order of a set of strings, is the
    same in every run and slot. The policy is reproducible verdicts: a program right only by a
    lucky order passes always or never, never at random (sandbox_isolation.SANDBOX_ENV).
  * Why: the code runs as an unprivileged slot uid inside bwrap, where only the interpreter, its
    standard library and the shared libraries it links are bound read-only; a venv (typically under
    a home directory, with its site-packages) is neither bound there nor readable by those uids. Set
    SANDBOX_PYTHON to another interpreter if needed; it must be readable and executable by any uid.

How a run is isolated ("full" mode: root + bubblewrap + cgroup v1)
  * Each run is a fresh ``bwrap`` with new user, PID, network, IPC, UTS and mount namespaces,
    ``--die-with-parent``, ``--new-session``, a fresh /proc and a read-only /dev, a size-capped
    tmpfs /tmp as the per-run work directory (and one as /dev/shm, for multiprocessing), and only
    the interpreter, its standard library and the shared libraries it links bound read-only. The
    environment is empty (PATH/HOME/LANG, PYTHONHASHSEED=0 and OUTPUT_PATH=/dev/stdout, where
    HackerRank's template writes its answer, only).
  * The interpreter is not started per run: a pre-imported zygote per slot (outside every sandbox,
    never given a job) forks a process that joins the slot's cgroups, becomes the slot uid, enters
    the fresh bwrap's namespaces (bwrap waits on --block-fd once set up, as pid 1, out of the
    program's reach: _Bwrap), drops every capability and forks the runner as the sandbox's pid 2
    (see zygote.py). In run_many each worker keeps its slot
    and starts the next program's bwrap ahead. SANDBOX_ZYGOTE=0 starts an interpreter per run
    instead.
  * It runs as an unprivileged uid, one per concurrent slot (61000+i, no passwd entry needed), so
    root-only files stay unreadable and the launcher's environment is not in /proc/1/environ.
  * Limits: CPU time of the whole process tree (cgroup cpuacct, polled) with a wall-clock backstop
    for sleepers, both per test (the tests of one launch -- call, assert -- cannot spend each
    other's time; a test that runs out of it ends the launch, and the tests after it count as
    timeouts, as stdin/stdout tests stop); memory (+swap) and process count by a pre-created
    cgroup per slot; RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_CORE=1 (no core dump, even
    piped to a helper) as a second line. When a run ends, its bwrap is killed (which kills the PID
    namespace) and the slot's cgroup is swept until it is empty.
  * Output is read while stdin is written (no pipe deadlock), capped (stdout 1 MiB, or twice the
    test's expected output -> verdict ``output_limit``; the last 64 KiB of stderr are kept).

How it is judged
  * Syntax errors are found by ``compile`` in the parent; nothing runs (``syntax_error``). Code
    over ``MAX_CODE_BYTES`` (256 KiB, twice a 32K-token completion) is refused the same way
    before it is compiled: compiling it would cost the parent seconds and hundreds of MB.
  * stdin/stdout: CRLF, whitespace around lines and blank lines around the output are normalised,
    and a line of numbers matches the same numbers however written ("1.0" is "1"), as
    LiveCodeBench's judge (`normalise_output`, `outputs_match`); the rest is exact; optional
    ``float_tol`` for numeric tokens (two integers stay exact); exit status must be 0. The
    test's input reaches the program as a judge's input file: LF line endings (CRLF and CR are
    line breaks), its last line ended (`sandbox_checks.judge_stdin`).
  * Call-based and assert tests use two processes in the sandbox: a trusted runner R and the
    candidate process C (forked from R *before* R has read the tests or the per-run secret).
    C executes the code; R calls C's functions over a pipe, with arguments marshalled fresh for
    every call (a deep copy) and return values accepted only if they are built from exact
    builtin types (``marshal`` refuses an object with a lying ``__eq__``; a value of a subclass of
    one -- a Counter, a namedtuple, an IntEnum -- crosses as the plain value its base type holds,
    read in C with the base type's own methods: runner.as_plain)
    and take at most 64 MiB once decoded (runner.MAX_VALUE_BYTES), and no more bytes than a value
    equal to the expected one could (R is told a bound per test: sandbox_checks.returned_cap; a
    bigger one is a wrong answer that never leaves the sandbox), with at most 64 elements of a
    set (or keys of a dict) sharing a hash (runner.MAX_SAME_HASH: decoding is linear).
    Call-based: R forwards the values to the parent, which compares them with strict, type-aware
    equality (bool is not int, NaN != NaN, list~tuple, int~float by value, optional float_tol),
    nested at most MAX_VALUE_DEPTH (100) levels deep.
    Assert: the test statements run in R, with R's own untouched builtins, on plain values only;
    the candidate's functions are proxies into C, and what a call left in its arguments is
    copied back into the test's own lists, dicts and sets (runner.update: "sorts in place" and
    "does not mutate its input" are both testable). So ``os._exit(0)``, ``sys.exit(0)``, ``atexit``,
    patched builtins, a printed "PASSED" or a lying ``__eq__`` in C cannot make a check pass.
    R reports each result over a separate pipe, every frame prefixed by a per-run secret; R is
    non-dumpable (prctl), so C can neither read its memory nor open its file descriptors.
  * A failure of the sandbox itself (bwrap cannot start, R never says hello) is retried and then
    raised as ``SandboxError``; it is never scored as a wrong answer.

What it does not guarantee (residual risks)
  * Only a small seccomp filter (kernel keyrings -- per-uid state that outlived a run --, bpf,
    userfaultfd, perf_event_open, io_uring, sync of the host's disks, foreign ABIs:
    sandbox_isolation.seccomp_filter): the rest of the kernel's syscall surface is reachable; a
    kernel or bubblewrap bug (user-namespace privilege escalation) defeats it. Keep the kernel
    patched.
  * CPU time is polled every 20 ms, so a run may overrun its limit by about that much.
  * Assert tests that need candidate objects other than plain values (an instance a function
    returns, generators, the candidate's functions passed as arguments) cannot cross the proxy and
    fail (a builtin or standard library function that a test passes, ``abs``, ``str.lower``,
    crosses by its name: runner.named; the test's own functions and lambdas do not); an object
    that the candidate's class makes (``check(Solution().twoSum)``) stays in C:
    the test can call its methods and pass it or them back to C, not look at it (runner.Remote).
    Objects of a class that the test defines (LeetCode's ``ListNode``/``TreeNode``) cross both
    ways as data (runner.flatten), rebuilt as the receiver's class of that name, so the test's
    own helpers (``is_same_list``) judge them in R; a test that does not define the class cannot
    look at such a value. Keyword/positional semantics otherwise match a normal call. An argument
    reaches C as a copy: two arguments that are one object in the test are two in C. A helper
    that only the task's prelude defines runs in C, where the candidate can redefine it.
  * ``marshal.loads`` in R and in the parent reads data that C produced (R validates the types
    before forwarding); a memory-safety bug in ``marshal`` would be a way out of R.
  * Weaker modes: without root, bwrap runs as the caller's uid with no cgroups (rlimits only);
    without bwrap/user namespaces the code runs as a plain child with rlimits (no filesystem or
    network isolation). Both print a loud warning; ``require_isolation=True`` or
    ``SANDBOX_REQUIRE_ISOLATION=1`` makes them an error instead.
  * Shared machines: slot locks live in /tmp/.pysandbox-slots-<uid>, created 0700 and checked to be
    this user's own directory (else a SandboxError names the path and the fix). The cgroups
    (<own cgroup>/pysandbox/slot<i>) and slot uids are used in full mode only, which needs root, so
    they are shared only by root's runs, which the root slot locks coordinate.

CLI: ``python sandbox.py FILE.jsonl`` (rows ``{"code": ..., "tests": [...]}``) prints a verdict
table.
"""
from __future__ import annotations

import argparse
import functools
import itertools
import marshal
import math
import operator
import os
import re
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, localcontext

from sandbox_checks import (
    MAX_VALUE_DEPTH,  # noqa: F401 (sandbox.MAX_VALUE_DEPTH: R checks it, runner.MAX_VALUE_DEPTH)
    arguments_of,
    check_tests,
    compile_error,
    judge_stdin,
    read_rows,
    returned_cap,
    short_repr,
    unsendable,
)
from sandbox_isolation import Run, SandboxError, SlotLease, detect, launch

__all__ = ["run_tests", "run_many", "run_program", "Output", "isolation_mode", "Result", "Limits",
           "SandboxError", "VERDICTS", "check_tests", "outputs_match", "values_equal",
           "normalise_output", "main"]

VERDICTS = ("accepted", "wrong_answer", "runtime_error", "timeout", "memory_limit",
            "output_limit", "syntax_error")


@dataclass
class Result:
    verdict: str  # one of VERDICTS
    passed: int  # tests passed
    total: int  # tests given
    detail: str = ""  # first failure, human-readable
    time_s: float = 0.0  # wall time of the whole run_tests call


@dataclass
class Limits:
    timeout_s: float = 2.0  # CPU seconds per test (the whole process tree counts)
    # memory for the program (cgroup, incl. tmpfs files); the runner gets 64 MiB more
    memory_mb: int = 512
    # wall-clock backstop per launch; default 3 * CPU budget + 2 s, and 3 * (timeout_s + 0.3) + 2 s
    # per test (sandbox_isolation._budget)
    wall_timeout_s: float | None = None
    max_output_bytes: int = 1 << 20  # stdout cap -> output_limit (or twice a test's output)
    max_stderr_bytes: int = 64 << 10  # keep the last this-many bytes of stderr
    max_processes: int = 32  # pids.max of the slot's cgroup (threads count)
    max_file_mb: int = 16  # RLIMIT_FSIZE
    max_open_files: int = 64  # RLIMIT_NOFILE
    tmp_mb: int = 64  # size of the tmpfs work directory /tmp
    # relative/absolute tolerance for floats (stdout tokens and values)
    float_tol: float | None = None
    # stop a task at its first failing test (remaining count as failed)
    stop_on_failure: bool = False
    # refuse weak modes; default from SANDBOX_REQUIRE_ISOLATION
    require_isolation: bool | None = None
    retries: int = 2  # re-runs after a failure of the sandbox itself


# ==================================================================================================
# Part 1. Isolation: one program, one fresh sandbox (the machinery is sandbox_isolation.py)
# ==================================================================================================
_setup_lock = threading.Lock()
_setup: dict | None = None  # the isolation mode and what it needs, decided once per process


def _state() -> dict:
    global _setup
    with _setup_lock:
        if _setup is None:
            _setup = detect(Limits())  # the zygote is probed with the default limits
        return _setup


def isolation_mode() -> str:
    """'full' (bwrap + per-slot uid + cgroups), 'bwrap' (no cgroups or no uid switch) or 'none'.

    SandboxError if the sandbox cannot be used here at all: the interpreter (SANDBOX_PYTHON) is
    missing or does not run, or the slot directory is not this user's own; the message says what and
    how to fix it."""
    return _state()["mode"]


def _launch(mode: str, job, stdin: bytes | None, lim: Limits, n_tests: int) -> Run:
    """One program (R's `mode` and `job`, see runner.py) in one fresh sandbox."""
    return launch(_state(), mode, job, stdin, lim, n_tests)


def _run_with_retries(mode, job, stdin, lim, n) -> Run:
    last = ""
    for attempt in range(lim.retries + 1):
        run = _launch(mode, job, stdin, lim, n)
        if run.hello:
            return run
        last = run.stderr.decode("utf-8", "replace")[-500:] or f"exit status {run.returncode}"
        time.sleep(0.05 * (attempt + 1))
    raise SandboxError(f"the sandbox failed to start {lim.retries + 1} times: {last}")


# ==================================================================================================
# Part 2. Judging: comparing outputs and values, then a verdict per test
# ==================================================================================================
def normalise_output(text: str) -> list[str]:
    """CRLF -> LF, strip the whitespace around each line, drop blank lines before and after the
    output: as LiveCodeBench's judge reads stdout (``get_stripped_lines`` in its
    lcb_runner/evaluation/testing_util.py; APPS' and TACO's judges are more lenient still), so that
    a solution the dataset's own judge accepts is not a wrong answer here.

    >>> normalise_output("\\n 1 2 \\r\\n3\\n\\n")
    ['1 2', '3']
    >>> normalise_output("first\\n\\n\\nlast  x\\n")  # blank lines inside, spaces inside stay
    ['first', '', '', 'last  x']
    """
    # the whole text is stripped first, and with it the blank lines around the output: line by
    # line, a program's 1 MiB of line breaks cost the parent 0.15 s of CPU per test
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return [ln.strip() for ln in text.split("\n")] if text else []


def _float_eq(a: float, b: float, tol: float | None) -> bool:
    if math.isnan(a) or math.isnan(b):
        return False
    if tol is None:
        return a == b
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


# what a program prints as a number (Python's float() also takes '1_000', '１２' and other digits);
# one way to match each string: '\d+\.?\d*' split a run of digits every way before it failed, and a
# printed '1' * 40000 + 'x' held the parent 77 s (quadratic), under the GIL, outside every limit
_NUMBER_RE = re.compile(r"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?|inf(?:inity)?|nan)",
                       re.ASCII | re.IGNORECASE)
_INTEGER_RE = re.compile(r"[+-]?\d+", re.ASCII)
_BIG = float(2 ** 53)  # from here on, floats do not tell integers apart


def outputs_match(got: str, expected: str, float_tol: float | None = None) -> bool:
    """stdin/stdout comparison of the normalised lines. Without float_tol as LiveCodeBench's judge
    compares them: equal as text, or both made of numbers equal in value (it reads each token as a
    Decimal: "1.0" is "1", "-0" is "0", "2.50" is "2.5"; "nan" only where the text is equal). With
    float_tol, each token: numbers within tol (a NaN never matches), two integers exactly (as
    `values_equal` compares ints: 1000000008 is not 1000000007 within 1e-6), other tokens as
    text.

    >>> outputs_match("0.333334\\n", "0.333333", float_tol=1e-5), outputs_match("nan", "nan", 1e-9)
    (True, False)
    >>> outputs_match("YES \\r\\n3.0\\n\\n", "YES\\n3"), outputs_match("x 3.0", "x 3")
    (True, False)
    >>> outputs_match("0.1 0.2", "0.10 0.20"), outputs_match("0.3333334", "0.3333333")
    (True, False)
    >>> outputs_match("3.0", "3", 0.0), outputs_match("1000000008", "1000000007", 1e-6)
    (True, False)
    """
    g, e = normalise_output(got), normalise_output(expected)
    if len(g) != len(e):
        return False
    # the lines that differ as text (with float_tol, a NaN's line too: a NaN equals nothing); one
    # list of tokens for all of them (a list per line made the garbage collector run, 2 x slower)
    nan = float_tol is not None and "nan" in expected.lower()
    got_lines = [lg for lg, le in zip(g, e) if lg != le or nan and "nan" in lg.lower()]
    expected_lines = [le for lg, le in zip(g, e) if lg != le or nan and "nan" in lg.lower()]
    if not got_lines:
        return True
    got_tokens, expected_tokens = " ".join(got_lines).split(), " ".join(expected_lines).split()
    if len(got_tokens) != len(expected_tokens):
        return False
    # the tokens must line up line by line; where both sides hold one token a line (as many tokens
    # as lines, none blank), they do without splitting each line again
    if not (len(got_tokens) == len(got_lines) and all(got_lines) and all(expected_lines)) and (
            list(map(len, map(str.split, got_lines)))
            != list(map(len, map(str.split, expected_lines)))):
        return False
    if float_tol is None:
        return _same_numbers(got_tokens, expected_tokens)
    return _close_tokens(got_tokens, expected_tokens, float_tol)


# The tokens of all the lines that differ are compared at once, converted by map() in C: line by
# line and token by token in Python, a ~1 MB expected output of numbers cost 1.5-2.5 s of the
# parent's CPU per test, under the GIL, where the program printed them in another form ('5.0' for
# '5') or with float_tol. Python's Decimal() and float() read what _NUMBER_RE matches, and more
# only where a token holds an underscore or a character past ASCII ('1_000', '１２'; NaN payloads:
# 'nan5', which equals nothing either way).
def _same_numbers(got: list[str], expected: list[str]) -> bool:
    """Whether the tokens are all numbers, pairwise equal in value (exactly: Decimal)."""
    text = "".join(got) + "".join(expected)
    if not text.isascii() or "_" in text:
        return False
    # As floats where that is exact (3 x faster than Decimals): every token of at most 15
    # characters and no exponent (DBL_DIG: two decimals of <= 15 significant digits in the normal
    # range are two doubles, so equal floats are equal values). A token float() refuses is no
    # number Decimal() could equal (signalling NaNs, NaN payloads).
    if "e" not in text and "E" not in text and max(map(len, got + expected)) <= 15:
        try:
            return all(map(operator.eq, map(float, got), map(float, expected)))
        except ValueError:
            return False
    try:
        return list(map(Decimal, got)) == list(map(Decimal, expected))
    except ArithmeticError:  # not a number, or an exponent past Decimal's range ('1e999999999999')
        return False


def _close_tokens(got: list[str], expected: list[str], float_tol: float) -> bool:
    """With float_tol: numbers within it, two integers exactly, other tokens as text."""
    text = "".join(got) + "".join(expected)
    if text.isascii() and "_" not in text:
        try:
            fg, fe = list(map(float, got)), list(map(float, expected))
        except ValueError:  # a token of text: token by token, below
            # tokens equal as text match (a NaN's aside: it equals nothing); the rest again, fast
            keep = list(map(operator.ne, got, expected))
            if "nan" not in text.lower() and not all(keep):
                return _close_tokens(list(itertools.compress(got, keep)),
                                     list(itertools.compress(expected, keep)), float_tol)
        else:
            close = functools.partial(math.isclose, rel_tol=float_tol, abs_tol=float_tol)
            if fg != fe and not all(map(close, fg, fe)):  # (none to look at where all are equal)
                return False
            # both infinite (isclose passed them): by value, unless both are written as infinity
            if (math.inf in fg or -math.inf in fg) and (math.inf in fe or -math.inf in fe):
                both = map(operator.and_, map(math.isinf, fg), map(math.isinf, fe))
                if not all(_close(a, b, math.inf, math.inf, float_tol)
                           for a, b in itertools.compress(zip(got, expected), both)):
                    return False
            # two integers exactly: those whose floats differ, or are past 2**53, are looked at
            pairs = zip(got, expected)
            look = itertools.chain(
                itertools.compress(pairs, map(operator.ne, fg, fe)),
                itertools.compress(zip(got, expected), map(_BIG.__le__, map(abs, fg))))
            return all(a == b or not (_INTEGER_RE.fullmatch(a) and _INTEGER_RE.fullmatch(b))
                       or _integer(a) == _integer(b) for a, b in look)
    for a, b in zip(got, expected):
        if _INTEGER_RE.fullmatch(a) and _INTEGER_RE.fullmatch(b):
            if _integer(a) != _integer(b):
                return False
        elif _NUMBER_RE.fullmatch(a) and _NUMBER_RE.fullmatch(b):
            if not _close(a, b, float(a), float(b), float_tol):
                return False
        elif a != b:
            return False
    return True


def _close(a: str, b: str, fa: float, fb: float, tol: float) -> bool:
    """Two number tokens within `tol`, given their floats. A finite number past the float range
    ('1e400', a 400-digit decimal) is read as inf, and every such pair matched ('2e400' for
    '1e400'); a token that overflows is compared by its value instead (Decimal), relatively. Only
    tokens spelled as infinity ('inf', '-Infinity') are infinite."""
    if not (math.isinf(fa) or math.isinf(fb)):
        return _float_eq(fa, fb, tol)
    try:
        da, db = Decimal(a), Decimal(b)
        if da.is_infinite() or db.is_infinite():
            return da == db
        with localcontext(Context(prec=34, Emax=MAX_EMAX, Emin=MIN_EMIN)):
            return abs(da - db) <= Decimal(tol) * max(abs(da), abs(db))
    except ArithmeticError:  # an exponent past even Decimal's range: equal only as text
        return a == b


def _integer(token: str) -> str:
    """An integer token's value as text (int() refuses more than 4300 digits): '+007' -> '7'."""
    digits = token.lstrip("+-").lstrip("0") or "0"
    return "-" + digits if token.startswith("-") and digits != "0" else digits


def values_equal(expected, got, float_tol: float | None = None, _depth: int = 0) -> bool:
    """Strict, type-aware equality for call-based results (both sides are plain builtin values).

    bool only equals bool; int and float compare by value (JSON cannot keep 2 and 2.0 apart);
    NaN equals nothing; list and tuple are interchangeable (JSON has no tuple), as are set and
    frozenset; dict keys must match and values compare recursively.

    >>> nan = float("nan")
    >>> values_equal(1, True), values_equal([1, 2.0], (1, 2)), values_equal(nan, nan)
    (False, True, False)
    >>> values_equal({"a": [1, (2, 3)]}, {"a": ((1.0), [2, 3])})
    True
    >>> values_equal({1, 2}, frozenset({2, 1}))
    True
    >>> values_equal(2 ** 53 + 1, float(2 ** 53 + 1))  # past 2**53 an int is compared exactly
    False
    >>> values_equal(0.1 + 0.2, 0.3), values_equal(0.1 + 0.2, 0.3, float_tol=1e-9)
    (False, True)
    >>> values_equal("1", 1)
    False
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
            te is int and abs(expected) > 2 ** 53
            or tg is int and abs(got) > 2 ** 53) else expected == got
    if te is complex or tg is complex:
        if te not in (*num, complex) or tg not in (*num, complex):
            return False
        try:
            e, g = complex(expected), complex(got)
        except OverflowError:  # an int past the float range: no complex (two floats) equals it
            return False
        return _float_eq(e.real, g.real, float_tol) and _float_eq(e.imag, g.imag, float_tol)
    seq, sets = (list, tuple), (set, frozenset)
    if (te in seq and tg in seq or te in sets and tg in sets or te is dict and tg is dict) and (
            len(expected) != len(got)):
        return False
    if te in seq and tg in seq:
        if len(got) > 16 and _of_atoms(expected, got, floats=float_tol is None):
            return all(map(operator.eq, expected, got))
        return all(values_equal(a, b, float_tol, _depth + 1) for a, b in zip(expected, got))
    if te in sets and tg in sets:  # (two elements of a set never share a key: len first)
        if len(got) > 16 and _of_atoms(expected, got):
            return expected == got
        return {_key(x) for x in expected} == {_key(x) for x in got}
    if te is dict and tg is dict:
        if len(got) > 16 and _of_atoms(expected, got, expected.values(), got.values()):
            return expected == got
        by_key = {_key(k): v for k, v in got.items()}
        for k, v in expected.items():
            if (kg := _key(k)) not in by_key:
                return False
            if not values_equal(v, by_key[kg], float_tol, _depth + 1):
                return False
        return True
    if te in (str, bytes, type(None)) and te is tg:
        return expected == got
    return False


# Atoms that Python's own == compares as `values_equal` does: exactly, an int only to an int (or
# to a float by its exact value), a str to a str, and so on. No bool (True == 1); floats only
# without float_tol, and only in a sequence (compared by operator.eq: a NaN equals nothing; a set
# or dict finds a NaN by identity). A returned list, set or dict of them is compared in C code: a
# right answer of a million ints cost the parent 0.6 s of CPU element by element, under the GIL.
_EXACT = frozenset({int, str, bytes, type(None)})


def _of_atoms(*values, floats: bool = False) -> bool:
    """Whether each of `values` (sequences, sets, dict keys or values) holds `_EXACT` atoms only
    (or floats, where `floats`)."""
    allowed = _EXACT | {float} if floats else _EXACT
    return all(set(map(type, v)) <= allowed for v in values)


def _key(v):
    """A set element or dict key as `values_equal` compares it: hashable, and equal to another's
    key exactly when the two are equal values (no float_tol). Python's own ``==`` (a set's, a dict
    lookup's) takes True for 1 and 0 for False, so ``{True, 2}`` passed for ``{1, 2}``; here bool
    stays apart from int, as everywhere in `values_equal`, and a NaN equals nothing.

    >>> _key(True) == _key(1), _key(1) == _key(1.0), _key((0, "a")) == _key([False, "a"])
    (False, True, False)
    """
    t = type(v)
    if t is bool:
        return "bool", v
    if t is float and math.isnan(v) or t is complex and (math.isnan(v.real) or math.isnan(v.imag)):
        return "nan", object()  # a fresh object: equal to no other key
    if t in (int, float, complex):
        return "number", v
    if t in (list, tuple):
        return "sequence", tuple(_key(x) for x in v)
    if t in (set, frozenset):
        return "set", frozenset(_key(x) for x in v)
    return t.__name__, v


def _classify_end(run: Run, what: str, hint: str = "") -> tuple[str, str]:
    """Why a launch ended without a result for `what`: the verdict and the detail.

    >>> _classify_end(Run(killed="output"), "test 0")
    ('output_limit', 'test 0: output exceeded the limit')
    >>> _classify_end(Run(returncode=1, stderr=b"Traceback ...\\nMemoryError\\n"), "test 1")[0]
    'memory_limit'
    >>> _classify_end(Run(returncode=-24, cpu_s=1.1, cpu_budget=1.3), "test 2")  # SIGXCPU
    ('timeout', 'test 2: time limit exceeded (cpu 1.10s)')
    >>> _classify_end(Run(returncode=1, stderr=b"Traceback ...\\nValueError: x\\n"), "test 3")
    ('runtime_error', 'test 3: exit status 1; Traceback ... | ValueError: x')
    """
    if run.killed == "output":
        return "output_limit", f"{what}: output exceeded the limit"
    if run.oom or _last_exception(run.stderr) == "MemoryError":
        return "memory_limit", f"{what}: memory limit exceeded"
    if run.killed == "timeout" or run.cpu_s > run.cpu_budget or (
            run.returncode is not None
            and run.returncode in (128 + signal.SIGXCPU, -signal.SIGXCPU)):
        return "timeout", f"{what}: time limit exceeded (cpu {run.cpu_s:.2f}s)"
    if run.killed == "channel":
        return "runtime_error", f"{what}: tampering with the result channel"
    tail = run.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return ("runtime_error",
            f"{what}: {hint or f'exit status {run.returncode}'}; " + " | ".join(tail)[-500:])


def _last_exception(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1].split(":")[0].strip() if lines else ""


def _judge_stdio(code, test, lim) -> tuple[str, str]:
    stdin = judge_stdin(test)  # LF line endings, the last line ended (sandbox_checks)
    # An expected output over the cap could never be printed: the cap grows to twice its size.
    expected = str(test["output"])
    lim = replace(lim, max_output_bytes=max(lim.max_output_bytes, 2 * len(expected.encode(
        "utf-8", "surrogatepass"))))
    run = _run_with_retries("stdio", code, stdin, lim, 1)
    if run.killed or run.oom or run.cpu_s > run.cpu_budget or run.returncode != 0:
        return _classify_end(run, "stdin/stdout test")
    # bytes that are not UTF-8 stay apart from any text (with "replace" they were U+FFFD)
    got = run.stdout.decode("utf-8", "surrogateescape")
    if outputs_match(got, expected, lim.float_tol):
        return "accepted", ""
    return "wrong_answer", f"expected {expected[:200]!r}, got {got[:200]!r}"


def _judge_calls(code, tests, lim) -> list[tuple[str, str]]:
    job = (code, [(str(t["fn_name"]),
                   marshal.dumps((list(arguments_of(t)[0]), dict(arguments_of(t)[1])), 2),
                   returned_cap(t["expected"])) for t in tests])
    run = _run_with_retries("call", job, None, lim, len(tests))
    by_idx = {m[0]: m[1:] for m in run.frames if type(m) is tuple and m and type(m[0]) is int}
    out = []
    for i, t in enumerate(tests):
        r = by_idx.get(i)
        name = f"call test {i} ({t['fn_name']})"
        if r is None or r[0] == "dead":
            out.append(_classify_end(run, name, str(r[1]) if r else ""))
        elif r[0] == "ok":
            got = marshal.loads(r[1])  # R has checked its types, size and depth (runner.plain)
            if values_equal(t["expected"], got, lim.float_tol):
                out.append(("accepted", ""))
            else:
                out.append(("wrong_answer",
                            f"{name}: expected {short_repr(t['expected'])}, got {short_repr(got)}"))
        elif r[0] == "bad":
            out.append(("wrong_answer", f"{name}: {r[1]}"))
        else:
            out.append(("runtime_error", f"{name}: {r[1]}"[:1000]))
    return out


def _judge_asserts(code, tests, lim) -> list[tuple[str, str]]:
    run = _run_with_retries("assert", (code, [str(t["assert"]) for t in tests]), None, lim,
                            len(tests))
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


# ==================================================================================================
# The API
# ==================================================================================================
def checked_limits(caller: str, timeout_s: float, memory_mb: int, limits: dict) -> Limits:
    """The `Limits` of one call: unknown names refused, and isolation required when
    SANDBOX_REQUIRE_ISOLATION is set (or `require_isolation=True`) but unavailable here."""
    names = {f.name for f in fields(Limits)}
    unknown = set(limits) - names
    if unknown:
        raise TypeError(f"{caller}: unknown limit(s) {sorted(unknown)}; known: {sorted(names)}")
    lim = Limits(timeout_s=timeout_s, memory_mb=memory_mb, **limits)
    for f in fields(Limits):
        v, name = getattr(lim, f.name), f.name
        if name in ("require_isolation", "stop_on_failure") or v is None and name in (
                "wall_timeout_s", "float_tol"):
            continue
        number = type(v) in (int, float) if name in _REAL_LIMITS else type(v) is int
        if not number or not (v >= 0 if name in ("float_tol", "retries") else v > 0) or (
                v == math.inf):
            what = ("a finite number" if name in _REAL_LIMITS else "a whole number") + (
                " >= 0" if name in ("float_tol", "retries") else " > 0")
            raise ValueError(f"{caller}: {name}={v!r} must be {what}"
                             + (" (or None)" if name in ("wall_timeout_s", "float_tol") else ""))
    if lim.require_isolation is None:
        lim.require_isolation = os.environ.get("SANDBOX_REQUIRE_ISOLATION", "") not in ("", "0")
    if lim.require_isolation and _state()["mode"] == "none":
        raise SandboxError(f"isolation required but unavailable: {_state()['why']}")
    return lim


_REAL_LIMITS = ("timeout_s", "wall_timeout_s", "float_tol")


def run_tests(code: str, tests: list[dict], timeout_s: float = 2.0, memory_mb: int = 512,
              **limits) -> Result:
    """Run `code` against `tests` in the sandbox; see the module docstring. Further limits: `Limits`
    fields."""
    start = time.monotonic()
    lim = checked_limits("run_tests", timeout_s, memory_mb, limits)
    kinds = check_tests(tests)
    total = len(tests)
    if (error := compile_error(code, "solution.py")) is not None:
        return Result("syntax_error", 0, total, error, time.monotonic() - start)
    verdicts: list[tuple[str, str] | None] = [None] * total
    groups = {k: [i for i in range(total) if kinds[i] == k] for k in ("call", "assert")}
    for kind, idx in groups.items():
        if idx:
            res = (_judge_calls if kind == "call" else _judge_asserts)(
                code, [tests[i] for i in idx], lim)
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


@dataclass
class Output:
    """What one program printed (`run_program`): verdict "accepted" (exit status 0), runtime_error,
    timeout, memory_limit, output_limit or syntax_error; its stdout and stderr (capped as in
    `Limits`); detail: why it failed, as `run_tests` words it."""
    verdict: str
    stdout: str
    stderr: str
    detail: str = ""


def run_program(code: str, stdin: str = "", timeout_s: float = 2.0, memory_mb: int = 512,
                **limits) -> Output:
    """Run `code` once in a fresh sandbox with `stdin`, under the same isolation and limits as a
    stdin/stdout test, and return what it printed (a tool call's observation: tools.py).

    >>> run_program("print(6 * 7)").stdout
    '42\\n'
    >>> run_program("1 / 0").stderr.splitlines()[-1]
    'ZeroDivisionError: division by zero'
    """
    lim = checked_limits("run_program", timeout_s, memory_mb, limits)
    if not isinstance(stdin, str):
        raise ValueError(f"run_program: stdin is a {type(stdin).__name__}; give it as a string")
    if problem := unsendable(stdin, "stdin"):
        raise ValueError(f"run_program: {problem}")
    if (error := compile_error(code, "program.py")) is not None:
        return Output("syntax_error", "", error, error)
    run = _run_with_retries("stdio", code, stdin.encode(), lim, 1)
    out, err = run.stdout.decode("utf-8", "replace"), run.stderr.decode("utf-8", "replace")
    if run.killed or run.oom or run.cpu_s > run.cpu_budget or run.returncode != 0:
        verdict, detail = _classify_end(run, "program")
        return Output(verdict, out, err, detail)
    return Output("accepted", out, err)


def run_many(jobs: list[tuple[str, list[dict]]], workers: int | None = None,
             **limits) -> list[Result]:
    """run_tests over (code, tests) pairs in parallel (default: one worker per core); results in
    order."""
    if workers is not None and (type(workers) is not int or workers < 0):
        raise ValueError(f"run_many: workers={workers!r} must be a whole number >= 1 (0 or None: "
                         f"one per core)")
    workers = workers or os.cpu_count() or 1
    rest = {k: v for k, v in limits.items() if k not in ("timeout_s", "memory_mb")}
    checked_limits("run_many", limits.get("timeout_s", 2.0), limits.get("memory_mb", 512), rest)
    for j, job in enumerate(jobs):  # a malformed test stops the batch before anything runs
        check_tests(job[1], f"run_many: job {j}")
    _state()  # detect once, before the threads start
    # each worker thread keeps one slot (and its next sandbox, started ahead) for the batch
    lease = SlotLease()

    def work(job):
        lease.bind()
        return run_tests(job[0], job[1], **limits)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, jobs))
    finally:
        lease.release()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Run {code, tests} rows of a jsonl file in the sandbox.")
    ap.add_argument("file", help="jsonl: one {\"code\": str, \"tests\": [...]} object per line "
                                 "(optional: \"name\"/\"task_id\")")
    ap.add_argument("--workers", type=int, default=None, help="parallel runs (default: cores)")
    ap.add_argument("--timeout", type=float, default=2.0, help="CPU seconds per test")
    ap.add_argument("--memory", type=int, default=512, help="memory limit in MiB")
    ap.add_argument("--float-tol", type=float, default=None, help="tolerance for floats")
    args = ap.parse_args(argv)
    try:
        rows = read_rows(args.file)
    except ValueError as e:
        ap.error(str(e))
    try:
        checked_limits("flags", args.timeout, args.memory, {"float_tol": args.float_tol})
        if args.workers is not None and args.workers < 1:
            raise ValueError(f"--workers {args.workers} must be a whole number >= 1")
    except ValueError as e:
        ap.error(str(e).removeprefix("flags: ").replace("timeout_s=", "--timeout ")
                 .replace("memory_mb=", "--memory ").replace("float_tol=", "--float-tol "))
    start = time.monotonic()
    try:
        results = run_many([(r["code"], r["tests"]) for r in rows], workers=args.workers,
                           timeout_s=args.timeout, memory_mb=args.memory, float_tol=args.float_tol)
    except SandboxError as e:
        # the sandbox cannot run here: the message says what is missing and the fix
        print(f"sandbox.py: error: {e}", file=sys.stderr)
        return 2
    elapsed = time.monotonic() - start
    print(f"{'#':>4}  {'name':<24} {'verdict':<14} {'passed':>9} {'time':>7}  detail")
    for n, (r, res) in enumerate(zip(rows, results), 1):
        name = str(r.get("name", r.get("task_id", "")))[:24]
        detail = res.detail.replace("\n", " ")[:60]
        print(f"{n:>4}  {name:<24} {res.verdict:<14} {f'{res.passed}/{res.total}':>9} "
              f"{res.time_s:>6.2f}s  {detail}")
    counts = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    print("\n" + ", ".join(f"{v}: {c}" for v, c in counts.items() if c) +
          f"  ({len(rows)} programs in {elapsed:.1f}s, isolation {isolation_mode()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
