"""GRPO and its family: DAPO, Dr. GRPO, Skywork-OR1 (MAGIC), Phi-4-reasoning-plus, STILL-3 knobs.

Group Relative Policy Optimization (DeepSeekMath §4.1; DeepSeek-R1 §2.2.1) samples G completions
o_1..o_G per prompt q, scores them with rule-based rewards r_i, and uses the group as its own
baseline instead of a value network:

    A_i = (r_i - mean(r_1..r_G)) / (std(r_1..r_G) + eps)                    (same for every token)
    ρ_{i,t} = π_θ(o_{i,t} | q, o_{i,<t}) / π_old(o_{i,t} | q, o_{i,<t})
    J(θ) = E[ 1/G Σ_i 1/|o_i| Σ_t min(ρ_{i,t} A_i, clip(ρ_{i,t}, 1-ε_low, 1+ε_high) A_i)
              - β KL_k3(π_θ || π_ref) + c H(π_θ) ]

The loss aggregation defaults to DAPO's token mean (`--loss_type dapo`); the 1/|o_i| above is
`--loss_type grpo`. Every knob the seed papers ablate is a flag (docs/recipes.md: each paper's
values next to ours):
  * advantage scaling `--scale_rewards group|batch|none` (none: Dr. GRPO),
  * loss aggregation `--loss_type grpo|dapo|dr_grpo`, clip-higher `--epsilon_high` (DAPO),
  * k3 KL `--beta` with `--kl_anneal cosine` (STILL-3 dynamic KL); beta 0 loads no reference,
  * Skywork-OR1 adaptive entropy control `--adaptive_entropy --target_entropy 0.2`,
  * on/off-policy: `--num_iterations`, `--mini_batch_size` (STILL-3, Skywork-OR1),
  * zero-variance group filtering with over-sampling (Skywork-OR1 rejection sampling, DAPO
    dynamic sampling), offline pass-rate filtering of prompts (Skywork-OR1, Qwen3),
  * truncated completions masked (`--mask_truncated_completions`) or scored as wrong (Skywork),
  * Phi-4-reasoning-plus length-based rejection of long wrong samples (out of the group before
    its statistics) and its length-aware reward (`--rewards phi4`), multi-stage context
    `--stages 8192:100,16384:100` with solved prompts dropped at each stage (Skywork-OR1),
  * Qwen3 general RL: rule-based, judge (`--judge_model`) and reward-model (`--reward_model`)
    rewards on mixed tasks (`--task general`),
  * Qwen3's thinking budget for rollouts and evaluation.

Run (embedded SmolLM2-135M, CPU): from an SFT checkpoint, since the raw model's groups carry no
signal (a run that cannot learn says so and stops); measured: held-out 42% -> 59% in 29 steps
    python sft.py --max_steps 120 --think_tokens repurpose --rope_theta_factor 2.0 \
        --eval_problems 0 --output_dir runs/sft120
    python grpo.py --model runs/sft120/checkpoint --math_levels 1 \
        --math_families arithmetic,percent --max_completion_length 96 --learning_rate 5e-6 \
        --epsilon_high 0.28 --max_steps 30 --eval_problems 100
The loop in `train` reads top to bottom: rollout, reward, filter, advantage, loss and update,
sync, log, evaluate, checkpoint. Its bookkeeping lives elsewhere: the flag and task checks and
the reward's models in `grpo_setup`, the prompt order, context stages and time budget in
`training`, the prompt filters in `curriculum`, the metrics rows in `grpo_log`.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

import cli
import data
import distributed
import engines
import grpo_log
import grpo_setup
import models
import rewards
import runs
import training
from cli import flag
from curriculum import next_stage_prompts, pass_rate_filter  # prompt curation
from engines import SamplingParams
from grpo_setup import check_config  # also run by pipeline.py on every stage at start


@dataclass
class Config:
    # ---- model, data, rewards ----------------------------------------------------------------
    model: str = flag("smollm2", "policy: 'smollm2' (embedded default), 'tiny', folder or hub id")
    engine: str = flag("auto", "rollout engine (engines.make_engine)",
        choices=["auto", "hf", "vllm"])
    task: str = flag("math", "'math' (synthetic), 'instruction' (synthetic, rule-checked), "
        "'general' (the two mixed), 'humaneval', a "
        ".jsonl/.json/.csv/.tsv/.parquet/.arrow/.feather file or a HF dataset id (NAME:CONFIG "
        "for one with configs, e.g. openai/gsm8k:main)")
    num_train_prompts: int = flag(512, "training prompts to load (from a file or dataset: a "
        "sample seeded by --seed, not its first rows; all of them where it holds fewer)")
    eval_problems: int = flag(64, "test-split prompts for periodic evaluation, a seeded sample "
        "(a single file: its test rows by a 'split' column, else rows left out of training; "
        "0: no eval)")
    math_levels: str = flag("1,2,3", "synthetic math levels, e.g. '1' for the easiest problems")
    math_families: str = flag("", "synthetic math families (comma list; empty: all): "
        "arithmetic,linear,fractions,percent")
    prompt_field: str = flag("prompt", "prompt column of a file/HF dataset")
    answer_field: str = flag("answer", "answer column of a file/HF dataset ('none': prompts only)")
    rewards: str = flag("math", "weighted rewards from rewards.REWARDS, e.g. 'math:1,format:0.2' "
        "or 'still3_outcome'; model-based: judge (--judge_model), reward_model "
        "(--reward_model). A reward applies to tasks with the field it reads (math: answer...)")
    judge_model: str = flag("", "judge LM for the 'judge' reward: grades a response against the "
        "task's reference answer, R = p(yes) (Qwen3 §4.4); a name as for --model")
    reward_model: str = flag("", "scalar reward model for 'reward_model' (Bradley-Terry, no "
        "reference; Qwen3 §4.4): a folder saved by rewards.train_reward_model, or 'tiny'")
    # ---- rollouts ----------------------------------------------------------------------------
    num_generations: int = flag(8, "G, completions per prompt (TRL num_generations; Skywork 16)")
    prompts_per_step: int = flag(8, "prompts per rollout batch; TRL's generation batch = "
        "prompts_per_step * num_generations")
    max_completion_length: int = flag(256, "max response tokens (as in TRL); see --stages",
        aliases=["--max-response-tokens"])
    stages: str = flag("", "multi-stage context 'TOKENS:STEPS,...' e.g. '8192:100,16384:100' "
        "(Skywork-OR1); overrides --max_completion_length/--max_steps")
    max_steps: int = flag(100, "training steps (one rollout batch each) when --stages is empty")
    temperature: float = flag(1.0, "rollout temperature (Skywork-OR1 1.0); log-probs use the same")
    top_p: float = flag(1.0, "rollout nucleus sampling")
    thinking_budget: int = flag(0, "Qwen3 thinking budget (tokens) for rollouts and eval (0: off)")
    prompt_style: str = flag("default", data.PROMPT_STYLE_HELP, choices=list(data.PROMPT_STYLES))
    tools: bool = flag(False, "tool-augmented rollouts and eval (STILL-3): a ```python block the "
        "policy writes runs in the sandbox, its output is appended and left out of the loss")
    max_tool_calls: int = flag(2, "--tools: python blocks run per rollout; later ones stay text")
    # ---- advantages and loss -----------------------------------------------------------------
    scale_rewards: str = flag("group", "advantage std: group | batch | none (Dr. GRPO)")
    loss_type: str = flag("dapo", "aggregation: grpo (sequence mean, then mean) | dapo (token "
        "mean over the batch; default) | dr_grpo (token sum / (B * max tokens)). Dr. GRPO is "
        "that and --scale_rewards none")
    epsilon: float = flag(0.2, "clip range ε_low: ratio clipped to [1-ε, 1+ε_high]")
    epsilon_high: float | None = flag(None, "ε_high (DAPO clip-higher: 0.28); default = --epsilon")
    beta: float = flag(0.0, "k3 KL coefficient (Skywork-OR1 0: no reference model is loaded; "
        "DeepSeekMath 0.04)")
    kl_anneal: str = flag("none", "none | cosine: β_t goes from --beta to --beta_min over "
        "--kl_anneal_steps (STILL-3)")
    beta_min: float = flag(0.0, "KL floor of the cosine schedule")
    kl_anneal_steps: int = flag(500, "T of the cosine KL schedule (STILL-3: 500)")
    entropy_coef: float = flag(0.0, "fixed entropy bonus c in L - c H (Phi-4-reasoning-plus "
        "0.001); initial c with --adaptive_entropy")
    adaptive_entropy: bool = flag(False, "Skywork-OR1 adaptive entropy control")
    target_entropy: float = flag(0.2, "adaptive entropy: target (Skywork-OR1 0.2)")
    entropy_coef_delta: float = flag(1e-4, "adaptive entropy: step Δ of c")
    entropy_coef_min: float = flag(0.0, "adaptive entropy: lower bound of c")
    entropy_coef_max: float = flag(0.005, "adaptive entropy: upper bound of c")
    # ---- optimisation ------------------------------------------------------------------------
    learning_rate: float = flag(1e-6, "AdamW lr, constant (Skywork-OR1, DAPO: 1e-6)")
    weight_decay: float = flag(0.0, "AdamW weight decay")
    max_grad_norm: float = flag(1.0, "gradient clipping (Skywork-OR1: 1.0)")
    num_iterations: int = flag(1, "passes over each rollout batch (TRL num_iterations; PPO "
        "epochs); 1 with a full mini-batch = on-policy")
    mini_batch_size: int = flag(0, "completions per optimizer step (0: all, one step per pass)")
    micro_batch_size: int = flag(8, "completions per forward/backward (gradients accumulate)")
    bf16: str = flag("auto", "bfloat16 autocast of the training forward (float32 weights): auto "
        "(a GPU with bf16, a CPU with AVX512-BF16 or AMX), true, false; --bf16 alone: true",
        choices=["auto", "true", "false"], nargs="?", const="true")
    share_prompt: bool = flag(True, "run each distinct prompt through the decoder once per "
        "micro-batch and its rollouts, packed without padding, on top of its KV cache (same "
        "log-probs and gradients up to rounding; G=8, 50-token prompts: ~1/3 fewer decoder tokens)")
    # ---- filtering ---------------------------------------------------------------------------
    filter_zero_variance: bool = flag(True, "drop groups without signal (Skywork-OR1 rejection "
        "sampling, DAPO dynamic sampling); see --filter_groups_by")
    filter_groups_by: str = flag("reward", "what a kept group must vary in: reward (not all "
        "equal) | acc (0 < #correct < G: DAPO eq. 11; drops the tiny shaped-reward differences "
        "of all-right or all-wrong groups, which group std inflates)", choices=["reward", "acc"])
    max_steps_without_signal: int = flag(10, "stop with an error after this many steps in a row "
        "in which every group was filtered (nothing trained); 0: never")
    oversample_rounds: int = flag(0, "DAPO dynamic sampling: extra rollout rounds to refill a "
        "batch thinned by filtering")
    mask_truncated_completions: bool = flag(False, "leave truncated completions out of the loss "
        "(DAPO overlong filtering); otherwise they are scored", aliases=["--mask-truncated"])
    truncated_reward: float = flag(0.0, "reward of a truncated completion when not masked (0 = "
        "wrong under the 1/0 math reward: Skywork-OR1). Never applied when a reward scores "
        "unfinished completions itself (phi4, length_aware: -0.5; overlong): their score stands")
    score_truncated: bool = flag(True, "give truncated completions --truncated_reward; false "
        "keeps their computed reward (TRL's default)")
    length_rejection_tokens: int = flag(0, "Phi-4-reasoning-plus: wrong completions longer than "
        "this leave their group before its mean and std and the loss (0: off)")
    pass_rate_samples: int = flag(0, "offline filter: k samples per prompt with the starting "
        "model (Skywork-OR1 16; 0: off)")
    pass_rate_min: float = flag(0.01, "offline filter: keep prompts with pass rate >= this")
    pass_rate_max: float = flag(0.99, "offline filter: keep prompts with pass rate <= this")
    curriculum: str = flag("none", "which prompts a step draws: none (the seeded stream) | "
        "templates (templates drawn in proportion to how often their groups carried signal so "
        "far, curriculum.py: no rollouts spent on what the policy cannot yet do or always does)",
        choices=["none", "templates"])
    drop_solved_each_stage: bool = flag(False, "at each context stage start, drop the prompts "
        "solved in all rollouts of a group during the previous stage (Skywork-OR1)")
    refilter_each_stage: bool = flag(False, "at each stage start, re-run the pass-rate filter "
        "[min, max] with the current policy (our variant; Skywork drops solved prompts)")
    # ---- evaluation, logging, state ----------------------------------------------------------
    eval_every: int = flag(10, "evaluate on the test split every N steps (and before/after)")
    eval_samples: int = flag(1, "k for avg@k at evaluation")
    eval_temperature: float = flag(0.0, "eval temperature (0: greedy; Skywork-OR1 0.6 with k > 1)")
    log_samples: int = flag(2, "rollouts written to samples.jsonl per step")
    time_budget_minutes: float = flag(0.0, "wall-time budget: no step starts that would end past "
        "it (at the last step's pace); eval + checkpoint at the step reached; 0: no limit")
    save_steps: int = flag(10, "checkpoint + state every N steps")
    output_dir: str = flag("runs/grpo", "run directory")
    resume: bool = flag(False, "continue from output_dir/state.pt (same data order, step count)")
    overwrite: bool = flag(False, "replace a run already in output_dir (without it, refused)")
    parallel: str = flag("fsdp2", "under torchrun: fsdp2 (shard the policy) or ddp (replicate it) "
        "or none; --prompts_per_step is split over ranks; ignored in a single process",
        choices=["fsdp2", "ddp", "none"])
    seed: int = flag(0, "seed of data order and sampling")
    threads: int = flag(0, "torch CPU threads (0: torch's default)")



# ==============================================================================================
# The pieces: pure functions of tensors and numbers
# ==============================================================================================
def group_advantages(rewards: torch.Tensor, group_size: int, scale: str = "group",
                     eps: float = 1e-6, keep: torch.Tensor | None = None) -> torch.Tensor:
    """A_i = (r_i - mean_group(r)) / (std + eps), rewards in prompt-major order [B*G] -> [B*G].

    scale = "group": std of the group (GRPO, DeepSeekMath §4.1.2; unbiased, eps 1e-6 as
            Skywork-OR1's code); "batch": std of all rewards of the batch, mean still per group
            (TRL scale_rewards="batch"); "none": A_i = r_i - mean (Dr. GRPO §3.1).
    `keep` [B*G] bool: samples rejected before the group statistics (Phi-4-reasoning-plus's
    length-based rejection) take no part in mean and std and get A = 0, so the others' advantages
    are those of a group that never held them.

    >>> group_advantages(torch.tensor([1., 0., 0., 0.]), 4, "none")
    tensor([ 0.7500, -0.2500, -0.2500, -0.2500])
    >>> keep = torch.tensor([True, True, True, False])
    >>> group_advantages(torch.tensor([1., 0., 0., 0.]), 4, "none", keep=keep)
    tensor([ 0.6667, -0.3333, -0.3333,  0.0000])
    """
    keep = torch.ones_like(rewards, dtype=torch.bool) if keep is None else keep.bool()
    r, k = rewards.view(-1, group_size), keep.view(-1, group_size).float()
    n = k.sum(dim=1, keepdim=True)
    mean = (r * k).sum(dim=1, keepdim=True) / n.clamp(min=1)
    centered = torch.where(k > 0, r - mean, torch.zeros_like(r))
    if scale == "group":     # unbiased std over the kept samples
        std = ((centered ** 2).sum(dim=1, keepdim=True) / (n - 1).clamp(min=1)).sqrt()
        centered = centered / (std + eps)
    elif scale == "batch":
        centered = centered / (rewards[keep].std() + eps)
    elif scale != "none":
        raise ValueError(f"--scale_rewards {scale!r} is not one of group, batch, none")
    return centered.reshape(-1)


def clipped_surrogate(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor,
                      epsilon: float = 0.2, epsilon_high: float | None = None):
    """Per-token PPO/GRPO loss  -min(ρ A, clip(ρ, 1-ε_low, 1+ε_high) A),  ρ = exp(logp - old_logp).

    Returns (loss [B, T], clipped [B, T] bool: where the clipped branch was taken).
    Source: PPO (Schulman 2017) eq. 7; GRPO (DeepSeekMath eq. 3) with ε = 0.2; DAPO §3.1
    clip-higher ε_low 0.2, ε_high 0.28. On-policy, old_logp = logp.detach(): ρ = 1, the value is
    -A and the gradient is -A ∇log π (plain policy gradient).

    >>> ratio = torch.tensor([[1.5]])
    >>> l, c = clipped_surrogate(torch.log(ratio), torch.zeros(1, 1), torch.tensor([1.]))
    >>> l, c        # ρ = 1.5 > 1.2 with A > 0: clipped to 1.2
    (tensor([[-1.2000]]), tensor([[True]]))
    """
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    ratio = torch.exp(logp - old_logp)
    adv = advantages.view(-1, 1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high) * adv
    return -torch.min(unclipped, clipped), clipped < unclipped


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(π_θ || π_ref) per token: π_ref/π_θ - log(π_ref/π_θ) - 1 >= 0.

    Source: Schulman, "Approximating KL divergence" (2020); GRPO (DeepSeekMath eq. 4). As verl,
    the log-ratio is clamped to ±20 and the result to [-10, 10].
    >>> k3_kl(torch.tensor([0.]), torch.log(torch.tensor([2.])))     # 2 - log 2 - 1
    tensor([0.3069])
    """
    log_ratio = torch.clamp(ref_logp - logp, -20, 20)
    return torch.clamp(torch.exp(log_ratio) - log_ratio - 1, -10, 10)


def cosine_beta(step: int, beta: float, beta_min: float = 0.0, total_steps: int = 500) -> float:
    """STILL-3 dynamic KL: β_t = β_min + (β_0 - β_min) · ½ (1 + cos(π t / T)) for t < T, else β_min.

    (STILL-3's released code adds β_0 once more by mistake; we follow the paper's formula.)
    >>> cosine_beta(250, 0.001, 0.0, 500)
    0.0005
    """
    if step >= total_steps:
        return beta_min
    return beta_min + (beta - beta_min) * 0.5 * (1 + math.cos(math.pi * step / total_steps))


def kl_coef(step: int, cfg: Config) -> float:
    """β at `step`: --beta, or with --kl_anneal cosine the STILL-3 schedule `cosine_beta`."""
    return (cosine_beta(step, cfg.beta, cfg.beta_min, cfg.kl_anneal_steps)
            if cfg.kl_anneal == "cosine" else cfg.beta)


def aggregate_loss(per_token: torch.Tensor, mask: torch.Tensor, loss_type: str = "dapo",
                   max_tokens: int | None = None, num_seqs: float | None = None,
                   num_tokens: float | None = None) -> torch.Tensor:
    """Reduce a [B, T] per-token loss with a {0, 1} (or weight) mask to a scalar.

    grpo:    1/B Σ_i (1/|o_i|) Σ_t l_it        sequence mean, then mean (GRPO, DeepSeekMath eq. 3)
    dapo:    Σ_i Σ_t l_it / Σ_i |o_i|           token mean over the batch (DAPO §3.3; Skywork-OR1)
    dr_grpo: Σ_i Σ_t l_it / (B · max_tokens)    no length normaliser (Dr. GRPO §3.1; TRL)
    `num_seqs`/`num_tokens` override B and Σ|o_i| when one mini-batch is split into micro-batches,
    so the micro-batch losses add up to the mini-batch loss.
    """
    B = per_token.shape[0] if num_seqs is None else num_seqs
    if loss_type == "grpo":
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        return per_seq.sum() / B
    if loss_type == "dapo":
        denom = mask.sum() if num_tokens is None else num_tokens
        return (per_token * mask).sum() / max(float(denom), 1.0)
    if loss_type == "dr_grpo":
        if not max_tokens:
            raise ValueError("loss_type dr_grpo needs max_tokens (the max completion length)")
        return (per_token * mask).sum() / (B * max_tokens)
    raise ValueError(f"--loss_type {loss_type!r} is not one of grpo, dapo, dr_grpo")


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor,
              mask: torch.Tensor, ref_logp: torch.Tensor | None = None,
              entropy: torch.Tensor | None = None, beta: float = 0.0, entropy_coef: float = 0.0,
              epsilon: float = 0.2, epsilon_high: float | None = None, loss_type: str = "dapo",
              max_tokens: int | None = None, num_seqs: float | None = None,
              num_tokens: float | None = None):
    """The GRPO-family loss of one batch, a pure function of tensors ([B, T] per token, [B] A):

        l_t = -min(ρ_t A, clip(ρ_t, 1-ε_low, 1+ε_high) A) + β KL_k3(π_θ || π_ref)_t - c H_t
        L   = aggregate_loss(l, mask, loss_type)

    The three terms share one mask, so a sample left out of the loss (a masked truncation, a
    length-rejected one) adds nothing to the policy gradient, the KL or the entropy bonus.
    Returns (loss, clipped [B, T] bool, kl [B, T] or None).

    >>> logp = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.9]]))
    >>> mask = torch.tensor([[1., 1.], [0., 0.]])
    >>> loss, _, _ = grpo_loss(logp, logp, torch.tensor([1., -1.]), mask)
    >>> loss        # on-policy, dapo: -(1 + 1) / 2 tokens; the masked row adds nothing
    tensor(-1.)
    """
    # [B, T] per token
    per_token, clipped = clipped_surrogate(logp, old_logp, advantages, epsilon, epsilon_high)
    kl = None
    if ref_logp is not None and beta > 0:
        kl = k3_kl(logp, ref_logp)                                                   # [B, T]
        per_token = per_token + beta * kl
    if entropy is not None and entropy_coef > 0:
        per_token = per_token - entropy_coef * entropy                               # [B, T]
    loss = aggregate_loss(per_token, mask, loss_type, max_tokens, num_seqs, num_tokens)
    return loss, clipped, kl


@dataclass
class EntropyController:
    """Skywork-OR1 adaptive entropy control (MAGIC §3.2.3; their released verl fork).

    Loss: L = L_pg - c_k · I_k · H, H the mean full-distribution entropy over response tokens
    (softmax(z/τ) with τ the rollout temperature; it is differentiable and has low variance).
    After each step, with ê the *measured* entropy of that step's samples:
        c <- clip(c + Δ if ê < target else c - Δ, c_min, c_max);   I <- [ê < target]
    so the bonus is on only while entropy is below target. ê is the sampled-token estimate
    -mean_t log π(y_t | y_<t) over the step's response tokens, as Skywork's code measures it: the
    samples come from π itself, so it is an unbiased estimate of the full entropy at no cost.

    >>> ctl = EntropyController(target=0.2, delta=0.1, coef_max=0.15)
    >>> [(ctl.update(e), round(ctl.loss_coef, 2))[1] for e in (0.1, 0.1, 0.3)]
    [0.1, 0.15, 0.0]
    """
    target: float = 0.2
    delta: float = 1e-4
    coef_min: float = 0.0
    coef_max: float = 0.005
    coef: float = 0.0
    active: bool = False

    @property
    def loss_coef(self) -> float:
        return self.coef if self.active else 0.0

    def update(self, entropy: float) -> float:
        below = entropy < self.target
        c = self.coef + (self.delta if below else -self.delta)
        self.coef = min(max(c, self.coef_min), self.coef_max)
        self.active = below
        return self.loss_coef


def zero_variance_groups(rewards: torch.Tensor, group_size: int,
                         keep: torch.Tensor | None = None) -> torch.Tensor:
    """[B*G] rewards -> [B] bool, True where a group's values are all equal (no signal: A = 0).

    Skywork-OR1 rejection sampling drops groups that are all 0 or all 1; DAPO dynamic sampling
    (eq. 11) keeps 0 < #correct < G. Pass the rewards, or the 0/1 correctness (`acc`): with a
    shaped reward (Phi-4's length and repetition terms) an all-wrong group still has tiny reward
    differences, which the group std of `group_advantages` would blow up to A = ±1 (pure noise),
    so DAPO's test is on correctness, not on the reward.
    With `keep`, only kept samples count, and a group with fewer than 2 left has no baseline.
    >>> zero_variance_groups(torch.tensor([1., 1., 0., 1., 0., 0.]), 2)
    tensor([ True, False,  True])
    """
    r = rewards.float().view(-1, group_size)
    k = torch.ones_like(r, dtype=torch.bool) if keep is None else keep.view(-1, group_size).bool()
    hi = torch.where(k, r, torch.full_like(r, -math.inf)).max(dim=1).values
    lo = torch.where(k, r, torch.full_like(r, math.inf)).min(dim=1).values
    return (k.sum(dim=1) < 2) | ((hi - lo).abs() < 1e-9)


def truncation_rewards(rewards: torch.Tensor, truncated: torch.Tensor, mask_truncated: bool,
                       truncated_reward: float | None = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Truncated completions (no EOS within the budget): (rewards, kept in the loss) [N] each.

    mask_truncated: rewards unchanged, left out of the loss (DAPO's overlong filtering; TRL
    mask_truncated_completions). Otherwise the reward becomes `truncated_reward`, i.e. scored as
    wrong, and the sample keeps its (negative) advantage: Skywork-OR1's choice (MAGIC §4);
    `truncated_reward=None` keeps the computed reward: TRL's default, and the rule whenever a
    reward scores unfinished completions itself (Phi-4's -0.5, DAPO's overlong penalty).
    >>> truncation_rewards(torch.tensor([1., 1.]), torch.tensor([False, True]), False)
    (tensor([1., 0.]), tensor([True, True]))
    """
    keep = ~truncated if mask_truncated else torch.ones_like(truncated, dtype=torch.bool)
    if mask_truncated or truncated_reward is None:
        return rewards.clone(), keep
    return torch.where(truncated, torch.full_like(rewards, truncated_reward), rewards), keep


def length_rejection(lengths: torch.Tensor, correct: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """Phi-4-reasoning-plus length-based rejection sampling ("regulates overly verbose, often
    incorrect outputs", Phi-4-reasoning §4): [N] bool, True for the samples kept. A wrong
    completion longer than `max_tokens` is rejected: it leaves the group before the group
    statistics (`group_advantages(keep=...)`) and the loss.
    >>> length_rejection(torch.tensor([10, 900, 900]), torch.tensor([False, False, True]), 500)
    tensor([ True, False,  True])
    """
    return ~((lengths > max_tokens) & ~correct)


# ==============================================================================================
# Rollout and reward: one step's samples
# ==============================================================================================
def rollout(engine, prompts, n, max_tokens, temperature, top_p, thinking_budget, seed):
    params = SamplingParams(n, temperature, top_p, max_new_tokens=max_tokens, seed=seed)
    if thinking_budget and thinking_budget < max_tokens:
        return engines.generate_with_thinking_budget(engine, prompts, params, thinking_budget)
    return engine.generate(prompts, params)


def score(completions, tasks, reward_fn, max_tokens):
    """Rewards [N], the mean of each reward component, correctness [N] (`rewards.task_solved`)."""
    totals, parts, correct = [], {}, []
    for c in completions:
        task = tasks[c.prompt_index]
        b = reward_fn.breakdown(c.text, task, num_tokens=len(c.completion_ids),
                                finished=not c.truncated, max_tokens=max_tokens)
        totals.append(b.pop("total"))
        for k, v in b.items():
            parts.setdefault(k, []).append(v)
        correct.append(rewards.task_solved(c.text, task))
    means = {k: sum(v) / len(v) for k, v in parts.items()}
    return torch.tensor(totals), means, torch.tensor(correct)


@dataclass
class Rollouts:
    """One rollout round of a step: `len(prompts)` groups of G samples, prompt-major ([N])."""
    prompts: list[int]          # train-task index of each group
    completions: list           # engines.Completion, N of them
    tasks: list[dict]           # the task of each group
    reward_raw: torch.Tensor    # [N] the reward functions' own output
    reward: torch.Tensor        # [N] after truncation handling: what the group statistics see
    parts: dict                 # mean of each reward component, for the log
    correct: torch.Tensor       # [N] bool
    truncated: torch.Tensor     # [N] bool
    keep: torch.Tensor          # [N] bool: in the group statistics and the loss


@dataclass
class StepSamples:
    """One step's samples: every rollout round (all of them logged) and, of those, the groups
    with signal: the samples the advantages and the loss see ([N] prompt-major, G per group)."""
    rounds: list[Rollouts]
    completions: list           # [N] the kept groups' samples
    reward: torch.Tensor        # [N] what the group statistics see
    keep: torch.Tensor          # [N] bool: in the group statistics and the loss
    groups: int                 # groups sampled over all rounds (this rank)
    filtered: int               # of which without signal and dropped (--filter_zero_variance)
    flat: int                   # of which without signal, dropped or not: all flat, none trains
    solved: set[int]            # train-task indices solved in every sample of a group
    signal: list                # (train-task index, its group carried signal), every group


def sample_step(engine, tasks, prompts, active, position, step, max_tokens, reward_fn, cfg: Config,
                times: dict, curriculum=None) -> StepSamples:
    """Rollout -> reward -> filter for one step, in rounds. A round draws --prompts_per_step
    prompts of `active` from the stream at `position` (whole groups per rank) and samples G
    completions each; truncated ones are masked or re-scored (`truncation_rewards`), long wrong
    ones rejected (`length_rejection`); groups without signal (`zero_variance_groups`) leave,
    and while the batch is short another round refills it (DAPO dynamic sampling,
    --oversample_rounds). With a `curriculum`, it picks the prompts instead of the stream."""
    G, P = cfg.num_generations, cfg.prompts_per_step // distributed.world_size()   # P: this rank's
    own_score = reward_fn.scores_unfinished or not cfg.score_truncated
    truncated_reward = None if own_score else cfg.truncated_reward
    rounds, kept, filtered, flat_groups, solved, signal_of = [], [], 0, 0, set(), []
    for rnd in range(1 + cfg.oversample_rounds):
        seed = cfg.seed * 1_000_003 + step * 97 + rnd
        if curriculum:
            drawn = curriculum.draw(active, cfg.prompts_per_step, seed)
        else:
            drawn = training.stream_indices(len(active), cfg.seed,
                                            position + rnd * cfg.prompts_per_step,
                                            cfg.prompts_per_step)
            drawn = [active[i] for i in drawn]
        idx = distributed.shard_for_rank(drawn)
        with runs.timer(times, "gen_s"):
            outs = rollout(engine, [prompts[i] for i in idx], G, max_tokens, cfg.temperature,
                           cfg.top_p, cfg.thinking_budget,
                           seed=seed)
        group_tasks = [tasks[i] for i in idx]
        raw, parts, correct = score(outs, group_tasks, reward_fn, max_tokens)
        truncated = torch.tensor([c.truncated for c in outs])
        reward, keep = truncation_rewards(raw, truncated, cfg.mask_truncated_completions,
                                          truncated_reward)
        if cfg.length_rejection_tokens:   # rejected before the group statistics
            lengths = torch.tensor([len(c.completion_ids) for c in outs])
            keep = keep & length_rejection(lengths, correct, cfg.length_rejection_tokens)
        roll = Rollouts(idx, outs, group_tasks, raw, reward, parts, correct, truncated, keep)
        rounds.append(roll)
        solved |= {i for g, i in enumerate(idx) if bool(correct[g * G:(g + 1) * G].all())}
        # a truncated completion is never correct
        signal = (correct & ~truncated) if cfg.filter_groups_by == "acc" else reward
        flat = zero_variance_groups(signal, G, keep)
        signal_of += [(i, not bool(flat[g])) for g, i in enumerate(idx)]
        flat_groups += int(flat.sum())
        if not cfg.filter_zero_variance:
            flat = torch.zeros(P, dtype=torch.bool)
        filtered += int(flat.sum())
        kept += [(roll, g) for g in range(P) if not flat[g]][:P - len(kept)]
        if len(kept) == P or not cfg.filter_zero_variance:
            break
    take = lambda name: [getattr(roll, name)[g * G:(g + 1) * G] for roll, g in kept]
    reward, keep = (torch.cat(take("reward")), torch.cat(take("keep"))) if kept else (None, None)
    return StepSamples(rounds, [c for part in take("completions") for c in part], reward, keep,
                       P * len(rounds), filtered, flat_groups, solved, signal_of)


# ==============================================================================================
# Evaluation
# ==============================================================================================
def evaluate(engine, tasks, prompts, cfg, max_tokens) -> dict:
    """avg@k accuracy on the test split (greedy when --eval_temperature 0)."""
    k = cfg.eval_samples if cfg.eval_temperature > 0 else 1
    with engines.progress(f"eval {len(tasks)} problems"):
        outs = rollout(engine, prompts, k, max_tokens, cfg.eval_temperature, 1.0,
                       cfg.thinking_budget, cfg.seed)
    ok = [rewards.task_solved(c.text, tasks[c.prompt_index]) for c in outs]
    n = len(outs)
    return {"eval_accuracy": sum(ok) / n, "eval_truncated": sum(c.truncated for c in outs) / n,
            "eval_length": sum(len(c.completion_ids) for c in outs) / n}


# ==============================================================================================
# The update: grpo_loss over the batch, in passes, mini-batches and micro-batches
# ==============================================================================================
def train_on_batch(model, optimizer, ref_model, ids, attn, loss_mask, adv, engine_logp, cfg,
                   beta, entropy_coef, max_tokens, step, times) -> dict:
    """`num_iterations` passes over the rollout batch in mini-batches of `mini_batch_size`, one
    optimizer step each (`grpo_loss` on every micro-batch). Strictly on-policy (1 pass, one
    mini-batch) recomputes no old log-probs: ρ = exp(logp - logp.detach()) = 1 with the
    policy-gradient gradient. Rows whose mask is all 0 (left out of the loss) add nothing.
    `engine_logp` (vLLM's, or None): compared with the old log-probs, `logprob_mismatch`."""
    N, micro = ids.shape[0], max(1, cfg.micro_batch_size)
    mb = cfg.mini_batch_size or N
    on_policy = cfg.num_iterations == 1 and mb >= N
    scorer = models.ResponseScorer(ids, attn, loss_mask, cfg.temperature, cfg.share_prompt)
    t0 = time.perf_counter()
    with models.autocast(cfg.bf16):
        old_logp = None if on_policy else scorer.all_rows(model, micro)
        ref_logp = scorer.all_rows(ref_model, micro) if ref_model is not None and beta > 0 else None
    need_entropy = entropy_coef > 0
    stats = grpo_log.LossStats()
    model.train()
    gen = torch.Generator().manual_seed(cfg.seed * 7919 + step)
    for it in range(cfg.num_iterations):
        order = torch.randperm(N, generator=gen) if mb < N else torch.arange(N)
        for m0 in range(0, N, mb):
            mini = order[m0:m0 + mb]
            n_tokens = float(loss_mask[mini].sum())
            optimizer.zero_grad(set_to_none=True)
            for s in range(0, len(mini), micro):
                sel = mini[s:s + micro]
                i, a, mask, cols = scorer.rows(sel)
                with models.autocast(cfg.bf16):
                    logp, entropy = scorer.logprobs(model, i, a, need_entropy)
                old = logp.detach() if old_logp is None else old_logp[sel, cols]
                # normalisers of the global mini-batch: each rank divides by the mean per rank and
                # DDP/FSDP2 average gradients, so dapo = Σ_ranks loss / Σ_ranks tokens and grpo,
                # dr_grpo divide by all ranks' sequences (identity in a single process)
                ref = None if ref_logp is None else ref_logp[sel, cols]
                loss, clipped, kl = grpo_loss(
                    logp, old, adv[sel], mask, ref, entropy, beta, entropy_coef, cfg.epsilon,
                    cfg.epsilon_high, cfg.loss_type, max_tokens,
                    num_seqs=distributed.mean_over_ranks(len(mini)),
                    num_tokens=distributed.mean_over_ranks(n_tokens))
                training.check_finite(loss, step + 1)
                loss.backward()
                stats.add(loss, logp, mask, clipped, kl, entropy if need_entropy else None,
                          first_pass=it == 0)
                if it == 0 and engine_logp is not None:   # the sampler's policy vs the trainer's
                    stats.add_mismatch(old, engine_logp[sel, cols], mask)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            stats.optimizer_step(grad_norm)
            optimizer.step()
    times["train_s"] = time.perf_counter() - t0
    return stats.means(cfg.num_iterations, float(attn.sum()))


# ==============================================================================================
# The loop
# ==============================================================================================
def train(cfg: Config) -> Path:
    distributed.dist_init()                        # under torchrun: join the process group
    check_config(cfg)
    runs.seed_everything(cfg.seed, cfg.threads)
    # --resume: a constant learning rate, so a longer run (--max_steps) is this one continued
    run = runs.open_run(cfg.output_dir, asdict(cfg), cfg.resume, cfg.overwrite, ('max_steps',))
    stages = training.parse_stages(cfg.stages, cfg.max_completion_length, cfg.max_steps)
    total_steps = sum(n for _, n in stages)
    state = run.load_state(total_steps) if cfg.resume else None
    train_tasks, test_tasks = grpo_setup.load_task_splits(cfg)   # a bad file: before the models
    model, tok = models.load_policy(str(run.checkpoint) if state else cfg.model)
    model = distributed.wrap_model(model, cfg.parallel)
    # beta = 0 (Skywork-OR1, Dr. GRPO): no reference model exists at all.
    ref_model = models.load_frozen(cfg.model) if cfg.beta > 0 else None
    train_prompts, test_prompts = (data.prompt_ids(tok, t, style=cfg.prompt_style)
                                   for t in (train_tasks, test_tasks))
    grpo_setup.check_tasks(cfg, train_tasks, train_prompts, model)
    reward_fn = grpo_setup.make_reward(cfg)
    engine = grpo_setup.rollout_engine(cfg, model, tok, train_prompts + test_prompts, stages)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate,
                                  weight_decay=cfg.weight_decay)
    controller = EntropyController(cfg.target_entropy, cfg.entropy_coef_delta, cfg.entropy_coef_min,
                                   cfg.entropy_coef_max, coef=cfg.entropy_coef)
    step, position, active, solved = 0, 0, list(range(len(train_tasks))), set()
    if state:   # --resume: the same step, prompt stream, prompts, optimizer and entropy controller
        step, position, active, solved, ctl = grpo_setup.restore(state, run, optimizer, total_steps)
        controller = EntropyController(**ctl)
    curriculum = grpo_setup.make_curriculum(cfg, train_tasks, state)
    curate = lambda tokens: pass_rate_filter(engine, train_tasks, train_prompts, cfg, tokens)
    if cfg.pass_rate_samples and not state:
        active = curate(stages[0][0])
    if not state and test_tasks:
        run.log({"step": 0, **evaluate(engine, test_tasks, test_prompts, cfg, stages[0][0])})
    bar = tqdm(range(step, total_steps), initial=step, total=total_steps, desc="grpo")
    budget, no_signal = training.TimeBudget(cfg.time_budget_minutes), 0
    for step in bar:
        t_step, times = time.perf_counter(), {}
        stage, max_tokens = training.stage_at(stages, step)
        if step > 0 and training.stage_at(stages, step - 1)[0] != stage:   # a new context stage
            active, solved = next_stage_prompts(active, solved, cfg, curate, max_tokens), set()
        beta = kl_coef(step, cfg)
        entropy_coef = controller.loss_coef if cfg.adaptive_entropy else cfg.entropy_coef

        # ---- rollout -> reward -> filter (DAPO dynamic sampling: rounds while groups short) ----
        samples = sample_step(engine, train_tasks, train_prompts, active, position, step,
                              max_tokens, reward_fn, cfg, times, curriculum)
        position += cfg.prompts_per_step * len(samples.rounds)
        if curriculum:
            curriculum.update(samples.signal)
        solved |= samples.solved
        metrics = {"step": step + 1, "stage": stage, "max_tokens": max_tokens, "beta": beta,
                   "entropy_coef": entropy_coef, "lr": cfg.learning_rate}
        # no group carried signal (all filtered, or all kept with A = 0): nothing to learn from
        train_stats, no_signal = {}, (no_signal + 1 if samples.flat == samples.groups else 0)
        if no_signal:
            grpo_log.no_signal_warning(step + 1, no_signal, samples, cfg, max_tokens)
        if samples.completions:
            # ---- advantage: the group is the baseline ----
            adv = group_advantages(samples.reward, cfg.num_generations, cfg.scale_rewards,
                                   keep=samples.keep)
            # ---- loss and update ----
            ids, attn, loss_mask = models.completion_batch(samples.completions, samples.keep,
                                                           tok.pad_token_id)
            train_stats = train_on_batch(model, optimizer, ref_model, ids, attn, loss_mask, adv,
                                         engines.engine_logprobs(samples.completions, ids.shape[1]),
                                         cfg, beta, entropy_coef, max_tokens, step, times)
            # ---- sync the inference engine ----
            with runs.timer(times, "sync_s"):
                engine.sync_weights(model)
            if cfg.adaptive_entropy:
                controller.update(train_stats["entropy"])

        # ---- log: the step's row of metrics.jsonl ----
        metrics.update(grpo_log.step_metrics(samples.rounds, samples.filtered / samples.groups,
                                             train_stats, times, cfg.tools))
        # the last step, or the next one would end past the time budget
        last = step + 1 == total_steps or budget.spent(t_step)
        # ---- evaluate: every --eval_every steps and at the last, in the same row ----
        if ((step + 1) % cfg.eval_every == 0 or last) and test_tasks:
            with runs.timer(metrics, "eval_s"):
                metrics.update(evaluate(engine, test_tasks, test_prompts, cfg, max_tokens))
        metrics["step_s"] = time.perf_counter() - t_step
        run.log(distributed.all_reduce_mean(metrics))
        run.log_samples(step + 1, grpo_log.sample_rows(samples.rounds[0], cfg.log_samples))
        bar.set_postfix(**grpo_log.progress(metrics))

        # ---- checkpoint ----
        if (step + 1) % cfg.save_steps == 0 or last:
            run.save(model, tok, {"step": step + 1, "position": position, "active": active,
                                  "solved": sorted(solved), "optimizer": optimizer.state_dict(),
                                  "controller": asdict(controller),
                                  "curriculum": curriculum and curriculum.state()})
        if last:
            budget.note_stop(step + 1, total_steps)
            break
    grpo_log.report(run, cfg)     # the engine stays up for the next stage (engines.make_engine)
    return run.root


def parse(args=None) -> Config:
    return cli.parse(Config, args)


if __name__ == "__main__":
    sys.exit(cli.main(train, parse))
