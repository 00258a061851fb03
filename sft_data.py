"""The SFT examples: where the traces come from, and which of them are kept.

An example is {"messages": [..., {"role": "assistant", "reasoning_content", "content"}],
"reference"}: a conversation whose last turn is the one trained on, and the value its final
answer is checked against (None: nothing to check); a conversation of several replies is one
example per reply (`conversations.reply_examples`). `load_examples` picks the source by --dataset:

* `synthetic_examples`: the worked solutions of `data.math_tasks` as reasoning (the demo's
  stand-in for curated reasoning traces);
* `jsonl_examples`: a file of {messages}, ShareGPT, Alpaca or {prompt, reasoning, answer} rows;
* `teacher_examples`: rejection sampling from a teacher (Qwen3 cold start, Phi-4), kept only when
  verified correct;
* `fusion_examples`, `non_thinking_examples`: Qwen3's thinking-mode fusion data (§4.3), which
  `sft.fuse_modes` then flags with /think and /no_think.

A row of a data file is read into a conversation, and checked, by `conversations.py` (the
schemas it reads; `check_conversation`: what cannot be trained on).

`filter_responses` is Qwen3's cold-start response filter (§4.1): wrong answers, repetition, and
think blocks that conclude something other than the final answer are dropped. It reads responses
with `conversations.split_reasoning`, `last_boxed` and `reasoning_claim`; `think_format` is the
parser of the format check (`sft_run.evaluate_format`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch

import cli
import conversations
import data
import dataset_tasks
import engines
import models
import runs
import tools
from chat_template import END_THINK
from rewards import verify_math


# ----------------------------------------------------------------------------------------------
# Sources
# ----------------------------------------------------------------------------------------------
def load_examples(cfg) -> tuple[list[dict], list[dict] | None, dict]:
    """The examples of --dataset after `filter_responses`: (examples, non-thinking examples or
    None, the filter's counts). Only --dataset fusion has non-thinking examples of its own (the
    thinking ones are rejection-sampled, so only verified-correct traces are kept); for the
    others `sft.fuse_modes` makes a share of the examples non-thinking. `cfg` is an `sft.Config`."""
    if cfg.dataset == "fusion":
        thinking, plain = fusion_examples(cfg)
        thinking, counts = filter_responses(thinking, cfg.max_repetition)
        if not thinking:
            raise data.DataError(f"--dataset fusion: none of {cfg.teacher or cfg.model}'s samples "
                                 f"was correct ({counts}); raise --teacher_samples or start from "
                                 "a stronger model")
        return thinking, plain, {**counts, "non_thinking": len(plain)}
    if cfg.dataset == "math":
        examples = synthetic_examples(cfg.num_examples, cfg.seed)
    elif cfg.dataset == "teacher":
        examples = teacher_examples(cfg)
    elif cfg.dataset == "math_tools":
        examples = tools.sft_examples(cfg.num_examples, cfg.seed)
    # 'TRAIN.JSONL', .csv, .jsonl.gz; any other path there is named as `rows_from_file` names it
    # (a folder, a .zst or .xlsx file: what to pass instead)
    elif (dataset_tasks.file_type(Path(cfg.dataset)) in dataset_tasks.FILE_TYPES
          or Path(cfg.dataset).exists()):
        examples = jsonl_examples(cfg.dataset)
    else:
        raise data.DataError(f"--dataset {cfg.dataset!r}: use math, teacher, fusion, math_tools "
                             f"or a {', '.join(dataset_tasks.FILE_TYPES[:-1])} or "
                             f"{dataset_tasks.FILE_TYPES[-1]} file")
    examples, counts = filter_responses(examples, cfg.max_repetition)
    return examples, None, counts


SOURCES = ("math", "teacher", "fusion", "math_tools")


def check_source(cfg):
    """--dataset that names no source, refused before any model loads (a missing file, a link in
    a loop or to nothing was named only once the model had loaded, which takes minutes for a
    large one). On --resume or --eval_only it is not read, so not checked."""
    if cfg.dataset in SOURCES or cfg.resume or cfg.eval_only:
        return
    cli.check_links(cfg.dataset, "--dataset")
    if not Path(cfg.dataset).exists():
        if dataset_tasks.file_type(Path(cfg.dataset)) in dataset_tasks.FILE_TYPES:
            raise data.DataError(f"--dataset {cfg.dataset}: no such file; pass a .jsonl, .json, "
                                 ".csv or .parquet file, or math, teacher, fusion, math_tools")
        raise data.DataError(f"--dataset {cfg.dataset!r}: use {', '.join(SOURCES)} or a "
                             f"{', '.join(dataset_tasks.FILE_TYPES[:-1])} or "
                             f"{dataset_tasks.FILE_TYPES[-1]} file")


def synthetic_examples(n: int, seed: int) -> list[dict]:
    """data.math_tasks: reasoning = the worked solution, answer = a `\\boxed{}` sentence."""
    return [{"messages": data.build_messages(t) + [
                {"role": "assistant", "reasoning_content": t["solution"],
                 "content": conversations.boxed_sentence(t["answer"])}], "reference": t["answer"]}
            for t in data.math_tasks(n, "train", seed)]


def jsonl_examples(path: str) -> list[dict]:
    """The rows of a data file, each read by `conversations.row_example` (the schemas it reads:
    OpenAI messages, TRL prompt-completion, ShareGPT, Alpaca, Gemini, GSM8K's question-answer, a
    rendered chat, ...), and made one example per reply to train (`conversations.reply_examples`),
    each of which must pass `conversations.check_conversation`. Next to reasoning, an `answer`
    without `\\boxed` is the final value and is boxed (and checked by the filter); an optional
    "reference" is the value to check against. A bad row: a DataError naming file and row. A
    file of several splits (a `split` column, or {"train": [rows], "test": [rows]}) gives its
    train rows: its test rows are not trained on. Said once, on loading: that a preference row
    trains its "chosen" reply ("rejected" is not used), and how many rows repeat an earlier one
    (each is trained as often as the file gives it: rows are not deduplicated)."""
    rows = dataset_tasks.rows_from_file(Path(path), split="train")
    preference = sum(isinstance(row, dict) and "rejected" in row for row in rows)
    if preference:
        print(f"[sft] {path}: {preference} preference row(s): SFT trains each one's 'chosen' "
              "reply; 'rejected' is not used")
    seen = {json.dumps(row, sort_keys=True, default=str) for row in rows}
    if len(seen) < len(rows):
        print(f"[sft] {path}: {len(rows) - len(seen)} row(s) repeat an earlier one; each is "
              "trained as often as given (rows are not deduplicated)")
    out = []
    for i, row in enumerate(rows):
        try:
            example = conversations.row_example(row)
            if dataset_tasks.file_type(Path(path)) == ".parquet":   # Arrow's columns of objects
                example = conversations.without_arrow_nulls(example)
            conversations.check_tools(example.get("tools"), example["messages"])
            out += conversations.reply_examples(example)
        except ValueError as e:
            raise data.DataError(f"{path}: row {i}: {e}") from None
    return out


def teacher_examples(cfg) -> list[dict]:
    """Rejection sampling (Qwen3 cold start, Phi-4 curated SFT): `teacher_samples` answers per
    problem at T=0.6, top-p 0.95 (Qwen3's thinking settings). Every sample becomes a candidate;
    `filter_responses` then drops the wrong ones (and counts them). It also drops and counts
    the unfinished samples ("unfinished") and those the template would mangle or that have no
    answer ("malformed": `conversations.check_conversation`), which come marked {"dropped": reason}.
    `cfg` is an `sft.Config` (teacher or model, num_examples, teacher_samples, max_length, engine,
    seed)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    teacher, ttok = models.load_policy(cfg.teacher or cfg.model, device=device)
    tasks = data.math_tasks(cfg.num_examples, "train", cfg.seed)
    engine = engines.make_engine(cfg.engine, teacher, ttok)
    params = engines.SamplingParams(n=cfg.teacher_samples, temperature=0.6, top_p=0.95,
                                   max_new_tokens=cfg.max_length // 2, seed=cfg.seed)
    out = []
    with engines.progress(f"sampling {cfg.teacher or cfg.model}"):
        outs = engine.generate(data.prompt_ids(ttok, tasks), params)
    for c in outs:
        if c.truncated:
            out.append({"dropped": "unfinished"})
            continue
        t = tasks[c.prompt_index]
        reasoning, answer = conversations.split_reasoning(c.text)
        messages = data.build_messages(t) + [
            {"role": "assistant", "reasoning_content": reasoning, "content": answer}]
        try:
            conversations.check_conversation(messages)
        except ValueError:      # e.g. two think blocks, one never closed, no answer after it
            out.append({"dropped": "malformed"})
            continue
        out.append({"messages": messages, "reference": t["answer"]})
    return out


def non_thinking_examples(n: int, seed: int) -> list[dict]:
    """Non-thinking SFT data of other kinds of task (Qwen3 §4.3 curates non-thinking data over many
    task kinds): instruction following answered directly (`data.instruction_tasks`, responses
    that meet every constraint) and math answered with the final sentence only."""
    instr = [{"messages": data.build_messages(t) + [{"role": "assistant", "reasoning_content": "",
                                                     "content": t["response"]}], "reference": None}
             for t in data.instruction_tasks(n - n // 2, "train", seed)]
    maths = [{"messages": data.build_messages(t) + [{"role": "assistant", "reasoning_content": "",
                                                     "content": conversations.boxed_sentence(
                                                         t["answer"])}],
              "reference": t["answer"]}
             for t in data.math_tasks(n // 2, "train", seed + 1)]
    return instr + maths


def fusion_examples(cfg) -> tuple[list[dict], list[dict]]:
    """(thinking, non-thinking) data of Qwen3's thinking-mode fusion (§4.3): the thinking data
    are rejection-sampled from the stage-2 (reasoning-RL) model on the stage-1 queries, so fusion
    does not undo RL (`teacher_examples` on `data.math_tasks(num_examples, seed)`, the cold
    start's queries; `filter_responses` then keeps the verified-correct ones); the non-thinking
    data cover other kinds of task (`non_thinking_examples`)."""
    thinking = teacher_examples(cfg)
    n_plain = max(1, round(cfg.num_examples * cfg.no_think_ratio
                           / max(1 - cfg.no_think_ratio, 1e-9)))    # no_think_ratio of all examples
    return thinking, non_thinking_examples(n_plain, cfg.seed)


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (braces matched).

    >>> print(last_boxed("first \\\\boxed{1}, then \\\\boxed{\\\\frac{1}{2}}."))
    \\frac{1}{2}
    """
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    depth, j = 0, i + len("\\boxed")
    for k in range(j, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[j + 1:k]
    return None


def reasoning_claim(reasoning: str) -> str | None:
    """What the think block concludes: its last `\\boxed{}`, else the text after its last
    "answer is", else its last number (integer, decimal, a/b or \\frac{a}{b})."""
    box = last_boxed(reasoning)
    if box is not None:
        return box
    m = re.findall(r"answer is:?\s*\$?([^\n$]+?)\$?\.?\s*(?:\n|$)", reasoning, re.I)
    if m:
        return m[-1].strip()
    nums = re.findall(r"-?\\frac\{\d+\}\{\d+\}|-?\d+(?:/\d+|\.\d+)?", reasoning)
    return nums[-1] if nums else None


def think_format(text: str) -> dict:
    """Parse `<think>\\n...\\n</think>\\n\\n answer`: closed block, whether it is empty, boxed
    answer after it.

    >>> think_format("<think>\\n\\n</think>\\n\\nSo $\\\\boxed{3}$.")
    {'closed': True, 'empty': True, 'boxed': True}
    """
    m = re.match(r"\s*<think>(.*?)</think>(.*)", text, re.S)
    if not m:
        return {"closed": False, "empty": False, "boxed": False}
    return {"closed": True, "empty": not m.group(1).strip(),
            "boxed": last_boxed(m.group(2)) is not None}


# ----------------------------------------------------------------------------------------------
# Response filtering (Qwen3 cold start §4.1)
# ----------------------------------------------------------------------------------------------
def repetition(text: str, n: int = 8) -> float:
    """Fraction of repeated word n-grams: 1 - #distinct / #n-grams (0 for a text that never
    repeats itself, near 1 for a loop).

    >>> repetition("a b c d e f"), round(repetition("go " * 10, n=2), 3)
    (0.0, 0.889)
    """
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def references(reference) -> list[str]:
    """The values a reply's final answer is checked against (`filter_responses`): a reference
    that lists several acceptable answers (a list of them, or Skywork-OR1's ground truth as JSON
    text '["12", "12.0"]': its checker takes any, `dataset_tasks.acceptable_answers`) is each of
    them; any other is one value.

    >>> references('["1/2", "0.5"]'), references(12)
    (['1/2', '0.5'], ['12'])
    """
    many = dataset_tasks.acceptable_answers({"reward_model": {"ground_truth": reference}})
    return many or [str(reference)]


def filter_responses(examples: list[dict], max_repetition: float) -> tuple[list[dict], dict]:
    """Qwen3 cold-start response filtering; returns (kept, counts per rule, first rule wins):
    wrong_answer (final answer != reference, or != each of its `references`, when there is
    one), repetition (repeated 8-gram share > max_repetition), inconsistent (the think block
    concludes a different value)."""
    kept, counts = [], {"wrong_answer": 0, "repetition": 0, "inconsistent": 0}
    for ex in examples:
        if "dropped" in ex:       # a sample that never became an example (`teacher_examples`)
            counts[ex["dropped"]] = counts.get(ex["dropped"], 0) + 1
            continue
        reply = ex["messages"][-1]
        # content is None on a turn that only calls tools (the template renders it as '')
        reasoning, answer = reply.get("reasoning_content"), reply.get("content") or ""
        if reasoning is None:
            reasoning, answer = (conversations.split_reasoning(answer) if END_THINK in answer
                                 else ("", answer))
        claim = reasoning_claim(reasoning) if reasoning.strip() else None
        if ex.get("reference") is not None and not any(
                verify_math(answer, r) for r in references(ex["reference"])):
            counts["wrong_answer"] += 1
        elif repetition(reasoning + "\n" + answer) > max_repetition:
            counts["repetition"] += 1
        elif (claim is not None and last_boxed(answer) is not None
              and not verify_math(f"\\boxed{{{claim}}}", last_boxed(answer))):
            counts["inconsistent"] += 1
        else:
            kept.append(ex)
    return kept, {**counts, "kept": len(kept), "total": len(examples)}


# ----------------------------------------------------------------------------------------------
# The examples of a run (its directory keeps them, for --resume)
# ----------------------------------------------------------------------------------------------
def write_examples(run_dir: Path, examples: list[dict], counts: dict):
    """<run_dir>/train.jsonl (the examples, after filtering and fusion) and filter.json (the
    filter's counts, also printed)."""
    print(f"[sft] response filter: {counts}")
    runs.atomic_write_text(run_dir / "filter.json", json.dumps(counts, indent=2))
    runs.atomic_write_text(run_dir / "train.jsonl", "".join(json.dumps(e) + "\n" for e in examples))


def read_examples(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "train.jsonl").read_text().splitlines()]
