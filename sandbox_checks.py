"""What sandbox.py checks before anything runs: the test tables (`check_tests`: each test's kind
and what a malformed one needs), the code (`compile_error`: size and syntax), and how deep a value
may nest to be compared (`MAX_VALUE_DEPTH`); with `short_repr`, the bounded repr of every detail.
"""
from __future__ import annotations

import ast
import functools
import itertools
import json
import marshal
import reprlib
import subprocess

# How deeply the containers of a call-based value may nest (a list in a list ... : levels) for the
# parent to compare it: `values_equal` and `_key` recurse, about three Python frames a level, and
# Python stops at 1000 frames (RecursionError). A returned set holding a 499-deep tuple (R lets 500
# levels leave the sandbox) raised RecursionError out of run_tests and ended the whole batch.
MAX_VALUE_DEPTH = 100


# How many bytes (marshal, version 2) a call's returned value may take and still equal the test's
# expected value. Equal values (`sandbox.values_equal`) have the same shape, and each part of the
# returned one takes at most 16 times the bytes of its expected counterpart: a float (9 bytes)
# equals an int of up to 309 digits (143), an int (5) a float (9) or a complex (17), a complex
# an int (143); equal str and bytes take the same, a list, tuple, set or dict the same header. R
# measures the value it would send against this (runner.run_calls), so that a value no bigger than
# the sandbox's memory but past any equal one (a 60 MB str for 'x': 0.3 s of the parent's CPU per
# call test to read and decode, 2.4 s for eight) never reaches the parent. Only R learns it, never
# the candidate's process. A value of up to RETURNED_SLACK bytes reaches the parent whatever its
# size, so that a wrong answer's detail shows what it was.
RETURNED_RATIO, RETURNED_SLACK = 16, 1 << 20


def returned_cap(expected) -> int:
    """The most bytes of marshal that a value equal to `expected` takes (`RETURNED_RATIO`), and
    `RETURNED_SLACK` more.

    >>> returned_cap(1.5) - RETURNED_SLACK, returned_cap("x") - RETURNED_SLACK
    (144, 96)
    """
    return RETURNED_RATIO * len(marshal.dumps(expected, 2)) + RETURNED_SLACK


def nesting(value) -> int:
    """How many levels of containers `value` (a plain value) nests, counted without recursion.

    >>> nesting(1), nesting([]), nesting({"a": [(1,), {2}]}), nesting([[[[]]]])
    (0, 1, 3, 4)
    """
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, level = todo.pop()
        t = type(v)
        if t in (list, tuple, set, frozenset, dict):
            deepest = max(deepest, level)
            todo.extend((x, level + 1) for x in (
                v if t is not dict else (y for item in v.items() for y in item)))
    return deepest


class _ShortRepr(reprlib.Repr):
    """repr for details, bounded in depth and width whatever the value (a value from the sandbox may
    be a DAG whose full repr runs to GiBs), and never raising: an int past the int/str conversion
    limit (4300 digits) made ``repr`` raise ValueError out of run_tests."""

    def __init__(self):
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother = 4, 200, 200

    def repr_int(self, x, level):
        return f"<int of {x.bit_length()} bits>" if x.bit_length() > 4000 else repr(x)[:200]

    def repr_bytes(self, x, level):  # the default repr's whole value first (4 x its size)
        return repr(x[:self.maxstring]) + ("..." if len(x) > self.maxstring else "")

    # reprlib sorts a whole set (and a dict's keys) to show its first six: a returned set of 100,000
    # tuples cost the parent 0.13 s per call test, frozensets and tuples that share long prefixes
    # more. Here a set shows the first elements it holds, sorted only where they are atoms of one
    # type (cheap), and a dict its first keys in its own order.
    def repr_set(self, x, level):
        return self._repr_iterable(self._few(x), level, "{", "}", self.maxset) if x else "set()"

    def repr_frozenset(self, x, level):
        return self._repr_iterable(self._few(x), level, "frozenset({", "})", self.maxset) if x \
            else "frozenset()"

    def _few(self, x) -> list:
        few = list(itertools.islice(x, self.maxset + 1))  # one more: the "..." if there are more
        if len(set(map(type, few))) == 1 and type(few[0]) in (int, float, str, bytes):
            few.sort()
        return few

    def repr_dict(self, x, level):
        if not x or level <= 0:
            return "{" + ("..." if x else "") + "}"
        pieces = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                  for k, v in itertools.islice(x.items(), self.maxdict)]
        return "{" + ", ".join(pieces + ["..."] * (len(x) > self.maxdict)) + "}"


short_repr = _ShortRepr().repr


_KEYS = {"stdio": "'input' and 'output'", "call": "'fn_name', 'args' and 'expected'",
         "assert": "'assert'"}


def check_tests(tests, caller: str = "run_tests") -> list[str]:
    """The kind of each test ("stdio", "call" or "assert"), or a ValueError that names the first
    malformed test and what it needs. Checked before anything runs: a test that could only be
    misread (``"args": "ab"`` called f('a', 'b'), ``"assert": None`` ran the statement ``None``
    and passed every program, a list as ``"output"`` was compared as its repr) or that would fail
    after its program ran (a missing ``"expected"`` was a KeyError then) is refused.

    A key whose value is None counts as absent (except ``"expected"``): a table (parquet, a HF
    dataset) gives every test every key of its column, null where the test had none, and a
    stdin/stdout test's ``"assert": None`` made it an assert test that passed every program.

    >>> check_tests([{"input": "1", "output": "2"}, {"fn_name": "f", "args": [1], "expected": 2}])
    ['stdio', 'call']
    >>> check_tests([{"fn_name": "f", "args": "ab", "expected": 1}])
    Traceback (most recent call last):
    ValueError: run_tests: test 0 (call-based): 'args' is a str; give the positional arguments \
as a list, e.g. "args": [1, 2]
    """
    if not isinstance(tests, (list, tuple)):
        raise ValueError(f"{caller}: tests must be a list of test dicts, not a "
                         f"{type(tests).__name__}")
    if not tests:
        raise ValueError(f"{caller}: no tests given")
    kinds = []
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            raise ValueError(f"{caller}: test {i} is a {type(t).__name__}, not a dict with "
                             f"{_KEYS['stdio']}, {_KEYS['call']}, or {_KEYS['assert']}")
        kind = ("assert" if t.get("assert") is not None else "call"
                if t.get("fn_name") is not None else "stdio"
                if t.get("input") is not None or t.get("output") is not None else None)
        if kind is None:
            has = sorted(str(k) for k, v in t.items() if v is not None)
            raise ValueError(f"{caller}: test {i} is none of stdin/stdout ({_KEYS['stdio']}),"
                             f" call-based ({_KEYS['call']}) or assert ({_KEYS['assert']});"
                             f" it has {has or 'no key that is not null'}")
        problem = _test_problem(kind, t)
        if problem:
            label = {"stdio": "stdin/stdout", "call": "call-based", "assert": "assert"}[kind]
            raise ValueError(f"{caller}: test {i} ({label}): {problem}")
        kinds.append(kind)
    return kinds


def _test_problem(kind: str, t: dict) -> str:
    """What is wrong with one test of `kind`, and the fix; "" if nothing."""
    if kind == "assert":
        src = t["assert"]
        if not isinstance(src, str) or not src.strip():
            return (f"'assert' is {short_repr(src)}; give the test statements as a string, e.g. "
                    f"\"assert f(1) == 2\"")
        try:
            compile(src, "<test>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            return f"the statements do not compile ({type(e).__name__}: {e}); fix the test"
        return _missing_import(src)
    if kind == "call":
        if not isinstance(t["fn_name"], str) or not t["fn_name"].isidentifier():
            return f"'fn_name' is {short_repr(t['fn_name'])}; give the function's name, e.g. \"f\""
        if "expected" not in t:
            return "no 'expected' value; give the value the call must return"
        args, kwargs = arguments_of(t)
        if not isinstance(args, (list, tuple)):
            return (f"'args' is a {type(args).__name__}; give the positional arguments as a "
                    f"list, e.g. \"args\": [1, 2]")
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            return (f"'kwargs' is {short_repr(kwargs)}; give the keyword arguments as a dict of "
                    f"names, e.g. \"kwargs\": {{\"x\": 1}}")
        for what, v in (("args", args), ("kwargs", kwargs), ("expected", t["expected"])):
            try:
                marshal.dumps(v, 2)
            except ValueError:
                return (f"{what!r} holds a value that is not plain data ({short_repr(v)}); use"
                        " None, bool, numbers, str, bytes, lists, tuples, dicts and sets")
        if (depth := nesting(t["expected"])) > MAX_VALUE_DEPTH:
            return (f"'expected' is nested {depth} levels deep; values are compared to at most "
                    f"{MAX_VALUE_DEPTH} levels (sandbox.MAX_VALUE_DEPTH)")
        return ""
    if t.get("output") is None:
        return "no 'output'; give the program's stdout as a string (\"\" for none)"
    for key, v in (("input", stdin_of(t)), ("output", t["output"])):
        if not isinstance(v, str) and not (key == "input" and isinstance(v, bytes)):
            return (f"{key!r} is a {type(v).__name__}; give it as one string (lines joined"
                    " with \\n)")
    return unsendable(stdin_of(t), "'input'")


def _missing_import(src: str) -> str:
    """Why test statements `src` would fail every program: they import a module that the sandbox's
    interpreter lacks (HumanEval+'s and MBPP+'s ``import numpy``: it runs with ``-s -S``, its
    standard library only); "" if they do not, or the interpreter cannot be asked. An import
    guarded by ``try: ... except ImportError`` is the test's own business."""
    have = sandbox_modules()
    if have is None:
        return ""
    for name in _imports(ast.parse(src)):
        if name not in have:
            from sandbox_isolation import PYTHON
            return (f"it imports {name}, which the sandbox's Python ({PYTHON}, started with -s -S:"
                    f" its standard library only) does not have, so every program would fail it;"
                    f" drop the test (or the row), or check with the standard library")
    return ""


def _imports(tree) -> list[str]:
    """The top-level modules that `tree` imports, leaving out imports inside a ``try`` that
    handles an ImportError."""
    guarded = (None, "ImportError", "ModuleNotFoundError", "Exception", "BaseException")
    names, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.append(node.module.split(".")[0])
        elif isinstance(node, ast.Try) and any(
                (ast.unparse(h.type) if h.type else None) in guarded for h in node.handlers):
            todo += node.handlers + node.orelse + node.finalbody
        else:
            todo += ast.iter_child_nodes(node)
    return names


@functools.cache
def sandbox_modules() -> frozenset[str] | None:
    """The top-level modules the sandbox's interpreter (sandbox_isolation.PYTHON) can import, asked
    once; None if it does not run (`sandbox.isolation_mode` then names the problem)."""
    from sandbox_isolation import PYTHON
    try:
        out = subprocess.run([PYTHON, "-I", "-S", "-c", "import sys, pkgutil; print(*sorted(set("
                              "sys.builtin_module_names) | {m.name for m in pkgutil.iter_modules()"
                              "}))"], capture_output=True, text=True, timeout=30, env={})
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(out.stdout.split()) if out.returncode == 0 else None


def unsendable(stdin, what: str) -> str:
    """Why text `stdin` cannot be a program's stdin (a lone surrogate, which UTF-8 cannot encode:
    a UnicodeEncodeError once tests had run), or ""."""
    try:
        stdin.encode() if isinstance(stdin, str) else None
    except UnicodeEncodeError as e:
        return (f"{what} holds {stdin[e.start]!r} at character {e.start}, a lone surrogate that"
                f" UTF-8 cannot encode; give the text as it should reach the program")
    return ""


def stdin_of(test: dict):
    """A stdin/stdout test's input: none (absent or null) is empty."""
    return "" if test.get("input") is None else test["input"]


def judge_stdin(test: dict) -> bytes:
    """The bytes a stdin/stdout test's program reads: its input as a judge's input file holds it.

    Line endings are LF: each CRLF and each lone CR of the input is a line break (a test written on
    Windows, a dataset that kept them). A judge that runs Python on Windows (Codeforces) reads its
    stdin with universal newlines; here, on Linux, ``input()`` kept the CR, so a right solution's
    ``len(input())`` or ``a == b`` on CRLF input was one off, or false. Input that does not end its
    last line gets the line break a judge's input file has: APPS and TACO give the lines as a list
    ("\\n".join drops the last one), and the competitive idiom ``input = lambda:
    sys.stdin.readline()[:-1]`` cut the last digit off the last line.

    >>> judge_stdin({"input": "ab\\r\\ncd\\re"}), judge_stdin({"input": b"1\\r\\n"})
    (b'ab\\ncd\\ne\\n', b'1\\n')
    """
    stdin = stdin_of(test)
    stdin = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    stdin = stdin.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return stdin + b"\n" if stdin and not stdin.endswith(b"\n") else stdin


def arguments_of(test: dict) -> tuple:
    """A call-based test's (args, kwargs): none (absent or null) is empty."""
    args, kwargs = test.get("args"), test.get("kwargs")
    return [] if args is None else args, {} if kwargs is None else kwargs


MAX_CODE_BYTES = 256 << 10


def compile_error(code, filename: str) -> str | None:
    """Why `code` cannot run (not a string, over MAX_CODE_BYTES, a compile error), or None.

    >>> compile_error("x = 1" + " < 1" * 100_000, "solution.py")
    'code is 400005 bytes, over the 262144-byte limit (MAX_CODE_BYTES)'
    """
    if not isinstance(code, str):
        return "code is not a string"
    if len(code) > MAX_CODE_BYTES or len(code.encode("utf-8", "surrogatepass")) > MAX_CODE_BYTES:
        return (f"code is {len(code.encode('utf-8', 'surrogatepass'))} bytes, over the "
                f"{MAX_CODE_BYTES}-byte limit (MAX_CODE_BYTES)")
    try:
        compile(code, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"{type(e).__name__}: {e}"[:500]
    return None


def read_rows(path: str) -> list[dict]:
    """The {code, tests} rows of sandbox.py's jsonl file, each checked (`check_tests`); what is
    wrong is a ValueError naming the file, the row and the fix. UTF-8 with or without a byte
    order mark (Windows editors write one; it was 'not valid JSON'). A file of no rows, or a row
    whose code is no text (a number, null: graded as a syntax error, 'code is not a string'), is
    a mistake in the file, refused as one."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as e:  # missing, a folder, unreadable, not UTF-8 text
        raise ValueError(f"cannot read {path} ({e.strerror if isinstance(e, OSError) else e}); "
                         'give a jsonl file of {"code": ..., "tests": [...]} rows, in UTF-8'
                         ) from None
    rows = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not valid JSON ({e})") from None
    if not rows:
        raise ValueError(f'{path} holds no rows; give one {{"code": ..., "tests": [...]}} object '
                         "per line")
    for n, r in enumerate(rows, 1):
        if not isinstance(r, dict) or "code" not in r or "tests" not in r:
            raise ValueError(f"{path}: row {n} needs 'code' and 'tests' keys")
        if not isinstance(r["code"], str):
            raise ValueError(f"{path}: row {n}: code is {type(r['code']).__name__}, not the "
                             "program's text; give it as a string")
        try:
            check_tests(r["tests"], f"row {n}")
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    return rows
