"""Tests for rewards.py: verify_math on the shared case list (tests/math_cases.py), safety of the
symbolic worker, and hand-computed values of every reward formula."""

import math
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from math_cases import CASES  # noqa: E402

import codeblocks  # noqa: E402
import mathcheck  # noqa: E402
import rewards  # noqa: E402
from rewards import verify_math  # noqa: E402

# ------------------------------------------------------------------ verify_math: the case list


@pytest.mark.parametrize(
    "cat,completion,gold,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_verify_math_cases(cat, completion, gold, expected):
    assert verify_math(completion, gold) is expected


def test_case_list_is_broad():
    cats = {}
    for cat, _c, _g, exp in CASES:
        cats.setdefault(cat, set()).add(exp)
    assert len(CASES) >= 150
    # every category has accepts and rejects (except purely structural ones)
    assert sum(1 for v in cats.values() if v == {True, False}) >= len(cats) - 1


# ------------------------------------------------------------------ verify_math: properties


def test_gold_and_prediction_normalised_alike():
    for s in ["\\dfrac{1}{2}", "1,234", "30^\\circ", "\\text{(B)}", "√2", "3e8", "0.\\overline{3}"]:
        assert verify_math(f"\\boxed{{{s}}}", s)


def test_answer_inside_think_only_is_rejected():
    assert not verify_math("<think>The answer is \\boxed{4}.</think>", "4")
    assert not verify_math("<think>The answer is 4.</think>\n\nAnswer: 5", "4")


def test_numbers_from_datasets_accepted_as_non_strings():
    assert verify_math("\\boxed{7}", 7)
    assert verify_math("\\boxed{0.5}", 0.5)
    assert not verify_math("\\boxed{7}", None)
    assert not verify_math(None, "7")


def test_math_solution_as_gold():
    gold = "We compute $1+1$ and so the answer is $\\boxed{2}$."
    assert verify_math("\\boxed{2}", gold)
    assert not verify_math("\\boxed{3}", gold)


def test_extract_answer_rules():
    assert rewards.extract_answer("a \\boxed{1} b \\boxed{2}") == "2"
    assert rewards.extract_answer("\\boxed{1}, \\boxed{2}") == "1, 2"
    assert rewards.extract_answer("The answer is 7.") == "7"
    assert rewards.extract_answer("#### 1,234") == "1,234"
    assert rewards.extract_answer("<answer> x+1 </answer>") == "x+1"
    assert rewards.extract_answer("so we get 7") is None


@pytest.mark.parametrize(
    "raw,norm",
    [
        ("\\dfrac13", "\\frac{1}{3}"),
        ("\\tfrac{1}{3}", "\\frac{1}{3}"),
        ("1,234", "1234"),
        ("1\\,234", "1234"),
        ("45^\\circ", "45"),
        ("5\\text{ cm}", "5"),
        ("x = 3", "3"),
        ("3e8", "3\\times10^{8}"),
        ("0.\\overline{3}", "\\frac{1}{3}"),
        ("√2", "\\sqrt{2}"),
        ("25\\%", "25%"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("\\$18", "18"),
        (".5", "0.5"),
    ],
)
def test_normalize_answer(raw, norm):
    assert rewards.normalize_answer(raw) == norm


def test_power_tower_is_screened_fast():
    t = time.monotonic()
    assert not verify_math("\\boxed{9^{9^{9^9}}}", "9^{9^{9^{10}}}")
    assert not verify_math("\\boxed{2^{2^{2^{2^{2^{2}}}}}}", "3")
    assert time.monotonic() - t < 1.0


def test_slow_symbolic_check_is_killed_and_worker_recovers(monkeypatch):
    # A case the screen lets through but sympy cannot finish quickly: the worker is killed at
    # the time limit, verify_math returns False, and the next symbolic check works again.
    # The kill is seen in the worker process itself (the one that took the case is gone and
    # another stands in its place), not in wall time, which a loaded machine stretches.
    assert verify_math("\\boxed{(x+1)^2}", "x^2+2x+1")      # the worker is up and ready
    took_it = mathcheck.WORKER.proc
    monkeypatch.setattr(mathcheck, "SYMBOLIC_TIMEOUT_S", 0.3)
    hard = "\\sum_{k=1}^{9000} \\frac{1}{k^{3}+x}"
    assert not verify_math(f"\\boxed{{{hard}}}", "\\frac{1}{x}")
    assert took_it.poll() is not None and mathcheck.WORKER.proc is not took_it
    monkeypatch.setattr(mathcheck, "SYMBOLIC_TIMEOUT_S", 2.0)
    assert verify_math("\\boxed{(x+1)^2}", "x^2+2x+1")


def test_worker_death_does_not_crash():
    assert verify_math("\\boxed{\\sqrt{8}}", "2\\sqrt{2}")
    rewards.WORKER.proc.kill()
    rewards.WORKER.proc.wait()
    assert verify_math("\\boxed{\\sqrt{8}}", "2\\sqrt{2}")


def test_verify_math_from_threads():
    out = []

    def job():
        out.append(verify_math("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{1}{\\sqrt{2}}"))

    threads = [threading.Thread(target=job) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [True] * 4


def test_deeply_nested_braces_do_not_hang():
    # a hang guard, not a speed target: stripping brace by brace was quadratic in the depth
    # (minutes at this depth); one pass takes about 0.2 s
    deep = "{" * 20_000 + "5" + "}" * 20_000
    t = time.monotonic()
    assert verify_math(f"\\boxed{{{deep}}}", "5")
    assert not verify_math(f"\\boxed{{{deep}}}", "6")
    assert rewards.normalize_answer(deep) == "5"
    assert time.monotonic() - t < 10.0


def test_long_runs_of_digits_or_spaces_do_not_hang():
    # a hang guard, not a speed target: a pattern tried at every digit or space of a long run
    # (repeating decimals, the percent sign, "and" between list items) was quadratic in the run
    # (about 25 s for these 60 000 digits); each call now takes well under a second
    digits = "1" * 60_000
    spaces = "\\," * 30_000
    t = time.monotonic()
    assert not verify_math(f"\\boxed{{{digits}}}", "5")
    assert not verify_math("\\boxed{5}", digits)
    assert verify_math(f"\\boxed{{{spaces}5}}", "5")
    assert verify_math("\\boxed{0.\\overline{3}}", "\\frac13")
    assert verify_math("\\boxed{28 \\%}", "28")
    assert time.monotonic() - t < 10.0


def test_many_unclosed_boxes_do_not_hang():
    # a hang guard, not a speed target: each unclosed box was scanned to the end of the text
    # (12 s for these 5 000 boxes); the braces are now matched in one pass
    t = time.monotonic()
    assert not verify_math("\\boxed{" * 5_000 + "5", "5")
    assert verify_math("\\boxed{" * 5_000 + " so \\boxed{5}", "5")
    assert time.monotonic() - t < 5.0


def test_huge_completion_is_fast():
    text = "<think>" + "wait " * 200_000 + "</think>" + "blah " * 50_000 + "\\boxed{3}"
    t = time.monotonic()
    assert verify_math(text, "3")
    assert time.monotonic() - t < 2.0


# ------------------------------------------------------------------ simple rewards


def test_math_and_still3_outcome():
    task = {"answer": "4"}
    assert rewards.math_reward("\\boxed{4}", task) == 1.0
    assert rewards.math_reward("\\boxed{5}", task) == 0.0
    assert rewards.still3_outcome_reward("\\boxed{4}", task) == 1.0
    assert rewards.still3_outcome_reward("\\boxed{5}", task) == -1.0
    assert rewards.still3_outcome_reward("The answer is 4", task) == -2.0
    assert (
        rewards.still3_outcome_reward("The answer is \\boxed{}.", task) == -2.0
    )  # empty box: no box
    assert rewards.still3_outcome_reward("\\boxed{ }", task) == -2.0
    assert rewards.REWARDS["math_partial"]("So 2 + 2 = 4", task) == 0.5


@pytest.mark.parametrize(
    "text,plain,strict",
    [
        ("<think>\nwork\n</think>\n\nSo \\boxed{3}", 1.0, 1.0),
        ("work</think>\n\nSo \\boxed{3}", 1.0, 0.0),  # opening tag was in the prompt
        ("<think>work</think>So \\boxed{3}", 1.0, 0.0),  # not the strict layout
        ("<think>\nwork\n</think>\n\nSo 3", 1.0, 0.0),  # strict needs a box
        ("<think>\nwork\n</think>\n\n", 0.0, 0.0),  # no answer
        ("<think>\nwork", 0.0, 0.0),  # never closed
        ("<think>a</think><think>b</think> 3", 0.0, 0.0),  # two blocks
        ("x <think>a</think> 3", 0.0, 0.0),  # think not at the start
        ("<think>\n\n</think>\n\n\\boxed{3}", 1.0, 0.0),  # empty think: fine, not strict
        ("no tags at all", 0.0, 0.0),
    ],
)
def test_format_reward(text, plain, strict):
    assert rewards.format_reward(text) == plain
    assert rewards.format_reward(text, strict=True) == strict


# ------------------------------------------------------------------ Phi-4 length-aware


@pytest.mark.parametrize(
    "L,correct,expected",
    [
        (0, True, 1.0),
        (1000, True, 1.0),
        (25600, True, 1.0),
        (28672, True, 0.75),  # rho = 1/2: 0.5 + 0.25 (1 + 0)
        (25600 + 6144 / 3, True, 0.5 + 0.25 * 1.5),  # rho = 1/3: cos = 1/2
        (31744, True, 0.5),
        (40000, True, 0.5),
        (0, False, -1.0),
        (1851, False, -0.75),  # rho = 1/2
        (1234, False, -0.5 - 0.25 * 1.5),  # rho = 1/3
        (3702, False, -0.5),
        (20000, False, -0.5),
    ],
)
def test_cosine_length_reward(L, correct, expected):
    assert rewards.cosine_length_reward(L, correct) == pytest.approx(expected, abs=1e-12)


def test_phi4_length_aware_reward_cases():
    task = {"answer": "4"}
    good = "<think>\nok\n</think>\n\n\\boxed{4}"
    bad = "<think>\nok\n</think>\n\n\\boxed{5}"
    f = rewards.phi4_length_aware_reward
    assert f(good, task, num_tokens=100, finished=True) == 1.0
    assert f(good, task, num_tokens=28672, finished=True) == pytest.approx(0.75)
    assert f(bad, task, num_tokens=1851, finished=True) == pytest.approx(-0.75)
    assert f(good, task, num_tokens=100, finished=False) == -0.5  # no EOS
    assert f("<think>\nok\n\\boxed{4}", task, num_tokens=100, finished=True) == -1.0  # malformed
    assert f("<think>a</think><think>b</think>\\boxed{4}", task, num_tokens=9) == -1.0
    # task fields as the source of length and EOS
    assert f(good, {"answer": "4", "num_tokens": 28672, "finished": True}) == pytest.approx(0.75)
    assert f(good, {"answer": "4", "finished": False}) == -0.5
    # scaled to a 4096-token run: L_pos 3303, L_neg 478
    assert rewards.scaled_phi4_lengths(4096) == (4096, 3303, 478)
    assert f(good, task, num_tokens=3303, max_tokens=4096) == 1.0
    assert f(good, task, num_tokens=4096, max_tokens=4096) == pytest.approx(0.5)
    assert f(bad, task, num_tokens=239, max_tokens=4096) == pytest.approx(-0.75)
    assert f(bad, task, num_tokens=478, max_tokens=4096) == pytest.approx(-0.5)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("a b c d", 0.0),  # fewer than 5 words
        ("a b c d e", -1.0),  # 1 five-gram, 5 words: 1 / (5/5)
        ("a b c d e f g h i j", -0.5),  # max count 1 / (10/5)
        (" ".join("abcdefghij"[i % 10] for i in range(100)), -9 / 20),
        # 100 words cycling 10 letters: 96 5-grams, 10 distinct, each 9-10 times (all > 5):
        # frequent = 10/96; top = 10 / (100/5) = 0.5  -> -0.5 (see below)
    ],
)
def test_phi4_repetition_penalty_small(text, expected):
    if text.startswith("a b c d e f g h i j a"):
        expected = -max(10 / 96, 10 / 20)
    assert rewards.phi4_repetition_penalty(text) == pytest.approx(expected)


def test_phi4_repetition_penalty_hand_computed():
    # 30 words: "x y z u v" six times. 26 five-grams, 5 distinct; each appears 6 or 5 times:
    # starts 0,5,..,25 -> "x y z u v" 6 times; the 4 rotations 5 times each.
    # frequent = 1/26 (only one occurs > 5 times); top = 6 / (30/5) = 1.0 -> -1.0
    text = " ".join(["x y z u v"] * 6)
    assert rewards.phi4_repetition_penalty(text) == pytest.approx(-1.0)
    # 50 distinct words: frequent 0, top = 1 / 10
    assert rewards.phi4_repetition_penalty(" ".join(f"w{i}" for i in range(50))) == pytest.approx(
        -0.1
    )


def test_phi4_reward_combination():
    task = {"answer": "4"}
    text = "<think>\n" + " ".join(f"w{i}" for i in range(50)) + "\n</think>\n\n\\boxed{4}"
    acc = rewards.phi4_length_aware_reward(text, task, num_tokens=28672, finished=True)
    rep = rewards.phi4_repetition_penalty(text)
    assert acc == pytest.approx(0.75)
    assert rewards.phi4_reward(text, task, num_tokens=28672, finished=True) == pytest.approx(
        8 / 13 * acc + 1 / 13 * rep
    )


# ------------------------------------------------------------------ DAPO, STILL-3


@pytest.mark.parametrize(
    "L,expected",
    [
        (0, 0.0),
        (16384, 0.0),
        (17408, -0.25),
        (18432, -0.5),
        (20480, -1.0),
        (20481, -1.0),
        (99999, -1.0),
    ],
)
def test_dapo_overlong_defaults(L, expected):
    assert rewards.dapo_overlong_penalty("", num_tokens=L) == pytest.approx(expected)


def test_dapo_overlong_small_run():
    # L_max 1000, cache 200: free up to 800, then linear
    f = rewards.dapo_overlong_penalty
    assert f("", num_tokens=800, max_tokens=1000, cache_tokens=200) == 0.0
    assert f("", num_tokens=850, max_tokens=1000, cache_tokens=200) == pytest.approx(-0.25)
    assert f("", num_tokens=1000, max_tokens=1000, cache_tokens=200) == pytest.approx(-1.0)
    assert f("a b c", {"num_tokens": 900}, max_tokens=1000, cache_tokens=200) == pytest.approx(-0.5)


def test_still3_action_reward():
    f = rewards.still3_action_reward
    assert f("The answer is 3.") == 0.0
    assert f("Wait, let me verify. Wait.", cap=4) == 0.75
    assert f("wait " * 50) == 1.0  # capped
    assert f("Alternatively, we check it. Hmm.", cap=10) == pytest.approx(0.3)
    assert f("awaited unverified") == 0.0  # whole words only
    assert f("<think>wait wait</think> wait wait wait", cap=10) == pytest.approx(0.2)


def test_still3_length_reward():
    f = rewards.still3_length_reward
    assert f("", num_tokens=0) == 0.0
    assert f("", num_tokens=2048, max_tokens=8192) == 0.25
    assert f("", num_tokens=8192, max_tokens=8192) == 1.0
    assert f("", num_tokens=10_000, max_tokens=8192) == 1.0
    assert f("one two three four", max_tokens=8) == 0.5  # word-count fallback


# ------------------------------------------------------------------ code

CODE_TASK = {
    "tests": [
        {"assert": "assert add(1, 2) == 3"},
        {"assert": "assert add(2, 2) == 4"},
        {"assert": "assert add(-1, 1) == 0"},
        {"assert": "assert add(0, 0) == 1"},
    ]
}


def test_extract_code():
    c = "<think>```python\nx=1\n```</think>\nHere:\n```py\na = 1\n```\nand\n```python\nb = 2\n```"
    assert rewards.extract_code(c) == "b = 2\n"
    assert rewards.extract_code("<think>```python\nx=1\n```") is None
    assert rewards.extract_code("```\nz = 3\n```") == "z = 3\n"
    assert rewards.extract_code("no code") is None


@pytest.mark.parametrize(
    "completion, code",
    [
        # a block inside a list item is indented as a whole: an IndentationError as it stood
        ("1. The code:\n   ```python\n   def f():\n       return 1\n   ```\n",
         "def f():\n    return 1\n"),
        ("- code:\r\n  ```python\r\n  x = 1\r\n  ```\r\n", "x = 1\n"),
        # three backticks inside the code do not end the block
        ('```python\ns = "```"\nprint(s)\n```', 's = "```"\nprint(s)\n'),
        ("````python\ns = \"\"\"\n```\n\"\"\"\n````", 's = """\n```\n"""\n'),
        # an inline mention of a fence opens no block (the real block was lost: '')
        ("Use ```python``` fences:\n```python\nx = 2\n```", "x = 2\n"),
        ("~~~python\nx = 1\n~~~", "x = 1\n"),
        ("```py3\nx = 1\n```", "x = 1\n"),
        ("```Python3 title='sol.py'\nx = 1\n```", "x = 1\n"),
        ("Here:```python\nx = 1\n```", "x = 1\n"),
        # the language is the info string's first name, whatever follows it: a file name after
        # ':' or ',', pandoc's {.python}, attributes, a minor version (these were no block: 0)
        ("```python:solution.py\nx = 1\n```", "x = 1\n"),
        ("```py,main.py\nx = 1\n```", "x = 1\n"),
        ("```{.python .numberLines}\nx = 1\n```", "x = 1\n"),
        ("```Python{cmd=true}\nx = 1\n```", "x = 1\n"),
        ("```python3.11\nx = 1\n```\n```\ny = 2\n```", "x = 1\n"),
        ("So:```py3.8:sol.py\nx = 1\n```", "x = 1\n"),
        ("```python-repl\n>>> x = 1\n```", None),  # another language, not a Python tag
        ("```pythonic\nx = 1\n```", None),
        # a fence that ends the last code line, or starts a line of text, still closes
        ("```python\nx = 1```", "x = 1\n"),
        ("```python\nx = 1\n``` and that is all", "x = 1\n"),
        # the last Python block wins over an untagged one, a later unclosed block is no block
        ("```python\nx = 1\n```\n```\ny = 2\n```", "x = 1\n"),
        ("```python\nx = 1\n```\nthen\n```python\nx = 2\n", "x = 1\n"),
        ("```text\nx = 1\n```", None),
    ],
)
def test_extract_code_reads_markdown_fences(completion, code):
    assert rewards.extract_code(completion) == code
    if code is not None:
        import ast

        ast.parse(code)


def test_extract_code_is_linear_on_degenerate_fences():
    for text in ("```python\n" * 20000, "```python\nx = 1\n```\n" * 10000, "`" * 10**6):
        start = time.monotonic()
        rewards.extract_code(text)
        assert time.monotonic() - start < 2.0


def _sandbox_works() -> bool:
    try:
        import sandbox

        r = sandbox.run_tests("x = 1", [{"assert": "assert x == 1"}])
        return r.verdict == "accepted"
    except Exception:  # noqa: BLE001
        return False


class FakeResult:
    def __init__(self, verdict, passed, total):
        self.verdict, self.passed, self.total, self.detail = verdict, passed, total, ""


def _fake_run_many(jobs, workers=None, **limits):
    out = []
    for code, tests in jobs:
        ns = {}
        exec(code, ns)  # noqa: S102 - trusted test code
        passed = 0
        for t in tests:
            try:
                exec(t["assert"], dict(ns))  # noqa: S102
                passed += 1
            except AssertionError:
                pass
        out.append(
            FakeResult("accepted" if passed == len(tests) else "wrong_answer", passed, len(tests))
        )
    return out


@pytest.fixture(params=["real", "fake"])
def code_backend(request, monkeypatch):
    if request.param == "real":
        if not _sandbox_works():
            pytest.skip("sandbox.py missing or not working here")
        return "real"
    import types

    import sandbox  # its compile_error needs no isolation

    fake = types.ModuleType("sandbox")
    fake.run_many = _fake_run_many
    fake.compile_error = sandbox.compile_error
    monkeypatch.setitem(sys.modules, "sandbox", fake)
    return "fake"


def test_code_reward(code_backend):
    ok = "<think>\nhmm\n</think>\n```python\ndef add(a, b):\n    return a + b\n```"
    bad = "```python\ndef add(a, b):\n    return a * b\n```"  # right only for add(2, 2)
    assert rewards.code_reward(ok, CODE_TASK) == pytest.approx(0.75)  # 3 of 4
    assert rewards.code_reward(ok, CODE_TASK, all_or_nothing=True) == 0.0
    full = {"tests": CODE_TASK["tests"][:3]}
    assert rewards.code_reward(ok, full, all_or_nothing=True) == 1.0
    assert rewards.code_reward(bad, full) == pytest.approx(1 / 3)
    assert rewards.code_rewards([ok, bad, "no code"], [full] * 3) == pytest.approx(
        [1.0, 1 / 3, 0.0]
    )


@pytest.mark.parametrize("code", [
    "from __future__ import annotations\ndef f(x: List[int]) -> int:\n    return 2 * x\n",
    '"""Doubles."""\nfrom __future__ import annotations, division; import os\n'
    "def f(x):\n    return 2 * x\n",
])
def test_a_prelude_goes_after_the_codes_future_imports(code):
    # Skywork-OR1's prelude (and LeetCode's entry point) before the code made a `from __future__`
    # import a SyntaxError: a correct solution got 0
    task = {"tests": [{"assert": "assert f(3) == 6"}], "prelude": "from typing import *\n"}
    job = codeblocks.with_prelude(task["prelude"], code)
    compile(job, "solution.py", "exec")
    assert job.index("from typing") > job.index("__future__") and job.endswith("return 2 * x\n")
    if _sandbox_works():
        assert rewards.code_reward(f"```python\n{code}```", task) == 1.0


@pytest.mark.parametrize("code", [
    "def f(x):\n    return 2 * x",
    "from __future__ import annotations\ndef f(x: List[int]) -> int:\n    return 2 * x\n",
])
def test_a_prelude_without_a_final_line_break_ends_its_line(code):
    # a task file's "prelude": "from typing import *" ran into the code's first line: a
    # SyntaxError for every solution, which scored 0
    job = codeblocks.with_prelude("from typing import *", code)
    compile(job, "solution.py", "exec")
    if _sandbox_works():
        task = {"tests": [{"assert": "assert f(3) == 6"}], "prelude": "from typing import *"}
        assert rewards.code_reward(f"```python\n{code}\n```", task) == 1.0


def test_code_reward_syntax_error_never_runs(monkeypatch):
    import types

    import sandbox

    calls = []
    fake = types.ModuleType("sandbox")
    fake.run_many = lambda jobs, **kw: calls.append(jobs) or []
    fake.compile_error = sandbox.compile_error
    monkeypatch.setitem(sys.modules, "sandbox", fake)
    assert rewards.code_reward("```python\ndef f(:\n```", CODE_TASK) == 0.0
    assert (
        rewards.code_reward("<think>\n```python\ndef add(a,b): return a+b\n```", CODE_TASK) == 0.0
    )
    # over the sandbox's size cap: refused before the parent parses it (ast.parse of this took
    # seconds and 500 MB of the trainer's memory, and run_tests then refused it anyway)
    start = time.monotonic()
    huge = "```python\nx = [" + "1, " * 500_000 + "]\n```"
    assert rewards.code_rewards([huge], [CODE_TASK]) == [0.0]
    assert time.monotonic() - start < 1.5
    assert calls == []


# ------------------------------------------------------------------ instruction following


def test_instruction_checks():
    assert rewards.check_word_count("a b c", 2, 3) and not rewards.check_word_count("a b c d", 2, 3)
    assert rewards.check_keywords("The Quick fox", ["quick", "fox"])
    assert not rewards.check_keywords("The fox", ["quick"])
    assert rewards.check_json('{"a": 1}', ["a"]) and rewards.check_json('```json\n{"a": 1}\n```')
    assert not rewards.check_json("{a: 1}") and not rewards.check_json('{"a": 1}', ["b"])
    assert rewards.check_no_commas("no commas here") and not rewards.check_no_commas("a, b")
    assert rewards.check_language("This is English text.", "en")
    assert rewards.check_language("这是中文回答。", "zh") and not rewards.check_language(
        "This is English", "zh"
    )
    assert rewards.check_language("Это русский текст", "ru") and not rewards.check_language(
        "Это text", "en"
    )
    assert rewards.check_language("これは日本語です", "ja") and not rewards.check_language(
        "これは日本語です", "zh"
    )


def test_instruction_reward():
    task = {
        "constraints": [
            {"type": "word_count", "min": 3, "max": 6},
            {"type": "keywords", "words": ["paris"]},
            {"type": "no_commas"},
            {"type": "language", "lang": "en"},
        ]
    }
    assert rewards.instruction_reward("<think>x, y</think>The capital is Paris", task) == 1.0
    assert rewards.instruction_reward("Paris, of course", task) == 0.75  # only the comma fails
    assert rewards.instruction_reward("Paris, of course", task, all_or_nothing=True) == 0.0
    assert (
        rewards.instruction_reward(
            '{"city": "Paris"}', {"constraints": [{"type": "json", "keys": ["city"]}]}
        )
        == 1.0
    )
    with pytest.raises(ValueError, match="word_count"):
        rewards.instruction_reward("x", {"constraints": [{"type": "rhymes"}]})


# ------------------------------------------------------------------ registry and combination


def test_parse_reward_spec_and_combination():
    assert rewards.parse_reward_spec("math:1.0,format:0.2") == [("math", 1.0), ("format", 0.2)]
    assert rewards.parse_reward_spec("math,format", "1,0.2") == [("math", 1.0), ("format", 0.2)]
    assert rewards.parse_reward_spec("math") == [("math", 1.0)]
    with pytest.raises(ValueError, match="valid names: .*format.*math"):
        rewards.parse_reward_spec("math,fromat")
    with pytest.raises(ValueError, match="weights"):
        rewards.parse_reward_spec("math,format", "1")
    r = rewards.combined_reward(rewards.parse_reward_spec("math:1.0,format:0.2,overlong:1"))
    task = {"answer": "4"}
    text = "<think>\nok\n</think>\n\n\\boxed{4}"
    assert r(text, task, num_tokens=100) == pytest.approx(1.2)
    assert r(text, task, num_tokens=18432) == pytest.approx(0.7)
    assert r.breakdown(text, task, num_tokens=18432) == pytest.approx(
        {"math": 1.0, "format": 1.0, "overlong": -0.5, "total": 0.7}
    )
    assert rewards.combined_reward("math:2")("\\boxed{4}", task) == 2.0
    for name, fn in rewards.REWARDS.items():
        assert callable(fn), name


# ------------------------------------------------------------------ model-based rewards


def _tiny_tokenizer(words):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


def _tiny_config(vocab_size):
    import transformers

    return transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=vocab_size,
        pad_token_id=0,
        max_position_embeddings=512,
    )


def test_judge_reward_matches_manual_softmax():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    words = (
        "You are grading an answer against a reference. Question: Reference Response: Is the "
        "response correct and consistent with the reference? Answer yes or no. Answer: "
        "what is 2+2 4 5 yes no Yes No"
    ).split()
    tok = _tiny_tokenizer(words)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(_tiny_config(len(tok))).eval()
    judge = rewards.JudgeReward(
        model,
        tok,
        template="Question: {question} Reference: {reference} Response: {response} Answer:",
    )
    task = {"question": "what is 2+2", "reference": "4"}
    p = judge("<think>no</think> 4", task)
    assert 0.0 < p < 1.0
    ids = tok.encode("Question: what is 2+2 Reference: 4 Response: 4 Answer:")
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)
    y = torch.logsumexp(
        logp[[tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("Yes")]], 0
    )
    n = torch.logsumexp(logp[[tok.convert_tokens_to_ids("no"), tok.convert_tokens_to_ids("No")]], 0)
    assert p == pytest.approx(torch.sigmoid(y - n).item(), abs=1e-5)
    # a judge whose head strongly prefers "yes" gives ~1
    with torch.no_grad():
        model.lm_head.weight.zero_()
        model.lm_head.weight[tok.convert_tokens_to_ids("yes")] = 100 * torch.sign(
            model.model(torch.tensor([ids])).last_hidden_state[0, -1]
        )
    assert judge("4", task) > 0.99


def test_judge_and_reward_model_read_a_conversation_prompt_as_its_last_user_turn():
    # a conversation prompt (dataset_tasks.check_prompt) reached the judge as the repr of its list
    from types import SimpleNamespace

    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    judge = SimpleNamespace(template="Q: {question} R: {reference} A: {response}")
    assert rewards.JudgeReward.prompt(judge, "4", {"prompt": chat, "answer": "4"}) == \
        "Q: 2+2? R: 4 A: 4"
    assert rewards.question_text({"question": "q", "prompt": chat}) == "q"


def test_bradley_terry_loss_values():
    torch = pytest.importorskip("torch")
    assert rewards.bradley_terry_loss(
        torch.tensor([0.0]), torch.tensor([0.0])
    ).item() == pytest.approx(math.log(2))
    assert rewards.bradley_terry_loss(
        torch.tensor([2.0]), torch.tensor([0.0])
    ).item() == pytest.approx(math.log(1 + math.exp(-2)))
    assert rewards.bradley_terry_loss(
        torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])
    ).item() == pytest.approx(0.5 * (math.log(1 + math.e) + math.log(1 + math.exp(-1))))


def test_train_reward_model_learns_to_rank():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    good = ["correct", "clear", "helpful", "right", "precise"]
    bad = ["wrong", "rude", "vague", "false", "sloppy"]
    filler = ["the", "answer", "is", "very", "quite", "so", "and", "it"]
    tok = _tiny_tokenizer(good + bad + filler + ["Q:"])
    torch.manual_seed(0)
    model = transformers.LlamaForSequenceClassification(
        _tiny_config(len(tok)).__class__(**{**_tiny_config(len(tok)).to_dict(), "num_labels": 1})
    )
    import random

    rng = random.Random(0)

    def sent(pool):
        return " ".join(rng.choice(filler) for _ in range(3)) + " " + rng.choice(pool)

    pairs = [{"prompt": "Q:", "chosen": sent(good), "rejected": sent(bad)} for _ in range(64)]
    held = [{"prompt": "Q:", "chosen": sent(good), "rejected": sent(bad)} for _ in range(32)]
    rm = rewards.ScalarRewardModel(model, tok)

    def held_acc():
        rc = rm.score_batch([p["chosen"] for p in held], [{"question": "Q:"}] * len(held))
        rr = rm.score_batch([p["rejected"] for p in held], [{"question": "Q:"}] * len(held))
        return sum(a > b for a, b in zip(rc, rr)) / len(held)

    before = held_acc()
    hist = rewards.train_reward_model(model, tok, pairs, epochs=6, lr=1e-3, batch_size=16)
    after = held_acc()
    assert hist[-1]["loss"] < hist[0]["loss"]
    assert hist[-1]["accuracy"] >= 0.9 and hist[-1]["accuracy"] > hist[0]["accuracy"] - 1e-9
    assert after >= 0.9 and after > before


def test_dapo_overlong_cache_scales_with_the_max_length():
    f = rewards.dapo_overlong_penalty
    # DAPO's own regime: L_max 20480, L_cache 4096 -> the soft interval is 16384..20480
    assert f("", num_tokens=16384, max_tokens=20480) == 0.0
    assert f("", num_tokens=18432, max_tokens=20480) == pytest.approx(-0.5)
    # a short run keeps the last fifth: L_max 96 -> L_cache 19, free up to 77 tokens (was: penalised
    # from the first token, since the cache stayed 4096)
    assert f("", num_tokens=10, max_tokens=96) == 0.0
    assert f("", num_tokens=77, max_tokens=96) == 0.0
    assert f("", num_tokens=86, max_tokens=96) == pytest.approx((77 - 86) / 19)
    assert f("", num_tokens=97, max_tokens=96) == -1.0
    with pytest.raises(ValueError, match="cache_tokens 4096 >= max_tokens 4096"):
        f("", num_tokens=10, max_tokens=4096, cache_tokens=4096)
    # through the combined reward, as grpo.score calls it
    assert rewards.combined_reward("math:1,overlong:1").scores_unfinished
    assert rewards.combined_reward("overlong")("", {}, num_tokens=50, max_tokens=96) == 0.0


def test_rewards_apply_to_the_tasks_that_have_their_field():
    r = rewards.combined_reward("math:1,instruction:0.5")
    task = {"prompt": "Write", "constraints": [{"type": "no_commas"}]}
    assert r.breakdown("no commas here", task) == {"instruction": 1.0, "total": 0.5}
    assert r.breakdown("\\boxed{4}", {"answer": "4"}) == {"math": 1.0, "total": 1.0}
    with pytest.raises(ValueError, match="--judge_model"):
        rewards.combined_reward("math,judge")
