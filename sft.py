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
    # 2 x 50 held-out prompts (README, "sft.py")
    python sft.py --max_steps 40 --max_length 512 --learning_rate 2e-4 \
        --embedding_learning_rate 2e-3 --num_examples 256 --eval_problems 50 --output_dir runs/sft
"""
from __future__ import annotations

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

import cli
import data
import models
import runs
import engines
import distributed
import tools
from rewards import verify_math

THINK, END_THINK = "<think>", "</think>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"


@dataclass
class Config:
    model: str = field(default="smollm2", metadata={"help": "policy: smollm2 (embedded default), tiny, a folder or a hub id"})
    output_dir: str = field(default="runs/sft", metadata={"help": "run directory (config, metrics, checkpoint/)"})
    dataset: str = field(default="math", metadata={"help": "math (synthetic traces), teacher (rejection-sampled from --teacher), "
                         "fusion (Qwen3 thinking-mode fusion: thinking data rejection-sampled from --teacher, "
                         "non-thinking data of other kinds of task), math_tools (synthetic traces that compute with python: "
                         "tools.sft_examples) or a .jsonl of {messages} or {prompt, reasoning, answer}"})
    prompt_style: str = field(default="default", metadata={"help": data.PROMPT_STYLE_HELP, "choices": list(data.PROMPT_STYLES)})
    num_examples: int = field(default=512, metadata={"help": "synthetic/teacher: number of math problems"})
    teacher: str = field(default="", metadata={"help": "--dataset teacher/fusion: model whose verified-correct answers become "
                         "traces (empty: --model itself, e.g. the reasoning-RL checkpoint in Qwen3's fusion stage)"})
    teacher_samples: int = field(default=4, metadata={"help": "--dataset teacher/fusion: samples per problem (T=0.6); the correct ones are kept"})
    no_think_ratio: float = field(default=0.5, metadata={"help": "thinking-mode fusion: fraction of examples in non-thinking mode "
                                "(/no_think, empty think block); thinking ones carry /think or no flag; 0 = no flags (cold start)"})
    multi_turn_ratio: float = field(default=0.25, metadata={"help": "thinking-mode fusion: fraction of conversations given an earlier "
                                    "turn in the other mode, so flags mix within a conversation"})
    think_tokens: str = field(default="add", metadata={"help": "add: new <think> </think> tokens, mean-initialised; repurpose: rename two unused special tokens (Phi-4); none: plain text", "choices": ["add", "repurpose", "none"]})
    rope_theta_factor: float = field(default=1.0, metadata={"help": "multiply the RoPE base (Phi-4-reasoning: 2.0)"})
    max_length: int = field(default=1024, metadata={"help": "tokens per (packed) sequence; longer examples are dropped; raises max_position_embeddings if larger"})
    packing: bool = field(default=True, metadata={"help": "pack several examples per sequence (block-diagonal attention)"})
    per_device_train_batch_size: int = field(default=1, metadata={"help": "sequences per micro-batch"})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "micro-batches per optimizer step"})
    learning_rate: float = field(default=2e-4, metadata={"help": "peak learning rate (Phi-4 SFT: 1e-5 at 14B)"})
    embedding_learning_rate: float = field(default=2e-3, metadata={"help": "peak lr of the token embeddings and LM head (0: learning_rate); new think tokens start at the mean row and need ~10x learning_rate to be learned in a few dozen steps"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay (Phi-4 SFT: 1e-4)"})
    warmup_steps: int = field(default=5, metadata={"help": "linear warm-up steps, then cosine decay"})
    min_lr_ratio: float = field(default=0.1, metadata={"help": "cosine decays to learning_rate * min_lr_ratio"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping"})
    num_train_epochs: float = field(default=1.0, metadata={"help": "epochs over the data (when max_steps <= 0)"})
    max_steps: int = field(default=-1, metadata={"help": "optimizer steps; > 0 overrides num_train_epochs"})
    save_steps: int = field(default=50, metadata={"help": "checkpoint (model + state.pt) every N steps"})
    bf16: str = field(default="auto", metadata={"help": "bfloat16 autocast: auto (where the GPU has it), true, false", "choices": ["auto", "true", "false"]})
    max_repetition: float = field(default=0.5, metadata={"help": "filter: drop responses whose fraction of repeated word 8-grams exceeds this"})
    eval_problems: int = field(default=64, metadata={"help": "held-out math prompts per mode for the final think-format check (0: off)"})
    eval_max_completion_length: int = field(default=256, metadata={"help": "generation length of the format check"})
    eval_only: bool = field(default=False, metadata={"help": "only run the format check on --model"})
    resume: bool = field(default=False, metadata={"help": "continue the run in output_dir from state.pt"})
    overwrite: bool = field(default=False, metadata={"help": "replace a run already in output_dir (without it, such a folder is refused)"})
    parallel: str = field(default="fsdp2", metadata={"help": "under torchrun: fsdp2 (shard the model), ddp (replicate it) or none; ignored in a single process", "choices": ["fsdp2", "ddp", "none"]})
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
    from transformers import AddedToken
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
    from transformers import AutoTokenizer
    vocab = tokenizer.get_vocab()
    if THINK in vocab and END_THINK in vocab:
        return tokenizer
    ids = ids or find_unused_tokens(tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        spec = json.loads((Path(tmp) / "tokenizer.json").read_text())
        for tid, new in zip(ids, (THINK, END_THINK)):
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
    """rope_theta <- factor * rope_theta; max_position_embeddings <- max(it, max_length).

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
    if max_length > config.max_position_embeddings:
        config.max_position_embeddings = max_length
    for name, module in list(model.named_modules()):
        if hasattr(module, "inv_freq") and getattr(module, "config", None) is config:
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            new = type(module)(config=config).to(module.inv_freq.device)
            setattr(parent, name.rsplit(".", 1)[-1], new)
    return {"rope_parameters": getattr(config, "rope_parameters", None),
            "max_position_embeddings": config.max_position_embeddings}


# ----------------------------------------------------------------------------------------------
# Qwen3 chat template
# ----------------------------------------------------------------------------------------------
# The official Qwen3 template (the `chat_template` of
# https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json), with Jinja comments
# added: `{#- ... #}` renders nothing, and every tag after it strips the whitespace in between,
# so the output is byte-identical to the official template's (tests/test_chat_template.py).
# It does not read `/think` or `/no_think`: they are plain text of a user or system turn, and
# the model learns to obey them from the thinking-mode fusion data (Qwen3 tech report §4.3).
CHAT_TEMPLATE = r"""
{#- ---- 1. System turn. With tools, the system turn also lists their signatures (one JSON
     object per line inside <tools></tools>) and says how to call them. -------------------- #}
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{#- ---- 2. The last query: the index of the last user message that is not a tool response
     (a user turn wrapped in <tool_response>...</tool_response>). Assistant turns after it
     belong to the current answer (a multi-step tool use); turns before it are history. ---- #}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {#- non-string content (e.g. none, next to tool calls) renders as '' #}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {#- ---- 3. User turns, and system turns after the first, verbatim: a /think or
         /no_think in them is text like any other. ---------------------------------------- #}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {#- ---- 4. Assistant turns. The reasoning is `reasoning_content`, or else whatever
             precedes </think> in the content (then the content is what follows it). ------- #}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {#- After the last query, the think block is kept: always on the final turn (an empty
             reasoning gives the empty block <think>\n\n</think>\n\n), on earlier turns only
             when they have reasoning. Before the last query the reasoning is dropped. ----- #}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {#- tool calls: one <tool_call>{"name": ..., "arguments": ...}</tool_call> each,
             on a new line after the content #}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {#- ---- 5. Tool results: consecutive tool messages share one user turn, each wrapped
             in <tool_response></tool_response>. ---------------------------------------------- #}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{#- ---- 6. Generation prompt. enable_thinking=False prefills the empty think block, so the
     model answers directly; otherwise the model opens <think> itself. ------------------- #}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""


def set_chat_template(tokenizer):
    """Write the Qwen3 chat template (above) into the tokenizer; end of turn is <|im_end|>.

    The template renders the flags `/think` and `/no_think` as plain text; it strips the
    reasoning of turns before the last user query and, with `enable_thinking=False`, prefills
    the empty think block `<think>\\n\\n</think>\\n\\n` after `<|im_start|>assistant\\n`."""
    missing = [t for t in (IM_START, IM_END) if t not in tokenizer.get_vocab()]
    if missing:
        raise ValueError(f"the Qwen3 chat template needs {missing} in the vocabulary of "
                         f"{tokenizer.name_or_path!r} (ChatML tokens); add them or use a ChatML model")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.eos_token = IM_END
    return tokenizer


# ----------------------------------------------------------------------------------------------
# Examples: {"messages": [..., {"role": "assistant", "reasoning_content", "content"}], "reference"}
# ----------------------------------------------------------------------------------------------
def boxed_sentence(answer: str) -> str:
    return f"The final answer is $\\boxed{{{answer}}}$."


def synthetic_examples(n: int, seed: int) -> list[dict]:
    """data.math_tasks: reasoning = the worked solution, answer = a `\\boxed{}` sentence."""
    return [{"messages": data.build_messages(t) + [
                {"role": "assistant", "reasoning_content": t["solution"],
                 "content": boxed_sentence(t["answer"])}], "reference": t["answer"]}
            for t in data.math_tasks(n, "train", seed)]


def jsonl_examples(path: str) -> list[dict]:
    """Rows {"messages": [...]} (reasoning in `reasoning_content` or inside `content`) or
    {"prompt", "reasoning", "answer"}; an `answer` without `\\boxed` is the final value and is
    boxed (and checked by the filter); an optional "reference" is the value to check against."""
    rows = data._rows_from_file(Path(path))
    out = []
    for i, row in enumerate(rows):
        if "messages" in row:
            msgs = row["messages"]
            if not msgs or msgs[-1].get("role") != "assistant":
                raise data.DataError(f"{path}: row {i}: the last message must be the assistant's reply")
            out.append({"messages": msgs, "reference": row.get("reference")})
            continue
        missing = [k for k in ("prompt", "reasoning", "answer") if k not in row]
        if missing:
            raise data.DataError(f"{path}: row {i} has no field {missing[0]!r} (fields: {sorted(row)}). "
                                 "Rows need 'messages', or 'prompt', 'reasoning' and 'answer'.")
        answer = str(row["answer"])
        boxed = "\\boxed" in answer
        out.append({"messages": [{"role": "user", "content": row["prompt"]},
                                 {"role": "assistant", "reasoning_content": row["reasoning"],
                                  "content": answer if boxed else boxed_sentence(answer)}],
                    "reference": row.get("reference", None if boxed else answer)})
    return out


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a completion: around `</think>`; without a think block, the last
    line holding `\\boxed` is the answer and everything before it the reasoning."""
    if END_THINK in text:
        head, tail = text.rsplit(END_THINK, 1)
        return head.split(THINK)[-1].strip("\n"), tail.strip()
    lines = text.strip().split("\n")
    k = max((j for j, l in enumerate(lines) if "\\boxed" in l), default=len(lines) - 1)
    return "\n".join(lines[:k]).strip(), "\n".join(lines[k:]).strip()


def teacher_examples(cfg: Config) -> list[dict]:
    """Rejection sampling (Qwen3 cold start, Phi-4 curated SFT): `teacher_samples` answers per
    problem at T=0.6, top-p 0.95 (Qwen3's thinking settings). Every sample becomes a candidate;
    `filter_responses` then drops the wrong ones (and counts them). Unfinished samples are dropped."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    teacher, ttok = models.load_policy(cfg.teacher or cfg.model, device=device)
    tasks = data.math_tasks(cfg.num_examples, "train", cfg.seed)
    engine = engines.make_engine("auto", teacher, ttok)
    params = engines.SamplingParams(n=cfg.teacher_samples, temperature=0.6, top_p=0.95,
                                   max_new_tokens=cfg.max_length // 2, seed=cfg.seed)
    out = []
    with engines.progress(f"sampling {cfg.teacher or cfg.model}"):
        outs = engine.generate(data.prompt_ids(ttok, tasks), params)
    for c in outs:
        if c.truncated:
            continue
        t = tasks[c.prompt_index]
        reasoning, answer = split_reasoning(c.text)
        out.append({"messages": data.build_messages(t) + [
            {"role": "assistant", "reasoning_content": reasoning, "content": answer}],
            "reference": t["answer"]})
    return out


def non_thinking_examples(n: int, seed: int) -> list[dict]:
    """Non-thinking SFT data of other kinds of task (Qwen3 §4.3 curates non-thinking data over many
    task kinds): instruction following answered directly (`data.instruction_tasks`, responses
    that meet every constraint) and math answered with the final sentence only."""
    instr = [{"messages": data.build_messages(t) + [{"role": "assistant", "reasoning_content": "",
                                                     "content": t["response"]}], "reference": None}
             for t in data.instruction_tasks(n - n // 2, "train", seed)]
    maths = [{"messages": data.build_messages(t) + [{"role": "assistant", "reasoning_content": "",
                                                     "content": boxed_sentence(t["answer"])}], "reference": t["answer"]}
             for t in data.math_tasks(n // 2, "train", seed + 1)]
    return instr + maths


def fusion_examples(cfg: Config) -> tuple[list[dict], list[dict]]:
    """(thinking, non-thinking) data of Qwen3's thinking-mode fusion (§4.3): the thinking data
    are rejection-sampled from the stage-2 (reasoning-RL) model on the stage-1 queries, so fusion
    does not undo RL (`teacher_examples` on `data.math_tasks(num_examples, seed)`, the cold
    start's queries; `filter_responses` then keeps the verified-correct ones); the non-thinking
    data cover other kinds of task (`non_thinking_examples`)."""
    thinking = teacher_examples(cfg)
    n_plain = max(1, round(cfg.num_examples * cfg.no_think_ratio / max(1 - cfg.no_think_ratio, 1e-9)))
    return thinking, non_thinking_examples(n_plain, cfg.seed)


def fuse_modes(examples: list[dict], no_think_ratio: float, seed: int,
               non_thinking: list[dict] | None = None, multi_turn_ratio: float = 0.0) -> list[dict]:
    """Thinking-mode fusion data (Qwen3 §4.3). The flags are plain text the model learns to obey:
    * non-thinking samples get `/no_think` in the last user turn and an empty reasoning (the
      template renders an empty think block). They are `non_thinking` when given, else a
      `no_think_ratio` share of `examples` with their reasoning removed;
    * thinking samples get `/think` or no flag at all (thinking is the default mode);
    * a `multi_turn_ratio` share of conversations gets an earlier turn in the other mode in front,
      so flags mix within a conversation (the template drops that turn's reasoning).
    Ratio 0 without `non_thinking` leaves the examples as they are (a cold start: no flags)."""
    if no_think_ratio <= 0 and not non_thinking:
        return examples
    rng = random.Random(f"fusion-{seed}")

    def with_flag(ex: dict, think: bool) -> dict:
        msgs = [dict(m) for m in ex["messages"]]
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        if not think:
            msgs[last_user]["content"] += " /no_think"
            content = msgs[-1]["content"]
            msgs[-1]["reasoning_content"] = ""
            msgs[-1]["content"] = split_reasoning(content)[1] if END_THINK in content else content
        elif rng.random() < 0.5:
            msgs[last_user]["content"] += " /think"
        return {**ex, "messages": msgs, "think": think}

    if non_thinking is None:
        out = [with_flag(ex, rng.random() >= no_think_ratio) for ex in examples]
    else:
        out = [with_flag(ex, True) for ex in examples] + [with_flag(ex, False) for ex in non_thinking]
    for k, ex in enumerate(out):
        if rng.random() < multi_turn_ratio:
            other = [e for e in out if e["think"] != ex["think"]]
            if other:
                earlier = rng.choice(other)["messages"]
                out[k] = {**ex, "messages": earlier[-2:] + ex["messages"]}
    if non_thinking is not None:
        rng.shuffle(out)      # the two kinds interleaved
    return out


# ----------------------------------------------------------------------------------------------
# Response filtering (Qwen3 cold start §4.1)
# ----------------------------------------------------------------------------------------------
def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (braces matched)."""
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    depth, j = 0, i + len("\\boxed")
    for k in range(j, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[j + 1:k]
    return None


def reasoning_claim(reasoning: str) -> str | None:
    """What the think block concludes: its last `\\boxed{}`, else the text after its last
    "answer is", else its last number (integer, decimal, a/b or \\frac{a}{b})."""
    box = last_boxed(reasoning)
    if box is not None:
        return box
    m = re.findall(r"answer is:?\s*\$?([^\n$]+?)\$?\.?\s*(?:\n|$)", reasoning, re.I)
    if m:
        return m[-1].strip()
    nums = re.findall(r"-?\\frac\{\d+\}\{\d+\}|-?\d+(?:/\d+|\.\d+)?", reasoning)
    return nums[-1] if nums else None


def repetition(text: str, n: int = 8) -> float:
    """Fraction of repeated word n-grams: 1 - #distinct / #n-grams (0 for a text that never
    repeats itself, near 1 for a loop)."""
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def filter_responses(examples: list[dict], max_repetition: float) -> tuple[list[dict], dict]:
    """Qwen3 cold-start response filtering; returns (kept, counts per rule, first rule wins):
    wrong_answer (final answer != reference, when there is one), repetition (repeated 8-gram
    share > max_repetition), inconsistent (the think block concludes a different value)."""
    kept, counts = [], {"wrong_answer": 0, "repetition": 0, "inconsistent": 0}
    for ex in examples:
        reply = ex["messages"][-1]
        reasoning, answer = reply.get("reasoning_content"), reply["content"]
        if reasoning is None:
            reasoning, answer = split_reasoning(answer) if END_THINK in answer else ("", answer)
        claim = reasoning_claim(reasoning) if reasoning.strip() else None
        if ex.get("reference") is not None and not verify_math(answer, str(ex["reference"])):
            counts["wrong_answer"] += 1
        elif repetition(reasoning + "\n" + answer) > max_repetition:
            counts["repetition"] += 1
        elif claim is not None and last_boxed(answer) is not None and not verify_math(f"\\boxed{{{claim}}}", last_boxed(answer)):
            counts["inconsistent"] += 1
        else:
            kept.append(ex)
    return kept, {**counts, "kept": len(kept), "total": len(examples)}


# ----------------------------------------------------------------------------------------------
# Tokens, loss mask, packing
# ----------------------------------------------------------------------------------------------
def encode(tokenizer, messages: list[dict]) -> tuple[list[int], list[int]]:
    """(input_ids, loss_mask): the prompt (everything up to `<|im_start|>assistant\\n`, as at
    inference) gets 0; the last assistant turn -- think block, answer and `<|im_end|>` -- gets 1.
    Earlier assistant turns are context only (their reasoning is not rendered)."""
    prompt = tokenizer.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    if not full.startswith(prompt):
        raise ValueError("the chat template's prompt is not a prefix of the full conversation")
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
    out = {k: torch.zeros(B, T, dtype=torch.long) for k in ("input_ids", "loss_mask", "position_ids", "segments")}
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
        mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)
    hidden = model.get_decoder()(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                                 attention_mask=mask).last_hidden_state
    take = batch["loss_mask"][:, 1:].bool()
    logits = model.get_output_embeddings()(hidden[:, :-1][take]).float()
    return F.cross_entropy(logits, batch["input_ids"][:, 1:][take], reduction="sum"), int(take.sum())


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
# The think-format check
# ----------------------------------------------------------------------------------------------
def think_format(text: str) -> dict:
    """Parse `<think>\\n...\\n</think>\\n\\n answer`: closed block, whether it is empty, boxed answer after it."""
    m = re.match(r"\s*<think>(.*?)</think>(.*)", text, re.S)
    if not m:
        return {"closed": False, "empty": False, "boxed": False}
    return {"closed": True, "empty": not m.group(1).strip(), "boxed": last_boxed(m.group(2)) is not None}


@torch.no_grad()
def evaluate_format(model, tokenizer, n: int, max_new_tokens: int, seed: int = 0) -> tuple[dict, list[dict]]:
    """Greedy answers to n held-out problems per mode. think_ok: closed, non-empty think block,
    boxed answer after it (prompt with /think); no_think_ok: the same with an empty block."""
    tasks = data.math_tasks(n, "test", seed)
    engine = engines.HFEngine(model, tokenizer)
    params = engines.SamplingParams(temperature=0, max_new_tokens=max_new_tokens)
    metrics, samples = {}, []
    for mode, think in (("think", True), ("no_think", False)):
        with engines.progress(f"format check, thinking {think}"):
            outs = engine.generate(data.prompt_ids(tokenizer, tasks, think=think), params)
        ok = correct = 0
        for c in outs:
            f = think_format(c.text)
            good = f["closed"] and f["boxed"] and f["empty"] != think
            ok += good
            correct += verify_math(c.text, tasks[c.prompt_index]["answer"])
            samples.append({"mode": mode, "prompt": tasks[c.prompt_index]["prompt"], "completion": c.text, "format_ok": good})
        metrics[f"eval/{mode}_format"] = ok / n
        metrics[f"eval/{mode}_accuracy"] = correct / n
    return metrics, samples


# ----------------------------------------------------------------------------------------------
# Training
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
    if cfg.dataset == "math":
        examples = synthetic_examples(cfg.num_examples, cfg.seed)
    elif cfg.dataset == "teacher":
        examples = teacher_examples(cfg)
    elif cfg.dataset == "math_tools":
        examples = tools.sft_examples(cfg.num_examples, cfg.seed)
    elif cfg.dataset == "fusion":
        thinking, plain = fusion_examples(cfg)
        thinking, counts = filter_responses(thinking, cfg.max_repetition)   # only verified-correct traces
        if not thinking:
            raise data.DataError(f"--dataset fusion: none of {cfg.teacher or cfg.model}'s samples was correct "
                                 f"({counts}); raise --teacher_samples or start from a stronger model")
        fused = fuse_modes(thinking, cfg.no_think_ratio, cfg.seed, plain, cfg.multi_turn_ratio)
        return fused, {**counts, "non_thinking": len(plain)}
    elif Path(cfg.dataset).suffix in (".jsonl", ".json", ".parquet"):
        examples = jsonl_examples(cfg.dataset)
    else:
        raise data.DataError(f"--dataset {cfg.dataset!r}: use math, teacher, fusion, math_tools or a .jsonl file")
    examples, counts = filter_responses(examples, cfg.max_repetition)
    return fuse_modes(examples, cfg.no_think_ratio, cfg.seed, multi_turn_ratio=cfg.multi_turn_ratio), counts


def check_config(cfg: Config):
    """Values that would make training meaningless, refused before anything is loaded."""
    cli.check_positive(cfg, "max_length", "per_device_train_batch_size", "gradient_accumulation_steps",
                       "learning_rate", "save_steps", "num_examples", "teacher_samples", "eval_max_completion_length")
    for name in ("no_think_ratio", "multi_turn_ratio"):
        if not 0 <= getattr(cfg, name) < 1 + (name == "multi_turn_ratio"):
            raise ValueError(f"--{name} {getattr(cfg, name)}: a fraction in [0, 1)")
    if cfg.rope_theta_factor <= 0:
        raise ValueError(f"--rope_theta_factor {cfg.rope_theta_factor}: must be positive (Phi-4: 2.0)")


def train(cfg: Config) -> Path:
    check_config(cfg)
    data.set_prompt_style(cfg.prompt_style)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    distributed.dist_init()                        # under torchrun: join the process group
    runs.seed_everything(cfg.seed)
    out = Path(cfg.output_dir)
    if cfg.eval_only:
        model, tok = models.load_policy(cfg.model)
        metrics, samples = evaluate_format(model, tok, cfg.eval_problems, cfg.eval_max_completion_length, cfg.seed)
        out.mkdir(parents=True, exist_ok=True)
        (out / "eval.json").write_text(json.dumps(metrics, indent=2))
        (out / "eval_samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
        print(json.dumps(metrics, indent=2))
        return out
    resuming = cfg.resume
    run = runs.open_run(out, cfg, cfg.resume, cfg.overwrite)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    use_bf16 = cfg.bf16 == "true" or (cfg.bf16 == "auto" and models.bf16_supported())

    # ---- model, tokens, data (a resumed run reloads all three from its run directory) ----
    if resuming:
        model, tok = models.load_policy(str(run.checkpoint))
        examples = [json.loads(l) for l in (out / "train.jsonl").read_text().splitlines()]
    else:
        model, tok = prepare_model(cfg)
        examples, counts = build_dataset(cfg)
        print(f"[sft] response filter: {counts}")
        (out / "filter.json").write_text(json.dumps(counts, indent=2))
        (out / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    model = distributed.wrap_model(model.to(device).train(), cfg.parallel)
    encoded = [encode(tok, ex["messages"]) for ex in examples]
    encoded = [tools.mask_observations(tok, ids, mask) for ids, mask in encoded]   # tool outputs: not trained on
    too_long = [i for i, (ids, _) in enumerate(encoded) if len(ids) > cfg.max_length]
    encoded = [e for e in encoded if len(e[0]) <= cfg.max_length]
    if not encoded:
        raise data.DataError(f"no example fits in --max_length {cfg.max_length}")
    if too_long:
        print(f"[sft] dropped {len(too_long)} examples longer than max_length={cfg.max_length}")

    def epoch_batches(epoch: int) -> list[dict]:
        """The micro-batches of one epoch: a seeded shuffle, then packing, then batching."""
        order = list(range(len(encoded)))
        random.Random(f"{cfg.seed}-{epoch}").shuffle(order)
        lengths = [len(encoded[i][0]) for i in order]
        rows = pack(lengths, cfg.max_length) if cfg.packing else [[k] for k in range(len(order))]
        rows = [[order[k] for k in row] for row in rows]
        bs = cfg.per_device_train_batch_size
        batches = [collate(encoded, rows[s:s + bs], tok.pad_token_id) for s in range(0, len(rows), bs)]
        return distributed.shard_for_rank(batches, pad=True)   # under torchrun: this rank's share

    micro_per_epoch = len(epoch_batches(0))
    total_steps = cfg.max_steps if cfg.max_steps > 0 else math.ceil(
        cfg.num_train_epochs * micro_per_epoch / cfg.gradient_accumulation_steps)
    optimizer = torch.optim.AdamW(param_groups(model, cfg.learning_rate, cfg.embedding_learning_rate),
                                  lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    step = 0
    if resuming:
        state = run.load_state()
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        if state["data_position"] != step * cfg.gradient_accumulation_steps:
            raise ValueError(f"--resume: the run used gradient_accumulation_steps="
                             f"{state['data_position'] // step}; resume with the same value")
        run.truncate_metrics(step)
        print(f"[sft] resumed at step {step} (micro-batch {state['data_position']})")

    bar = tqdm(total=total_steps, initial=step, desc="sft")
    epoch, batches = -1, []
    while step < total_steps:
        t0 = time.perf_counter()
        # ---- the micro-batches of this step: position = step * accumulation (exact on resume) ----
        micro = []
        for k in range(cfg.gradient_accumulation_steps):
            pos = step * cfg.gradient_accumulation_steps + k
            if pos // micro_per_epoch != epoch:
                epoch = pos // micro_per_epoch
                batches = epoch_batches(epoch)
            micro.append({name: t.to(device) for name, t in batches[pos % micro_per_epoch].items()})
        # ---- forward / backward: token-level mean over the whole step (all ranks' batches) ----
        # Each rank divides its loss sum by the mean token count per rank; DDP/FSDP2 average the
        # gradients over ranks, so the update is Σ_ranks loss_sum / Σ_ranks tokens.
        n_tokens = distributed.mean_over_ranks(sum(int(b["loss_mask"][:, 1:].sum()) for b in micro))
        lr = cosine_lr(step, cfg.learning_rate, cfg.warmup_steps, total_steps, cfg.min_lr_ratio)
        for g in optimizer.param_groups:
            g["lr"] = lr * g["lr_scale"]
        loss_sum = 0.0
        for b in micro:
            with torch.autocast(device, dtype=torch.bfloat16, enabled=use_bf16):
                loss, _ = sft_loss_sum(model, b)
            (loss / max(n_tokens, 1)).backward()
            if not torch.isfinite(loss):
                raise FloatingPointError(f"step {step + 1}: the loss is {loss.item()}; nothing of this step was "
                                         "saved. Likely cause: a learning rate too high (--learning_rate); the "
                                         "last checkpoint in --output_dir is intact")
            loss_sum += loss.item()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        # ---- log ----
        dt = time.perf_counter() - t0
        seq_tokens = sum(int((b["segments"] > 0).sum()) for b in micro)
        row = {"step": step, "epoch": (step * cfg.gradient_accumulation_steps) / micro_per_epoch,
               "loss": loss_sum / max(n_tokens, 1), "lr": lr, "grad_norm": float(grad_norm),
               "tokens_per_s": seq_tokens / dt, "loss_tokens": n_tokens}
        run.log(distributed.all_reduce_mean(row))
        bar.update(1)
        bar.set_postfix(loss=f"{row['loss']:.3f}", lr=f"{lr:.1e}")
        # ---- checkpoint ----
        if step % cfg.save_steps == 0 or step == total_steps:
            run.save(model, tok, {"step": step, "optimizer": optimizer.state_dict(),
                                  "data_position": step * cfg.gradient_accumulation_steps})
            run.plot(["loss", "lr", "grad_norm", "tokens_per_s"],
                     title=f"sft: {cfg.model} on {cfg.dataset}, think tokens {cfg.think_tokens}, "
                           f"lr {cfg.learning_rate:g}, no_think {cfg.no_think_ratio:g}")
    bar.close()

    # ---- the think-format check on held-out prompts ----
    if cfg.eval_problems > 0:
        metrics, samples = evaluate_format(model, tok, cfg.eval_problems, cfg.eval_max_completion_length, cfg.seed)
        print(json.dumps(metrics, indent=2))
        run.log({"step": step, **metrics})
        run.log_samples(step, samples)
        (out / "eval.json").write_text(json.dumps(metrics, indent=2))
    run.summary(["loss", *[k for k in (run.metrics() or [{}])[-1] if k.endswith("rate")]])
    return run.checkpoint


def parse(args: list[str] | None = None) -> Config:
    return cli.parse(Config, args)


if __name__ == "__main__":
    sys.exit(cli.main(train, parse))
