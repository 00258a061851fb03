"""Rewards: every reward is a plain function `(completion, task, **info) -> float`.

`completion` is the generated text (a string). `task` is the data row (a dict): math tasks carry
`"answer"`, code tasks carry `"tests"` (the sandbox format of DESIGN.md), instruction tasks carry
`"constraints"`, judge tasks carry `"question"` and `"reference"`.

Length-based rewards need two facts a string cannot tell: how many tokens the completion has and
whether generation stopped with EOS. They take them as keyword arguments, `num_tokens=` and
`finished=`. When those are not given they fall back to `task["num_tokens"]` /
`task["finished"]`, then to a whitespace word count and `finished=True`. Every reward accepts
and ignores unknown keyword arguments, so a training loop can call all of them the same way:

    r = reward(completion, task, num_tokens=len(ids), finished=ids[-1] == eos_id, max_tokens=L)

| name | function | source |
|---|---|---|
| `math` | `math_reward` (1/0 via `verify_math`) | Skywork-OR1, DeepSeek-R1 rule-based accuracy |
| `still3_outcome` | `still3_outcome_reward` (+1 / -1 / -2 without `\\boxed`) | STILL-3 code |
| `format` | `format_reward` (think block, optional strict layout) | DeepSeek-R1 §2.2.2, STILL-3 |
| `length_aware` | `phi4_length_aware_reward` (cosine schedule) | Phi-4-reasoning §4 |
| `repetition` | `phi4_repetition_penalty` (5-grams) | Phi-4-reasoning §4 |
| `phi4` | `phi4_reward` = 8/13 length_aware + 1/13 repetition | Phi-4-reasoning §4 |
| `overlong` | `dapo_overlong_penalty` | DAPO §3.4 |
| `action` | `still3_action_reward` (capped reflection words) | STILL-3 |
| `length` | `still3_length_reward` | STILL-3 |
| `code` | `code_reward` (fraction or all-or-nothing) via `sandbox.run_many` | Skywork-OR1 |
| `instruction` | `instruction_reward` (word count, keyword, JSON, no commas, language) | Qwen3 general RL |
| - | `JudgeReward` (P("yes") from a judge LM), `ScalarRewardModel` + `train_reward_model` | Qwen3 §4.4, Bradley-Terry |

`parse_reward_spec("math:1.0,format:0.2")` and `combined_reward(...)` turn flags into one weighted
reward; unknown names raise a ValueError that lists the valid ones.
"""
from __future__ import annotations

import atexit
import json
import math
import os
import re
import select
import subprocess
import sys
import threading
import time
from fractions import Fraction
from typing import Callable, Iterable

__all__ = [
    "verify_math", "extract_answer", "normalize_answer", "answer_region",
    "math_reward", "still3_outcome_reward", "format_reward",
    "phi4_length_aware_reward", "phi4_repetition_penalty", "phi4_reward", "scaled_phi4_lengths",
    "dapo_overlong_penalty", "still3_action_reward", "still3_length_reward",
    "extract_code", "code_reward", "code_rewards",
    "instruction_reward", "check_word_count", "check_keywords", "check_json", "check_no_commas",
    "check_language", "JudgeReward", "ScalarRewardModel", "bradley_terry_loss",
    "train_reward_model", "REWARDS", "parse_reward_spec", "combined_reward",
]


# =====================================================================================
# Math answer verification
# =====================================================================================
#
# verify_math(completion, gold) works in four steps, each a small function below:
#   1. answer_region: the text after the last </think> (an unclosed <think> -> no answer).
#   2. extract_answer: the last \boxed{}/\fbox{} (adjacent boxes form one list); without a box
#      only an anchored final statement ("The answer is X", "Answer: X", "#### X",
#      "<answer>X</answer>"). Hedges ("42 or 43", \pm, boxes with different values) -> None.
#   3. normalize_answer: the same normalisation for gold and prediction (LaTeX spellings,
#      units, degrees, thousands separators, scientific notation, repeating decimals, unicode).
#   4. comparison: string equality, then exact rational arithmetic for plain numbers, then
#      structure (lists, sets, tuples, intervals), then math-verify's symbolic comparison in a
#      separate worker process that is killed after SYMBOLIC_TIMEOUT_S. math-verify's numeric
#      tolerance is replaced there by an exact check (floats are read as the decimals they
#      spell; remaining numbers must agree to 40 significant digits, relative, not absolute).

SYMBOLIC_TIMEOUT_S = 2.0      # one symbolic comparison in the worker
VERIFY_BUDGET_S = 4.0         # all symbolic work of one verify_math call together
MAX_ANSWER_CHARS = 1000       # longer extracted answers are never parsed symbolically
MAX_EXPONENT = 10_000         # a^n with a literal n beyond this is not evaluated


def answer_region(completion: str) -> str | None:
    """The part of a completion that may hold the final answer.

    Text after the last `</think>`; the whole completion if it has no think tags; None when a
    `<think>` was opened and never closed (the model never finished thinking).

    >>> answer_region("<think>so 4</think>The answer is 5")
    'The answer is 5'
    >>> answer_region("<think>so 4... ") is None
    True
    """
    if "</think>" in completion:
        return completion.rsplit("</think>", 1)[1]
    if "<think>" in completion:
        return None
    return completion


# ---------- extraction --------------------------------------------------------------

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*")
# what may stand between two boxes that together form one list answer
_BOX_GAP_RE = re.compile(
    r"^(?:\s|,|;|\$|&|\\\\|\\[,;:! ]|\\quad|\\qquad|\\\[|\\\]|\\\(|\\\)|\band\b|"
    r"\\text\{\s*(?:and|,)?\s*\}|\\(?:text|mathrm)\{\s*,?\s*and\s*\})*$")
_HEDGE_RE = re.compile(r"\\pm|±|\\mp|∓|\bor\b|\\lor\b|\\vee\b|\beither\b|\bmaybe\b|\bperhaps\b|"
                       r"\bprobably\b|\bpossibly\b|\bapproximately\b|\\approx|≈|\?")


def _match_brace(text: str, i: int) -> int:
    """Index just past the `}` matching the `{` at text[i], or -1 if unbalanced."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _find_boxes(text: str) -> list[tuple[int, int, str]]:
    """All top-level `\\boxed{...}` / `\\fbox{...}` / `\\boxed 5` as (start, end, content)."""
    boxes = []
    pos = 0
    while True:
        m = _BOX_RE.search(text, pos)
        if not m:
            return boxes
        i = m.end()
        if i < len(text) and text[i] == "{":
            j = _match_brace(text, i)
            if j < 0:                                  # unbalanced: ignore this box
                pos = m.end()
                continue
            boxes.append((m.start(), j, text[i + 1:j - 1]))
            pos = j
        else:                                          # "\boxed 5" (no braces)
            mm = re.match(r"[^\s$]+", text[i:])
            if mm and m.group(0).endswith((" ", "\t")):
                content = mm.group(0).rstrip(".,")
                boxes.append((m.start(), i + mm.end(), content))
                pos = i + mm.end()
            else:
                pos = m.end()


def _strip_math_delims(s: str) -> str:
    s = s.strip()
    for a, b in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(s) >= len(a) + len(b) and s.startswith(a) and s.endswith(b):
            return s[len(a):len(s) - len(b)].strip()
    return s


_ANCHOR_RE = re.compile(
    r"<answer>(?P<tag>.*?)</answer>"
    r"|####[ \t]*(?P<hash>[^\n]*)"
    r"|(?:\bfinal\s+answer|\banswer)(?:\s+to\s+(?:this|the)\s+(?:question|problem))?"
    r"(?:\s*\*\*)?\s*(?:is\b\s*:?|:|=)(?:\s*\*\*)?[ \t]*(?P<stmt>[^\n]*)",
    re.IGNORECASE | re.DOTALL)


def _clean_statement(x: str) -> str | None:
    """The answer inside an anchored statement like 'The answer is $5$ cm.'"""
    x = x.strip().strip("*").strip()
    x = re.sub(r"(?i)^the\s+final\s+answer\s+is\s*:?\s*", "", x)
    if not x:
        return None
    # a math environment at the start: take its content (and adjacent ones joined by "and" / ",")
    envs = re.match(r"((?:\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\])"
                    r"(?:\s*(?:,|\band\b|\bor\b)\s*(?:\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]))*)"
                    r"\s*(?P<rest>.*)$", x)
    if envs:
        parts = re.findall(r"\$\$(.+?)\$\$|\$([^$]+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", envs.group(1))
        joiners = re.findall(r"(?:\$|\\\)|\\\])\s*(,|\band\b|\bor\b)\s*(?:\$|\\\(|\\\[)", envs.group(1))
        if any(j == "or" for j in joiners):
            return None
        vals = ["".join(p) for p in parts]
        rest = envs.group("rest").strip()
        unit = re.match(r"^([a-zA-Z]+(?:\^\d)?)(?=$|[\s.,;])", rest)     # "$5$ cm." keeps "cm"
        ans = ", ".join(vals)
        if unit and len(vals) == 1 and unit.group(1).lower() not in ("or", "and", "i", "a"):
            ans = f"{ans}\\text{{ {unit.group(1)}}}"
        if re.match(r"(?i)^(?:or|and/or)\b", rest):
            return None
        return ans
    x = re.split(r"(?i)\s+I hope\b", x)[0]
    x = re.split(r"\.(?:\s|$)|;\s|\s\(since|\s+because\b|\s+since\b|\s+which\b|\s+as\b", x)[0]
    x = x.strip().rstrip(".,;:").strip().strip("*").strip()
    return x or None


def extract_answer(text: str) -> str | None:
    """The final answer in `text` (already cut to the answer region), or None.

    Rules (issue 4): the last `\\boxed{}`/`\\fbox{}` wins; boxes separated only by commas,
    spaces, "and" or math delimiters form one list. Any other box must hold an equivalent value,
    otherwise the boxes hedge (the caller checks; here they are returned joined by " \\or ").
    Without a box only an anchored final statement counts.

    >>> extract_answer("so \\\\boxed{3}, \\\\boxed{4}")
    '3, 4'
    >>> extract_answer("The answer is $\\\\frac{1}{2}$.")
    '\\\\frac{1}{2}'
    >>> extract_answer("x is probably 7") is None
    True
    """
    boxes = _find_boxes(text)
    if boxes:
        group = [boxes[-1]]
        for b in reversed(boxes[:-1]):
            if _BOX_GAP_RE.match(text[b[1]:group[0][0]]):
                group.insert(0, b)
            else:
                break
        return ", ".join(_strip_math_delims(c) for _, _, c in group)
    last = None
    for m in _ANCHOR_RE.finditer(text):
        last = m
    if last is None:
        return None
    if last.group("tag") is not None:
        return _clean_statement(last.group("tag"))
    if last.group("hash") is not None:
        return _clean_statement(last.group("hash"))
    return _clean_statement(last.group("stmt"))


def _other_boxes(text: str) -> list[str]:
    """Contents of boxes that are not part of the final box group (for the hedge check)."""
    boxes = _find_boxes(text)
    if len(boxes) < 2:
        return []
    k = len(boxes) - 1
    while k > 0 and _BOX_GAP_RE.match(text[boxes[k - 1][1]:boxes[k][0]]):
        k -= 1
    return [_strip_math_delims(c) for _, _, c in boxes[:k]]


def _gold_answer(answer) -> str:
    """The gold answer string from a dataset field (GSM8K '#### 1,234', a MATH solution with a
    box, or a bare answer)."""
    if isinstance(answer, (list, tuple)):
        return ", ".join(str(a) for a in answer)
    s = str(answer).strip()
    if "####" in s:
        return s.rsplit("####", 1)[1].strip()
    if "\\boxed" in s or "\\fbox" in s:
        got = extract_answer(s)
        if got is not None:
            return got
    return _strip_math_delims(s)


# ---------- normalisation -----------------------------------------------------------

_UNICODE = {
    "−": "-", "–": "-", "—": "-", "π": "\\pi ", "∞": "\\infty ", "×": "\\times ", "·": "\\cdot ",
    "⋅": "\\cdot ", "÷": "\\div ", "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "∪": "\\cup ",
    "∩": "\\cap ", "°": "^\\circ", "½": "\\frac{1}{2}", "⅓": "\\frac{1}{3}", "⅔": "\\frac{2}{3}",
    "¼": "\\frac{1}{4}", "¾": "\\frac{3}{4}", "²": "^2", "³": "^3", "⁴": "^4", "θ": "\\theta ",
    "α": "\\alpha ", "β": "\\beta ", "∈": "\\in ", "ℝ": "\\mathbb{R}", "±": "\\pm ", "∓": "\\mp ",
    "⟨": "(", "⟩": ")", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}
_TEXT_CMDS = r"(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|textnormal|operatorname|rm|bf)"
_UNIT_WORDS = (
    "cm|mm|km|m|meters?|metres?|centimeters?|kilometers?|inch(?:es)?|in|ft|feet|foot|yards?|yd|miles?|"
    "mi|kg|g|grams?|kilograms?|mg|lbs?|pounds?|ounces?|oz|s|sec|seconds?|min|minutes?|h|hrs?|hours?|"
    "days?|weeks?|months?|years?|dollars?|cents?|units?|sq|square|cubic|degrees?|mph|km/h|l|liters?|"
    "litres?|ml|gallons?|people|students|apples|marbles|books|items|ways|times|points|percent")
_FUNC_WORDS = {"sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "sqrt", "frac",
               "pi", "infty", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "max", "min",
               "gcd", "lcm", "det", "mod", "pmod", "binom", "cdot", "times", "circ", "le", "ge"}


def _repeating_decimal(m: re.Match) -> str:
    sign, whole, nonrep, rep = m.group(1) or "", m.group(2) or "0", m.group(3) or "", m.group(4)
    value = Fraction(int(whole)) + Fraction(int(nonrep or "0"), 10 ** len(nonrep)) + Fraction(
        int(rep), (10 ** len(rep) - 1) * 10 ** len(nonrep))
    return f"{sign}\\frac{{{value.numerator}}}{{{value.denominator}}}"


def normalize_answer(s: str) -> str:
    """Canonical string of an answer; the same function is applied to gold and prediction.

    Handles: math delimiters, `\\left`/`\\right`, spacing commands, `\\dfrac`/`\\tfrac` and the
    brace-less `\\frac13`, `\\sqrt3`, `\\text{}`-style wrappers, trailing units (`\\text{ cm}`,
    `5 dollars`), degrees (`^\\circ`, `°`), `\\%` (kept as a trailing `%`), thousands separators
    (`1,000`, `1\\,000`, `1{,}000`, `1 000`), scientific notation (`3e8` -> `3\\times10^{8}`),
    repeating decimals (`0.\\overline{3}` -> `\\frac{1}{3}`), unicode (`√2`, `π`, `−`, `½`),
    leading `x =` / `x \\in`, matrix environments (all -> pmatrix), and spaces.

    >>> normalize_answer("\\\\dfrac13")
    '\\\\frac{1}{3}'
    >>> normalize_answer("1,234")
    '1234'
    """
    s = str(s).strip()
    for k, v in _UNICODE.items():
        if k in s:
            s = s.replace(k, v)
    s = re.sub(r"∛\s*", r"\\sqrt[3]", s)
    s = re.sub(r"√\s*(\d+(?:\.\d+)?|\\?[a-zA-Z]+|\([^()]*\)|\{[^{}]*\})",
               lambda m: "\\sqrt{" + m.group(1).strip("(){}") + "}", s)
    s = _strip_math_delims(s)
    s = re.sub(r"\\\$|\\text\{\s*\\\$\s*\}", "", s)                    # currency \$
    s = s.replace("$", "").replace("\\(", "").replace("\\)", "").replace("\\[", "").replace("\\]", "")
    s = re.sub(r"\\(?:displaystyle|textstyle|scriptstyle|left|right|big|Big|bigg|Bigg)(?![a-zA-Z])", "", s)
    s = s.replace("\\lbrace", "\\{").replace("\\rbrace", "\\}").replace("\\langle", "(").replace("\\rangle", ")")
    s = re.sub(r"\\(?:leqslant|leq)(?![a-zA-Z])", r"\\le ", s)
    s = re.sub(r"\\(?:geqslant|geq)(?![a-zA-Z])", r"\\ge ", s)
    s = re.sub(r"\\neq(?![a-zA-Z])", r"\\ne ", s)
    s = re.sub(r"\\(?:dfrac|tfrac|cfrac)(?![a-zA-Z])", r"\\frac", s)
    # thousands separators written with LaTeX spacing: 1\,000 1{,}000 1\ 000
    s = re.sub(r"(?<=\d)(?:\\,|\{,\}|\\ |\\;|~)(?=\d{3}(?!\d))", "", s)
    s = s.replace("{,}", ",")
    s = re.sub(r"(?<!\\)\\[,;:! ]|\\quad|\\qquad|~", " ", s)
    # degrees and percent
    s = re.sub(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\^\{\\text\{o\}\}", "", s)
    pct = False
    m = re.search(r"\s*(?:\\%|%|\\text\{\s*\\?%\s*\}|\\text\{\s*percent\s*\}|\s+percent)\s*$", s)
    if m:
        pct, s = True, s[:m.start()]
    # units in \text{} after a number, e.g. 5\text{ cm}^2, \$5, 10 dollars
    s = re.sub(r"(?<=[\d}).])\s*\\" + _TEXT_CMDS + r"\s*\{\s*(?:" + _UNIT_WORDS + r")\.?\s*\}"
               r"(?:\s*\^\s*\{?\d\}?)?\s*$", "", s, flags=re.IGNORECASE)
    # "3 and 4", "3 \\text{ and } 4" -> a list
    s = re.sub(r"\s*\\text\{\s*(?:,\s*)?and\s*\}\s*|\s+and\s+|,\s*and\s+", ", ", s)
    # unwrap text-style commands, then drop trailing unit words after a number
    for _ in range(3):
        s = re.sub(r"\\" + _TEXT_CMDS + r"\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"(?<=[\d}])\s*(?:" + _UNIT_WORDS + r")\.?(?:\s*\^\s*\{?\d\}?)?\s*$", "", s,
               flags=re.IGNORECASE) if re.search(r"\d\s*[}]?\s*[a-zA-Z]{2,}", s) or re.search(
        r"\d\s+[a-zA-Z]\s*$", s) else s
    # brace-less \frac13, \frac{1}3, \frac1{3}, \sqrt3
    s = re.sub(r"\\frac\s*([0-9a-zA-Z])\s*([0-9a-zA-Z])", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\s*(\{[^{}]*\})\s*([0-9a-zA-Z])", r"\\frac\1{\2}", s)
    s = re.sub(r"\\frac\s*([0-9a-zA-Z])\s*\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\sqrt\s*([0-9a-zA-Z])", r"\\sqrt{\1}", s)
    # matrices
    s = re.sub(r"\\begin\{array\}\{[^{}]*\}", r"\\begin{pmatrix}", s).replace("\\end{array}", "\\end{pmatrix}")
    s = re.sub(r"\\(begin|end)\{[bBvV]?matrix\}|\\(begin|end)\{smallmatrix\}",
               lambda m: "\\" + (m.group(1) or m.group(2)) + "{pmatrix}", s)
    # infinity spellings
    s = re.sub(r"\\inf(?![a-zA-Z])|\binfinity\b|\\infinity", r"\\infty", s)
    # leading "x =", "f(x) =", "x \in"
    s = s.strip()
    m = re.match(r"^[a-zA-Z](?:_\{?\w+\}?)?(?:\([a-zA-Z]\))?\s*(?:=|\\in(?![a-zA-Z]))\s*(?P<rhs>[^=]+)$", s)
    if m and "," not in s[:m.start("rhs")]:
        s = m.group("rhs")
    # scientific notation 3e8, 1.5E-3
    s = re.sub(r"(?<![\w\\.])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])", r"\1\\times10^{\2}", s)
    # repeating decimals 0.\overline{3}, 1.2\overline{34}, 0.\bar{6}, 0.\dot{3}
    s = re.sub(r"(-?)(\d*)\.(\d*)\\(?:overline|bar|dot)\{?(\d+)\}?", _repeating_decimal, s)
    # spaces: collapse, keep one only between two letters (e.g. "\pi r", "no solution")
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"(?<![a-zA-Z]) | (?![a-zA-Z])", "", s)
    # plain thousands: the whole answer is 1,234,567(.89) or 1 234 567
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    s = re.sub(r"^\+(?=\d)", "", s)
    s = re.sub(r"(?<![\d])\.(\d)", r"0.\1", s)
    s = s.rstrip(".").strip()
    if s.startswith("{") and s.endswith("}") and _match_brace(s, 0) == len(s):
        s = s[1:-1]
    return s + ("%" if pct else "")


# ---------- comparison --------------------------------------------------------------

_NUM = r"-?\d+(?:\.\d+)?"


def _exact_number(s: str) -> Fraction | None:
    """A plain number written in one of the usual ways, as an exact Fraction; else None.

    Integers (also zero-padded '007'), decimals, a/b, \\frac{a}{b}, -\\frac{a}{b}, mixed numbers
    2\\frac{1}{2}, a\\times10^{k}, 10^{k}.
    """
    try:
        if re.fullmatch(_NUM, s):
            return Fraction(s)
        m = re.fullmatch(r"(-?)\\frac\{(" + _NUM + r")\}\{(" + _NUM + r")\}", s)
        if m:
            den = Fraction(m.group(3))
            return None if den == 0 else (-1 if m.group(1) else 1) * Fraction(m.group(2)) / den
        m = re.fullmatch(r"(" + _NUM + r")/(" + _NUM + r")", s)
        if m:
            den = Fraction(m.group(2))
            return None if den == 0 else Fraction(m.group(1)) / den
        m = re.fullmatch(r"(-?)(\d+)\\frac\{(\d+)\}\{(\d+)\}", s)             # mixed number
        if m and 0 < int(m.group(3)) < int(m.group(4)):
            v = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
            return -v if m.group(1) else v
        m = re.fullmatch(r"(" + _NUM + r")(?:\\times|\\cdot)10\^\{?(-?\d+)\}?", s)
        if m and abs(int(m.group(2))) <= 400:
            return Fraction(m.group(1)) * Fraction(10) ** int(m.group(2))
        m = re.fullmatch(r"10\^\{?(-?\d+)\}?", s)
        if m and abs(int(m.group(1))) <= 400:
            return Fraction(10) ** int(m.group(1))
    except (ValueError, ZeroDivisionError):
        return None
    return None


def _is_text(s: str) -> bool:
    """A word answer ('Monday', 'no solution', 'C'): compared as text, never symbolically."""
    s = re.sub(r"\\(?:begin|end)\{\w+\}|\\[a-zA-Z]+", " ", s)
    words = re.findall(r"\b[a-zA-Z]{3,}\b", s)
    return bool(words) and not any(w.lower() in _FUNC_WORDS for w in words) and not re.search(r"[\^_=]", s)


def _text_key(s: str) -> str:
    s = s.lower()
    s = re.sub(r"^\(?([a-e])\)?$", r"\1", s)
    return re.sub(r"[^a-z0-9]", "", s)


def _dangerous(s: str) -> bool:
    """Screen before any symbolic work: power towers, huge exponents or factorials, long input."""
    if len(s) > MAX_ANSWER_CHARS:
        return True
    if re.search(r"\^\s*\{[^{}]*\^|\^\s*\(?\s*\w+\s*\)?\s*\^|\\uparrow|\\underbrace", s):
        return True
    for m in re.finditer(r"\^\s*\{?\s*(\d+)", s):
        if int(m.group(1)) > MAX_EXPONENT:
            return True
    if re.search(r"\d{4,}\s*!|\d{4,}\}\s*!|!\s*!", s) or re.search(r"\d{400,}", s):
        return True
    return False


def _split_top(s: str, sep: str = ",") -> list[str]:
    """Split on `sep` at bracket depth 0."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            cur.append(s[i:i + 2])
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if s.startswith(sep, i) and depth == 0:
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _structure(s: str) -> tuple[str, list[str]]:
    """(kind, elements): kind is 'set' ({...}), 'paren' ((...), [...], intervals: the two
    bracket characters), 'bare' (a,b,c) or 'scalar'."""
    if s.startswith("\\{") and s.endswith("\\}") and "\\{" not in s[2:-2]:
        return "set", [p for p in _split_top(s[2:-2]) if p != ""]
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]":
        inner = s[1:-1]
        depth_ok = True
        d = 0
        for c in inner:
            d += c in "([{"
            d -= c in ")]}"
            if d < 0:
                depth_ok = False
                break
        if depth_ok and d == 0:
            parts = _split_top(inner)
            if len(parts) >= 2:
                return s[0] + s[-1], parts
    parts = _split_top(s)
    if len(parts) >= 2:
        return "bare", parts
    return "scalar", [s]


class _Budget:
    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def _scalar_equal(g: str, p: str, budget: _Budget) -> bool:
    if g == p:
        return True
    g_pct, p_pct = g.endswith("%"), p.endswith("%")
    g, p = g.rstrip("%"), p.rstrip("%")
    if g == p:
        return True
    if "=" in g or "=" in p:                     # x=3 vs 3 already stripped; y=3 vs x=3 too
        gl, pl = g.split("=")[-1], p.split("=")[-1]
        if ("=" in g) != ("=" in p) and re.fullmatch(r"[a-zA-Z]", (g if "=" in g else p).split("=")[0]):
            return _scalar_equal(gl, pl, budget)
    gt, pt = _is_text(g), _is_text(p)
    if gt or pt:
        return gt and pt and _text_key(g) == _text_key(p)
    if re.fullmatch(r"\(?[A-Ea-e]\)?", g) or re.fullmatch(r"\(?[A-Ea-e]\)?", p):   # choice letters
        return _text_key(g) == _text_key(p)
    gv, pv = _exact_number(g), _exact_number(p)
    if gv is not None and pv is not None:
        if gv == pv:
            return True
        if g_pct != p_pct:                       # 25% == 0.25
            return (gv / 100 if g_pct else gv) == (pv / 100 if p_pct else pv)
        return False
    if _dangerous(g) or _dangerous(p):
        return False
    if g_pct != p_pct:
        g = f"\\frac{{{g}}}{{100}}" if g_pct else g
        p = f"\\frac{{{p}}}{{100}}" if p_pct else p
    return _WORKER.equal(g, p, budget)


def _equal(g: str, p: str, budget: _Budget) -> bool:
    """Structural comparison of two normalised answers."""
    if g == p:
        return True
    if "\\cup" in g or "\\cup" in p:
        gs, ps = _split_top(g, "\\cup"), _split_top(p, "\\cup")
        if len(gs) != len(ps):
            return False
        if len(gs) > 1:
            return all(_equal(a, b, budget) for a, b in zip(gs, ps))
    gk, ge = _structure(g)
    pk, pe = _structure(p)
    if gk == "scalar" and pk == "scalar":
        return _scalar_equal(g, p, budget)
    if len(ge) != len(pe):
        return False
    if "pmatrix" in g or "pmatrix" in p:
        return _scalar_equal(g, p, budget)
    unordered = {gk, pk} <= {"set", "bare"}
    if len(gk) == 2 and len(pk) == 2 and gk != pk:      # interval/tuple brackets must agree
        return False
    if {gk, pk} == {"set", "()"} or {gk, pk} == {"set", "[]"}:
        return False
    if not unordered:
        return all(_equal(a, b, budget) for a, b in zip(ge, pe))
    left = list(pe)
    for a in ge:
        for j, b in enumerate(left):
            if _equal(a, b, budget):
                del left[j]
                break
        else:
            return False
    return True


_UNSURE_RE = re.compile(r"\\approx|≈|\?|\b(?:maybe|perhaps|probably|possibly|approximately|either)\b")


def _expand_pm(s: str) -> str:
    """'1\\pm\\sqrt{2}' -> '1+\\sqrt{2}, 1-\\sqrt{2}' (a gold answer that is two values)."""
    s = s.replace("±", "\\pm ")
    if s.count("\\pm") == 1 and "," not in s:
        return s.replace("\\pm", "+") + ", " + s.replace("\\pm", "-")
    return s


def _or_to_list(s: str) -> str:
    return re.sub(r"\s*(?:\\text\{\s*(?:or|and)\s*\}|\bor\b|\band\b|\\lor|\\vee)\s*", ", ", s)


def verify_math(completion: str, answer: str) -> bool:
    """True when the completion's final answer equals the gold answer (issue 4's rules).

    * only the text after the last `</think>` counts; an unclosed `<think>` -> False;
    * the last `\\boxed{}`/`\\fbox{}` counts (adjacent boxes form one list); without a box only
      "The answer is X", "Final answer: X", "Answer: X", "#### X" or "<answer>X</answer>";
    * empty box, hedges ("42 or 43", `\\pm` for a single value, extra candidates, several
      boxes with different values) -> False;
    * gold formats: GSM8K `#### 1,234`, MATH LaTeX (or a full solution with a box), AIME '007',
      lists; both sides go through `normalize_answer`;
    * equivalence is exact (1/2^99 != 1/2^98, 0.333 != 1/3); symbolic checks run in a
      killable worker with a hard time limit, never in this process.

    Never raises: anything unexpected counts as False.

    >>> verify_math("<think>2+2</think> The answer is $\\\\boxed{4}$.", "#### 4")
    True
    >>> verify_math("\\\\boxed{4} or \\\\boxed{5}", "4")
    False
    """
    try:
        return _verify_math(completion, answer)
    except Exception:                                           # noqa: BLE001 - a reward never crashes training
        return False


def _verify_math(completion: str, answer: str) -> bool:
    if not isinstance(completion, str) or answer is None:
        return False
    region = answer_region(completion)
    if region is None:
        return False
    _WORKER.prestart()
    pred = extract_answer(region)
    if pred is None:
        return False
    gold = _gold_answer(answer)
    g = normalize_answer(gold)
    p = normalize_answer(pred)
    if not p or not g:
        return False
    if len(p) > max(MAX_ANSWER_CHARS // 2, 4 * len(g) + 50):         # over-long: no parsing
        return False
    budget = _Budget(VERIFY_BUDGET_S)
    if _HEDGE_RE.search(pred) and not _HEDGE_RE.search(gold):
        # "\pm", "or", ... in the prediction: allowed only when the gold has several values
        if _structure(g)[0] not in ("bare", "set") or _UNSURE_RE.search(pred):
            return False
        p = normalize_answer(_or_to_list(_expand_pm(pred)))
    elif _HEDGE_RE.search(gold):
        g = normalize_answer(_or_to_list(_expand_pm(gold)))
        p = normalize_answer(_or_to_list(_expand_pm(pred)))
    if not (g == p or _equal(g, p, budget)):
        return False
    # "\\boxed{42} (or 43)": an alternative right after the final box is a hedge too
    boxes = _find_boxes(region)
    if boxes and re.match(r"[\s$.,;:(\\)\]]*(?:\\text\{\s*)?(?:or|either|maybe|perhaps)\b",
                          region[boxes[-1][1]:boxes[-1][1] + 40], re.IGNORECASE):
        return False
    # several boxes that disagree with each other are a hedge, even if the last one is right
    for other in _other_boxes(region):
        o = normalize_answer(other)
        if o and o != p and not _equal(g, o, budget):
            return False
    return True


# ---------- the symbolic worker -----------------------------------------------------

def _math_worker_loop() -> None:  # pragma: no cover - runs in the worker process
    """Worker process: read JSON lines {"g":..., "p":...}, answer {"ok": bool} per line.

    Uses math-verify (latex2sympy) for parsing and comparison of structures, with its float
    tolerance replaced by an exact check: floats are turned back into the decimals they spell
    (Rational), and numbers that sympy cannot prove equal must agree to 40 significant digits
    relative to their size (math-verify's default rounds to 6 places and chops tiny values to 0,
    so 1/2^99 == 1/2^98 there).
    """
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    except Exception:                                  # noqa: BLE001
        pass
    import logging
    logging.disable(logging.CRITICAL)
    import sympy
    from math_verify import grader, parse, verify, LatexExtractionConfig

    def rationalize(e):
        try:
            if isinstance(e, sympy.MatrixBase):
                return e.applyfunc(rationalize)
            if isinstance(e, sympy.Basic):
                fl = e.atoms(sympy.Float)
                if fl:
                    return e.xreplace({f: sympy.Rational(str(f)) for f in fl})
        except Exception:                              # noqa: BLE001
            pass
        return e

    def exact_numeric_eq(a, b, float_rounding, numeric_precision):
        if isinstance(a, (sympy.MatrixBase, sympy.MatrixExpr)) and isinstance(b, (sympy.MatrixBase, sympy.MatrixExpr)):
            a, b = grader.safe_sympy_doit(a), grader.safe_sympy_doit(b)
            if isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase) and a.shape == b.shape:
                return all(exact_numeric_eq(x, y, 0, 0) for x, y in zip(a, b))
            return False
        a, b = rationalize(grader.safe_sympy_doit(a)), rationalize(grader.safe_sympy_doit(b))
        try:
            if a == b:
                return True
            d = a - b
            if getattr(d, "free_symbols", None):
                return False
            if d.is_zero:
                return True
            if not d.is_number or d.is_finite is not True:
                return False
            dv = abs(d.evalf(60))
            scale = max(abs(a.evalf(60)), abs(b.evalf(60)))
            return bool(dv == 0 or (scale != 0 and dv <= scale * sympy.Float("1e-40", 60)))
        except Exception:                              # noqa: BLE001
            return False

    grader.sympy_numeric_eq = exact_numeric_eq
    cfg = [LatexExtractionConfig(boxed_match_priority=0)]

    def to_sympy(s):
        out = parse("\\boxed{" + s + "}", extraction_config=cfg, fallback_mode="no_fallback",
                    parsing_timeout=None)
        def imaginary(x):                             # latex2sympy reads "i" as a plain symbol
            try:
                return x.xreplace({v: sympy.I for v in x.free_symbols if getattr(v, "name", "") == "i"})
            except Exception:                          # noqa: BLE001
                return x
        return [rationalize(imaginary(x)) for x in out]

    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        try:
            job = json.loads(line)
            gs, ps = to_sympy(job["g"]), to_sympy(job["p"])
            ok = bool(gs and ps and verify(gs, ps, timeout_seconds=None))
        except Exception:                              # noqa: BLE001
            ok = False
        out.write(json.dumps({"ok": ok}) + "\n")
        out.flush()


class _SymbolicWorker:
    """A persistent subprocess for sympy work; killed and restarted when a check runs too long.

    Signal-based timeouts (math-verify's own) only work in the main thread; a separate process
    can always be killed, and a runaway computation there cannot take the trainer down.
    """

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.owner = None
        self.ready = False
        self.buf = b""
        self.lock = threading.Lock()

    def start(self) -> None:
        code = ("import importlib.util as u, sys; s = u.spec_from_file_location('_rr_math_worker', %r); "
                "m = u.module_from_spec(s); s.loader.exec_module(m); m._math_worker_loop()"
                % os.path.abspath(__file__))
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.owner, self.ready, self.buf = os.getpid(), False, b""

    def prestart(self) -> None:
        """Start the worker in the background (its imports overlap with the cheap checks)."""
        if self.proc is None or self.owner != os.getpid():
            with self.lock:
                if self.proc is None or self.owner != os.getpid():
                    self.start()

    def kill(self) -> None:
        if self.proc is not None and self.owner == os.getpid():
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except Exception:                          # noqa: BLE001
                pass
        self.proc = None

    def _readline(self, timeout: float) -> bytes | None:
        end = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def equal(self, g: str, p: str, budget: _Budget) -> bool:
        with self.lock:
            if self.proc is None or self.owner != os.getpid() or self.proc.poll() is not None:
                self.start()
            if not self.ready:                          # first use: wait for the imports
                if self._readline(60.0) != b"ready":
                    self.kill()
                    return False
                self.ready = True
            timeout = min(SYMBOLIC_TIMEOUT_S, budget.left())
            if timeout <= 0:
                return False
            try:
                self.proc.stdin.write((json.dumps({"g": g, "p": p}) + "\n").encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self.kill()
                return False
            line = self._readline(timeout)
            if line is None:                            # too slow (or died): kill, restart now
                self.kill()
                self.start()
                return False
            try:
                return bool(json.loads(line)["ok"])
            except (ValueError, KeyError):
                return False


_WORKER = _SymbolicWorker()
atexit.register(_WORKER.kill)


# =====================================================================================
# Rule-based rewards
# =====================================================================================

def _length_and_finish(completion: str, task, num_tokens, finished) -> tuple[int, bool]:
    """(tokens, finished) from keyword args, else task["num_tokens"/"finished"], else a
    whitespace word count and finished=True."""
    task = task or {}
    if num_tokens is None:
        num_tokens = task.get("num_tokens") if isinstance(task, dict) else None
    if num_tokens is None:
        num_tokens = len(completion.split())
    if finished is None:
        finished = task.get("finished", True) if isinstance(task, dict) else True
    return int(num_tokens), bool(finished)


def math_reward(completion: str, task: dict, **_) -> float:
    """1.0 if `verify_math(completion, task["answer"])` else 0.0.

    Binary rule-based accuracy reward: DeepSeek-R1 §2.2.2; Skywork-OR1 (math-verify on the text
    after `</think>`, RECIPES.md)."""
    return 1.0 if verify_math(completion, task["answer"]) else 0.0


def math_partial_reward(completion: str, task: dict, **_) -> float:
    """1 if `verify_math` accepts the answer (a `\\boxed{}` or an anchored final statement), 0.5 if
    only the last number of the answer region equals the gold answer, else 0.

    Partial credit for small models that rarely box an answer (the embedded SmolLM2-135M): the
    group then carries signal from step one, and the extra 0.5 teaches the box. Unlike a format
    bonus it cannot be earned with an empty `\\boxed{}` (STILL-3's -1/-2 outcome reward can).
    >>> math_partial_reward("25% of 40 is 10.", {"answer": "10"})
    0.5
    """
    if verify_math(completion, task["answer"]):
        return 1.0
    numbers = re.findall(r"-?\d+(?:\.\d+)?", answer_region(completion) or "")
    return 0.5 if numbers and numbers[-1] == str(task["answer"]).strip() else 0.0


def still3_outcome_reward(completion: str, task: dict, **_) -> float:
    """+1 correct, -1 wrong, -2 when the answer region has no non-empty `\\boxed{}`.

    One released STILL-3 variant (RECIPES.md, STILL-3). An empty `\\boxed{}` counts as no box:
    otherwise "\\boxed{}" alone earns -1 instead of -2, a reward hack a small policy finds
    within a few steps (seen on SmolLM2-135M)."""
    region = answer_region(completion)
    if region is None or not any(c.strip() for _, _, c in _find_boxes(region)):
        return -2.0
    return 1.0 if verify_math(completion, task["answer"]) else -1.0


_STRICT_RE = re.compile(r"^<think>\n(?!\s*</think>).*?\n</think>\n\n(?P<ans>.*\S.*)$", re.DOTALL)


def think_well_formed(completion: str) -> bool:
    """At most one `<think>` (and only at the start), exactly one `</think>`, then a non-empty
    answer. The opening tag may be missing because chat templates (Qwen3, DeepSeek-R1-Distill)
    often put it in the prompt."""
    s = completion.lstrip()
    if s.count("</think>") != 1 or s.count("<think>") > 1:
        return False
    if "<think>" in s and not s.startswith("<think>"):
        return False
    return bool(s.split("</think>", 1)[1].strip())


def format_reward(completion: str, task: dict | None = None, strict: bool = False, **_) -> float:
    """1.0 if the completion has a well-formed think block followed by an answer, else 0.0.

    Default (DeepSeek-R1 §2.2.2 format reward): `think_well_formed`.
    strict=True (STILL-3-style layout, our reading of their strict think/answer format): exactly
    `<think>\\n...\\n</think>\\n\\n<answer>` with a non-empty think block and a `\\boxed{}`
    in the answer.

    >>> format_reward("<think>\\nhm\\n</think>\\n\\n\\\\boxed{1}", strict=True)
    1.0
    """
    if not strict:
        return 1.0 if think_well_formed(completion) else 0.0
    m = _STRICT_RE.match(completion)
    if not m or "<think>" in m.group("ans") or "</think>" in m.group("ans"):
        return 0.0
    return 1.0 if _find_boxes(m.group("ans")) else 0.0


# ---- Phi-4-reasoning-plus --------------------------------------------------------------

PHI4_L_MAX, PHI4_L_POS, PHI4_L_NEG = 31744, 25600, 3702


def scaled_phi4_lengths(max_tokens: int) -> tuple[int, int, int]:
    """Phi-4's (L_max, L_pos_control, L_neg_control) scaled from 31744 to a run's max length,
    keeping their ratios: (max_tokens, round(max_tokens * 25600/31744), round(max_tokens * 3702/31744)).

    >>> scaled_phi4_lengths(31744)
    (31744, 25600, 3702)
    >>> scaled_phi4_lengths(4096)
    (4096, 3303, 478)
    """
    return (int(max_tokens), round(max_tokens * PHI4_L_POS / PHI4_L_MAX),
            round(max_tokens * PHI4_L_NEG / PHI4_L_MAX))


def cosine_length_reward(num_tokens: int, correct: bool, L_max: int = PHI4_L_MAX,
                         L_pos_control: int = PHI4_L_POS, L_neg_control: int = PHI4_L_NEG,
                         r_pos_max: float = 1.0, r_pos_min: float = 0.5,
                         r_neg_max: float = -0.5, r_neg_min: float = -1.0) -> float:
    """Phi-4-reasoning-plus length-aware accuracy reward (cosine schedule), L = tokens.

    correct: rho = min(1, max(L - L_pos, 0) / (L_max - L_pos))
             R = R+min + 1/2 (R+max - R+min)(1 + cos(pi rho))   -> 1.0 up to L_pos, 0.5 at L_max
    wrong:   rho = min(1, L / L_neg)
             R = R-max + 1/2 (R-min - R-max)(1 + cos(pi rho))   -> -1.0 at L=0, -0.5 from L_neg
    Source: Phi-4-reasoning technical report §4 (RECIPES.md; shape from a third-party
    reimplementation citing the paper).

    >>> cosine_length_reward(28672, True)    # halfway between L_pos and L_max
    0.75
    >>> cosine_length_reward(1851, False)    # halfway to L_neg
    -0.75
    """
    L = max(0, int(num_tokens))
    if correct:
        rho = min(1.0, max(L - L_pos_control, 0) / max(L_max - L_pos_control, 1))
        return r_pos_min + 0.5 * (r_pos_max - r_pos_min) * (1 + math.cos(math.pi * rho))
    rho = min(1.0, L / max(L_neg_control, 1))
    return r_neg_max + 0.5 * (r_neg_min - r_neg_max) * (1 + math.cos(math.pi * rho))


def phi4_length_aware_reward(completion: str, task: dict, num_tokens: int | None = None,
                             finished: bool | None = None, correct: bool | None = None,
                             max_tokens: int | None = None, L_max: int = PHI4_L_MAX,
                             L_pos_control: int = PHI4_L_POS, L_neg_control: int = PHI4_L_NEG,
                             unfinished_reward: float = -0.5, malformed_reward: float = -1.0,
                             **_) -> float:
    """Phi-4-reasoning-plus accuracy reward: unfinished (no EOS) -> -0.5; malformed think block
    -> -1.0; else `cosine_length_reward(L, correct)` (correct from `verify_math` unless given).

    `max_tokens` (the run's max response length) rescales L_max/L_pos/L_neg with
    `scaled_phi4_lengths`; without it the paper's 31744/25600/3702 are used.
    """
    L, done = _length_and_finish(completion, task, num_tokens, finished)
    if not done:
        return unfinished_reward
    if not think_well_formed(completion):
        return malformed_reward
    if max_tokens:
        L_max, L_pos_control, L_neg_control = scaled_phi4_lengths(max_tokens)
    if correct is None:
        correct = verify_math(completion, task["answer"])
    return cosine_length_reward(L, bool(correct), L_max, L_pos_control, L_neg_control)


def phi4_repetition_penalty(completion: str, task: dict | None = None, n: int = 5,
                            min_count: int = 5, **_) -> float:
    """R_rep = -max( #{distinct n-grams occurring more than 5 times} / #n-grams,
                     (count of the most frequent n-gram) / (#words / n) ), n = 5, on words.

    Source: Phi-4-reasoning §4 (RECIPES.md). 0.0 when there are fewer than n words.

    >>> phi4_repetition_penalty("a b c d e f g h i j")     # 6 distinct 5-grams, 10 words
    -0.5
    """
    words = completion.split()
    if len(words) < n:
        return 0.0
    counts: dict[tuple, int] = {}
    for i in range(len(words) - n + 1):
        g = tuple(words[i:i + n])
        counts[g] = counts.get(g, 0) + 1
    total = len(words) - n + 1
    frequent = sum(1 for c in counts.values() if c > min_count) / total
    top = max(counts.values()) / (len(words) / n)
    return -max(frequent, top)


def phi4_reward(completion: str, task: dict, w_acc: float = 8 / 13, w_rep: float = 1 / 13,
                **info) -> float:
    """R = 8/13 R_acc + 1/13 R_rep (Phi-4-reasoning §4, RECIPES.md)."""
    return (w_acc * phi4_length_aware_reward(completion, task, **info)
            + w_rep * phi4_repetition_penalty(completion, task))


# ---- DAPO ------------------------------------------------------------------------------

def dapo_overlong_penalty(completion: str, task: dict | None = None, num_tokens: int | None = None,
                          max_tokens: int = 20480, cache_tokens: int = 4096, **_) -> float:
    """DAPO soft overlong punishment (DAPO §3.4, RECIPES.md), added to the task reward:

        0                                   if L <= L_max - L_cache
        ((L_max - L_cache) - L) / L_cache   if L_max - L_cache < L <= L_max
        -1                                  if L > L_max

    >>> dapo_overlong_penalty("", num_tokens=18432)     # halfway into the 4096-token cache
    -0.5
    """
    L, _done = _length_and_finish(completion, task, num_tokens, True)
    start = max_tokens - cache_tokens
    if L <= start:
        return 0.0
    if L <= max_tokens:
        return (start - L) / cache_tokens
    return -1.0


# ---- STILL-3 -----------------------------------------------------------------------------

REFLECTION_WORDS = ("wait", "alternatively", "verify", "double-check", "check", "however",
                    "hmm", "let me re", "recheck", "reconsider", "mistake")


def still3_action_reward(completion: str, task: dict | None = None, words=REFLECTION_WORDS,
                         cap: int = 10, **_) -> float:
    """STILL-3 action reward: min(#reflection-word occurrences, cap) / cap, in [0, 1].

    Counts whole-word, case-insensitive occurrences of "wait", "alternatively", "verify", ...
    in the think part (or the whole completion without one). Warning (STILL-3): this rewards the
    *words*, not the reflection; a policy learns to write "wait" for free. Use with a small
    weight next to an outcome reward, and watch samples.

    >>> still3_action_reward("Wait, let me verify. Wait.", cap=4)
    0.75
    """
    text = completion.split("</think>", 1)[0].lower()
    n = sum(len(re.findall(r"(?<![a-z])" + re.escape(w) + r"(?![a-z])", text)) for w in words)
    return min(n, cap) / cap


def still3_length_reward(completion: str, task: dict | None = None, num_tokens: int | None = None,
                         max_tokens: int = 8192, **_) -> float:
    """STILL-3 length reward: min(L, max_tokens) / max_tokens, in [0, 1] (longer = more).

    Warning (STILL-3 authors): length rewards invite hacking (padding and repetition); pair it
    with an outcome reward and a repetition penalty.

    >>> still3_length_reward("", num_tokens=2048, max_tokens=8192)
    0.25
    """
    L, _done = _length_and_finish(completion, task, num_tokens, True)
    return min(L, max_tokens) / max_tokens


# ---- code ------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def extract_code(completion: str) -> str | None:
    """The last fenced Python block (```python / ```py / ```python3, else an untagged ```) after
    the think block; None when there is none or the think block never closed."""
    region = answer_region(completion)
    if region is None:
        return None
    blocks = _FENCE_RE.findall(region)
    tagged = [code for lang, code in blocks if lang.lower() in ("python", "py", "python3")]
    untagged = [code for lang, code in blocks if lang == ""]
    if tagged:
        return tagged[-1]
    return untagged[-1] if untagged else None


def code_rewards(completions: list[str], tasks: list[dict], all_or_nothing: bool = False,
                 workers: int | None = None, **limits) -> list[float]:
    """Batched code reward through `sandbox.run_many` (one sandbox pool for the whole batch).

    Per completion: no code block -> 0; `ast.parse` fails -> 0 without running (Skywork-OR1's
    sandbox does the same); else passed/total, or 1.0 only if every test passes when
    `all_or_nothing` (Skywork-OR1 uses all-or-nothing, RECIPES.md).
    """
    import ast
    out = [0.0] * len(completions)
    jobs, where = [], []
    for i, (c, task) in enumerate(zip(completions, tasks)):
        code = extract_code(c)
        if not code or not task.get("tests"):
            continue
        try:
            ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        jobs.append((code, task["tests"]))
        where.append(i)
    if jobs:
        import sandbox                          # lazy: only code tasks need it
        for i, res in zip(where, sandbox.run_many(jobs, workers=workers, **limits)):
            if all_or_nothing:
                out[i] = 1.0 if res.verdict == "accepted" else 0.0
            else:
                out[i] = res.passed / res.total if res.total else 0.0
    return out


def code_reward(completion: str, task: dict, all_or_nothing: bool = False, **info) -> float:
    """Fraction of `task["tests"]` passed (or all-or-nothing); see `code_rewards`."""
    limits = {k: v for k, v in info.items() if k in ("timeout_s", "memory_mb")}
    return code_rewards([completion], [task], all_or_nothing=all_or_nothing, workers=1, **limits)[0]


# ---- instruction following (Qwen3 general RL) -------------------------------------------

_SCRIPTS = {
    "latin": r"[A-Za-z\u00c0-\u024f]", "cjk": r"[\u4e00-\u9fff]", "kana": r"[\u3040-\u30ff]",
    "hangul": r"[\uac00-\ud7af]", "cyrillic": r"[\u0400-\u04ff]", "arabic": r"[\u0600-\u06ff]",
    "devanagari": r"[\u0900-\u097f]", "greek": r"[\u0370-\u03ff]", "hebrew": r"[\u0590-\u05ff]",
    "thai": r"[\u0e00-\u0e7f]",
}
_LANG_SCRIPT = {"zh": "cjk", "ja": "kana", "ko": "hangul", "ru": "cyrillic", "uk": "cyrillic",
                "ar": "arabic", "hi": "devanagari", "el": "greek", "he": "hebrew", "th": "thai"}


def _answer_text(completion: str) -> str:
    region = answer_region(completion)
    return "" if region is None else region.strip()


def check_word_count(text: str, min_words: int = 0, max_words: int | None = None) -> bool:
    n = len(text.split())
    return n >= min_words and (max_words is None or n <= max_words)


def check_keywords(text: str, keywords: Iterable[str]) -> bool:
    low = text.lower()
    return all(k.lower() in low for k in keywords)


def check_json(text: str, keys: Iterable[str] = ()) -> bool:
    t = text.strip()
    m = re.fullmatch(r"```(?:json)?\s*\n(.*?)\n?```", t, re.DOTALL)
    if m:
        t = m.group(1)
    try:
        obj = json.loads(t)
    except (ValueError, TypeError):
        return False
    return all(k in obj for k in keys) if keys else True


def check_no_commas(text: str) -> bool:
    return "," not in text and "，" not in text


def check_language(text: str, lang: str) -> bool:
    """Dominant script of the letters matches the language (a script heuristic: 'en', 'fr',
    'de', 'es' ... all count as Latin; 'ja' accepts kana or CJK; 'zh' needs CJK and no kana)."""
    counts = {name: len(re.findall(rx, text)) for name, rx in _SCRIPTS.items()}
    total = sum(counts.values())
    if total == 0:
        return False
    want = _LANG_SCRIPT.get(lang.lower()[:2], "latin")
    if want == "kana":
        return (counts["kana"] + counts["cjk"]) / total >= 0.6 and counts["kana"] > 0
    if want == "cjk" and counts["kana"] > 0:
        return False
    return counts[want] / total >= 0.8


def instruction_reward(completion: str, task: dict, all_or_nothing: bool = False, **_) -> float:
    """Fraction of `task["constraints"]` satisfied by the answer (text after `</think>`).

    Rule-checked constraints for Qwen3-style general RL (Qwen3 tech report §4.4), each a dict:
    {"type": "word_count", "min": 50, "max": 100}, {"type": "keywords", "words": [...]},
    {"type": "json", "keys": [...]}, {"type": "no_commas"}, {"type": "language", "lang": "zh"}.
    all_or_nothing=True -> 1.0 only if all hold.
    """
    text = _answer_text(completion)
    checks = []
    for c in task.get("constraints", []):
        kind = c.get("type")
        if kind == "word_count":
            checks.append(check_word_count(text, c.get("min", 0), c.get("max")))
        elif kind in ("keywords", "keyword"):
            words = c.get("words") or [c["word"]]
            checks.append(check_keywords(text, words))
        elif kind == "json":
            checks.append(check_json(text, c.get("keys", ())))
        elif kind == "no_commas":
            checks.append(check_no_commas(text))
        elif kind == "language":
            checks.append(check_language(text, c["lang"]))
        else:
            raise ValueError(f"instruction_reward: unknown constraint type {kind!r}; valid: "
                             "word_count, keywords, json, no_commas, language")
    if not checks:
        return 0.0
    if all_or_nothing:
        return 1.0 if all(checks) else 0.0
    return sum(checks) / len(checks)


# =====================================================================================
# Model-based rewards (Qwen3 general RL)
# =====================================================================================

JUDGE_TEMPLATE = (
    "You are grading an answer against a reference.\n\nQuestion: {question}\n\n"
    "Reference answer: {reference}\n\nResponse: {response}\n\n"
    "Is the response correct and consistent with the reference? Answer yes or no.\nAnswer:")


class JudgeReward:
    """Model-based reward with a reference answer (Qwen3 §4.4): a judge LM reads question,
    reference and response; the reward is its probability of "yes" against "no" at the next
    token:  R = p(yes) / (p(yes) + p(no)),  each p summed over the spellings " yes", "yes",
    " Yes", "Yes" (likewise "no") that are single tokens in the judge's vocabulary.

    `task` needs "question" and "reference" (falls back to "answer").
    """

    def __init__(self, model, tokenizer, template: str = JUDGE_TEMPLATE, max_length: int = 4096):
        self.model, self.tokenizer, self.template, self.max_length = model, tokenizer, template, max_length
        self.yes_ids = self._ids(("yes", " yes", "Yes", " Yes"))
        self.no_ids = self._ids(("no", " no", "No", " No"))
        if not self.yes_ids or not self.no_ids:
            raise ValueError("JudgeReward: the judge tokenizer has no single-token 'yes'/'no'")

    def _ids(self, words) -> list[int]:
        ids = set()
        for w in words:
            t = self.tokenizer.encode(w, add_special_tokens=False)
            if len(t) == 1:
                ids.add(t[0])
        return sorted(ids)

    def prompt(self, completion: str, task: dict) -> str:
        response = _answer_text(completion) or completion
        return self.template.format(question=task.get("question", ""),
                                    reference=task.get("reference", task.get("answer", "")),
                                    response=response)

    def score_batch(self, completions: list[str], tasks: list[dict]) -> list[float]:
        import torch
        tok = self.tokenizer
        prompts = [self.prompt(c, t) for c, t in zip(completions, tasks)]
        ids = [tok.encode(p, add_special_tokens=True)[-self.max_length:] for p in prompts]
        device = next(self.model.parameters()).device
        out = []
        with torch.no_grad():
            for seq in ids:                          # one at a time: no padding side to get wrong
                logits = self.model(torch.tensor([seq], device=device)).logits[0, -1].float()
                logp = torch.log_softmax(logits, -1)
                ly = torch.logsumexp(logp[self.yes_ids], 0)
                ln = torch.logsumexp(logp[self.no_ids], 0)
                out.append(torch.sigmoid(ly - ln).item())
        return out

    def __call__(self, completion: str, task: dict, **_) -> float:
        return self.score_batch([completion], [task])[0]


def bradley_terry_loss(r_chosen, r_rejected):
    """Bradley-Terry preference loss, mean over pairs:  L = -log sigma(r_chosen - r_rejected).

    Source: Bradley & Terry (1952); reward-model training in InstructGPT (Ouyang et al. 2022,
    eq. 1), used for Qwen3's reward model without reference answers.
    """
    import torch.nn.functional as F
    return -F.logsigmoid(r_chosen - r_rejected).mean()


def _rm_texts(prompt: str, response: str) -> str:
    return f"{prompt}\n{response}" if prompt else response


class ScalarRewardModel:
    """Reward without a reference: an `AutoModelForSequenceClassification` with num_labels=1
    scores prompt+response; the reward is the scalar logit. `task["question"]` (or "prompt")
    is the prompt."""

    def __init__(self, model, tokenizer, max_length: int = 4096):
        self.model, self.tokenizer, self.max_length = model, tokenizer, max_length

    def score_batch(self, completions: list[str], tasks: list[dict]) -> list[float]:
        import torch
        texts = [_rm_texts(t.get("question", t.get("prompt", "")), _answer_text(c) or c)
                 for c, t in zip(completions, tasks)]
        with torch.no_grad():
            r = _rm_forward(self.model, self.tokenizer, texts, self.max_length)
        return r.float().tolist()

    def __call__(self, completion: str, task: dict, **_) -> float:
        return self.score_batch([completion], [task])[0]


def _rm_forward(model, tokenizer, texts: list[str], max_length: int):
    import torch
    if tokenizer.pad_token_id is None:
        raise ValueError("reward model tokenizer has no pad token: set tokenizer.pad_token "
                         "(e.g. = tokenizer.eos_token) and model.config.pad_token_id")
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    device = next(model.parameters()).device
    enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
    out = model(input_ids=enc["input_ids"].to(device), attention_mask=enc["attention_mask"].to(device))
    return out.logits.squeeze(-1)


def train_reward_model(model, tokenizer, pairs, epochs: int = 1, lr: float = 1e-4,
                       batch_size: int = 8, max_length: int = 1024, weight_decay: float = 0.0,
                       seed: int = 0, log: Callable[[dict], None] | None = None) -> list[dict]:
    """Train a scalar reward model on preference pairs with the Bradley-Terry loss.

    pairs: dicts {"prompt", "chosen", "rejected"} or tuples (prompt, chosen, rejected) /
    (chosen, rejected). Each step: r_c = RM(prompt + chosen), r_r = RM(prompt + rejected),
    loss = -log sigma(r_c - r_r) (`bradley_terry_loss`), AdamW. Returns one dict per epoch:
    {"epoch", "loss", "accuracy"} where accuracy is the fraction of pairs with r_c > r_r
    seen during that epoch.
    """
    import random
    import torch
    rows = []
    for p in pairs:
        if isinstance(p, dict):
            rows.append((p.get("prompt", ""), p["chosen"], p["rejected"]))
        elif len(p) == 3:
            rows.append(tuple(p))
        else:
            rows.append(("", p[0], p[1]))
    if not rows:
        raise ValueError("train_reward_model: no preference pairs")
    rng = random.Random(seed)
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=lr,
                            weight_decay=weight_decay)
    model.train()
    history = []
    for epoch in range(epochs):
        order = list(range(len(rows)))
        rng.shuffle(order)
        tot_loss, correct, seen = 0.0, 0, 0
        for s in range(0, len(order), batch_size):
            batch = [rows[i] for i in order[s:s + batch_size]]
            texts = [_rm_texts(p, c) for p, c, _ in batch] + [_rm_texts(p, r) for p, _, r in batch]
            scores = _rm_forward(model, tokenizer, texts, max_length)
            r_c, r_r = scores[:len(batch)], scores[len(batch):]
            loss = bradley_terry_loss(r_c, r_r)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot_loss += loss.item() * len(batch)
            correct += (r_c > r_r).sum().item()
            seen += len(batch)
        row = {"epoch": epoch, "loss": tot_loss / seen, "accuracy": correct / seen}
        history.append(row)
        if log:
            log(row)
    model.eval()
    return history


# =====================================================================================
# Registry and weighted combination
# =====================================================================================

def _strict_format(completion: str, task: dict | None = None, **_) -> float:
    return format_reward(completion, task, strict=True)


def _code_all(completion: str, task: dict, **info) -> float:
    return code_reward(completion, task, all_or_nothing=True, **info)


REWARDS: dict[str, Callable[..., float]] = {
    "math": math_reward,
    "math_partial": math_partial_reward,
    "still3_outcome": still3_outcome_reward,
    "format": format_reward,
    "format_strict": _strict_format,
    "length_aware": phi4_length_aware_reward,
    "repetition": phi4_repetition_penalty,
    "phi4": phi4_reward,
    "overlong": dapo_overlong_penalty,
    "action": still3_action_reward,
    "length": still3_length_reward,
    "code": code_reward,
    "code_all": _code_all,
    "instruction": instruction_reward,
}


def parse_reward_spec(spec: str | list, weights: str | list | None = None) -> list[tuple[str, float]]:
    """Flags -> [(name, weight)].

    parse_reward_spec("math:1.0,format:0.2")          -> [("math", 1.0), ("format", 0.2)]
    parse_reward_spec("math,format", "1,0.2")         -> same (for --rewards / --reward-weights)
    parse_reward_spec("math")                         -> [("math", 1.0)]
    Unknown names raise ValueError listing the valid ones.
    """
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if str(s).strip()]
    if weights is not None:
        ws = [float(w) for w in (weights.split(",") if isinstance(weights, str) else weights)]
        if len(ws) != len(names):
            raise ValueError(f"{len(names)} reward names but {len(ws)} weights: {names} / {ws}")
        pairs = list(zip(names, ws))
    else:
        pairs = []
        for item in names:
            name, _, w = item.partition(":")
            pairs.append((name.strip(), float(w) if w else 1.0))
    for name, _w in pairs:
        if name not in REWARDS:
            raise ValueError(f"unknown reward {name!r}; valid names: {', '.join(sorted(REWARDS))}")
    if not pairs:
        raise ValueError(f"no rewards given; valid names: {', '.join(sorted(REWARDS))}")
    return pairs


class combined_reward:
    """R = sum_k w_k R_k(completion, task, **info) over (name or callable, weight) pairs.

    `combined_reward(parse_reward_spec("math:1,format:0.2"))(completion, task, num_tokens=...)`.
    `.breakdown(...)` returns each component and the total, for logging.
    """

    def __init__(self, names_and_weights):
        if isinstance(names_and_weights, str):
            names_and_weights = parse_reward_spec(names_and_weights)
        self.parts = []
        for name, w in names_and_weights:
            if callable(name):
                self.parts.append((getattr(name, "__name__", "reward"), name, float(w)))
            elif name in REWARDS:
                self.parts.append((name, REWARDS[name], float(w)))
            else:
                raise ValueError(f"unknown reward {name!r}; valid names: {', '.join(sorted(REWARDS))}")

    def breakdown(self, completion: str, task: dict, **info) -> dict[str, float]:
        out = {name: fn(completion, task, **info) for name, fn, _w in self.parts}
        out["total"] = sum(w * out[name] for name, _fn, w in self.parts)
        return out

    def __call__(self, completion: str, task: dict, **info) -> float:
        return sum(w * fn(completion, task, **info) for _name, fn, w in self.parts)
