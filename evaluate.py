"""Evaluate a checkpoint: pass@1 (greedy), avg@k and pass@k, thinking on/off, thinking budgets.

pass@k, the unbiased estimator (Chen et al. 2021, "Evaluating Large Language Models Trained on
Code", eq. 1): with n samples of which c are correct,

    pass@k = 1 - C(n - c, k) / C(n, k)      (averaged over problems)

computed as 1 - Π_{i=n-c+1}^{n} (1 - k/i) to avoid huge binomials. avg@k is the mean
correctness over the k samples (the "avg@k" of DeepSeek-R1 / Skywork-OR1 tables).

Two checkpoints on the same problems are compared with the exact sign test (`sign_test`,
`paired`): only the problems one model solves and the other does not carry information.

Thinking modes follow Qwen3: "on" adds `/think` to the prompt, "off" adds `/no_think` and
renders the template with `enable_thinking=False`. The thinking-budget sweep (Qwen3 tech report,
Fig. "thinking budget") cuts the think block at each budget with `engines.STOP_THINKING` and
plots accuracy against the budget.

    python evaluate.py --model runs/grpo/checkpoint --task math --eval_problems 100 --k 4
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import cli
import data
import dataset_tasks
import engines
import models
import rewards
import runs
import tools
from cli import flag


@dataclass
class Config:
    model: str = flag("smollm2", "checkpoint folder, hub id, 'smollm2' (embedded default) "
        "or 'tiny'")
    task: str = flag("math", "'math', 'humaneval', a "
                     ".jsonl/.json/.csv/.tsv/.parquet/.arrow/.feather file or a HF dataset id "
                     "(NAME:CONFIG for one with configs, e.g. openai/gsm8k:main)")
    split: str = flag("test", "split of the task to evaluate on")
    eval_problems: int = flag(50, "number of problems (0 = all): from a file or dataset, a sample "
        "seeded by --seed, not its first rows")
    seed: int = flag(0, "data and sampling seed")
    math_levels: str = flag("1,2,3", "levels of the synthetic math task, comma-separated")
    math_families: str = flag("", "synthetic math families (comma list; empty: all): "
        "arithmetic,linear,fractions,percent")
    math_templates: str = flag("seen", "synthetic math templates: seen (those training draws "
        "from) | held_out (the same skills in stories no training split holds; test split) | all",
        choices=["seen", "held_out", "all"])
    prompt_style: str = flag("default", data.PROMPT_STYLE_HELP, choices=list(data.PROMPT_STYLES))
    tools: bool = flag(False, "let the model run ```python blocks in the sandbox while it answers "
        "(tools.ToolEngine)")
    max_tool_calls: int = flag(2, "with --tools: python blocks run per answer")
    prompt_field: str = flag("prompt", "prompt column of a file/HF dataset")
    answer_field: str = flag("answer", "answer column of a file/HF dataset ('none': prompts only)")
    threads: int = flag(0, "torch CPU threads (0: torch's default)")
    k: int = flag(1, "samples per problem for avg@k / pass@k (k=1 means greedy)")
    temperature: float = flag(0.6, "sampling temperature when k > 1 (Qwen3 thinking: 0.6)")
    top_p: float = flag(0.95, "top-p when k > 1")
    max_completion_length: int = flag(256, "generation budget per answer")
    thinking: str = flag("default", "default | on | off | both")
    budgets: str = flag("", "thinking budgets to sweep, e.g. '32,64,128' (empty: no sweep)")
    engine: str = flag("auto", "auto | hf | vllm", choices=["auto", "hf", "vllm"])
    lenient: bool = flag(False, "math: also accept an unboxed, unanchored final number or "
        "expression (models that do not box answers); rewards stay strict")
    output_dir: str = flag("runs/eval", "where results.json and eval.png go")
    overwrite: bool = flag(False, "replace the results.json of an earlier evaluation there")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: 1 - C(n-c, k)/C(n, k) (Chen et al. 2021). E.g. n=4, c=1, k=2 -> 0.5."""
    if k > n:
        raise ValueError(f"k={k} is larger than the number of samples n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def sign_test(gained: int, lost: int) -> float:
    """Two-sided exact sign test (McNemar's exact test) for two models on the same problems.

    `gained`: problems only the new model solves, `lost`: only the old one; problems both or
    neither solve carry no information. Under "no difference" each of the n = gained + lost
    discordant problems goes either way with probability 1/2:

        p = min(1, 2 * sum_{j >= max(gained, lost)} C(n, j) / 2^n)

    >>> sign_test(5, 0)       # 2 * 1/32
    0.0625
    >>> sign_test(3, 3)
    1.0
    """
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, j) for j in range(max(gained, lost), n + 1))
    return min(1.0, 2 * tail / 2 ** n)


def paired(old: list[bool], new: list[bool]) -> dict:
    """Paired comparison of per-problem correctness (same problems, same order)."""
    if len(old) != len(new):
        raise ValueError(f"paired comparison needs the same problems: {len(old)} vs {len(new)} "
                         "results")
    gained = sum(b and not a for a, b in zip(old, new))
    lost = sum(a and not b for a, b in zip(old, new))
    return {"gained": gained, "lost": lost, "p": sign_test(gained, lost)}


def has_closed_think(text: str) -> bool:
    """True when the completion has a non-empty, closed think block."""
    m = re.search(r"<think>(.*?)</think>", text, re.S)
    return bool(m and m.group(1).strip())


def evaluate_model(model, tokenizer, tasks: list[dict], k: int = 1, temperature: float = 0.6,
                   top_p: float = 0.95, max_new_tokens: int = 256, thinking: str = "default",
                   budget: int | None = None, engine=None, seed: int = 0,
                   lenient: bool = False) -> dict:
    """Generate k answers per task and score them. Returns metrics and per-problem rows."""
    think = {"default": None, "on": True, "off": False}[thinking]
    extra = {"enable_thinking": False} if thinking == "off" else {}
    prompts = data.prompt_ids(tokenizer, tasks, think=think, **extra)
    engine = engine or engines.make_engine("auto", model, tokenizer,
                                           max_model_len=max(map(len, prompts)) + max_new_tokens)
    params = engines.SamplingParams(n=k, temperature=0.0 if k == 1 else temperature, top_p=top_p,
                                   max_new_tokens=max_new_tokens, seed=seed)
    with engines.progress(f"eval {len(tasks)} problems"):
        outs = (engines.generate_with_thinking_budget(engine, prompts, params, budget) if budget
                else engine.generate(prompts, params))
    correct = np.array([rewards.task_solved(c.text, tasks[c.prompt_index], lenient)
                        for c in outs]).reshape(len(tasks), k)
    metrics = {
        "num_problems": len(tasks), "k": k, "thinking": thinking, "budget": budget,
        "pass@1" if k == 1 else f"avg@{k}": float(correct.mean()),
        "thinking_rate": float(np.mean([has_closed_think(c.text) for c in outs])),
        "mean_length": float(np.mean([len(c.completion_ids) for c in outs])),
        "truncation_rate": float(np.mean([c.truncated for c in outs])),
    }
    if k > 1:
        for kk in sorted({1, k}):
            metrics[f"pass@{kk}"] = float(np.mean([pass_at_k(k, int(row.sum()), kk)
                                                   for row in correct]))
    metrics["accuracy"] = float(correct.mean())
    if not any(map(rewards.gradable, tasks)):
        # prompts only (--answer_field none): nothing to grade, so no accuracy (it read 0.000)
        metrics.update({k: None for k in metrics if k == "accuracy" or k.startswith(("pass@",
                                                                                   "avg@"))})
    families = sorted({t["family"] for t in tasks if "family" in t})
    if len(families) > 1:   # synthetic math: accuracy per problem family shows what RL changed
        per_task = correct.mean(axis=1)
        metrics["by_family"] = {
            f: float(np.mean([a for t, a in zip(tasks, per_task) if t.get("family") == f]))
            for f in families}
    rows = [{"id": tasks[c.prompt_index]["id"], "text": c.text, "correct": bool(x),
             "truncated": c.truncated} for c, x in zip(outs, correct.flatten())]
    return {"metrics": metrics, "rows": rows}


def load_eval_tasks(cfg: Config) -> list[dict]:
    if cfg.task == "math":
        levels = tuple(int(x) for x in cfg.math_levels.split(","))
        families = data.parse_families(cfg.math_families)
        return data.math_tasks(cfg.eval_problems or 200, cfg.split, cfg.seed, families, levels,
                               templates=cfg.math_templates)
    answer_field = None if cfg.answer_field.lower() in ("", "none") else cfg.answer_field
    tasks = dataset_tasks.load_tasks(cfg.task, split=cfg.split, prompt_field=cfg.prompt_field,
                            answer_field=answer_field)
    if len(tasks) < cfg.eval_problems:   # the table's accuracy is over fewer problems than asked
        print(f"[evaluate] note: --eval_problems {cfg.eval_problems}, but --task {cfg.task} holds "
              f"{len(tasks)} problems: all {len(tasks)} are scored (num_problems in the results)")
    if cfg.task == "humaneval":
        return tasks[:cfg.eval_problems] if cfg.eval_problems else tasks
    return dataset_tasks.seeded_sample(tasks, cfg.eval_problems, cfg.seed)   # MMLU: by subject


def print_table(results: list[dict]):
    keys = ["thinking", "budget", "accuracy", "thinking_rate", "mean_length", "truncation_rate"]
    keys += sorted({k for r in results for k in r if k.startswith("pass@")})
    results = [{**r, **{f"acc:{f}": a for f, a in r.get("by_family", {}).items()}} for r in results]
    keys += sorted({k for r in results for k in r if k.startswith("acc:")})
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in results:
        print("| " + " | ".join(f"{r.get(k):.3f}" if isinstance(r.get(k), float) else str(r.get(k))
                                for k in keys) + " |")


def check_config(cfg: Config):
    """Flags that would fail after the model loaded, or give a meaningless table, refused at
    start (k 0 gave a table of NaNs, --eval_problems -3 a bare `max()` error, --thinking maybe
    a KeyError)."""
    cli.check_positive(cfg, "k", "max_completion_length")
    cli.check_non_negative(cfg, "eval_problems", "threads", "max_tool_calls")
    # --temperature and --top_p sample the k > 1 answers; k 1 is greedy (ran as if not given)
    cli.check_modes_on(cfg, [("--tools", lambda c: c.tools, ("max_tool_calls",)),
                             ("--k K > 1 (one answer is greedy)", lambda c: c.k > 1,
                              ("temperature", "top_p")),
                             *cli.task_modes()])
    cli.check_seed(cfg.seed)
    if cfg.math_templates != "seen" and cfg.split != "test":
        raise ValueError(f"--math_templates {cfg.math_templates} with --split {cfg.split}: the "
                         "held-out templates exist in the test split only; use --split test")
    if cfg.k > 1:   # k identical greedy samples would make pass@k equal pass@1
        cli.check_sampling(cfg.temperature, cfg.top_p, "k > 1 samples per problem")
    if cfg.thinking not in ("default", "on", "off", "both"):
        raise ValueError(f"--thinking {cfg.thinking!r} is not one of default, on, off, both")
    try:
        budgets = [int(b) for b in cfg.budgets.split(",") if b.strip()]
    except ValueError:
        budgets = [0]
    if any(b <= 0 for b in budgets):
        raise ValueError(f"--budgets {cfg.budgets!r}: comma-separated positive token counts, "
                         "e.g. '32,64,128'")
    if budgets and cfg.thinking == "off":   # the cue to stop thinking went into the answers
        raise ValueError(f"--budgets {cfg.budgets!r} with --thinking off: a budget caps the "
                         "thinking, and there is none; use --thinking on (or both: thinking off "
                         "is then the curve's cheap end)")
    if budgets and max(budgets) >= cfg.max_completion_length:   # generated past the length
        raise ValueError(f"--budgets {cfg.budgets!r}: a thinking budget of {max(budgets)} is not "
                         f"below --max_completion_length {cfg.max_completion_length}, so it caps "
                         "nothing; use smaller budgets, or raise --max_completion_length")
    if cfg.task == "math":
        data.parse_levels(cfg.math_levels)
        data.parse_families(cfg.math_families)
    models.checked_path(cfg.model)
    if not cfg.output_dir.strip():      # Path('') is the current folder: results.json went there
        raise ValueError("--output_dir '': an empty folder name (an unset shell variable?); name "
                         "the folder for results.json, e.g. --output_dir runs/eval")
    out = runs.check_folder_path(cfg.output_dir)
    if runs.holds_run(out):     # its samples.jsonl was replaced by the evaluation's
        raise ValueError(f"--output_dir {out} holds a training run (metrics.jsonl, checkpoint/ "
                         "or state.pt), whose samples.jsonl an evaluation would replace; pass a "
                         f"folder of its own, e.g. --output_dir {out / 'eval'} (nothing was "
                         "changed)")
    if (out / "results.json").exists() and not cfg.overwrite:
        raise ValueError(f"--output_dir {out} holds an earlier evaluation (results.json); pass "
                         "another --output_dir, or --overwrite to replace it (nothing was changed)")


def evaluate(cfg: Config) -> Path:
    check_config(cfg)
    runs.set_threads(cfg.threads)
    out = runs.make_dir(cfg.output_dir)
    tasks = load_eval_tasks(cfg)         # a bad --task file is named before the model loads
    model, tok = models.load_policy(cfg.model)
    data.set_prompt_style(cfg.prompt_style)
    if not any(map(rewards.gradable, tasks)):
        print(f"[evaluate] note: no problem of {cfg.task} has an answer, tests or constraints to "
              "grade (prompts only), so accuracy is not measured; the answers go to "
              f"{out / 'samples.jsonl'}")
    longest = max(len(p) for p in data.prompt_ids(tok, tasks, think=True))
    models.check_context(longest + cfg.max_completion_length, "--max_completion_length", model)
    engine = engines.make_engine(cfg.engine, model, tok,
                                 max_model_len=longest + cfg.max_completion_length + 64)
    engine = tools.ToolEngine(engine, max_calls=cfg.max_tool_calls) if cfg.tools else engine
    modes = ["on", "off"] if cfg.thinking == "both" else [cfg.thinking]
    budgets = [int(b) for b in cfg.budgets.split(",") if b.strip()]
    results, samples = [], []
    for mode in modes:
        for budget in [None] + budgets * (mode != "off"):   # nothing to cap with thinking off
            r = evaluate_model(model, tok, tasks, cfg.k, cfg.temperature, cfg.top_p,
                               cfg.max_completion_length, mode, budget, engine, cfg.seed,
                               cfg.lenient)
            results.append(r["metrics"])
            samples += [{"thinking": mode, "budget": budget, **row} for row in r["rows"]]
            print(json.dumps(r["metrics"]))
    print_table(results)
    cut = [r for r in results if r["truncation_rate"] == 1.0]
    if cut:     # an accuracy of 0 that said nothing of the model
        print(f"[evaluate] note: in {len(cut)} of the {len(results)} rows every answer was cut at "
              f"--max_completion_length {cfg.max_completion_length} tokens before it ended, so "
              "their accuracy measures that length, not the model; raise --max_completion_length "
              "(a thinking answer needs room for its reasoning too)")
    # each in whole or not at all (a kill mid-write left a cut JSON over the earlier one);
    # results.json, which marks an evaluation done, last
    runs.atomic_write_text(out / "samples.jsonl", "".join(json.dumps(s) + "\n" for s in samples))
    runs.atomic_write_text(out / "results.json", json.dumps({"config": asdict(cfg),
                                                             "results": results}, indent=2))
    if budgets:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for mode in [m for m in modes if m != "off"]:
            pts = [(r["budget"], r["accuracy"]) for r in results
                   if r["thinking"] == mode and r["budget"]]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"thinking {mode}")
        ax.set_xlabel("thinking budget (tokens)")
        ax.set_ylabel("accuracy")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "eval.png", dpi=80)
    return out / "results.json"


if __name__ == "__main__":
    sys.exit(cli.main(evaluate, lambda argv: cli.parse(Config, argv)))
