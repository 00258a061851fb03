"""Math answer checking: `verify_math(completion, gold) -> bool` and its four steps.

The answer-equivalence half of the rule-based math reward (DeepSeek-R1 §2.2.2, Skywork-OR1:
"accuracy rewards ... verify the final answer"), kept apart from `rewards.py` because it is
plumbing every reward and evaluation shares; `rewards` re-exports `verify_math`,
`extract_answer`, `normalize_answer` and `answer_region`, the names outside code uses.
"""
from __future__ import annotations

import atexit
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from fractions import Fraction

__all__ = ["verify_math", "extract_answer", "normalize_answer", "answer_region"]

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
