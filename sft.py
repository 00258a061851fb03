"""SFT for reasoning: think tokens, RoPE base rescaling, thinking-mode fusion (Qwen3, Phi-4).

Teaches a model to answer as `<think>\\n{reasoning}\\n</think>\\n\\n{answer}`, and (thinking-mode
fusion) to leave the think block empty when a prompt says `/no_think`.

* Phi-4-reasoning (§3): `<think>` and `</think>` become two repurposed placeholder tokens of
  the vocabulary (`--think_tokens repurpose`; `add` appends two new tokens instead, their
  embedding rows set to the mean of the existing rows), and the RoPE base is doubled
  (250k -> 500k) to train at 32K instead of 16K. RoPE rotates dimension pair i of a head of
  size d at the angle  position * inv_freq_i,  inv_freq_i = base^(-2i/d)  (Su et al. 2021), so
  base -> factor * base multiplies inv_freq_i by factor^(-2i/d): pair 0 keeps its frequency and
  the slowest pairs slow down by nearly the factor. Only those slowest pairs, which never
  completed a turn in training, stay within the angles seen in training at factor x the length.
  Every other pair's angle at a given distance changes, so the relative positions the model
  learned to read move, and no distance beyond the old window was ever attended over. Rescaling
  alone does not extend the context: the model still needs SFT on long sequences (Phi-4: 32K).
* Qwen3 (tech report §4.1 cold start, §4.3 thinking-mode fusion): the official Qwen3 chat
  template (https://huggingface.co/Qwen/Qwen3-8B, tokenizer_config.json). Assistant turns after
  the last user query render `<think>\\n{reasoning}\\n</think>\\n\\n{answer}` (an empty reasoning
  gives the empty block `<think>\\n\\n</think>\\n\\n`); earlier turns lose their reasoning; with
  `enable_thinking=False` the generation prompt prefills the empty think block. `/think` and
  `/no_think` are plain text to the template: the model learns to obey them (the latest flag
  wins) from the thinking-mode fusion data, whose non-thinking samples end in `/no_think` and
  an empty think block (§4.3). The SFT data mixes both modes; cold-start traces are filtered
  (wrong answer, repetition, a think block that disagrees with the final answer).

The loss is the token-level mean negative log-likelihood over assistant tokens only:

    L(θ) = - Σ_{examples} Σ_{t ∈ assistant} log π_θ(x_t | x_<t)  /  #assistant tokens

summed over every micro-batch of an optimizer step before dividing (so gradient accumulation
equals one big batch). Packed examples share a row but never attend to each other: a
block-diagonal causal mask plus position ids restarting at 0 (exactly the unpacked loss).

    # embedded SmolLM2-135M on 2 CPU cores, ~9 min: think format in both modes on 100% of
    # 2 x 50 held-out prompts (docs/experiments.md, "sft.py")
    python sft.py --max_steps 40 --max_length 512 --learning_rate 2e-4 \
        --embedding_learning_rate 2e-3 --num_examples 256 --eval_problems 50 --output_dir runs/sft

The method is in this file; the data sources and the cold-start filters are in `sft_data.py`, the
template's text in `chat_template.py`, the flag checks, resume, checkpoints and the think-format
check in `sft_run.py`.
"""
from __future__ import annotations

import functools
import json
import math
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm
from transformers import AddedToken, AutoTokenizer

import cli
import conversations
import data
import distributed
import models
import runs
import sft_data
import sft_run
import tools
import training
from chat_template import CHAT_TEMPLATE, END_THINK, IM_END, IM_START, THINK
from sft_run import check_config  # also run by pipeline.py on every stage at start


@dataclass
class Config:
    model: str = field(default="smollm2", metadata={"help": (
        "policy: smollm2 (embedded default), tiny, a folder or a hub id")})
    output_dir: str = field(default="runs/sft", metadata={"help": (
        "run directory (config, metrics, checkpoint/)")})
    dataset: str = field(default="math", metadata={"help": (
        "math (synthetic traces), teacher (rejection-sampled from --teacher), fusion (Qwen3 "
        "thinking-mode fusion: thinking data rejection-sampled from --teacher, non-thinking data "
        "of other kinds of task), math_tools (synthetic traces that compute with python: "
        "tools.sft_examples) or a .jsonl/.json/.csv/.tsv/.parquet/.arrow/.feather file of "
        "{messages}, {prompt, completion} (or {query, response}, {problem, solution}, "
        "{prompt, chosen}, ...), ShareGPT {conversations}, Gemini {contents}, Alpaca "
        "{instruction, input, output} or {prompt, reasoning, answer}")})
    num_examples: int = field(default=512, metadata={"help": (
        "synthetic/teacher: number of math problems")})
    teacher: str = field(default="", metadata={"help": (
        "--dataset teacher/fusion: model whose verified-correct answers become traces (empty: "
        "--model itself, e.g. the reasoning-RL checkpoint in Qwen3's fusion stage)")})
    teacher_samples: int = field(default=4, metadata={"help": (
        "--dataset teacher/fusion: samples per problem (T=0.6); the correct ones are kept")})
    no_think_ratio: float = field(default=0.5, metadata={"help": (
        "thinking-mode fusion: fraction of examples in non-thinking mode (/no_think, empty think "
        "block); thinking ones carry /think or no flag; 0 = no flags (cold start)")})
    multi_turn_ratio: float = field(default=0.25, metadata={"help": (
        "thinking-mode fusion: fraction of conversations given an earlier turn in the other mode, "
        "so flags mix within a conversation")})
    think_tokens: str = field(default="add", metadata={"help": (
        "add: new <think> </think> tokens, mean-initialised; repurpose: rename two unused special "
        "tokens (Phi-4); none: plain text"), "choices": ["add", "repurpose", "none"]})
    rope_theta_factor: float = field(default=1.0, metadata={"help": (
        "multiply the RoPE base (Phi-4-reasoning: 2.0)")})
    max_length: int = field(default=1024, metadata={"help": (
        "tokens per (packed) sequence; longer examples are dropped; raises "
        "max_position_embeddings if larger")})
    packing: bool = field(default=True, metadata={"help": (
        "pack several examples per sequence (block-diagonal attention)")})
    per_device_train_batch_size: int = field(default=1, metadata={"help": (
        "sequences per micro-batch")})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": (
        "micro-batches per optimizer step")})
    learning_rate: float = field(default=2e-4, metadata={"help": (
        "peak learning rate (Phi-4 SFT: 1e-5 at 14B)")})
    embedding_learning_rate: float = field(default=2e-3, metadata={"help": (
        "peak lr of the token embeddings and LM head (0: learning_rate); new think tokens start "
        "at the mean row and need ~10x learning_rate to be learned in a few dozen steps")})
    weight_decay: float = field(default=0.0, metadata={"help": (
        "AdamW weight decay (Phi-4 SFT: 1e-4)")})
    warmup_steps: int = field(default=5, metadata={"help": (
        "linear warm-up steps, then cosine decay")})
    min_lr_ratio: float = field(default=0.1, metadata={"help": (
        "cosine decays to learning_rate * min_lr_ratio")})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping"})
    num_train_epochs: float = field(default=1.0, metadata={"help": (
        "epochs over the data (when max_steps <= 0)")})
    max_steps: int = field(default=-1, metadata={"help": (
        "optimizer steps; > 0 overrides num_train_epochs")})
    save_steps: int = field(default=50, metadata={"help": (
        "checkpoint (model + state.pt) every N steps")})
    bf16: str = field(default="auto", metadata={"help": (
        "bfloat16 autocast: auto (a GPU with bf16, a CPU with AVX512-BF16 or AMX), true, false; "
        "--bf16 alone: true"), "choices": ["auto", "true", "false"], "nargs": "?", "const": "true"})
    max_repetition: float = field(default=0.5, metadata={"help": (
        "filter: drop responses whose fraction of repeated word 8-grams exceeds this")})
    eval_problems: int = field(default=64, metadata={"help": (
        "held-out math prompts per mode for the final think-format check (0: off)")})
    eval_max_completion_length: int = field(default=256, metadata={"help": (
        "generation length of the format check")})
    eval_only: bool = field(default=False, metadata={"help": (
        "only run the format check on --model")})
    engine: str = field(default="auto", metadata={"help": (
        "sampling engine of --dataset teacher/fusion and of the format check: auto | hf | vllm "
        "(engines.make_engine)"), "choices": ["auto", "hf", "vllm"]})
    prompt_style: str = field(default="default", metadata={
        "help": data.PROMPT_STYLE_HELP, "choices": list(data.PROMPT_STYLES)})
    resume: bool = field(default=False, metadata={"help": (
        "continue the run in output_dir from state.pt")})
    overwrite: bool = field(default=False, metadata={"help": (
        "replace a run already in output_dir (without it, such a folder is refused)")})
    parallel: str = field(default="fsdp2", metadata={"help": (
        "under torchrun: fsdp2 (shard the model), ddp (replicate it) or none; ignored in a single "
        "process"), "choices": ["fsdp2", "ddp", "none"]})
    seed: int = field(default=0, metadata={"help": "data order, fusion mix and init"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})


# ----------------------------------------------------------------------------------------------
# Think tokens (Phi-4-reasoning: repurposed placeholders; or new tokens)
# ----------------------------------------------------------------------------------------------
def add_think_tokens(model, tokenizer) -> list[int]:
    """Add `<think>`, `</think>` as new tokens; their embedding rows (and untied LM-head rows)
    start at the mean of the existing rows, e_new = (1/V) Σ_v e_v, so the model's first logits
    for them are average rather than random (Hewitt 2021, "Initializing new word embeddings").
    Added as non-special tokens, as Qwen3 does, so `skip_special_tokens=True` keeps them."""
    vocab = tokenizer.get_vocab()
    new = [t for t in (THINK, END_THINK) if t not in vocab]
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in new])
    ids = tokenizer.convert_tokens_to_ids([THINK, END_THINK])
    if not new:
        return ids
    rows = model.get_input_embeddings().weight.shape[0]
    if max(ids) >= rows:
        model.resize_token_embeddings(max(len(tokenizer), rows), mean_resizing=False)
    new_ids = tokenizer.convert_tokens_to_ids(new)
    old = min(new_ids)                       # rows below the first new id are the trained ones
    with torch.no_grad():
        emb = model.get_input_embeddings().weight
        emb[new_ids] = emb[:old].mean(0)
        head = model.get_output_embeddings()
        if head is not None and head.weight.data_ptr() != emb.data_ptr():   # untied LM head
            head.weight[new_ids] = head.weight[:old].mean(0)
            if getattr(head, "bias", None) is not None:
                head.bias[new_ids] = head.bias[:old].mean()
    return ids


def find_unused_tokens(tokenizer, k: int = 2) -> list[int]:
    """k special tokens a chat model never needs, to repurpose (Phi-4-reasoning repurposed two
    placeholder tokens of its base model's vocabulary).

    Candidates: added special tokens that are not bos/eos/pad/unk and not in the chat template.
    Names with reserved/unused/dummy/placeholder come first (Llama-3, Phi-4, Qwen); else the last
    ones by id. For SmolLM2 that picks `<jupyter_script>` and `<empty_output>`: StarCoder-era
    code-metadata tokens (`<repo_name>` ... `<empty_output>`, ids 3-16) that chat never uses.
    """
    used = {tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token, tokenizer.unk_token,
            IM_START, IM_END, THINK, END_THINK}
    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else ""
    cands = [(i, t.content) for i, t in sorted(tokenizer.added_tokens_decoder.items())
             if t.special and t.content not in used and t.content not in template]
    preferred = [c for c in cands if re.search(r"reserved|unused|dummy|placeholder", c[1], re.I)]
    pick = (preferred if len(preferred) >= k else cands)[-k:]
    if len(pick) < k:
        raise ValueError(f"--think_tokens repurpose: tokenizer {tokenizer.name_or_path!r} has only "
                         f"{len(pick)} unused special tokens (need {k}); use --think_tokens add")
    return [i for i, _ in pick]


def repurpose_think_tokens(tokenizer, ids: list[int] | None = None):
    """Rename two existing tokens to `<think>`, `</think>` in tokenizer.json: same ids, same
    vocabulary size, same embedding rows (Phi-4-reasoning). Returns a new tokenizer."""
    vocab = tokenizer.get_vocab()
    # only the missing ones: renaming two tokens when one think token already exists made a
    # second token of that name, and the tokenizer kept the renamed (untrained) one
    missing = [t for t in (THINK, END_THINK) if t not in vocab]
    if not missing:
        return tokenizer
    ids = ids or find_unused_tokens(tokenizer, k=len(missing))
    if len(ids) != len(missing):
        raise ValueError(f"--think_tokens repurpose: {len(missing)} token(s) to rename "
                         f"({missing}), got {len(ids)} ids")
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        spec = json.loads((Path(tmp) / "tokenizer.json").read_text())
        for tid, new in zip(ids, missing):
            entry = next(t for t in spec["added_tokens"] if t["id"] == tid)
            old, entry["content"], entry["special"] = entry["content"], new, False
            model_vocab = spec["model"].get("vocab")
            if isinstance(model_vocab, dict) and model_vocab.get(old) == tid:
                model_vocab[new] = model_vocab.pop(old)
        (Path(tmp) / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
        new_tok = AutoTokenizer.from_pretrained(tmp)
    new_tok.pad_token = tokenizer.pad_token
    return new_tok


# ----------------------------------------------------------------------------------------------
# RoPE base rescaling (Phi-4-reasoning: base x2, context 16K -> 32K)
# ----------------------------------------------------------------------------------------------
def rescale_rope(model, factor: float, max_length: int) -> dict:
    """rope_theta <- factor * rope_theta; max_position_embeddings <- max(it, max_length), said
    where it grows (the checkpoint then claims that context).

    transformers >= 5 keeps the base in `config.rope_parameters["rope_theta"]` (per layer type
    for models such as Gemma3: {"full_attention": {...}, ...}); older ones in `config.rope_theta`.
    The rotary modules cache inv_freq_i = base^(-2i/d) at init, so they are rebuilt here."""
    config = model.config
    if factor != 1.0:
        rp = getattr(config, "rope_parameters", None)
        if isinstance(rp, dict) and "rope_theta" in rp:
            rp["rope_theta"] *= factor
        elif isinstance(rp, dict) and all(isinstance(v, dict) for v in rp.values()):
            for v in rp.values():
                v["rope_theta"] *= factor
        elif hasattr(config, "rope_theta"):
            config.rope_theta *= factor
        else:
            raise ValueError(f"{config.model_type}: no rope_theta found in the config")
    if max_length > config.max_position_embeddings:     # said: the checkpoint claims it
        before = config.max_position_embeddings
        how = (f"with the RoPE base x{factor:g}, it attends that far only after SFT on sequences "
               "that long (Phi-4-reasoning: 16K -> 32K)" if factor != 1.0 else
               "but --rope_theta_factor 1 leaves RoPE as trained: an example longer than "
               f"{before} tokens trains at angles the model never saw. Keep --max_length <= "
               f"{before}, or extend the context as Phi-4-reasoning does (--rope_theta_factor 2 "
               "for twice it)")
        print(f"[sft] note: --max_length {max_length} is above the model's context: its "
              f"max_position_embeddings goes from {before} to {max_length}, {how}", flush=True)
        config.max_position_embeddings = max_length
    for name, module in list(model.named_modules()):
        if hasattr(module, "inv_freq") and getattr(module, "config", None) is config:
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            new = type(module)(config=config).to(module.inv_freq.device)
            setattr(parent, name.rsplit(".", 1)[-1], new)
    return {"rope_parameters": getattr(config, "rope_parameters", None),
            "max_position_embeddings": config.max_position_embeddings}


# ----------------------------------------------------------------------------------------------
# Qwen3 chat template (the text: chat_template.CHAT_TEMPLATE)
# ----------------------------------------------------------------------------------------------
def set_chat_template(tokenizer):
    """Write the Qwen3 chat template (above) into the tokenizer; end of turn is <|im_end|>.

    The template renders the flags `/think` and `/no_think` as plain text; it strips the
    reasoning of turns before the last user query and, with `enable_thinking=False`, prefills
    the empty think block `<think>\\n\\n</think>\\n\\n` after `<|im_start|>assistant\\n`."""
    missing = [t for t in (IM_START, IM_END) if t not in tokenizer.get_vocab()]
    if missing:
        raise ValueError(f"the Qwen3 chat template needs {missing} in the vocabulary of "
                         f"{tokenizer.name_or_path!r} (ChatML tokens); add them or use a ChatML "
                         "model")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.eos_token = IM_END
    return tokenizer


# ----------------------------------------------------------------------------------------------
# Thinking-mode fusion (Qwen3 §4.3)
# ----------------------------------------------------------------------------------------------
def fuse_modes(examples: list[dict], no_think_ratio: float, seed: int,
               non_thinking: list[dict] | None = None, multi_turn_ratio: float = 0.0) -> list[dict]:
    """Thinking-mode fusion data (Qwen3 §4.3). The flags are plain text the model learns to obey:
    * non-thinking samples get `/no_think` in the last user query and an empty reasoning in every
      assistant turn that answers it (the template renders an empty think block on the last one).
      They are `non_thinking` when given, else a `no_think_ratio` share of `examples` with their
      reasoning removed;
    * thinking samples get `/think` or no flag at all (thinking is the default mode), and always
      `/think` when an earlier flag of the conversation is `/no_think`: the model follows the
      latest flag, so a thinking answer under a standing `/no_think` would teach it to ignore one.
      An example whose answer has no reasoning is never one: it is a non-thinking sample (an
      empty think block after `/think` would teach the model to ignore that flag);
    * a `multi_turn_ratio` share of conversations gets an earlier exchange in the other mode in
      front (its last query and the answer to it, after the conversation's own system turn), so
      flags mix within a conversation (the template drops that exchange's reasoning).
    Ratio 0 without `non_thinking` leaves the examples as they are (a cold start: no flags)."""
    if no_think_ratio <= 0 and not non_thinking:
        return examples
    rng = random.Random(f"fusion-{seed}")

    def flag(msgs: list[dict], think: bool, draw: bool = True):
        """Put the mode's flag in the last query (in place); `draw`: the coin for the optional
        /think (drawn whether or not it is needed, so the seeded stream does not shift)."""
        q = conversations.last_query(msgs)
        optional = draw and rng.random() < 0.5
        latest = conversations.latest_switch(msgs, q)
        if not think and latest != "no_think":
            msgs[q] = {**msgs[q], "content": msgs[q]["content"] + " /no_think"}
        elif think and (latest == "no_think" or (optional and latest is None)):
            msgs[q] = {**msgs[q], "content": msgs[q]["content"] + " /think"}
        if not think:       # no reasoning anywhere in the answer (every step of a tool loop)
            msgs[q + 1:] = [conversations.without_reasoning(m) if m["role"] == "assistant" else m
                            for m in msgs[q + 1:]]

    def with_flag(ex: dict, think: bool) -> dict:
        msgs = [dict(m) for m in ex["messages"]]
        flag(msgs, think, draw=think)
        return {**ex, "messages": msgs, "think": think}

    def reasons(ex: dict) -> bool:
        return bool(conversations.reasoning_of(ex["messages"][-1]).strip())

    if non_thinking is None:
        out = [with_flag(ex, (rng.random() >= no_think_ratio) and reasons(ex)) for ex in examples]
    else:
        out = ([with_flag(ex, reasons(ex)) for ex in examples]
               + [with_flag(ex, False) for ex in non_thinking])
    for k, ex in enumerate(out):
        if rng.random() < multi_turn_ratio:
            other = [e for e in out if e["think"] != ex["think"]]
            if other:
                earlier = rng.choice(other)["messages"]
                # the earlier conversation's last exchange (a tool loop whole), without its
                # system turn: the system turn of this conversation stays first
                exchange = earlier[conversations.last_query(earlier):]
                msgs = ex["messages"]
                n_sys = next((i for i, m in enumerate(msgs) if m["role"] != "system"), len(msgs))
                msgs = msgs[:n_sys] + exchange + msgs[n_sys:]
                flag(msgs, ex["think"], draw=False)     # the earlier flag may now be the latest
                out[k] = {**ex, "messages": msgs}
    if non_thinking is not None:
        rng.shuffle(out)      # the two kinds interleaved
    return out


# ----------------------------------------------------------------------------------------------
# Tokens, loss mask, packing
# ----------------------------------------------------------------------------------------------
def encode(tokenizer, messages: list[dict], tools: list[dict] | None = None
           ) -> tuple[list[int], list[int]]:
    """(input_ids, loss_mask): the prompt (everything up to `<|im_start|>assistant\\n`, as at
    inference, with the `tools` signatures in its system turn) gets 0; the last assistant turn --
    think block, answer and `<|im_end|>` -- gets 1. Earlier assistant turns are context only
    (those before the last query without their reasoning; the steps of a tool loop after it with
    theirs): `conversations.reply_examples` makes each of them the last turn of an example of its
    own.

    A conversation that cannot be trained on (no reply at its end, no query, a think block the
    template mangles, ChatML tokens in its text: `conversations.check_conversation`; another special
    token of the tokenizer in its text: `conversations.check_special_tokens`; a call of a function
    `tools` does not list: `conversations.check_tools`) is a ValueError naming the message and the
    fix."""
    conversations.check_conversation(messages)
    conversations.check_tools(tools, messages)
    conversations.check_special_tokens(messages, tools, tokenizer)
    prompt = tokenizer.apply_chat_template(messages[:-1], tools=tools, tokenize=False,
                                           add_generation_prompt=True)
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    if not full.startswith(prompt):     # check_conversation refuses the case known to do this
        roles = [m["role"] for m in messages]
        raise ValueError(f"the chat template renders the conversation without its last turn "
                         f"(the prompt) differently from the start of the whole (roles {roles}), "
                         "so the reply cannot be cut out; merge consecutive assistant turns, or "
                         "give the earlier one its reasoning_content")
    reply = full[len(prompt):]
    reply = reply[:reply.rindex(IM_END) + len(IM_END)]
    p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    r = tokenizer(reply, add_special_tokens=False)["input_ids"]
    return p + r, [0] * len(p) + [1] * len(r)


def pack(lengths: list[int], max_length: int) -> list[list[int]]:
    """Greedy packing in order: start a new row when the next example does not fit."""
    rows, cur, used = [], [], 0
    for i, n in enumerate(lengths):
        if cur and used + n > max_length:
            rows.append(cur)
            cur, used = [], 0
        cur.append(i)
        used += n
    return rows + ([cur] if cur else [])


def collate(encoded: list[tuple[list[int], list[int]]], rows: list[list[int]], pad_id: int) -> dict:
    """Rows of packed examples -> input_ids, loss_mask, position_ids (restart at 0 per example),
    segment ids (1, 2, ... per example; 0 = padding), all [B, T]."""
    T = max(sum(len(encoded[i][0]) for i in row) for row in rows)
    B = len(rows)
    out = {k: torch.zeros(B, T, dtype=torch.long)
           for k in ("input_ids", "loss_mask", "position_ids", "segments")}
    out["input_ids"].fill_(pad_id)
    for b, row in enumerate(rows):
        s = 0
        for seg, i in enumerate(row, 1):
            ids, mask = encoded[i]
            out["input_ids"][b, s:s + len(ids)] = torch.tensor(ids)
            out["loss_mask"][b, s:s + len(ids)] = torch.tensor(mask)
            out["position_ids"][b, s:s + len(ids)] = torch.arange(len(ids))
            out["segments"][b, s:s + len(ids)] = seg
            s += len(ids)
    return out


def encode_examples(tokenizer, examples: list[dict],
                    max_length: int) -> list[tuple[list[int], list[int]]]:
    """`encode` every example; those longer than max_length are dropped (and counted). An example
    `encode` refuses is a DataError naming it (its number and first query)."""
    encoded = []
    for k, ex in enumerate(examples):
        try:
            ids, mask = encode(tokenizer, ex["messages"], ex.get("tools"))
        except ValueError as e:
            query = next((m["content"] for m in ex["messages"] if conversations.is_query(m)), "")
            raise data.DataError(f"training example {k} (query {query[:40]!r}): {e}") from None
        # tool outputs (```output blocks) are the interpreter's, not the model's: not in the loss
        encoded.append(tools.mask_observations(tokenizer, ids, mask))
    fits = [e for e in encoded if len(e[0]) <= max_length]
    lengths = sorted(len(e[0]) for e in encoded)
    if not fits:
        raise data.DataError(f"no example fits in --max_length {max_length} (the shortest has "
                             f"{lengths[0]} tokens): raise --max_length, or shorten the examples")
    if len(fits) < len(encoded):
        print(f"[sft] dropped {len(encoded) - len(fits)} of {len(encoded)} examples longer than "
              f"max_length={max_length} (the longest has {lengths[-1]} tokens); none is cut short")
    return fits


def epoch_batches(encoded: list[tuple[list[int], list[int]]], epoch: int, cfg: Config,
                  pad_id: int) -> list[dict]:
    """The micro-batches of one epoch: a seeded shuffle (`training.epoch_order`), then packing,
    then batching; under torchrun, this rank's share."""
    order = training.epoch_order(len(encoded), cfg.seed, epoch)
    lengths = [len(encoded[i][0]) for i in order]
    rows = pack(lengths, cfg.max_length) if cfg.packing else [[k] for k in range(len(order))]
    rows = [[order[k] for k in row] for row in rows]
    bs = cfg.per_device_train_batch_size
    batches = [collate(encoded, rows[s:s + bs], pad_id) for s in range(0, len(rows), bs)]
    return distributed.shard_for_rank(batches, pad=True)


def block_causal_mask(segments: torch.Tensor) -> torch.Tensor:
    """[B, T] segment ids -> boolean [B, 1, T, T] mask (True = may attend): query i sees key j
    iff j <= i and both belong to the same example. transformers passes a 4D mask through as is."""
    T = segments.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=segments.device).tril()
    return ((segments[:, :, None] == segments[:, None, :]) & causal)[:, None]


def sft_loss_sum(model, batch: dict) -> tuple[torch.Tensor, int]:
    """Σ -log π(x_t | x_<t) over loss-mask tokens, and their count. The LM head runs only on
    positions whose next token is in the loss (no [B, T, V] logits for prompts)."""
    mask = block_causal_mask(batch["segments"])
    if model.config._attn_implementation == "eager":          # eager attention adds its mask
        dtype = next(model.parameters()).dtype
        mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            ~mask, torch.finfo(dtype).min)
    hidden = model.get_decoder()(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                                 attention_mask=mask).last_hidden_state
    take = batch["loss_mask"][:, 1:].bool()
    logits = model.get_output_embeddings()(hidden[:, :-1][take]).float()
    targets = batch["input_ids"][:, 1:][take]
    return F.cross_entropy(logits, targets, reduction="sum"), int(take.sum())


def param_groups(model, lr: float, embedding_lr: float) -> list[dict]:
    """Two AdamW groups: the token embeddings and LM head (tied or not) at `embedding_lr`, the
    rest at `lr`. Adam moves each weight by about lr per step whatever its gradient's size, so a
    new token's row, started at the mean row (logit ~ 20 nats under the top one for SmolLM2),
    needs a larger lr to become the argmax in a short run (Unsloth's `embedding_learning_rate`)."""
    emb = {id(model.get_input_embeddings().weight)}
    if model.get_output_embeddings() is not None:
        emb.add(id(model.get_output_embeddings().weight))
    params = list(model.parameters())
    scale = (embedding_lr / lr) if embedding_lr > 0 else 1.0
    return [{"params": [p for p in params if id(p) not in emb], "lr_scale": 1.0},
            {"params": [p for p in params if id(p) in emb], "lr_scale": scale}]


def cosine_lr(step: int, peak: float, warmup: int, total: int, min_ratio: float) -> float:
    """lr(s) = peak * s/warmup for s < warmup, then
    peak * (r + (1 - r) * ½ (1 + cos(π (s - warmup) / (total - warmup)))), r = min_ratio."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


# ----------------------------------------------------------------------------------------------
# Model and data
# ----------------------------------------------------------------------------------------------
def prepare_model(cfg: Config):
    """Load the policy; think tokens, RoPE rescaling and the chat template (skipped on resume)."""
    model, tok = models.load_policy(cfg.model)
    if cfg.think_tokens == "add":
        add_think_tokens(model, tok)
    elif cfg.think_tokens == "repurpose":
        tok = repurpose_think_tokens(tok)
    rescale_rope(model, cfg.rope_theta_factor, cfg.max_length)
    tok = set_chat_template(tok)
    if model.generation_config is not None:      # samplers (HF, vLLM) stop at the end of turn
        model.generation_config.eos_token_id = tok.convert_tokens_to_ids(IM_END)
    return model, tok


def build_dataset(cfg: Config) -> tuple[list[dict], dict]:
    """The training examples of --dataset (`sft_data.load_examples`: built and filtered), flagged
    for thinking-mode fusion (`fuse_modes`); and the filter's counts."""
    examples, non_thinking, counts = sft_data.load_examples(cfg)
    fused = fuse_modes(examples, cfg.no_think_ratio, cfg.seed, non_thinking, cfg.multi_turn_ratio)
    return fused, counts


# ----------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------
def train(cfg: Config) -> Path:
    check_config(cfg)
    distributed.dist_init()                        # under torchrun: join the process group
    runs.seed_everything(cfg.seed, cfg.threads)
    data.set_prompt_style(cfg.prompt_style)
    if cfg.eval_only:
        return sft_run.evaluate_only(cfg)
    run = runs.open_run(cfg.output_dir, cfg, cfg.resume, cfg.overwrite)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    # ---- data: model with think tokens, RoPE, template; examples (a resumed run reloads both) ----
    if cfg.resume:
        model, tok = models.load_policy(str(run.resumable_checkpoint()))
        examples = sft_data.read_examples(run.root)
    else:
        model, tok = prepare_model(cfg)
        examples, counts = build_dataset(cfg)
    encoded = encode_examples(tok, examples, cfg.max_length)   # refused before anything is written
    if not cfg.resume:
        sft_data.write_examples(run.root, examples, counts)
    model = distributed.wrap_model(model.to(device).train(), cfg.parallel)
    batches = functools.lru_cache(maxsize=1)(      # epoch -> its micro-batches, one epoch at a time
        lambda epoch: epoch_batches(encoded, epoch, cfg, tok.pad_token_id))
    micro_per_epoch = len(batches(0))
    total_steps = cfg.max_steps if cfg.max_steps > 0 else math.ceil(
        cfg.num_train_epochs * micro_per_epoch / cfg.gradient_accumulation_steps)
    cli.warmup_note("sft", cfg.warmup_steps, total_steps)
    groups = param_groups(model, cfg.learning_rate, cfg.embedding_learning_rate)
    optimizer = torch.optim.AdamW(groups, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    step = sft_run.resume_run(run, optimizer, cfg.gradient_accumulation_steps) if cfg.resume else 0

    bar = tqdm(total=total_steps, initial=step, desc="sft")
    while step < total_steps:
        t0 = time.perf_counter()
        # ---- pack: this step's micro-batches, from position step * accumulation (exact on resume)
        first = step * cfg.gradient_accumulation_steps
        micro = [batches(pos // micro_per_epoch)[pos % micro_per_epoch]
                 for pos in range(first, first + cfg.gradient_accumulation_steps)]
        micro = [{name: t.to(device) for name, t in b.items()} for b in micro]

        # ---- loss: token-level mean over the whole step (all ranks' batches) ----
        # Each rank divides its loss sum by the mean token count per rank; DDP/FSDP2 average the
        # gradients over ranks, so the update is Σ_ranks loss_sum / Σ_ranks tokens.
        n_tokens = distributed.mean_over_ranks(sum(int(b["loss_mask"][:, 1:].sum()) for b in micro))
        loss_sum = 0.0
        for b in micro:
            with models.autocast(cfg.bf16):
                loss, _ = sft_loss_sum(model, b)
            (loss / max(n_tokens, 1)).backward()
            training.check_finite(loss, step + 1)
            loss_sum += loss.item()

        # ---- update: cosine learning rate, clipped gradients ----
        lr = cosine_lr(step, cfg.learning_rate, cfg.warmup_steps, total_steps, cfg.min_lr_ratio)
        for g in optimizer.param_groups:
            g["lr"] = lr * g["lr_scale"]
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1

        # ---- log ----
        seq_tokens = sum(int((b["segments"] > 0).sum()) for b in micro)
        row = {"step": step, "epoch": (step * cfg.gradient_accumulation_steps) / micro_per_epoch,
               "loss": loss_sum / max(n_tokens, 1), "lr": lr, "grad_norm": float(grad_norm),
               "tokens_per_s": seq_tokens / (time.perf_counter() - t0), "loss_tokens": n_tokens}
        run.log(distributed.all_reduce_mean(row))
        bar.update(1)
        bar.set_postfix(loss=f"{row['loss']:.3f}", lr=f"{lr:.1e}")

        # ---- save ----
        if step % cfg.save_steps == 0 or step == total_steps:
            sft_run.save(run, model, tok, optimizer, step, cfg)
    bar.close()

    # ---- evaluate: the think format on held-out prompts, in both modes ----
    if cfg.eval_problems > 0:
        metrics, samples = sft_run.check_format(cfg, model, tok, run.root)
        run.log({"step": step, **metrics})
        run.log_samples(step, samples)
    run.summary(["loss", *[k for k in (run.metrics() or [{}])[-1] if k.endswith("rate")]])
    return run.checkpoint


def parse(args: list[str] | None = None) -> Config:
    return cli.parse(Config, args)


if __name__ == "__main__":
    sys.exit(cli.main(train, parse))
