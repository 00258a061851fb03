"""Strong-to-weak logit distillation, off-policy and on-policy (Qwen3 §4.5; GKD).

Qwen3 trains its small models from a large teacher instead of by RL (Qwen3 tech report, §4.5,
"Strong-to-Weak Distillation"): first *off-policy* -- the student learns the teacher's logits on
sequences the teacher wrote, with /think and /no_think prompts mixed -- then *on-policy* -- the
student samples, the teacher scores the very same tokens, and the student's logits are pulled
toward the teacher's. Qwen3-8B needed 1,800 GPU hours this way against 17,920 by RL.

The loss is GKD's (Agarwal et al. 2024, "On-Policy Distillation of Language Models: Learning
from Self-Generated Mistakes", eq. 2-4 and Algorithm 1): with probability λ (`--lmbda`) a batch
is sampled by the student, otherwise it comes from the teacher's cached outputs; for a prompt x
and completion y the student minimises the per-token divergence

    L(θ) = 1/|y| Σ_t  D( p_T(· | x, y_<t) ,  p_S^θ(· | x, y_<t) )          (token mean)

with D the forward KL, the reverse KL, or the generalized JSD_β that runs between them
(`--beta`, see `generalized_jsd`), over the whole vocabulary or the teacher's top-k tokens plus a
"rest" bucket (`--top_k_vocab`), at a distillation temperature τ (`--temperature`, softmax(z/τ)
for both models; also the sampling temperature, as in TRL's GKDTrainer). As in GKD, no gradient
flows through the student's sampling: on-policy samples are treated as data.

Order matters (Qwen3 runs off-policy first): a student far from its teacher, such as a freshly
layer-dropped one, samples degenerate text -- on CPU ours emitted nothing but newlines -- where the
teacher agrees with it, so on-policy steps teach it little. Start with `--lmbda 0`, then raise λ.

The method is in this file; the flag checks, the checks on what it loads (the two models, the
teacher cache), resume, the metrics rows and the checkpoints are in `distill_run.py`.

    python distill.py --student_from_teacher --keep_every 2 --max_steps 30
"""
from __future__ import annotations

import copy
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import trange

import cli
import data
import dataset_tasks
import distill_run
import distributed
import engines
import models
import rewards
import runs
import training
from distill_run import check_config  # also run by pipeline.py on every stage at start


@dataclass
class Config:
    teacher: str = field(default="smollm2", metadata={"help": (
        "teacher: 'smollm2' (embedded default), 'tiny', a checkpoint folder or a hub id")})
    student: str = field(default="", metadata={"help": (
        "student model (same names as --teacher); ignored with --student_from_teacher")})
    student_from_teacher: bool = field(default=False, metadata={"help": (
        "build the student from the teacher by keeping every k-th layer")})
    keep_every: int = field(default=2, metadata={"help": (
        "with --student_from_teacher: keep layers 0, k, 2k, ... (30 layers, k=2 -> 15)")})
    task: str = field(default="math", metadata={"help": (
        "'math' (synthetic, with answers), a .jsonl/.json/.csv/.tsv/.parquet/.arrow/.feather "
        "file of prompts or a HF dataset id (NAME:CONFIG for one with configs)")})
    math_levels: str = field(default="1,2,3", metadata={"help": (
        "levels of the synthetic math task, comma-separated")})
    prompt_field: str = field(default="prompt", metadata={"help": (
        "prompt column of a file/HF dataset")})
    answer_field: str = field(default="answer", metadata={"help": (
        "answer column of a file/HF dataset ('none': prompts only)")})
    num_train_prompts: int = field(default=64, metadata={"help": (
        "training prompts (the teacher answers each once for the off-policy cache); from a file "
        "or dataset, a sample seeded by --seed, not its first rows")})
    eval_problems: int = field(default=32, metadata={"help": (
        "held-out prompts for eval KL and accuracy, a seeded sample (a single file: its test "
        "rows by a 'split' column, else rows left out of training; 0 = no evaluation)")})
    think_ratio: float = field(default=0.5, metadata={"help": (
        "fraction of prompts with '/think' (the rest '/no_think'); -1 = no switch")})
    lmbda: float = field(default=0.5, metadata={"help": (
        "GKD λ: probability that a batch is sampled by the student (on-policy); 0 = off-policy "
        "only")})
    divergence: str = field(default="jsd", metadata={"help": (
        "forward_kl (KL(T||S)) | reverse_kl (KL(S||T)) | jsd (generalized JSD with --beta)")})
    beta: float = field(default=0.5, metadata={"help": (
        "generalized JSD β: 0 = forward KL, 1 = reverse KL (TRL GKDConfig convention)")})
    temperature: float = field(default=0.9, metadata={"help": (
        "distillation temperature τ (both softmaxes) and sampling temperature")})
    top_k_vocab: int = field(default=0, metadata={"help": (
        "divergence over the teacher's top-k tokens (+ tail, see --top_k_tail); 0 = full "
        "vocabulary")})
    top_k_tail: str = field(default="rest", metadata={"help": (
        "rest: the tail mass is one extra bucket | renorm: drop it and renormalise the top-k")})
    filter_correct: bool = field(default=False, metadata={"help": (
        "off-policy: keep only teacher answers that rewards.verify_math accepts")})
    teacher_cache: str = field(default="", metadata={"help": (
        "jsonl of teacher outputs, made once (default: <output_dir>/teacher_samples.jsonl)")})
    max_completion_length: int = field(default=128, metadata={"help": (
        "completion budget for teacher, student and evaluation")})
    prompts_per_step: int = field(default=8, metadata={"help": (
        "prompts per step, one completion each (under torchrun: all ranks together)")})
    learning_rate: float = field(default=5e-5, metadata={"help": (
        "AdamW learning rate (constant after warm-up)")})
    warmup_steps: int = field(default=0, metadata={"help": "linear warm-up steps"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping"})
    max_steps: int = field(default=30, metadata={"help": "optimizer steps"})
    eval_every: int = field(default=10, metadata={"help": (
        "evaluate on held-out prompts every N steps (and before the first, after the last)")})
    save_steps: int = field(default=10, metadata={"help": (
        "checkpoint every N steps (and after the last)")})
    chunk_size: int = field(default=128, metadata={"help": (
        "token positions per logits chunk (memory: 2 x chunk x vocab floats)")})
    engine: str = field(default="auto", metadata={"help": (
        "student sampling engine: auto | hf | vllm"), "choices": ["auto", "hf", "vllm"]})
    prompt_style: str = field(default="default", metadata={
        "help": data.PROMPT_STYLE_HELP, "choices": list(data.PROMPT_STYLES)})
    dtype: str = field(default="float32", metadata={"help": "float32 | bfloat16 (both models)"})
    device: str = field(default="auto", metadata={"help": "auto | cpu | cuda"})
    seed: int = field(default=0, metadata={"help": "seed for data, sampling and the λ coin"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    output_dir: str = field(default="runs/distill", metadata={"help": "run directory"})
    resume: bool = field(default=False, metadata={"help": (
        "continue from <output_dir>/state.pt and checkpoint/")})
    overwrite: bool = field(default=False, metadata={"help": (
        "replace a run already in output_dir (without it, such a folder is refused)")})
    parallel: str = field(default="fsdp2", metadata={"help": (
        "under torchrun: fsdp2 (shard the student) or ddp (replicate it) or none; the frozen "
        "teacher is replicated; ignored in a single process"),
        "choices": ["fsdp2", "ddp", "none"]})


# ----------------------------------------------------------------------------------------------
# Divergences: pure functions of log-probabilities over the last axis (normalised, [..., K])
# ----------------------------------------------------------------------------------------------
LOG_FLOOR = -1e4  # log 0 -> a finite floor, so 0 · log 0 terms are 0 and their gradients finite


def _kl(logp, logq):
    """KL(p || q) = Σ_v p_v (log p_v - log q_v), per row. Terms with p_v = 0 contribute 0."""
    logp, logq = logp.clamp(min=LOG_FLOOR), logq.clamp(min=LOG_FLOOR)
    return (logp.exp() * (logp - logq)).sum(-1)


def forward_kl(student_logp, teacher_logp):
    """Forward KL(p_T || p_S) = Σ_v p_T(v) log(p_T(v) / p_S(v)): mode-covering; the loss of
    supervised KD (Hinton et al. 2015; GKD). E.g. p_T = (1/2, 1/4, 1/4), p_S = (1/8, 1/2, 3/8):
    1/2 log 4 + 1/4 log(1/2) + 1/4 log(2/3) = log 2 - (1/4) log 3 ≈ 0.4185."""
    return _kl(teacher_logp, student_logp)


def reverse_kl(student_logp, teacher_logp):
    """Reverse KL(p_S || p_T) = Σ_v p_S(v) log(p_S(v) / p_T(v)): mode-seeking (GKD; MiniLLM).
    Same example: 1/8 log(1/4) + 1/2 log 2 + 3/8 log(3/2) = (3/8) log 3 - (1/8) log 2 ≈ 0.3253."""
    return _kl(student_logp, teacher_logp)


def generalized_jsd(student_logp, teacher_logp, beta: float):
    """Generalized JSD (GKD's JSD(β), with P = teacher, Q = student):

        JSD_β(P || Q) = β KL(P || M) + (1 - β) KL(Q || M),    M = β P + (1 - β) Q.

    Endpoints, as TRL's GKDTrainer (`generalized_jsd_loss`) defines them: β = 0 returns the
    forward KL(P || Q), β = 1 the reverse KL(Q || P). The formula itself tends to 0 at both ends,
    but its scaled limits are those KLs (Huszár 2015, cited by GKD):
    JSD_β / β -> KL(P || Q) as β -> 0 and JSD_β / (1 - β) -> KL(Q || P) as β -> 1, since the
    other term is O(β²) (resp. O((1-β)²)). So small β behaves like (a scaled) forward KL, β near
    1 like reverse KL. Same example, β = 1/2: M = (5/16, 3/8, 5/16),
    JSD = ½[(9/4) log 2 - (3/4) log 5 - (1/4) log 3] + ½[(3/2) log 2 - (1/2) log 5 - (1/8) log 3]
        ≈ 0.0878.
    """
    if beta <= 0:
        return forward_kl(student_logp, teacher_logp)
    if beta >= 1:
        return reverse_kl(student_logp, teacher_logp)
    log_m = torch.logsumexp(torch.stack([teacher_logp + math.log(beta),
                                         student_logp + math.log(1 - beta)]), dim=0)
    return beta * _kl(teacher_logp, log_m) + (1 - beta) * _kl(student_logp, log_m)


def divergence(student_logp, teacher_logp, kind: str = "jsd", beta: float = 0.5):
    """Dispatch: "forward_kl", "reverse_kl" or "jsd" (with β)."""
    if kind == "forward_kl":
        return forward_kl(student_logp, teacher_logp)
    if kind == "reverse_kl":
        return reverse_kl(student_logp, teacher_logp)
    if kind == "jsd":
        return generalized_jsd(student_logp, teacher_logp, beta)
    raise ValueError(f"--divergence {kind!r} is not one of forward_kl, reverse_kl, jsd")


def topk_log_probs(student_logits, teacher_logits, k: int, tail: str = "rest"):
    """Both distributions restricted to the teacher's k most likely tokens -> [..., k(+1)].

    tail="rest": k + 1 buckets, the teacher's top-k tokens and one bucket "everything else" with
    mass 1 - Σ_top-k p (for each model its own tail mass, computed exactly as a logsumexp over the
    other tokens). These are proper distributions, no renormalisation needed, and any divergence
    over them is a lower bound of the full-vocabulary one (coarse-graining never increases an
    f-divergence) that grows with k and is exact at k = V. Example: p_T = (1/2, 1/4, 1/4),
    p_S = (1/8, 1/2, 3/8), k = 1 -> (1/2, 1/2) vs (1/8, 7/8):
    KL(T||S) = 2 log 2 - ½ log 7 ≈ 0.4133.
    tail="renorm": drop the tail and renormalise both over the top-k (p_v / Σ_top-k p): the
    divergence between the conditionals on the top-k set; 0 when the models agree up to the tail.
    """
    t_lse = teacher_logits.logsumexp(-1, keepdim=True)
    s_lse = student_logits.logsumexp(-1, keepdim=True)
    t_top, idx = teacher_logits.topk(k, dim=-1)
    s_top = student_logits.gather(-1, idx)
    if tail == "renorm":
        return s_top.log_softmax(-1), t_top.log_softmax(-1)
    if tail != "rest":
        raise ValueError(f"--top_k_tail {tail!r} is not one of rest, renorm")
    t_rest = teacher_logits.scatter(-1, idx, -math.inf).logsumexp(-1, keepdim=True)
    s_rest = student_logits.scatter(-1, idx, -math.inf).logsumexp(-1, keepdim=True)
    return (torch.cat([s_top, s_rest], -1) - s_lse, torch.cat([t_top, t_rest], -1) - t_lse)


def logits_divergence(student_logits, teacher_logits, kind: str = "jsd", beta: float = 0.5,
                      temperature: float = 1.0, top_k: int = 0, tail: str = "rest"):
    """Per-position divergence from raw logits [..., V] at temperature τ: softmax(z / τ)."""
    s, t = student_logits.float() / temperature, teacher_logits.float() / temperature
    if top_k and top_k < s.shape[-1]:
        s_logp, t_logp = topk_log_probs(s, t, top_k, tail)
    else:
        s_logp, t_logp = s.log_softmax(-1), t.log_softmax(-1)
    return divergence(s_logp, t_logp, kind, beta)


def _chunk_divergence(h_s, w_s, h_t, w_t, kind, beta, temperature, top_k, tail):
    return logits_divergence(h_s @ w_s.T, h_t @ w_t.T, kind, beta, temperature, top_k, tail)


def token_divergence(student, teacher, input_ids, attention_mask, completion_mask, kind="jsd",
                     beta=0.5, temperature=1.0, top_k=0, tail="rest", chunk_size=128):
    """D(p_T(·|x, y_<t), p_S(·|x, y_<t)) for every completion token -> [N] (N: completion tokens).

    Both decoders run once ([B, T, hidden]); the hidden states of the completion positions are
    gathered ([N, hidden]), and the two LM heads plus the divergence run on `chunk_size` rows at a
    time, so the logits exist as two [chunk, V] float32 blocks, never as [B, T, V]. Under autograd
    each chunk is checkpointed (recomputed in backward), as `models.token_logprobs` does. The
    teacher runs without gradients. Token y_t is predicted at position t-1: the mask shifts.
    """
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    kw = dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)
    select = completion_mask[:, 1:].bool()
    h_s = student.get_decoder()(**kw).last_hidden_state[:, :-1][select]
    with torch.no_grad():
        h_t = teacher.get_decoder()(**kw).last_hidden_state[:, :-1][select]
    w_s = student.get_output_embeddings().weight
    w_t = teacher.get_output_embeddings().weight.detach()
    out = []
    for s in range(0, h_s.shape[0], chunk_size):
        args = (h_s[s:s + chunk_size], w_s, h_t[s:s + chunk_size], w_t, kind, beta, temperature,
                top_k, tail)
        if torch.is_grad_enabled():
            out.append(torch.utils.checkpoint.checkpoint(_chunk_divergence, *args,
                                                         use_reentrant=False))
        else:
            out.append(_chunk_divergence(*args))
    return torch.cat(out) if out else h_s.new_zeros(0)


# ----------------------------------------------------------------------------------------------
# Teacher and student
# ----------------------------------------------------------------------------------------------
def drop_layers(teacher, keep_every: int):
    """A copy of `teacher` with decoder layers 0, k, 2k, ... (DistilBERT-style initialisation:
    Sanh et al. 2019 keep one layer in two). Embeddings, final norm and LM head are copied too."""
    if keep_every < 1:
        raise ValueError(f"--keep_every must be >= 1, got {keep_every}")
    student = copy.deepcopy(teacher)
    layers = student.get_decoder().layers
    keep = list(range(0, len(layers), keep_every))
    student.get_decoder().layers = torch.nn.ModuleList(layers[i] for i in keep)
    for new_idx, layer in enumerate(student.get_decoder().layers):
        for module in layer.modules():      # the KV cache is indexed by each attention's layer_idx
            if hasattr(module, "layer_idx"):
                module.layer_idx = new_idx
    student.config.num_hidden_layers = len(keep)
    if getattr(student.config, "layer_types", None):
        student.config.layer_types = [student.config.layer_types[i] for i in keep]
    return student


def load_models(cfg: Config, device: str, resume_from: Path | None = None):
    teacher, tok = models.load_policy(cfg.teacher, dtype=cfg.dtype, device=device)
    teacher.eval().requires_grad_(False)
    if resume_from is not None:
        student, s_tok = models.load_policy(str(resume_from), dtype=cfg.dtype, device=device)
    elif cfg.student_from_teacher:
        student, s_tok = drop_layers(teacher, cfg.keep_every).requires_grad_(True), tok
    elif cfg.student:
        student, s_tok = models.load_policy(cfg.student, dtype=cfg.dtype, device=device)
    else:
        raise ValueError("no student: pass --student MODEL or --student_from_teacher "
                         "--keep_every K")
    distill_run.check_same_vocab(student, teacher, s_tok, tok)
    return teacher, student.train(), tok


# ----------------------------------------------------------------------------------------------
# Data: prompts with /think or /no_think, the teacher's cached outputs, batches by step
# ----------------------------------------------------------------------------------------------
def load_prompts(cfg: Config, split: str, n: int) -> list[dict]:
    if cfg.task == "math":
        return data.math_tasks(n, split, cfg.seed, levels=data.parse_levels(cfg.math_levels))
    answer_field = None if cfg.answer_field.lower() in ("", "none") else cfg.answer_field
    kw = dict(prompt_field=cfg.prompt_field, answer_field=answer_field, seed=cfg.seed)
    if split == "test" and dataset_tasks.is_file_task(cfg.task):   # its test rows, else rows
        _, tasks, why = dataset_tasks.held_out_tasks(               # left out of training
            cfg.task, cfg.num_train_prompts, n, **kw)
        if why:
            print(f"[distill] no held-out evaluation: {why}")
            return []
    else:
        tasks = dataset_tasks.load_tasks(cfg.task, split=split, n=n, **kw)
    flag = "--num_train_prompts" if split == "train" else "--eval_problems"
    where = f"--task {cfg.task}" + ("" if dataset_tasks.is_file_task(cfg.task) else f" [{split}]")
    cli.fewer_note("distill", flag, n, len(tasks), where, f"those {len(tasks)} are used")
    return tasks


def think_flags(n: int, ratio: float, seed: int) -> list[bool | None]:
    """Qwen3 distils in both modes: prompt i gets /think with probability `ratio` (fixed by
    seed)."""
    if ratio < 0:
        return [None] * n
    rng = random.Random(f"think-{seed}")
    return [rng.random() < ratio for _ in range(n)]


def render(tok, tasks: list[dict], flags: list[bool | None]) -> list[list[int]]:
    """Token ids of each prompt in the tokenizer's own chat template; enable_thinking=False for
    /no_think prompts (Qwen3's templates read it, others ignore it)."""
    return [data.prompt_ids(tok, [t], think=f, **({} if f is None else {"enable_thinking": f}))[0]
            for t, f in zip(tasks, flags)]


def is_correct(task: dict, text: str) -> bool | None:
    """rewards.task_solved when the task has an answer, else None."""
    return rewards.task_solved(text, task) if "answer" in task else None


def teacher_outputs(teacher, tok, tasks, prompts, flags, cfg: Config, path: Path) -> list[dict]:
    """The off-policy data: one answer of the teacher per prompt, sampled at τ, written once to
    `path` (jsonl) and read back on later runs and on --resume."""
    if path.exists():
        return distill_run.read_teacher_cache(path, cfg.teacher, prompts)
    print(f"[distill] the teacher answers {len(tasks)} training prompts (once) -> {path}")
    engine = engines.make_engine(cfg.engine, teacher, tok, max_model_len=max_len(prompts, cfg))
    outs = engine.generate(prompts, engines.SamplingParams(
        temperature=cfg.temperature, max_new_tokens=cfg.max_completion_length, seed=cfg.seed))
    rows = [{"teacher": cfg.teacher, "task_id": tasks[c.prompt_index]["id"],
             "think": flags[c.prompt_index], "prompt_ids": c.prompt_ids,
             "completion_ids": c.completion_ids, "text": c.text, "truncated": c.truncated,
             "correct": is_correct(tasks[c.prompt_index], c.text)} for c in outs]
    path.parent.mkdir(parents=True, exist_ok=True)
    # under torchrun every rank writes it
    runs.atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in rows))
    return rows


def check_cache_path(path: Path):
    """--teacher_cache names a file whose folder can be made; a folder was read as a damaged
    cache, with the advice to delete it."""
    cli.check_links(path, "--teacher_cache")       # a link in a loop or to nothing
    if path.is_dir():
        raise ValueError(f"--teacher_cache {path} is a folder; name a file in it, e.g. "
                         f"--teacher_cache {path / 'teacher_samples.jsonl'}")
    runs.make_dir(path.parent, "--teacher_cache")


def off_policy_data(teacher, tok, tasks, prompts, flags, cfg: Config,
                    run: runs.RunDir) -> list[dict]:
    """`teacher_outputs` (cached in --teacher_cache or the run directory); with --filter_correct
    only the answers rewards.verify_math accepts."""
    cache = Path(cfg.teacher_cache or run.root / "teacher_samples.jsonl")
    rows = teacher_outputs(teacher, tok, tasks, prompts, flags, cfg, cache)
    if not cfg.filter_correct:
        return rows
    rows = [r for r in rows if r["correct"]]
    print(f"[distill] --filter_correct keeps {len(rows)} teacher answers")
    if not rows:
        raise ValueError("no teacher answer is correct: drop --filter_correct, use easier prompts "
                         "(--math_levels 1) or a larger --max_completion_length, or set --lmbda 1")
    return rows


def step_indices(n: int, step: int, cfg: Config) -> list[int]:
    """This rank's share of step `step`'s --prompts_per_step indices into n items: positions
    (step - 1) * P ... step * P - 1 of the seeded stream `training.stream_indices`, a pure
    function of the step (so --resume needs no data cursor)."""
    first = (step - 1) * cfg.prompts_per_step
    indices = training.stream_indices(n, cfg.seed, first, cfg.prompts_per_step)
    return distributed.shard_for_rank(indices, pad=True)


def max_len(prompts: list[list[int]], cfg: Config) -> int:
    """The engine's context: the longest prompt and a whole completion."""
    return max(map(len, prompts), default=0) + cfg.max_completion_length


def student_samples(engine, tasks, prompts, indices: list[int], step: int,
                    cfg: Config) -> list[dict]:
    """The on-policy batch: one completion of the student per prompt, sampled at τ."""
    outs = engine.generate([prompts[i] for i in indices], engines.SamplingParams(
        temperature=cfg.temperature, max_new_tokens=cfg.max_completion_length,
        seed=cfg.seed * 100_003 + step))
    return [{"prompt_ids": c.prompt_ids, "completion_ids": c.completion_ids, "text": c.text,
             "correct": is_correct(tasks[i], c.text), "task_id": tasks[i]["id"]}
            for i, c in zip(indices, outs)]


# ----------------------------------------------------------------------------------------------
# Evaluation on held-out prompts
# ----------------------------------------------------------------------------------------------
@torch.no_grad()
def evaluate(student, teacher, tok, tasks, prompts, cfg: Config, chunk_size: int = 128) -> dict:
    """The student answers greedily; on those tokens, KL(T||S) and KL(S||T) at τ = 1 over the full
    vocabulary (token mean), and the accuracy where the tasks have answers. Returns the metrics
    and two answers to read (samples.jsonl)."""
    with engines.progress(f"eval {len(prompts)} prompts"):
        engine = engines.make_engine(cfg.engine, student, tok, max_model_len=max_len(prompts, cfg))
        outs = engine.generate(prompts, engines.SamplingParams(
            temperature=0.0, max_new_tokens=cfg.max_completion_length))
    fwd, rev = [], []
    for s in range(0, len(outs), cfg.prompts_per_step):
        b = outs[s:s + cfg.prompts_per_step]
        ids, attn, mask = [x.to(student.device) for x in models.pad_batch(
            [c.prompt_ids for c in b], [c.completion_ids for c in b], tok.pad_token_id)]
        fwd.append(token_divergence(student, teacher, ids, attn, mask, "forward_kl",
                                    chunk_size=chunk_size))
        rev.append(token_divergence(student, teacher, ids, attn, mask, "reverse_kl",
                                    chunk_size=chunk_size))
    metrics = {"eval_forward_kl": torch.cat(fwd).mean().item(),
               "eval_reverse_kl": torch.cat(rev).mean().item(),
               "eval_length": sum(len(c.completion_ids) for c in outs) / len(outs)}
    correct = [is_correct(tasks[c.prompt_index], c.text) for c in outs]
    if correct and correct[0] is not None:
        metrics["eval_accuracy"] = sum(correct) / len(correct)
    samples = [{"eval": True, "task_id": tasks[c.prompt_index]["id"], "text": c.text, "correct": x}
               for c, x in zip(outs[:2], correct)]
    return metrics, samples


def evaluate_before_training(run: runs.RunDir, student, teacher, tok, tasks, prompts, cfg: Config):
    """Step 0 of metrics.jsonl: `evaluate` before the first update, and the teacher's own greedy
    accuracy on the same prompts (eval_teacher_accuracy), the level to distil towards."""
    before, samples = evaluate(student, teacher, tok, tasks, prompts, cfg, cfg.chunk_size)
    run.log_samples(0, samples)
    engine = engines.make_engine(cfg.engine, teacher, tok, max_model_len=max_len(prompts, cfg))
    outs = engine.generate(prompts, engines.SamplingParams(
        temperature=0.0, max_new_tokens=cfg.max_completion_length))
    t_acc = [is_correct(tasks[c.prompt_index], c.text) for c in outs]
    if t_acc and t_acc[0] is not None:
        before["eval_teacher_accuracy"] = sum(t_acc) / len(t_acc)
    run.log({"step": 0, **before})
    print(f"[distill] before: {json.dumps(before)}")


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------
def train(cfg: Config) -> Path:
    check_config(cfg)
    # a missing model folder fails now, not after the teacher has loaded; not in check_config,
    # since in a pipeline's dry run the folder is an earlier stage's checkpoint, not written yet
    for model in filter(None, (cfg.teacher, cfg.student)):
        models.checked_path(model)
    if cfg.teacher_cache:   # checked now: its folder was made after the teacher had answered
        check_cache_path(Path(cfg.teacher_cache))
    runs.set_threads(cfg.threads)
    distributed.dist_init()                        # under torchrun: join the process group
    data.set_prompt_style(cfg.prompt_style)
    device = cfg.device if cfg.device != "auto" else (
        "cuda" if torch.cuda.is_available() else "cpu")
    run = runs.open_run(cfg.output_dir, cfg, cfg.resume, cfg.overwrite, ('max_steps',))
    state = run.load_state(cfg.max_steps) if cfg.resume else None
    if state is None:
        runs.seed_everything(cfg.seed)
    start = state["step"] if state else 0
    # a bad --task file is named before the models load
    train_tasks = load_prompts(cfg, "train", cfg.num_train_prompts)
    eval_tasks = load_prompts(cfg, "test", cfg.eval_problems) if cfg.eval_problems else []
    teacher, student, tok = load_models(cfg, device, run.checkpoint if state else None)
    student = distributed.wrap_model(student, cfg.parallel)

    # ---- data: prompts in both modes; the teacher's answers, sampled once (off-policy) ----
    train_flags = think_flags(len(train_tasks), cfg.think_ratio, cfg.seed)
    train_prompts = render(tok, train_tasks, train_flags)
    eval_flags = think_flags(len(eval_tasks), cfg.think_ratio, cfg.seed + 1)
    eval_prompts = render(tok, eval_tasks, eval_flags)
    models.check_context(max_len(train_prompts + eval_prompts, cfg), "--max_completion_length",
                         teacher, student)
    offline = (off_policy_data(teacher, tok, train_tasks, train_prompts, train_flags, cfg, run)
               if cfg.lmbda < 1 else [])

    engine = engines.make_engine(cfg.engine, student, tok,
                                 max_model_len=max_len(train_prompts + eval_prompts, cfg))
    optimizer = torch.optim.AdamW(student.parameters(), lr=cfg.learning_rate,
                                  weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)
    if state:
        distill_run.resume(run, state, optimizer, scheduler)
    elif eval_tasks:
        evaluate_before_training(run, student, teacher, tok, eval_tasks, eval_prompts, cfg)

    bar = trange(start + 1, cfg.max_steps + 1, initial=start, total=cfg.max_steps, desc="distill")
    for step in bar:
        t0 = time.perf_counter()
        # ---- batch: with probability λ the student samples (on-policy), else teacher outputs ---
        on_policy = random.Random(f"lmbda-{cfg.seed}-{step}").random() < cfg.lmbda
        if on_policy:
            idx = step_indices(len(train_tasks), step, cfg)
            batch = student_samples(engine, train_tasks, train_prompts, idx, step, cfg)
        else:
            batch = [offline[i] for i in step_indices(len(offline), step, cfg)]
        t_gen = time.perf_counter() - t0

        # ---- score: teacher and student on the same tokens, divergence per completion token ----
        ids, attn, mask = [x.to(device) for x in models.pad_batch(
            [r["prompt_ids"] for r in batch], [r["completion_ids"] for r in batch],
            tok.pad_token_id)]
        per_token = token_divergence(student, teacher, ids, attn, mask, cfg.divergence, cfg.beta,
                                     cfg.temperature, cfg.top_k_vocab, cfg.top_k_tail,
                                     cfg.chunk_size)
        # token mean over the global batch (--prompts_per_step prompts, split over ranks): each rank
        # divides by the mean token count per rank and DDP/FSDP2 average the gradients
        loss = per_token.sum() / distributed.mean_over_ranks(per_token.numel())

        # ---- step --------------------------------------------------------------------------------
        training.check_finite(loss, step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(student.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        engine.sync_weights(student)

        # ---- log ---------------------------------------------------------------------------------
        metrics = distill_run.step_metrics(step, loss, on_policy, grad_norm, scheduler, per_token,
                                           batch, t_gen, time.perf_counter() - t0)
        if (step % cfg.eval_every == 0 or step == cfg.max_steps) and eval_tasks:
            scores, samples = evaluate(student, teacher, tok, eval_tasks, eval_prompts, cfg,
                                       cfg.chunk_size)
            metrics.update(scores)
            run.log_samples(step, samples)
        run.log(distributed.all_reduce_mean(metrics))
        run.log_samples(step, [{"on_policy": on_policy, "task_id": r["task_id"], "text": r["text"],
                                "correct": r.get("correct")} for r in batch[:2]])
        bar.set_postfix(div=f"{loss.item():.3f}", on=int(on_policy),
                        tok_s=f"{metrics['tokens_per_s']:.0f}")

        # ---- checkpoint --------------------------------------------------------------------------
        if step % cfg.save_steps == 0 or step == cfg.max_steps:
            distill_run.save(run, student, tok, optimizer, scheduler, step, cfg)
    if start >= cfg.max_steps:
        print(f"[distill] nothing to do: step {start} >= --max_steps {cfg.max_steps}")
    run.summary(["loss", "eval_forward_kl", "eval_reverse_kl", "eval_accuracy"])
    return run.root


def parse(args: list[str] | None = None) -> Config:
    return cli.parse(Config, args)


if __name__ == "__main__":
    sys.exit(cli.main(train, parse))
