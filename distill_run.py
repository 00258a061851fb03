"""What `distill.py` does around its loop: check the flags at start and what it loads (the two
models' vocabularies and chat templates, the cached teacher answers), restore a run being resumed,
and write each step's metrics row and the checkpoints. Every check stops at start with a message
that names the flag and the fix.

`cfg` is a `distill.Config` throughout.
"""
from __future__ import annotations

import json
from pathlib import Path

import cli
import data
import runs

# distill's modes: (the switch, whether it is on, the settings only it reads)
MODES = (("--student_from_teacher", lambda c: c.student_from_teacher, ("keep_every",)),
         ("--divergence jsd", lambda c: c.divergence == "jsd", ("beta",)),
         ("--top_k_vocab K", lambda c: c.top_k_vocab > 0, ("top_k_tail",)))


def check_config(cfg):
    """Flag errors a user can act on, before any model is loaded."""
    cli.check_positive(cfg, "num_train_prompts", "max_completion_length", "prompts_per_step",
                       "max_steps", "save_steps", "eval_every", "learning_rate", "keep_every")
    cli.check_seed(cfg.seed)     # seeded after open_run: its config.json was written first
    if not 0 <= cfg.lmbda <= 1:
        raise ValueError(f"--lmbda must be in [0, 1] (probability of an on-policy batch), "
                         f"got {cfg.lmbda}")
    if not 0 <= cfg.beta <= 1:
        raise ValueError(f"--beta must be in [0, 1] (0 = forward KL, 1 = reverse KL), "
                         f"got {cfg.beta}")
    if cfg.divergence not in ("forward_kl", "reverse_kl", "jsd"):
        raise ValueError(f"--divergence {cfg.divergence!r} is not one of forward_kl, "
                         "reverse_kl, jsd")
    if cfg.top_k_tail not in ("rest", "renorm"):
        raise ValueError(f"--top_k_tail {cfg.top_k_tail!r} is not one of rest, renorm")
    if not cfg.temperature > 0:     # not `<= 0`: NaN passed and failed after the teacher ran
        raise ValueError(f"--temperature must be > 0 (it divides the logits), "
                         f"got {cfg.temperature}")
    if not (0 <= cfg.think_ratio <= 1 or cfg.think_ratio == -1):
        raise ValueError(f"--think_ratio must be in [0, 1] (or -1 for no switch), "
                         f"got {cfg.think_ratio}")
    # a negative count or warm-up passed silently: -1 eval problems meant none, a negative
    # warm-up a negative learning rate (gradient ascent)
    cli.check_non_negative(cfg, "eval_problems", "warmup_steps", "top_k_vocab", "weight_decay",
                           "threads", "max_grad_norm")
    if cfg.max_grad_norm == 0:   # clipping to norm 0 zeroes every update: nothing would train
        raise ValueError("--max_grad_norm 0 zeroes every update; use 1.0 (or a large value to "
                         "turn clipping off)")
    cli.check_positive(cfg, "chunk_size")
    cli.warmup_note("distill", cfg.warmup_steps, cfg.max_steps)
    if cfg.task == "math":
        data.parse_levels(cfg.math_levels)
    if cfg.dtype not in ("float32", "bfloat16"):
        raise ValueError(f"--dtype {cfg.dtype!r} is not one of float32, bfloat16")
    if cfg.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"--device {cfg.device!r} is not one of auto, cpu, cuda")
    if cfg.student and cfg.student_from_teacher:   # the flag won: --student was never loaded
        raise ValueError(f"--student {cfg.student!r} and --student_from_teacher name two "
                         "students; pass one (--student_from_teacher builds it from the "
                         "teacher's layers, --keep_every K)")
    cli.check_modes_on(cfg, [*MODES, *cli.task_modes()])
    if not (cfg.student or cfg.student_from_teacher or cfg.resume):
        # before the teacher loads (minutes for a large one) and before output_dir is touched
        raise ValueError("no student: pass --student MODEL or --student_from_teacher "
                         "--keep_every K")
    if cfg.filter_correct and cfg.task != "math" and cfg.answer_field.lower() in ("", "none"):
        raise ValueError("--filter_correct keeps the teacher answers that match the task's "
                         "answers, and --answer_field none loads none: map the answer column "
                         "with --answer_field NAME, or drop --filter_correct")


def check_same_vocab(student, teacher, student_tok, teacher_tok):
    """Logit distillation compares distributions token by token: the vocabularies must match.
    So must the chat templates: prompts are rendered in the teacher's and the student is saved
    with the teacher's tokenizer, so a student with its own template was silently switched."""
    v_s = student.get_output_embeddings().weight.shape[0]
    v_t = teacher.get_output_embeddings().weight.shape[0]
    if v_s != v_t or student_tok.get_vocab() != teacher_tok.get_vocab():
        raise ValueError(
            f"student and teacher vocabularies differ (LM heads {v_s} vs {v_t} rows, tokenizers "
            f"{len(student_tok)} vs {len(teacher_tok)} tokens). Logit distillation needs the same "
            "tokenizer: pick a student of the teacher's family, or use --student_from_teacher.")
    if student_tok.chat_template != teacher_tok.chat_template:
        raise ValueError(
            "student and teacher chat templates differ: the prompts are rendered in the "
            "teacher's, and the student would be trained and saved with it in place of its own. "
            "Pick a student with the teacher's template, or copy the teacher's tokenizer files "
            "into a copy of the student's folder to train it in the teacher's template.")


def read_teacher_cache(path: Path, teacher: str, prompts: list[list[int]]) -> list[dict]:
    """The cached teacher answers in `path`, checked to be this teacher's answers to these very
    prompts (token ids: the task, seed, levels, /think mix, prompt style and template all show
    there). A cache of other prompts was used silently before, training on another task; an empty,
    cut-short or unreadable one crashed with a bare JSON or division error."""
    fix = f"delete {path} (the teacher answers again) or pass --teacher_cache NEW.jsonl"
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (ValueError, UnicodeDecodeError, IsADirectoryError) as e:
        raise ValueError(f"--teacher_cache {path} cannot be read ({type(e).__name__}: "
                         f"{str(e)[:60]}); it is damaged or not a cache: {fix}") from None
    if not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"--teacher_cache {path} holds no teacher answers: {fix}")
    if rows[0].get("teacher") != teacher or len(rows) != len(prompts):
        raise ValueError(f"{path} holds {len(rows)} outputs of teacher "
                         f"{rows[0].get('teacher')!r}, not {len(prompts)} of {teacher!r}: {fix}")
    if [r.get("prompt_ids") for r in rows] != [list(p) for p in prompts]:
        raise ValueError(f"{path} holds the teacher's answers to other prompts (another --task, "
                         f"--seed, --math_levels, --think_ratio or --prompt_style): {fix}")
    return rows


def resume(run: runs.RunDir, state: dict, optimizer, scheduler):
    """--resume: the optimizer and scheduler of the last saved state; metrics logged after it are
    dropped (they are redone)."""
    run.load_optimizer(optimizer, state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    run.truncate_metrics(state["step"])
    print(f"[distill] resumed at step {state['step']}")


def step_metrics(step: int, loss, on_policy: bool, grad_norm, scheduler, per_token, batch,
                 generate_s: float, step_s: float) -> dict:
    """One line of metrics.jsonl (before evaluation): the divergence, where the batch came from,
    the update, throughput and, where tasks have answers, the batch's accuracy (the student's
    on-policy, the teacher's off-policy)."""
    metrics = {"step": step, "loss": loss.item(), "on_policy": int(on_policy),
               "grad_norm": grad_norm.item(), "lr": scheduler.get_last_lr()[0],
               "completion_tokens": per_token.numel(), "tokens_per_s": per_token.numel() / step_s,
               "time/generate_s": generate_s, "time/step_s": step_s}
    correct = [r["correct"] for r in batch if r.get("correct") is not None]
    if correct:
        key = "train/accuracy" if on_policy else "train/teacher_accuracy"
        metrics[key] = sum(correct) / len(correct)
    return metrics


def save(run: runs.RunDir, student, tok, optimizer, scheduler, step: int, cfg):
    """The checkpoint, state.pt (step, optimizer, scheduler) and curves.png."""
    run.save(student, tok, {"step": step, "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict()})
    run.plot(["loss", "eval_forward_kl", "eval_reverse_kl", "eval_accuracy", "tokens_per_s",
              "grad_norm"],
             title=f"distill: {cfg.teacher} -> {cfg.student or 'half-depth student'}, "
                   f"{cfg.divergence}, λ={cfg.lmbda}, lr {cfg.learning_rate:g}")
