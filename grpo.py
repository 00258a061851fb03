"""GRPO and its family: DAPO, Dr. GRPO, Skywork-OR1 (MAGIC), Phi-4-reasoning-plus, STILL-3 knobs.

Group Relative Policy Optimization (DeepSeekMath §4; DeepSeek-R1 §2.2.1) samples G completions
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
    python grpo.py --model runs/sft120/checkpoint --math_levels 1 --math_families arithmetic,percent \
        --max_completion_length 96 --learning_rate 5e-6 --epsilon_high 0.28 --max_steps 30 \
        --eval_problems 100
The loop in `train` reads top to bottom: generate, score, advantages, filter, train, sync,
log, evaluate, checkpoint.
"""
from __future__ import annotations

import math
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

import cli
import data
import models
import runs
import engines
import distributed
import rewards
import tools
from engines import SamplingParams


@dataclass
class Config:
    # ---- model, data, rewards ----------------------------------------------------------------
    model: str = field(default="smollm2", metadata={"help": "policy: 'smollm2' (embedded default), 'tiny', a folder or hub id"})
    engine: str = field(default="auto", metadata={"help": "rollout engine: auto | hf | vllm (engines.make_engine)"})
    task: str = field(default="math", metadata={"help": "'math' (synthetic), 'instruction' (synthetic, rule-checked "
                      "constraints), 'general' (the two mixed), 'humaneval', a .jsonl/.parquet file or a HF dataset id"})
    num_train_prompts: int = field(default=512, metadata={"help": "training prompts to load"})
    eval_problems: int = field(default=64, metadata={"help": "test-split prompts for periodic evaluation (0: no eval)"})
    math_levels: str = field(default="1,2,3", metadata={"help": "synthetic math levels, e.g. '1' for the easiest problems"})
    math_families: str = field(default="", metadata={"help": "synthetic math families (comma list; empty: all): arithmetic,linear,fractions,percent"})
    prompt_field: str = field(default="prompt", metadata={"help": "prompt column of a file/HF dataset"})
    answer_field: str = field(default="answer", metadata={"help": "answer column of a file/HF dataset ('none': prompts only)"})
    rewards: str = field(default="math", metadata={"help": "weighted rewards from rewards.REWARDS, e.g. 'math:1,format:0.2' or "
                         "'still3_outcome'; model-based: judge (needs --judge_model), reward_model (--reward_model). "
                         "A reward applies to the tasks that have the field it reads (math: answer, ...)"})
    judge_model: str = field(default="", metadata={"help": "judge LM for the 'judge' reward: grades a response against the "
                             "task's reference answer, R = p(yes) (Qwen3 §4.4); a name as for --model"})
    reward_model: str = field(default="", metadata={"help": "scalar reward model for 'reward_model' (Bradley-Terry, no reference; "
                              "Qwen3 §4.4): a folder saved by rewards.train_reward_model, or 'tiny'"})
    prompt_style: str = field(default="default", metadata={"help": data.PROMPT_STYLE_HELP, "choices": list(data.PROMPT_STYLES)})
    # ---- rollouts ----------------------------------------------------------------------------
    num_generations: int = field(default=8, metadata={"help": "G, completions per prompt (TRL num_generations; Skywork 16)"})
    prompts_per_step: int = field(default=8, metadata={"help": "prompts per rollout batch; TRL's generation batch = prompts_per_step * num_generations"})
    max_completion_length: int = field(default=256, metadata={"aliases": ["--max-response-tokens"], "help": "max response tokens (TRL max_completion_length); see --stages"})
    stages: str = field(default="", metadata={"help": "multi-stage context 'TOKENS:STEPS,...' e.g. '8192:100,16384:100' (Skywork-OR1); overrides --max_completion_length/--max_steps"})
    max_steps: int = field(default=100, metadata={"help": "training steps (one rollout batch each) when --stages is empty"})
    temperature: float = field(default=1.0, metadata={"help": "rollout temperature (Skywork-OR1: 1.0); log-probs use the same one"})
    top_p: float = field(default=1.0, metadata={"help": "rollout nucleus sampling"})
    thinking_budget: int = field(default=0, metadata={"help": "Qwen3 thinking budget in tokens for rollouts and eval (0: off)"})
    tools: bool = field(default=False, metadata={"help": "tool-augmented rollouts and eval (STILL-3): a ```python block the policy writes "
                        "runs in the sandbox, its output is appended and left out of the loss (tools.ToolEngine)"})
    max_tool_calls: int = field(default=2, metadata={"help": "with --tools: python blocks run per rollout; later ones stay plain text"})
    # ---- advantages and loss -----------------------------------------------------------------
    scale_rewards: str = field(default="group", metadata={"help": "advantage std: group | batch | none (Dr. GRPO)"})
    loss_type: str = field(default="dapo", metadata={"help": "aggregation: grpo (sequence mean, then mean) | dapo (token mean over "
                           "the batch; default) | dr_grpo (token sum / (B * max tokens)). Dr. GRPO is that and "
                           "--scale_rewards none"})
    epsilon: float = field(default=0.2, metadata={"help": "clip range ε_low: ratio clipped to [1-ε, 1+ε_high]"})
    epsilon_high: float | None = field(default=None, metadata={"help": "ε_high (DAPO clip-higher: 0.28); default: = --epsilon"})
    beta: float = field(default=0.0, metadata={"help": "k3 KL coefficient (Skywork-OR1 0: no reference model is loaded; DeepSeekMath 0.04)"})
    kl_anneal: str = field(default="none", metadata={"help": "none | cosine: β_t goes from --beta to --beta_min over --kl_anneal_steps (STILL-3)"})
    beta_min: float = field(default=0.0, metadata={"help": "KL floor of the cosine schedule"})
    kl_anneal_steps: int = field(default=500, metadata={"help": "T of the cosine KL schedule (STILL-3: 500)"})
    entropy_coef: float = field(default=0.0, metadata={"help": "fixed entropy bonus c in L - c H (Phi-4-reasoning-plus 0.001); initial c with --adaptive_entropy"})
    adaptive_entropy: bool = field(default=False, metadata={"help": "Skywork-OR1 adaptive entropy control"})
    target_entropy: float = field(default=0.2, metadata={"help": "adaptive entropy: target (Skywork-OR1 0.2)"})
    entropy_coef_delta: float = field(default=1e-4, metadata={"help": "adaptive entropy: step Δ of c"})
    entropy_coef_min: float = field(default=0.0, metadata={"help": "adaptive entropy: lower bound of c"})
    entropy_coef_max: float = field(default=0.005, metadata={"help": "adaptive entropy: upper bound of c"})
    # ---- optimisation ------------------------------------------------------------------------
    learning_rate: float = field(default=1e-6, metadata={"help": "AdamW lr, constant (Skywork-OR1, DAPO: 1e-6)"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping (Skywork-OR1: 1.0)"})
    num_iterations: int = field(default=1, metadata={"help": "passes over each rollout batch (TRL num_iterations; PPO epochs); 1 with a full mini-batch = on-policy"})
    mini_batch_size: int = field(default=0, metadata={"help": "completions per optimizer step (0: the whole rollout batch, one step per pass)"})
    micro_batch_size: int = field(default=8, metadata={"help": "completions per forward/backward (memory only; gradients accumulate)"})
    share_prompt: bool = field(default=True, metadata={"help": "run each distinct prompt through the decoder once per micro-batch and its rollouts on top of its KV cache (same log-probs and gradients up to rounding; G=8, 50-token prompts: ~1/3 fewer decoder tokens)"})
    # ---- filtering ---------------------------------------------------------------------------
    filter_zero_variance: bool = field(default=True, metadata={"help": "drop groups without signal (Skywork-OR1 rejection sampling, DAPO dynamic sampling); see --filter_groups_by"})
    filter_groups_by: str = field(default="reward", metadata={"help": "what a kept group must vary in: reward (not all equal) | acc (0 < #correct < G: DAPO eq. 11; drops the tiny shaped-reward differences of all-right or all-wrong groups, which the group std inflates)", "choices": ["reward", "acc"]})
    max_steps_without_signal: int = field(default=10, metadata={"help": "stop with an error after this many steps in a row in "
                                          "which every group was filtered (nothing trained); 0: never"})
    oversample_rounds: int = field(default=0, metadata={"help": "DAPO dynamic sampling: extra rollout rounds to refill a batch thinned by filtering"})
    mask_truncated_completions: bool = field(default=False, metadata={"aliases": ["--mask-truncated"], "help": "leave truncated "
                                             "completions out of the loss (DAPO overlong filtering); otherwise they are scored"})
    truncated_reward: float = field(default=0.0, metadata={"help": "reward of a truncated completion when not masked (0 = wrong under "
                                    "the 1/0 math reward: Skywork-OR1). Never applied when a reward scores unfinished "
                                    "completions itself (phi4, length_aware: -0.5; overlong): their score stands"})
    score_truncated: bool = field(default=True, metadata={"help": "give truncated completions --truncated_reward; false keeps "
                                  "their computed reward (TRL's default)"})
    length_rejection_tokens: int = field(default=0, metadata={"help": "Phi-4-reasoning-plus length-based rejection: wrong completions "
                                         "longer than this leave their group before its mean and std, and the loss (0: off)"})
    pass_rate_samples: int = field(default=0, metadata={"help": "offline filter: k samples per prompt with the starting model (Skywork-OR1 16; 0: off)"})
    pass_rate_min: float = field(default=0.01, metadata={"help": "offline filter: keep prompts with pass rate >= this"})
    pass_rate_max: float = field(default=0.99, metadata={"help": "offline filter: keep prompts with pass rate <= this"})
    drop_solved_each_stage: bool = field(default=False, metadata={"help": "at each context stage start, drop the prompts solved in "
                                         "all rollouts of a group during the previous stage (Skywork-OR1)"})
    refilter_each_stage: bool = field(default=False, metadata={"help": "at each stage start, re-run the pass-rate filter [min, max] "
                                      "with the current policy (this project's variant; Skywork drops solved prompts)"})
    # ---- evaluation, logging, state ----------------------------------------------------------
    eval_every: int = field(default=10, metadata={"help": "evaluate on the test split every N steps (and before/after)"})
    eval_samples: int = field(default=1, metadata={"help": "k for avg@k at evaluation"})
    eval_temperature: float = field(default=0.0, metadata={"help": "evaluation temperature (0: greedy; Skywork-OR1 0.6 with k > 1)"})
    log_samples: int = field(default=2, metadata={"help": "rollouts written to samples.jsonl per step"})
    time_budget_minutes: float = field(default=0.0, metadata={"help": "wall-time budget: no step starts that would end past it (predicted from the last step's time); eval + checkpoint at the step reached; 0: no limit"})
    save_steps: int = field(default=10, metadata={"help": "checkpoint + state every N steps"})
    output_dir: str = field(default="runs/grpo", metadata={"help": "run directory"})
    resume: bool = field(default=False, metadata={"help": "continue from output_dir/state.pt (same data order and step count)"})
    overwrite: bool = field(default=False, metadata={"help": "replace a run already in output_dir (without it, such a folder is refused)"})
    parallel: str = field(default="fsdp2", metadata={"help": "under torchrun: fsdp2 (shard the policy) or ddp (replicate it) or none; --prompts_per_step is split over ranks; ignored in a single process", "choices": ["fsdp2", "ddp", "none"]})
    seed: int = field(default=0, metadata={"help": "seed of data order and sampling"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})


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
    >>> group_advantages(torch.tensor([1., 0., 0., 0.]), 4, "none", keep=torch.tensor([1, 1, 1, 0]).bool())
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

    >>> l, c = clipped_surrogate(torch.log(torch.tensor([[1.5]])), torch.zeros(1, 1), torch.tensor([1.]))
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


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
              ref_logp: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
              beta: float = 0.0, entropy_coef: float = 0.0, epsilon: float = 0.2,
              epsilon_high: float | None = None, loss_type: str = "dapo", max_tokens: int | None = None,
              num_seqs: float | None = None, num_tokens: float | None = None):
    """The GRPO-family loss of one batch, a pure function of tensors ([B, T] per token, [B] A):

        l_t = -min(ρ_t A, clip(ρ_t, 1-ε_low, 1+ε_high) A) + β KL_k3(π_θ || π_ref)_t - c H_t
        L   = aggregate_loss(l, mask, loss_type)

    The three terms share one mask, so a sample left out of the loss (a masked truncation, a
    length-rejected one) adds nothing to the policy gradient, the KL or the entropy bonus.
    Returns (loss, clipped [B, T] bool, kl [B, T] or None).

    >>> logp = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.9]]))
    >>> loss, _, _ = grpo_loss(logp, logp, torch.tensor([1., -1.]), torch.tensor([[1., 1.], [0., 0.]]))
    >>> loss        # on-policy, dapo: -(1 + 1) / 2 tokens; the masked row adds nothing
    tensor(-1.)
    """
    per_token, clipped = clipped_surrogate(logp, old_logp, advantages, epsilon, epsilon_high)  # [B, T]
    kl = None
    if ref_logp is not None and beta > 0:
        kl = k3_kl(logp, ref_logp)                                                           # [B, T]
        per_token = per_token + beta * kl
    if entropy is not None and entropy_coef > 0:
        per_token = per_token - entropy_coef * entropy                                       # [B, T]
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
        self.coef = min(max(self.coef + (self.delta if below else -self.delta), self.coef_min), self.coef_max)
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
    incorrect outputs", Phi-4-reasoning §5): [N] bool, True for the samples kept. A wrong
    completion longer than `max_tokens` is rejected: it leaves the group before the group
    statistics (`group_advantages(keep=...)`) and the loss.
    >>> length_rejection(torch.tensor([10, 900, 900]), torch.tensor([False, False, True]), 500)
    tensor([ True, False,  True])
    """
    return ~((lengths > max_tokens) & ~correct)


def parse_stages(stages: str, max_completion_length: int, max_steps: int) -> list[tuple[int, int]]:
    """'8192:100,16384:100' -> [(8192, 100), (16384, 100)]; empty -> [(max_completion_length, max_steps)]."""
    if not stages.strip():
        return [(max_completion_length, max_steps)]
    try:
        out = [(int(a), int(b)) for a, b in (s.split(":") for s in stages.split(","))]
    except ValueError:
        raise ValueError(f"--stages {stages!r}: write 'TOKENS:STEPS,TOKENS:STEPS', e.g. '8192:100,16384:100'") from None
    if any(t <= 0 or n <= 0 for t, n in out):
        raise ValueError(f"--stages {stages!r}: tokens and steps must be positive")
    return out


def stage_at(stages: list[tuple[int, int]], step: int) -> tuple[int, int]:
    """(stage index, max response tokens) of a 0-based step."""
    end = 0
    for i, (tokens, steps) in enumerate(stages):
        end += steps
        if step < end:
            return i, tokens
    return len(stages) - 1, stages[-1][0]


REFLECTION = {"wait": r"\bwait\b", "verify": r"\bverif(?:y|ied|ies)\b", "check": r"\b(?:re)?check",
              "however": r"\bhowever\b", "alternatively": r"\balternatively\b"}


def reflection_counts(texts: list[str]) -> dict[str, float]:
    """Mean occurrences per completion of the reflection words STILL-3 watches emerge."""
    return {f"reflect_{w}": sum(len(re.findall(p, t.lower())) for t in texts) / max(len(texts), 1)
            for w, p in REFLECTION.items()}




# ==============================================================================================
# Checks: stop at start with a message that names the flag and the fix
# ==============================================================================================


def check_config(cfg: Config):
    cli.check_sampling(cfg.temperature, cfg.top_p)
    cli.check_positive(cfg, "num_train_prompts", "prompts_per_step", "max_completion_length", "max_steps",
                       "num_iterations", "micro_batch_size", "save_steps", "eval_every", "eval_samples",
                       "learning_rate")
    if cfg.eval_temperature < 0 or cfg.mini_batch_size < 0 or cfg.eval_problems < 0:
        raise ValueError("--eval_temperature (0: greedy), --mini_batch_size (0: the whole batch) and "
                         "--eval_problems (0: no evaluation) cannot be negative")
    if cfg.prompts_per_step % distributed.world_size() or (distributed.world_size() > 1 and cfg.filter_zero_variance):
        raise ValueError(f"torchrun with {distributed.world_size()} ranks: --prompts_per_step must be a multiple of "
                         "it, and pass --filter_zero_variance false (every rank must train on as many groups)")
    if cfg.num_generations < 2:
        raise ValueError(f"--num_generations {cfg.num_generations}: GRPO needs a group of at least 2 "
                         "completions per prompt for its baseline; use --num_generations 8 (Skywork-OR1: 16)")
    if cfg.epsilon_high is not None and cfg.epsilon_high < cfg.epsilon:
        raise ValueError(f"--epsilon_high {cfg.epsilon_high} is below --epsilon {cfg.epsilon}: clip-higher "
                         "needs ε_high >= ε_low (DAPO: --epsilon 0.2 --epsilon_high 0.28)")
    for name, val, ok in (("--scale_rewards", cfg.scale_rewards, ("group", "batch", "none")),
                          ("--loss_type", cfg.loss_type, ("grpo", "dapo", "dr_grpo")),
                          ("--kl_anneal", cfg.kl_anneal, ("none", "cosine")),
                          ("--filter_groups_by", cfg.filter_groups_by, ("reward", "acc"))):
        if val not in ok:
            raise ValueError(f"{name} {val!r} is not one of {', '.join(ok)}")
    names = {n for n, _ in rewards.parse_reward_spec(cfg.rewards)}  # unknown names raise, listing the valid ones
    for name, flag in rewards.MODEL_REWARDS.items():
        if name in names and not getattr(cfg, flag.lstrip("-")):
            raise ValueError(f"--rewards {cfg.rewards!r} uses {name!r}, which needs a model: pass {flag} PATH")
    if cfg.loss_type == "dr_grpo" and cfg.scale_rewards != "none":
        print(f"[grpo] note: --loss_type dr_grpo with --scale_rewards {cfg.scale_rewards} is only Dr. GRPO's "
              "constant normaliser; Dr. GRPO also drops the std scaling: add --scale_rewards none")
    batch = cfg.prompts_per_step * cfg.num_generations
    if cfg.mini_batch_size and batch % cfg.mini_batch_size:
        raise ValueError(f"--mini_batch_size {cfg.mini_batch_size} does not divide the rollout batch "
                         f"{batch} (= --prompts_per_step x --num_generations)")
    parse_stages(cfg.stages, cfg.max_completion_length, cfg.max_steps)
    if cfg.tools and cfg.thinking_budget:
        raise ValueError("--tools with --thinking_budget: the budget's second pass would train on the tool outputs; use one")


def check_tasks(cfg: Config, tasks: list[dict], prompts: list[list[int]], model):
    names = {n for n, _ in rewards.parse_reward_spec(cfg.rewards)}
    for name in sorted(names):
        if not any(rewards.applies(name, t) for t in tasks):
            field_ = rewards.NEEDS[name]
            raise ValueError(f"--rewards {cfg.rewards!r}: {name!r} reads each task's {field_!r}, but the "
                             f"{len(tasks)} tasks of --task {cfg.task!r} have none (first: {tasks[0].get('id', 0)}). "
                             "Map the column with --answer_field NAME, or use rewards that need no answer.")
    longest = max(t for t, _ in parse_stages(cfg.stages, cfg.max_completion_length, cfg.max_steps))
    positions = getattr(model.config, "max_position_embeddings", None)
    need = max(len(p) for p in prompts) + longest + (64 if cfg.thinking_budget else 0)
    if positions and need > positions:
        raise ValueError(f"the longest prompt plus --max_completion_length/--stages needs {need} positions, "
                         f"but the model has max_position_embeddings={positions}. Shorten the responses, or "
                         "extend the context first with sft.py --rope_theta_factor 2 --max_length N "
                         "(Phi-4-reasoning's RoPE base rescaling) and train from that checkpoint.")


# ==============================================================================================
# Rollouts, rewards, evaluation
# ==============================================================================================
def rollout(engine, prompts, n, max_tokens, temperature, top_p, thinking_budget, seed):
    params = SamplingParams(n=n, temperature=temperature, top_p=top_p, max_new_tokens=max_tokens, seed=seed)
    if thinking_budget and thinking_budget < max_tokens:
        return engines.generate_with_thinking_budget(engine, prompts, params, thinking_budget)
    return engine.generate(prompts, params)


def make_reward(cfg: Config) -> rewards.combined_reward:
    """--rewards as one weighted reward; "judge" and "reward_model" load --judge_model and
    --reward_model (Qwen3 general RL: a judge with the reference answer, a reward model without)."""
    names = {n for n, _ in rewards.parse_reward_spec(cfg.rewards)}
    built = {}
    if "judge" in names:
        judge, judge_tok = models.load_policy(cfg.judge_model)
        built["judge"] = rewards.JudgeReward(judge.eval(), judge_tok)
    if "reward_model" in names:
        rm, rm_tok = models.load_reward_model(cfg.reward_model)
        built["reward_model"] = rewards.ScalarRewardModel(rm.eval(), rm_tok)
    return rewards.combined_reward(rewards.parse_reward_spec(cfg.rewards), models=built)


def is_correct(text: str, task: dict) -> bool:
    """Task success, for accuracy and filtering: the math answer, all tests, or all constraints."""
    if task.get("answer"):
        return rewards.verify_math(text, task["answer"])
    if task.get("tests"):
        return rewards.code_reward(text, task, all_or_nothing=True) == 1.0
    if task.get("constraints"):
        return rewards.instruction_reward(text, task, all_or_nothing=True) == 1.0
    return False


def score(completions, tasks, reward_fn, max_tokens):
    """Rewards [N], the mean of each reward component, correctness [N] (`is_correct`)."""
    totals, parts, correct = [], {}, []
    for c in completions:
        task = tasks[c.prompt_index]
        info = dict(num_tokens=len(c.completion_ids), finished=not c.truncated, max_tokens=max_tokens)
        b = reward_fn.breakdown(c.text, task, **info)
        totals.append(b.pop("total"))
        for k, v in b.items():
            parts.setdefault(k, []).append(v)
        correct.append(is_correct(c.text, task))
    return torch.tensor(totals), {k: sum(v) / len(v) for k, v in parts.items()}, torch.tensor(correct)


def evaluate(engine, tasks, prompts, cfg, max_tokens) -> dict:
    """avg@k accuracy on the test split (greedy when --eval_temperature 0)."""
    k = cfg.eval_samples if cfg.eval_temperature > 0 else 1
    with engines.progress(f"eval {len(tasks)} problems"):
        outs = rollout(engine, prompts, k, max_tokens, cfg.eval_temperature, 1.0, cfg.thinking_budget, cfg.seed)
    ok = [is_correct(c.text, tasks[c.prompt_index]) for c in outs]
    return {"eval_accuracy": sum(ok) / len(ok), "eval_truncated": sum(c.truncated for c in outs) / len(outs),
            "eval_length": sum(len(c.completion_ids) for c in outs) / len(outs)}


def pass_rate_filter(engine, tasks, prompts, k, lo, hi, max_tokens, temperature, seed):
    """Offline filter (Skywork-OR1 §3.1, Qwen3 §4.2): keep prompts whose pass rate over k samples of
    the current policy lies in [lo, hi] (Skywork-OR1 keeps 1..15 of 16: neither trivial nor hopeless)."""
    with engines.progress(f"pass-rate filter, {k} samples x {len(prompts)} prompts"):
        outs = engine.generate(prompts, SamplingParams(n=k, temperature=temperature, max_new_tokens=max_tokens, seed=seed))
    passed = [0] * len(tasks)
    for c in outs:
        passed[c.prompt_index] += (not c.truncated) and is_correct(c.text, tasks[c.prompt_index])
    return [i for i, p in enumerate(passed) if lo <= p / k <= hi]


def next_stage_prompts(active: list[int], solved: set[int], cfg: Config, filter_prompts, max_tokens) -> list[int]:
    """The prompts of a new context stage. --drop_solved_each_stage: drop those the policy solved
    in every rollout of some group during the stage that ended (Skywork-OR1 §3.1: prompts answered
    correctly in all samples of the previous stage carry no signal). --refilter_each_stage: run the
    pass-rate filter [min, max] again with the current policy (this project's variant)."""
    if cfg.drop_solved_each_stage:
        left = [i for i in active if i not in solved]
        print(f"[grpo] new stage: dropped {len(active) - len(left)} prompts solved in all rollouts")
        active = left or active
    if cfg.refilter_each_stage and cfg.pass_rate_samples:
        active = filter_prompts(max_tokens)
    return active


def no_signal_warning(step: int, in_a_row: int, n_groups: int, cfg: Config):
    """A step that trained nothing says so (at once, then every 5 such steps), and after
    --max_steps_without_signal of them in a row the run stops: it cannot learn as it is."""
    why = (f"all {n_groups} groups were filtered: every sample of a group got the same "
           f"{'correctness' if cfg.filter_groups_by == 'acc' else 'reward'}, so there is no advantage to learn from")
    fix = ("start from an SFT checkpoint (python sft.py, then --model runs/sft/checkpoint), add a shaped "
           "reward (--rewards math:1,format:0.2 or math_partial), use easier tasks (--math_levels 1) or "
           "sample more (--num_generations 16, --oversample_rounds 2)")
    if cfg.max_steps_without_signal and in_a_row >= cfg.max_steps_without_signal:
        raise ValueError(f"step {step}: {in_a_row} steps in a row trained nothing ({why}). Stopping: the run "
                         f"cannot learn as it is; {fix} (--max_steps_without_signal sets the patience)")
    if in_a_row == 1 or in_a_row % 5 == 0:
        tqdm.write(f"[grpo] step {step}: nothing trained ({in_a_row} in a row): {why}. To fix: {fix}", file=sys.stderr)


def training_batch(comps, keep: torch.Tensor, pad_id: int):
    """Padded (ids, attention, loss mask [N, T-1]) of the kept groups' samples. The mask is 0 on
    prompt and padding, on tokens the engine inserted (the thinking budget's cue) and on whole
    samples left out (`keep` False: masked truncations, length rejections)."""
    ids, attn, cmask = models.pad_batch([c.prompt_ids for c in comps], [c.completion_ids for c in comps], pad_id)
    loss_mask = cmask[:, 1:].float()
    for b, c in enumerate(comps):
        if c.sampled_mask is not None:
            pos = loss_mask[b].nonzero().squeeze(-1)
            loss_mask[b, pos] *= torch.tensor(c.sampled_mask, dtype=torch.float)
    return ids, attn, loss_mask * keep.float().unsqueeze(1)


def step_metrics(seen: list[Rollouts], filtered_share: float, train_stats: dict, times: dict) -> dict:
    """One metrics.jsonl row's rollout statistics over every round of the step. `reward` is the
    reward the group statistics see (after truncation handling), `reward_raw` the reward
    functions' own output: they differ where truncated completions were re-scored."""
    outs = [c for roll in seen for c in roll.completions]
    lengths = [len(c.completion_ids) for c in outs]
    out = {"reward": torch.cat([r.reward for r in seen]).mean().item(),
           "reward_raw": torch.cat([r.reward_raw for r in seen]).mean().item(),
           "accuracy": torch.cat([r.correct for r in seen]).float().mean().item(),
           **{f"reward_{k}": sum(r.parts.get(k, 0.0) for r in seen) / len(seen) for k in seen[0].parts},
           "response_length": sum(lengths) / len(lengths), "response_length_max": max(lengths),
           "truncated": torch.cat([r.truncated for r in seen]).float().mean().item(),
           "rejected": 1 - torch.cat([r.keep for r in seen]).float().mean().item(),
           "groups_filtered": filtered_share, "rollout_rounds": len(seen),
           "groups_any_correct": torch.cat([r.correct.view(len(r.prompts), -1).any(1) for r in seen]).float().mean().item(),
           **reflection_counts([c.text for c in outs]), **train_stats,
           "gen_tokens_per_s": sum(lengths) / max(times.get("gen_s", 0), 1e-9), **times}
    if "train_s" in times:
        out["train_tokens_per_s"] = train_stats["train_tokens"] / times["train_s"]
    return out


def sample_rows(roll: Rollouts, n: int) -> list[dict]:
    """A few rollouts of the step for samples.jsonl."""
    return [{"prompt": roll.tasks[c.prompt_index]["prompt"], "answer": roll.tasks[c.prompt_index].get("answer"),
             "completion": c.text, "reward": roll.reward[k].item(), "reward_raw": roll.reward_raw[k].item(),
             "truncated": c.truncated} for k, c in enumerate(roll.completions[:n])]


def prompt_order(num: int, seed: int, position: int, count: int) -> list[int]:
    """Indices `position .. position+count` of an endless stream that reshuffles every epoch with
    Random(seed, epoch): the same for a resumed run as for an uninterrupted one."""
    out = []
    for pos in range(position, position + count):
        epoch, i = divmod(pos, num)
        perm = list(range(num))
        random.Random(f"{seed}-{epoch}").shuffle(perm)
        out.append(perm[i])
    return out


def load_task_splits(cfg: Config):
    levels = tuple(int(x) for x in cfg.math_levels.split(","))
    if cfg.task in ("instruction", "general"):
        make = data.instruction_tasks if cfg.task == "instruction" else lambda n, split, seed: data.general_tasks(n, split, seed, levels)
        return (make(cfg.num_train_prompts, "train", cfg.seed),
                make(cfg.eval_problems, "test", cfg.seed) if cfg.eval_problems else [])
    if cfg.task == "math":
        levels = tuple(int(x) for x in cfg.math_levels.split(","))
        families = [f for f in cfg.math_families.split(",") if f] or None
        train = data.math_tasks(cfg.num_train_prompts, "train", cfg.seed, families, levels)
        test = data.math_tasks(cfg.eval_problems, "test", cfg.seed, families, levels) if cfg.eval_problems else []
        return train, test
    answer_field = None if cfg.answer_field.lower() in ("", "none") else cfg.answer_field
    kw = dict(prompt_field=cfg.prompt_field, answer_field=answer_field, seed=cfg.seed)
    train = data.load_tasks(cfg.task, "train", cfg.num_train_prompts, **kw)
    try:
        test = data.load_tasks(cfg.task, "test", cfg.eval_problems, **kw) if cfg.eval_problems else []
    except Exception:  # a file or dataset without a test split: no periodic evaluation
        test = []
    return train, test


def parse(args=None) -> Config:
    return cli.parse(Config, args)


# ==============================================================================================
# The loop
# ==============================================================================================
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


def train(cfg: Config) -> Path:
    distributed.dist_init()                        # under torchrun: join the process group
    check_config(cfg)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    runs.seed_everything(cfg.seed)
    run = runs.open_run(cfg.output_dir, asdict(cfg), cfg.resume, cfg.overwrite)
    state = run.load_state() if cfg.resume else None
    model, tok = models.load_policy(str(run.checkpoint) if state else cfg.model)
    model = distributed.wrap_model(model, cfg.parallel)
    # beta = 0 (Skywork-OR1, Dr. GRPO): no reference model exists at all.
    ref_model = models.load_policy(cfg.model)[0].eval().requires_grad_(False) if cfg.beta > 0 else None
    train_tasks, test_tasks = load_task_splits(cfg)
    data.set_prompt_style(cfg.prompt_style)
    train_prompts, test_prompts = data.prompt_ids(tok, train_tasks), data.prompt_ids(tok, test_tasks)
    check_tasks(cfg, train_tasks, train_prompts, model)
    reward_fn = make_reward(cfg)
    keep_raw = reward_fn.scores_unfinished or not cfg.score_truncated   # never overwrite such a score
    longest = max(len(p) for p in train_prompts + test_prompts) + max(t for t, _ in parse_stages(
        cfg.stages, cfg.max_completion_length, cfg.max_steps)) + 64
    engine = engines.make_engine(cfg.engine, model, tok, max_model_len=longest)  # HF ignores the length
    if cfg.tools:
        engine = tools.ToolEngine(engine, max_calls=cfg.max_tool_calls)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    controller = EntropyController(cfg.target_entropy, cfg.entropy_coef_delta, cfg.entropy_coef_min,
                                   cfg.entropy_coef_max, coef=cfg.entropy_coef)
    stages = parse_stages(cfg.stages, cfg.max_completion_length, cfg.max_steps)
    total_steps = sum(n for _, n in stages)
    G, P = cfg.num_generations, cfg.prompts_per_step // distributed.world_size()   # P: this rank's prompts
    step, position, active, solved = 0, 0, list(range(len(train_tasks))), set()
    if state:
        step, position, active = state["step"], state["position"], state["active"]
        solved = set(state.get("solved", []))
        optimizer.load_state_dict(state["optimizer"])
        controller = EntropyController(**state["controller"])
        run.truncate_metrics(step)
        print(f"[grpo] resumed {run.root} at step {step}/{total_steps}")

    def filter_prompts(max_tokens):
        keep = pass_rate_filter(engine, train_tasks, train_prompts, cfg.pass_rate_samples, cfg.pass_rate_min,
                                cfg.pass_rate_max, max_tokens, cfg.temperature, cfg.seed)
        if not keep:
            raise ValueError(f"the pass-rate filter [{cfg.pass_rate_min}, {cfg.pass_rate_max}] kept no prompt of "
                             f"{len(train_tasks)}: widen the range, raise --pass_rate_samples or use easier tasks")
        print(f"[grpo] pass-rate filter kept {len(keep)}/{len(train_tasks)} prompts")
        return keep

    if cfg.pass_rate_samples and not state:
        active = filter_prompts(stages[0][0])
    if not state and test_tasks:
        run.log({"step": 0, **evaluate(engine, test_tasks, test_prompts, cfg, stages[0][0])})
    bar = tqdm(range(step, total_steps), initial=step, total=total_steps, desc="grpo")
    t_start, no_signal = time.perf_counter(), 0
    for step in bar:
        t_step, times = time.perf_counter(), {}
        stage, max_tokens = stage_at(stages, step)
        if step > 0 and stage_at(stages, step - 1)[0] != stage:      # a new context stage begins
            active = next_stage_prompts(active, solved, cfg, filter_prompts, max_tokens)
            solved = set()
        beta = cosine_beta(step, cfg.beta, cfg.beta_min, cfg.kl_anneal_steps) if cfg.kl_anneal == "cosine" else cfg.beta
        entropy_coef = controller.loss_coef if cfg.adaptive_entropy else cfg.entropy_coef

        # ---- rollout, reward, filter (DAPO dynamic sampling: over-sample while groups are short) ----
        batch, seen, n_groups, n_filtered = [], [], 0, 0
        for rnd in range(1 + cfg.oversample_rounds):
            idx = [active[i] for i in prompt_order(len(active), cfg.seed, position, cfg.prompts_per_step)]
            idx, position = distributed.shard_for_rank(idx), position + cfg.prompts_per_step   # whole groups per rank
            with runs.timer(times, "gen_s"):
                outs = rollout(engine, [train_prompts[i] for i in idx], G, max_tokens, cfg.temperature,
                               cfg.top_p, cfg.thinking_budget, seed=cfg.seed * 1_000_003 + step * 97 + rnd)
            tasks = [train_tasks[i] for i in idx]
            raw, parts, correct = score(outs, tasks, reward_fn, max_tokens)
            truncated = torch.tensor([c.truncated for c in outs])
            r, keep = truncation_rewards(raw, truncated, cfg.mask_truncated_completions,
                                         None if keep_raw else cfg.truncated_reward)
            if cfg.length_rejection_tokens:   # rejected before the group statistics
                lengths = torch.tensor([len(c.completion_ids) for c in outs])
                keep = keep & length_rejection(lengths, correct, cfg.length_rejection_tokens)
            roll = Rollouts(idx, outs, tasks, raw, r, parts, correct, truncated, keep)
            seen.append(roll)
            solved |= {i for g, i in enumerate(idx) if bool(correct[g * G:(g + 1) * G].all())}
            signal = (correct & ~truncated) if cfg.filter_groups_by == "acc" else r   # truncated: never correct
            flat = zero_variance_groups(signal, G, keep) if cfg.filter_zero_variance else torch.zeros(P, dtype=torch.bool)
            n_groups, n_filtered = n_groups + P, n_filtered + int(flat.sum())
            batch += [(roll, g) for g in range(P) if not flat[g]][:P - len(batch)]
            if len(batch) == P or not cfg.filter_zero_variance:
                break

        # ---- advantage: the group is the baseline; loss and update ----
        metrics = {"step": step + 1, "stage": stage, "max_tokens": max_tokens, "beta": beta,
                   "entropy_coef": entropy_coef, "lr": cfg.learning_rate}
        train_stats = {}
        no_signal = 0 if batch else no_signal + 1
        if no_signal:
            no_signal_warning(step + 1, no_signal, n_groups, cfg)
        if batch:
            group = lambda roll, g: slice(g * G, (g + 1) * G)
            comps = [c for roll, g in batch for c in roll.completions[group(roll, g)]]
            keep = torch.cat([roll.keep[group(roll, g)] for roll, g in batch])
            adv = group_advantages(torch.cat([roll.reward[group(roll, g)] for roll, g in batch]), G,
                                   cfg.scale_rewards, keep=keep)
            ids, attn, loss_mask = training_batch(comps, keep, tok.pad_token_id)
            train_stats = train_on_batch(model, optimizer, ref_model, ids, attn, loss_mask, adv,
                                         cfg, beta, entropy_coef, max_tokens, step, times)
            # ---- sync the inference engine ----
            with runs.timer(times, "sync_s"):
                engine.sync_weights(model)
            if cfg.adaptive_entropy:
                controller.update(train_stats["entropy"])

        # ---- log ----
        metrics.update(step_metrics(seen, n_filtered / n_groups, train_stats, times))
        if cfg.tools:
            metrics.update(tools.tool_metrics([c for roll in seen for c in roll.completions], tok))
        now = time.perf_counter()   # the budget: no step starts that would end past it (at this step's pace)
        over = now - t_start + (now - t_step) > 60 * cfg.time_budget_minutes
        # under torchrun every rank stops at the same step: clocks differ, so any rank over stops all
        last = step + 1 == total_steps or (cfg.time_budget_minutes > 0 and distributed.mean_over_ranks(float(over)) > 0)
        if ((step + 1) % cfg.eval_every == 0 or last) and test_tasks:
            t_eval = time.perf_counter()
            metrics.update(evaluate(engine, test_tasks, test_prompts, cfg, max_tokens))
            metrics["eval_s"] = time.perf_counter() - t_eval
        metrics["step_s"] = time.perf_counter() - t_step
        run.log(distributed.all_reduce_mean(metrics))
        run.log_samples(step + 1, sample_rows(seen[0], cfg.log_samples))
        bar.set_postfix(reward=f"{metrics['reward']:.3f}", acc=f"{metrics['accuracy']:.2f}",
                        len=f"{metrics['response_length']:.0f}", **({"eval": f"{metrics['eval_accuracy']:.2f}"}
                                                                     if "eval_accuracy" in metrics else {}))

        # ---- checkpoint ----
        if (step + 1) % cfg.save_steps == 0 or last:
            run.save(model, tok, {"step": step + 1, "position": position, "active": active,
                                  "solved": sorted(solved), "optimizer": optimizer.state_dict(),
                                  "controller": asdict(controller)})
        if last:
            break
    run.plot(["reward", "accuracy", "response_length", "truncated", "entropy", "entropy_coef", "kl",
              "clip_frac", "groups_filtered", "groups_any_correct", "reward_format", "tool_calls", "reflect_wait", "step_s"], overlay={"accuracy": "eval_accuracy"},
             title=f"grpo: {cfg.model} on {cfg.task}, rewards {cfg.rewards}, {cfg.prompts_per_step} x "
                   f"{cfg.num_generations} rollouts, lr {cfg.learning_rate:g}, loss {cfg.loss_type}")
    run.summary(["reward", "accuracy", "eval_accuracy", "entropy"])
    getattr(engine, "close", lambda: None)()
    return run.root


def train_on_batch(model, optimizer, ref_model, ids, attn, loss_mask, adv, cfg, beta,
                   entropy_coef, max_tokens, step, times) -> dict:
    """`num_iterations` passes over the rollout batch in mini-batches of `mini_batch_size`, one
    optimizer step each (`grpo_loss` on every micro-batch). Strictly on-policy (1 pass, one
    mini-batch) recomputes no old log-probs: ρ = exp(logp - logp.detach()) = 1 with the
    policy-gradient gradient. Rows whose mask is all 0 (left out of the loss) add nothing."""
    N = ids.shape[0]
    mb = cfg.mini_batch_size or N
    on_policy = cfg.num_iterations == 1 and mb >= N
    micro = max(1, cfg.micro_batch_size)

    first = int(loss_mask.sum(0).nonzero().min()) if loss_mask.any() else 0  # prompt ends here

    def rows(sel):  # a micro-batch: columns up to its last token; scored from the first response token
        width = int(attn[sel].sum(0).nonzero().max()) + 1
        return ids[sel, :width], attn[sel, :width], loss_mask[sel, first:width - 1], slice(first, width - 1)

    def logps(m, i, a, with_entropy=False):  # scored from column `first`: the prompt's last token
        if cfg.share_prompt:
            return models.shared_prompt_logprobs(m, i, a, first + 1, cfg.temperature, with_entropy=with_entropy)
        return models.token_logprobs(m, i, a, cfg.temperature, with_entropy=with_entropy, start=first)

    def no_grad_logps(m):
        out = torch.zeros_like(loss_mask)
        with torch.no_grad():
            for s in range(0, N, micro):
                sel = torch.arange(s, min(s + micro, N))
                i, a, _, cols = rows(sel)
                out[sel, cols] = logps(m, i, a)[0]
        return out

    t0 = time.perf_counter()
    old_logp = None if on_policy else no_grad_logps(model)
    ref_logp = no_grad_logps(ref_model) if ref_model is not None and beta > 0 else None
    need_entropy = entropy_coef > 0
    sums = dict(clip=0.0, kl=0.0, ent=0.0, ent_full=0.0, tokens=0.0, loss=0.0, grad_norm=0.0, opt_steps=0)
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
                i, a, mask, cols = rows(sel)
                logp, entropy = logps(model, i, a, need_entropy)
                old = logp.detach() if old_logp is None else old_logp[sel, cols]
                # normalisers of the global mini-batch: each rank divides by the mean per rank and
                # DDP/FSDP2 average gradients, so dapo = Σ_ranks loss / Σ_ranks tokens and grpo,
                # dr_grpo divide by all ranks' sequences (identity in a single process)
                loss, clipped, kl = grpo_loss(
                    logp, old, adv[sel], mask, None if ref_logp is None else ref_logp[sel, cols], entropy,
                    beta, entropy_coef, cfg.epsilon, cfg.epsilon_high, cfg.loss_type, max_tokens,
                    num_seqs=distributed.mean_over_ranks(len(mini)), num_tokens=distributed.mean_over_ranks(n_tokens))
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"step {step + 1}: the loss is {loss.item()}; nothing of this step was saved. Likely "
                        "cause: a learning rate too high for this model (--learning_rate), or log-probs of -inf "
                        "(a temperature near 0); the last checkpoint in --output_dir is intact")
                loss.backward()
                if kl is not None:
                    sums["kl"] += float((kl.detach() * mask).sum())
                if need_entropy:
                    sums["ent_full"] += float((entropy.detach() * mask).sum())
                if it == 0:  # statistics of the policy that sampled (first pass)
                    sums["ent"] += float((-logp.detach() * mask).sum())
                    sums["tokens"] += float(mask.sum())
                sums["clip"] += float((clipped.float() * mask).sum())
                sums["loss"] += loss.item()
            sums["grad_norm"] += float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm))
            optimizer.step()
            sums["opt_steps"] += 1
    times["train_s"] = time.perf_counter() - t0
    tok = max(sums["tokens"], 1.0)
    out = {"loss": sums["loss"] / sums["opt_steps"], "grad_norm": sums["grad_norm"] / sums["opt_steps"],
           "clip_frac": sums["clip"] / (tok * cfg.num_iterations), "entropy": sums["ent"] / tok,
           "train_tokens": float(attn.sum()) * cfg.num_iterations, "optimizer_steps": sums["opt_steps"]}
    if ref_logp is not None:
        out["kl"] = sums["kl"] / (tok * cfg.num_iterations)
    if need_entropy:
        out["entropy_full"] = sums["ent_full"] / (tok * cfg.num_iterations)
    return out


if __name__ == "__main__":
    sys.exit(cli.main(train, parse))
