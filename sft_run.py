"""What `sft.py` does around its loop: check the flags at start, restore a run being resumed,
save a checkpoint, and at the end check the think format on held-out prompts (`evaluate_format`,
also alone with --eval_only; the parser: `sft_data.think_format`). Every check of the flags stops
at start with a message that names the flag and the fix.

`cfg` is an `sft.Config` throughout.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

import cli
import data
import engines
import models
import runs
import sft_data
from rewards import verify_math


def check_config(cfg):
    """Values that would make training meaningless, refused before anything is loaded."""
    cli.check_positive(cfg, "max_length", "per_device_train_batch_size",
                       "gradient_accumulation_steps", "learning_rate", "save_steps", "num_examples",
                       "teacher_samples", "eval_max_completion_length", "num_train_epochs")
    cli.check_non_negative(cfg, "warmup_steps", "embedding_learning_rate", "weight_decay",
                           "eval_problems")
    cli.check_fraction(cfg, "min_lr_ratio", "max_repetition")
    cli.check_grad_norm(cfg.max_grad_norm)
    cli.check_seed(cfg.seed)
    models.bf16_note(cfg.bf16, "sft")
    if cfg.eval_only:        # a format check of 0 problems divided by 0
        cli.check_positive(cfg, "eval_problems")
    if not 0 <= cfg.no_think_ratio < 1:     # 1: no thinking examples left to fuse with
        raise ValueError(f"--no_think_ratio {cfg.no_think_ratio}: a fraction in [0, 1)")
    if not 0 <= cfg.multi_turn_ratio <= 1:
        raise ValueError(f"--multi_turn_ratio {cfg.multi_turn_ratio}: a fraction in [0, 1]")
    cli.check_positive(cfg, "rope_theta_factor")    # Phi-4: 2.0; inf gave NaN rotations
    sft_data.check_source(cfg)
    if not cfg.resume:      # resumed, the run's settings are compared: a change is named there
        cli.check_modes_on(cfg, MODES)


# sft's modes: (the switch, whether it is on, the settings only it reads); '--dataset data.jsonl
# --num_examples 100' trained every row, '--teacher X' beside --dataset math sampled no teacher,
# '--num_train_epochs 3 --max_steps 50' ran 50 steps, each without a word
MODES = (("--dataset teacher or fusion", lambda c: c.dataset in ("teacher", "fusion"),
          ("teacher", "teacher_samples")),
         (f"--dataset {' or '.join(sft_data.SOURCES)} (a file's rows are all read)",
          lambda c: c.dataset in sft_data.SOURCES, ("num_examples",)),
         ("--max_steps -1 (train by epochs: a --max_steps > 0 sets the length)",
          lambda c: c.max_steps <= 0, ("num_train_epochs",)))


def resume_run(run: runs.RunDir, optimizer, accumulation: int) -> int:
    """--resume: the optimizer and step of the last saved state (metrics logged after it are
    dropped, to be redone). Returns the step."""
    state = run.load_state()
    run.load_optimizer(optimizer, state["optimizer"])
    step = state["step"]
    if state["data_position"] != step * accumulation:
        raise ValueError(f"--resume: the run used gradient_accumulation_steps="
                         f"{state['data_position'] // step}; resume with the same value")
    run.truncate_metrics(step)
    print(f"[sft] resumed at step {step} (micro-batch {state['data_position']})")
    return step


def save(run: runs.RunDir, model, tok, optimizer, step: int, cfg):
    """The checkpoint, state.pt (step, optimizer, data position) and curves.png."""
    run.save(model, tok, {"step": step, "optimizer": optimizer.state_dict(),
                          "data_position": step * cfg.gradient_accumulation_steps})
    run.plot(["loss", "lr", "grad_norm", "tokens_per_s"],
             title=f"sft: {cfg.model} on {cfg.dataset}, think tokens {cfg.think_tokens}, "
                   f"lr {cfg.learning_rate:g}, no_think {cfg.no_think_ratio:g}")


@torch.no_grad()
def evaluate_format(engine, tokenizer, n: int, max_new_tokens: int,
                    seed: int = 0) -> tuple[dict, list[dict]]:
    """Greedy answers of `engine` (engines.make_engine) to n held-out problems per mode.
    think_ok: closed, non-empty think block, boxed answer after it (prompt with /think);
    no_think_ok: the same with an empty block."""
    tasks = data.math_tasks(n, "test", seed)
    params = engines.SamplingParams(temperature=0, max_new_tokens=max_new_tokens)
    metrics, samples = {}, []
    for mode, think in (("think", True), ("no_think", False)):
        with engines.progress(f"format check, thinking {think}"):
            outs = engine.generate(data.prompt_ids(tokenizer, tasks, think=think), params)
        ok = correct = 0
        for c in outs:
            f = sft_data.think_format(c.text)
            good = f["closed"] and f["boxed"] and f["empty"] != think
            ok += good
            correct += verify_math(c.text, tasks[c.prompt_index]["answer"])
            samples.append({"mode": mode, "prompt": tasks[c.prompt_index]["prompt"],
                            "completion": c.text, "format_ok": good})
        metrics[f"eval/{mode}_format"] = ok / n
        metrics[f"eval/{mode}_accuracy"] = correct / n
    return metrics, samples


def check_format(cfg, model, tok, out: Path) -> tuple[dict, list[dict]]:
    """`evaluate_format` through the --engine sampler; the metrics are printed and written to
    out/eval.json."""
    engine = engines.make_engine(cfg.engine, model, tok)
    metrics, samples = evaluate_format(engine, tok, cfg.eval_problems,
                                       cfg.eval_max_completion_length, cfg.seed)
    print(json.dumps(metrics, indent=2))
    runs.atomic_write_text(out / "eval.json", json.dumps(metrics, indent=2))
    return metrics, samples


def evaluate_only(cfg) -> Path:
    """--eval_only: the format check on --model, written to eval.json and eval_samples.jsonl."""
    runs.keep_earlier(Path(cfg.output_dir) / "eval.json", cfg.overwrite)
    model, tok = models.load_policy(cfg.model)
    out = runs.make_dir(cfg.output_dir)
    samples = check_format(cfg, model, tok, out)[1]
    runs.atomic_write_text(out / "eval_samples.jsonl", "".join(json.dumps(s) + "\n"
                                                               for s in samples))
    return out
