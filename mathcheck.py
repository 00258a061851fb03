"""Math answer checking: `verify_math(completion, gold) -> bool` and its four steps.

The answer-equivalence half of the rule-based math reward (DeepSeek-R1 §2.2.2, Skywork-OR1:
"accuracy rewards ... verify the final answer"), kept apart from `rewards.py` because it is
plumbing every reward and evaluation shares; `rewards` re-exports `verify_math`,
`extract_answer`, `normalize_answer` and `answer_region`, the names outside code uses.
"""
from __future__ import annotations

import atexit
import html
import json
import math
import os
import re
import select
import subprocess
import sys
import threading
import time
import unicodedata
from decimal import Decimal
from fractions import Fraction

__all__ = ["verify_math", "extract_answer", "normalize_answer", "answer_region", "gold_answer"]

# =====================================================================================
# Math answer verification
# =====================================================================================
#
# verify_math(completion, gold) works in four steps, each a small function below:
#   1. answer_region: the text after the last </think> (an unclosed <think> -> no answer), cut
#      at a chat-template end or new-turn token; HTML formatting tags (<b>, <p>, <sup>) dropped.
#   2. extract_answer: the last \boxed{}/\fbox{} (adjacent boxes form one list; boxes before an
#      explicit self-correction are withdrawn); without a box only an anchored final statement
#      ("The answer is X", "Final Answer: X", "Answer - X" / "Answer → X" with markdown
#      emphasis anywhere around them, "Answer: The value is X", a "Final Answer" heading with
#      X on the next line, a table row "| Answer | X |", "#### X", "<answer>X</answer>", a JSON
#      field {"answer": X}, a last sentence "the largest n is X" or "Therefore, x = X").
#      Hedges ("42 or 43", \pm, competing boxes, another value stated, restated, rechecked or
#      called the correct one after the answer, doubt or inability in English or in the other
#      languages read, a region that ends on "Wait.") -> rejected.
#   3. normalize_answer: the same normalisation for gold and prediction (LaTeX spellings,
#      units and words after a number, degrees, percent, thousands separators, scientific
#      notation, repeating decimals, unicode, base subscripts, the empty set).
#   4. comparison: string equality, then exact rational arithmetic for plain numbers and exact
#      radicals, then structure (lists, sets, tuples, intervals = inequalities, named tuples),
#      then math-verify's symbolic comparison (and a same-curve test for equations) in a
#      separate worker process that is killed after SYMBOLIC_TIMEOUT_S. math-verify's numeric
#      tolerance is replaced there by an exact check (floats are read as the decimals they
#      spell; remaining numbers must agree to 40 significant digits, relative, not absolute).
#   `lenient=True` (evaluation only) also takes the last formula or number when step 2 finds
#   no box and no anchor.

SYMBOLIC_TIMEOUT_S = 2.0      # one symbolic comparison in the worker
VERIFY_BUDGET_S = 4.0         # all symbolic work of one verify_math call together
MAX_ANSWER_CHARS = 1000       # longer extracted answers are never parsed symbolically
MAX_EXPONENT = 10_000         # a^n with a literal n beyond this is not evaluated


def answer_region(completion: str) -> str | None:
    """The part of a completion that may hold the final answer.

    Text after the last `</think>`; the whole completion if it has no think tags; None when a
    `<think>` was opened and never closed (the model never finished thinking). Without the
    interpreter's output blocks (```output, ToRA's format: tools.observation): what the policy's
    program printed is not its answer. A printed \\boxed{6} hedged with the policy's own
    \\boxed{7}, a printed "#### 6" or "I made an error" after it overrode or withdrew it, and a
    printed \\boxed{7} was the answer of a policy that never gave one.

    >>> answer_region("<think>so 4</think>The answer is 5")
    'The answer is 5'
    >>> answer_region("<think>so 4... ") is None
    True
    >>> answer_region("Run:\\n```output\\nThe answer is 6\\n```\\nSo it is 7.")
    'Run:\\n\\nSo it is 7.'
    """
    if "</think>" in completion:
        completion = completion.rsplit("</think>", 1)[1]
    elif "<think>" in completion:
        return None
    if "output" not in completion:
        return completion
    # here, not at the top: the symbolic worker (`_SymbolicWorker`) loads this file alone, from
    # any directory, where the project's other modules cannot be imported
    import codeblocks
    kept, pos = [], 0
    for b in codeblocks.fenced_blocks(completion):
        if b.lang == "output":
            kept.append(completion[pos:b.start])
            pos = b.end
    return "".join(kept) + completion[pos:]


# ---------- extraction --------------------------------------------------------------

_BOX_RE = re.compile(r"\\(?:boxed|fbox|framebox)\s*")
# what may stand between two boxes that together form one list answer
_BOX_GAP_RE = re.compile(
    r"^(?:\s|,|;|\$|&|\\\\|\\[,;:! ]|\\quad|\\qquad|\\\[|\\\]|\\\(|\\\)|\band\b|"
    r"\\text\{\s*(?:and|,)?\s*\}|\\(?:text|mathrm)\{\s*,?\s*and\s*\})*$")
# words that make a number a bound or an estimate, not the value ("about 5", "at least 5")
_QUALIFIER_RE = re.compile(r"(?i)\b(?:about|around|roughly|nearly|almost|approx\w*|estimated|"
                           r"likely|at\s+(?:least|most)|(?:more|less|fewer|greater|smaller)\s+than|"
                           r"over|under|up\s+to|minimum|maximum|or\s+so|rounded|truncated)\b")
_HEDGE_RE = re.compile(r"\\pm(?![a-zA-Z])|±|\\mp(?![a-zA-Z])|∓|\bor\b|\\lor\b|\\vee\b|"
                       r"\beither\b|\bmaybe\b|\bperhaps\b|\bprobably\b|\bpossibly\b|"
                       r"\bapproximately\b|\\approx|≈|\?")


def _brace_ends(text: str) -> dict[int, int]:
    """{index of a `{`: index just past its matching `}`}, for the whole text in one pass (a scan
    from each box to its closing brace is quadratic when thousands of boxes never close)."""
    ends, stack, i, n = {}, [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            ends[stack.pop()] = i + 1
        i += 1
    return ends


def find_boxes(text: str) -> list[tuple[int, int, str]]:
    """All top-level `\\boxed{...}` / `\\fbox{...}` / `\\boxed 5` as (start, end, content)."""
    boxes = []
    pos = 0
    ends = None
    while True:
        m = _BOX_RE.search(text, pos)
        if not m:
            return boxes
        i = m.end()
        if i < len(text) and text[i] == "{":
            if ends is None:
                ends = _brace_ends(text)
            j = ends.get(i, -1)
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


_MATH_ENV = (r"(?:\$\$.{1,2000}?\$\$|\$(?:\\\$|[^$\n]){1,1000}\$|\\\([^\n]{1,1000}?\\\)"
             r"|\\\[.{1,2000}?\\\])")         # bounded: a stray "$" or "\(" costs no quadratic scan
# Markdown emphasis around the anchor word or its separator: "**Answer:**", "__Answer__:",
# "*Answer*: 5" ("_" is a word character, so the anchor word is delimited by letters and digits
# only, not by \b; a name in code, "final_answer = ...", is still no anchor).
_EMPH = r"[*_]{0,3}"
# The word in other languages too: "La respuesta (final) es 5", "La réponse est 5", "Die
# (endgültige) Antwort ist / lautet 5", "La risposta è 5", "A resposta é 5", "Ответ: 5", "答案是 5",
# "最终答案：5", "答え：5", "정답: 5" (each with its "is" in `_FOREIGN_IS`); Indonesian, Vietnamese,
# Hindi, Arabic and Greek with a colon: "Jawaban: 5", "Đáp án: 5", "उत्तर: 5", "الإجابة: 5"
_FOREIGN_ANSWER = (r"(?:(?:endgültige|finale?|最终|最終)\s*)?(?:respuesta|r[ée]ponse|antwort|"
                   r"risposta|resposta|antwoord|odpowied[źz]|cevap|ответ|答案|答え|解答|정답|"
                   r"jawaban|câu\s+trả\s+lời|đáp\s+án|उत्तर|الإجابة|الجواب|απάντηση)"
                   r"(?:\s+(?:finale?|correct[ae]))?")
_FOREIGN_IS = r"(?:(?:es|est|ist|lautet|è|é)\b\s*:?|[是为為]|：)"
# "Result:" opening a line (after list, quote or emphasis marks, "The") is an anchor too
# ("Result: 5", "**Result:** 5"); in running text ("the result: we add 3") it is not (`_anchors`)
_ANCHOR_WORD = (r"(?<![A-Za-z0-9])(?<![A-Za-z0-9]_)(?:(?P<fin>final\s+(?:answer|result))|answer|"
                r"(?P<res>result)(?=[ \t]*[*_]{0,3}[ \t]*:)|"
                r"ans(?=[ \t]*:)|ans\.|"
                + _FOREIGN_ANSWER + ")")
# Separators between the anchor word and the answer. "is", ":" and "=" anywhere; an arrow
# ("->", "=>", "→", "⇒") anywhere, as nobody writes one in prose after "answer"; a dash
# ("Answer - 5", "Answer — 5") only where the anchor begins its line (after list or quote marks,
# "the" / "my") or is "final answer": in running text "... the answer - as we saw - is ..." a
# dash is punctuation. A hyphen or en dash needs a space after it, or "Answer -5" would be read
# as "Answer: 5" although it may be the number -5 (neither is taken).
_ARROW = r"(?:=>|->|-->|→|⇒|⟹|⟶|⇨|➔|➜)"
_DASH = r"(?:(?:-{1,3}|–)(?=\s)|—)"
_LINE_START = r"(?P<ls>(?:^|\n)[ \t]*(?:[#>]+[ \t]*|[-+*][ \t]+|\d{1,2}[.)][ \t]+)?" + _EMPH + \
    r"(?:(?:the|my|our)\s+)?)?"
# a code fence opening the line after "Answer:" ("```" or "```text"): the answer is inside it
_FENCE = r"(?:[ \t]*`{3,}[a-zA-Z]{0,10}[ \t]*\n)?"
# a list item's mark before the answer on the line after "Answer:" ("- 5", "* 5", "• 5")
_BULLET = r"(?:[ \t]*[-*•][ \t]+)?"
_ANCHOR_RE = re.compile(
    r"<(?P<tn>(?:final_)?answer)>(?P<tag>.{0,2000}?)</(?P=tn)>"
    r"|####[ \t]*(?P<hash>[^\n]*)"
    # a JSON answer field: {"answer": 5}, {"final_answer": "\\frac{1}{2}"}
    r"|[\"'](?:final_)?answer[\"'][ \t]*:[ \t]*(?P<json>\"(?:[^\"\\\n]|\\.){0,500}\""
    r"|'(?:[^'\\\n]|\\.){0,500}'|[-+.\d][-+.\deE]{0,40})"
    # a markdown table row "| **Answer** | 5 |": the anchor word in the first cell, the answer
    # in the only other one
    # (blanks, colons and emphasis after the word in one class: several adjacent "[ \t]*" would
    # try every split of a long blank run, O(n^4))
    r"|(?:^|\n)[ \t]*\|[ \t]*" + _EMPH + r"(?:final\s+)?answer[ \t:*_]*"
    r"\|(?P<cell>[^|\n]{1,500})\|?[ \t]*(?=\n|$)"
    r"|" + _LINE_START + _ANCHOR_WORD + r"(?:\s+to\s+(?:this|the)\s+(?:question|problem))?"
    r"(?:[ \t]*[*_]{1,3})?\s*(?P<sep>is\b\s*:?|(?:would|should|must|will)\s+be\b\s*:?|:|" +
    _FOREIGN_IS + "|" +
    _ARROW + r"|=|(?<=ans\.)|(?(ls)" + _DASH +
    r"|(?(fin)" + _DASH + r"|(?!))))[ \t]*" + _EMPH +
    # the statement; "The answer is:" with nothing after it on its line: the next line
    r"(?:[ \t]*\n(?:[ \t]*\n)?" + _FENCE + _BULLET + r")?[ \t]*(?P<stmt>" + _MATH_ENV +
    r"[^\n]*|[^\n]*)"
    # "Answer $9$", "Answer \[ 9 \]": the word alone at the start of a line, then a formula
    r"|(?:^|\n)[ \t]*" + _EMPH + r"(?:final\s+)?answer" + _EMPH + r"[ \t]+(?P<env>" + _MATH_ENV +
    ")"
    # a heading "**Final Answer:**" alone on its line: the answer is the next line that has text
    r"|(?:^|\n)[ \t]*(?:\#+[ \t]*)?" + _EMPH + r"(?:final\s+)?answer[ \t:*_]*\n(?:[ \t]*\n){0,2}" +
    _FENCE + _BULLET + r"[ \t]*(?P<next>" + _MATH_ENV +
    r"|[^\n]+)",
    re.IGNORECASE | re.DOTALL)

# An explicit admission that an earlier answer was wrong. Boxes before the last one of these are
# withdrawn; one after the final answer withdraws it. "Actually", "Wait" or "let me check" alone
# are not enough: they are how hedges and re-checks read too. ("Let me redo it" after the final
# answer is a re-check, so it is among the weaker signs below.)
# Inability: "I cannot / can't / couldn't / am unable to / am not able to determine (find,
# solve, verify, tell) the answer / it / this", "it is impossible for me to tell". A doubt about
# the answer wherever it stands after the reasoning; one said under a condition ("without c, I
# cannot determine the answer") is reasoning.
_INABILITY = (
    r"\bI(?:'m|\s+am|\s+was)?\s+(?:cannot|can't|can\s+not|"
    r"couldn't|could\s+not|unable\s+to|not\s+able\s+to)\s+(?:(?:really|fully|exactly|"
    r"reliably|definitively|actually)\s+)?(?:determine|solve|find|compute|calculate|"
    r"figure\s+out|work\s+out|verify|confirm|check|tell|answer|say)\s+(?:for\s+sure\s+)?"
    r"(?:it|this|that|the\s+(?:exact\s+|final\s+|correct\s+|precise\s+|right\s+)?"
    r"(?:answer|value|result|solution|problem|question)|this\s+(?:problem|question|answer|"
    r"result|value))?(?:\s+(?:for\s+sure|with\s+certainty|exactly|definitively))?"
    r"(?=\s*(?:[.;,!)\n]|$|\\boxed))"
    r"|\b(?:it(?:'s|\s+is)\s+)?impossible\s+(?:for\s+me\s+)?to\s+(?:tell|say|know|determine)\b"
    r"(?=\s*(?:[.;,!)\n]|$))")
# An admission of doubt about the answer, in any of its forms: "I'm not (100%) sure / certain /
# confident", "I'm unsure / uncertain / guessing", "(not sure)", ", but unsure", "I don't know
# if this is right", "I can't be sure", "my (best) guess", "a guess", "I guess". "I'm not sure
# if ..." doubts only when it names the answer ("if this is right"); "not sure whether the
# units are needed" and "we guess a root" are no doubt about the value.
# Doubt in the languages whose answer statements are read (`_FOREIGN_ANSWER`): not sure, maybe,
# about: "No estoy seguro", "Ich bin mir nicht sicher", "Je ne suis pas sûr", "Vielleicht 6",
# "(ungefähr)", "Не уверен", "我不确定", "たぶん", "아마"
_FOREIGN_DOUBT = (
    r"\b(?:no\s+estoy\s+segur[oa]|quizás?|tal\s+vez|aproximadamente|je\s+ne\s+suis\s+pas\s+s[uû]re?"
    r"|pas\s+s[uû]re?|peut[- ]être|environ|ich\s+bin\s+(?:mir\s+)?(?:nicht|un)sicher"
    r"|nicht\s+sicher|vielleicht|ungefähr|wahrscheinlich|non\s+sono\s+sicur[oa]|forse|circa"
    r"|não\s+(?:tenho\s+certeza|estou\s+segur[oa])|talvez|не\s+уверен[аы]?|возможно"
    r"|может\s+быть|примерно|приблизительно|tidak\s+yakin|mungkin|không\s+chắc)\b"
    r"|不确定|不太确定|不確定|也许|或许|大概|大约|大約|可能是|たぶん|多分|かもしれ|自信がない"
    r"|확실하지\s*않|아마|대략")
# An admission of error in those languages: "Ich habe einen Fehler gemacht", "Me equivoqué",
# "J'ai fait une erreur", "Je me suis trompé", "Ho fatto un errore", "Я ошибся", "我算错了"
_FOREIGN_FIX = (
    r"\bich\s+habe\s+(?:mich\s+verrechnet|einen\s+fehler\s+gemacht)|\bme\s+equivoqué"
    r"|\bcometí\s+un\s+error|\bj'ai\s+fait\s+une\s+erreur|\bje\s+me\s+suis\s+trompée?"
    r"|\bho\s+fatto\s+un\s+errore|\bmi\s+sono\s+sbagliat[oa]|\bя\s+ошиб(?:ся|лась)"
    r"|\beu\s+errei|我算错了|我错了|我算錯了|間違えました")
_DOUBT_ADV = r"(?:(?:100\s*%|completely|entirely|fully|totally|very|quite|too|so|really)\s+)?"
_DOUBT = (r"(?:\bI(?:'m|\s+am)\s+(?:(?:still|a\s+bit|somewhat)\s+)?(?:not\s+" + _DOUBT_ADV +
          r"(?:sure|certain|confident)|unsure|uncertain|guessing)\b"
          r"|(?:\(|\bbut|\bthough|\balthough|,|;|—|--)[ \t]*(?:(?:I'm|I\s+am)\s+)?(?:not\s+"
          + _DOUBT_ADV + r"(?:sure|certain|confident)|unsure|uncertain)\b"
          r"|\bI\s+(?:(?:really\s+)?(?:don't|do\s+not|can't|cannot|can\s+not)\s+(?:really\s+)?"
          r"(?:know|tell|be\s+(?:sure|certain))|have\s+no\s+idea)\b)"
          r"(?:\s+(?:if|whether)\s+(?:this|that|it|my\s+answer|the\s+answer|(?:this|that|my)\s+\w+)"
          r"\s+(?:is|was)\s+(?:right|correct|true|valid))?"
          r"(?!\s+(?:if|whether|how|why|what|which|where|that\s+the\s+(?:units|format)))"
          r"|\b(?:my|our|a|best|educated|rough|wild|only)\s+guess\b|\bI\s+guess\b|\bguesstimate\b"
          # a sentence that opens "Not sure", "I could / might be wrong", "this may be incorrect",
          # "hopefully", "tentative(ly)", "give or take"
          r"|(?:^|(?<=[.!?\n]))[ \t]*not\s+" + _DOUBT_ADV + r"(?:sure|certain|confident)\b"
          r"|\bI\s+(?:could|might|may)\s+(?:well\s+)?be\s+(?:wrong|mistaken)\b"
          r"|\b(?:this|that|it|the\s+answer)\s+(?:could|might|may)\s+(?:well\s+)?be\s+(?:wrong|"
          r"incorrect|off|a\s+mistake)\b|\bhopefully\b|\btentative(?:ly)?\b|\bgive\s+or\s+take\b"
          # a confidence short of certainty: "I'm 90% sure", "(80% confident)", "Confidence: 60%",
          # "confidence: low / medium", "low confidence"; "100% sure" is certainty
          r"|(?<![\d.])(?!100\b)\d{1,2}(?:\.\d+)?\s*%\s+(?:sure|certain|confident)\b"
          r"|\bconfidence(?:\s+level)?\s*[:=]?\s*(?:(?!100\b)\d{1,2}(?:\.\d+)?\s*%|low|medium|moderate)"
          r"|\b(?:low|medium|moderate|limited|some)\s+confidence\b"
          # the answer called unchecked or likely: "(unverified)", "this is likely / probably
          # correct", "please verify", "I'd double-check", "I may have made a mistake", "there
          # might be an error", "this seems off", "something is wrong", "I give up", "(guessing)",
          # a sentence "Unsure." / "No idea."
          r"|\bunverified\b|\b(?:likely|probably|presumably|possibly)\s+(?:correct|right)\b"
          r"|\bplease\s+(?:verify|double[- ]?check|check|confirm)\b"
          r"|\bI(?:'d|\s+would|\s+should)\s+(?:still\s+)?(?:double[- ]?check|verify|re-?check)\b"
          r"|\b(?:I|we)\s+(?:may|might|could)\s+have\s+(?:made\s+(?:an?\s+)?(?:\w+\s+)?"
          r"(?:errors?|mistakes?|slip)|miscalculated|miscounted|misread|erred|gone\s+wrong)\b"
          r"|\bthere\s+(?:may|might|could)\s+(?:well\s+)?be\s+(?:an?\s+)?(?:\w+\s+)?(?:errors?|mistakes?)\b"
          r"|\b(?:this|that|it|something)(?:'s|\s+is|\s+seems|\s+looks|\s+feels)\s+"
          r"(?:(?:a\s+bit|slightly|somewhat|a\s+little)\s+)?(?:off|fishy|not\s+right)\b"
          r"|\bsomething(?:'s|\s+is|\s+seems|\s+must\s+be)\s+wrong\b|\bI\s+give\s+up\b"
          r"|\(\s*(?:just\s+)?guess(?:ing|ed)?\s*\)"
          r"|(?:^|(?<=[.!?\n]))[ \t]*(?:unsure|uncertain|no\s+idea)\b"
          r"|" + _INABILITY + "|" + _FOREIGN_DOUBT)
_DOUBT_RE = re.compile(_DOUBT, re.IGNORECASE)
_INABILITY_RE = re.compile(_INABILITY, re.IGNORECASE)
_CORRECTION_RE = re.compile(
    r"(?<!\bif )(?<!\bunless )(?<!\bno )\b(?:I|we)\s+(?:have\s+|'ve\s+|had\s+)?(?:made|make)\s+"
    r"(?:(?:a|an|one|small|careless|simple|silly|minor|big|arithmetic|calculation|computational|"
    r"sign|an\s+arithmetic)\s+)*(?:error|mistake|miscalculation|slip)s?\b"
    r"|\b(?:I|we)\s+(?:miscalculated|miscounted|misread|misapplied|messed\s+up|was\s+wrong|were\s+wrong|"
    r"got\s+(?:it|this|that)\s+wrong)\b"
    r"|\b(?:that|this|it|which)(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+(?:right|correct|"
    r"the\s+(?:right|correct)\s+answer)|"
    r"a\s+mistake|an\s+error|mistaken)\b"
    r"|\b(?:that|this|it)\s+(?:can't|cannot|can\s+not|couldn't)\s+be\s+(?:right|correct)\b"
    r"|\b(?:previous|above|earlier|first|initial)\s+(?:answer|result|value|calculation|computation|"
    r"step)\s+(?:is|was)\s+(?:wrong|incorrect|not\s+(?:right|correct))\b"
    r"|\bthere(?:'s|\s+is|\s+was)\s+an?\s+(?:error|mistake)(?:\s*[.,:;!]|\s+in\s+my\b)"
    r"|\bcorrection\s*:|\bscratch\s+that\b|\bI\s+take\s+(?:that|it)\s+back\b"
    r"|[✗✘❌]"                                  # a cross mark: wrong
    r"|" + _FOREIGN_FIX +
    # an admission of doubt (`_DOUBT`)
    r"|" + _DOUBT +
    # "Hmm, no, it's 6" (but "Wait, no, that is right" re-affirms)
    r"|\b(?:wait|actually|hmm)\s*,?\s+no\s*(?:[.!;:]|,(?!\s*(?:that|this|it)(?:'s|\s+is|\s+was)"
    r"\s+(?:right|correct|fine|ok|okay|true)\b))"
    # "... no, actually, it is 6" / "no wait" (but "No, actually, that's right" re-affirms)
    r"|\bno\s*,?\s+(?:wait|actually)\b(?!\s*,?\s*(?:that|this|it)(?:'s|\s+is|\s+was)"
    r"\s+(?:right|correct|fine|ok|okay|true)\b)",
    re.IGNORECASE)
# Weaker signs of a correction, enough to withdraw boxes before them when a new final box
# follows (and nothing after them hedges): "my earlier answer of \boxed{10} is incorrect".
_WITHDRAW_RE = re.compile(
    r"(?<!\bif I'm )(?<!\bif I am )(?<!\bif that's )(?<!\bno )(?<!\bany )(?<!\bwithout )"
    r"\b(?:incorrect|wrong|mistaken|mistakes?|errors?|miscalculat\w*|typo|not\s+(?:right|correct)|sorry|"
    r"re-?calculat\w*|re-?comput\w*|redo(?:ing)?|the\s+correct\s+(?:answer|value|result|total)|oops)\b"
    r"|\b(?:let\s+me|I\s+need\s+to|I\s+should|I'll|we\s+need\s+to|let's)\s+(?:correct|fix|redo|re-do|"
    r"recompute|re-compute|recalculate|re-calculate)\b",
    re.IGNORECASE)
_WITHDRAW_HEDGE_RE = re.compile(r"\b(?:or|maybe|perhaps|possibly|probably|either|alternatively|"
                                r"might|could\s+be|not\s+sure|unsure)\b", re.IGNORECASE)
# a short phrase that joins two boxes into one list answer ("\boxed{1} and \boxed{2}",
# "\boxed{(3, 3)} for part (a) and \boxed{(1, 1)}", "$y_1 = \boxed{..}$ and $y_2 = \boxed{..}$")
_GAP_BLOCK_RE = re.compile(r"\b(?:or|not|no|but|wait|actually|maybe|perhaps|either|alternatively|"
                           r"instead|hmm|wrong|mistake|error|check|checking|verify|else|otherwise)\b",
                           re.IGNORECASE)
_FILLER_RE = re.compile(r"(?is)(?<!\s)\s*(?:I hope (?:it|this|that) is correct\.?|Let me know if.*)"
                        r"\s*$")
# the end of a turn or the start of a new one: ChatML, Llama 3, Phi, DeepSeek, Gemma
# (<end_of_turn>), Mistral ([INST]; its "</s>" is also HTML's strikethrough, dropped as such),
# Command R (<|END_OF_TURN_TOKEN|>)
SPECIAL_TOKEN_RE = re.compile(r"<\|(?:im_start|im_end|endoftext|eot_id|end_of_text|end)\|>"
                               r"|<｜end▁of▁sentence｜>|<(?:end|start)_of_turn>|\[INST\]"
                               r"|<\|(?:END|START)_OF_TURN_TOKEN\|>")
_NAME = r"[a-zA-Z](?:_\{?\w+\}?)?"
DOUBLED_CMD_RE = re.compile(r"(?<!\\)\\(?=\\(?:boxed|fbox|frac|dfrac|tfrac|sqrt|left|right|pi|"
                             r"text|mathrm|cdot|times|infty|le|ge|leq|geq|lt|gt|neq|ne|in|cup|cap|pm|"
                             r"circ|begin|end|alpha|beta|theta|emptyset|varnothing)(?![a-zA-Z]))")


# HTML formatting some chat front-ends ask for ("<b>Answer:</b> 5", "<p>The answer is 5.</p>"):
# inline tags are dropped, block tags end a line, <sup>/<sub> are powers and indices
_HTML_INLINE_RE = re.compile(r"</?(?:b|strong|i|em|u|s|code|tt|kbd|mark|span|font|big|small)"
                             r"(?:\s[^<>\n]{0,200})?>", re.IGNORECASE)
_HTML_BLOCK_RE = re.compile(r"</?(?:p|div|center|li|ul|ol|h[1-6]|blockquote|pre)"
                            r"(?:\s[^<>\n]{0,200})?>|<(?:br|hr)\s*/?>", re.IGNORECASE)


# an HTML character reference with its semicolon: &minus; &frac12; &le; &#8722; &#x2212; (not
# a LaTeX alignment "&=" or "& b")
_HTML_ENTITY_RE = re.compile(r"&(?:[a-zA-Z]{2,8}\d{0,2}|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")


def _html_to_text(text: str) -> str:
    """'<b>Answer:</b> 5<sup>2</sup>' -> 'Answer: 5^{2}', 'Answer: &minus;5' -> 'Answer: −5'
    (text without '<' or '&' is returned as is); struck-out text ('<del>6</del>') is withdrawn
    ('<s>', a tokenizer's begin-of-text mark too, is not read as strike-through)."""
    if "<" in text:
        text = re.sub(r"(?is)<(del|strike)>.{0,200}?</\1>", "", text)
        text = re.sub(r"(?i)<(su[pb])>([^<>\n]{0,100})</\1>", lambda m: (
            "^{" if m.group(1).lower() == "sup" else "_{") + m.group(2) + "}", text)
        text = _HTML_BLOCK_RE.sub("\n", _HTML_INLINE_RE.sub("", text))
    if "&" in text:
        text = _HTML_ENTITY_RE.sub(lambda m: html.unescape(m.group(0)), text)
    return text


def _markdown_to_text(text: str) -> str:
    """Markdown marks that would stand in the answer's place: blockquote marks ('> 5' -> '5'),
    the underline of a setext heading ('Final Answer\n===\n5'; also a rule '---'), and
    struck-out text ('~~6~~ 5' -> ' 5': what a writer strikes out is withdrawn; not LaTeX's
    spaces between two words, 'x~~=~~5')."""
    if ">" in text:
        text = re.sub(r"(?m)^[ \t]*(?:>[ \t]*)+", "", text)
    if "==" in text or "--" in text:
        text = re.sub(r"(?m)^[ \t]*(?:={3,}|-{3,})[ \t]*$", "", text)
    if "~~" in text:
        text = re.sub(r"(?<![\w}\\~])~~(?:(?!~~)[^\n]){1,200}~~(?![\w{~])", "", text)
    return text


# the label of the next part of a question between two boxes: "(a) \\boxed{5} (b) \\boxed{6}",
# "\\boxed{5}\n**Part 2:** \\boxed{6}", "\\boxed{5}; b) \\boxed{6}"
_PART_LABEL_RE = re.compile(
    r"(?i)^[\s$,;.]*(?:\\[\])]\s*)?[*_]{0,2}(?:part\s*\(?(?:[a-h]|\d{1,2}|[ivx]{1,4})\)?|"
    r"\(?(?:[a-h]|\d{1,2}|[ivx]{1,4})\))[.:]?[*_]{0,2}[\s$:]*(?:\\[\[(]\s*)?$")


def _joins(gap: str) -> bool:
    """True when the text between two boxes makes them one answer (a list), not alternatives."""
    if _BOX_GAP_RE.match(gap) or _PART_LABEL_RE.match(gap):
        return True
    t = re.sub(r"\\(?:text|mbox|textrm|mathrm)\s*\{([^{}]*)\}", r" \1 ", gap)
    t = re.sub(r"\\quad|\\qquad|\\[,;:! ]|\$|\\\(|\\\)|\\\[|\\\]|[,;]", " ", t)
    words = re.findall(r"[A-Za-z]+", t)
    return (len(t) <= 60 and len(words) <= 8 and "and" in (w.lower() for w in words)
            and not _GAP_BLOCK_RE.search(t) and bool(re.fullmatch(r"[\w\s()'=_{}^-]*", t)))


def _strip_math_delims(s: str) -> str:
    s = s.strip()
    for a, b in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(s) >= len(a) + len(b) and s.startswith(a) and s.endswith(b):
            return s[len(a):len(s) - len(b)].strip()
    return s


# the "therefore" sign, a symbol or LaTeX (also in a formula of its own: "$\\therefore$ x = 5")
_THEREFORE = r"(?:∴|\$?\\therefore(?![a-zA-Z]))[\s$]*"
_SUBJECT_IS_RE = re.compile(
    r"(?is)^(?:\*\*)?(?:(?:so|thus|therefore|hence|finally|consequently|in\s+conclusion|in\s+summary|"
    r"overall)\s*,?\s+|" + _THEREFORE + r")?"
    r"(?:(?:we|I)\s+(?:conclude|find|get|see|know|have|obtain)\s+that\s+)?"
    r"the\s+(?P<what>[^.;!?]{1,160}?)\s+(?:is|are|equals|was|will\s+be|must\s+be|=)"
    r"\s*:?\s+(?P<stmt>.+)$")


def _subject_is(x: str) -> str | None:
    """'The largest $n$ is 34' -> '34'; the subject at most 15 words and holding no verb 'is'."""
    m = _SUBJECT_IS_RE.match(x.strip())
    if (not m or len(m.group("what").split()) > 15
            or re.search(r"\b(?:is|are|was)\b", m.group("what"))):
        return None
    stmt = re.sub(r"(?i)^(?:(?:thus|therefore|hence|then|simply|exactly|just|precisely|equal\s+to|"
                  r"definitely|certainly|surely|obviously|undoubtedly|clearly|indeed|actually|"
                  r"given\s+by|found\s+to\s+be)\s*,?\s+)+", "", m.group("stmt"))
    # "The value is about 5 / at least 5 / 5 at most": a bound or an estimate, not the value
    # (math removed first: "\\max" or "\\text{under}" in a formula is no qualifier)
    if _QUALIFIER_RE.search(re.sub(_MATH_ENV, " ", stmt)):
        return None
    return None if re.match(r"(?i)(?:not|no|never)\b", stmt) else stmt


# the value first: "$x = 5$ is the answer.", "So 12 is our final answer.", "Option B is correct."
_VALUE_IS_ANSWER_RE = re.compile(
    r"(?is)^(?:\*\*)?(?:(?:so|thus|therefore|hence|finally)\s*,?\s+)?"
    r"(?:(?:option|choice)\s+(?P<letter>\(?[A-E]\)?)\s+is\s+(?:the\s+)?correct"
    r"(?:\s+(?:answer|option|choice))?"
    r"|(?P<stmt>\S.{0,200}?)\s+is\s+(?:the|our|my)\s+(?:final\s+|correct\s+)?answer)"
    r"\s*(?:\*\*)?[.!]?\s*$")


def _value_is_answer(x: str) -> str | None:
    """'$x = 5$ is the answer.' -> '$x = 5$': a value (a formula, or at most three words) said
    to be the answer, or a choice said to be correct ('5 is not the answer' and '5 or 6 is the
    answer' are none)."""
    m = _VALUE_IS_ANSWER_RE.match(x.strip())
    if m and m.group("letter"):
        return m.group("letter")
    stmt = m.group("stmt") if m else ""
    words = re.sub(_MATH_ENV, " ", stmt).split()
    if not m or len(words) > 3 or _HEDGE_RE.search(stmt) or re.search(r"(?i)\b(?:not|no)\b", stmt):
        return None
    return stmt


_CONCLUDED_RE = re.compile(
    r"(?is)^(?:\*\*)?(?:(?:so|thus|therefore|hence|finally|consequently)\s*,?\s+|" + _THEREFORE +
    ")"
    r"(?:(?:we|I)\s+(?:get|have|find|obtain)\s+(?:that\s+)?)?(?P<stmt>.+)$")


def _concluded_value(x: str) -> str | None:
    """'Therefore, $x = 5$.' -> 'x = 5': a concluding word, then one variable set to a value
    (and nothing else: 'So x = 5 and y = 3' or 'Thus 2x = 10' are no final answer)."""
    m = _CONCLUDED_RE.match(x.strip())
    stmt = _clean_statement(m.group("stmt")) if m else None
    if stmt is None or not re.fullmatch(_NAME + r"\s*=\s*[^=<>]+", stmt):
        return None
    words = re.findall(r"[a-zA-Z]{2,}", re.sub(r"\\[a-zA-Z]+", "", stmt.split("=", 1)[1]))
    if len(words) > 1 or any(w.lower() in _UNIT_BLOCK for w in words):
        return None                      # "x = 5 is not a solution": a remark, not the answer
    return None if _HEDGE_RE.search(stmt) else stmt


def _clean_statement(x: str, loose: bool = False, subject: bool = False) -> str | None:
    """The answer inside an anchored statement like 'The answer is $5$ cm.'

    `loose` (after "Final Answer:"): a statement "The volume of $V$ is 120." gives what follows
    its "is", and one with a single number and no formula ("Jane started 3 hours ago") gives it.
    `subject` (after "Answer:"): only the first of these readings, "The value is 5." -> 5 (a
    lone number in a sentence is too weak an anchor there).
    """
    t = re.sub(r"\\[{}]", "", x)
    if t.count("{") > t.count("}"):      # "The answer is \\boxed{5", "\\frac{1}{2": cut off
        return None
    x = re.sub(r"\*\*|`", "", x).strip()          # markdown bold and code marks: "is **5** cm"
    x = re.sub(r"(?i)^the\s+final\s+answer\s+is\s*:?\s*", "", x)
    # "\\text{Answer: } 5": the brace that closes the anchor's \\text; "is therefore 5", "is thus 5"
    # (a word of certainty too, "is definitely 5", "is certainly 5": it asserts, not qualifies)
    x = re.sub(r"(?i)^\}\s*|^(?:therefore|thus|hence|clearly|simply|just|exactly|indeed|"
               r"definitely|certainly|surely|obviously|undoubtedly|unquestionably|precisely|"
               r"actually|really|evidently|always)\b,?\s*", "", x)
    # a quoted answer
    x = re.sub(r'^\\?["\u201c]\s*((?:\$[^$]*\$|[^"\u201d])*?)\s*\\?["\u201d]', r"\1", x)
    if not x:
        return None
    # "not 5, it is 6" / "not 5 but 6": the value after the correction
    m = re.match(r"(?is)not\s+(?:\$[^$\n]*\$|[^,;$\n]){1,80}?\s*(?:[,;]\s*(?:but\s+)?|\s+but\s+)"
                 r"(?:(?:it|that)(?:'s|\s+is)\s+|rather\s+|instead\s+)?(?P<y>\S.*)$", x)
    if m:
        return _clean_statement(m.group("y"))
    # a math environment at the start: take its content (and adjacent ones joined by "and" / ",")
    envs = re.match(r"(" + _MATH_ENV + r"(?:\s*(?:,|\band\b|\bor\b)\s*" + _MATH_ENV + r")*)"
                    r"\s*(?P<rest>.*)$", x, re.DOTALL)
    if envs:
        parts = re.findall(r"\$\$(.+?)\$\$|\$((?:\\\$|[^$])+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]",
                           envs.group(1), re.DOTALL)
        joiners = re.findall(r"(?:\$|\\\)|\\\])\s*(,|\band\b|\bor\b)\s*(?:\$|\\\(|\\\[)",
                             envs.group(1))
        vals = ["".join(p).strip() for p in parts]
        rest = envs.group("rest").strip()
        unit = re.match(r"^([a-zA-Z]+(?:\^\d)?)(?=$|[\s.,;])", rest)     # "$5$ cm." keeps "cm"
        # "$x=2$ or $x=3$" stays an "or": a hedge for one value, the list when the gold has two
        # (as in a box, "\boxed{x = 2 \text{ or } x = 3}")
        ans = (" \\text{ or } " if "or" in joiners else ", ").join(vals)
        if (unit and len(vals) == 1
                and unit.group(1).lower() not in ("or", "and", "i", "a", "is", "as")):
            ans = f"{ans}\\text{{ {unit.group(1)}}}"
        letter = re.match(r"\(\s*[A-E]\s*\)(?=$|[\s.,;])", rest)
        if letter and len(vals) == 1:            # "$5$ (B)": the value and its choice letter
            ans = f"{ans} {letter.group(0)}"
        # "$5$ (five)", "$x = 5$ (that is, six)": a gloss that says a value must agree with it
        gloss = re.match(r"\(([^()\n]{1,80})\)(?=$|[\s.,;])", rest)
        if gloss and len(vals) == 1 and not letter and (re.search(r"\d|=", gloss.group(1)) or any(
                _cardinal([w]) is not None for w in re.findall(r"[a-z]+", gloss.group(1).lower()))):
            ans = f"{ans} {gloss.group(0)}"
        if re.match(r"(?i)^(?:or|and/or)\b", rest):
            return None
        return ans
    x = re.split(r"(?i)\s+I hope\b", x)[0]
    # "C. 5": a choice letter and its value, not a sentence that ends after "C"
    x = re.sub(r"^\(?([A-E])\)?\.\s+(?=[-+\d\\($])", r"(\1) ", x)
    # "B, i.e. 12", "option B, that is, 12": the letter, then its value said again
    x = re.sub(r"(?i)^(?:option\s+|choice\s+)?\(?([A-E])\)?\s*,?\s*(?:i\.e\.|that\s+is|namely)"
               r"\s*,?\s*(?=[-+\d\\($])", r"(\1) ", x)
    x = re.sub(r"(?<=\d)\s?(?:\.{3}|…)\s*$", r"\\ldots", x)    # "5...": the digits go on
    x = re.split(r"(?!" + _ABBREV_DOT + r")\.(?:\s|$)|[。；]|;\s|\s\(since|\s+because\b|\s+since\b|"
                 r"\s+which\b|\s+as\b", x)[0]
    # "5, and the reason is ...": a clause after a comma that names no number, formula or doubt
    # is no part of the value ("5, and it might be 6" stays two candidates)
    m = re.match(r"(?is)([^,]*),\s*(?:and|but|so|where|with|for|hence|thus|then)\b(.*)$", x)
    if m and re.search(r"[\d}]", m.group(1)) and not re.search(r"[\d$\\]", m.group(2)) and \
            not _HEDGE_RE.search(m.group(2)) and \
            not re.search(r"(?i)\b(?:might|may|could|also|another|other)\b", m.group(2)):
        x = m.group(1)
    # "5, not 6": the value, then another one denied
    m = re.fullmatch(r"(?is)([^,]*),\s*not\s+[^\s,;]{1,40}", x.rstrip(". "))
    if m and re.search(r"[\d}]", m.group(1)) and not _HEDGE_RE.search(m.group(1)):
        x = m.group(1)
    x = x.strip().rstrip(".,;:").strip().strip("*_").strip()      # "*5*", "_5_"
    if (loose or subject) and x:
        after = _subject_is(x)
        if after is not None:
            return _clean_statement(after)
    if loose and x:
        if not re.search(r"\$|\\\(|\\\[", x) and not _HEDGE_RE.search(x) \
                and not _QUALIFIER_RE.search(x) and not re.search(r"(?i)\b(?:not|never)\b|n't\b",
                                                                  x) \
                and "\\ldots" not in x:   # "not 12", "isn't 12", "5..."
            # the lone number must stand as a word: a mark glued to it qualifies it or is an
            # operator ("~42", ">42", "≥42", "42+", "42!" (a factorial), "42-ish"): no value;
            # a currency sign before it and a percent sign after it are part of it
            nums = list(re.finditer(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w.])", x))
            if len(nums) == 1 and not re.fullmatch(r"-?\d[\d,]*(?:\.\d+)?", x):
                n = nums[0]
                if re.match(r"\s|$|[.,;:)](?:\s|$)|\\?%", x[n.end():]) and \
                        re.search(r"(?:^|[\s$€£¥(])$", x[:n.start()]):
                    return n.group(0) + ("\\%" if re.match(r"\\?%", x[n.end():]) else "")
                return None
    return x or None


_TAIL_CHARS = 3000             # the last sentence / formula is looked for in this tail


def _final_sentence(text: str) -> tuple[str | None, int]:
    """An answer stated as the region's last sentence, 'Therefore, the largest $n$ is $34$.'
    (also when that sentence runs on from the previous one without a full stop)."""
    cut = max(0, len(text) - _TAIL_CHARS)
    answer, end = _final_sentence_in(text[cut:])
    return answer, (end + cut if end >= 0 else end)


def _final_sentence_in(text: str) -> tuple[str | None, int]:
    t = _FILLER_RE.sub("", text).rstrip()
    t = re.sub(r"(?<![\s*])[\s*]+$", "", t)     # (only where a run starts: no quadratic scan)
    # (a dollar sign before a number, "$12.50", is a currency: no formula opens there)
    parts = list(re.finditer(r"(?:" + _MATH_ENV + r"|[^.!?\n$]|\.(?=\d)|\.(?!\s)|\$(?=\d))+[.!?]*",
                             t, re.DOTALL))
    if not parts:
        return None, -1
    last = parts[-1]
    sentence = last.group(0)
    stmt = _subject_is(sentence) or _concluded_value(sentence) or _value_is_answer(sentence)
    if stmt is None:                     # "... P(A) = 2/3 Therefore, the probability is 2/3."
        starts = [m.start() for m in re.finditer(
            r"(?<![\w$])(?:So|Thus|Therefore|Hence|Finally|Consequently|The)\b", sentence)]
        for s in reversed(starts):
            stmt = _subject_is(sentence[s:]) or _concluded_value(sentence[s:])
            if stmt is not None:
                break
    if stmt is None:
        return None, -1
    return _clean_statement(stmt), last.end()


# A period that ends an abbreviation, not a sentence: "Rs. 500", "No. 5", "Mar. 5", "approx. 5",
# "Fig. 3", "Eq. 2", "vs. 6" (before a number or a formula), "i.e." and "e.g." (before anything)
_ABBREVIATIONS = ("Rs", "No", "Nos", "Nr", "approx", "ca", "vs", "cf", "Fig", "Eq", "Ex", "Prob",
                  "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov",
                  "Dec", "St", "Dr", "Mr", "Mrs", "Ms", "Opt", "Q")
_ABBREV_DOT = (r"(?i:\.(?:(?<=\bi\.e\.)|(?<=\be\.g\.))(?=\s)|\.(?:"
               + "|".join(r"(?<=\b" + a + r"\.)" for a in _ABBREVIATIONS)
               + r")(?=[ \t]+[-+\d$\\(]|\d))")
_SENTENCE_RE = re.compile(r"(?:" + _MATH_ENV + r"|(?=" + _ABBREV_DOT + r")\.|[^.!?\n$]|\.(?=\d))*",
                          re.DOTALL)


# a statement that judges the answer instead of giving it: "This answer is correct."
_ASSESSMENT_RE = re.compile(r"(?i)(?:(?:also|indeed|definitely|clearly)\s+)?(?:correct|right|valid|"
                            r"verified|confirmed|consistent|reasonable|plausible|sensible|accurate)")


def _anchors(text: str) -> list[re.Match]:
    """Every anchored statement, also one that starts inside the statement of another on its
    line ('The answer is 5. Final answer: 6': the statement regex runs to the end of the line)."""
    out = []
    for m in _ANCHOR_RE.finditer(text):
        out.append(m)
        while m.group("stmt") is not None:
            m = _ANCHOR_RE.search(text, m.start("stmt"), m.end())
            if m is None:
                break
            out.append(m)
    return [m for m in out if m.group("res") is None or m.group("ls") is not None]


def _last_anchor(text: str) -> tuple[int, str | None, int, bool] | None:
    """The last anchored statement: (start, answer, end of its sentence, is a 'Final Answer').
    One that only judges an earlier one ('The answer is 12.\nThis answer is correct.') is
    passed over."""
    for m in reversed(_anchors(text)):
        got = _read_anchor(text, m)
        if not (got[1] and _ASSESSMENT_RE.fullmatch(got[1])):
            return got
    return None


def _read_anchor(text: str, last: re.Match) -> tuple[int, str | None, int, bool]:
    final = last.group("stmt") is not None and last.group("fin") is not None
    if last.group("tag") is not None:
        # "<answer>The answer is 5.</answer>": a statement inside the tags is read as one
        # outside them would be (boxes inside are found as boxes of the whole region) and
        # withdrawn by an admission of error after it, also inside the tags
        inner = last.group("tag")
        if "<answer>" not in inner.lower() and _ANCHOR_RE.search(inner):
            got = extract(inner)[0]
        else:
            got = _clean_statement(inner, subject=True)
        return last.start(), got, last.end(), True
    if last.group("hash") is not None:
        return last.start(), _clean_statement(last.group("hash")), last.end(), True
    if last.group("json") is not None:
        value = last.group("json")
        if value[0] in "\"'":
            value = value[1:-1].replace("\\\\", "\\").replace("\\" + value[0], value[0])
        return last.start(), _clean_statement(value), last.end(), True
    if last.group("env") is not None:
        return last.start("env"), _clean_statement(last.group("env")), last.end(), False
    if last.group("next") is not None:
        return last.start(), _clean_statement(last.group("next"), loose=True), last.end(), True
    if last.group("cell") is not None:
        return last.start(), _clean_statement(last.group("cell")), last.end(), False
    end = _SENTENCE_RE.match(text, last.start("stmt")).end()    # what follows may retract it
    sep = last.group("sep").lower()
    # "The answer would be 5 if ...", "If the price were 10, the answer would be 13": conditional
    begin = max(last.start() - 300, *(text.rfind(c, 0, last.start()) + 1 for c in ".!?\n"))
    if sep.startswith("would") and re.search(r"(?i)\b(?:if|unless|were|had)\b",
                                             text[begin:last.start()] + last.group("stmt")):
        return last.start(), None, end, final
    # "Answer: The value is 5." reads as "The answer is 5" (not after "The answer is ...")
    subject = not re.match(r"is|would|should|must|will", sep)
    return (last.start(), _clean_statement(last.group("stmt"), loose=final, subject=subject),
            end, final)


def _extract_full(text: str, lenient: bool = False, retract: bool = True
                  ) -> tuple[str | None, list[str], str]:
    """(final answer, other boxes that must agree with it, how it was found) for a region.

    The last box wins, with the boxes just before it that `_joins` to it, unless a 'Final
    Answer:' / '####' / '<answer>' statement holding a value follows it. Boxes before an explicit
    self-correction (`_CORRECTION_RE`) are withdrawn; a self-correction after the final answer
    withdraws it (`retract`). Without a box: the last anchored statement, then the region's last
    sentence when it reads "the ... is X"; with `lenient`, then the last formula or number.
    How: 'box', 'anchor', 'sentence', 'lenient' or '' (nothing found).
    """
    boxes = find_boxes(text)
    anchor = _last_anchor(text)
    later = None
    if anchor and boxes and not (anchor[0] >= boxes[-1][1] and anchor[3] and anchor[1]
                                 and re.search(r"[\d$\\]", anchor[1])):
        if (anchor[0] >= boxes[-1][1] and anchor[1] and re.search(r"[\d$\\]", anchor[1])
                and not re.search(r"[a-zA-Z]{2,}", re.sub(r"\\[a-zA-Z]+", "",
                                                          normalize_answer(anchor[1])))):
            later = anchor[1]          # "\boxed{5} ... Answer: 6": a value after the box competes
        anchor = None                            # the box is the answer; the anchor is commentary
    if boxes and anchor is None:
        group = [boxes[-1]]
        for b in reversed(boxes[:-1]):
            if _joins(text[b[1]:group[0][0]]):
                group.insert(0, b)
            else:
                break
        start, end, how = group[0][0], group[-1][1], "box"
        earlier = boxes[:len(boxes) - len(group)]
        answer = ", ".join(_strip_math_delims(c) for _, _, c in group)
        if len(group) > 1 and all(_PART_LABEL_RE.match(text[a[1]:b[0]])
                                  for a, b in zip(group, group[1:])):
            # the boxes of labelled parts: their order is the labels' ("(a) 5, (b) 6")
            answer = ", ".join(f"({_PART_NAMES[0][i]}) {_strip_math_delims(c)}"
                               for i, (_, _, c) in enumerate(group[:8]))
    elif anchor is not None:
        start, answer, end, _ = anchor
        earlier, how = boxes, "anchor"
    else:
        answer, end = _final_sentence(text)
        start, earlier, how = end, [], "sentence"
    fix = None
    if earlier:                                  # only boxes can be withdrawn
        lo = earlier[0][1]
        for fix in _CORRECTION_RE.finditer(text, lo, max(start, 0)):
            pass
        for weak in _WITHDRAW_RE.finditer(text, lo, max(start, 0)):
            if fix is None or weak.end() > fix.end():
                fix = weak
    if fix is not None:
        withdrawn = [b for b in earlier if b[0] < fix.start()]
        if withdrawn and not _WITHDRAW_HEDGE_RE.search(text, withdrawn[0][1]):   # nothing hedges
            earlier = [b for b in earlier if b[0] > fix.end()]
    others = [_strip_math_delims(c) for _, _, c in earlier] + ([later] if later else [])
    # every "<answer>" tag and "####" line states the final answer: one with another value
    # competes ("<answer>6</answer> ... \\boxed{5}", "<answer>5</answer><answer>6</answer>")
    # unless a self-correction stands between it and the final answer
    # and so does every "Final Answer:" statement ("Final answer: 5 ... Final answer: 6")
    # and so is an "Answer:" line ("Answer: 5\nAnswer: 6": the label opening its line; not
    # "Result:", which also labels the steps of a solution)
    formal = [m for m in _anchors(text) if m.start() != start
              and (m.group("tag") is not None or m.group("hash") is not None
                   or m.group("fin") is not None
                   or (m.group("ls") is not None and m.group("res") is None
                       and (m.group("sep") or "").strip() == ":"))][-20:]
    fixed = max((x.start() for r in (_CORRECTION_RE, _WITHDRAW_RE)
                 for x in r.finditer(text, 0, max(start, 0))), default=-1) if formal else -1
    for m in formal:
        stated = _read_anchor(text, m)[1] if m.end() > fixed else None
        # ("Answer: not 6" denies a value; it states none)
        if stated and re.search(r"[\d$\\]", stated) and not re.match(r"(?i)\s*not\b", stated):
            others.append(stated)
    if answer is None and lenient:
        (answer, end), how = _lenient_answer(text), "lenient"
    if answer is None:
        return None, [], ""
    if retract and (_retracted(text, end, answer) or _doubted(text, start, end)
                    or _unable(text, start)):
        return None, [], ""
    if how in ("box", "anchor"):                 # "\\boxed{5}. So 6 apples.": two answers
        key = normalize_answer(answer)
        others += [v for v in _restated(text, end) if normalize_answer(v) != key]
    # (an anchored statement is read to its sentence's end, past "; double-checking, 43": its
    # competitors are looked for from its start; and "Both 5 and 6 work, so \\boxed{5}" offers
    # two values in the answer's own sentence, before it)
    return answer, others + _competitors(text, start if how == "anchor" else end, answer) \
        + _both_before(text, start, answer), how


# A later sentence that denies a value: "the answer is not 5", "Answer: not 5", "5 is not the
# answer", "5 is incorrect". It withdraws the final answer when it names that answer; "the
# answer is not 6" after \\boxed{5} rules out another value and leaves 5 standing. (The second
# pattern starts only where a word starts: inside a long run of symbols it would be quadratic.)
_DENIAL_VALUE = r"(?P<x>\$[^$\n]{1,80}\$|\\\([^\n]{1,80}?\\\)|-?\d[\d,]*(?:\.\d+)?|[^\s.,;:!?()]+)"
_DENIAL_ADV = r"(?:(?:definitely|certainly|clearly|actually|really|surely|also)\s+)?"
_NOT = r"(?:(?:is|was)\s+" + _DENIAL_ADV + r"not|isn't|wasn't)"
_DENIAL_RES = (
    re.compile(r"(?i)\b(?:answer|result|value|solution)(?:\s+(?:" + _NOT + r"|(?:can\s*not|can't|"
               r"must\s+not|should\s+not)\s+be)|[*_]*\s*:\s*[*_]*\s*not)\s+(?:equal\s+to\s+)?"
               + _DENIAL_VALUE),
    re.compile(r"(?i)(?<![^\s(])" + _DENIAL_VALUE + r"\s+(?:" + _NOT + r"\s+(?:the\s+|a\s+)?"
               r"(?:correct\s+|right\s+|final\s+)?(?:answer|solution|result)|(?:is|was)\s+"
               + _DENIAL_ADV + r"(?:wrong|incorrect))\b"))


# A sentence after the final answer that offers another value as possible too: "\\boxed{12},
# though 6 is also possible", "6 also works", "it could (also) be 14", "it might be 14", "But
# wait, 13.", "(or) maybe (it is) 13", "Possibly 13.". That value competes with the answer (a
# hedge); one said under a condition ("if the price were 10, the answer would be 13") does not.
_COMPETING_VALUE = (r"(?P<v>\$[^$\n]{1,80}\$|\\\([^\n]{1,80}?\\\)"
                    r"|(?<![\d,.])-?\d[\d,]*(?:\.\d+)?(?:/\d+)?)")
_COMPETING_RE = re.compile(
    r"(?i)" + _COMPETING_VALUE + r"\s+(?:(?:is|would|might|could|may)\s+)?(?:be\s+)?"
    r"(?:also|equally)\s+"
    r"(?:be\s+)?"
    r"(?:possible|valid|works?|correct|right|satisfies|(?:a|an|another)\s+(?:possible\s+|valid\s+)?"
    r"(?:answer|solution|option))\b"
    r"|\b(?:(?:could|might|may)\s+(?:also\s+|well\s+|even\s+)?|can\s+also\s+)be\s+"
    + _COMPETING_VALUE.replace("?P<v>", "?P<w>") +
    r"|\bbut\s+wait\b[\s,:;.!-]*(?:(?:it'?s|maybe|perhaps|actually|the\s+answer\s+is)\s+)?"
    + _COMPETING_VALUE.replace("?P<v>", "?P<x>") + r"(?=\s*(?:[.!?]|$))"
    r"|\b(?:(?:or\s+)?(?:maybe|perhaps|possibly|probably)|alternatively)\b,?\s+"
    r"(?:(?:it|that|the\s+answer)(?:'s|\s+is|\s+was|\s+would\s+be)\s+)?"
    + _COMPETING_VALUE.replace("?P<v>", "?P<y>") +
    # "Also, 6 works.", "Both 5 and 6 work." (either of the two may be the other value)
    r"|\balso,?\s+" + _COMPETING_VALUE.replace("?P<v>", "?P<z>") + r"\s+(?:works?|satisfies|"
    r"is\s+(?:possible|valid|correct|right|a\s+(?:valid\s+|possible\s+)?(?:solution|answer)))\b"
    r"|\bboth\s+" + _COMPETING_VALUE.replace("?P<v>", "?P<b1>") + r"\s+and\s+"
    + _COMPETING_VALUE.replace("?P<v>", "?P<b2>") + r"\s+(?:work|satisfy|are\s+(?:possible|valid|"
    r"correct|right|(?:valid\s+|possible\s+)?(?:solutions|answers)))\b"
    # a recheck that lands on another value: "double-checking, 43.", "rechecking gives 43",
    # "verifying, I get 43", "on second thought, 43" (the value ends the sentence; "Double-check:
    # 6 * 7 = 42." states no other value)
    r"|\b(?:double[- ]?check\w*|re-?check\w*|verif(?:y|ying|ied|ication)|on\s+second\s+thought|"
    r"on\s+reflection|re-?comput\w*|re-?calculat\w*|recount\w*)\b[\s,:;-]*(?:(?:I\s+|we\s+)?"
    r"(?:get|got|find|found|obtain|obtained|have)\s+|(?:it\s+|this\s+)?(?:gives?|yields?|shows?)\s+|"
    r"(?:it(?:'s|\s+is)|the\s+answer\s+is)\s+)?"
    + _COMPETING_VALUE.replace("?P<v>", "?P<k>") + r"(?=\s*(?:[.!?)]|$))"
    # another value called the (right) one: "6 is the correct answer", "6 is the answer", "the
    # correct value is 6", "it should be 6", "it must be 6 though"
    r"|" + _COMPETING_VALUE.replace("?P<v>", "?P<c1>") + r"\s+is\s+(?:the\s+|a\s+|my\s+)?"
    r"(?:(?:correct|right|true|actual|real|final)\s+)?(?:answer|value|result|solution)\b"
    r"|\b(?:the\s+)?(?:correct|right|true|actual|real)\s+(?:answer|value|result|solution|total)\s+"
    r"(?:is|would\s+be|should\s+be)\s+" + _COMPETING_VALUE.replace("?P<v>", "?P<c2>") +
    r"|\b(?:it|this|that|the\s+answer)\s+(?:should|must|has\s+to|ought\s+to)\s+(?:really\s+|actually\s+)?"
    r"be\s+" + _COMPETING_VALUE.replace("?P<v>", "?P<c3>") +
    # a value after a word that amends ("Actually 6.", "I meant 6", "Sorry, 6.", "Typo: 6",
    # "Edit: it's 6", "P.S. it's actually 6"), alone to the end of its sentence
    r"|(?:\b(?:actually|I\s+meant|sorry|typo|edit|update|oops)\b|\bP\.\s?S\.)[\s,:;.-]*"
    r"(?:(?:it'?s|it\s+is|the\s+answer\s+is|that\s+should\s+be)\s+)?(?:actually\s+)?"
    + _COMPETING_VALUE.replace("?P<v>", "?P<c4>") + r"(?=\s*(?:[.!?]|$))"
    # a line that is only a bold value, or "Final: 6" ("**6**", "**Final:** 6" after the box)
    r"|(?:^|(?<=\n))[ \t]*(?:\*\*[ \t]*(?:final[ \t]*:[ \t]*)?"
    r"|[*_]{0,2}final[*_]{0,2}[ \t]*:[*_]{0,2}[ \t]*)"
    + _COMPETING_VALUE.replace("?P<v>", "?P<c5>") + r"[ \t]*(?:\*\*)?[ \t.]*(?=\n|$)"
    # an alternative under a condition on the answer: "unless it's 6", "otherwise 6", "or else
    # 6", and a question that offers another: "shouldn't it be 6?", "isn't it 6?", "or is it 6?"
    r"|\b(?:unless|otherwise|or\s+else)\b,?\s+(?:(?:it|that|the\s+answer)(?:'s|\s+is|\s+would\s+be|"
    r"\s+will\s+be)\s+|(?:it|the\s+answer)\s+(?:is|would\s+be)\s+)?"
    + _COMPETING_VALUE.replace("?P<v>", "?P<u>") +
    r"|\b(?:shouldn't|should\s+not|wouldn't|isn't|or\s+is|could)\s+(?:it|the\s+answer|that|this)"
    r"\s+(?:be\s+|equal\s+)?" + _COMPETING_VALUE.replace("?P<v>", "?P<q>") + r"(?=\s*\?)")


# A short concluding sentence after the final box that says its value again: "So 6 apples.",
# "Therefore, Tom has 6 apples.", "Thus $x = 6$." (the value right after the concluding word or
# after a verb that states it; at most eight words and one value). Another value there is a
# second final answer: the box and the restatement disagree, which is a hedge.
_RESTATED_RE = re.compile(
    r"(?i)(?:^|(?<=[.!?\n]))[ \t*]*(?:(?:so|thus|therefore|hence|in\s+total|altogether|"
    r"in\s+conclusion|in\s+summary|in\s+short|to\s+conclude|to\s+summari[sz]e|overall|"
    r"equivalently|in\s+other\s+words|that\s+is)\b|i\.e\.),?[ \t]+"
    r"(?P<s>[^.!?\n$]{0,80}?(?:\b(?:is|are|was|were|equals|has|have|had|gets?|gives?|makes?)"
    r"[ \t]+|=[ \t]*)?" + _COMPETING_VALUE.replace("?P<v>", "?P<r>")[:-1] + r"(?:[ \t]*\\?%)?)"
    r"[^.!?\n]{0,80})")


def _restated(text: str, end: int) -> list[str]:
    """The values of `_RESTATED_RE` sentences in the 600 characters after `end` (all of them
    where the sentence offers several with "or": "So 5 or 6 apples.")."""
    out = []
    for m in _RESTATED_RE.finditer(text, end, end + 600):
        rest = m.group("s")[m.end("r") - m.start("s"):]
        more = [x.group(0) for x in re.finditer(_COMPETING_VALUE, rest)]
        if len(m.group("s").split()) <= 8 and (not more or re.search(r"\bor\b", rest)) \
                and m.start("r") - m.start("s") <= 40 \
                and not re.search(r"(?i)\b(?:not|no|never|if|unless|when|than|step|part|case|"
                                  r"extraneous|reject\w*|discard\w*|exclud\w*|invalid)\b|n't\b",
                                  m.group("s")):
            out += [_strip_math_delims(v) for v in [m.group("r")] + more]
    return out


def _competitors(text: str, end: int, answer: str) -> list[str]:
    """Values that a sentence after the final answer (from `end`) offers as possible too and that
    are neither the answer nor one of its elements (`_COMPETING_RE`)."""
    key = normalize_answer(answer)
    known = {key, *_structure(key)[1]}
    out = []
    for m in _COMPETING_RE.finditer(text, end):
        begin = max(m.start() - 300, *(text.rfind(c, 0, m.start()) + 1 for c in ".!?\n"))
        stop = min([len(text), m.end() + 300] + [i for i in (text.find(c, m.end()) for c in ".!?\n")
                                                 if i >= 0])
        if (re.search(r"(?i)\b(?:if|unless|were|had|suppose|assuming)\b", text[begin:m.start()])
                and not m.group("u")) \
                or re.search(r"(?i)\b(?:extraneous|reject\w*|discard\w*|exclud\w*|invalid|"
                             r"not\s+(?:valid|allowed|possible|in\s+the\s+domain)|but\s+(?:only|not)|"
                             r"fails?|violates?|does(?:n't|\s+not)\s+(?:work|satisfy|hold))\b",
                             text[m.end():stop]):
            continue                     # "... 3 is also a solution, but it is extraneous"
        for v in m.group("v", "w", "x", "y", "z", "b1", "b2", "k", "u", "q", "c1", "c2", "c3",
                         "c4", "c5"):
            if v and normalize_answer(_strip_math_delims(v)) not in known:
                out.append(_strip_math_delims(v))
        if len(out) >= 10:
            break
    return out


def _both_before(text: str, start: int, answer: str) -> list[str]:
    """The other value of "both 5 and 6 work / are solutions" in the final answer's own sentence
    before it (`_COMPETING_RE`'s "both" reading): two values offered, one of them boxed."""
    start = min(max(start, 0), len(text))
    begin = max([text.rfind(c, 0, start) + 1 for c in ".!?\n"] + [start - 300, 0])
    key = normalize_answer(answer)
    known = {key, *_structure(key)[1]}
    return [_strip_math_delims(v) for m in _COMPETING_RE.finditer(text[begin:start])
            for v in m.group("b1", "b2")
            if v and normalize_answer(_strip_math_delims(v)) not in known]


def _doubted(text: str, start: int, end: int) -> bool:
    """An admission of doubt (`_DOUBT_RE`) in the final answer's own sentence, before or inside
    it: "My best guess is \\boxed{5}", "I'm not sure, but the answer is 5", "The answer is 5,
    but I'm not sure." (a doubt after it is a retraction, `_retracted`)."""
    start = min(max(start, 0), end)
    begin = max([i + len(c) for c in (". ", "! ", "? ", "\n") for i in [text.rfind(c, 0, start)]
                 if i >= 0] + [0])
    return bool(_DOUBT_RE.search(text, begin, end))


def _unable(text: str, start: int) -> bool:
    """A statement of inability (`_INABILITY_RE`) anywhere before the final answer: "I cannot
    determine the answer. \\boxed{5}" is a guess. Not one under a condition in its own sentence
    ("Without c, I cannot determine the answer; but c = 3 ...", "if ... alone", "directly")."""
    for m in _INABILITY_RE.finditer(text, 0, max(start, 0)):
        begin = max([text.rfind(c, 0, m.start()) + 1 for c in ".!?\n"])
        if not re.search(r"(?i)\b(?:without|unless|until|if|alone|directly|yet|from\s+(?:this|that|"
                         r"these|the\s+\w+)\s+alone)\b", text[begin:m.start()]):
            return True
    return False


# A last word after the final answer that leaves it open: the region ends on "Wait." / "Hmm." /
# "Hold on." / "I think." (a sentence of its own, nothing after it): the model stopped while
# doubting ("Hmm, yes, that's right." ends no doubt).
_OPEN_END_RE = re.compile(r"(?i)(?:^|[.!?\n])[ \t*_]*(?:wait|hmm+|hold\s+on|hang\s+on|I\s+think|"
                          r"I\s+believe|I\s+suppose)[ \t]*[.!…,]*[ \t*_]*$")


def _retracted(text: str, end: int, answer: str) -> bool:
    """An admission of error after the final answer (`_CORRECTION_RE`), or a sentence after it
    that denies its value ('\\boxed{5} ... Note: the answer is not 5.')."""
    if _CORRECTION_RE.search(text, end) or _OPEN_END_RE.search(text[end:].rstrip()[-40:]):
        return True
    # the denied value with the unit word after it: "not 5 m" leaves "\\boxed{5 cm}" standing
    said = {m.group("x") + re.match(r"(?:\s*\\text\s*\{)?\s*[a-zA-Z]*\}?(?:\^\{?\d\}?|[²³])?",
                                    text[m.end():]).group(0)
            for r in _DENIAL_RES for m in r.finditer(text, end)}
    if not said:
        return False
    key, unit = normalize_answer(answer), _unit_key(answer)
    value = exact_number(key)
    for x in list(said)[:50]:                    # (each distinct value once, and not thousands)
        denied = normalize_answer(_strip_math_delims(x))
        if unit and _unit_key(x) not in (None, unit):     # "not 5 m^2"; "not 50 mm" denies 5 cm
            if _converted_equal(answer, x):
                return True
            continue
        if denied == key or (value is not None and exact_number(denied) == value):
            return True
    return False


def extract(text: str, lenient: bool = False, retract: bool = True) -> tuple[str | None, list[str]]:
    answer, others, _ = _extract_full(text, lenient, retract)
    return answer, others


def _lenient_answer(text: str) -> tuple[str | None, int]:
    """The last formula or number of a region with no box and no anchor (evaluation only)."""
    cut = max(0, len(text) - _TAIL_CHARS)
    answer, end = _lenient_answer_in(text[cut:])
    return answer, (end + cut if end >= 0 else end)


def _lenient_answer_in(text: str) -> tuple[str | None, int]:
    t = _FILLER_RE.sub("", text).strip()
    bare = re.sub(_MATH_ENV, " ", t, flags=re.DOTALL)
    if t and len(t) <= 120 and not re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}",
                                             re.sub(r"\\[a-zA-Z]+", "", bare)):
        return _strip_math_delims(t.rstrip(".").strip()), len(text)   # the region is one formula
    envs = list(re.finditer(_MATH_ENV, t, re.DOTALL))
    nums = list(re.finditer(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:/\d+)?"
                            r"(?:\s*(?:%|percent\b|pct\b))?", t))
    if envs and not (nums and nums[-1].start() > envs[-1].end()):
        return _strip_math_delims(envs[-1].group(0)), envs[-1].end()
    if nums:
        return nums[-1].group(0).rstrip(","), nums[-1].end()
    return None, -1


def extract_answer(text: str) -> str | None:
    """The final answer in `text` (already cut to the answer region), or None.

    Rules: the last `\\boxed{}`/`\\fbox{}` wins (unless a "Final Answer:", "####" or "<answer>"
    statement holding a value follows it); boxes separated only by commas, spaces, "and" (also
    inside a short phrase: "for part (a) and"), math delimiters or the label of the next part
    ("(a) \\boxed{5} (b) \\boxed{6}", "Part 2:") form one list. Other boxes
    must hold an equivalent value, else the boxes hedge (`verify_math` checks that), unless a
    self-correction ("I made an error", "that's wrong") stands between them and the last one
    and nothing after them hedges. Without a box only an anchored final statement counts (the
    last one, also on the line of another; not one that only judges the answer, "This answer is
    correct"): "The answer is X" (also "should / must / will be X", "would be X" without "if";
    "is not Y, it is X" gives X), "Final Answer: X" (also "Final Answer: The largest $n$ is
    X"), "Answer: X" (also "Answer: The value is X", not "... is about X"), the anchor word with
    another separator ("Answer = X", "Final answer → X", "=> X"; "Answer - X", "Answer — X"
    only at the start of a line or after "final answer") and markdown emphasis ("__Answer:__
    X", "*Answer*: X"), a heading "**Final Answer**" with X on the next line, a table row
    "| Answer | X |", "#### X", "<answer>X</answer>" (a statement inside read as outside), or a
    last sentence "Therefore, the largest $n$ is X" or "Therefore, $x = X$". "Answer -5" is
    neither "Answer: 5" nor -5 (no answer). An admission of error after the final answer, or
    a sentence after it that denies its value ("Note: the answer is not 5"), withdraws it.

    >>> extract_answer("**Answer** — 5")
    '5'
    >>> extract_answer("Answer: The value is $7$.")
    '7'
    >>> extract_answer("Answer: The value is about 7.")    # a sentence, equal to no number
    'The value is about 7'

    >>> extract_answer("so \\\\boxed{3}, \\\\boxed{4}")
    '3, 4'
    >>> extract_answer("The answer is $\\\\frac{1}{2}$.")
    '\\\\frac{1}{2}'
    >>> extract_answer("Final Answer: The largest $n$ is 34.")
    '34'
    >>> extract_answer("x is probably 7") is None
    True
    >>> extract_answer("The answer is 5. Wait, I made an error.") is None
    True
    """
    return extract(text)[0]


def _other_boxes(text: str) -> list[str]:
    """Contents of boxes that are not part of the final box group and not withdrawn by a
    self-correction (for the hedge check)."""
    return extract(text, retract=False)[1]


def gold_answer(answer) -> str:
    """The gold answer string from a dataset field (GSM8K '#### 1,234', a MATH solution with a
    box, a 'Final Answer:' line or 'The answer is X.', or a bare answer, also in markdown bold or
    code: '**5**', '`5`')."""
    if isinstance(answer, (list, tuple)):
        return ", ".join(str(a) for a in answer)
    s = DOUBLED_CMD_RE.sub("", str(answer).strip())
    if "####" in s:
        return s.rsplit("####", 1)[1].strip()
    if "\\boxed" in s or "\\fbox" in s:
        got = extract(s, retract=False)[0]
        if got is not None:
            return got
    if re.search(r"(?i)\banswer\b", s):   # a solution, or "The answer is 12.", as the gold
        got = extract(s, retract=False)[0]
        if got is not None:
            return got
    # a bare answer in markdown bold or code ("**5**", "`5`"), or ending in a LaTeX line break
    s = re.sub(r"(?s)^(\*\*|__|`)(.+)\1$", r"\2", s)
    while s.endswith("\\\\"):
        s = s[:-2].rstrip()
    return _strip_math_delims(s)


# ---------- normalisation -----------------------------------------------------------

_UNICODE = {
    "−": "-", "–": "-", "—": "-", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\ufe63": "-",
    "π": "\\pi ", "∞": "\\infty ", "×": "\\times ", "·": "\\cdot ",
    "⋅": "\\cdot ", "÷": "\\div ", "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "∪": "\\cup ",
    "∩": "\\cap ", "⩽": "\\le ", "⩾": "\\ge ", "≦": "\\le ", "≧": "\\ge ", "≡": "\\equiv ",
    "Ω": "\\Omega ", "\u2126": "\\Omega ",                       # the ohm sign
    "°": "^\\circ", "℃": "^\\circ C", "℉": "^\\circ F",
    "½": "\\frac{1}{2}", "⅓": "\\frac{1}{3}", "⅔": "\\frac{2}{3}",
    "¼": "\\frac{1}{4}", "¾": "\\frac{3}{4}", "θ": "\\theta ",
    "α": "\\alpha ", "β": "\\beta ", "∈": "\\in ", "ℝ": "\\mathbb{R}", "±": "\\pm ", "∓": "\\mp ",
    "⟨": "(", "⟩": ")", "∅": "\\emptyset ", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    "\u066b": ".", "\u066c": ",", "\u066a": "%",   # the Arabic decimal and thousands separators, %
    "¢": " cents",
    # floor and ceiling brackets, the fourth root
    "⌊": "\\lfloor ", "⌋": "\\rfloor ", "⌈": "\\lceil ", "⌉": "\\rceil ", "∜": "\\sqrt[4]",
}
_TEXT_CMDS = (r"(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|textnormal|operatorname|"
              r"textsuperscript|boldsymbol|pmb|bm|underline|rm|bf|emph|ensuremath|textup|textsf|"
              r"texttt|textsl|mathsf|mathtt|mathnormal)")
_UNIT_WORDS = (
    "cm|mm|km|m|meters?|metres?|centimeters?|kilometers?|inch(?:es)?|in|ft|feet|foot|yards?|yd|miles?|"
    "mi|kg|g|grams?|kilograms?|mg|lbs?|pounds?|ounces?|oz|s|sec|seconds?|min|minutes?|h|hrs?|hours?|"
    "days?|weeks?|months?|years?|dollars?|cents?|units?|sq|square|cubic|degrees?|mph|km/h|l|liters?|"
    "litres?|ml|gallons?|people|students|apples|marbles|books|items|ways|times|points|percent")
_SI_UNITS = "[JNWVK]|kJ|kW|MW|kN|Pa|kPa|Hz|kHz|MHz|mol|eV|ohms?"
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

    Handles: math delimiters, `\\left`/`\\right` (also `\\left.`, `\\bigl(`), spacing commands
    (`\\,`, `\\quad`, `\\enspace`, `\\thinspace`, a trailing `\\ `) and formatting without value
    (`\\hspace`, `\\phantom`, `\\color`, size and font switches, `\\texttt`, `\\mathsf`),
    `\\dfrac`/`\\tfrac`/`\\sfrac`/`\\nicefrac` and the brace-less `\\frac\\pi2`, `\\sqrt3`,
    `\\text{}`-style wrappers, infinity in words and code (`Infinity`, `-inf`, `oo`, `infinitely
    many`), trailing units (`\\text{ cm}`, `5 dollars`, `4 red marbles`, SI symbols in `\\text{}`:
    `5\\text{ J}`, a rate as a negative power `5 m s^{-1}`; not qualifiers such as `5 minimum`),
    currencies (`\\$`, any currency sign `€`, `₩`, a code `USD 5`, `CHF 5`),
    ordinals (`5^{th}`), degrees (`^\\circ`, `°`, `^\\circ C`, `45^o`; with minutes `30^\\circ 15'`
    -> `30.25`), percent (`\\%`, `28 percent`, `28 pct`, `per cent`: kept as a trailing `%`),
    thousands separators (`1,000`, `1\\,000`, `1{,}000`, `1,\\!000`, `1 000`; not "3, 500", which is
    two numbers), digits apart by a space (`2 1/2` a mixed number, `3 4` two numbers, never 34),
    scientific notation (`3e8` -> `3\\times10^{8}`, `1.2 x 10^3`, `5\\mathrm{E}{+}03`), repeating
    decimals (`0.\\overline{3}`, `0.(3)` -> `\\frac{1}{3}`; also a block said again before an
    ellipsis, three digits or more in all: `0.333...`, `0.1666\\ldots`; not `0.33...` or
    `3.14159...`), code and calculator spellings (`2**10`, `2^-1`, `pi/2`, `ln(e^2)`, `log2(8)`),
    a number before a parenthesised number as a product (`2(3)` -> `2\\cdot(3)`), unicode (`√2`,
    `π`, `−` and the other minus signs and hyphens, `½`, any vulgar fraction, fullwidth and
    circled digits, mathematical bold and italic letters and digits (`𝐀`, `𝟓`), the Arabic decimal
    separator `٫` and percent sign `٪`, superscript and subscript runs `x¹⁰`, `x₁₂`, the slanted
    `⩾`; emoji and other symbols are dropped), grouping braces `{{5}}` and parentheses `((5))`,
    base subscripts (`(204)_5` -> `204_{5}`; `26_{10}` -> `26`; code's `0b1010`, `0x1f` ->
    `1010_{2}`, `1F_{16}`), a modulus in any spelling (`x \\equiv 3 (mod 7)`, `3 mod 7` ->
    `3\\pmod{7}`), `\\surd 2`, a `U` between two intervals (their union), empty-set symbols
    (`\\varnothing`, `\\{\\}`, `∅` -> `\\emptyset`), siunitx `\\num{}`/`\\SI{}{}`, the rows of an
    `aligned` environment (a list), `;` as a list separator, a whole answer that is a number in
    words (`five`, `Twenty-one`, `one hundred and five`; `minus 5` is -5), a leading `Answer:` or
    `The answer is`, leading `x =` (also `x :=`), `x \\in`, `(p, q) =`, counting notations and gcd /
    lcm of integers (`{}^{10}C_3` -> `(120)`), matrix environments (all -> pmatrix but a vmatrix,
    a determinant; and so do nested lists `[[1, 2], [3, 4]]`; a vector, one row or one column, or a
    sum of unit vectors `i + 2j + 3k`, -> the tuple of its entries), the base in words
    (`101_{\\text{two}}`), a scale
    word after digits (`1.5 million` -> `1500000`, `2 dozen` -> `24`), and spaces.

    >>> normalize_answer("\\\\dfrac13")
    '\\\\frac{1}{3}'
    >>> normalize_answer("1,234")
    '1234'
    >>> normalize_answer("3, 500")
    '3,500'
    >>> normalize_answer("28 pct")
    '28%'
    >>> normalize_answer("(p,q)=(3,2)")
    '(3,2)'
    """
    return _normalize(s)


# (not "more", "less", "fewer": "5 more" answers "how many more"; "5 or more", "5 more than x"
# and "5 more or less" stay words by their "or" and "than")
_UNIT_BLOCK = {"and", "or", "not", "than", "each", "only", "all", "no", "for", "if",
               "is", "are", "of", "to", "in", "at", "on", "by", "with",
               # words that qualify the number rather than name what it counts ("5 minimum")
               "likely", "unlikely", "minimum", "maximum", "approx", "approximately", "roughly",
               "about", "around", "nearly", "almost", "ish", "so", "least", "most",
               "plus", "minus", "over", "under", "estimated", "unless", "except", "when",
               "rounded", "truncated"}


_OCLOCK_RE = re.compile(r"(?i)(?<![\d:])(\d{1,2})\s*o['’]\s?clock\b")
_MERIDIEM_RE = re.compile(r"(?i)(?<=\d)\s*([ap])\.\s?m\.?(?![a-z])")   # a.m., p.m. after a time


def _strip_unit_words(s: str) -> str:
    """'4 red marbles' -> '4', '12 square units' -> '12', '3\\pi square units' -> '3\\pi': words
    after a plain number or a multiple of pi (one hyphenated word too: '5 kilowatt-hours')."""
    m = re.match(r"^(?P<num>.*?(?:[\d}]|\\pi))\s*"
                 r"(?P<unit>(?:[a-zA-Z]{2,}(?:-[a-zA-Z]{2,})?|[a-zA-Z]+/[a-zA-Z]+)\.?"
                 r"(?:\s*\^\s*\{?\d\}?)?(?:\s+"
                 r"(?:[a-zA-Z]+|[a-zA-Z]+/[a-zA-Z]+)\.?(?:\s*\^\s*\{?\d\}?)?){0,3})\s*$", s)
    if not m:
        return s
    num, words = m.group("num"), re.findall(r"[a-zA-Z]+", m.group("unit"))
    if re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", num)) or not re.search(r"\d|\\pi", num):
        return s
    if any(w.lower() in _UNIT_BLOCK or w.lower() in _FUNC_WORDS for w in words):
        return s
    if any(len(w) == 1 and not _known_unit(w) for w in words[1:]):     # "5 sq m", not "5 ab c"
        return s
    # up to three letters right after the digits are a product of variables ("2xy", "3ab^2")
    # unless they name a known unit ("5cm", "3pm") or an ordinal ("5th term"); a longer word is
    # a noun ("12apples")
    if m.end("num") == m.start("unit") and len(words[0]) <= 3 and not _known_unit(words[0]) \
            and words[0].lower() not in ("st", "nd", "rd", "th"):
        return s
    return num


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉₊₋", "0123456789+-")


_SCALE_WORDS = {"hundred": 100, "thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9,
                "trillion": 10 ** 12, "quadrillion": 10 ** 15, "dozen": 12,
                # the Indian scale words and the financial abbreviations: 5 lakh = 500000, 2 crore
                # = 20000000, 3 bn = 3000000000, 4 mn = 4000000 (a bare "k" or "M" after digits
                # stays a product or a unit: 5K is 5 kelvin)
                "lakh": 10 ** 5, "lakhs": 10 ** 5, "lac": 10 ** 5, "lacs": 10 ** 5,
                "crore": 10 ** 7, "crores": 10 ** 7, "bn": 10 ** 9, "mn": 10 ** 6}


def _scaled(m: re.Match) -> str:
    """'1.5 million' -> '1500000', '2 hundred thousand' -> '200000', '2 dozen' -> '24' (exact
    decimals)."""
    value = Decimal(m.group(1))
    for word in m.group(2).split():
        value *= _SCALE_WORDS[word.lower()]
    return format(value.normalize(), "f")


def _degrees_minutes(m: re.Match) -> str:
    """'30^\\circ 15\'' -> '30.25^\\circ', '10^\\circ 20\'' -> '\\frac{31}{3}^\\circ' (exact)."""
    v = Fraction(m.group(1)) + Fraction(m.group(2)) / 60 + Fraction(m.group(3) or 0) / 3600
    n, d = v.numerator, v.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d == 1:                                   # a terminating decimal
        text = format(Decimal(v.numerator) / Decimal(v.denominator), "f")
    else:
        text = f"\\frac{{{n}}}{{{v.denominator}}}"
    return text + "^\\circ"


def _unit_vectors(s: str) -> str:
    """'i+2j+3k' -> '(1,2,3)', '3\\hat{i} - 4\\hat{j}' -> '(3,-4)': a sum of multiples of two or
    three unit vectors, each at most once, as the tuple of its components (three when k is
    there); anything else ('2i', '3+4i') is returned as is."""
    t = re.sub(r"\s+", "", re.sub(r"\\(?:hat|vec)\s*\{?\s*([ijk])\s*\}?", r"\1", s))
    comps = {}
    for term in filter(None, re.split(r"(?=[-+])", t)):
        m = re.fullmatch(r"([-+]?)(.*?)(?:\\cdot)?([ijk])", term)
        coef = m.group(2) if m else ""
        if not m or m.group(3) in comps or (comps and not m.group(1)) or (coef and exact_number(
                coef) is None and not re.fullmatch(r"\\frac\{\d+\}\{\d+\}", coef)):
            return s
        comps[m.group(3)] = (m.group(1) if m.group(1) == "-" else "") + (coef or "1")
    if len(comps) < 2:                           # "2i" alone is imaginary
        return s
    axes = "ijk" if "k" in comps else "ij"
    return "(" + ",".join(comps.get(a, "0") for a in axes) + ")"


def _base_numeral(m: re.Match) -> str:
    """'1f', '16' -> '1F_{16}': a numeral and its base subscript; small letters are digits only
    in hexadecimal, as code writes it ('2x_{12}', '3b_{12}' are 2 x_{12} and 3 b_{12})."""
    digits, base = m.group(1), m.group(2)
    if digits != digits.upper() and not (base == "16" and re.fullmatch("[0-9a-f]+", digits)):
        return m.group(0)
    return digits.upper() + "_{" + base + "}"


def _french_interval(m: re.Match) -> str:
    """']2, 5]' -> '(2, 5]': French brackets in the usual notation (an interval in it unchanged)."""
    space, a, lo, hi, b = m.groups()
    return space + ("(" if a == "]" else "[") + lo + "," + hi + (")" if b == "[" else "]")


def _unicode_forms(s: str) -> str:
    """Unicode spellings no table lists one by one: fullwidth forms ('－５' -> '-5'), every vulgar
    fraction ('⅕' -> '\\frac{1}{5}', '2⅜' a mixed number), superscript runs ('x¹⁰' -> 'x^{10}',
    before the table reads '²' alone) and subscript runs ('x₁₂' -> 'x_{12}')."""
    if s.isascii():
        return s
    # the degree sign's look-alikes after a number, the ordinal indicator and the ring: 45º, 45˚
    s = re.sub(r"(?<=\d)[ \t]?[º˚]", "°", s)
    # a fraction of superscript and subscript digits: "⁵⁄₂" is 5/2
    s = re.sub("([⁰¹²³⁴⁵⁶⁷⁸⁹]+)[\u2044/]([₀₁₂₃₄₅₆₇₈₉]+)", lambda m: "\\frac{"
               + m.group(1).translate(_SUPERSCRIPTS) + "}{" + m.group(2).translate(_SUBSCRIPTS)
               + "}", s)
    s = re.sub("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+", lambda m: "^{" + m.group(0).translate(_SUPERSCRIPTS) + "}", s)
    s = re.sub("(_?)([₀₁₂₃₄₅₆₇₈₉₊₋]+)", lambda m: "_{" + m.group(2).translate(_SUBSCRIPTS) + "}", s)
    out = []
    for c in s:
        if "\uff01" <= c <= "\uff5e":                       # fullwidth ASCII
            c = chr(ord(c) - 0xFEE0)
        elif "\U0001d400" <= c <= "\U0001d7ff" or "\u2160" <= c <= "\u217f" \
                or "\u24b6" <= c <= "\u24e9":
            # mathematical bold, italic ...: 𝐀, 𝑥; Roman numerals in one sign: Ⅻ, ⅻ -> XII,
            # xii; circled letters: Ⓑ, ⓑ -> B, b
            c = unicodedata.normalize("NFKC", c)
        elif unicodedata.category(c) == "No":
            m = re.fullmatch(r"(\d+)\u2044(\d+)|(\d+)", unicodedata.normalize("NFKC", c))
            if m:                                           # also circled digits: ⑤ -> 5
                c = m.group(3) or f"\\frac{{{m.group(1)}}}{{{m.group(2)}}}"
        out.append(c)
    return "".join(out).replace("\u2044", "/").replace("\u2215", "/")


def _normalize(s: str, strip_lhs: bool = True) -> str:
    s = DOUBLED_CMD_RE.sub("", str(s).strip())
    while s.endswith("\\"):                # "5\ " (a space) or a row break "\\" at the end
        s = s[:-1].rstrip()
    s = _unicode_forms(s)
    for k, v in _UNICODE.items():
        if k in s:
            s = s.replace(k, v)
    if not s.isascii():                  # emoji and other symbols ("5 🎉", "5 ✅", "5️⃣")
        s = "".join(c for c in s if unicodedata.category(c) not in ("So", "Me", "Cf")
                    and c not in "\ufe0f\u200d")
    s = re.sub(r"∛\s*", r"\\sqrt[3]", s)
    s = re.sub(r"(?:√|\\surd(?![a-zA-Z]))\s*(\d+(?:\.\d+)?|\\?[a-zA-Z]+|\([^()]*\)|\{[^{}]*\})",
               lambda m: "\\sqrt{" + m.group(1).strip("(){}") + "}", s)
    s = _rate_power(_unit_fraction(_strip_math_delims(s)))       # 5 \\frac{m}{s}, 5 m s^{-1}
    s = re.sub(r"\\\$|\\text\{\s*\\\$\s*\}", "", s)                    # currency \$
    # other currencies, as a symbol anywhere or a code before the number: €5, 5 £, USD 5, Rs. 5
    # (a code after the number is a unit word, dropped below)
    # (every currency sign: € £ ¥ ₹ ₩ ₽ ...; a code is three capitals: USD, EUR, CHF ...)
    if not s.isascii():
        s = "".join(c for c in s if c == "$" or unicodedata.category(c) != "Sc")
    s = re.sub(r"\\(?:euro|pounds|yen)(?![a-zA-Z])", "", s)
    s = re.sub(r"^\s*(?:\\(?:text|mathrm)\{\s*)?(?:[A-Z]{3}|US|Rs\.?|Rp)"
               r"(?:\s*\})?(?:\s|\\[,;: ])*(?=[-+]?\.?\d)", "", s)
    s = (s.replace("$", "").replace("\\(", "").replace("\\)", "").replace("\\[", "")
         .replace("\\]", ""))
    # formatting that carries no value: null delimiters (\left. would leave a decimal point),
    # sized delimiters, spacing boxes, colour, size and font switches
    s = re.sub(r"\\(?:left|right)\s*\.|\\(?:big|Big|bigg|Bigg)[lrm](?![a-zA-Z])", "", s)
    s = re.sub(r"\\(?:[hv]space|[hv]?phantom)\*?\s*\{[^{}]*\}|\\(?:mathstrut|strut)(?![a-zA-Z])"
               r"|\\color\s*\{[^{}]*\}|\\textcolor\s*\{[^{}]*\}", "", s)
    s = re.sub(r"\\(?:tiny|scriptsize|footnotesize|small|normalsize|large|Large|LARGE|huge|Huge|"
               r"it|sf|tt|boldmath|unboldmath|normalfont|bfseries|itshape|ttfamily)(?![a-zA-Z])"
               r"|\\(?:rm|bf)(?![a-zA-Z])(?!\s*\{)", "", s)
    s = re.sub(r"\\textcent(?![a-zA-Z])", " cents", s.replace("\\textdollar", ""))
    # a brace's annotation (\underbrace{5}_{\text{ans}}) and an empty index (5_{}, {5}^{})
    s = re.sub(r"\\(?:underbrace|overbrace)\s*\{((?:[^{}]|\{[^{}]*\})*)\}"
               r"(?:\s*[_^]\s*\{(?:[^{}]|\{[^{}]*\})*\})?", r"{\1}", s)
    s = re.sub(r"(?<=[\w}])\s*[_^]\s*\{\s*\}", "", s)
    s = re.sub(r"\\(?:blacksquare|square|qed|qedsymbol|Box)(?![a-zA-Z])|[∎□■]", "", s)  # Q.E.D.
    s = re.sub(r"\\(?:displaystyle|textstyle|scriptstyle|left|right|big|Big|bigg|Bigg)(?![a-zA-Z])",
               "", s)
    s = (s.replace("\\lbrace", "\\{").replace("\\rbrace", "\\}").replace("\\langle", "(")
         .replace("\\rangle", ")"))
    # French interval brackets, a bracket turned away from its endpoint is open: ]2, 5] = (2, 5],
    # [2, 5[ = [2, 5), ]-\infty, 1[ \cup ]3, 4] (an interval that opens the answer or follows
    # \cup or \in)
    if "]" in s or s.rstrip().endswith("["):
        s = re.sub(r"(?:^|(?<=\\cup)|(?<=\\in))(\s*)([\[\]])([^\[\],;]+),([^\[\],;]+)([\[\]])"
                   r"(?=\s*(?:$|\\cup))", _french_interval, s)
    s = re.sub(r"\\(?:leqslant|leq)(?![a-zA-Z])|<=", r"\\le ", s)
    s = re.sub(r"\\(?:geqslant|geq)(?![a-zA-Z])|>=", r"\\ge ", s)
    s = re.sub(r"\\neq(?![a-zA-Z])|!=", r"\\ne ", s)
    s = re.sub(r"\^\s*\{\s*((?:\\prime\s*)+)\}|\^\s*\\prime(?![a-zA-Z])",
               lambda m: "'" * max(1, m.group(0).count("\\prime")), s)     # f^{\prime} = f'
    # the transpose: A^\top, A^{\intercal}, A^\mathsf{T}, A^T -> A^{T}
    s = re.sub(r"\^\s*(?:\{\s*(?:\\top|\\intercal|\\mathsf\s*\{T\}|T)\s*\}|\\top|\\intercal"
               r"|\\mathsf\s*\{T\}|T)(?![a-zA-Z])", "^{T}", s)
    s = re.sub(r"\\lt(?![a-zA-Z])", "<", s)
    s = re.sub(r"\\Bbb(?![a-zA-Z])", r"\\mathbb", s)                    # plain TeX \Bbb{R}
    s = re.sub(r"\\lg(?![a-zA-Z])", r"\\log_{10}", s)                     # \lg 100 = 2
    s = re.sub(r"\\gt(?![a-zA-Z])", ">", s)
    s = re.sub(r"\\mid(?![a-zA-Z])", "|", s)
    s = re.sub(r"\\(?:colon|ratio)(?![a-zA-Z])", ":", s)              # 1 \colon 2 = 1:2
    s = re.sub(r"\\(?:dfrac|tfrac|cfrac|sfrac|nicefrac)(?![a-zA-Z])", r"\\frac", s)
    # siunitx: \num{1000} -> 1000, \SI{5}{cm} / \qty{5}{cm} -> 5 cm (the unit is dropped below)
    s = re.sub(r"\\num\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\(?:SI|qty)\s*\{([^{}]*)\}\s*\{([^{}]*)\}",
               lambda m: m.group(1) + (f"\\text{{ {m.group(2)}}}"
                                       if re.fullmatch(r"[a-zA-Z]+", m.group(2)) else ""), s)
    # an alignment environment (or a system in "cases") around the answer: its rows are a list,
    # "&" only aligns, and ":=" defines like "="
    # (also an array after "\left\{": "\left\{\begin{array}{l} x=1 \\ y=2 \end{array}\right.")
    m = re.fullmatch(r"\s*(\\\{)?\s*\\begin\{(aligned|align\*?|gathered|split|equation\*?|cases"
                     r"|array)\}(?:\{[^{}]*\})?(.*)\\end\{\2\}\s*", s, re.DOTALL)
    if m and (m.group(1) or m.group(2) != "array"):
        s = ", ".join(r.strip() for r in re.split(r"\\\\", m.group(3).replace("&", ""))
                      if r.strip())
    s = s.replace(":=", "=")
    # thousands separators in LaTeX spacing: 1\,000 1{,}000 1\ 000 1,\!000 (also "1,\! 000")
    s = re.sub(r"(?<=\d),\s*\\!\s*(?=\d{3}(?!\d))", ",", s)
    s = re.sub(r"(?<=\d)(?:\\,|\{,\}|\\ |\\;|~)(?=\d{3}(?!\d))", "", s)
    # LaTeX's "{,}" before other than three digits is a decimal comma, "3{,}14" (a list is never
    # spelled with "{,}", and three digits are a thousands group: 1{,}000)
    s = re.sub(r"(?<=\d)\{,\}(?=\d{1,2}(?!\d)|\d{4})", ".", s)
    s = s.replace("{,}", ",")
    s = re.sub(r"(?<![\w.])\d{1,3}(?:_\d{3})+(?![\w.])", lambda m: m.group(0).replace("_", ""),
               s)                                                   # Python's 1_000_000
    s = re.sub(r"(?<!\\)\\[,;:!> ]|\\quad|\\qquad|~|\\(?:en|thin|med|thick|negthin|negmed|negthick"
               r"|nobreak)space(?![a-zA-Z]) ?", " ", s)
    # degrees, minutes and seconds are one angle: 30^\circ 15' = 30.25^\circ
    if "'" in s or "′" in s:
        s = re.sub(r"(?<![\d.])(\d+)\s*\^\s*(?:\{\s*\\circ\s*\}|\\circ)\s*(\d+(?:\.\d+)?)\s*"
                   r"(?:'|′)(?!')(?:\s*(\d+(?:\.\d+)?)\s*(?:''|\"|″))?", _degrees_minutes, s)
    # degrees and percent; a temperature scale after the degree sign goes with it (5^\circ C,
    # also both in one \text: 5 \text{ °C})
    s = re.sub(r"\\(?:text|mathrm|textrm|mbox)\s*\{\s*(\^\s*\\circ)\s*([CF])\s*\}", r"\1 \2", s)
    s = re.sub(r"(?<=[\d}])\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ)\s*"
               r"(?:\\(?:text|mathrm)\s*\{\s*[CF]\s*\}|[CF](?![a-zA-Z]))", "", s)
    if re.search(r"\\(?:sin|cos|tan|cot|sec|csc)(?![a-zA-Z])", s):   # sin 30^\circ = 1/2
        s = re.sub(r"(\d+(?:\.\d+)?|\{[^{}]*\}|\([^()]*\))\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ"
                   r"|\\degree(?![a-zA-Z]))", r"(\1\\cdot\\frac{\\pi}{180})", s)
    s = re.sub(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\(?:text)?degree|\^\{\\text\{o\}\}"
               r"|(?<=\d)\^\s*(?:o|\{\s*o\s*\})(?![a-zA-Z])", "", s)          # also 45^o
    s = re.sub(r"\\(?:text|mbox|mathrm|textrm)\s*\{\s*(-?[\d.,]+\s*\\?%)\s*\}", r"\1",
               s)                                                           # \text{25\%}
    # per mille and per ten thousand, a plain number before them: 25‰ = 2.5%, 25‱ = 0.25%
    s = re.sub(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:(‰|\\(?:permil|textperthousand)(?![a-zA-Z])"
               r"|\\text\s*\{\s*(?:‰|(?i:per\s*mill?e?))\s*\}|(?i:per\s*mill?e?)\b)"
               r"|(‱|\\textpertenthousand(?![a-zA-Z])))",
               lambda m: format((Decimal(m.group(1)) / (10 if m.group(2) else 100)).normalize(),
                                "f") + "%", s)
    pct = False
    # (a pattern that starts with \s* or a digit run starts only where that run starts,
    # "(?<!\s)", "(?<!\d)": tried at every position of a long run it would be quadratic)
    m = re.search(r"(?<!\s)\s*(?:\\%|%|\\(?:text|mbox|mathrm|textrm)\s*\{\s*"
                  r"(?:\\?%|percent(?:age)?s?|pct|per\s*cent)\s*\}"
                  r"|(?<=[\d}\s])(?:percent(?:age)?s?|pct|per\s*cent)(?:\s+points?)?)\.?\s*$",
                  s, re.IGNORECASE)
    if m and re.search(r"\d", s[:m.start()]):
        pct, s = True, s[:m.start()]
    # units in \text{} after a number, e.g. 5\text{ cm}^2, \$5, 10 dollars, 16\pi\text{ cm}^2 (in
    # \text{} also the tonne and the day, 5\text{ t}, 5\text{ d}: bare, they are variables)
    s = re.sub(r"(?:(?<=[\d}).])|(?<=\\pi))\s*\\" + _TEXT_CMDS + r"\s*\{\s*(?:" + _UNIT_WORDS +
               r"|t|d)\.?\s*\}(?:\s*\^\s*\{?\d\}?)?\s*$", "", s, flags=re.IGNORECASE)
    # SI symbols, in their own case and only in \text{} or \mathrm{} (a bare "5 N" may be 5N):
    # 5\text{ J}, 5\,\mathrm{kPa}, 5\,\Omega, 5 k\Omega, 5\text{ k}\Omega
    s = re.sub(r"(?<=[\d}])\s*(?:\\" + _TEXT_CMDS + r"\s*\{\s*(?:" + _SI_UNITS + r")\s*\}"
               r"|\\" + _TEXT_CMDS + r"\s*\{\s*[kMGm]?\s*\\Omega\s*\}"
               r"|(?:\\" + _TEXT_CMDS + r"\s*\{\s*[kMGm]\s*\}\s*|[kMGm]\s*)?\\Omega(?![a-zA-Z]))"
               r"(?:\s*\^\s*\{?\d\}?)?\s*$", "", s)
    # "3 and 4", "3 \\text{ and } 4" -> a list (but "one hundred and five" is one number)
    if re.search(r"\band\b", s):
        words = re.sub(r"\\" + _TEXT_CMDS + r"\s*\{([^{}]*)\}", r"\1", s).strip()
        s = _number_word(words) if _number_word(words) != words else s
    s = re.sub(r"(?<!\s)\s*\\text\{\s*(?:,\s*)?and\s*\}\s*|(?<!\s)\s+and\s+|,\s*and\s+",
               ", ", s)
    s = re.sub(r",\s*,", ",", s)
    # unwrap text-style commands, then drop trailing unit words after a number
    for _ in range(3):
        s = re.sub(r"\\" + _TEXT_CMDS + r"\s*\{([^{}]*)\}", r"\1", s)
    s = _labelled_parts(s)
    # a capital U between two intervals is their union: (-\infty, 2) U (3, \infty)
    s = re.sub(r"(?<=[)\]])\s*U\s*(?=[(\[])", r"\\cup ", s)
    # a modulus after a residue, any spelling: \pmod 7, (mod 7), \bmod 7, mod 7 -> \pmod{7}
    if "mod" in s:
        s = re.sub(r"(?<!\s)\s*(?:\\pmod\s*(?:\{\s*)?(\d+)"
                   r"|\(\s*\\?b?mod\s*(?:\{\s*)?(\d+)(?:\s*\})?\s*\)"
                   r"|(?:\\b?mod(?![a-zA-Z])|(?<![a-zA-Z\\])mod(?=\s))\s*(?:\{\s*)?(\d+))"
                   r"\s*(?:\}\s*)?$",
                   lambda m: "\\pmod{" + next(filter(None, m.groups())) + "}", s)
    # a ratio in words: "1 to 2" is 1:2 (two numbers and "to", the whole answer)
    s = re.sub(r"^\s*(\d+(?:\.\d+)?)\s+to\s+(\d+(?:\.\d+)?)\s*$", r"\1:\2", s)
    # the polar form r cis(t) = r e^{i t}, its angle in radians (with pi or a name: "cis 60" may
    # be degrees, whose sign was dropped above)
    if "cis" in s:
        s = re.sub(r"(?<![a-zA-Z])cis\s*(\((?=[^()]*[a-zA-Z])[^()]*\)"
                   r"|\\frac\s*\{[^{}]*\\pi[^{}]*\}\s*\{[^{}]*\}|\\[a-zA-Z]+(?![a-zA-Z]))",
                   r"e^{i\1}", s)
    # calculator and code spellings: 2**10, 2^-1, pi/2, ln(e^2), log(8)/log(2), abs(-3), pow(2, 10)
    s = s.replace("\\*", "*")             # an escaped star (markdown), LaTeX's times sign
    s = re.sub(r"(?<=[\w)}])\s*\*\*\s*(?=[\w({\\-])", "^", s)
    s = re.sub(r"\^\s*(-\s*\d+(?:\.\d+)?)", r"^{\1}", s)
    s = re.sub(r"\b(?:math|np|numpy|sympy|sp)\.(?=[a-z])", "", s)     # math.pi, np.sqrt(2)
    s = re.sub(r"(?<![\w\\])(?:abs|Abs|fabs)\s*\(([^()]*)\)", r"|\1|", s)          # abs(-3)
    s = re.sub(r"(?<![\w\\])(?:pow|Power)\s*\(([^(),]+),([^(),]+)\)", r"(\1)^{\2}", s)  # pow(2, 10)
    s = re.sub(r"(?<![a-zA-Z\\])log(?:(2|10)(?=\s*\()|(?=_))",       # log2(8), log_2(8)
               lambda m: "\\log" + (f"_{{{m.group(1)}}}" if m.group(1) else ""), s)
    s = re.sub(r"(?<![a-zA-Z\\])(?:(?i:(pi))(?![a-zA-Z])|(ln|log|exp|sin|cos|tan)(?=\s*\())",
               lambda m: "\\" + (m.group(1).lower() if m.group(1) else m.group(2)), s)
    s = re.sub(r"(?i)^the\s+(?=\d)", "", s)                          # "the 3rd", "the 5th term"
    # a chance or a share in words, the whole answer: "1 in 4", "3 out of 10", "1 chance in 4" are
    # the fractions 1/4, 3/10
    s = re.sub(r"(?i)^\s*(\d+)\s*(?:\\text\s*\{\s*)?(?:chances?\s+)?(?:out\s+of|in)(?:\s*\})?\s*"
               r"(\d+)\s*$", r"\\frac{\1}{\2}", s)
    s = re.sub(r"(?i)^(?:no|nr|num)\.\s*(?=\d)", "", s)              # "No. 5" is the number 5
    s = re.sub(r"(?i)^(?:the\s+)?(?:final\s+)?answer(?:\s+is\b|\s*[:=])\s*", "", s)  # in a box
    s = re.sub(r"^(?:∴|\\therefore(?![a-zA-Z]))\s*", "", s)        # "\boxed{\therefore x = 5}"
    s = re.sub(r"(?i)^(?:minus|negative)\s+(?=\d|\\frac|\\sqrt)", "-", s)       # "minus 5"
    # a scale word after a number is a factor, not a unit: 2 million = 2000000, 1.5 thousand = 1500
    if any(w in s.lower() for w in _SCALE_WORDS):
        s = re.sub(r"(?<![\d.])(\d+(?:\.\d+)?)((?:\s*(?:" + "|".join(_SCALE_WORDS) + r")\b)+)",
                   _scaled, s, flags=re.IGNORECASE)
    s = _integer_functions(s)
    s = _OCLOCK_RE.sub(r"\1:00", s)             # "3 o'clock" is 3:00
    s = _MERIDIEM_RE.sub(r" \1m", s)            # "3:00 p.m." is "3:00 pm" (a unit word)
    # (after a number, not after a variable or its power: the h of "\pi r^2 h" is a height)
    m = re.search(r"(?<=[\d}])\s*(?:" + _UNIT_WORDS + r")\.?(?:\s*\^\s*\{?\d\}?)?\s*$", s,
                  flags=re.IGNORECASE) if re.search(r"\d\s*(?:\}\s*)?[a-zA-Z]{2,}", s) or re.search(
        r"\d\s+[a-zA-Z]\s*(?:\^\s*\{?\d\}?)?$", s) else None           # also "5 m^{2}" (5 m²)
    if m and not re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", s[:m.start()].split("=")[-1])):
        s = s[:m.start()]
    s = _strip_unit_words(s.strip())
    s = re.sub(r"(?<=[\d}])\s*[\u4e00-\u9fff]{1,4}$", "", s)    # a unit in Chinese: 12 元, 5 个
    # a word in another script after a number: "5 Äpfel", "5 см" (one word, holding a letter that
    # is not ASCII)
    s = re.sub(r"(?<=[\d}])\s+(?=[^\W\d_]*[^\x00-\x7f])[^\W\d_]{1,30}\.?$", "", s)
    # a value followed by its choice letter, "5 (B)", is the same answer as "(B) 5" (which
    # `_choice` reads): put the letter first. The value must hold a digit or a command, so
    # "f (B)" (a function applied to B) is left alone; `_choice` rejects values it cannot read.
    m = re.search(r"(?<=[\w}])\s+\(\s*([A-E])\s*\)$", s)
    if m and re.search(r"\d|\\[a-zA-Z]", s[:m.start()]):
        s = f"({m.group(1)}) {s[:m.start()]}"
    # the letter before the value in other spellings: "B. 5", "B: 5", "Option (B) 5" (one value
    # only: "A: 5, B: 6" names two quantities; "B) 5", with an unbalanced parenthesis, is
    # malformed and stays so, tests/math_cases.py)
    m = re.fullmatch(r"(?:(?i:option|choice)\s*)?(?:\(\s*([A-E])\s*\)|([A-E])[.:](?=\s))"
                     r"\s*([^,;=]+)", s)
    if m and re.search(r"\d|\\[a-zA-Z]", m.group(3)):
        s = f"({m.group(1) or m.group(2)}) {m.group(3)}"
    # ordinals: 5^{th}, 5^{\text{th}} (unwrapped above), 21^{st}
    s = re.sub(r"(?<=\d)\s*\^\s*\{?\s*(?:st|nd|rd|th)\s*\}?\s*$", "", s)
    # {n \choose k} -> \binom{n}{k}
    s = re.sub(r"\{([^{}]+?)\\choose(?![a-zA-Z])([^{}]+)\}", r"\\binom{\1}{\2}", s)
    s = re.sub(r"^([^{}]+?)\\choose(?![a-zA-Z])([^{}]+)$", r"\\binom{\1}{\2}", s.strip())
    # brace-less \frac13, \frac{1}3, \frac1{3}, \frac\pi2, \frac1\pi, \sqrt3 (an argument is one
    # digit, one letter or one symbol command such as \pi)
    arg = r"(\\(?!sqrt|frac|text|math|left|right|operatorname)[a-zA-Z]+(?![a-zA-Z])|[0-9a-zA-Z])"
    s = re.sub(r"\\frac\s*" + arg + r"\s*" + arg, r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\s*(\{[^{}]*\})\s*" + arg, r"\\frac\1{\2}", s)
    s = re.sub(r"\\frac\s*" + arg + r"\s*\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\sqrt\s*([0-9a-zA-Z])", r"\\sqrt{\1}", s)
    # matrices; one written as nested lists, [[1, 2], [3, 4]] (code, JSON), as a pmatrix
    m = re.fullmatch(r"\[\s*(\[[^\[\]]*\](?:\s*,\s*\[[^\[\]]*\])*)\s*\]", s.strip())
    if m:
        rows = [r.split(",") for r in re.findall(r"\[([^\[\]]*)\]", m.group(1))]
        if len({len(r) for r in rows}) == 1:
            s = ("\\begin{pmatrix}" + "\\\\".join("&".join(c.strip() for c in r) for r in rows)
                 + "\\end{pmatrix}")
    s = re.sub(r"\\begin\{array\}\{[^{}]*\}", r"\\begin{pmatrix}", s).replace(
        "\\end{array}", "\\end{pmatrix}")
    # (bars are no brackets: a vmatrix is the determinant, a number, and a Vmatrix a norm)
    s = re.sub(r"\\(begin|end)\{[bB]?matrix\}|\\(begin|end)\{smallmatrix\}",
               lambda m: "\\" + (m.group(1) or m.group(2)) + "{pmatrix}", s)
    # a vector, one row or one column, is the tuple of its entries: pmatrix 1 \\ 2 = (1, 2) (a
    # matrix with several rows and columns stays a matrix)
    m = re.fullmatch(r"([^=]*=)?\s*\\begin\{pmatrix\}((?:(?!\\begin).)*)\\end\{pmatrix\}\s*", s,
                     re.DOTALL)
    if m:
        rows = [r.split("&") for r in re.split(r"\\\\", m.group(2)) if r.strip()]
        if rows and (len(rows) == 1 or all(len(r) == 1 for r in rows)):
            s = (m.group(1) or "") + "(" + ",".join(c.strip() for r in rows for c in r) + ")"
    # a vector in unit vectors: \\mathbf{i} + 2\\mathbf{j} - 3\\hat{k} -> (1,2,-3)
    if re.search(r"[ijk]\}?\s*$", s):
        s = _unit_vectors(s)
    # infinity spellings; the empty set
    # (also in words and code: "Infinity", "negative infinity" = -\infty, inf, sympy's oo; a whole
    # answer "infinitely many (solutions)" or "infinite" is a count without end, \infty)
    s = re.sub(r"(?i)\b(?:negative|minus)\s+infinity\b", r"-\\infty", s)
    s = re.sub(r"(?i)\\inf(?![a-zA-Z])|(?:\bpositive\s+|\bplus\s+)?\binfinity\b|\\infinity"
               r"|(?<![\w\\])inf(?![\w(])|^([-+]?)oo$", r"\1\\infty", s)
    s = re.sub(r"(?i)^(?:there\s+(?:are|is)\s+)?(?:infinitely\s+many|an?\s+infinite\s+number"
               r"(?:\s+of)?|infinite(?:ly)?)(?:\s+[a-z]+)?$", r"\\infty", s)
    s = re.sub(r"\\varnothing(?![a-zA-Z])|\\\{\s*\\\}|^\s*\{\s*\}\s*$", r"\\emptyset", s)
    # a set of numbers in words, the whole answer: "all integers" = \mathbb{Z}, "the rational
    # numbers" = \mathbb{Q}, "all complex numbers" = \mathbb{C} (the reals: `_REALS_RE`)
    s = re.sub(r"(?i)^(?:(?:all|any|every)\s+(?:the\s+)?|the\s+)?(?:(integers)|(rational)"
               r"(?:\s+numbers|s)|(complex)\s+numbers)$", lambda m: "\\mathbb{" + (
                   "Z" if m.group(1) else "Q" if m.group(2) else "C") + "}", s.strip())
    s = re.sub(r"(?<![\w\\])(\d[0-9A-Z]*)\s*(?:\(\s*)?(?:in\s+)?base[\s-]*(\d{1,2})\s*\)?$",
               r"\1_{\2}", s)
    # the base in words: 101_{\\text{two}} (unwrapped above) -> 101_{2}
    s = re.sub(r"(?<=[\dA-Z)])_\s*\{\s*([a-z]{3,9})\s*\}", lambda m: (
        f"_{{{_cardinal([m.group(1)])}}}" if _cardinal([m.group(1)]) else m.group(0)), s)
    # numbers in another base: 204_5, 204_{5}, (204)_5, 204_{(5)} -> 204_{5}; code's prefixes
    # 0b1010, 0o12, 0x1f -> 1010_{2}, 12_{8}, 1F_{16}; a digit above 9 in either case: 1f_{16}
    s = re.sub(r"(?<![\w.\\])0([box])([0-9a-fA-F]+)(?![\w.])", lambda m: m.group(2).upper() +
               "_{" + {"b": "2", "o": "8", "x": "16"}[m.group(1)] + "}", s)
    s = re.sub(r"(?<![\w\\])\(?(\d[0-9A-Za-z]*)\)?_\s*\{?\s*\(?(\d{1,2})\)?\s*\}?", _base_numeral,
               s)
    s = re.sub(r"(?<![\w\\])(\d+)_\{10\}", r"\1", s)          # base ten is the number itself
    # ";" between the entries of a tuple or of a list: (0;-2;6), -12;-11;-10
    s = re.sub(r"\(([^(),]*;[^(),]*)\)", lambda m: "(" + m.group(1).replace(";", ",") + ")", s)
    s = re.sub(r"\)\s*;\s*\(", "),(", s)
    if ";" in s and "," not in "".join(_split_top(s, ";")[:1]) and len(_split_top(s, ";")) > 1 and \
            all("," not in _split_top(x)[0] or len(_split_top(x)) == 1 for x in _split_top(s, ";")):
        s = ", ".join(_split_top(s, ";"))
    # leading "x =", "f(x) =", "x \in", "\vec{v} =", "\overrightarrow{AB} =", "(p, q) ="
    s = s.strip()
    # "5 = x" is "x = 5": a value (no letters but commands) on the left of a lone name
    m = re.fullmatch(r"([^=,<>|]+)=\s*(" + _NAME + r")", s)
    if m and not re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", m.group(1))):
        s = f"{m.group(2)}={m.group(1).strip()}"
    if strip_lhs:
        m = re.match(r"^(?:\\(?:vec|overrightarrow|hat|bar|tilde)\s*\{[a-zA-Z]{1,3}\}|[a-zA-Z]"
                     r"(?:_\{?\w+\}?)?(?:\([a-zA-Z]\))?)\s*(?:=|\\(?:in|equiv)(?![a-zA-Z]))\s*"
                     r"(?P<rhs>[^=]+)$", s)
        if m and "," not in s[:m.start("rhs")]:
            s = m.group("rhs")
        m = re.match(r"^\(\s*(?:" + _NAME + r"\s*,\s*)+" + _NAME +
                     r"\s*\)\s*(?:=|\\in(?![a-zA-Z]))\s*(?P<rhs>[^=]+)$", s)
        if m:
            s = m.group("rhs")
    # scientific notation 3e8, 1.5E-3, and "1.2 x 10^3" (an x between a number and 10^ is a
    # times sign)
    # (also with the sign in braces, 5\\mathrm{E}{+}03 unwrapped above)
    s = re.sub(r"(?<![\w\\.])(\d+(?:\.\d+)?)[eE](?:\{([+-])\}|([+-]?))(\d+)(?![\w.])",
               lambda m: m.group(1) + "\\times10^{" + ("-" if "-" in m.group(2, 3) else "") +
               m.group(4) + "}", s)
    s = re.sub(r"(?<![\w\\.])(\d+(?:\.\d+)?)\s*[xX]\s*(?=10\s*\^)", r"\1\\times ", s)
    # the repetend in other spellings, as \overline: a combining overline or macron on each of its
    # digits, "0.3̅", "0.1̅6̅"; dots over its first and last digit, "0.\dot{1}\dot{2}" = 0.1212...,
    # "0.\dot{1}4\dot{2}" = 0.142142...
    s = re.sub(r"((?:\d[\u0304\u0305])+)", lambda m: "\\overline{" + re.sub(r"\D", "", m.group(1))
               + "}", s)
    # (without braces the mark takes one digit, as in LaTeX: "0.\dot 6", "0.1\bar6")
    s = re.sub(r"\\(overline|bar|dot)\s*(\d)", r"\\\1{\2}", s)
    s = re.sub(r"\\dot\s*\{?(\d)\}?(\d*)\\dot\s*\{?(\d)\}?", r"\\overline{\1\2\3}", s)
    # repeating decimals 0.\overline{3}, 1.2\overline{34}, 0.\bar{6}, 0.\dot{3}, 0.(3), 0.1(6)
    s = re.sub(r"(-?)(?<!\d)(\d*)\.(\d*)\\(?:overline|bar|dot)\{?(\d+)\}?", _repeating_decimal, s)
    s = re.sub(r"(-?)(?<![\d.])(\d*)\.(\d*)\((\d+)\)(?![\w(])", _repeating_decimal, s)
    # a block of digits said again before an ellipsis, three digits or more in all: 0.333...,
    # 0.1666\ldots, 0.142857142857… ("3.14159..." and "0.33..." stay digits that go on)
    s = re.sub(r"(-?)(?<![\d.])(\d{0,20})\.(\d{0,20}?)(\d{1,6})(?P<again>\4{1,10})"
               r"(?=\s?(?:\.\.\.|…|\\[lc]?dots(?![a-zA-Z])))\s?(?:\.\.\.|…|\\[lc]?dots)",
               lambda m: _repeating_decimal(m) if len(m.group(4) + m.group("again")) >= 3
               else m.group(0), s)
    # a number right before a parenthesised number is a product: "2(3)" is 6 (math-verify's
    # parser reads it as the mixed number 2 + 3)
    s = re.sub(r"(?<![\w\\.^_])(\d+(?:\.\d+)?)\s*(?=\(\s*-?\d+(?:\.\d+)?\s*\))", r"\1\\cdot", s)
    # a decimal comma after digits grouped in threes by dots, spaces or apostrophes, the whole
    # answer: "1.234,5", "1 234,5", "1'234,50", "1.234.567,89" (no list or thousands reading is
    # left; "12,5", "1000,99" and the point "(1.234,5)" stay as they are)
    if re.fullmatch(r"-?\d{1,3}(?:([ .'’])\d{3})(?:\1\d{3})*,\d+", s.strip()):
        s = re.sub(r"[ .'’]", "", s.strip()).replace(",", ".")
    # "3, 500" is two numbers: mark the comma so that the thousands rule below cannot join them
    s = re.sub(r"(?<=\d),\s+(?=\d)", "\x00", s)
    # digits apart by a space: "2 1/2" is a mixed number, "1 000 000" one grouped number, any
    # other "3 4" two numbers (collapsing the space below would make them 34, and 2 1/2 = 21/2)
    s = re.sub(r"([_^])(\d+)\s+(?=\d)", r"\1{\2}", s)         # \log_2 8: a subscript, then 8
    s = re.sub(r"(?<![\d._^])(\d+)\s+(\d+)/(\d+)(?![\d./])",
               lambda m: (f"{m.group(1)}\\frac{{{m.group(2)}}}{{{m.group(3)}}}"
                          if 0 < int(m.group(2)) < int(m.group(3)) else m.group(0)), s)
    s = re.sub(r"(?<![\d._^])\d{1,3}(?:[ \t]\d{3})+(?!\d)|\.\d{3}(?:[ \t]\d{3})*[ \t]\d{1,3}(?!\d)",
               lambda m: re.sub(r"\s", "", m.group(0)), s)        # also 3.141 592 (SI style)
    s = re.sub(r"(?<=\d)\s+(?=\.?\d)", "\x00", s)                 # also "1 .5"
    # spaces: collapse, keep one only between two letters (e.g. "\pi r", "no solution")
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"(?<![a-zA-Z]) | (?![a-zA-Z])", "", s)
    # plain thousands: the whole answer is 1,234,567(.89), 1 234 567, Swiss 1'234'567(.89) or
    # 1.234.567 (two dots or more: "1.234" is a decimal; and "," is never a decimal point)
    # (also the Indian grouping of lakhs and crores, 1,00,000 and 1,23,45,678: pairs, then three)
    if re.fullmatch(r"-?\d{1,3}(?:([,'’])\d{3})(?:\1\d{3})*(?:\.\d+)?|-?\d{1,3}(?:\.\d{3}){2,}"
                    r"|-?\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d+)?", s):
        s = re.sub(r"[,'’]", "", s) if re.search(r"[,'’]", s) else s.replace(".", "")
    s = s.replace("\x00", ",")
    groups = _split_top(s, ";")                  # p=5,q=2;p=7,q=2 -> (5,2),(7,2)
    if len(groups) > 1:
        named = [_named_tuple(x) for x in groups]
        if all(named) and all(t[0] == named[0][0] for t in named):
            s = ",".join(t[1] for t in named)
    s = re.sub(r"^\+(?=\d)", "", s)
    s = re.sub(r"(?<![\d])\.(\d)", r"0.\1", s)
    # "5." and "5," end a sentence or a list; a trailing ellipsis ("5...", "5\ldots") says the
    # digits or terms go on, so it stays (as "...") and the answer is no plain number
    s = re.sub(r"(?:\.\.\.|…|\\[lc]?dots(?![a-zA-Z]))$", "...", s)
    s = s if s.endswith("...") else s.rstrip(".,").strip()
    s = re.sub(r"(?i)^(?:option|choice|answer)\s*:?\s*(\(?[A-E]\)?)$", r"\1", s)   # "Option B"
    s = _strip_outer_parens(_strip_outer_braces(s))
    return _number_word(s) + ("%" if pct else "")


# the label of a part of a question inside one answer: "(a) 5, (b) 6", "a) 5; b) 6", "Part (i): 5",
# "Part 1: 5", "(1) 5"
_PART_IN_ANSWER_RE = re.compile(
    r"(?:^|(?<=[\s,;]))(?:(?:[Pp]art\s*)?\(?([a-h]|i{1,3}|iv|vi{0,3})\)|\(([1-8])\)"
    r"|[Pp]art\s*([a-h1-8]|i{1,3}|iv|vi{0,3})(?=\s*[.:]))\s*[.:]?\s*")
_PART_NAMES = ("abcdefgh", ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii"), "12345678")


def _labelled_parts(s: str) -> str:
    """'(a) 5, (b) 6' -> '(5, 6)': the answers of the parts (a), (b), ..., (i), (ii), ... or 1, 2,
    ... of a question, labelled from the start of the answer, are a tuple in the labels' order
    ('(a) 6, (b) 5' is not the list 5, 6; '(b) 6, (a) 5' is)."""
    labels = list(_PART_IN_ANSWER_RE.finditer(s)) if ")" in s or "art" in s else []
    if len(labels) < 2 or labels[0].start() != 0:
        return s
    names = [m.group(1) or m.group(2) or m.group(3) for m in labels]
    seq = next((list(q[:len(names)]) for q in _PART_NAMES
                if sorted(names) == sorted(q[:len(names)])), None)
    if seq is None:
        return s
    values = [re.sub(r"(?:\\\\|[\s,;])+$", "", s[a.end():b.start() if b else len(s)]).strip()
              for a, b in zip(labels, labels[1:] + [None])]        # (a row end "\\" too)
    values = [values[names.index(n)] for n in seq]                  # "(b) 6, (a) 5": (a) first
    return "(" + ", ".join(values) + ")" if all(values) else s


# counting notations with literal integers: {}^{10}C_3, _{10}C_{3}, ^5P_2, 10C3, 5P2 (C(10, 3)
# and P(5, 2) may be points, so `_counting` reads them only where the gold is a number), and
# gcd / hcf / lcm of integers: \gcd(12, 18), \operatorname{lcm}(4, 6), LCM[4, 6]
_NCR_RE = re.compile(r"(?:\{\s*\}|(?<![\w}]))[\^_]\s*\{?\s*(\d{1,4})\s*\}?\s*([CP])"
                     r"\s*_\s*\{?\s*(\d{1,4})\s*\}?"
                     r"|(?<![\w\\.])(\d{1,4})([CP])(\d{1,4})(?!\w)")
_GCD_RE = re.compile(r"(?i)(?<![a-zA-Z])\\?(gcd|hcf|lcm)\s*[(\[]\s*"
                     r"(\d{1,15}(?:\s*,\s*\d{1,15}){1,9})\s*[)\]]")


def _count(kind: str, n: int, k: int) -> int | None:
    """C(n, k) or P(n, k) for 0 <= k <= n <= 1000, else None."""
    if not 0 <= k <= n <= 1000:
        return None
    return math.comb(n, k) if kind == "C" else math.perm(n, k)


def _integer_functions(s: str) -> str:
    """'{}^{10}C_3' -> '(120)', '\\gcd(12, 18)' -> '(6)': the value of a counting notation or a
    gcd / lcm of literal integers (in parentheses: '2\\gcd(4, 6)' is 2 times 2)."""
    def ncr(m: re.Match) -> str:
        kind, n, k = (m.group(2), m.group(1), m.group(3)) if m.group(1) else m.group(5, 4, 6)
        v = _count(kind, int(n), int(k))
        return m.group(0) if v is None else f"({v})"

    def gcd(m: re.Match) -> str:
        args = [int(x) for x in m.group(2).split(",")]
        return f"({math.lcm(*args) if m.group(1).lower() == 'lcm' else math.gcd(*args)})"

    if re.search(r"[CP]", s):
        s = _NCR_RE.sub(ncr, s)
    return _GCD_RE.sub(gcd, s) if re.search(r"(?i)gcd|hcf|lcm", s) else s


def _counting(s: str) -> str | None:
    """'C(10,3)' -> '120', 'P(5,2)' -> '20', and the notation of Chinese and French textbooks
    'C_{10}^{3}' -> '120', 'A_{5}^{2}' -> '20' (a normalised answer that is only that), else
    None."""
    m = re.fullmatch(r"([CP])\((\d{1,4}),(\d{1,4})\)", s)
    if m is None:
        m = re.fullmatch(r"([CA])_\{?(\d{1,4})\}?\^\{?(\d{1,4})\}?", s)
    kind = {"A": "P"}.get(m.group(1), m.group(1)) if m else None
    v = _count(kind, int(m.group(2)), int(m.group(3))) if m else None
    return None if v is None else str(v)


def _point(s: str) -> str | None:
    """'P(5,2)' -> '(5,2)': a point named by a capital letter, or None."""
    m = re.fullmatch(r"[A-Z](?:_\{?\w+\}?)?'*(\(.+\))", s)
    return m.group(1) if m and _is_tuple(m.group(1)) else None


_SMALL_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                  "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


_SCALES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9}


def _below_thousand(words: list[str], i: int) -> tuple[int, int] | None:
    """'three hundred (and) forty-two' from words[i]: (value, index after it), or None."""
    value, start = 0, i
    if i + 1 < len(words) and words[i] in _SMALL_NUMBERS[1:10] and words[i + 1] == "hundred":
        value, i = 100 * _SMALL_NUMBERS.index(words[i]), i + 2
        if i < len(words) and words[i] == "and" and i + 1 < len(words):
            i += 1
    if i < len(words) and words[i] in _TENS:
        value += 20 + 10 * _TENS.index(words[i])
        i += 1
        if i < len(words) and words[i] in _SMALL_NUMBERS[1:10]:
            value, i = value + _SMALL_NUMBERS.index(words[i]), i + 1
    elif i < len(words) and words[i] in _SMALL_NUMBERS[1:]:
        value, i = value + _SMALL_NUMBERS.index(words[i]), i + 1
    if i == start or (words[i - 1] == "and"):
        return None
    return value, i


def _cardinal(words: list[str]) -> int | None:
    """['two', 'thousand', 'five', 'hundred'] -> 2500: the whole list is one English cardinal
    ('zero' only alone; no 'twenty-ten' or 'five five')."""
    if words == ["zero"]:
        return 0
    total, i, scale = 0, 0, None
    while i < len(words):
        got = _below_thousand(words, i)
        if got is None:
            return None
        value, i = got
        if i < len(words) and words[i] in _SCALES:
            if scale is not None and _SCALES[words[i]] >= scale:
                return None                      # "five thousand two thousand"
            scale = _SCALES[words[i]]
            total, i = total + value * scale, i + 1
            if words[i:i + 1] == ["and"] and i + 1 < len(words):
                i += 1                           # "one thousand and one"
        elif i < len(words):
            return None
        else:
            total += value
    return total if words else None


# the denominators of fractions in words: "three quarters", "two fifths" ("half" alone is 1/2)
_PARTS = {"half": 2, "halve": 2, "third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6,
          "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "twelfth": 12, "hundredth": 100}


def _word_value(words: list[str]) -> str | None:
    """The number the words say, as an answer string: ['twenty', 'one'] -> '21', ['a', 'dozen']
    -> '12', ['three', 'quarters'] -> '\\frac{3}{4}', ['two', 'and', 'a', 'half'] ->
    '2\\frac{1}{2}'; None when they say none."""
    n = _cardinal(words)
    if n is not None:
        return str(n)

    def count(head: list[str]) -> int | None:          # "a", "one", "three", "twenty-one"
        return 1 if head == ["a"] else _cardinal(head) if head else None

    if words[-1] in ("dozen", "dozens"):
        k = Fraction(1, 2) if words[:-1] in (["half", "a"], ["a", "half"]) else count(words[:-1])
        return None if k is None else str(k * 12)
    if "and" in words:                                 # "two and a half"
        i = words.index("and")
        whole, rest = _cardinal(words[:i]), _word_value(words[i + 1:]) if words[i + 1:] else None
        frac = exact_number(rest) if rest else None
        if whole and frac is not None and 0 < frac < 1:
            return f"{whole}\\frac{{{frac.numerator}}}{{{frac.denominator}}}"
    part = _PARTS.get(words[-1][:-1] if words[-1].endswith("s") else words[-1])
    if part is not None:
        k = 1 if words == ["half"] else count(words[:-1])
        if k and k > 1 and not words[-1].endswith("s"):
            return None                                # "twenty-fifth" is a position, not 20/5
        return None if not k else f"\\frac{{{k}}}{{{part}}}"
    return None


_ORDINALS = {"first": "one", "second": "two", "third": "three", "fifth": "five", "eighth": "eight",
             "ninth": "nine", "twelfth": "twelve"}


def _ordinal(s: str) -> int | None:
    """'the third' -> 3, 'twenty-first' -> 21, 'second place' -> 2: an ordinal in words that
    names a position, or None. A lone ordinal word ('third', 'second') names none: it may be a
    fraction's part ('a third') or a unit ('a second'); 'the', a noun after it or a compound
    ('twenty-first') make it a position."""
    m = re.fullmatch(r"(?i)(the\s+)?([a-z]+(?:[-\s]+[a-z]+){0,11})", s.strip())
    if not m:
        return None
    words = re.split(r"[-\s]+", m.group(2).lower())
    for k, w in enumerate(words):
        card = _ORDINALS.get(w) or (w[:-4] + "y" if w.endswith("ieth") else
                                    w[:-2] if w.endswith("th") else None)
        rest = words[k + 1:]
        if card and (m.group(1) or rest or k) and (
                not rest or _strip_unit_words("1 " + " ".join(rest)) == "1"):
            return _cardinal(words[:k] + [card])
    return None


def _number_word(s: str) -> str:
    """'five' -> '5', 'Twenty-one' -> '21', 'two thousand five hundred' -> '2500', 'twelve
    apples' -> '12', 'a dozen' -> '12', 'three quarters' -> '\\frac{3}{4}': an answer that is
    one number spelled out in English, with the words of what it counts after it ('one of them'
    stays words: 'of' is no such word)."""
    m = re.fullmatch(r"(?i)((?:minus|negative)\s+|-)?([a-z]+(?:[-\s]+[a-z]+){0,11})", s)
    if not m:
        return s
    words = re.split(r"[-\s]+", m.group(2).lower())
    for k in range(len(words), 0, -1):
        rest = words[k:]
        if rest and (rest[0] in _SMALL_NUMBERS + _TENS or rest[0].rstrip("s") in _PARTS or
                     rest[0] in _ORDINALS or rest[0] in _SCALE_WORDS or
                     _strip_unit_words("1 " + " ".join(rest)) != "1"):
            continue           # "five five", "one of them", "twenty-first", "nineteen hundred"
        value = _word_value(words[:k])
        if value is not None:
            return ("-" if m.group(1) and value != "0" else "") + value
    return s


def _strip_outer_parens(s: str) -> str:
    """'((5))' -> '5', '((1, 2))' -> '(1, 2)': parentheses around the whole answer that only
    group (a tuple keeps its own pair, a choice letter '(B)' its pair). One pass, as for braces."""
    if not (s.startswith("(") and s.endswith(")")):
        return s
    match, stack = {}, []
    for i, c in enumerate(s):
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            match[stack.pop()] = i
    n = 0
    while 2 * n < len(s) and match.get(n) == len(s) - 1 - n:
        n += 1
    inner = s[n:len(s) - n]
    if n and (len(_split_top(inner)) > 1 or re.fullmatch(r"\s*[a-zA-Z]?\s*", inner)):
        n -= 1                                   # "(1, 2)", "(B)", "()"
    return s[n:len(s) - n].strip() if n else s


def _strip_outer_braces(s: str) -> str:
    """'{{5}}' -> '5': braces around the whole answer only group, at any depth. One pass over
    the string (a scan to the matching brace once per level would be quadratic in the depth)."""
    k = 0
    while 2 * k + 1 < len(s) and s[k] == "{" and s[-1 - k] == "}":
        k += 1
    if not k:
        return s
    match, stack, i = {}, [], 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == "{":
            stack.append(i)
        elif s[i] == "}" and stack:
            match[stack.pop()] = i
        i += 1
    n = 0
    while n < k and match.get(n) == len(s) - 1 - n:
        n += 1
    return s[n:len(s) - n].strip()



# ---------- comparison --------------------------------------------------------------

_NUM = r"-?\d+(?:\.\d+)?"


def exact_number(s: str) -> Fraction | None:
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
    """A word answer ('Monday', 'no solution', 'No', 'C'): compared as text, never
    symbolically."""
    if _text_key(s) in ("yes", "no"):
        return True
    s = re.sub(r"\\(?:begin|end)\{\w+\}|\\[a-zA-Z]+", " ", s)
    words = re.findall(r"\b[a-zA-Z]{3,}\b", s)
    return (bool(words) and not any(w.lower() in _FUNC_WORDS for w in words)
            and not re.search(r"[\^_=]", s))


_YES_NO = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}   # word -> what it says
# yes and no in the languages whose answer statements are read (`_FOREIGN_ANSWER`)
_YES_NO_WORDS = {
    **{w: "yes" for w in "oui ja sí si sim да ya có ναι نعم 是 是的 对 はい 네 예".split()},
    **{w: "no" for w in "non nein não nao нет tidak không όχι لا 否 不是 不 いいえ".split()},
    "아니요": "no", "아니오": "no"}
# a value that does not exist (a limit, a maximum): "DNE" is "does not exist"; "undefined" and
# the empty set ("no solution") are other answers
_DNE = {"doesnotexist": "dne", "doesntexist": "dne", "doesnotexists": "dne", "nonexistent": "dne"}


def _text_key(s: str) -> str:
    """Lower case without punctuation ('North-East' -> 'northeast'); a leading minus sign is
    kept: '-e' and '-Tuesday' are not 'e' and 'Tuesday'."""
    s = s.lower()
    if s.strip(" .!") in _YES_NO_WORDS:          # "oui", "nein", "是", "нет"
        return _YES_NO_WORDS[s.strip(" .!")]
    s = re.sub(r"^\(?([a-e])\)?$", r"\1", s)
    sign = "-" if s.startswith("-") else ""
    s = sign + re.sub(r"[^a-z0-9]", "", s)
    return _YES_NO.get(s, _DNE.get(s, s))        # a JSON true gold ("True") is "Yes"


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


# ---------- exact radicals ----------------------------------------------------------
#
# Numbers built from integers and decimals with + - * /, integer and rational powers and n-th
# roots (\sqrt{8}, 2\sqrt{2}, \frac{\sqrt{6}}{2}, \sqrt{3/2}, 2^{3/2}, sqrt(8)) are compared here
# exactly, without the worker. A value is a dict {(n, r): c} meaning sum c * r^(1/n) with c
# rational, r a positive integer free of n-th powers and (n, r) in lowest terms (r^(1/n) is not a
# lower root). Two such radicals in lowest terms have an irrational ratio unless they are the
# same, and real radicals with pairwise irrational ratios are linearly independent over Q
# (C. L. Siegel, "Algebraische Abhängigkeit von Wurzeln", Acta Arithmetica 21 (1972) 59-64), so
# two values are equal iff their dicts are. Anything else (letters, pi, huge numbers, a
# denominator with three radicals) gives None and goes to the worker.

_RAD_MAX = 10 ** 12             # radicands and powers beyond this: not handled here


def _factor(n: int) -> dict[int, int] | None:
    out, p = {}, 2
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p += 1 if p == 2 else 2
        if p > 10 ** 6:
            return None
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def _rad_root(q: Fraction, n: int) -> dict | None:
    """q^(1/n) for a rational q, as a radical value."""
    if q == 0:
        return {}
    if n == 1:
        return {(1, 1): q}
    sign = 1
    if q < 0:
        if n % 2 == 0:
            return None                                  # not real
        sign, q = -1, -q
    a, b = q.numerator, q.denominator
    r = a * b ** (n - 1)                                 # (a/b)^(1/n) = (a b^(n-1))^(1/n) / b
    if r > _RAD_MAX:
        return None
    f = _factor(r)
    if f is None:
        return None
    coeff, rest = 1, {}
    for p, e in f.items():
        coeff *= p ** (e // n)
        if e % n:
            rest[p] = e % n
    g = n
    for e in rest.values():
        g = math.gcd(g, e)
    rr = 1
    for p, e in rest.items():
        rr *= p ** (e // g)
    key = (n // g, rr) if rr != 1 else (1, 1)
    return {key: sign * Fraction(coeff, b)}


def _rad_add(x: dict, y: dict, sign: int = 1) -> dict:
    out = dict(x)
    for k, c in y.items():
        out[k] = out.get(k, 0) + sign * c
        if out[k] == 0:
            del out[k]
    return out


def _rad_mul(x: dict, y: dict) -> dict | None:
    out: dict = {}
    for (n1, r1), c1 in x.items():
        for (n2, r2), c2 in y.items():
            n = n1 * n2 // math.gcd(n1, n2)
            big = r1 ** (n // n1) * r2 ** (n // n2)
            if big > _RAD_MAX:
                return None
            t = _rad_root(Fraction(big), n)
            if t is None:
                return None
            out = _rad_add(out, {k: v * c1 * c2 for k, v in t.items()})
    return out


def _rad_inv(x: dict) -> dict | None:
    if len(x) == 1:
        (n, r), c = next(iter(x.items()))
        t = _rad_root(Fraction(r) ** (n - 1), n) if r ** (n - 1) <= _RAD_MAX else None
        return None if t is None else {k: v / (c * r) for k, v in t.items()}
    if len(x) == 2 and all(n in (1, 2) for n, _ in x):   # a + b sqrt(r) or a sqrt(r) + b sqrt(s)
        (k1, c1), (k2, c2) = x.items()
        conj = {k1: c1, k2: -c2}
        den = _rad_mul(x, conj)
        if den is None or list(den) != [(1, 1)]:
            return None
        return {k: v / den[(1, 1)] for k, v in conj.items()}
    return None


def _rad_pow(x: dict, e: dict) -> dict | None:
    if list(e) not in ([(1, 1)], []):
        return None
    q = e.get((1, 1), Fraction(0))
    if q.denominator == 1 and abs(q) <= 24:
        out: dict | None = {(1, 1): Fraction(1)}
        for _ in range(abs(int(q))):
            out = _rad_mul(out, x)
            if out is None:
                return None
        return _rad_inv(out) if q < 0 else out
    if len(x) == 1 and abs(q.numerator) <= 24 and q.denominator <= 24:   # c r^(1/n) to p/m
        (n, r), c = next(iter(x.items()))
        sign = 1
        if c < 0:                                # odd roots of negatives are real
            if n != 1 or q.denominator % 2 == 0:
                return None
            sign, c = (-1) ** (q.numerator % 2), -c
        base = c ** n * r
        if base.numerator > _RAD_MAX or base.denominator > _RAD_MAX:
            return None
        try:
            power = base ** abs(q.numerator)
        except OverflowError:
            return None
        if power.numerator > _RAD_MAX or power.denominator > _RAD_MAX:
            return None
        t = _rad_root(power, n * q.denominator)
        if t is not None and q < 0:
            t = _rad_inv(t)
        return None if t is None else {k: sign * v for k, v in t.items()}
    return None


class _RadParser:
    """Recursive descent over a normalised answer; raises ValueError on anything it cannot do."""

    def __init__(self, s: str):
        self.s, self.i = s, 0

    def peek(self, t: str) -> bool:
        return self.s.startswith(t, self.i)

    def eat(self, t: str) -> bool:
        if self.peek(t):
            self.i += len(t)
            return True
        return False

    def need(self, t: str) -> None:
        if not self.eat(t):
            raise ValueError(t)

    def parse(self) -> dict:
        v = self.expr()
        if self.i != len(self.s):
            raise ValueError("trailing")
        return v

    def expr(self) -> dict:
        v = self.term()
        while True:
            if self.eat("+"):
                v = _rad_add(v, self.term())
            elif self.eat("-"):
                v = _rad_add(v, self.term(), -1)
            else:
                return v

    def term(self) -> dict:
        v = self.unary()
        while True:
            if self.eat("\\cdot") or self.eat("\\times") or self.eat("*"):
                v = self._ok(_rad_mul(v, self.unary()))
            elif self.eat("/") or self.eat("\\div"):
                v = self._ok(_rad_mul(v, self._ok(_rad_inv(self.unary()))))
            elif self.i < len(self.s) and (self.peek("\\sqrt") or self.peek("sqrt")
                                           or self.peek("(") or self.peek("\\frac")):
                if self.peek("\\frac") and list(v) == [(1, 1)] and re.match(
                        r"\\frac\{\d+\}\{\d+\}$", self.s[self.i:]):
                    raise ValueError("mixed number")         # 2\frac{1}{2}: exact_number's call
                v = self._ok(_rad_mul(v, self.power()))      # implicit product: 2\sqrt{2}
            else:
                return v

    def unary(self) -> dict:
        if self.eat("-"):
            return {k: -c for k, c in self.unary().items()}
        if self.eat("+"):
            return self.unary()
        return self.power()

    def power(self) -> dict:
        base = self.atom()
        if self.eat("^"):
            if self.eat("{"):
                e = self.expr()
                self.need("}")
            elif self.peek("("):
                e = self.atom()
            else:
                m = re.match(r"\d", self.s[self.i:])
                if not m:
                    raise ValueError("exponent")
                self.i += 1
                e = {(1, 1): Fraction(int(m.group(0)))}
            return self._ok(_rad_pow(base, e))
        return base

    def group(self, open_: str, close: str) -> dict:
        self.need(open_)
        v = self.expr()
        self.need(close)
        return v

    def atom(self) -> dict:
        m = re.match(r"\d+(?:\.\d+)?", self.s[self.i:])
        if m:
            self.i += m.end()
            return {(1, 1): Fraction(m.group(0))} if Fraction(m.group(0)) else {}
        if self.eat("\\frac"):
            num = self.group("{", "}")
            den = self.group("{", "}")
            return self._ok(_rad_mul(num, self._ok(_rad_inv(den))))
        if self.eat("\\sqrt") or self.eat("sqrt"):
            n = 2
            if self.peek("["):
                idx = self.group("[", "]")
                if (list(idx) != [(1, 1)] or idx[(1, 1)].denominator != 1
                        or not 2 <= idx[(1, 1)] <= 24):
                    raise ValueError("index")
                n = int(idx[(1, 1)])
            if self.peek("{"):
                inner = self.group("{", "}")
            elif self.peek("("):
                inner = self.group("(", ")")
            else:
                m = re.match(r"\d+(?:\.\d+)?", self.s[self.i:])
                if not m:
                    raise ValueError("radicand")
                self.i += m.end()
                inner = {(1, 1): Fraction(m.group(0))}
            return self._ok(_rad_pow(inner, {(1, 1): Fraction(1, n)}) if inner else {})
        if self.peek("("):
            return self.group("(", ")")
        if self.peek("{"):
            return self.group("{", "}")
        raise ValueError("atom")

    @staticmethod
    def _ok(v):
        if v is None:
            raise ValueError("unsupported")
        return v


def radical_value(s: str) -> dict | None:
    """The exact value of a radical expression, or None when it is not one.

    >>> radical_value("\\\\sqrt{8}") == radical_value("2\\\\sqrt{2}")
    True
    >>> radical_value("\\\\frac{\\\\sqrt{6}}{2}") == radical_value("\\\\sqrt{3/2}")
    True
    >>> radical_value("\\\\sqrt{8}") == radical_value("3\\\\sqrt{2}")
    False
    >>> radical_value("x+1") is None
    True
    """
    if not s or len(s) > 200 or not re.search(r"sqrt|\^", s) or re.search(r"[a-zA-Z]", re.sub(
            r"\\(?:sqrt|frac|cdot|times|div)|sqrt", "", s)):
        return None
    try:
        return _RadParser(s).parse()
    except (ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None


# ---------- intervals and inequalities ----------------------------------------------

_REL_RE = re.compile(r"\\le|\\ge|<|>|\\ne")


def _negate(x: str) -> str:
    return x[1:] if x.startswith("-") else "-" + x


def _abs_pieces(lo: str, c_lo: bool, hi: str, c_hi: bool) -> list[tuple] | None:
    """lo < |x| < hi as intervals of x (lo a known number >= 0 or -infinity, hi >= lo)."""
    if _inf_key(lo) == "-\\infty":
        lo, c_lo = "0", True
    low = exact_number(lo)
    if low is None or low < 0:
        return None
    if _inf_key(hi) == "\\infty":
        if low == 0 and c_lo:
            return [("-\\infty", False, "\\infty", False)]
        return [("-\\infty", False, _negate(lo), c_lo), (lo, c_lo, "\\infty", False)]
    if low == 0 and c_lo:
        return [(_negate(hi), c_hi, hi, c_hi)]
    return [(_negate(hi), c_hi, _negate(lo), c_lo), (lo, c_lo, hi, c_hi)]


def _interval_piece(s: str) -> tuple[str | None, list[tuple]] | None:
    """Intervals from '(a,b]' or an inequality 'a<x\\le b', 'x\\ge a', 'b>x>a', '1\\le|z|\\le2':
    (variable or None, [(lo, lo_closed, hi, hi_closed), ...])."""
    k, el = _structure(s)
    if len(k) == 2 and len(el) == 2:
        return None, [(el[0], k[0] == "[", el[1], k[1] == "]")]
    var_re = r"\|?[a-zA-Z](?:_\{?\w+\}?)?(?:\([a-zA-Z]\))?\|?"
    both = _split_top(s)
    if len(both) == 2:                           # "x > 2, x <= 5" (also "x > 2 and x <= 5")
        a, b = _interval_piece(both[0]), _interval_piece(both[1])
        if not (a and b and a[0] and a[0] == b[0] and len(a[1]) == len(b[1]) == 1):
            return None
        for (lo, c, hi, d), (lo_, c_, hi_, d_) in ((a[1][0], b[1][0]), (b[1][0], a[1][0])):
            if _inf_key(lo) and _inf_key(hi_):
                x, y = exact_number(hi), exact_number(lo_)
                if x is not None and y is not None and x < y:     # "x < -1, x > 1": rays that
                    return a[0], [a[1][0], b[1][0]]                # never meet are the union
                return a[0], [(lo_, c_, hi, d)]
        return None
    parts = [x.strip() for x in _REL_RE.split(s)]
    ops = _REL_RE.findall(s)
    if not ops or any(p == "" for p in parts):
        return None
    if ops == ["\\ne"]:                          # x != 3: everything but 3
        if re.fullmatch(var_re, parts[0]) and not parts[0].startswith("|"):
            return parts[0], [("-\\infty", False, parts[1], False),
                              (parts[1], False, "\\infty", False)]
        return None
    if "\\ne" in ops:
        return None
    if len(parts) == 2:
        a, b = parts
        op = ops[0]
        if re.fullmatch(var_re, a) and not re.fullmatch(var_re, b):
            var, val, less = a, b, op in ("<", "\\le")
        elif re.fullmatch(var_re, b) and not re.fullmatch(var_re, a):
            var, val, less = b, a, op in (">", "\\ge")
        else:
            return None
        closed = op in ("\\le", "\\ge")
        iv = ("-\\infty", False, val, closed) if less else (val, closed, "\\infty", False)
    elif len(parts) == 3 and re.fullmatch(var_re, parts[1]):
        up = [op in ("<", "\\le") for op in ops]
        if up[0] != up[1]:
            return None
        lo, hi = (parts[0], parts[2]) if up[0] else (parts[2], parts[0])
        c_lo, c_hi = ((ops[0] == "\\le", ops[1] == "\\le") if up[0]
                      else (ops[1] == "\\ge", ops[0] == "\\ge"))
        var, iv = parts[1], (lo, c_lo, hi, c_hi)
    else:
        return None
    if var.startswith("|") != var.endswith("|"):
        return None
    if var.startswith("|"):                      # |x|: two intervals, symmetric about 0
        pieces = _abs_pieces(*iv)
        return None if pieces is None else (var.strip("|"), pieces)
    return var, [iv]


def _intervals(s: str) -> tuple[str | None, bool, list[tuple]] | None:
    """A union of intervals from interval notation or inequalities, as (variable, written as an
    inequality?, pieces); None when `s` is neither. 'x<1 or x>3', '(-\\infty,1)\\cup(3,\\infty)',
    '\\{x|2<x\\le5\\}', 'x\\in\\mathbb{R}' and '\\mathbb{R}\\setminus\\{3\\}' all parse."""
    if len(s) > 300:
        return None
    # {x | 2 < x <= 5}, {x \in \mathbb{R} : x > 2} (a set of reals; of integers it is no interval)
    m = re.fullmatch(r"\\\{\s*([a-zA-Z])\s*(?:\\in\s*(?:\\mathbb\{R\}|\\mathbb R|R)\s*)?"
                     r"(?:\||:)(.+)\\\}", s)
    if m:
        s = m.group(2)
        if s.startswith(m.group(1) + "\\in"):
            s = s[len(m.group(1)) + 3:]
    if _is_reals(s):
        return None, False, [("-\\infty", False, "\\infty", False)]
    m = re.fullmatch(r"(.+),\s*([a-zA-Z])\s*\\in\s*(?:\\mathbb\{R\}|\\mathbb R|R)", s)
    if m:                                        # "x \ge 3, x \in \mathbb{R}": the domain said
        got = _intervals(m.group(1))
        return got if got and got[0] == m.group(2) else None
    m = re.fullmatch(r"(?:\\mathbb\{R\}|\\mathbb R|R)(?:\\setminus|\\backslash|-)\\\{(.+)\\\}", s)
    if m:                                        # \mathbb{R} \setminus \{1, 3\}: the gaps between
        points = sorted((exact_number(x), x) for x in _split_top(m.group(1))
                        if exact_number(x) is not None)
        if len(points) != len(_split_top(m.group(1))):
            return None
        ends = ["-\\infty"] + [x for _, x in points] + ["\\infty"]
        return None, False, [(a, False, b, False) for a, b in zip(ends, ends[1:])]
    m = re.fullmatch(r"(?:\\mathbb\{R\}|\\mathbb R|R)(?:\\setminus|\\backslash|-)(.+)", s)
    got = _interval_piece(m.group(1)) if m else None
    if got and got[0] is None and not (_inf_key(got[1][0][0]) or _inf_key(got[1][0][2])):
        lo, c_lo, hi, c_hi = got[1][0]           # \mathbb{R} \setminus [-1, 1]: the two rays
        return None, False, [("-\\infty", False, lo, not c_lo), (hi, not c_hi, "\\infty", False)]
    pieces = [p for p in re.split(r"\\cup|(?<![a-zA-Z])or(?![a-zA-Z])|\\lor|\\vee", s)]
    if any(not p.strip() for p in pieces):
        return None
    var, ineq, out = None, False, []
    for p in pieces:
        got = _interval_piece(p.strip().strip(","))
        if got is None:
            return None
        v, ivs = got
        if v is not None:
            ineq = True
            if var is not None and v != var:
                return None
            var = v
        out.extend(ivs)
    return var, ineq, out


# every real number, in words: "all real numbers", "All reals", "all real x", "any real value of x"
_REALS_RE = re.compile(r"\\mathbb\{R\}|\\mathbb R|R|(?i:(?:all|any|every)\s?(?:the\s)?reals?"
                       r"(?:\s?(?:numbers?|values?))?(?:\s(?:of\s)?[a-z])?)")


def _is_reals(s: str) -> bool:
    return bool(_REALS_RE.fullmatch(s))


def _inf_key(x: str) -> str | None:
    x = x.replace("+\\infty", "\\infty")
    return x if x in ("\\infty", "-\\infty") else None


def _same_intervals(g: list[tuple], p: list[tuple], budget: "_Budget") -> bool:
    g, p = _merge_intervals(g), _merge_intervals(p)
    if len(g) != len(p):
        return False

    def end_eq(a: str, b: str) -> bool:
        ia, ib = _inf_key(a), _inf_key(b)
        if ia or ib:
            return ia == ib
        return _equal(a, b, budget)

    left = list(p)
    for lo, clo, hi, chi in g:
        for j, (lo2, clo2, hi2, chi2) in enumerate(left):
            if (clo, chi) == (clo2, chi2) and end_eq(lo, lo2) and end_eq(hi, hi2):
                del left[j]
                break
        else:
            return False
    return True


class _Budget:
    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


_EMPTY_RE = re.compile(
    r"\\emptyset|\\varnothing|\\\{\\\}|(?:the ?)?empty ?set|null ?set|none|(?:there ?(?:is|are) ?|"
    r"(?:the ?)?(?:equation|system|inequality|problem|polynomial) ?(?:has|have) ?)?no"
    r"(?: ?(?:real|integer|integral|positive|negative|natural|such|possible|valid|rational|complex|"
    r"prime|whole))* ?(?:solutions?|roots?|values?|numbers?|answers?|pairs?|triples?|integers?|x|n|"
    r"such \w+)(?: ?exists?)?", re.IGNORECASE)


def _is_empty(s: str) -> bool:
    """The empty set, however written: \\emptyset, \\varnothing, \\{\\}, 'no solution', 'none'."""
    return bool(_EMPTY_RE.fullmatch(s.strip().rstrip(".")))


_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _base_number(s: str) -> tuple[int, int] | None:
    """'204_{5}' -> (54, 5): a numeral with a base subscript (digits checked against the base)."""
    m = re.fullmatch(r"([0-9A-Z]+)_\{(\d{1,2})\}", s)
    if not m or not 2 <= int(m.group(2)) <= 36:
        return None
    base = int(m.group(2))
    if any(_DIGITS.index(c) >= base for c in m.group(1)):
        return None
    return int(m.group(1), base), base


def _is_name(s: str) -> bool:
    """A named quantity on the left of '=': x, AB, |AB|, y_{1}, f(x), A:B, V_1:V_2, \\frac{NO}{BO},
    \\angle ABC, a probability or expectation of any event (P(A \\cap B), \\Pr[X > 1],
    \\mathbb{E}[X]). Not an expression (2x+z, a^2+b) and not a number."""
    if re.fullmatch(r"(?:\\Pr|\\mathbb\{[PE]\}|P|E|Var)\s*(?:\([^=]*\)|\[[^=]*\])", s.strip()):
        return True
    s = re.sub(r"\\(?:angle|measuredangle|overline|vec|mathbf|mathrm|text|operatorname|"
               r"triangle)\s*", "", s)
    s = re.sub(r"^\s*\\det\s*(?:\(\s*([A-Z])\s*\)|([A-Z]))\s*$", r"\1\2", s)     # \det A, \det(A)
    s = re.sub(r"\\frac\{([^{}]+)\}\{([^{}]+)\}", r"\1/\2", s).replace("{", "").replace("}", "")
    s = s.strip().strip("|")
    return bool(s) and all(re.fullmatch(r"[A-Za-z]{1,8}(?:_\w+)?'*(?:\([\w,]+\))?", c.strip("|"))
                           for c in re.split(r"[:/]", s))


def _choice(s: str) -> tuple[str, str] | None:
    """'(B)5' -> ('b', '5'), '(B)' -> ('b', ''): a multiple-choice letter in parentheses,
    optionally followed by the value of that choice (AMC golds: '\\textbf{(B) }5')."""
    m = re.fullmatch(r"\(([A-E])\)(.*)", s)
    return (m.group(1).lower(), m.group(2)) if m and not re.match(r"[a-zA-Z^_(]", m.group(2)) \
        else None


def _ratio(s: str) -> list[Fraction] | None:
    """'2:4:6' -> [2, 4, 6]: a ratio of three or more positive numbers (None for anything else,
    and for a time of day with seconds, '1:02:03')."""
    terms = s.split(":") if s.count(":") >= 2 else []
    values = [exact_number(t) for t in terms if not re.fullmatch(r"0\d", t)]
    return values if terms and len(values) == len(terms) and all(
        v is not None and v > 0 for v in values) else None


def _hms(s: str) -> Fraction | None:
    """'1:02:03' -> 3723: a time or a duration with seconds, in seconds (None for others)."""
    m = re.fullmatch(r"(\d{1,3}):([0-5]\d):([0-5]\d(?:\.\d+)?)", s)
    return 3600 * int(m.group(1)) + 60 * int(m.group(2)) + Fraction(m.group(3)) if m else None


def _congruence(s: str) -> tuple[int, int] | None:
    """'3\\pmod{7}' -> (3, 7): a residue and its modulus (None for anything else)."""
    m = re.fullmatch(r"(-?\d+)\\pmod\{(\d+)\}", s)
    return (int(m.group(1)), int(m.group(2))) if m and int(m.group(2)) > 0 else None


def _scalar_equal(g: str, p: str, budget: _Budget) -> bool:
    if g == p:
        return True
    gm, pm = _congruence(g), _congruence(p)
    if gm and pm:                                # 10 (mod 7) is the class of 3 (mod 7)
        return gm[1] == pm[1] and (gm[0] - pm[0]) % gm[1] == 0
    if gm or pm:                                 # 3 (mod 7) for 3: the residue as written or
        (r, mod), n = (gm, exact_number(p)) if gm else (pm, exact_number(g))   # its least one
        return n is not None and n in (r, r % mod)
    gr, pr = _ratio(g), _ratio(p)
    if gr and pr:                                # 2:4:6 = 1:2:3 (1:2 = 2:4 = 1/2 is a quotient)
        return len(gr) == len(pr) and all(a * pr[0] == b * gr[0] for a, b in zip(gr, pr))
    gt, pt = _hms(g), _hms(p)
    if gr or pr or gt is not None or pt is not None:     # 1:02:03 is a time, 1:2:3 a ratio
        return gt is not None and gt == pt       # (their quotients 1/6 say nothing)
    if _counting(p) and (exact_number(g) is not None or g.startswith("\\binom")):
        p = _counting(p)                         # "C(10,3)" for 120 (not for a point (10,3))
    g_pct, p_pct = g.endswith("%"), p.endswith("%")
    g, p = g.rstrip("%"), p.rstrip("%")
    if g == p:
        return True
    gb, pb = _base_number(g), _base_number(p)
    if gb or pb:                                 # 204_5: only the same numeral in the same base
        return gb is not None and gb == pb
    if _is_empty(g) or _is_empty(p):
        return _is_empty(g) and _is_empty(p)
    if ("=" in g) != ("=" in p):
        # "AB = 4" vs "4"; "x = 5+5+1 = 11" vs "11"; a computation "2+3 = 5" in the prediction
        eq, other = (g, p) if "=" in g else (p, g)
        members = eq.split("=")
        lhs, rhs = members[0], members[-1]
        values = [exact_number(x) for x in members]
        if any(None not in (a, b) and a != b for a, b in zip(values, values[1:])):
            return False                         # "x = 5 = 6": a chain that is false
        if len(members) > 2 and not _is_name(lhs) and _is_name(members[-2]):
            lhs = members[-2]                    # "1 = z = x = 0": the chain ends in x = 0
        numeric_lhs = lhs and not re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", lhs))
        if numeric_lhs and None not in (exact_number(lhs), exact_number(rhs)) and \
                exact_number(lhs) != exact_number(rhs):
            return False                         # "3 = 5" is no computation
        if _is_name(lhs) or (eq is p and numeric_lhs):
            return (_scalar_equal(rhs, other, budget) if eq is g
                    else _scalar_equal(other, rhs, budget))
    # f'(x) is not f(x), 2' (minutes of arc, feet) not 2, 1'2 not 12 (math-verify drops a prime)
    prime = r"(?<=[a-zA-Z0-9)'])'"
    if len(re.findall(prime, g)) != len(re.findall(prime, p)):
        return False
    if g.count("^{T}") != p.count("^{T}"):
        return False                             # x^T is not x (math-verify drops the transpose)
    gc, pc = _choice(g), _choice(p)
    if gc or pc:                                 # "(B) 5": a choice letter and its value
        if gc and pc:
            return gc[0] == pc[0] and (not gc[1] or not pc[1]
                                       or _scalar_equal(gc[1], pc[1], budget))
        (letter, value), other = (gc, p) if gc else (pc, g)
        if re.fullmatch(r"\(?[A-Ea-e]\)?", other):          # the letter alone: it decides
            return _text_key(other) == letter.lower()
        return bool(value) and (_scalar_equal(value, other, budget) if gc
                                else _scalar_equal(other, value, budget))
    gt, pt = _is_text(g), _is_text(p)
    if gt != pt and exact_number(p if gt else g) is not None and _ordinal(g if gt else p):
        return _ordinal(g if gt else p) == exact_number(p if gt else g)   # "the third" for 3
    if gt or pt:
        return gt and pt and _text_key(g) == _text_key(p)
    roman = r"(?=[IVX]{2})X{0,3}(?:IX|IV|V?I{0,3})"     # II, IV, XII: not the product of letters
    if re.fullmatch(roman, g) and re.fullmatch(roman, p):
        return g == p
    gl, pl = (re.fullmatch(r"\(?[A-Ea-e]\)?", x) for x in (g, p))
    if gl or pl:                                 # choice letters
        if _text_key(g) == _text_key(p) or (gl and pl):
            return _text_key(g) == _text_key(p)
        # a lone small "e" is also Euler's number: e^1, \exp(1) (not 2.718)
        return "e" in (g, p) and not (_dangerous(g) or _dangerous(p)) and WORKER.equal(g, p, budget)
    gv, pv = exact_number(g), exact_number(p)
    if gv is not None and pv is not None:
        if gv == pv:
            return True
        if g_pct != p_pct:                       # 25% == 0.25
            return (gv / 100 if g_pct else gv) == (pv / 100 if p_pct else pv)
        return False
    if g_pct == p_pct:
        gr = radical_value(g) if gv is None else {(1, 1): gv} if gv else {}
        pr = radical_value(p) if pv is None else {(1, 1): pv} if pv else {}
        if gr is not None and pr is not None and (gv is None or pv is None):
            return gr == pr
    if _dangerous(g) or _dangerous(p):
        return False
    if bool(re.search(r"gcd|lcm", g)) != bool(re.search(r"gcd|lcm", p)):
        return False                             # sympy reads gcd(a, b) of two letters as 1
    if g_pct != p_pct:
        g = f"\\frac{{{g}}}{{100}}" if g_pct else g
        p = f"\\frac{{{p}}}{{100}}" if p_pct else p
    # a number right before a parenthesis multiplies it, whatever is inside: 2(1/2) = 1,
    # 2\left(\frac{1}{2}\right) = 1, 2(3) = 6 (math-verify reads 2(1/2) as the mixed number
    # 2 1/2 and 2(3) as no product; a mixed number is written 2\frac{1}{2}, without parentheses)
    g, p = (re.sub(r"(?<![\w.\\^_{])(\d+(?:\.\d+)?)[ \t]*(?=\\left\(|\()", r"\1\\cdot ", x)
            for x in (g, p))
    return WORKER.equal(g, p, budget)


def _is_tuple(s: str) -> bool:
    k, el = _structure(s)
    return k == "()" and len(el) >= 2


_FILLER_WORDS = {"the", "a", "an", "on", "in", "at", "is", "it", "its", "one", "answer", "final"}


def _word_answer(g: str, p: str) -> bool:
    """A word gold said with filler words around it ('on Tuesday', 'the blue one', 'The answer
    is even' for 'Tuesday', 'blue', 'even'), or a yes / no / true / false gold followed by its
    reason ('yes, it is possible'; not when the reason hedges or says the other word). The
    prediction is words and sentence punctuation only: a sign, an operator or a bar makes it a
    formula ('-x', 'x!', '|x|', "x'" are not the gold 'x')."""
    gw, pw = re.findall(r"[a-z0-9]+", g.lower()), re.findall(r"[a-z0-9]+", p.lower())
    if not gw or len(pw) > len(gw) + 12:
        return False
    if re.search(r"[^\w\s,.;:]", re.sub(r"(?<=[A-Za-z])['’-](?=[A-Za-z])|(?<=[A-Za-z]{2})[.!]$",
                                       "", p.strip())):
        return False
    for i in range(len(pw) - len(gw) + 1):
        if pw[i:i + len(gw)] == gw and all(w in _FILLER_WORDS for w in pw[:i] + pw[i + len(gw):]):
            return True
    says = _YES_NO.get(gw[0]) if len(gw) == 1 else None
    blocked = {w for w, k in _YES_NO.items() if k != says} | {
        "but", "however", "unless", "except", "or", "maybe", "perhaps", "probably", "possibly"}
    return (says is not None and bool(pw) and _YES_NO.get(pw[0]) == says
            and bool(re.match(r"[a-z]+\s*[,.;:]", p.lower())) and not set(pw[1:]) & blocked)


_LETTER = r"(?:\([A-E]\)|[A-E])"


def _choice_letters(s: str) -> frozenset | None:
    """'A,C', 'AC', '(A)(C)' -> {'A', 'C'}: the letters of a question with several right choices
    (each once), in any order and spelling; None for anything else (one letter is `_choice`'s)."""
    s = s[2:-2] if s.startswith("\\{") and s.endswith("\\}") else s      # \\{A, C\\}
    if not re.fullmatch(_LETTER + r"(?:[, ]?" + _LETTER + "){1,4}", s):
        return None
    letters = re.findall("[A-E]", s)
    return frozenset(letters) if len(set(letters)) == len(letters) else None


def _equal(g: str, p: str, budget: _Budget) -> bool:
    """Structural comparison of two normalised answers."""
    if g == p:
        return True
    if _choice_letters(g) and _choice_letters(p):          # "A, C" for the choices "AC"
        return _choice_letters(g) == _choice_letters(p)
    if _is_empty(g) or _is_empty(p):
        return _is_empty(g) and _is_empty(p)
    if re.fullmatch(r"[A-Za-z][A-Za-z '-]*", g) and _word_answer(g, p):
        return True                              # "on Tuesday" for "Tuesday"
    if _point(p) and _is_tuple(g):               # "P(5,2)" for the point (5, 2)
        return _equal(g, _point(p), budget)
    if _point(g) and _is_tuple(p):
        return _equal(_point(g), p, budget)
    if re.search(r"\\le|\\ge|<|>|\\ne", g + p):   # an inequality on one side: compare as intervals
        gi, pi = _intervals(g), _intervals(p)
        if gi is not None and pi is not None and (gi[1] or pi[1]):
            if gi[1] and pi[1] and gi[0] != pi[0]:
                return False
            return _same_intervals(gi[2], pi[2], budget)
    if _is_reals(g) or _is_reals(p) or "\\mathbb" in g + p:   # \mathbb{R} = (-\infty, \infty)
        gi, pi = _intervals(g), _intervals(p)
        if gi is not None and pi is not None:
            return _same_intervals(gi[2], pi[2], budget)
    if "\\cup" in g or "\\cup" in p:           # a union is unordered: (3,4)\cup(1,2)
        g, p = _merged(g), _merged(p)
        if g == p:
            return True
        gi, pi = _intervals(g), _intervals(p)
        if gi is not None and pi is not None and "\\{" not in g + p:
            return _same_intervals(gi[2], pi[2], budget)
        gs, ps = _split_top(g, "\\cup"), _split_top(p, "\\cup")
        if len(gs) != len(ps):
            return False
        if len(gs) > 1:
            return _match_all(gs, ps, budget)
    gk, ge = _structure(g)
    pk, pe = _structure(p)
    if gk == "scalar" and pk == "scalar":
        return _scalar_equal(g, p, budget)
    if gk == "set" and len(ge) == 1 and _is_tuple(ge[0]) and _is_tuple(p):
        return _equal(ge[0], p, budget)          # the solution set {(-2, 3)} is the pair (-2, 3)
    if pk == "set" and len(pe) == 1 and _is_tuple(pe[0]) and _is_tuple(g):
        return _equal(g, pe[0], budget)
    # a collection of tuples is a set whatever its brackets: {(1,2),(3,4)} = (3,4),(1,2)
    tuples = len(ge) > 1 and len(pe) > 1 and all(_is_tuple(x) for x in ge + pe)
    if tuples or gk == pk == "set":              # a set holds each element once: {1,1,2} = {1,2}
        ge, pe = list(dict.fromkeys(ge)), list(dict.fromkeys(pe))
    if len(ge) != len(pe):
        return False
    if "pmatrix" in g or "pmatrix" in p:
        return _scalar_equal(g, p, budget)
    unordered = {gk, pk} <= {"set", "bare"} or tuples
    if not tuples:
        if len(gk) == 2 and len(pk) == 2 and gk != pk and (
                len(ge) == 2 or not {gk, pk} <= {"()", "[]"}):
            return False                         # interval brackets must agree: (1, 2) != [1, 2]
        if {gk, pk} == {"set", "()"} or {gk, pk} == {"set", "[]"}:
            return False
    if not unordered:
        return all(_equal(a, b, budget) for a, b in zip(ge, pe))
    return _match_all(ge, pe, budget)


def _merged(s: str) -> str:
    """'\\{1,2\\}\\cup\\{3\\}' -> '\\{1,2,3\\}': a union of sets listed element by element is
    one set (anything else is returned as is)."""
    parts = _split_top(s, "\\cup")
    if len(parts) < 2 or not all(_structure(x)[0] == "set" or _is_empty(x) for x in parts):
        return s
    return "\\{" + ",".join(e for x in parts if not _is_empty(x) for e in _structure(x)[1]) + "\\}"


def _merge_intervals(pieces: list[tuple]) -> list[tuple]:
    """[1,2] u [2,3] -> [1,3], (-inf,1] u (1,inf) -> (-inf,inf): intervals with numeric ends
    that overlap or touch (one end closed) are one interval. Others are returned as they are."""
    def key(x: str) -> Fraction | float | None:
        inf = _inf_key(x)
        return (float(inf.replace("\\infty", "inf")) if inf else exact_number(x))
    ends = [(key(lo), key(hi)) for lo, _, hi, _ in pieces]
    if len(pieces) < 2 or any(a is None or b is None for a, b in ends):
        return pieces
    order = sorted(range(len(pieces)), key=lambda i: (ends[i][0], not pieces[i][1]))
    out = [list(pieces[order[0]]) + list(ends[order[0]])]
    for i in order[1:]:
        lo, clo, hi, chi = pieces[i]
        a, b = ends[i]
        last = out[-1]
        if a < last[5] or (a == last[5] and (clo or last[3])):      # overlap or touch
            if b > last[5] or (b == last[5] and chi):
                last[2], last[3], last[5] = hi, chi, b
        else:
            out.append([lo, clo, hi, chi, a, b])
    return [tuple(x[:4]) for x in out]


def _match_all(ge: list[str], pe: list[str], budget: _Budget) -> bool:
    """Every element of `ge` equals its own element of `pe` (same length, any order)."""
    left = list(pe)
    for a in ge:
        for j, b in enumerate(left):
            if _equal(a, b, budget):
                del left[j]
                break
        else:
            return False
    return not left


_ASSIGN_RE = re.compile(r"(" + _NAME + r")=([^=,]+)")


def _named_tuple(s: str) -> tuple[list[str], str] | None:
    """'(p,q)=(3,2)' -> (['p', 'q'], '(3,2)'); 'q=2,p=3' -> (['q', 'p'], '(2,3)')."""
    m = re.fullmatch(r"\(((?:" + _NAME + r",)+" + _NAME + r")\)=(\(.+\))", s)
    if m:
        return m.group(1).split(","), m.group(2)
    parts = _split_top(s)
    if len(parts) >= 2 and all(_ASSIGN_RE.fullmatch(x) for x in parts):
        pairs = [_ASSIGN_RE.fullmatch(x).groups() for x in parts]
        if len({n for n, _ in pairs}) == len(pairs):
            return [n for n, _ in pairs], "(" + ",".join(v for _, v in pairs) + ")"
    return None


def _assigned(s: str) -> str | None:
    """The variable of a single assignment 'y=2x+1' (None for anything else)."""
    m = re.fullmatch(r"(" + _NAME + r")=[^=,]+", s)
    return m.group(1) if m else None


def _relation_equal(g: str, p: str, budget: _Budget) -> bool:
    """Second look at two answers written as relations (both unnormalised at the left side):
    the same tuple under named components ('(p,q)=(3,2)' vs 'q=2, p=3'), or the same line or
    curve: L1 - R1 = c (L2 - R2) for a nonzero constant c ('y = 2x + 1' vs '4x - 2y = -2')."""
    gn, pn = _named_tuple(g), _named_tuple(p)
    if gn and pn and sorted(gn[0]) == sorted(pn[0]) and gn[0] != pn[0]:
        order = [pn[0].index(n) for n in gn[0]]
        vals = _split_top(pn[1][1:-1])
        return _equal(gn[1], "(" + ",".join(vals[i] for i in order) + ")", budget)
    if g.count("=") == 1 and p.count("=") == 1 and not re.search(r"\\le|\\ge|<|>|\\ne", g + p) and \
            len(_split_top(g)) == 1 and len(_split_top(p)) == 1 and re.search(r"[a-zA-Z]", g) and \
            not (_dangerous(g) or _dangerous(p)):
        return WORKER.equal(g, p, budget, op="equation")
    return False


_UNIT_ALIASES = {}
for _canon, _names in {
        "cm": "cm centimeter centimeters centimetre centimetres", "mm": "mm millimeter millimeters",
        "km": "km kilometer kilometers kilometre kilometres", "m": "m meter meters metre metres",
        "in": "in inch inches", "ft": "ft foot feet", "yd": "yd yard yards", "mi": "mi mile miles",
        "kg": "kg kilogram kilograms", "g": "g gram grams", "mg": "mg milligram milligrams",
        "lb": "lb lbs pound pounds", "oz": "oz ounce ounces", "s": "s sec secs second seconds",
        "min": "min mins minute minutes", "h": "h hr hrs hour hours", "day": "day days",
        "week": "week weeks", "month": "month months mo mos", "year": "year years yr yrs",
        "decade": "decade decades", "century": "century centuries",
        # the food Calorie, capitalised, is the kilocalorie
        "cal": "cal calorie calories",
        "kcal": "Cal Cals Calorie Calories kcal kilocalorie kilocalories",
        "Wh": "Wh watt-hour watt-hours watthour watthours",
        "dollar": "dollar dollars", "cent": "cent cents", "l": "l liter liters litre litres",
        "ml": "ml milliliter milliliters", "gal": "gal gallon gallons", "mi/h": "mph",
        "km/h": "km/h kph", "deg": "degree degrees", "J": "j joule joules", "N": "n newton newtons",
        "W": "w watt watts", "V": "v volt volts", "Pa": "pa pascal pascals", "Hz": "hz hertz",
        "mol": "mol mole moles", "Ω": "ohm ohms", "rad": "rad rads radian radians", "am": "am",
        "pm": "pm", "A": "amp amps ampere amperes", "K": "kelvin kelvins",
        "eV": "electronvolt electronvolts", "kΩ": "kilohm kilohms", "MΩ": "megohm megohms",
        # temperature scales (`_unit_key` reads "°C", "^\\circ F", "℃", "degrees Celsius")
        "degC": "degC celsius centigrade", "degF": "degF fahrenheit",
        # amounts of data: no conversion between them (a kilobyte is 1000 or 1024 bytes)
        "byte": "byte bytes", "bit": "bit bits", "kB": "kB KB kilobyte kilobytes",
        "MB": "MB megabyte megabytes", "GB": "GB gigabyte gigabytes",
        "TB": "TB terabyte terabytes", "euro": "euro euros", "yen": "yen",
        "rupee": "rupee rupees"}.items():
    for _n in _names.split():
        _UNIT_ALIASES[_n] = _canon


_UNIT_ARG = (r"\{\s*(?:\\(?:text|mathrm|textrm|rm)\s*\{\s*([a-zA-Z]{1,12})\s*\}|([a-zA-Z]{1,12}))"
             r"\s*\}")
_UNIT_FRAC_RE = re.compile(r"(?<=[\d}])(?:\s|\\[,;: ])*\\[dt]?frac\s*" + _UNIT_ARG + r"\s*" +
                           _UNIT_ARG + r"\s*$")


def _unit_fraction(s: str) -> str:
    """'5 \\frac{m}{s}' -> '5 m/s', '5\\frac{\\text{km}}{\\text{h}}' -> '5 km/h': a rate written as
    a fraction of two known units after a number, the second one of time ('5 \\frac{a}{b}' and
    '5 \\frac{m}{n}' are left alone)."""
    m = _UNIT_FRAC_RE.search(s) if "frac" in s else None
    if not m:
        return s
    top, per = m.group(1) or m.group(2), m.group(3) or m.group(4)
    if _UNIT_ALIASES.get(top.lower()) is None or _UNIT_ALIASES.get(per.lower()) not in (
            "s", "min", "h", "day", "week", "month", "year"):
        return s
    return s[:m.start()] + f" {top}/{per}"


_RATE_POWER_RE = re.compile(r"(?<![a-zA-Z\\])([a-zA-Z]{1,3})(?:\s|\\[,;: ]|\\cdot|·|\*)+"
                            r"([a-zA-Z]{1,3})(\s*\})?\s*\^\s*(?:\{\s*-\s*([12])\s*\}|-([12]))")


def _rate_power(s: str) -> str:
    """'5 m s^{-1}' -> '5 m/s', '5\\text{ m s}^{-2}' -> '5\\text{ m/s^2}': a unit times a negative
    power of another known unit is a rate ('a b^{-1}' is left alone)."""
    def rate(m: re.Match) -> str:
        if not (_known_unit(m.group(1)) and _known_unit(m.group(2))):
            return m.group(0)
        return f"{m.group(1)}/{m.group(2)}" + ("^2" if "2" in m.group(4, 5) else "") + (
            m.group(3) or "")
    return _RATE_POWER_RE.sub(rate, s) if "-" in s else s


_CURRENCY_SIGNS = (("euro", r"€|\\euro(?![a-zA-Z])|\\texteuro|\bEUR\b"),
                   ("GBP", r"£|\\pounds(?![a-zA-Z])|\\textsterling|\bGBP\b"),
                   ("yen", r"¥|\\yen(?![a-zA-Z])|\\textyen|\bJPY\b|\bCNY\b|\bRMB\b|元"),
                   ("rupee", r"₹|\bRs\.?(?=\s*\d)|\bINR\b"))


def _unit_key(s: str) -> str | None:
    """The known unit after a number, a power or a fraction ('5 cm', '12\\text{ cm}^2', '3 square
    feet', '10^{-9} m' -> 'cm', 'cm^2', 'ft^2', 'm'; '3 PM', '3 p.m.' -> 'pm'; '30^\\circ' ->
    'deg'; a dollar sign before the number, '\\$5', '$5' alone -> 'dollar'), or None (no unit,
    or a word we do not know as a unit)."""
    dollar = "dollar" if re.search(r"\\\$|\\textdollar|^[^$]*\$\s*\d[^$]*$", s) else None
    # other currencies by sign or code, before or after the number (€5, 5€, EUR 5, ₹5, Rs. 5):
    # each is its own unit, never converted (€5 != \$5)
    dollar = next((name for name, sign in _CURRENCY_SIGNS if re.search(sign, s)), dollar)
    s = _rate_power(_unit_fraction(s))
    t = re.sub(r"\\(?:SI|qty)\s*\{([^{}]*)\}\s*\{([^{}]*)\}",   # siunitx: \SI{5}{\kilo\joule}
               lambda m: m.group(1) + " " + m.group(2).replace("\\", ""), s)
    t = re.sub(r"\\(?:text|mbox|mathrm|textrm|textnormal|rm)\s*\{([^{}]*)\}", r" \1 ", t)
    t = re.sub(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|(?<=\d)[ \t]?[º˚]|\\degree(?![a-zA-Z])",
               " degrees ", t)
    # a temperature scale after the degree sign or word, or in one sign: 25 °C, 77 ℉, 25
    # degrees Celsius (the degree alone stays "deg": it agrees with either scale)
    t = re.sub(r"(?i)(?:degrees?\s*)?(?:\b(c|f)\b|(celsius|centigrade|fahrenheit)\b)|([℃℉])",
               lambda m: m.group(0) if not (m.group(0).lower().startswith("deg") or m.group(3)
                                           or m.group(2)) else
               " deg" + ("C" if (m.group(1) or m.group(2) or m.group(3)).lower()[0] in "c℃"
                         else "F"), t)
    t = re.sub(r"\\[,;: ]|\$|\\\(|\\\)", " ", t).strip().rstrip(".").strip()
    # a unit of energy in two words or two symbols is one unit: "kilowatt hours", "kilowatt-hour",
    # "kW h", "kW·h", "kW\\cdot h" -> kWh (any SI prefix, or none: "watt hours" -> Wh)
    t = re.sub(r"(?i)\b(" + "|".join(_SI_PREFIX_NAMES) + r")?watts?[- ]?hours?\b",
               lambda m: _SI_PREFIX_NAMES.get((m.group(1) or "").lower(), "") + "Wh", t)
    t = re.sub(r"(?<![a-zA-Z])([TGMkm]?W)\s*(?:·|⋅|\\cdot|\*|-)?\s*h(?![a-zA-Z])", r"\1h", t)
    t = _MERIDIEM_RE.sub(r" \1m", t)
    t = re.sub(r"\\mu(?![a-zA-Z])\s*|μ", "µ", t)             # the micro prefix: 5 \mu m
    t = re.sub(r"(?:(?<=[\s\d])([kMGm])\s*)?(?:\\Omega(?![a-zA-Z])\s*|[Ω\u2126])",   # the ohm:
               lambda m: (m.group(1) or "") + "Ω", t)                    # 5 k\Omega, 5 kΩ
    t = re.sub(r"¢|\\textcent(?![a-zA-Z])", " cents", t)       # the cent sign: 5¢
    m = re.search(r"(?:\d|\\pi|\})(?P<sp>\s*)(?P<sq>square\s+|sq\.?\s+|cubic\s+)?"
                  r"(?P<u>[a-zA-ZµΩ]+(?:/[a-zA-Z]+)?)\s*(?:\^\s*\{?(?P<e>\d)\}?|(?P<e2>[²³]))?$", t)
    if not m or (len(m.group("u")) == 1 and not m.group("sp") and m.group("u") != "Ω"):
        return dollar
    # a name as written ("pm"), an SI symbol in its own case (kJ, mA, Mg, pA: M is mega and m
    # milli), then a name in any case ("PM", "Km")
    u = m.group("u")
    unit = (_UNIT_ALIASES.get(u) or (u if _unit_size(u) else None) or _UNIT_ALIASES.get(u.lower())
            or _prefixed_name(u))
    if unit is None and "/" in m.group("u"):               # m/s, ft/s, miles/hour
        per = [_UNIT_ALIASES.get(x) for x in m.group("u").lower().split("/")]
        unit = "/".join(per) if None not in per else None
    if unit is None:
        return dollar
    e = m.group("e") or {"²": "2", "³": "3"}.get(m.group("e2") or "", "")
    if m.group("sq"):
        e = "3" if m.group("sq").startswith("cubic") else "2"
    return unit + ("^" + e if e not in ("", "1") else "")



# One quantity written in several units of one dimension, "3 hours and 20 minutes", "5 ft 6 in",
# "2 dollars and 5 cents": each unit's size in the smallest unit of its dimension.
_COMPOUND_UNITS = {
    "s": ("time", 1), "min": ("time", 60), "h": ("time", 3600), "day": ("time", 86400),
    "week": ("time", 604800), "in": ("length", 1), "ft": ("length", 12), "yd": ("length", 36),
    "mi": ("length", 63360), "mm": ("metric", 1), "cm": ("metric", 10), "m": ("metric", 1000),
    "km": ("metric", 10 ** 6), "oz": ("mass", 1), "lb": ("mass", 16), "mg": ("grams", 1),
    "g": ("grams", 1000), "kg": ("grams", 10 ** 6), "ml": ("volume", 1), "l": ("volume", 1000),
    "cent": ("money", 1), "dollar": ("money", 100),
    # the calendar's months to centuries (not to days: a month or a year has no fixed length)
    "month": ("calendar", 1), "year": ("calendar", 12), "decade": ("calendar", 120),
    "century": ("calendar", 1200)}
# Every SI unit symbol with any prefix, one rule: the prefix's power of ten times the base unit
# (5 kJ = 5000 J, 2 kW = 2000 W, 3 mA = 0.003 A, 250 mV = 0.25 V, 3 ms = 0.003 s, 5 µm =
# 0.005 mm, 5 kWh = 5000 Wh). Units of one quantity with different names (J and eV, J and Wh)
# are not converted: they disagree like 5 cm and 2 in.
_SI_BASES = {"m": ("metric", 1000), "g": ("grams", 1000), "l": ("volume", 1000),
             "L": ("volume", 1000), "s": ("time", 1), "J": ("J", 1), "N": ("N", 1), "W": ("W", 1),
             "V": ("V", 1), "A": ("A", 1), "K": ("K", 1), "Pa": ("Pa", 1), "Hz": ("Hz", 1),
             "mol": ("mol", 1), "eV": ("eV", 1), "Wh": ("Wh", 1), "Ω": ("Ω", 1),
             "cal": ("cal", 1)}
_SI_PREFIXES = {"T": 10 ** 12, "G": 10 ** 9, "M": 10 ** 6, "k": 10 ** 3, "h": 100,
                "d": Fraction(1, 10), "c": Fraction(1, 100), "m": Fraction(1, 10 ** 3),
                "µ": Fraction(1, 10 ** 6), "n": Fraction(1, 10 ** 9), "p": Fraction(1, 10 ** 12)}
_SI_UNIT_RE = re.compile("([TGMkhdcmµnp]?)(" + "|".join(sorted(_SI_BASES, key=len)[::-1]) + ")")


_SI_PREFIX_NAMES = {"tera": "T", "giga": "G", "mega": "M", "kilo": "k", "hecto": "h", "deci": "d",
                    "centi": "c", "milli": "m", "micro": "µ", "nano": "n", "pico": "p"}


def _prefixed_name(word: str) -> str | None:
    """'kilojoules' -> 'kJ', 'milliamps' -> 'mA', 'kilowatt' -> 'kW': an SI prefix's name before
    the name of an SI unit, as its symbol (None for other words)."""
    m = re.fullmatch("(" + "|".join(_SI_PREFIX_NAMES) + ")(.{3,})", word.lower())   # not "kilos"
    base = _UNIT_ALIASES.get(m.group(2)) if m else None
    return _SI_PREFIX_NAMES[m.group(1)] + base if base in _SI_BASES else None


def _known_unit(word: str) -> bool:
    """'cm', 'Hours', 'kJ', 'kilojoules': a word that names a unit (not 'xy' or 'ab')."""
    return bool(_UNIT_ALIASES.get(word) or _UNIT_ALIASES.get(word.lower()) or _unit_size(word)
                or _prefixed_name(word))


def _unit_size(unit: str) -> tuple[str, Fraction | int] | None:
    """A known unit's (dimension, size in the smallest unit of `_COMPOUND_UNITS`): 'cm' ->
    ('metric', 10), 'kJ' -> ('J', 1000), 'mA' -> ('A', 1/1000); None for other words."""
    if unit in _COMPOUND_UNITS:
        return _COMPOUND_UNITS[unit]
    m = _SI_UNIT_RE.fullmatch(unit.replace("μ", "µ"))
    if not m:
        return None
    dim, size = _SI_BASES[m.group(2)]
    return dim, size * _SI_PREFIXES.get(m.group(1), 1)


_AMOUNT_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\.?")


def _compound(s: str) -> tuple[str, Fraction, int, int] | None:
    """'3 hours and 20 minutes' -> ('time', 12000, 60, 3600): (dimension, total in its smallest
    unit, size of the answer's smallest and largest unit); None unless the answer is two or more
    amounts in different known units of one dimension, largest first."""
    t = re.sub(r"\\(?:text|mbox|mathrm|textrm|textnormal|rm)\s*\{([^{}]*)\}", r" \1 ", s)
    t = re.sub(r"\\[,;: ]|\$|\\\(|\\\)|,|\band\b", " ", t).strip().rstrip(".")
    if len(t) > 200 or not re.fullmatch(r"(?:\s*" + _AMOUNT_RE.pattern + r")+\s*", t):
        return None
    amounts = [(n, _UNIT_ALIASES.get(word.lower(), word)) for n, word in _AMOUNT_RE.findall(t)]
    if {"h", "s"} & {u for _, u in amounts}:     # "2h 30m", "5m 20s": m beside hours or seconds
        amounts = [(n, "min" if u == "m" else u) for n, u in amounts]     # is minutes, not metres
    parts = []
    for n, name in amounts:
        unit = _unit_size(name)
        if unit is None:
            return None
        parts.append((Fraction(n), *unit))
    sizes = [size for _, _, size in parts]
    if len(parts) < 2 or len({d for _, d, _ in parts}) > 1 or sizes != sorted(set(sizes))[::-1]:
        return None
    return parts[0][1], sum(n * size for n, _, size in parts), sizes[-1], sizes[0]


def _compound_equal(gold: str, pred: str) -> bool | None:
    """None unless one side is a compound quantity (`_compound`); then whether both are one
    amount. The other side may be a compound, a number with a unit of the same dimension, or a
    bare number, which is read in the compound's smallest or its largest unit (the two a
    question asks in: 3 hours and 20 minutes is 200 minutes or 10/3 hours)."""
    gq, pq = _compound(gold), _compound(pred)
    if gq is None and pq is None:
        return None
    if gq is not None and pq is not None:
        return gq[:2] == pq[:2]
    (dim, total, small, large), other = (gq, pred) if gq else (pq, gold)
    value = exact_number(normalize_answer(other))
    if value is None:
        return False
    unit = _unit_size(_unit_key(other) or "")
    if unit is not None:
        return unit[0] == dim and value * unit[1] == total
    return _unit_key(other) is None and total in (value * small, value * large)


def _amount(s: str) -> Fraction | None:
    """The number before a known unit: '0.003 A' -> 3/1000 (a one-letter symbol stays on the
    number in `normalize_answer`, as '5 N' may be the product 5N), '5 \\mu\\text{m}' -> 5."""
    v = exact_number(normalize_answer(s))
    if v is None:
        v = exact_number(normalize_answer(re.sub(
            r"(?:\\mu\s*|[µμ])?(?:\\(?:text|mathrm)\s*\{\s*)?(?:\\mu\s*|[µμ])?[a-zA-Z]{1,3}$",
            "", s.rstrip().rstrip("}"))))
    return v


def _converted_equal(gold: str, pred: str) -> bool | None:
    """None unless both sides name known units ('12 cm', '0.12 m'); then whether they are one
    amount. Exact conversions only, within one dimension of `_unit_size` (any SI
    prefix on any SI symbol; seconds to weeks; inches to miles; cents and dollars), also
    squared and cubed: 12 cm = 0.12 m, 1.5 kg = 1500 g, 2 kW = 2000 W, 2 h = 120 minutes,
    1 m^2 = 10000 cm^2; units of different dimensions, or with no exact conversion here (5 cm
    and 2 in), disagree. One unit said twice in two spellings ('5 joules', '5 J') is the same
    amount when the numbers agree."""
    gu, pu = _unit_key(gold), _unit_key(pred)
    if not gu or not pu:
        return None
    if {gu, pu} in ({"deg", "degC"}, {"deg", "degF"}):   # 25^\circ and 25 °C: one scale named
        gu = pu
    if gu == pu:                                 # a one-letter symbol stays on its number: 5J
        gv, pv = _amount(gold), _amount(pred)
        return True if gv is not None and gv == pv else None
    (gname, _, ge), (pname, _, pe) = gu.partition("^"), pu.partition("^")
    gs, ps = _unit_size(gname), _unit_size(pname)
    if gs is None or ps is None or gs[0] != ps[0] or ge != pe:
        return False
    gv, pv = _amount(gold), _amount(pred)
    e = int(ge or 1)
    return gv is not None and pv is not None and gv * gs[1] ** e == pv * ps[1] ** e


def _clock(s: str) -> tuple[int, bool] | None:
    """A time of day as (minutes after midnight, says which half of the day): '3:00 PM' ->
    (900, True), 'noon' -> (720, True), 'midnight' -> (0, True), '15:00' -> (900, False),
    "3 o'clock" -> (180, False); a bare integer is no time."""
    s = _OCLOCK_RE.sub(r"\1:00", s)
    m = re.fullmatch(r"(?i)\s*(?:\\text\{\s*)?(?:12(?::00)?\s*)?(noon|midday|midnight)\s*\}?\.?\s*",
                     s)
    if m:
        return (0 if m.group(1).lower() == "midnight" else 720), True
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?", normalize_answer(s))
    if not m or int(m.group(2) or 0) >= 60:
        return None
    h, minute, half = int(m.group(1)), int(m.group(2) or 0), _unit_key(s)
    if half in ("am", "pm"):
        return ((h % 12) * 60 + minute + (720 if half == "pm" else 0), True) if 1 <= h <= 12 \
            else None
    # (a zero-padded hour, "09:45", is on the 24-hour clock)
    return (h * 60 + minute, len(m.group(1)) == 2 and h < 10) if m.group(2) and h <= 23 else None


def _clock_equal(gold: str, pred: str) -> bool | None:
    """None unless one side is a time of day with AM / PM, noon or midnight (`_clock`) and the
    other a time; then whether they are one time. A bare time after 12:59 is on the 24-hour
    clock (3 PM = 15:00); one from 1:00 to 12:59 may also be read on the 12-hour clock (3 PM =
    3:00, 12:00 = noon), as a gold without AM / PM does not say which half it means."""
    gc, pc = _clock(gold), _clock(pred)
    if gc is None or pc is None or not (gc[1] or pc[1]):
        return None
    if gc[1] and pc[1]:
        return gc[0] == pc[0]
    (said, _), (bare, _) = (gc, pc) if gc[1] else (pc, gc)
    return bare == said or (60 <= bare < 13 * 60 and bare % 720 == said % 720)


_MONTHS = "january february march april may june july august september october november december"
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"


def _calendar_name(word: str, names: str) -> int | None:
    """1-based index of a month or weekday by its name or an abbreviation of three letters or more
    ('Mar', 'Sept.', 'Weds', 'Thurs'); None for other words."""
    w = word.lower().rstrip(".")
    for i, name in enumerate(names.split()):
        if len(w) >= 3 and (name.startswith(w) or (names == _WEEKDAYS and w.endswith("s")
                                                   and name.startswith(w[:-1]))):
            return i + 1
    return None


def _date(s: str) -> tuple | None:
    """A date in words: ('d', month, day, year or None) for "March 5", "5 March", "the 5th of
    March", "Mar. 5th, 2024", "5 Mar 2024"; ('w', n) for a weekday, "Wednesday", "Wed."; None for
    anything else (numeric dates, 5/3 or 3/5, are left alone: their order is the locale's)."""
    t = re.sub(r"\\(?:text|mathrm|textrm|textbf|mbox)\s*\{([^{}]*)\}", r" \1 ", s)
    t = re.sub(r"\\[,;: ]|[~$]", " ", t)
    words = re.findall(r"[A-Za-z]+\.?|\d+", re.sub(r"(?i)(?<=\d)(?:st|nd|rd|th)\b", "", t))
    words = [w for w in words if w.lower() not in ("the", "of", "on")]
    if len(t) > 60 or not words or len(words) > 3 or re.search(r"[^\w\s.,{}\\]", t):
        return None
    if len(words) == 1:
        n = _calendar_name(words[0], _WEEKDAYS)
        return ("w", n) if n else None
    if words[0].isdigit() and not words[1].isdigit():
        words[0], words[1] = words[1], words[0]             # "5 March" -> "March 5"
    month = _calendar_name(words[0], _MONTHS)
    if month is None or not words[1].isdigit() or not 1 <= int(words[1]) <= 31 or (
            len(words) == 3 and not (words[2].isdigit() and len(words[2]) == 4)):
        return None
    return "d", month, int(words[1]), int(words[2]) if len(words) == 3 else None


def _date_equal(gold: str, pred: str) -> bool | None:
    """None unless both sides are dates or weekdays in words (`_date`); then whether they are one:
    the day and month in either order ("5 March" = "March 5"), and the year where the gold
    names one."""
    gd, pd = _date(gold), _date(pred)
    if gd is None or pd is None:
        return None
    if gd[0] == "d" and pd[0] == "d" and gd[3] is None:
        return gd[1:3] == pd[1:3]
    return gd == pd


# a tilde right before the number that opens the answer ("~5", "$~5$") is "about 5"; elsewhere
# it is LaTeX's unbreakable space ("1~000", "x =~ 5")
_UNSURE_RE = re.compile(r"\\approx|≈|\?|^\s*\$?\s*~(?=\s*[-+]?\.?\d)|"
                        r"\b(?:maybe|perhaps|probably|possibly|approximately|either)\b")


def _expand_pm(s: str) -> str:
    """'1\\pm\\sqrt{2}' -> '1+\\sqrt{2}, 1-\\sqrt{2}' (a gold answer that is two values)."""
    s = s.replace("±", "\\pm ").replace("∓", "\\mp ")
    pm = r"\\(?:pm|mp)(?![a-zA-Z])"              # not \pmod, \pmb
    if len(re.findall(pm, s)) == 1 and "," not in s:
        return re.sub(pm, "+", s) + ", " + re.sub(pm, "-", s)
    return s


def _or_to_list(s: str) -> str:
    """'2 or 3', '2 \\text{ and } 3' -> '2, 3'; 'or' with a word that says one value twice, '5, or
    equivalently 10/2', '5 \\text{ or in other words } 10/2', is one too (a comma beside it
    makes no empty item)."""
    eq = r"(?:,?\s*(?:equivalently|in\s+other\s+words|put\s+differently|simply|just)\b,?)?"
    return re.sub(r"\s*,?\s*(?:\\text\{\s*(?:or" + eq + r"|and)\s*\}|\bor\b" + eq +
                  r"|\band\b|\\lor|\\vee)\s*", ", ", s)


def verify_math(completion: str, answer: str, lenient: bool = False) -> bool:
    """True when the completion's final answer equals the gold answer.

    Which answer counts (`extract_answer`):

    * only the text after the last `</think>` counts, up to a chat-template end or new-turn
      token (`<|im_end|>`, `<|im_start|>`, `<|endoftext|>`, Gemma's `<end_of_turn>`, Mistral's
      `[INST]` ...); an unclosed `<think>` -> False;
      HTML formatting tags in it are read as markdown would be (`<b>Answer:</b> 5`), markdown
      blockquote marks and setext underlines as plain text, struck-out text (~~6~~) as
      withdrawn, and
      character references as their characters (`&minus;5`, `&frac12;`, `&#8722;5`); invisible
      format characters (zero-width space, BOM, right-to-left mark) are dropped; a final
      statement cut off inside a brace ("The answer is \\boxed{5", "\\frac{1}{2") gives no
      answer;
    * the last `\\boxed{}`/`\\fbox{}`/`\\framebox{}` counts (adjacent boxes, boxes joined by a short
      phrase with "and", and boxes of labelled parts "(a) ... (b) ..." form one list); without a box
      only an anchored final statement (the last one that gives a value, not "This answer is
      correct"): "The answer is X" (or "should / must / will be X"; "is not Y, it is X" gives X),
      "Final answer: X" (also "Final Answer: The largest $n$ is X"), "Answer: X" (also "Answer: The
      value is X"; a bound or estimate, "The value is about X", is no answer), "Answer $X$", "Answer
      = X", "Final answer → X" / "=> X", "Answer - X" / "Answer — X" (a dash only at the start of a
      line or after "final answer": in a sentence it is punctuation; "Answer -5" is read as neither
      5 nor -5), markdown emphasis around the word or the separator ("__Answer:__ X", "*Answer*:
      X"), a "**Final Answer**" heading with X on the next line, a table row "| Answer | X |", "####
      X", "<answer>X</answer>" or "<final_answer>X</final_answer>" (a statement inside read as
      outside), a JSON field {"answer": X} / {"final_answer": "X"} (before a box it does not compete
      with it: code may build such a dict), "Ans: X" / "Ans. X", the anchor inside a display's
      \\text ("$$\\text{Answer: } X$$"), or a last sentence "Therefore, the largest $n$ is X" or
      "Therefore, $x = X$" (one variable; also "∴ x = X"), "X is the (final) answer" or
      "Option B is correct" ("The answer is X, not Y" gives X); a list item's mark
      before X on the line after "Answer:" ("- X") is no minus; a "Final Answer:", "####" or
      "<answer>" line after the
      last box is the final answer; "5!" is a factorial, also at the end of a sentence; the anchor
      word may be in another language ("La respuesta es X", "Die Antwort ist X", "答案是 X", "Ответ:
      X");
    * hedges -> False: "42 or 43" (not one value said twice, "\\frac{1}{2} \\text{ or } 0.5"),
      `\\pm` / `\\mp` for a single value (for two values they are the list: 2 \\mp \\sqrt{3} =
      2 \\pm \\sqrt{3}), `\\approx`, "~5" (a tilde before the opening number; "1~000" is a
      space), extra candidates, several boxes with
      different values offered as alternatives, an "<answer>" tag or "####" line with another
      value than the final answer (and so does another "Final Answer:" statement), a
      question mark right after the final box, a word of doubt right before it or after it
      on its line ("Perhaps \\boxed{5}", "is likely \\boxed{5}", "\\boxed{5} (approx.)"; not
      "\\boxed{\\sqrt{26}} (approximately 5.10)"), and an
      admission of doubt in its sentence or after it ("I'm not sure", "(unsure)", "my best
      guess is", "I guess", "I don't know if this is right", "Not sure.", "I could be wrong",
      "hopefully", "tentative"); an operator or digit glued to the final box ("\\boxed{5}^2",
      "\\boxed{5}\\pi", "-\\boxed{5}": the box alone is not the value); a sentence after the final
      answer that offers another value too ("though 6 is also possible", "it could also be
      14", "it might be 14", "Possibly 14.", "But wait, 13."; not one said under
      a condition, "if the price were 10, the answer would be 13"), and so does a short
      concluding sentence after the final box that says another value ("\\boxed{5}. So 6
      apples.", "Thus $x = 6$.": the box and its restatement disagree; "So 5 apples." agrees);
    * a self-correction ("wait, I made an error", "that's wrong", "my earlier answer is
      incorrect", "let me redo it") withdraws the boxes before it when nothing after them
      hedges ("or", "maybe", "might" ...): the last box counts. An admission of error after the
      final answer withdraws that answer (a re-check, "let me redo it", does not), and so does
      a later sentence that denies its value ("the answer is not 5", "5 is incorrect"; not
      "the answer is not 6", and not "not 5 m" after \\boxed{5 cm}, though "not 50 mm" is a
      denial). "Actually" or "Wait" alone are no self-correction.

    How answers compare (both sides go through `normalize_answer`; gold formats: GSM8K
    `#### 1,234`, MATH LaTeX, a solution with a box or an anchored final statement ("Final
    Answer: X", also a short "The answer is X."), AIME '007', lists):

    * exact: 1/2^99 != 1/2^98, 0.333 != 1/3; radicals exactly in-process (`radical_value`:
      \\sqrt{8} = 2\\sqrt{2}, \\frac{\\sqrt{6}}{2} = \\sqrt{3/2}); other symbolic checks in a
      killable worker with a hard time limit (math-verify's parser, its float tolerance replaced
      by an exact check), never in this process;
    * a gloss in parentheses after the value (in its box, right after the box or after an
      anchored formula: "\\boxed{5} (five)", "Answer: $x = 5$ (that is, five)") must agree with
      it: "5 (five)", "120 (= 5!)", "\\frac12 (0.5)" equal 5, 120, 0.5; "5 (in cm)" is a unit;
      "5 (six)", "3 (rounded)" fail; a trailing ellipsis ("Final answer: 5...") says the digits
      go on: no plain number;
    * a unit after the final box, alone to the end of its sentence, is the box's unit where
      the gold names one ("\\boxed{5} cm" != 5 m; "\\boxed{5} in total." names no inches);
    * units and words after a number are dropped on either side ("5 cm", "\\text{5 apples}", "$12
      dollars", "5 more" (a difference); a unit's symbol and name agree: 5 J = 5 joules; a
      letter after a variable or glued to the digits that names no unit is a variable: 2xy, 5t,
      \\pi r^2 h), but two
      different known units
      disagree (5 cm != 5 m, 3 PM != 3 a.m., \\$5 != 5 cents = 5¢, 25 °C != 25 °F, 5 MB
      != 5 GB, €5 != \\$5 != £5 != ₹5 (any currency by sign, code or name); a bare
      25^\\circ agrees with either scale) unless exactly converted within
      one dimension (`_converted_equal`: any SI prefix on any SI symbol, one rule: 12 cm = 0.12 m,
      1.5 kg = 1500 g, 5 kJ = 5000 J, 3 mA = 0.003 A, 5 k\\Omega = 5 kΩ = 5000 ohms, also
      named ("5 kilojoules", siunitx's
      \\kilo\\joule); seconds to weeks, inches to miles, cents to dollars; no metric to imperial,
      and none between units of one quantity, J and eV); a rate names two units (m/s, miles/hour =
      mph), and 5 m/s != 5 km/h (rates are not converted); degrees and radians are never converted
      (45^\\circ != \\frac{\\pi}{4} either way: the gold's unit is the one the question asked for),
      and a bare 45 equals 45^\\circ;
    * a time of day on either clock: 3 PM = 15:00, noon = 12:00 PM, midnight = 0:00, 3 o'clock
      = 3:00 (a bare 1:00 to 12:59 may also be read on the 12-hour clock: 3:00 PM = 3:00);
      "28 percent", "28 pct", "28\\%" and "28" agree, and 28\\% = 0.28 = 7/25 (a percent sign on
      one side allows both readings of it; with none, 0.28 != 28);
    * a number right before a parenthesis multiplies it (2(1/2) = 1, 2(3) = 6; the mixed
      number is 2\\frac{1}{2});
    * a ratio of two numbers is their quotient (1:2 = 1 \\colon 2 = "1 to 2" = 2:4 = 1/2 = 0.5;
      2:1 != 1:2), a ratio of three or more positive numbers is its proportions (2:4:6 = 1:2:3,
      not 3:2:1) and never a time with seconds (1:2:3 != 1:02:03, whose quotients agree);
    * one quantity in several units of one dimension ("3 hours and 20 minutes", "5 ft 6 in",
      "3 dollars and 20 cents") is one amount, never a list: it equals the same amount in any
      known unit (200 minutes) and a bare number in its smallest or largest unit (200 or 10/3);
      an m beside hours or seconds is minutes ("2h 30m" = 150 minutes; "2 m 30 cm" is metres);
    * intervals and inequalities are one thing: (2, 5] = ]2, 5] (French brackets) = "2 < x \\le
      5" = "\\{x | 2<x\\le5\\}" = "\\{x \\in \\mathbb{R} : 2<x\\le5\\}" (not \\mathbb{Z}) = "x > 2
      and x \\le 5" = "2 < x \\le 5, x \\in \\mathbb{R}", "x < 1 or x > 3" =
      (-\\infty,1)\\cup(3,\\infty), "|x| < 3" = (-3, 3), "x \\ne 3" = (-\\infty,3)\\cup(3,\\infty),
      \\mathbb{R} \\setminus [-1, 1] = "x < -1, x > 1" (two rays apart by a comma that never meet
      are their union; "x > 1, x < 3" is both) = (-\\infty,-1)\\cup(1,\\infty);
      endpoints and their openness must agree, and two inequalities must be in the same
      variable; intervals that overlap or touch are one ([1,2] \\cup [2,3] = [1,3]) and a union
      of listed sets one set (\\{1,2\\} \\cup \\{3\\} = \\{1,2,3\\});
    * a word gold may be said with filler words ("on Tuesday", "the blue one" for "Tuesday",
      "blue"), and yes / no / true / false with a reason that does not hedge ("Yes, it is
      possible"); true means yes and false no (a JSON `true` gold reads "True");
    * the empty set: \\emptyset = \\varnothing = \\{\\} = "no solution" = "none"; "DNE" =
      "does not exist" (a limit or extremum that does not exist) is another answer, and
      "undefined" a third; \\infty = "infinity" = inf = oo = "infinitely many (solutions)" (a
      count without end), and \\mathbb{R} = "all real numbers" = "all real x" (\\mathbb{Z} = "all
      integers", \\mathbb{Q} = "the rational numbers", \\mathbb{C} = "all complex numbers");
    * a choice letter with its value ("\\textbf{(B) }5", "B. 5", "B: 5", "Option (B) 5", also
      after it: "5 (B)") equals that letter ("B", "(B)") or that value ("5"); letter and
      value both given must both agree; one letter A to E is a choice letter in either case
      ("e" = "E" = "(E)"), and a small "e" is also Euler's number (e^1, \\exp(1) equal it, 2.718
      does not): verify_math does not see whether the question shows options, so a gold "e"
      takes either reading;
    * counting notations and gcd / lcm of integers are their value: C(10,3) = {}^{10}C_3 = 10C3
      = C_{10}^3 = 120, P(5,2) = A_5^2 = 20, \\operatorname{lcm}(4,6) = 12 (a gcd or lcm of
      letters is compared with nothing else); "P(5,2)" is the point (5,2) where the gold is a
      tuple;
    * "(p,q)=(3,2)" = (3,2) = "p=3, q=2" = "q=2, p=3" (named single letters against an unnamed
      tuple are read in the alphabet's order: "y=1, x=2" is (2, 1)); "AB = 4", "f(x) = 1",
      "|AB| = 1",
      "\\det A = 1" and "P(A \\cap B) = 0.5" (a probability or expectation of any event) equal
      their right side;
      a box "x = 5+5+1 = 11" counts as its last member (a false chain, "x = 5 = 6", as nothing);
    * equations of one line or curve agree up to rearrangement and a nonzero factor:
      y = 2x + 1 = "2x - y + 1 = 0" = "4x - 2y = -2";
    * a vector (a pmatrix / bmatrix of one row or one column, \\langle 1, 2 \\rangle) is the tuple
      of its entries: pmatrix 1 \\\\ 2 = (1, 2);
    * a complex number in polar form, r cis t (t in radians, with pi or a name), is r e^{i t}:
      2 \\operatorname{cis} \\frac{\\pi}{3} = 1 + \\sqrt{3} i (a bare "cis 60" may be degrees: no);
    * lists and sets are unordered, tuples ordered (in parentheses or, from three entries on,
      brackets: [1, 2, 3] = (1, 2, 3); [1, 2] is an interval); a collection of tuples is a set
      ({(1,2),(3,4)} = (3,4),(1,2), duplicates ignored); the answers of labelled parts
      ("(a) 5, (b) 6", "Part 1: 5, Part 2: 6", in one box or in one box each) are ordered by
      their labels ("(a) 6, (b) 5" is not the list 5, 6, and a labelled gold is read in order),
      except against a set gold, which has no order ("(a) 6, (b) 5" = \\{5, 6\\});
      several choice letters are one set of choices ("A, C" = "AC" = "(A)(C)" != "A"); a
      system in a left brace (\\left\\{\\begin{array} x=1 \\\\ y=2 \\end{array}\\right.) is a
      list; a transpose (x^T, A^\\top) is never dropped;
    * a number in words may name what it counts and may be a dozen or a fraction: "twelve
      apples" = 12, "half a dozen" = 6, "three quarters" = 3/4, "two and a half" = 5/2, "one
      thousand and one" = 1001; a scale word is never a unit ("2 dozen" = 24, not 2);
      digits "2 and 1/2", "1 and a half" (a whole number, "and", a proper fraction in digits or
      words, not a decimal: "2 and 0.5" is two numbers) are the mixed number 5/2
      where the other side is one value and the list 2, 1/2 where it is a list ("2, 1/2" is
      always a list);
    * a congruence "x \\equiv 3 \\pmod{7}" (any spelling of the modulus) equals another of the
      same class and modulus (10 mod 7) and the number 3, its residue as written or its least one
      (not 10);
    * a numeral with a base subscript (204_5) equals only the same numeral in the same base:
      not 204, and not its decimal value 54 either (the question asked for base 5; accepting 54
      would also reward echoing a "convert 54 to base 5" question);
    * "3, 500" is two numbers; "3,500", "3,\\!500", Swiss "3'500" are 3500, and so is
      "1.234.567" with two dots or more 1234567 ("1.234" is a decimal); the Indian grouping
      "1,00,000" (pairs, then three digits) is 100000; "(5)" is 5 in grouping parentheses,
      never the accountant's -5, and "−5" (any minus sign or dash) is -5;
    * Roman numerals of I, V and X are compared as numerals (IV != VI, and IV != 4: a label in
      "I, II and IV" is no number); a lone ordinal word is no number ("third" != 3: it may be
      a fraction's part, and "second" a unit), but one that names a position is ("the third",
      "twenty-first", "second place" = 3, 21, 2).

    Deliberate policies where this differs from math-verify's own regression tests (see
    bench/mathverify_suite.py):

    1. a final answer needs a box or an anchor; a bare value in running text earns nothing, so
       that an RL policy is not paid for a number it merely mentions (`lenient=True`, which
       `evaluate.py --lenient` uses, also takes the region's last formula or number);
    2. no float tolerance: 0.0833333 != 1/12, 0.33 != 1/3 (1/2^99 must not equal 1/2^98); a
       rounded value is not the exact one (3.14 != \\pi, 3.14 != 3.14159), and "about 0.33" or
       "≈ 3.14" is a hedge even where the gold is that decimal (a decimal gold asks for its
       digits: 3.14 = 3.140);
    3. variables are compared strictly: f(x) != f(y) (but not their case: math-verify's parser
       reads X as x, so 2X == 2x); j is a variable, not the imaginary unit (3+4j != 3+4i);
    4. "," is a decimal separator only where nothing else can be read: after digits grouped in
       threes by dots, spaces or apostrophes ("1.234,5", "1 234,5") and in LaTeX's "{,}" before
       other than three digits ("3{,}14"); "1000,99" is not 1000.99, and "12,5" is two numbers;
    5. `\\approx` in the answer is a hedge, even after an exact value;
    6. an equation between two different numbers ("1/2 = 10/9") is no answer, and an equation
       gold with an expression on the left is compared as an equation ("7 = 11a + c" is not
       "11a + c");
    7. boxes that neither join the last one nor hold its value compete with it (a hedge), also
       when a "Final Answer:" line follows them; so does a value stated as the answer after the
       last box ("\\boxed{5} ... Answer: 6"); a gold's last box group is the gold.

    Never raises: anything unexpected counts as False.

    >>> verify_math("<think>2+2</think> The answer is $\\\\boxed{4}$.", "#### 4")
    True
    >>> verify_math("\\\\boxed{4} or \\\\boxed{5}", "4")
    False
    >>> verify_math("\\\\boxed{5}. Wait, I made an error: 3+4=7, so \\\\boxed{7}.", "7")
    True
    >>> verify_math("\\\\boxed{2 < x \\\\le 5}", "(2, 5]")
    True
    >>> verify_math("\\\\boxed{204}", "204_5")
    False
    >>> verify_math("\\\\boxed{28 pct}", "28\\\\%")
    True
    >>> verify_math("\\\\boxed{\\\\varnothing}", "\\\\text{no solution}")
    True
    >>> verify_math("So we get 7.", "7"), verify_math("So we get 7.", "7", lenient=True)
    (False, True)
    """
    try:
        return _verify_math(completion, answer, lenient)
    except Exception:                                           # noqa: BLE001 - a reward never crashes training
        return False


def within_tolerance(completion: str, task: dict, lenient: bool = False) -> bool:
    """Whether the completion's final answer is a number within the task's `tolerance` of its
    gold, |answer - gold| <= tolerance, as OlympiadBench's judge grades a row with an `error`
    (read by `dataset_tasks.answer_tolerance`); the answer is the one `verify_math` reads (a
    hedge or a withdrawn answer is none), compared exactly.

    >>> within_tolerance("\\\\boxed{6.45 \\\\times 10^{3}}", {"answer": "6400", "tolerance": 100.0})
    True
    >>> within_tolerance("\\\\boxed{6600}", {"answer": "6400", "tolerance": 100.0})
    False
    """
    region = answer_region(completion)
    pred = extract_answer(region) if region is not None else None
    number = (lambda s: exact_number(normalize_answer(s)) if s else None)
    p, g = number(pred), number(task["answer"])
    if p is None or g is None:
        return False
    return abs(p - g) <= Fraction(str(task["tolerance"])) and verify_math(
        completion, pred, lenient=lenient)       # its own answer: not hedged, not withdrawn


def _verify_math(completion: str, answer: str, lenient: bool = False) -> bool:
    if not isinstance(completion, str) or answer is None:
        return False
    region = answer_region(completion)
    if region is None:
        return False
    region = _markdown_to_text(_html_to_text(DOUBLED_CMD_RE.sub(
        "", SPECIAL_TOKEN_RE.split(region, 1)[0])))
    if not region.isascii():             # invisible format characters: zero-width space, BOM, RLM
        region = "".join(c for c in region if unicodedata.category(c) != "Cf")
    WORKER.prestart()
    pred, others, how = _extract_full(region, lenient=lenient)
    gold = gold_answer(answer)
    if pred is not None and _check(region, pred, others, gold):
        return True
    if lenient and how in ("", "sentence"):      # evaluation: also the last formula or number
        alt, end = _lenient_answer(region)
        return alt is not None and alt != pred and not _CORRECTION_RE.search(region, end) and \
            _check(region, alt, [], gold)
    return False


def _split_gloss(pred: str) -> tuple[str, list[str]]:
    """'5 (five)' -> ('5', ['5']), '120 (= 5!)' -> ('120', ['5!']), '5 (in cm)' -> ('5', []):
    a value, then in parentheses the same value said another way, which must agree with it (the
    gloss goes with the other boxes). A gloss that is neither a value, a number in words nor a
    unit ('3 (rounded)', '5 (or 6)') or a choice letter ('5 (B)') is left in place."""
    t = pred
    for _ in range(3):
        t = re.sub(r"\\" + _TEXT_CMDS + r"\s*\{([^{}]*)\}", r" \1 ", t)
    m = re.fullmatch(r"(?s)\s*(?P<v>.*?\S)\s+\((?P<g>[^()]{1,80})\)\s*[.,;]?\s*", t)
    func = re.search(r"(?<![a-zA-Z])[a-z]+$", m.group("v")) if m else None   # "cis (\pi/3)"
    said_re = r"(?i)(?:=|i\.\s*e\.?,?|that\s+is,?|equivalently,?|which\s+is)\s*"
    if (not m or not re.search(r"\d|\\[a-zA-Z]", m.group("v"))
            or "," in re.sub(said_re, "", m.group("g").strip(), count=1)
            or re.search(r"(?:\\[a-zA-Z]+|[-+*/=^_,])$", m.group("v"))
            or (func and func.group(0) in _FUNC_WORDS | {"cis"})):
        return pred, []          # "(1, 2) \cup (3, 4)", "2 \cdot (3)", "2 cis (\pi/3)": no gloss
    value, gloss = m.group("v"), m.group("g").strip()
    if re.fullmatch(r"[A-Za-z]", gloss) or _HEDGE_RE.search(gloss) or _QUALIFIER_RE.search(gloss):
        return pred, []
    said = re.match(said_re, gloss)
    if said:
        rest = gloss[said.end():].strip()
        return (value, [rest]) if rest else (pred, [])
    if not re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", gloss)):
        return value, [gloss]                  # "\frac12 (0.5)", "25% (0.25)"
    words = re.split(r"[-\s]+", gloss.lower())
    if words[0] == "in":                         # "(in cm)"
        words = words[1:]
    for k in range(len(words), -1, -1):          # "(twelve apples)": a number, then a unit
        n = _cardinal(words[:k]) if k else None
        if (k == 0 or n is not None) and (k == len(words)
                                          or _normalize("1 " + " ".join(words[k:])) == "1"):
            return value, ([str(n)] if k else [])
    return pred, []


def _mixed_and(s: str) -> str | None:
    """'2 and 1/2', '2 \\text{ and } \\frac{1}{2}', '1 and a half', '3 and 1/4 hours' ->
    '\\frac{5}{2}', '\\frac{3}{2}', '\\frac{13}{4}': a whole number from 1 and a proper fraction
    (in digits or words, not a decimal) joined by "and", read as a mixed number (None for
    anything else)."""
    t = re.sub(r"\\(?:text|mbox|mathrm)\s*\{([^{}]*)\}", r" \1 ", s) if "and" in s else ""
    m = re.fullmatch(r"\s*([1-9]\d*)\s+and\s+(\S.{0,60}?)\s*", t.replace("$", ""))
    if not m or re.fullmatch(r"[\d.\s]+", m.group(2)):
        return None                              # "2 and 0.5", "0 and 1/2" are two numbers
    frac = exact_number(normalize_answer(m.group(2)))
    if frac is None or not 0 < frac < 1:
        return None
    v = int(m.group(1)) + frac
    return f"\\frac{{{v.numerator}}}{{{v.denominator}}}"


# A sentence in the box that states one number: "There are 120 ways", "It takes 3 hours", "She
# has 12 left", "The total is 45 dollars": a subject of at most four words (or "there"), a verb
# that states, the number, then at most four words (a unit or what it counts). No other digit,
# and no word that bounds, negates or hedges ("not", "about", "at least", "more than", "or").
_SENTENCE_VALUE_RE = re.compile(
    r"(?i)\s*(?:there\s+(?:are|is|were|was|will\s+be)|(?:[a-z']+\s+){1,4}(?:is|are|was|were|has|"
    r"have|had|takes?|took|needs?|needed|costs?|equals|gets?|got|makes?|made|scores?|scored|"
    r"weighs?|holds?|contains?|remains?|left|sold|bought|spent|saved|earned|ran|walked|paid|"
    r"pays|owes|receives?|received))\s+(?P<n>-?\d[\d,]*(?:\.\d+)?)(?P<rest>(?:\s+[a-z]+){0,4})"
    r"\s*\.?\s*")


def _sentence_value(pred: str) -> str:
    """'\\text{There are 120 ways}' -> '120 ways' (`_SENTENCE_VALUE_RE`); any other answer as it
    is."""
    if "text" not in pred and "mbox" not in pred:
        return pred
    t = re.sub(r"\\(?:text|mbox|mathrm|textrm)\s*\{([^{}]*)\}", r" \1 ", pred).replace("$", "")
    m = _SENTENCE_VALUE_RE.fullmatch(t) if len(t) < 200 else None
    if m is None or re.search(r"(?i)\b(?:not|no|never|none|about|around|approx\w*|roughly|nearly|"
                              r"almost|over|under|least|most|more|less|fewer|than|or|maybe|"
                              r"perhaps|probably|possibly|each|per|every|times)\b|n't", t):
        return pred
    return m.group("n") + m.group("rest")


def _check(region: str, pred: str, others: list[str], gold: str) -> bool:
    """The comparison half of verify_math: the extracted answer against the gold string."""
    boxes = find_boxes(region)
    if boxes and boxes[-1][2] == pred:           # "\\boxed{5} (five)": a gloss after the box
        after = re.match(r"(?:[ \t$]|\\[)\],;: ]|\\q?quad)*(?:\\text\s*\{\s*)?(\([^()\n]{1,80}\))",
                         region[boxes[-1][1]:])
        if after and _split_gloss(f"{pred} {after.group(1)}")[1]:
            pred = f"{pred} {after.group(1)}"
    # a unit written after the final box, where the gold names a unit and the box none:
    # "\\boxed{5} cm" is 5 cm (against 5 m: no), "$\\boxed{5}$ dollars" (the unit word alone up
    # to the end of its sentence: "\\boxed{5} in total" names no inches)
    if boxes and boxes[-1][2] == pred and _unit_key(gold) and not _unit_key(pred):
        unit = re.match(r"(?:[ \t$]|\\[,;: ]|\\\))*(?:\\(?:text|mathrm)\s*\{\s*)?([a-zA-Zµ]+"
                        r"(?:/[a-zA-Z]+)?(?:\^\{?[23]\}?|[²³])?)\s*\}?(?:[ \t$]|\\\))*"
                        r"(?=(?:[.;!][ \t]*)?(?:\n|$)|[.;!]\s)",
                        region[boxes[-1][1]:boxes[-1][1] + 60])
        if unit and _known_unit(re.sub(r"\^.*|[²³]", "", unit.group(1))):
            pred = f"{pred}\\text{{ {unit.group(1)}}}"
    pred = _sentence_value(pred)
    pred, gloss = _split_gloss(pred)
    others = others + gloss
    gold = _split_gloss(gold)[0]                 # a gold with a gloss, "7 \\text{ (seven)}"
    g = normalize_answer(gold)
    p = normalize_answer(pred)
    if not p or not g:
        return False
    if len(p) > max(MAX_ANSWER_CHARS // 2, 4 * len(g) + 50):         # over-long: no parsing
        return False
    # a gold of four digits or more that opens with a zero is a code (a ZIP code "02139", a PIN
    # "0042"): its digits are the answer, and 2139 is not it; three or fewer ("033", "07") may be
    # a contest's zero padding of the number 33 or 7
    if re.fullmatch(r"0\d{3,}", g) and re.fullmatch(r"-?\d+", p) and p != g:
        return False
    # "2 and 1/2" is a mixed number against one value (5/2, 2.5) and a list against a list
    mixed_p, mixed_g = _mixed_and(pred), _mixed_and(gold)
    if mixed_p and _structure(g)[0] == "scalar":
        p = mixed_p
    elif mixed_g and _structure(p)[0] == "scalar":
        g = mixed_g
    # the answers of labelled parts, "(a) 5, (b) 6", against a set gold: the set of their values
    if _structure(g)[0] == "set" and _structure(p)[0] == "()" and _PART_IN_ANSWER_RE.match(
            re.sub(r"^(?:\\text\s*\{\s*)?", "", _strip_math_delims(pred))):
        p = "\\{" + p[1:-1] + "\\}"
    kind, items = _structure(p)          # "\boxed{5} \boxed{5}": one value said twice, no list
    if kind == "bare" and len(set(items)) == 1 and _structure(g)[0] == "scalar":
        p = pred = items[0]
    budget = _Budget(VERIFY_BUDGET_S)
    relation = any(iv is not None and iv[1] for iv in (_intervals(g), _intervals(p)))
    if relation:
        pass                                     # "x < 1 or x > 3": a union, not a hedge
    elif _HEDGE_RE.search(pred) and not _HEDGE_RE.search(gold):
        # "\pm", "or", ... in the prediction: allowed only when the gold has several values, or
        # when "or" only says one value twice ("\frac{1}{2} \text{ or } 0.5")
        alts = _split_top(normalize_answer(_or_to_list(pred)))
        if {m.group(0) for m in _HEDGE_RE.finditer(pred)} == {"or"} and len(alts) > 1 and \
                _structure(g)[0] == "scalar" and all(_equal(alts[0], a, budget) for a in alts[1:]):
            p = pred = alts[0]
        elif _structure(g)[0] not in ("bare", "set") or _UNSURE_RE.search(pred):
            return False
        else:
            p = normalize_answer(_or_to_list(_expand_pm(pred)))
    elif _HEDGE_RE.search(gold):
        g = normalize_answer(_or_to_list(_expand_pm(gold)))
        p = normalize_answer(_or_to_list(_expand_pm(pred)))
    if _UNSURE_RE.search(pred) and not _UNSURE_RE.search(gold):
        return False
    gc, pc = _normalize(gold, strip_lhs=False), _normalize(pred, strip_lhs=False)
    gl, pl = _assigned(gc), _assigned(pc)
    if gl and pl and gl != pl:                   # y = 2x + 1 vs z = 2x + 1
        return False
    gn, pn = _named_tuple(gc), _named_tuple(pc)
    if gn and pn and sorted(gn[0]) == sorted(pn[0]):     # (p,q)=(3,2) vs q=2, p=3: match by name
        return _relation_equal(gc, pc, budget) if gn[0] != pn[0] else _equal(gn[1], pn[1], budget)
    # named values for an unnamed tuple gold are read in the names' order, which for single
    # letters (with index subscripts) is the alphabet's: "y=1, x=2" is (x, y) = (2, 1), not (1, 2)
    if pn and not gn and _structure(g)[0] == "()" and pn[0] != sorted(pn[0]) and all(
            re.fullmatch(r"[a-zA-Z](?:_\{?\d\}?)?", n) for n in pn[0]):
        vals = _split_top(pn[1][1:-1])
        p = normalize_answer("(" + ",".join(v for _, v in sorted(zip(pn[0], vals))) + ")")
        pc = p
    # one quantity: "3 hours and 20 minutes", "12 cm" vs "0.12 m", "3 PM" vs "15:00"
    amount = _compound_equal(gold, pred)
    for same in (_clock_equal, _converted_equal, _date_equal):
        amount = same(gold, pred) if amount is None else amount
    if amount is False or (amount is None and not (
            g == p or _equal(g, p, budget) or _relation_equal(gc, pc, budget))):
        return False
    gu, pu = _unit_key(gold), _unit_key(pred)
    if amount is None and gu and pu and gu != pu:        # 5 cm vs 5 m
        return False
    # "\\boxed{42} (or 43)": an alternative right after the final box is a hedge too, and so are
    # a question mark or a word of doubt right after it ("\\boxed{42}?", "\\boxed{42} (approx.)",
    # "\\boxed{42} (I'm not sure)") or right before it ("Perhaps \\boxed{42}", "is likely
    # \\boxed{42}", "about \\boxed{42}")
    # (on its line: "\\boxed{\\sqrt{26}} (approximately 5.10)" and a later "Approximately 5.10."
    # give a decimal value besides the exact one)
    # (a word inside a \\text after the box too, parenthesised or not: "\\text{ (approx.)}")
    if boxes and (re.match(r"[\s$.,;:(\\)\]]*(?:\\text\s*\{[\s(]*)?(?:or|either|maybe|perhaps)\b"
                           r"|[ \t$,;:(\\)\]]*(?:\\text\s*\{[ \t(]*)?(?:probably|possibly|"
                           r"I(?:'m|\s+am)\s+not\s+(?:sure|certain)"
                           r"|(?:approx\w*|roughly)\b(?!\.?[ \t]*[-$\d\\(=]))"
                           r"|(?:\s|\$|\\\)|\\\])*(?:\\(?:text|mathrm)\s*\{\s*)?\?",
                           region[boxes[-1][1]:boxes[-1][1] + 40], re.IGNORECASE)
                  or re.search(r"\b(?:maybe|perhaps|probably|possibly|likely|approx\w*|roughly|"
                               r"about|around|nearly|almost|at\s+(?:least|most)|I\s+guess)"
                               r"(?:\s|\$|\\\(|\\\[|=)*$",
                               region[max(0, boxes[-1][0] - 40):boxes[-1][0]], re.IGNORECASE)):
        return False
    # an operator or a digit glued to the final box makes its value another one: "\\boxed{5}^2",
    # "\\boxed{5}\\pi", "\\boxed{5}/2", "\\boxed{5} \\times 10^3", "\\boxed{5}0", "\\boxed{5}.5",
    # "\\boxed{5} \\pm 1", "-\\boxed{5}", "\\sqrt\\boxed{5}": the box alone is not the answer
    # (a degree sign, "\\boxed{5}^\\circ", a unit or percent sign after it, markdown's "**" and
    # a list item's "- " before it are no operator; a minus or digit must touch the box)
    if boxes and _strip_math_delims(boxes[-1][2]) in pred and (
            re.match(r"[ \t]*(?:\^(?!\s*\{?\s*\\circ)|_|\\(?:sqrt|pi|pm|mp|times|cdot|div|frac)"
                     r"(?![a-zA-Z])|[±×÷/·]|\.?\d)", region[boxes[-1][1]:boxes[-1][1] + 20])
            or re.search(r"(?:[-−±^/×÷·\d]|\\(?:sqrt|pm|mp|times|cdot|div)[ \t]*)$",
                         region[max(0, boxes[-1][0] - 20):boxes[-1][0]])):
        return False
    # "\\boxed{5} = 6", "\\boxed{5} \\to 6", "\\boxed{5}\n\n→ 6": an equals sign or an arrow after
    # the final box carries on to a value, which must agree with it
    if boxes and _strip_math_delims(boxes[-1][2]) in pred:
        more = re.match(r"\s*\$?[ \t]*(?:=|\\(?:to|rightarrow|Rightarrow|longrightarrow|"
                        r"Longrightarrow|implies)(?![a-zA-Z])|[→⇒⟹]|->|=>)[ \t]*\$?[ \t]*"
                        r"([^\n$;,]{1,40}?)[ \t]*"
                        r"(?:\$|[.;,](?:\s|$)|\n|$)", region[boxes[-1][1]:boxes[-1][1] + 80])
        if more and re.search(r"\d", more.group(1)):
            others = others + [more.group(1)]
    # several boxes that disagree with each other are a hedge, even if the last one is right
    for other in others:
        o = normalize_answer(other)
        if o and o != p and not _equal(g, o, budget):
            return False
    return True



# ---------- the symbolic worker -----------------------------------------------------

def _math_worker_loop() -> None:  # pragma: no cover - runs in the worker process
    """Worker process: read JSON lines {"op":..., "g":..., "p":...}, answer {"ok": bool} per line.

    op "equal" (the default): math-verify's comparison; op "equation": two equations "L = R" of
    the same curve up to a nonzero factor.

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
    from latex2sympy2_extended.math_normalization import NormalizationConfig
    from math_verify import LatexExtractionConfig, grader, parse, verify

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
        if (isinstance(a, (sympy.MatrixBase, sympy.MatrixExpr))
                and isinstance(b, (sympy.MatrixBase, sympy.MatrixExpr))):
            a, b = grader.safe_sympy_doit(a), grader.safe_sympy_doit(b)
            if (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)
                    and a.shape == b.shape):
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
    # without math-verify's unit removal: `normalize_answer` drops units already, and that list
    # also holds letters that are variables ("t", "h", "c", "ab": 5t would be 5, \pi r^2 h \pi r^2)
    cfg = [LatexExtractionConfig(boxed_match_priority=0, normalization_config=NormalizationConfig(
        basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="all",
        equations=False))]

    def to_sympy(s):
        out = parse("\\boxed{" + s + "}", extraction_config=cfg, fallback_mode="no_fallback",
                    parsing_timeout=None)
        def imaginary(x):                             # latex2sympy reads "i" as a plain symbol
            try:
                return x.xreplace({v: sympy.I for v in x.free_symbols
                                   if getattr(v, "name", "") == "i"})
            except Exception:                          # noqa: BLE001
                return x
        return [rationalize(imaginary(x)) for x in out]

    def equation_equal(g, p):
        """L1 = R1 and L2 = R2 describe one curve: (L1 - R1) / (L2 - R2) is a nonzero constant."""
        def side(eq):
            lhs, rhs = eq.split("=")
            a = [x for x in to_sympy(lhs) if isinstance(x, sympy.Expr)]
            b = [x for x in to_sympy(rhs) if isinstance(x, sympy.Expr)]
            return a[0] - b[0] if a and b else None
        eg, ep = side(g), side(p)
        if eg is None or ep is None or not eg.free_symbols or eg.free_symbols != ep.free_symbols:
            return False
        q = sympy.cancel(sympy.together(eg / ep))
        return bool(q.is_number and q.is_finite and q != 0)

    try:                                          # first parses are slow (grammar, caches): do them
        verify(to_sympy("\\frac{x^2+1}{2}"), to_sympy("(1+x^2)/2"), timeout_seconds=None)
        equation_equal("y=2x+1", "4x-2y=-2")      # before "ready", outside the per-check time limit
    except Exception:                              # noqa: BLE001
        pass
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        try:
            job = json.loads(line)
            if job.get("op") == "equation":
                ok = equation_equal(job["g"], job["p"])
                out.write(json.dumps({"ok": bool(ok)}) + "\n")
                out.flush()
                continue
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
        code = ("import importlib.util as u, sys; "
                "s = u.spec_from_file_location('_rr_math_worker', %r); "
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

    def equal(self, g: str, p: str, budget: _Budget, op: str = "equal") -> bool:
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
                self.proc.stdin.write((json.dumps({"op": op, "g": g, "p": p}) + "\n").encode())
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


WORKER = _SymbolicWorker()
atexit.register(WORKER.kill)
