"""Rewards: every reward is a plain function `(completion, task, **info) -> float`.

`completion` is the generated text (a string). `task` is the data row (a dict): math tasks carry
`"answer"`, code tasks carry `"tests"` (the format of `sandbox.run_tests`), instruction tasks carry
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
| `instruction` | `instruction_reward` (words, keyword, JSON, no commas, language) | Qwen3 §4.4 |
| - | `JudgeReward` (P("yes") from a judge LM) | Qwen3 §4.4 |
| - | `ScalarRewardModel` + `train_reward_model` | Qwen3 §4.4, Bradley-Terry |

`parse_reward_spec("math:1.0,format:0.2")` and `combined_reward(...)` turn flags into one weighted
reward; unknown names raise a ValueError that lists the valid ones.
"""
from __future__ import annotations

import json
import math
import random
import re
from typing import Callable, Iterable

import torch
import torch.nn.functional as F

import codeblocks
from mathcheck import (  # noqa: F401
    WORKER,
    answer_region,
    extract_answer,
    find_boxes,
    normalize_answer,
    verify_math,
    within_tolerance,
)

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


def answer_verified(completion: str, task: dict, lenient: bool = False) -> bool:
    """`verify_math` against the task's gold answer, or against any of its `answers` where the
    dataset gives several acceptable ones (Skywork-OR1's ground_truth lists: its checker takes
    any of them).

    >>> angle = {"answer": "\\\\pi/3", "answers": ["\\\\pi/3", "60^\\\\circ"]}
    >>> right = "\\\\boxed{60^\\\\circ}"
    >>> answer_verified(right, angle), verify_math(right, angle["answer"])
    (True, False)
    """
    golds = task.get("answers") or [task["answer"]]
    if any(verify_math(completion, gold, lenient=lenient) for gold in golds):
        return True
    return bool(task.get("tolerance")) and within_tolerance(completion, task, lenient)


def math_reward(completion: str, task: dict, **_) -> float:
    """1.0 if `verify_math(completion, task["answer"])` (or one of `answers`: `answer_verified`)
    else 0.0.

    Binary rule-based accuracy reward: DeepSeek-R1 §2.2.2; Skywork-OR1 §3 (math-verify on the
    text after `</think>`)."""
    return 1.0 if answer_verified(completion, task) else 0.0


def math_partial_reward(completion: str, task: dict, **_) -> float:
    """1 if `verify_math` accepts the answer (a `\\boxed{}` or an anchored final statement), 0.5 if
    only the last number of the answer region equals the gold answer, else 0.

    Partial credit for small models that rarely box an answer (the embedded SmolLM2-135M): the
    group then carries signal from step one, and the extra 0.5 teaches the box. Unlike a format
    bonus it cannot be earned with an empty `\\boxed{}` (STILL-3's -1/-2 outcome reward can).
    >>> math_partial_reward("25% of 40 is 10.", {"answer": "10"})
    0.5
    """
    if answer_verified(completion, task):
        return 1.0
    numbers = re.findall(r"-?\d+(?:\.\d+)?", answer_region(completion) or "")
    return 0.5 if numbers and numbers[-1] == str(task["answer"]).strip() else 0.0


def still3_outcome_reward(completion: str, task: dict, **_) -> float:
    """+1 correct, -1 wrong, -2 when the answer region has no non-empty `\\boxed{}`.

    One variant in STILL-3's released training code. An empty `\\boxed{}` counts as no box:
    otherwise "\\boxed{}" alone earns -1 instead of -2, a reward hack a small policy finds
    within a few steps (seen on SmolLM2-135M)."""
    region = answer_region(completion)
    if region is None or not any(c.strip() for _, _, c in find_boxes(region)):
        return -2.0
    return 1.0 if answer_verified(completion, task) else -1.0


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
    return 1.0 if find_boxes(m.group("ans")) else 0.0


# ---- Phi-4-reasoning-plus --------------------------------------------------------------

PHI4_L_MAX, PHI4_L_POS, PHI4_L_NEG = 31744, 25600, 3702


def scaled_phi4_lengths(max_tokens: int) -> tuple[int, int, int]:
    """Phi-4's (L_max, L_pos_control, L_neg_control) scaled from 31744 to a run's max length,
    keeping their ratios:
    (max_tokens, round(max_tokens * 25600/31744), round(max_tokens * 3702/31744)).

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
    Source: Phi-4-reasoning technical report §4 (the shape; the constants as in a third-party
    reimplementation citing the paper: see docs/recipes.md).

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
        correct = answer_verified(completion, task)
    return cosine_length_reward(L, bool(correct), L_max, L_pos_control, L_neg_control)


def phi4_repetition_penalty(completion: str, task: dict | None = None, n: int = 5,
                            min_count: int = 5, **_) -> float:
    """R_rep = -max( #{distinct n-grams occurring more than 5 times} / #n-grams,
                     (count of the most frequent n-gram) / (#words / n) ), n = 5, on words.

    Source: Phi-4-reasoning §4. 0.0 when there are fewer than n words.

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
    """R = 8/13 R_acc + 1/13 R_rep (Phi-4-reasoning §4). It scores unfinished completions itself
    (R_acc = -0.5 without EOS), so a training loop must not overwrite that score.

    >>> done = phi4_reward("<think>\\nx\\n</think>\\n\\n\\\\boxed{3}", {"answer": "4"},
    ...                    num_tokens=4000)
    >>> cut = phi4_reward("x " * 4000, {"answer": "4"}, num_tokens=4000, finished=False)
    >>> round(done, 4), round(cut, 4)   # long wrong: 8/13 * -0.5; cut off: 8/13 * -0.5 + R_rep / 13
    (-0.3077, -0.6919)
    """
    return (w_acc * phi4_length_aware_reward(completion, task, **info)
            + w_rep * phi4_repetition_penalty(completion, task))


# ---- DAPO ------------------------------------------------------------------------------

DAPO_CACHE_SHARE = 4096 / 20480   # DAPO §3.4: L_cache 4096 of L_max 20480, the last fifth


def dapo_overlong_penalty(completion: str, task: dict | None = None, num_tokens: int | None = None,
                          max_tokens: int = 20480, cache_tokens: int | None = None, **_) -> float:
    """DAPO soft overlong punishment (DAPO §3.4, eq. 13), added to the task reward:

        0                                   if L <= L_max - L_cache
        ((L_max - L_cache) - L) / L_cache   if L_max - L_cache < L <= L_max
        -1                                  if L > L_max

    DAPO uses L_max 20480 and L_cache 4096: the soft interval is the last fifth of the budget.
    `cache_tokens=None` keeps that share at any L_max (`max_tokens` is the run's max response
    length), so a short run is not penalised from its first token. A cache >= L_max is an error.
    It scores long completions itself: a training loop must not overwrite its score.

    >>> dapo_overlong_penalty("", num_tokens=18432)     # halfway into the 4096-token cache
    -0.5
    >>> dapo_overlong_penalty("", num_tokens=90, max_tokens=100)   # L_cache 20: 10 tokens into it
    -0.5
    """
    L, _done = _length_and_finish(completion, task, num_tokens, True)
    if cache_tokens is None:
        cache_tokens = max(1, round(max_tokens * DAPO_CACHE_SHARE))
    if cache_tokens >= max_tokens:
        raise ValueError(f"DAPO overlong penalty: cache_tokens {cache_tokens} >= max_tokens "
                         f"{max_tokens} would penalise every completion from its first token; "
                         "use a cache below the max length (DAPO: 4096 of 20480; default: "
                         f"{DAPO_CACHE_SHARE:.0%} of it)")
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
    """An action reward in STILL-3's sense: min(#reflection-word occurrences, cap) / cap, in [0, 1].

    STILL-3 names action rewards but gives no formula: this word list and cap are this project's
    choice.

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
    """A length reward in STILL-3's sense: min(L, max_tokens) / max_tokens, in [0, 1]
    (longer = more).

    STILL-3 names length rewards but gives no formula: this linear form is this project's choice.

    Warning (STILL-3 authors): length rewards invite hacking (padding and repetition); pair it
    with an outcome reward and a repetition penalty.

    >>> still3_length_reward("", num_tokens=2048, max_tokens=8192)
    0.25
    """
    L, _done = _length_and_finish(completion, task, num_tokens, True)
    return min(L, max_tokens) / max_tokens


# ---- code ------------------------------------------------------------------------------

def extract_code(completion: str) -> str | None:
    """The last fenced Python block (```python / ```py / ```python3, else an untagged ```) after
    the think block (`codeblocks.code_blocks`); None when there is none or the think block never
    closed.

    >>> extract_code("<think>```py\\nx = 1\\n```</think>```py\\nx = 2\\n```\\n```\\nx = 3\\n```")
    'x = 2\\n'
    """
    region = answer_region(completion)
    if region is None:
        return None
    blocks = codeblocks.code_blocks(region)
    tagged = [code for lang, code in blocks if lang in codeblocks.PYTHON_TAGS]
    untagged = [code for lang, code in blocks if lang == ""]
    if tagged:
        return tagged[-1]
    return untagged[-1] if untagged else None


def code_rewards(completions: list[str], tasks: list[dict], all_or_nothing: bool = False,
                 workers: int | None = None, **limits) -> list[float]:
    """Batched code reward through `sandbox.run_many` (one sandbox pool for the whole batch).

    Per completion: no code block -> 0; code that does not compile -> 0 without running
    (Skywork-OR1's sandbox does the same), as does code over `sandbox_checks.MAX_CODE_BYTES`,
    refused before it is parsed (`sandbox_checks.compile_error`: parsing 1.5 MB of list literal
    took the trainer seconds and 500 MB); else passed/total, or 1.0 only if every test passes when
    `all_or_nothing` (Skywork-OR1 §3 rewards code all-or-nothing).
    A task's `prelude` (the imports Skywork-OR1's graders put before a solution:
    `dataset_tasks.code_tests`) runs before the code (`codeblocks.with_prelude`).
    """
    import sandbox  # lazy: only code tasks need it
    out = [0.0] * len(completions)
    jobs, where = [], []
    for i, (c, task) in enumerate(zip(completions, tasks)):
        code = extract_code(c)
        if not code or not task.get("tests") or sandbox.compile_error(code, "solution.py"):
            continue
        jobs.append((codeblocks.with_prelude(task.get("prelude", ""), code), task["tests"]))
        where.append(i)
    if jobs:
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


def question_text(task: dict) -> str:
    """The question a judge or reward model reads: `task["question"]`, else its prompt; of a
    prompt that is a conversation, its last user turn.

    >>> question_text({"prompt": [{"role": "system", "content": "Be brief."},
    ...                           {"role": "user", "content": "2+2?"}]})
    '2+2?'
    """
    q = task.get("question", task.get("prompt", ""))
    if isinstance(q, list):
        q = next((m.get("content", "") for m in reversed(q) if m.get("role") == "user"), "")
    return q


class JudgeReward:
    """Model-based reward with a reference answer (Qwen3 §4.4): a judge LM reads question,
    reference and response; the reward is its probability of "yes" against "no" at the next
    token:  R = p(yes) / (p(yes) + p(no)),  each p summed over the spellings " yes", "yes",
    " Yes", "Yes" (likewise "no") that are single tokens in the judge's vocabulary.

    `task` needs "question" and "reference" (falls back to "answer").
    """

    def __init__(self, model, tokenizer, template: str = JUDGE_TEMPLATE, max_length: int = 4096):
        self.model, self.tokenizer = model, tokenizer
        self.template, self.max_length = template, max_length
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
        return self.template.format(question=question_text(task),
                                    reference=task.get("reference", task.get("answer", "")),
                                    response=response)

    def score_batch(self, completions: list[str], tasks: list[dict]) -> list[float]:
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
        texts = [_rm_texts(question_text(t), _answer_text(c) or c)
                 for c, t in zip(completions, tasks)]
        with torch.no_grad():
            r = _rm_forward(self.model, self.tokenizer, texts, self.max_length)
        return r.float().tolist()

    def __call__(self, completion: str, task: dict, **_) -> float:
        return self.score_batch([completion], [task])[0]


def _rm_forward(model, tokenizer, texts: list[str], max_length: int):
    if tokenizer.pad_token_id is None:
        raise ValueError("reward model tokenizer has no pad token: set tokenizer.pad_token "
                         "(e.g. = tokenizer.eos_token) and model.config.pad_token_id")
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    device = next(model.parameters()).device
    enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True,
                    max_length=max_length)
    out = model(input_ids=enc["input_ids"].to(device),
                attention_mask=enc["attention_mask"].to(device))
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


def gradable(task: dict) -> bool:
    """Whether `task_solved` has anything to check: an answer, tests or constraints (a
    prompts-only task, --answer_field none, has none)."""
    return any(task.get(k) for k in ("answer", "tests", "constraints"))


def task_solved(completion: str, task: dict, lenient: bool = False) -> bool:
    """Whether the completion solves the task: the math answer (`verify_math`, `lenient` as it
    takes it), all tests, or all constraints. The success that accuracy, pass rates and group
    filters count, whatever the training reward is."""
    if task.get("answer"):
        return answer_verified(completion, task, lenient=lenient)
    if task.get("tests"):
        return code_reward(completion, task, all_or_nothing=True) == 1.0
    if task.get("constraints"):
        return instruction_reward(completion, task, all_or_nothing=True) == 1.0
    return False


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
# Rewards that need a model, built by the training script from --judge_model / --reward_model.
MODEL_REWARDS = {"judge": "--judge_model", "reward_model": "--reward_model"}

# The task field a reward reads: on a task without it the reward does not apply (adds nothing),
# so one run can mix math, instruction-following and code tasks (Qwen3 general RL, §4.4).
NEEDS = {"math": "answer", "math_partial": "answer", "still3_outcome": "answer",
         "length_aware": "answer", "phi4": "answer", "judge": "answer",
         "code": "tests", "code_all": "tests", "instruction": "constraints"}

# Rewards that score an unfinished completion (no EOS within the budget) themselves: Phi-4's -0.5
# and DAPO's overlong penalty. A training loop never overwrites their score for truncation.
SCORES_UNFINISHED = {"length_aware", "phi4", "overlong"}


def applies(name: str, task: dict) -> bool:
    """Whether reward `name` applies to `task` (the task has the field the reward reads)."""
    need = NEEDS.get(name)
    return need is None or bool(task.get(need)) or (name == "judge" and bool(task.get("reference")))


def parse_reward_spec(spec: str | list,
                      weights: str | list | None = None) -> list[tuple[str, float]]:
    """Flags -> [(name, weight)].

    parse_reward_spec("math:1.0,format:0.2")          -> [("math", 1.0), ("format", 0.2)]
    parse_reward_spec("math,format", "1,0.2")         -> same (names and weights apart, as TRL)
    parse_reward_spec("math")                         -> [("math", 1.0)]
    Unknown names raise ValueError listing the valid ones.
    """
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)
             if str(s).strip()]
    if weights is not None:
        ws = [_weight(w, spec) for w in (weights.split(",") if isinstance(weights, str)
                                         else weights)]
        if len(ws) != len(names):
            raise ValueError(f"{len(names)} reward names but {len(ws)} weights: {names} / {ws}")
        pairs = list(zip(names, ws))
    else:
        pairs = []
        for item in names:
            name, colon, w = item.partition(":")
            pairs.append((name.strip(), _weight(w, spec) if colon else 1.0))
    valid = ", ".join(sorted({*REWARDS, *MODEL_REWARDS}))
    for name, _w in pairs:
        if name not in REWARDS and name not in MODEL_REWARDS:
            raise ValueError(f"unknown reward {name!r}; valid names: {valid}")
    if not pairs:
        raise ValueError(f"no rewards given; valid names: {valid}")
    twice = sorted({n for n, _ in pairs if [m for m, _ in pairs].count(n) > 1})
    if twice:   # was summed silently
        raise ValueError(f"--rewards {spec!r} names {', '.join(twice)} twice; name each once, "
                         "with its weight (math:2)")
    return pairs


def _weight(text, spec) -> float:
    """A reward's weight: a finite number ('math:abc', 'math:' and 'math:nan' were a bare float
    error, a weight of 0 or NaN)."""
    try:
        w = float(text)
    except (TypeError, ValueError):
        w = math.nan
    if not math.isfinite(w):
        raise ValueError(f"--rewards {spec!r}: the weight {str(text).strip()!r} is not a number; "
                         "write NAME:WEIGHT, e.g. 'math:1,format:0.2'")
    return w


class combined_reward:
    """R = sum_k w_k R_k(completion, task, **info) over the (name or callable, weight) pairs that
    apply to the task (`applies`: math rewards need an answer, code rewards tests, ...).

    `combined_reward(parse_reward_spec("math:1,format:0.2"))(completion, task, num_tokens=...)`.
    Model-based rewards ("judge", "reward_model") come in `models={"judge": JudgeReward(...)}`.
    `.breakdown(...)` returns each applicable component and the total, for logging.
    `.scores_unfinished`: some component scores unfinished completions itself (phi4, overlong).

    >>> r = combined_reward("math:1,instruction:0.5")
    >>> r.breakdown("\\\\boxed{4}", {"answer": "4"})          # instruction does not apply
    {'math': 1.0, 'total': 1.0}
    """

    def __init__(self, names_and_weights, models: dict | None = None):
        if isinstance(names_and_weights, str):
            names_and_weights = parse_reward_spec(names_and_weights)
        models = models or {}
        self.parts = []
        for name, w in names_and_weights:
            if callable(name):
                self.parts.append((getattr(name, "__name__", "reward"), name, float(w)))
            elif name in REWARDS:
                self.parts.append((name, REWARDS[name], float(w)))
            elif name in MODEL_REWARDS:
                if name not in models:
                    raise ValueError(
                        f"reward {name!r} needs a model: pass {MODEL_REWARDS[name]} PATH")
                self.parts.append((name, models[name], float(w)))
            else:
                raise ValueError(
                    f"unknown reward {name!r}; valid names: {', '.join(sorted(REWARDS))}")
        self.scores_unfinished = any(name in SCORES_UNFINISHED for name, _fn, _w in self.parts)

    def breakdown(self, completion: str, task: dict, **info) -> dict[str, float]:
        out = {name: fn(completion, task, **info) for name, fn, _w in self.parts
               if applies(name, task)}
        out["total"] = sum(w * out[name] for name, _fn, w in self.parts if name in out)
        return out

    def __call__(self, completion: str, task: dict, **info) -> float:
        return self.breakdown(completion, task, **info)["total"]
