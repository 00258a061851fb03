"""What a `grpo.py` step writes: its metrics row, a few sample rows, the progress bar, the loss
statistics summed over micro-batches, and, when a step trained nothing, a warning (and after too
many such steps in a row, the stop). At the end, the curves and the summary.

`cfg` is a `grpo.Config`, `Rollouts` a `grpo.Rollouts` (one rollout round of a step).
"""
from __future__ import annotations

import re
import sys

import torch
from tqdm import tqdm

import tools

REFLECTION = {"wait": r"\bwait\b", "verify": r"\bverif(?:y|ied|ies)\b", "check": r"\b(?:re)?check",
              "however": r"\bhowever\b", "alternatively": r"\balternatively\b"}


def reflection_counts(texts: list[str]) -> dict[str, float]:
    """Mean occurrences per completion of the reflection words STILL-3 watches emerge.

    >>> reflection_counts(["Wait, let me verify.", "So 2."])["reflect_wait"]
    0.5
    """
    return {f"reflect_{w}": sum(len(re.findall(p, t.lower())) for t in texts) / max(len(texts), 1)
            for w, p in REFLECTION.items()}


class LossStats:
    """The sums behind a step's loss statistics. Per micro-batch: the loss, and token sums of
    clipping, k3 KL and full entropy over every pass; the sampled-token entropy -log π(y_t) and
    the token count over the first pass only (the policy that sampled). Per optimizer step: the
    gradient norm. `means` turns them into the metrics row's token means."""

    def __init__(self):
        self.loss = self.grad_norm = self.clip = self.kl = self.entropy_full = 0.0
        self.entropy = self.tokens = self.mismatch = self.mismatch_tokens = 0.0
        self.optimizer_steps = 0
        self.has_kl = self.has_entropy_full = False

    def add(self, loss, logp, mask, clipped, kl=None, entropy_full=None, first_pass=True):
        """One micro-batch: [B, T] tensors and the mask that weighs their tokens."""
        if kl is not None:
            self.kl += float((kl.detach() * mask).sum())
            self.has_kl = True
        if entropy_full is not None:
            self.entropy_full += float((entropy_full.detach() * mask).sum())
            self.has_entropy_full = True
        if first_pass:
            self.entropy += float((-logp.detach() * mask).sum())
            self.tokens += float(mask.sum())
        self.clip += float((clipped.float() * mask).sum())
        self.loss += loss.item()

    def add_mismatch(self, trainer_logp, engine_logp, mask):
        """|log π_trainer - log π_engine| over the sampled tokens the engine scored (not NaN)."""
        mask = mask * engine_logp.isfinite()
        gap = (trainer_logp.detach().float() - engine_logp.nan_to_num()).abs()
        self.mismatch += float((gap * mask).sum())
        self.mismatch_tokens += float(mask.sum())

    def optimizer_step(self, grad_norm):
        self.grad_norm += float(grad_norm)
        self.optimizer_steps += 1

    def means(self, passes: int, train_tokens: float) -> dict:
        """`passes` over the batch (--num_iterations); `train_tokens`: tokens of one pass."""
        tok = max(self.tokens, 1.0)
        steps = self.optimizer_steps
        out = {"loss": self.loss / steps, "grad_norm": self.grad_norm / steps,
               "clip_frac": self.clip / (tok * passes), "entropy": self.entropy / tok,
               "train_tokens": train_tokens * passes, "optimizer_steps": self.optimizer_steps}
        if self.mismatch_tokens:
            out["logprob_mismatch"] = self.mismatch / self.mismatch_tokens
        if self.has_kl:
            out["kl"] = self.kl / (tok * passes)
        if self.has_entropy_full:
            out["entropy_full"] = self.entropy_full / (tok * passes)
        return out


def step_metrics(rounds: list, filtered_share: float, train_stats: dict, times: dict,
                 tools_used: bool = False) -> dict:
    """One metrics.jsonl row's rollout statistics over every round of the step. `reward` is the
    reward the group statistics see (after truncation handling), `reward_raw` the reward
    functions' own output: they differ where truncated completions were re-scored. With
    `tools_used` (--tools), the tool calls per rollout and the share that failed."""
    outs = [c for roll in rounds for c in roll.completions]
    lengths = [len(c.completion_ids) for c in outs]
    cat = lambda name: torch.cat([getattr(r, name) for r in rounds]).float()
    out = {"reward": cat("reward").mean().item(), "reward_raw": cat("reward_raw").mean().item(),
           "accuracy": cat("correct").mean().item(),
           **{f"reward_{k}": sum(r.parts.get(k, 0.0) for r in rounds) / len(rounds)
              for k in rounds[0].parts},
           "response_length": sum(lengths) / len(lengths), "response_length_max": max(lengths),
           "truncated": cat("truncated").mean().item(), "rejected": 1 - cat("keep").mean().item(),
           "groups_filtered": filtered_share, "rollout_rounds": len(rounds),
           "groups_any_correct": torch.cat([r.correct.view(len(r.prompts), -1).any(1)
                                            for r in rounds]).float().mean().item(),
           **reflection_counts([c.text for c in outs]), **train_stats,
           "gen_tokens_per_s": sum(lengths) / max(times.get("gen_s", 0), 1e-9), **times}
    if tools_used:
        out.update(tools.tool_metrics(outs))
    if "train_s" in times:
        out["train_tokens_per_s"] = train_stats["train_tokens"] / times["train_s"]
    return out


def sample_rows(roll, n: int) -> list[dict]:
    """The first `n` rollouts of a round, for samples.jsonl."""
    return [{"prompt": roll.tasks[c.prompt_index]["prompt"],
             "answer": roll.tasks[c.prompt_index].get("answer"), "completion": c.text,
             "reward": roll.reward[k].item(), "reward_raw": roll.reward_raw[k].item(),
             "truncated": c.truncated} for k, c in enumerate(roll.completions[:n])]


def progress(metrics: dict) -> dict:
    """The progress bar's numbers: reward, rollout accuracy, length, held-out accuracy if any."""
    shown = {"reward": f"{metrics['reward']:.3f}", "acc": f"{metrics['accuracy']:.2f}",
             "len": f"{metrics['response_length']:.0f}"}
    if "eval_accuracy" in metrics:
        shown["eval"] = f"{metrics['eval_accuracy']:.2f}"
    return shown


def no_signal_warning(step: int, in_a_row: int, samples, cfg, max_tokens: int):
    """A step that trained nothing says so (at once, then every 5 such steps), and after
    --max_steps_without_signal of them in a row the run stops: it cannot learn as it is. With
    --filter_zero_variance false the groups stay in the batch, but with A = 0 they train nothing
    either. Where every completion of the step's rollouts (`grpo.StepSamples`) was cut at
    `max_tokens`, that length is the fix."""
    n_groups = samples.groups
    truncated = all(c.truncated for r in samples.rounds for c in r.completions)
    varied = "correctness" if cfg.filter_groups_by == "acc" else "reward"
    why = (f"none of the {n_groups} groups carried signal: every sample of a group got the same "
           f"{varied}, so there is no advantage to learn from")
    fix = ("start from an SFT checkpoint (python sft.py, then --model runs/sft/checkpoint), add a "
           "shaped reward (--rewards math:1,format:0.2 or math_partial), use easier tasks "
           "(--math_levels 1) or sample more (--num_generations 16, --oversample_rounds 2)")
    if truncated:
        why = (f"every completion was cut at {max_tokens} tokens before it ended, and cut ones "
               "all score alike (or are masked out): there is no advantage to learn from")
        fix = ("raise --max_completion_length (or the --stages lengths) past the length of a "
               "whole answer, or " + fix)
    if cfg.max_steps_without_signal and in_a_row >= cfg.max_steps_without_signal:
        raise ValueError(f"step {step}: {in_a_row} steps in a row trained nothing ({why}). "
                         f"Stopping: the run cannot learn as it is; {fix} "
                         "(--max_steps_without_signal sets the patience)")
    if in_a_row == 1 or in_a_row % 5 == 0:
        tqdm.write(f"[grpo] step {step}: nothing trained ({in_a_row} in a row): {why}. "
                   f"To fix: {fix}", file=sys.stderr)


def report(run, cfg):
    """The end of a run: curves.png (rollout accuracy with the held-out evaluations on the same
    axes) and the summary of the last values."""
    run.plot(["reward", "accuracy", "response_length", "truncated", "entropy", "entropy_coef", "kl",
              "clip_frac", "groups_filtered", "groups_any_correct", "reward_format", "tool_calls",
              "reflect_wait", "step_s"],
             overlay={"accuracy": "eval_accuracy"},
             title=f"grpo: {cfg.model} on {cfg.task}, rewards {cfg.rewards}, "
                   f"{cfg.prompts_per_step} x {cfg.num_generations} rollouts, "
                   f"lr {cfg.learning_rate:g}, loss {cfg.loss_type}")
    run.summary(["reward", "accuracy", "eval_accuracy", "entropy"])
