"""The recipes end to end: Qwen3, Skywork-OR1 (MAGIC), Phi-4-reasoning and STILL-3's zero RL and
tool-augmented RL as lists of stages.

A stage is one script (`sft.py`, `grpo.py`, `distill.py`) with config overrides; its input model
is the previous stage's checkpoint. Every stage writes its own run directory
(`<output_dir>/<NN>-<name>/`: config.json, metrics.jsonl, curves.png, checkpoint/), is evaluated
on held-out problems of the test split when it ends (`stage_eval.py`: accuracy, thinking rate,
mean length), in the templates training draws from and in templates held out of training
altogether (the same skills in other words), and is marked done (`DONE.json`), so `--resume`
skips finished stages and continues a stage that was killed mid-way from its own state.pt. At the
end: table.json and table.md (the table, each stage paired with the one above by the sign test),
each stage's curves.png redrawn with the evaluations before and after it, and summary.png
(accuracy by stage).

    python pipeline.py                                   # phi4-reasoning at demo scale, CPU
    python pipeline.py --recipe qwen3 --dry-run          # the stage list with resolved configs
    python pipeline.py --recipe skywork-or1 --scale small --model Qwen/Qwen3-1.7B
    python pipeline.py --recipe zero-rl                  # GRPO from the starting model
                                                         # (STILL-3, R1-Zero)
    python pipeline.py --recipe tool-rl --eval_max_completion_length 128
                                                         # SFT, then GRPO with python

The papers' values sit next to ours in each stage's `paper` field; docs/recipes.md gives each one's
source (paper, section, table) beside what the code does at demo and full scale.
`demo` fits a 2-core CPU with the embedded 135M model; `small` is sized for one GPU and `full`
for a node (vLLM rollouts, `torchrun`); only `demo` is run by this project's tests.
The --set items, the --resume checks and the --dry-run table of settings are in `pipeline_run.py`.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import cli
import data
import distributed
import models
import pipeline_run
import rewards
import runs
import stage_eval
import training
from cli import flag


@dataclass
class Config:
    recipe: str = flag("phi4-reasoning", "qwen3 | skywork-or1 | phi4-reasoning | zero-rl | tool-rl")
    scale: str = flag("demo", "demo (2-core CPU, minutes) | small (one GPU) | full (a node)")
    model: str = flag("smollm2", "starting model: 'smollm2' (embedded default), 'tiny', "
        "a folder or a hub id")
    output_dir: str = flag("", "default: runs/<recipe>-<scale>")
    eval_problems: int = flag(0, "held-out test problems evaluated after each stage (0: the "
        "scale's default, demo 512: it resolves a 3-point change, 128 does not); with --resume, "
        "finished stages are evaluated again when this changes")
    eval_base_problems: int = flag(0, "held-out problems for the starting model (0: demo "
        "min(eval_problems, 64), since the raw model runs every answer to the token limit; else "
        "eval_problems); its row is paired with the next on the problems both saw")
    eval_heldout_problems: int = flag(0, "problems in templates held out of training "
        "(data.math_tasks templates='held_out': the same skills in other words) evaluated after "
        "each stage, next to the in-template set (0: as many as eval_problems, demo 512; -1: "
        "none); where the budget shrinks the evaluation, it shrinks with it; the starting model "
        "gets at most eval_base_problems")
    eval_max_completion_length: int = flag(0, "generation budget of those evaluations (0: the "
        "scale's default, demo 96)")
    time_budget_minutes: float = flag(-1.0, "wall time of the whole run (-1: the scale's default, "
        "demo 19; 0: none). Time-budgeted stages (demo GRPO) get what is left after the "
        "evaluations still to come; where the machine is too slow for all of --eval_problems in "
        "the budget, the evaluation shrinks (never below 256; the table says how many). An "
        "explicit --eval_problems is never shrunk")
    max_steps_scale: float = flag(1.0, "multiply every stage's step count "
        "(tests use a small value)")
    resume: bool = flag(False, "skip finished stages; continue a killed stage from its state.pt")
    dry_run: bool = flag(False, "print the stages with their resolved configs and stop")
    engine: str = flag("auto", "rollout engine for every stage", choices=["auto", "hf", "vllm"])
    threads: int = flag(0, "torch CPU threads for every stage (0: torch's default)")
    set: str = flag("", "extra overrides 'STAGE.FIELD=VALUE,...', e.g. "
        "'grpo.max_steps=40,sft.learning_rate=1e-4'")


BASE_MODEL = "<the recipe's starting model>"   # an override value: pipeline's --model


@dataclass
class Stage:
    name: str
    script: str                          # "sft" | "grpo" | "distill"
    # fields of <script>.Config; "global_batch_size" is split over ranks
    overrides: dict
    paper: dict = field(default_factory=dict)   # the paper's settings, each one in its source
    input_field: str = "model"           # distill takes the previous checkpoint as its teacher
    # > 0: train a Bradley-Terry reward model first (Qwen3 general RL)
    reward_model_pairs: int = 0
    # the held-out evaluation lets the model run python (it learned to)
    eval_tools: bool = False


def pick(scale: str, demo, small, full):
    return {"demo": demo, "small": small, "full": full}[scale]


# ----------------------------------------------------------------------------------------------
# The recipes
# ----------------------------------------------------------------------------------------------
def phi4_reasoning(scale: str) -> list[Stage]:
    """Phi-4-reasoning: think tokens (repurposed placeholders) + RoPE base x2 -> SFT on curated
    traces -> GRPO with the length-aware accuracy reward (Phi-4-reasoning-plus)."""
    return [
        Stage("sft", "sft", {
            "think_tokens": "repurpose", "rope_theta_factor": 2.0, "no_think_ratio": 0.0,
            "dataset": "math",
            "num_examples": pick(scale, 512, 20000, 1_400_000),
            "max_length": pick(scale, 512, 16384, 32768),
            "learning_rate": pick(scale, 2e-4, 1e-5, 1e-5),
            "embedding_learning_rate": pick(scale, 2e-3, 0.0, 0.0),
            "global_batch_size": pick(scale, 1, 8, 32),
            # demo: 60 steps leave the policy room to explore (14% greedy, 0.12-0.18 nats a token:
            # GRPO then gains 6-9 points); 90 reach 23% (0.07-0.13) and GRPO adds 4 (docs)
            "max_steps": pick(scale, 60, 2000, 16000),
            "warmup_steps": pick(scale, 6, 100, 450), "weight_decay": pick(scale, 0.0, 1e-4, 1e-4),
            "eval_problems": 0,
        }, paper={"think_tokens": "two placeholder tokens repurposed",
                  "rope_theta_factor": "2 (250k -> 500k)", "max_length": "16K -> 32K",
                  "learning_rate": 1e-5, "warmup_steps": 450, "weight_decay": 1e-4,
                  "global_batch_size": 32}),
        Stage("grpo", "grpo", {
            "rewards": "phi4", "math_levels": pick(scale, "1,2", "1,2,3", "1,2,3"),
            # demo: RL on the families where the 135M SFT model's groups carry signal (arithmetic,
            # percent); on all four, most groups are all-wrong and lr >= 2e-5 lowered held-out
            # accuracy, and a curriculum over all four families' templates gained less; with
            # several wordings, all four gained +3.0 points against +6.1 (seed 0), fractions and
            # equations not at all, and from a stronger SFT model (lr 1e-4) +1.2 over three seeds
            # (docs/experiments.md). The table still evaluates all four families, at level 1.
            # Levels 1-2, not 1 alone: level 2 adds the two- and three-step stories (keep some,
            # then share; boxes plus loose ones), and GRPO gained more in-template (evaluated at
            # level 1) and on the held-out templates, two-step stories too (docs/experiments.md)
            "math_families": pick(scale, "arithmetic,percent", "", ""),
            "num_generations": pick(scale, 8, 8, 8), "prompts_per_step": pick(scale, 8, 32, 64),
            "max_completion_length": pick(scale, 96, 8192, 31744),
            # demo: as many steps as the run's time budget leaves; no entropy bonus (c 0) and a
            # light KL term to the SFT model (β 0.01, ours). At our 200x learning rate the tokens
            # the reward cannot see drift: without KL, seed 0 learned "/ 1000" for "/ 100", then
            # "/ 1000000..." until 16% of its greedy answers ran out of tokens. Over four paired
            # seeds (one wording per template, level 1), β 0 / 0.01 / 0.04 gained +6.4 / +6.7 /
            # +7.0 points in-template and reached 6.5% / 5.9% / 4.9% on the held-out templates
            # (SFT 4.1%): β 0.01 stopped the loop at less held-out cost than 0.04
            # (docs/experiments.md).
            # Groups are kept by correctness (DAPO eq. 11; this project's choice, not
            # Phi-4's): at 96 tokens the length term is flat, so an all-right or all-wrong group
            # differs only by the 1/13 repetition term, which the group std would inflate to
            # A = ±1. The phi4 reward scores truncated completions itself (-0.5 without EOS): kept
            # as is
            "max_steps": pick(scale, 60, 90, 90),
            "time_budget_minutes": pick(scale, 14.0, 0.0, 0.0),
            "filter_groups_by": pick(scale, "acc", "reward", "reward"),
            "learning_rate": pick(scale, 1e-5, 5e-8, 5e-8),
            "beta": pick(scale, 0.01, 0.001, 0.001), "entropy_coef": pick(scale, 0.0, 0.001, 0.001),
            # demo: T 0.9 (ours). Over GRPO seeds 0-4 from one SFT checkpoint, T 0.9 gained 6.1
            # points in the training templates on average (2.7-8.6), T 1.0 5.3 (3.5-7.2); held-out
            # templates 6.0% against 5.5% (SFT 4.1%). T 0.8 gained more in-template (seeds 0-2:
            # +8.4, +8.9, +7.8) and lost the held-out templates in two seeds (docs/experiments.md)
            "temperature": pick(scale, 0.9, 1.0, 1.0),
            "length_rejection_tokens": pick(scale, 0, 6144, 25600),
            "eval_problems": 0,
        }, paper={"num_generations": 8, "beta": 0.001, "entropy_coef": 0.001, "max_steps": 90,
                  "learning_rate": 5e-8,
                  "rewards": "length-aware cosine (L_max 31744, L_pos 25600, L_neg 3702) 8/13 "
                             "+ repetition 1/13",
                  "no EOS": -0.5,
                  "length_rejection_tokens": "long, often incorrect outputs rejected"}),
    ]


def skywork_or1(scale: str) -> list[Stage]:
    """Skywork-OR1 (MAGIC): pass-rate-filtered data -> multi-stage GRPO with growing context,
    adaptive entropy control, no KL, strictly on-policy, temperature 1.0. Skywork-OR1 starts from
    DeepSeek-R1-Distill models (already SFT'd on long reasoning traces); a short SFT stage stands
    in for that starting point, so the pass-rate filter finds problems the policy sometimes
    solves."""
    return [
        Stage("distilled-start-sft", "sft", {
            "dataset": "math", "think_tokens": "add", "no_think_ratio": 0.0,
            "num_examples": pick(scale, 512, 20000, 800_000),
            "max_steps": pick(scale, 90, 2000, 8000),
            "max_length": pick(scale, 512, 16384, 32768),
            "learning_rate": pick(scale, 2e-4, 1e-5, 1e-5),
            "embedding_learning_rate": pick(scale, 2e-3, 0.0, 0.0),
            "global_batch_size": pick(scale, 1, 8, 32), "eval_problems": 0,
        }, paper={"start": "DeepSeek-R1-Distill-Qwen-7B / 32B (SFT on R1 traces)"}),
        Stage("grpo-multistage", "grpo", {
            "rewards": "math", "math_levels": pick(scale, "1", "1,2,3", "1,2,3"),
            "pass_rate_samples": pick(scale, 4, 16, 16), "pass_rate_min": 0.01,
            "pass_rate_max": 0.99, "num_train_prompts": pick(scale, 64, 4096, 100_000),
            "stages": pick(scale, "96:8,160:8", "4096:200,8192:200",
                           "8192:400,16384:400,32768:400"),
            "num_generations": pick(scale, 6, 16, 16), "prompts_per_step": pick(scale, 4, 64, 256),
            "adaptive_entropy": True, "target_entropy": 0.2, "entropy_coef_delta": 1e-4,
            "entropy_coef_max": 0.005, "beta": 0.0, "temperature": 1.0, "epsilon": 0.2,
            "num_iterations": 1, "mini_batch_size": 0, "filter_zero_variance": True,
            "drop_solved_each_stage": True,
            "learning_rate": pick(scale, 1e-5, 1e-6, 1e-6), "eval_problems": 0,
        }, paper={"stages": "8K -> 16K -> 32K", "num_generations": 16, "prompts_per_step": 256,
                  "target_entropy": 0.2, "entropy_coef_delta": 1e-4, "entropy_coef_max": 0.005,
                  "beta": "0 (no KL)",
                  "learning_rate": 1e-6, "pass_rate_samples": "16, kept 1..15 of 16",
                  "drop_solved_each_stage": "drops prompts solved in all rollouts",
                  "mini_batch_size": "the whole batch (on-policy)", "temperature": 1.0}),
    ]


def qwen3(scale: str) -> list[Stage]:
    """Qwen3 (technical report §4): long-CoT cold start -> reasoning RL -> thinking-mode fusion ->
    general RL -> strong-to-weak distillation (off-policy, then on-policy) into a smaller
    student."""
    steps = lambda demo, small, full: pick(scale, demo, small, full)
    return [
        Stage("cold-start-sft", "sft", {
            "dataset": "math", "think_tokens": "add", "no_think_ratio": 0.0,
            "num_examples": steps(512, 20000, 500_000), "max_steps": steps(90, 2000, 10000),
            "max_length": steps(512, 16384, 32768),
            "learning_rate": steps(2e-4, 1e-5, 1e-5),
            "embedding_learning_rate": steps(2e-3, 0.0, 0.0),
            "global_batch_size": steps(1, 8, 32), "eval_problems": 0,
        }, paper={"dataset": "verified long-CoT traces, query + response filtering"}),
        # §4.2: "a large batch size and a high number of rollouts per query, along with off-policy
        # training"; entropy controlled to rise steadily or stay stable. The report does not say
        # how it controls entropy: this project uses Skywork-OR1's adaptive controller.
        Stage("reasoning-rl", "grpo", {
            "rewards": "math", "math_levels": steps("1", "1,2,3", "1,2,3"),
            "num_generations": steps(8, 16, 16), "prompts_per_step": steps(4, 64, 128),
            "mini_batch_size": steps(16, 256, 512),      # 2, 4, 4 optimizer steps per rollout batch
            "adaptive_entropy": True, "target_entropy": 0.2, "entropy_coef_delta": 1e-4,
            "entropy_coef_max": 0.005,
            "max_completion_length": steps(160, 8192, 32768), "max_steps": steps(15, 170, 170),
            "learning_rate": steps(1e-5, 1e-6, 1e-6), "eval_problems": 0,
        }, paper={"num_train_prompts": "3995 query-verifier pairs", "algorithm": "GRPO",
                  "prompts_per_step": "large batch", "num_generations": "many rollouts per query",
                  "mini_batch_size": "off-policy updates",
                  "adaptive_entropy": "controlled: rising steadily or stable"}),
        # §4.3: thinking data rejection-sampled from the stage-2 model on stage-1 queries; the
        # non-thinking data cover other kinds of task; /think and /no_think flags, thinking the
        # default
        Stage("thinking-fusion-sft", "sft", {
            "dataset": "fusion", "think_tokens": "add", "no_think_ratio": 0.4,
            "multi_turn_ratio": 0.25,
            "num_examples": steps(64, 20000, 500_000), "teacher_samples": steps(2, 4, 4),
            "max_steps": steps(30, 1000, 5000), "max_length": steps(512, 16384, 32768),
            "learning_rate": steps(1e-4, 1e-5, 1e-5), "global_batch_size": steps(1, 8, 32),
            "eval_problems": 0,
        }, paper={"dataset": "thinking data rejection-sampled on stage-1 queries with the stage-2 "
                             "model; non-thinking data of many task kinds (coding, math, "
                             "instruction following, ...)",
                  "no_think_ratio": "/think, /no_think; thinking by default",
                  "multi_turn_ratio": "multi-turn dialogues with mixed flags"}),
        # §4.4: rule-based rewards, a model-based reward with a reference answer (a judge), and a
        # reward model without one, on many kinds of task
        Stage("general-rl", "grpo", {
            "task": "general",
            "rewards": "math:1,instruction:1,format:0.2,judge:0.5,reward_model:0.5",
            "judge_model": BASE_MODEL, "math_levels": steps("1", "1,2,3", "1,2,3"),
            "num_generations": steps(6, 16, 16), "prompts_per_step": steps(4, 64, 128),
            "max_completion_length": steps(160, 8192, 32768), "max_steps": steps(10, 100, 100),
            "learning_rate": steps(5e-6, 1e-6, 1e-6), "eval_problems": 0,
        }, paper={"task": "20+ kinds", "rewards": "rule-based; model-based with a reference answer "
                  "(judge: Qwen2.5-72B-Instruct); model-based without one (a reward model)"},
            reward_model_pairs=steps(64, 4096, 100_000)),
        Stage("distill-off-policy", "distill", {
            "student_from_teacher": True, "keep_every": 2, "lmbda": 0.0, "divergence": "forward_kl",
            "max_steps": steps(20, 500, 5000), "num_train_prompts": steps(48, 4096, 100_000),
            "max_completion_length": steps(128, 4096, 32768),
            "learning_rate": steps(1e-4, 1e-5, 1e-5),
            "eval_problems": steps(16, 128, 512),
        }, paper={"teacher": "Qwen3-235B-A22B / 32B",
                  "mode": "teacher outputs, think and no-think"},
            input_field="teacher"),
        Stage("distill-on-policy", "distill", {
            "lmbda": 1.0, "divergence": "reverse_kl",
            "max_steps": steps(20, 500, 5000), "num_train_prompts": steps(48, 4096, 100_000),
            "max_completion_length": steps(128, 4096, 32768),
            "learning_rate": steps(5e-5, 1e-5, 1e-5),
            "eval_problems": steps(16, 128, 512),
        }, paper={"mode": "student samples, KL to the teacher's logits",
                  "cost": "1,800 GPU h vs 17,920 for RL (Qwen3-8B)"},
            input_field="student"),
    ]


def zero_rl(scale: str) -> list[Stage]:
    """STILL-3's RL straight from the base model (as DeepSeek-R1-Zero, DeepSeek-R1 §2.2): GRPO
    with no SFT stage, the R1-Zero-like short prompt (`--prompt_style short`) and a format reward
    next to the outcome reward. Its log says which signal is missing when it does not learn: the
    share of groups with any correct sample (`groups_any_correct`) and the format rate
    (`reward_format`). The embedded model is SmolLM2-135M-Instruct (no base model ships): "zero"
    means no SFT here."""
    return [
        Stage("zero-rl", "grpo", {
            "prompt_style": "short", "rewards": "math:1,format:0.5",
            "math_levels": pick(scale, "1", "1,2,3", "1,2,3"),
            "math_families": pick(scale, "arithmetic,percent", "", ""),
            "num_generations": pick(scale, 8, 8, 16), "prompts_per_step": pick(scale, 4, 64, 128),
            "max_completion_length": pick(scale, 96, 4096, 8192),
            "max_steps": pick(scale, 20, 300, 1000),
            "time_budget_minutes": pick(scale, 8.0, 0.0, 0.0),
            "learning_rate": pick(scale, 1e-5, 1e-6, 1e-6), "temperature": 1.0,
            # demo: no reference model (its cost); small/full: STILL-3's cosine-annealed KL
            "beta": pick(scale, 0.0, 0.001, 0.001),
            "kl_anneal": pick(scale, "none", "cosine", "cosine"),
            # on-policy (STILL-3: kept entropy and length growing)
            "num_iterations": 1, "mini_batch_size": 0,
            # the point of the demo is to measure the signal, also when there is none: no early
            # stop
            "max_steps_without_signal": pick(scale, 0, 10, 10),
            "eval_problems": 0,
        }, paper={"start": "Qwen2.5 base models, no SFT",
                  "prompt_style": "short prompt (R1-Zero-like): better for the small model",
                  "rewards": "outcome (\\boxed) + format", "num_generations": "8-16",
                  "temperature": 1.0, "learning_rate": "5e-7 to 2e-6", "prompts_per_step": 128,
                  "beta": "0.001, cosine-annealed (T 500)", "mini_batch_size": "on-policy"}),
    ]


def tool_rl(scale: str) -> list[Stage]:
    """STILL-3's tool manipulation: a short SFT stage on worked solutions that compute with python
    (`tools.sft_examples`; STILL-3: a few high-quality examples activate tool use), then GRPO whose
    rollouts run the python blocks in the sandbox (`--tools`), the outputs masked out of the loss.
    Both stages' models are evaluated with tools. The demo's tool traces are ~85 tokens: run it
    with --eval_max_completion_length 128."""
    return [
        Stage("tool-sft", "sft", {
            "dataset": "math_tools", "think_tokens": "add", "no_think_ratio": 0.0,
            "num_examples": pick(scale, 256, 5000, 20000),
            "max_steps": pick(scale, 60, 1000, 3000),
            "max_length": pick(scale, 512, 8192, 16384),
            "learning_rate": pick(scale, 2e-4, 1e-5, 1e-5),
            "embedding_learning_rate": pick(scale, 2e-3, 0.0, 0.0),
            "global_batch_size": pick(scale, 1, 8, 32), "eval_problems": 0,
        }, paper={"dataset": "long-CoT solutions with python calls, distilled from DeepSeek-R1 "
                             "and synthesized, checked for code use and a correct answer",
                  "num_examples": "a few high-quality examples suffice"},
            eval_tools=True),
        Stage("tool-grpo", "grpo", {
            "tools": True, "max_tool_calls": pick(scale, 2, 4, 8), "rewards": "math",
            "math_levels": pick(scale, "1", "1,2,3", "1,2,3"),
            "math_families": pick(scale, "fractions,percent", "", ""),
            "num_generations": pick(scale, 8, 8, 16), "prompts_per_step": pick(scale, 4, 64, 128),
            "max_completion_length": pick(scale, 128, 4096, 8192),
            "max_steps": pick(scale, 15, 200, 500),
            "time_budget_minutes": pick(scale, 6.0, 0.0, 0.0),
            "learning_rate": pick(scale, 1e-5, 1e-6, 1e-6), "temperature": 1.0, "beta": 0.0,
            "eval_problems": 0,
        }, paper={"tools": "python interpreter during reasoning",
                  "note": "STILL-3 reports tool use lifting accuracy; RL with tools is this "
                          "project's step after its SFT"},
            eval_tools=True),
    ]


RECIPES = {"phi4-reasoning": phi4_reasoning, "skywork-or1": skywork_or1, "qwen3": qwen3,
           "zero-rl": zero_rl, "tool-rl": tool_rl}


# ----------------------------------------------------------------------------------------------
# Running (the --set items, the --resume checks, the --dry-run table: pipeline_run.py)
# ----------------------------------------------------------------------------------------------
def per_device_batch(global_batch: int, world_size: int, accumulation: int = 1) -> int:
    """A paper's global batch as sequences per micro-batch on each rank: B / (ranks x accumulation).

    >>> per_device_batch(32, 8), per_device_batch(32, 1, 4)
    (4, 8)
    """
    if global_batch % (world_size * accumulation):
        raise ValueError(f"global batch {global_batch} does not split over {world_size} ranks x "
                         f"{accumulation} accumulation steps: choose a world size that divides it")
    return global_batch // (world_size * accumulation)


def reward_model_dir(stage_dir: Path) -> Path:
    return stage_dir / "reward_model"


def train_stage_reward_model(base: str, path: Path, n_pairs: int, seed: int = 0) -> Path:
    """Qwen3 general RL's reward model without a reference answer: a scalar head on the starting
    model, trained with the Bradley-Terry loss (`rewards.train_reward_model`) on synthetic
    preference pairs: instruction responses that meet their constraints over ones that break
    them, and right boxed math answers over wrong ones. Trained once; a finished one is reused."""
    if (path / "config.json").exists():
        return path
    pairs = [{"prompt": t["prompt"], "chosen": t["response"], "rejected": t["rejected"]}
             for t in data.instruction_tasks(n_pairs - n_pairs // 2, "train", seed)]
    pairs += [{"prompt": t["prompt"],
               "chosen": f"{t['solution']}\nThe final answer is $\\boxed{{{t['answer']}}}$.",
               "rejected": f"The final answer is $\\boxed{{{t['answer']}1}}$."}
              for t in data.math_tasks(n_pairs // 2, "train", seed + 7)]
    model, tok = models.load_reward_model(base)
    history = rewards.train_reward_model(model, tok, pairs, epochs=2, lr=1e-4, batch_size=8,
                                         max_length=256, seed=seed)
    print(f"== reward model: Bradley-Terry on {len(pairs)} pairs, pair accuracy by epoch "
          f"{[round(h['accuracy'], 2) for h in history]} -> {path} ==", flush=True)
    return runs.save_checkpoint(model, tok, path)


def stage_config(stage: Stage, cfg: Config, stage_dir: Path, input_model: str, teacher: str | None):
    """The stage's script Config: overrides + input model + run dir (+ engine where it has one).
    A `global_batch_size` override becomes per-rank `per_device_train_batch_size`; BASE_MODEL
    becomes --model; a stage with `reward_model_pairs` reads the reward model it trains first."""
    module = importlib.import_module(stage.script)
    fields = {f.name for f in dataclasses.fields(module.Config)}
    values = {k: cfg.model if v == BASE_MODEL else v for k, v in stage.overrides.items()}
    if stage.reward_model_pairs:
        values["reward_model"] = str(reward_model_dir(stage_dir))
    values.update(pipeline_run.user_overrides(cfg.set, stage))
    if "global_batch_size" in values:
        values["per_device_train_batch_size"] = per_device_batch(
            values.pop("global_batch_size"), distributed.world_size(),
            values.get("gradient_accumulation_steps", 1))
    values[stage.input_field] = input_model
    if stage.input_field == "student" and teacher:      # on-policy distillation keeps its teacher
        values["teacher"] = teacher
    if "max_steps" in values and cfg.max_steps_scale != 1.0:
        values["max_steps"] = max(1, round(values["max_steps"] * cfg.max_steps_scale))
    if "stages" in values and cfg.max_steps_scale != 1.0:
        values["stages"] = ",".join(f"{t}:{max(1, round(int(s) * cfg.max_steps_scale))}"
                                    for t, s in (p.split(":") for p in values["stages"].split(",")))
    values.update(output_dir=str(stage_dir))
    if "engine" in fields:
        values["engine"] = cfg.engine
    unknown = set(values) - fields
    if unknown:
        raise ValueError(f"stage {stage.name!r}: {stage.script}.Config has no field(s) "
                         f"{sorted(unknown)}")
    return module, cli.expand_home(module.Config(**values))     # --set sft.dataset=~/x


def stage_plan(stages: list[Stage], cfg: Config, out: Path):
    """(index, stage, its run dir, its input model, the teacher) for each stage in order: a
    stage's input is the previous stage's checkpoint; on-policy distillation keeps the teacher."""
    model, teacher = cfg.model, None
    for i, stage in enumerate(stages, 1):
        stage_dir = out / f"{i:02d}-{stage.name}"
        yield i, stage, stage_dir, model, teacher
        teacher = model if stage.input_field == "teacher" else teacher
        model = str(stage_dir / "checkpoint")


def validate_stages(stages: list[Stage], cfg: Config, out: Path):
    """Resolve every stage's config and run its script's checks now, so a bad `--set` or
    `--model` fails at start (and in --dry-run), not minutes into the run."""
    models.checked_path(cfg.model)
    names = [s.name for s in stages]
    for item in pipeline_run.set_items(cfg.set):
        stage_name = item.partition("=")[0].partition(".")[0]
        if "." in item.partition("=")[0] and stage_name not in names:
            raise cli.UsageError(f"--set {item!r}: --recipe {cfg.recipe} has no stage "
                                 f"{stage_name!r}; its stages are {', '.join(names)} "
                                 "(nothing was run).")
    for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
        try:
            module, sc = stage_config(stage, cfg, stage_dir, model, teacher)
            if hasattr(module, "check_config"):
                module.check_config(sc)
            cli.check_numbers(sc)       # a --set value of nan
        except (ValueError, TypeError) as e:
            raise cli.UsageError(f"stage {i} '{stage.name}' ({stage.script}.py): {e}\nFix it with "
                                 f"--set {stage.name}.FIELD=VALUE (nothing was run).") from None


def eval_settings(stage: Stage, cfg: Config) -> dict:
    """How a stage's model is evaluated: in the prompt style it trained with (its --prompt_style,
    also from --set), and with tools where it learned to call them (`Stage.eval_tools`)."""
    values = {**stage.overrides, **pipeline_run.user_overrides(cfg.set, stage)}
    return {"prompt_style": values.get("prompt_style", "default"), "with_tools": stage.eval_tools}


def print_stages(stages: list[Stage], cfg: Config, out: Path):
    """--dry-run: each stage's resolved config, its key settings next to the paper's."""
    for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
        _, sc = stage_config(stage, cfg, stage_dir, model, teacher)
        print(f"\n== stage {i}/{len(stages)}: {stage.name} ({stage.script}.py) ==")
        print(pipeline_run.settings_table(stage, sc))
        print("ours : " + json.dumps(dataclasses.asdict(sc)))
        if stage.reward_model_pairs:
            print(f"first: a Bradley-Terry reward model from {cfg.model} on "
                  f"{stage.reward_model_pairs} synthetic preference pairs -> "
                  f"{reward_model_dir(stage_dir)}")
        print("paper: " + json.dumps(stage.paper))


def evaluations(cfg: Config, out: Path, t_start: float) -> stage_eval.Evaluations:
    """The run's held-out evaluations and time budget, with the scale's defaults where the flags
    leave them to it (Config says which)."""
    n_eval = cfg.eval_problems or pick(cfg.scale, 512, 200, 500)
    return stage_eval.Evaluations(
        out / "table.json", n_eval,
        n_base=cfg.eval_base_problems or min(n_eval, pick(cfg.scale, 64, n_eval, n_eval)),
        heldout=cfg.eval_heldout_problems,
        max_new_tokens=cfg.eval_max_completion_length or pick(cfg.scale, 96, 4096, 32768),
        engine=cfg.engine,
        budget_min=(cfg.time_budget_minutes if cfg.time_budget_minutes >= 0
                    else pick(cfg.scale, 19.0, 0.0, 0.0)),
        t_start=t_start, resume=cfg.resume, fixed=bool(cfg.eval_problems))


def check_flags(cfg: Config):
    """The pipeline's own numbers, refused at start where they mean nothing (each stage's flags
    are checked by `validate_stages`)."""
    cli.check_non_negative(cfg, "eval_problems", "eval_base_problems",
                           "eval_max_completion_length", note=" (0: the scale's default)")
    cli.check_non_negative(cfg, "threads", note=" (0: torch's default)")
    cli.check_positive(cfg, "max_steps_scale")
    for name, meaning in (("eval_heldout_problems", "none"),
                          ("time_budget_minutes", "the scale's default")):
        if getattr(cfg, name) < 0 and getattr(cfg, name) != -1:
            raise ValueError(f"--{name} {getattr(cfg, name)}: cannot be negative (-1: {meaning})")


def run(cfg: Config) -> list[dict]:
    """The recipe's stages in order: each one configured, trained, evaluated on held-out
    problems and added to the table; then the table and the figures (`stage_eval`)."""
    cli.ACTIVE["stages"] = True     # Ctrl-C: resumed with --resume, as a stage that failed
    if cfg.recipe not in RECIPES:
        raise cli.UsageError(f"--recipe {cfg.recipe!r} is not one of {', '.join(RECIPES)}")
    if cfg.scale not in ("demo", "small", "full"):
        raise cli.UsageError(f"--scale {cfg.scale!r} is not one of demo, small, full")
    check_flags(cfg)
    stages = RECIPES[cfg.recipe](cfg.scale)
    runs.set_threads(cfg.threads)
    out = runs.check_folder_path(cfg.output_dir or f"runs/{cfg.recipe}-{cfg.scale}")
    t_start = time.time()

    validate_stages(stages, cfg, out)      # every stage's resolved settings, before anything runs
    if cfg.dry_run:
        print_stages(stages, cfg, out)
        return []

    if out.exists() and any(out.iterdir()) and not cfg.resume:
        raise cli.UsageError(f"{out} already holds a run: pass --resume to continue it, or "
                             "--output_dir to start another (nothing was changed).")
    if cfg.resume:
        # before pipeline.json is rewritten: nothing changed
        pipeline_run.check_resumable(cfg, out, stage_plan(stages, cfg, out))
    runs.make_dir(out)
    runs.atomic_write_text(out / "pipeline.json", json.dumps(dataclasses.asdict(cfg), indent=2))
    evals = evaluations(cfg, out, t_start)
    evals.evaluate_base(cfg.model, eval_settings(stages[0], cfg))

    for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
        label = f"{i:02d}-{stage.name}"
        if (stage_dir / "DONE.json").exists() and cfg.resume:
            print(f"== stage {i}/{len(stages)}: {stage.name} finished earlier, skipped ==")
            evals.evaluate_finished(label, stage_dir, eval_settings(stage, cfg))
            continue
        module, sc = stage_config(stage, cfg, stage_dir, model, teacher)
        if hasattr(sc, "resume"):
            sc.resume = cfg.resume and (stage_dir / "state.pt").exists()
            # a stage that never saved restarts (the run dir is guarded above)
            sc.overwrite = not sc.resume
        print(f"\n== stage {i}/{len(stages)}: {stage.name} ({stage.script}.py"
              f"{', resumed' if getattr(sc, 'resume', False) else ''}) -> {stage_dir} ==",
              flush=True)
        evals_left = len(stages) - i + 1           # this stage's evaluation and the ones after it
        evals.cap_time_budget(label, sc, evals_left)
        elastic = sum(1 for st in stages[i:] if st.overrides.get("time_budget_minutes", 0) > 0)
        t0 = time.time()
        try:
            if stage.reward_model_pairs:
                train_stage_reward_model(cfg.model, reward_model_dir(stage_dir),
                                         stage.reward_model_pairs)
            module.train(sc)
            row = {**evals.evaluate_trained(label, stage_dir, eval_settings(stage, cfg),
                                            evals_left, elastic),
                   "minutes": (time.time() - t0) / 60,
                   "where": f"{stage_dir}/checkpoint, {stage_dir}/curves.png"}
        except Exception as e:
            # a user's mistake (a damaged state.pt, a bad file) is one line, as in the script;
            # anything else shows where it happened
            user = isinstance(e, cli.USER_ERRORS) or cli.disk_error(e)    # a full disk too
            if not user or os.environ.get("RR_TRACEBACK"):
                traceback.print_exc()
            # one line: the stage, why, its log, what is kept and the fix (a traceback above it);
            # the script's own fix names its flags; here a stage restarts without its state.pt
            restart = (f"; to train the stage again from its start, delete "
                       f"{stage_dir / 'state.pt'} first"
                       if "state.pt" in str(e) and not cli.disk_error(e) else "")
            why = cli.disk_message(e) if cli.disk_error(e) else f"{type(e).__name__}: {e}"
            log = stage_dir / "metrics.jsonl"
            log = f"its log: {log}" if log.exists() else f"it logged no step ({stage_dir})"
            line = (f"stage {i} '{stage.name}' ({stage.script}.py) failed: {' '.join(why.split())}"
                    f"; {log}; the earlier stages' outputs are kept in {out}: fix the cause and "
                    f"rerun with --resume{restart}")
            # exit status 2 for a user's mistake, as the script's own; 1 for a bug
            raise (cli.UsageError(line) if user else SystemExit(f"error: {line}")) from None
        runs.atomic_write_text(stage_dir / "DONE.json", json.dumps(row, indent=2))
        evals.put(row)

    figures = [(f"{i:02d}-{s.name}", s.script, d, stage_config(s, cfg, d, m, t)[1])
               for i, s, d, m, t in stage_plan(stages, cfg, out)]
    rows = evals.finish(figures, f"{cfg.recipe} ({cfg.scale})", out)
    print(f"\nwall time {(time.time() - t_start) / 60:.1f} min"
          + (f" (budget {training.duration(60 * evals.budget_min)}, --time_budget_minutes)"
             if evals.budget_min else "") + f", peak RSS {runs.peak_rss_gb():.1f} GB")
    return rows


def parse(argv=None) -> Config:
    argv = sys.argv[1:] if argv is None else argv
    return cli.parse(Config, pipeline_run.joined_sets(argv))


if __name__ == "__main__":
    sys.exit(cli.main(run, parse))
