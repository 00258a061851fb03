"""The recipes end to end: Qwen3, Skywork-OR1 (MAGIC), Phi-4-reasoning and STILL-3's zero RL and
tool-augmented RL as lists of stages.

A stage is one script (`sft.py`, `grpo.py`, `distill.py`) with config overrides; its input model
is the previous stage's checkpoint. Every stage writes its own run directory
(`<output_dir>/<NN>-<name>/`: config.json, metrics.jsonl, curves.png, checkpoint/), is evaluated
on held-out problems of the test split when it ends (accuracy, thinking rate, mean length), in
the templates training draws from and in templates held out of training altogether (the same
skills in other words), and is marked done (`DONE.json`), so `--resume` skips finished stages
and continues a stage that was killed mid-way from its own state.pt. At the end: table.json and
table.md (the table, each stage paired with the one above by the sign test), each stage's
curves.png redrawn with the evaluations before and after it, and summary.png (accuracy by stage).

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
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import torch

import cli
import data
import distributed
import engines
import evaluate
import models
import rewards
import runs
import tools
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
        "each stage, next to the in-template set (0: a quarter of eval_problems, demo 128; -1: "
        "none); where the budget shrinks the evaluation, it shrinks with it; the starting model "
        "gets half of eval_base_problems")
    eval_max_completion_length: int = flag(0, "generation budget of those evaluations (0: the "
        "scale's default, demo 96)")
    time_budget_minutes: float = flag(-1.0, "wall time of the whole run (-1: the scale's default, "
        "demo 19.5; 0: none). Time-budgeted stages (demo GRPO) get what is left after the "
        "evaluations still to come; where the machine is too slow for all of --eval_problems in "
        "the budget, the evaluation shrinks (never below 256; the table says how many). An "
        "explicit --eval_problems is never shrunk")
    max_steps_scale: float = flag(1.0, "multiply every stage's step count "
        "(tests use a small value)")
    resume: bool = flag(False, "skip finished stages; continue a killed stage from its state.pt")
    dry_run: bool = flag(False, "print the stages with their resolved configs and stop")
    engine: str = flag("auto", "rollout engine for every stage: auto | hf | vllm")
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
            "max_steps": pick(scale, 90, 2000, 16000),
            "warmup_steps": pick(scale, 6, 100, 450), "weight_decay": pick(scale, 0.0, 1e-4, 1e-4),
            "eval_problems": 0,
        }, paper={"think_tokens": "two placeholder tokens repurposed",
                  "rope_theta_factor": "2 (250k -> 500k)", "max_length": "16K -> 32K",
                  "learning_rate": 1e-5, "warmup_steps": 450, "weight_decay": 1e-4,
                  "global_batch_size": 32}),
        Stage("grpo", "grpo", {
            "rewards": "phi4", "math_levels": pick(scale, "1", "1,2,3", "1,2,3"),
            # demo: RL on the families where the 135M SFT model's groups carry signal (arithmetic,
            # percent); on all four, most groups are all-wrong and lr >= 2e-5 lowered held-out
            # accuracy (README, GRPO section). The table still evaluates all four families.
            "math_families": pick(scale, "arithmetic,percent", "", ""),
            "num_generations": pick(scale, 8, 8, 8), "prompts_per_step": pick(scale, 8, 32, 64),
            "max_completion_length": pick(scale, 96, 8192, 31744),
            # demo: up to 20 steps within the run's time budget; no reference model and no entropy
            # bonus (β 0, c 0): at 0.001 each, the KL term stayed below 0.01 and the two cost ~25%
            # of a step. Groups are kept by correctness (DAPO eq. 11; this project's choice, not
            # Phi-4's): at 96 tokens the length term is flat, so an all-right or all-wrong group
            # differs only by the 1/13 repetition term, which the group std would inflate to
            # A = ±1. The phi4 reward scores truncated completions itself (-0.5 without EOS): kept
            # as is
            "max_steps": pick(scale, 20, 90, 90), "time_budget_minutes": pick(scale, 9.0, 0.0, 0.0),
            "filter_groups_by": pick(scale, "acc", "reward", "reward"),
            "learning_rate": pick(scale, 1e-5, 5e-8, 5e-8),
            "beta": pick(scale, 0.0, 0.001, 0.001), "entropy_coef": pick(scale, 0.0, 0.001, 0.001),
            "temperature": 1.0,
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
# Running
# ----------------------------------------------------------------------------------------------
def user_overrides(spec: str, stage: Stage, types: dict) -> dict:
    """'grpo.max_steps=40,sft.learning_rate=1e-4' -> this stage's {field: typed value}."""
    out = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        key, sep, value = item.partition("=")
        name, dot, fld = key.partition(".")
        if not (sep and dot):
            raise SystemExit(f"--set {item!r}: write STAGE.FIELD=VALUE, e.g. grpo.max_steps=40")
        if name != stage.name:
            continue
        if fld not in types:
            raise SystemExit(f"--set {item!r}: {stage.script}.Config has no field {fld!r}")
        t = getattr(types[fld], "__name__", str(types[fld])).replace(" | None", "")
        out[fld] = {"bool": lambda v: v.lower() in ("1", "true", "yes"), "int": int,
                    "float": float}.get(t, str)(value)
    return out


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
    values.update(user_overrides(cfg.set, stage,
                                 {f.name: f.type for f in dataclasses.fields(module.Config)}))
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
    return module, module.Config(**values)


def settings_table(stage: Stage, sc) -> str:
    """A stage's key settings, ours next to the paper's, under the script's flag names (a paper
    value with no flag of its own is listed with ours as '-')."""
    ours = dataclasses.asdict(sc)
    keys = list(dict.fromkeys([*stage.paper, *(k for k in stage.overrides if k in ours)]))
    width = max(len(k) for k in keys) if keys else 8
    lines = [f"  {'setting':<{width}}  {'ours':<28}  paper", f"  {'-' * width}  {'-' * 28}  -----"]
    for k in keys:
        mine = ours.get(k, stage.overrides.get(k, "-"))
        lines.append(f"  {k:<{width}}  {str(mine):<28}  {stage.paper.get(k, '')}")
    return "\n".join(lines)


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
    """Resolve every stage's config and run its script's checks now, so a bad `--set` fails at
    start (and in --dry-run), not minutes into the run."""
    for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
        try:
            module, sc = stage_config(stage, cfg, stage_dir, model, teacher)
            if hasattr(module, "check_config"):
                module.check_config(sc)
        except (ValueError, TypeError) as e:
            raise SystemExit(f"stage {i} '{stage.name}' ({stage.script}.py): {e}\nFix it with "
                             f"--set {stage.name}.FIELD=VALUE (nothing was run).") from None


# what the budget keeps for each time-budgeted stage before shrinking evaluation
MIN_ELASTIC_MINUTES = 5.0
# a budget never shrinks the held-out set below this; it is evaluated first
LEAST_EVAL_PROBLEMS = 256


def fit_eval_problems(left_s: float, s_per_problem: float, evals_left: int, reserve_s: float,
                      most: int, done: int = 0, least: int = LEAST_EVAL_PROBLEMS,
                      step: int = 64) -> int:
    """The largest n in most, most-step, ... (never below `least`) whose evaluations still to run
    fit the time left, `done` problems of the current one being evaluated already:
    (evals_left * n - done) * s_per_problem + reserve_s <= left_s."""
    n = most
    while n - step >= least and (evals_left * n - done) * s_per_problem + reserve_s > left_s:
        n -= step
    return n


def merge_evals(parts: list[tuple[list[dict], dict]]) -> dict:
    """One evaluation from consecutive pieces [(tasks, evaluate_model result)] of greedy (k=1)
    results: per-problem means weighted by problem counts, rows concatenated in order."""
    n = sum(len(t) for t, _ in parts)
    metrics = {**parts[0][1]["metrics"], "num_problems": n}
    for key in ("pass@1", "accuracy", "thinking_rate", "mean_length", "truncation_rate"):
        metrics[key] = sum(r["metrics"][key] * len(t) for t, r in parts) / n
    if "by_family" in metrics:
        count = lambda tasks, f: sum(t.get("family") == f for t in tasks)
        families = {f for _, r in parts for f in r["metrics"].get("by_family", {})}
        metrics["by_family"] = {
            f: sum(r["metrics"].get("by_family", {}).get(f, 0.0) * count(t, f) for t, r in parts)
            / max(sum(count(t, f) for t, _ in parts), 1) for f in sorted(families)}
    return {"metrics": metrics, "rows": [row for _, r in parts for row in r["rows"]]}


def eval_settings(stage: Stage, cfg: Config) -> dict:
    """How a stage's model is evaluated: in the prompt style it trained with (its --prompt_style,
    also from --set), and with tools where it learned to call them (`Stage.eval_tools`)."""
    types = {f.name: f.type
             for f in dataclasses.fields(importlib.import_module(stage.script).Config)}
    values = {**stage.overrides, **user_overrides(cfg.set, stage, types)}
    return {"prompt_style": values.get("prompt_style", "default"), "with_tools": stage.eval_tools}


def eval_stage(checkpoint: str, n: int, max_new_tokens: int, fit=None, engine: str = "auto",
               prompt_style: str = "default", with_tools: bool = False, heldout: int = 0) -> dict:
    """Greedy accuracy, thinking rate and mean length on held-out synthetic math (test split),
    with each problem's result ("correct") for the paired comparison between stages, and the
    seconds it took (`eval_s`: the pipeline's budget plans the evaluations still to come).
    With `fit(seconds_per_problem, done) -> n`, the first LEAST_EVAL_PROBLEMS are evaluated,
    then as many more as `fit` allows (up to n). The batches are the same either way.
    `prompt_style` and `with_tools`: as the stage trained (`eval_settings`).
    `heldout` > 0: also `heldout` problems in templates no training data holds (the same
    skills in other words: `data.math_tasks(templates="held_out")`), after the others, as
    heldout_accuracy, heldout_correct, heldout_problems, heldout_by_family; where `fit` keeps
    fewer than n problems, as many fewer of these in proportion."""
    model, tok = models.load_policy(checkpoint)
    t0 = time.time()
    # prefix-stable: 256 of 512 = the 256
    tasks = data.math_tasks(n, "test", seed=1234, levels=(1,))
    held = (data.math_tasks(heldout, "test", seed=1234, levels=(1,), templates="held_out")
            if heldout > 0 else [])
    longest = max(map(len, data.prompt_ids(tok, tasks + held, style=prompt_style)))
    engine = engines.make_engine(engine, model, tok, max_model_len=longest + max_new_tokens,
                                 batch_size=min(max(n, 1), 128))   # batch_size: the HF engine's
    engine = tools.ToolEngine(engine) if with_tools else engine
    t_pace = time.time()   # the pace per problem leaves out the engine's start-up
    first = LEAST_EVAL_PROBLEMS if fit is not None and n > LEAST_EVAL_PROBLEMS else n

    def run(part):   # in the stage's prompt style; the caller's style is put back
        before = data.set_prompt_style(prompt_style)
        try:
            return part, evaluate.evaluate_model(model, tok, part, k=1,
                                                 max_new_tokens=max_new_tokens, engine=engine)
        finally:
            data.set_prompt_style(before)
    parts = [run(tasks[:first])]
    total = fit((time.time() - t_pace) / first, first) if first < n else n
    if total > first:
        parts.append(run(tasks[first:total]))
    held = held[:len(held) * total // n]   # a budget that shrinks the one shrinks the other
    r = merge_evals(parts) if len(parts) > 1 else parts[0][1]
    out = {**r["metrics"], "correct": [row["correct"] for row in r["rows"]]}
    if held:
        h = run(held)[1]
        out.update(heldout_accuracy=h["metrics"]["accuracy"], heldout_problems=len(held),
                   heldout_correct=[row["correct"] for row in h["rows"]],
                   heldout_by_family=h["metrics"].get("by_family", {}))
    return {**out, "eval_s": time.time() - t0}


def with_paired(rows: list[dict]) -> list[dict]:
    """Each row gets `vs_previous`: problems it solves that the row above did not (gained), the
    reverse (lost), and the sign test's p (evaluate.sign_test), on the problems both rows saw
    (`data.math_tasks` lists are prefix-stable: the first 128 of 512 are the 128). 128 problems
    cannot tell a 3-point change from noise; the paired count shows whether a difference is more.
    The held-out-template problems (`heldout_correct`) are paired the same way
    (`heldout_vs_previous`)."""
    for prev, row in zip(rows, rows[1:]):
        for results, out in (("correct", "vs_previous"),
                             ("heldout_correct", "heldout_vs_previous")):
            n = min(len(prev.get(results, [])), len(row.get(results, [])))
            if n:
                row[out] = {**evaluate.paired(prev[results][:n], row[results][:n]), "problems": n}
    return rows


def paired_text(v: dict | None, n: int) -> str:
    """'+32 / -11 (p 0.002)', with 'on the first 64' where fewer than the row's n were paired."""
    if not v:
        return ""
    return (f"+{v['gained']} / -{v['lost']} (p {v['p']:.2g})"
            + (f" on the first {v['problems']}" if v["problems"] < n else ""))


def print_table(rows: list[dict]) -> str:
    """The markdown table of the stages (printed, and returned for table.md): accuracy on the
    in-template held-out problems and on the held-out templates, each with the paired sign test
    against the row above."""
    lines = ["| stage | accuracy | vs previous: gained / lost (p) | held-out templates "
             "| vs previous | thinking rate | mean length | minutes | checkpoint and curves |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        vs = paired_text(r.get("vs_previous"), r["num_problems"])
        held = (f"{r['heldout_accuracy']:.3f} ({r['heldout_problems']})"
                if "heldout_accuracy" in r else "")
        held_vs = paired_text(r.get("heldout_vs_previous"), r.get("heldout_problems", 0))
        lines.append(f"| {r['stage']} | {r['accuracy']:.3f} ({r['num_problems']}) | {vs} "
                     f"| {held} | {held_vs} | {r['thinking_rate']:.2f} | {r['mean_length']:.0f} "
                     f"| {r.get('minutes', 0):.1f} | {r.get('where', '')} |")
    text = "\n".join(lines)
    print("\n" + text)
    return text


# a stage figure's panels by script, in order; one whose values never change is left out
STAGE_PANELS = {
    "grpo": ["reward", "accuracy", "entropy", "response_length", "groups_with_signal", "truncated",
             "clip_frac", "kl", "entropy_coef", "step_s"],
    "sft": ["loss", "accuracy", "grad_norm", "lr", "tokens_per_s"],
    "distill": ["loss", "accuracy", "eval_forward_kl", "eval_reverse_kl", "tokens_per_s",
                "grad_norm"],
}


def heldout_points(before: dict | None, after: dict, last_step: int) -> dict[str, list]:
    """The pipeline's evaluations around a stage as `runs.plot_curves` evaluations: its input
    model's (the row above) at step 0 and its own at its last step, in-template held-out problems
    and held-out templates, each labelled with its problem counts.

    >>> heldout_points({"accuracy": 0.0, "num_problems": 64}, {"accuracy": 0.2, "num_problems": 512,
    ...                "heldout_accuracy": 0.1, "heldout_problems": 128}, 90)
    {'held-out problems (64 -> 512)': [(0, 0.0), (90, 0.2)],
     'held-out templates (128)': [(90, 0.1)]}
    """
    points = {}
    for acc, n, label in (("accuracy", "num_problems", "held-out problems"),
                          ("heldout_accuracy", "heldout_problems", "held-out templates")):
        if acc not in after:
            continue
        seen = [before[n]] if before and acc in before else []
        counts = " -> ".join(str(c) for c in dict.fromkeys(seen + [after[n]]))
        points[f"{label} ({counts})"] = (([(0, before[acc])] if seen else [])
                                         + [(last_step, after[acc])])
    return points


def write_figures(rows: list[dict], stages: list[Stage], cfg: Config, out: Path) -> list[Path]:
    """Each stage's figure (its run dir's curves.png, redrawn by `runs.plot_curves` with the
    panels of STAGE_PANELS): its training curves, smoothed over the raw points, and the pipeline's
    held-out evaluations before and after it on the accuracy panel; for GRPO with group
    filtering, the share of groups with signal (1 - groups_filtered: 0 < #correct < G or the
    rewards differ).
    Then out/summary.png (`runs.plot_stages`): accuracy by stage, in-template and on held-out
    templates, with 95% intervals and the paired sign test against the stage before."""
    by_stage, written = {r["stage"]: r for r in rows}, []
    before = by_stage.get("base")
    for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
        row, metrics = by_stage.get(f"{i:02d}-{stage.name}"), runs.read_metrics(stage_dir)
        if row and metrics:
            _, sc = stage_config(stage, cfg, stage_dir, model, teacher)
            if getattr(sc, "filter_zero_variance", False):
                metrics = [{**m, "groups_with_signal": 1 - m["groups_filtered"]}
                           if "groups_filtered" in m else m for m in metrics]
            last = max(m.get("step", 0) for m in metrics)
            title = (f"{row['stage']} ({stage.script}.py, lr "
                     f"{getattr(sc, 'learning_rate', 0):g}, {last} steps): "
                     "held-out accuracy before (step 0) and after")
            path = runs.plot_curves(metrics, stage_dir / "curves.png",
                                    STAGE_PANELS.get(stage.script), title,
                                    overlay={"accuracy": "eval_accuracy"},
                                    evaluations={"accuracy": heldout_points(before, row, last)})
            written += [path] if path else []
        before = row or before
    point = lambda r, acc, n, vs: ({"accuracy": r[acc], "n": r[n],
                                    "note": paired_text(r.get(vs), r[n])} if acc in r else None)
    series = {"held-out problems, training templates":
              [point(r, "accuracy", "num_problems", "vs_previous") for r in rows],
              "held-out templates":
              [point(r, "heldout_accuracy", "heldout_problems", "heldout_vs_previous")
               for r in rows]}
    families = sorted({f for r in rows for f in r.get("by_family", {})})
    by_group = {label: {f: [r.get(key, {}).get(f) for r in rows] for f in families}
                for label, key in (("in-template", "by_family"),
                                   ("held-out templates", "heldout_by_family"))}
    written.append(runs.plot_stages(
        [r["stage"] for r in rows], series, out / "summary.png",
        f"{cfg.recipe} ({cfg.scale}): greedy accuracy on held-out problems by stage",
        by_group if families else None))
    return written


def run(cfg: Config) -> list[dict]:
    if cfg.recipe not in RECIPES:
        raise SystemExit(f"--recipe {cfg.recipe!r} is not one of {', '.join(RECIPES)}")
    if cfg.scale not in ("demo", "small", "full"):
        raise SystemExit(f"--scale {cfg.scale!r} is not one of demo, small, full")
    stages = RECIPES[cfg.recipe](cfg.scale)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.output_dir or f"runs/{cfg.recipe}-{cfg.scale}")
    n_eval = cfg.eval_problems or pick(cfg.scale, 512, 200, 500)
    n_base = cfg.eval_base_problems or min(n_eval, pick(cfg.scale, 64, n_eval, n_eval))
    eval_tokens = cfg.eval_max_completion_length or pick(cfg.scale, 96, 4096, 32768)
    budget_min = (cfg.time_budget_minutes if cfg.time_budget_minutes >= 0
                  else pick(cfg.scale, 19.5, 0.0, 0.0))
    t_start = time.time()

    validate_stages(stages, cfg, out)      # every stage's resolved settings, before anything runs
    if cfg.dry_run:
        for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
            _, sc = stage_config(stage, cfg, stage_dir, model, teacher)
            print(f"\n== stage {i}/{len(stages)}: {stage.name} ({stage.script}.py) ==")
            print(settings_table(stage, sc))
            print("ours : " + json.dumps(dataclasses.asdict(sc)))
            if stage.reward_model_pairs:
                print(f"first: a Bradley-Terry reward model from {cfg.model} on "
                      f"{stage.reward_model_pairs} synthetic preference pairs -> "
                      f"{reward_model_dir(stage_dir)}")
            print("paper: " + json.dumps(stage.paper))
        return []

    if out.exists() and any(out.iterdir()) and not cfg.resume:
        raise SystemExit(f"{out} already holds a run: pass --resume to continue it, or "
                         "--output_dir to start another (nothing was changed).")
    out.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_text(out / "pipeline.json", json.dumps(dataclasses.asdict(cfg), indent=2))
    rows_path = out / "table.json"
    rows = json.loads(rows_path.read_text()) if cfg.resume and rows_path.exists() else []
    evaluated = [r for r in rows if r["stage"] != "base" and "correct" in r]
    if evaluated and not cfg.eval_problems:   # a resumed run keeps the size its budget chose
        n_eval = evaluated[0]["num_problems"]
    n_fixed = bool(cfg.eval_problems or evaluated)
    n_held = 0 if cfg.eval_heldout_problems < 0 else cfg.eval_heldout_problems or n_eval // 4
    # the raw model is slow and solves ~nothing: half its set
    n_held_base = min(n_held, n_base // 2)

    def left_s() -> float:
        return 60 * budget_min - (time.time() - t_start)

    # the latest evaluation's pace (in-template and held-out templates)
    def s_per_problem() -> float | None:
        timed = [r for r in rows if r.get("eval_s") and r.get("num_problems")]
        return (timed[-1]["eval_s"]
                / (timed[-1]["num_problems"] + timed[-1].get("heldout_problems", 0))
                if timed else None)

    # evaluated as asked for now
    def current(stage: str, n: int | None = None, held: int | None = None) -> bool:
        n, held = n_eval if n is None else n, n_held if held is None else held
        return any(r["stage"] == stage and r.get("num_problems") == n and "correct" in r
                   and r.get("heldout_problems", 0) == held for r in rows)

    def put(row: dict):                 # replace the stage's row in place, or append it
        nonlocal rows
        at = [i for i, r in enumerate(rows) if r["stage"] == row["stage"]]
        rows = rows[:at[0]] + [row] + rows[at[0] + 1:] if at else rows + [row]
        runs.atomic_write_text(rows_path, json.dumps(rows, indent=2))

    if not current("base", n_base, n_held_base):
        print(f"== evaluating the starting model on {n_base} held-out problems and {n_held_base} "
              "in held-out templates ==", flush=True)
        put({"stage": "base", **eval_stage(cfg.model, n_base, eval_tokens, engine=cfg.engine,
                                           heldout=n_held_base, **eval_settings(stages[0], cfg)),
             "where": cfg.model})

    for i, stage, stage_dir, model, teacher in stage_plan(stages, cfg, out):
        label = f"{i:02d}-{stage.name}"
        if (stage_dir / "DONE.json").exists() and cfg.resume:
            print(f"== stage {i}/{len(stages)}: {stage.name} finished earlier, skipped ==")
            if not current(label):   # e.g. --resume --eval_problems 512: a larger held-out set
                print(f"== evaluating {label} on {n_eval} held-out problems and {n_held} in "
                      "held-out templates ==", flush=True)
                done_row = json.loads((stage_dir / "DONE.json").read_text())
                put({**done_row, **eval_stage(str(stage_dir / "checkpoint"), n_eval, eval_tokens,
                                              engine=cfg.engine, heldout=n_held,
                                              **eval_settings(stage, cfg))})
        else:
            module, sc = stage_config(stage, cfg, stage_dir, model, teacher)
            if hasattr(sc, "resume"):
                sc.resume = cfg.resume and (stage_dir / "state.pt").exists()
                # a stage that never saved restarts (the run dir is guarded above)
                sc.overwrite = not sc.resume
            print(f"\n== stage {i}/{len(stages)}: {stage.name} ({stage.script}.py"
                  f"{', resumed' if getattr(sc, 'resume', False) else ''}) -> {stage_dir} ==",
                  flush=True)
            evals_left, pace = len(stages) - i + 1, s_per_problem()
            if budget_min and pace and getattr(sc, "time_budget_minutes", 0) > 0:
                # - 10 s: the checkpoint save
                cap = (left_s() - evals_left * (n_eval + n_held) * pace - 10) / 60
                if cap < sc.time_budget_minutes:
                    print(f"== {stage.name}: time budget {max(cap, 0.5):.1f} min instead of "
                          f"{sc.time_budget_minutes:g}: what the run's {budget_min:g} min leave "
                          f"after {evals_left} evaluation(s) of {n_eval} + {n_held} problems at "
                          f"{pace:.2f} s each ==", flush=True)
                    sc.time_budget_minutes = max(cap, 0.5)
            elastic = sum(1 for st in stages[i:] if st.overrides.get("time_budget_minutes", 0) > 0)

            # the held-out set's size, once, at the first evaluation
            def fit(pace: float, done: int) -> int:
                nonlocal n_eval, n_held
                # its last term: the held-out templates (at most this many)
                reserve = 60 * MIN_ELASTIC_MINUTES * elastic + 30 + evals_left * n_held * pace
                n = fit_eval_problems(left_s(), pace, evals_left, reserve, n_eval, done)
                if n < n_eval:
                    print(f"== {n_eval} held-out problems do not fit the run's {budget_min:g} min "
                          f"on this machine ({pace:.2f} s each, {left_s() / 60:.1f} min left): "
                          f"every stage is evaluated on {n} (and {n_held * n // n_eval} in "
                          "held-out templates) ==", flush=True)
                    n_eval, n_held = n, n_held * n // n_eval
                return n
            t0 = time.time()
            try:
                if stage.reward_model_pairs:
                    train_stage_reward_model(cfg.model, reward_model_dir(stage_dir),
                                             stage.reward_model_pairs)
                module.train(sc)
                use_fit = fit if budget_min and not n_fixed else None
                n_fixed = True
                row = {"stage": label, **eval_stage(str(stage_dir / "checkpoint"), n_eval,
                                                    eval_tokens, use_fit, cfg.engine,
                                                    heldout=n_held, **eval_settings(stage, cfg)),
                       "minutes": (time.time() - t0) / 60,
                       "where": f"{stage_dir}/checkpoint, {stage_dir}/curves.png"}
            except Exception as e:
                traceback.print_exc()
                raise SystemExit(f"\nstage {i} '{stage.name}' ({stage.script}.py) failed: "
                                 f"{type(e).__name__}: {e}\nEarlier stages' outputs are kept in "
                                 f"{out}; fix the cause and rerun with --resume.") from None
            runs.atomic_write_text(stage_dir / "DONE.json", json.dumps(row, indent=2))
            put(row)
    rows = with_paired(rows)
    runs.atomic_write_text(rows_path, json.dumps(rows, indent=2))
    runs.atomic_write_text(out / "table.md", print_table(rows) + "\n")
    write_figures(rows, stages, cfg, out)
    print(f"\nwall time {(time.time() - t_start) / 60:.1f} min"
          + (f" (budget {budget_min:g} min, --time_budget_minutes)" if budget_min else ""))
    return rows


def parse(argv=None) -> Config:
    return cli.parse(Config, argv)


if __name__ == "__main__":
    sys.exit(cli.main(run, parse))
