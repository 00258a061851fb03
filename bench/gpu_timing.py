"""Timing of one GRPO step's parts on a real model: rollouts, the training step, the weight sync.

One model per process (vLLM keeps process-wide state); `bench/gpu.sh` runs it once per model
and prints the combined table. Parts, in order:

* vllm_generate : `engines.VLLMEngine` (bf16, sleep mode), P prompts x G samples, T new tokens,
                  temperature 1.0 (after an untimed warm-up call): generated tokens / second.
* hf_generate   : `engines.HFEngine` (HF `generate`) on the same model and device, a smaller
                  batch (hf_prompts x G samples, same T), after a warm-up call: the comparison.
* train_step    : `grpo.train_on_batch` (token_logprobs -> clipped_surrogate -> aggregate_loss,
                  backward, AdamW step; beta 0, on-policy, dapo loss) over the rollout batch in
                  GRPO steps of step_prompts x G completions, under bf16 autocast where the GPU
                  has it (fp32 master weights); rewards are random 0/1 (timing does not depend
                  on them). First step untimed (warm-up) when there are two or more. Tokens =
                  prompt + completion tokens, as grpo.py's train_tokens_per_s. Peak memory:
                  torch.cuda.max_memory_allocated over the timed steps (on CPU: peak RSS).
* sync_weights  : `VLLMEngine.sync_weights` three times (HF engine: nothing to copy, 0).

Models: `smollm2` (the embedded SmolLM2-135M-Instruct, `models.load_policy()`), `qwen3-1.7b`
(random init of Qwen3-1.7B's shape from a config, on the embedded tokenizer; nothing is
downloaded; random weights never emit EOS, so every sample runs to T), `tiny` (the 2-layer test
model), or a local checkpoint folder.

Time caps: the training part stops after --train-cap-s; a part is skipped (a row says so) once
the process has used --budget-s; gpu.sh adds a hard `timeout` per process. Rows are printed as
JSON lines and appended to $OUT/gpu_timing.jsonl as they are measured, so a killed run keeps
what it measured.

    python bench/gpu_timing.py --model smollm2                 # on a GPU
    python bench/gpu_timing.py --device cpu --model tiny       # CPU smoke: HF generate + train
    python bench/gpu_timing.py --table runs/gpu_timing/gpu_timing.jsonl   # print a table
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

import data  # noqa: E402
import engines  # noqa: E402
import grpo  # noqa: E402
import models  # noqa: E402

JSONL = "gpu_timing.jsonl"
# sizes: (GPU default, CPU default); None in argparse means "pick by device"
SIZES = dict(
    prompts=(64, 4),
    samples=(8, 2),
    max_new_tokens=(512, 16),
    hf_prompts=(8, 2),
    step_prompts=(8, 2),
    micro_batch=(16, 4),
)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--model", default="smollm2", help="smollm2 | qwen3-1.7b | tiny | a local folder"
    )
    p.add_argument("--device", default=None, help="cuda (default where present) | cpu")
    p.add_argument("--prompts", type=int, help="rollout prompts (GPU 64, CPU 4)")
    p.add_argument("--samples", type=int, help="samples per prompt, G (GPU 8, CPU 2)")
    p.add_argument("--max-new-tokens", type=int, help="T (GPU 512, CPU 16)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--hf-prompts", type=int, help="prompts of the HF generate batch (GPU 8, CPU 2)")
    p.add_argument("--step-prompts", type=int, help="prompts per training step (GPU 8, CPU 2)")
    p.add_argument(
        "--micro-batch", type=int, help="completions per forward/backward (GPU 16, CPU 4)"
    )
    p.add_argument(
        "--no-vllm", action="store_true", help="skip vLLM (rollout batch from HF instead)"
    )
    p.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    p.add_argument("--enforce-eager", action="store_true", help="vLLM without CUDA graphs/compile")
    p.add_argument("--train-cap-s", type=float, default=60.0, help="stop training steps after this")
    p.add_argument("--budget-s", type=float, default=240.0, help="skip parts after this much time")
    p.add_argument("--out", default=os.environ.get("OUT", "runs/gpu_timing"))
    p.add_argument("--table", metavar="JSONL", help="only print the table of a results file")
    args = p.parse_args(argv)
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = args.device.startswith("cuda")
    for key, (on_gpu, on_cpu) in SIZES.items():
        if getattr(args, key) is None:
            setattr(args, key, on_gpu if gpu else on_cpu)
    return args


class Reporter:
    def __init__(self, out: str, model: str, device: str):
        self.path = Path(out) / JSONL
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.base = dict(model=model, device=device)
        self.rows: list[dict] = []

    def __call__(self, **row):
        row = {**self.base, **row}
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")


def qwen3_17b_config(vocab_size: int):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=max(vocab_size, 151936),
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        tie_word_embeddings=True,
    )


def build(name: str, device: str, dtype: torch.dtype):
    """(model on `device` in `dtype`, tokenizer)."""
    if name == "qwen3-1.7b":
        from transformers import AutoModelForCausalLM

        tok = models.load_tokenizer()
        config = qwen3_17b_config(len(tok))
        config.eos_token_id, config.pad_token_id = tok.eos_token_id, tok.pad_token_id
        torch.manual_seed(0)
        with torch.device(device):  # initialised where it runs: fast on a GPU
            model = AutoModelForCausalLM.from_config(config).to(dtype)
        if model.generation_config is not None:
            model.generation_config.max_length = None
        return model, tok
    dname = {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]
    return models.load_policy(None if name == "smollm2" else name, dtype=dname, device=device)


def sync(device: str):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def gen_row(outs, seconds: float) -> dict:
    tokens = sum(len(c.completion_ids) for c in outs)
    return dict(
        sequences=len(outs),
        tokens=tokens,
        seconds=round(seconds, 3),
        tokens_per_s=round(tokens / max(seconds, 1e-9), 1),
        mean_len=round(tokens / max(len(outs), 1), 1),
        truncated=round(sum(c.truncated for c in outs) / max(len(outs), 1), 3),
    )


def peak_mem(gpu: bool) -> tuple[float, str]:
    if gpu:
        return torch.cuda.max_memory_allocated() / 2**30, "cuda_max_allocated"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "cpu_peak_rss"


def run(args) -> list[dict]:
    t_start = time.perf_counter()
    gpu = args.device.startswith("cuda")
    report = Reporter(args.out, args.model, args.device)

    def over_budget(part: str) -> bool:
        used = time.perf_counter() - t_start
        if used > args.budget_s:
            report(part=part, skipped=f"time budget: {used:.0f} s used of {args.budget_s:.0f}")
            return True
        return False

    use_bf16 = gpu and models.bf16_supported()
    gen_dtype = torch.bfloat16 if use_bf16 else torch.float32
    t = time.perf_counter()
    model, tok = build(args.model, args.device, gen_dtype)
    n_params = sum(p.numel() for p in model.parameters())
    G, T = args.samples, args.max_new_tokens
    n_prompts = max(args.prompts, args.hf_prompts)
    prompts = data.prompt_ids(tok, data.math_tasks(n_prompts, "train", seed=0))
    report(
        part="setup",
        params_m=round(n_params / 1e6, 1),
        load_s=round(time.perf_counter() - t, 2),
        prompt_len_mean=round(sum(map(len, prompts)) / len(prompts), 1),
        gpu=torch.cuda.get_device_name() if gpu else None,
        torch=torch.__version__,
    )
    params = engines.SamplingParams(n=G, temperature=args.temperature, max_new_tokens=T, seed=0)
    warm = engines.SamplingParams(n=1, temperature=args.temperature, max_new_tokens=8, seed=1)

    # ---- 1. vLLM rollouts -----------------------------------------------------------------
    engine, rollouts = None, None
    if gpu and not args.no_vllm and importlib.util.find_spec("vllm") is None:
        report(part="vllm_generate", skipped="vllm does not import")
    elif gpu and not args.no_vllm and not over_budget("vllm_generate"):
        t = time.perf_counter()
        engine = engines.VLLMEngine(
            model,
            tok,
            gpu_memory_utilization=args.gpu_memory_utilization,
            max_model_len=max(map(len, prompts)) + T + 16,
            dtype="bfloat16",
            enable_sleep_mode=True,
            enforce_eager=args.enforce_eager,
        )
        start_s = time.perf_counter() - t
        engine.generate(prompts[:2], warm)
        t = time.perf_counter()
        rollouts = engine.generate(prompts[: args.prompts], params)
        report(
            part="vllm_generate",
            engine="vllm",
            **gen_row(rollouts, time.perf_counter() - t),
            engine_start_s=round(start_s, 1),
            enforce_eager=args.enforce_eager,
        )

    # ---- 2. HF generate, smaller batch, same model and device -----------------------------
    if not over_budget("hf_generate"):
        hf = engines.HFEngine(model, tok, batch_size=args.hf_prompts * G)
        hf.generate(prompts[:1], warm)
        sync(args.device)
        t = time.perf_counter()
        hf_outs = hf.generate(prompts[: args.hf_prompts], params)
        sync(args.device)
        report(part="hf_generate", engine="hf", **gen_row(hf_outs, time.perf_counter() - t))
        if rollouts is None:
            rollouts = hf_outs

    # ---- 3. training step: grpo.train_on_batch over the rollout batch ---------------------
    if rollouts and not over_budget("train_step"):
        model.float()  # fp32 master weights; bf16 autocast below
        cfg = grpo.Config(
            model=args.model,
            num_generations=G,
            temperature=args.temperature,
            max_completion_length=T,
            micro_batch_size=args.micro_batch,
            loss_type="dapo",
            beta=0.0,
            learning_rate=1e-6,
            bf16="true" if use_bf16 else "false",  # autocast inside train_on_batch
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
        gen = torch.Generator().manual_seed(0)
        per_step = args.step_prompts * G
        steps = [
            rollouts[s : s + per_step] for s in range(0, len(rollouts) - per_step + 1, per_step)
        ]
        steps = steps or [rollouts[: len(rollouts) // G * G]]
        cap = min(args.train_cap_s, max(args.budget_s - (time.perf_counter() - t_start), 1.0))

        def one_step(i, comps) -> dict:
            rew = torch.randint(0, 2, (len(comps),), generator=gen).float()
            adv = grpo.group_advantages(rew, G, cfg.scale_rewards)
            ids, attn, cmask = models.pad_batch(
                [c.prompt_ids for c in comps], [c.completion_ids for c in comps], tok.pad_token_id
            )
            loss_mask = cmask[:, 1:].float()
            dev = lambda x: x.to(args.device)  # noqa: E731
            return grpo.train_on_batch(
                model,
                optimizer,
                None,
                dev(ids),
                dev(attn),
                dev(loss_mask),
                dev(adv),
                None,  # engine log-probs: no mismatch here
                cfg,
                0.0,
                0.0,
                T,
                i,
                {},
            )

        warmup_s = None
        if len(steps) > 1:  # first step untimed: kernels, allocator, Adam state
            t = time.perf_counter()
            one_step(0, steps.pop(0))
            sync(args.device)
            warmup_s = time.perf_counter() - t
        if gpu:
            torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() / 2**30 if gpu else 0.0
        done, tokens, losses, t = 0, 0.0, [], time.perf_counter()
        for i, comps in enumerate(steps, start=1):
            stats = one_step(i, comps)
            sync(args.device)
            done, tokens = done + 1, tokens + stats["train_tokens"]
            losses.append(stats["loss"])
            if time.perf_counter() - t > cap:
                break
        seconds = time.perf_counter() - t
        mem, kind = peak_mem(gpu)
        report(
            part="train_step",
            engine="grpo.train_on_batch",
            steps=done,
            sequences=done * len(steps[0]),
            tokens=int(tokens),
            seconds=round(seconds, 3),
            tokens_per_s=round(tokens / max(seconds, 1e-9), 1),
            step_s=round(seconds / done, 3),
            warmup_s=None if warmup_s is None else round(warmup_s, 2),
            peak_mem_gib=round(mem, 3),
            mem_kind=kind,
            mem_before_gib=round(base, 3),
            bf16_autocast=use_bf16,
            micro_batch=args.micro_batch,
            capped=done < len(steps),
            loss_finite=all(map(math.isfinite, losses)),
        )

    # ---- 4. weight sync -------------------------------------------------------------------
    if engine is not None and not over_budget("sync_weights"):
        secs = []
        for _ in range(3):
            secs.append(engine.sync_weights(model))
            sync(args.device)
        report(
            part="sync_weights",
            engine="vllm",
            seconds=round(statistics.median(secs), 4),
            all_s=[round(s, 4) for s in secs],
            params_m=round(n_params / 1e6, 1),
        )
        engine.close()
    elif engine is None:
        report(
            part="sync_weights",
            engine="hf",
            seconds=0.0,
            note="HF engine samples with the training model: nothing to copy",
        )
    report(part="total", seconds=round(time.perf_counter() - t_start, 1))
    return report.rows


COLUMNS = [
    ("model", "model"),
    ("part", "part"),
    ("engine", "engine"),
    ("sequences", "seqs"),
    ("tokens", "tokens"),
    ("seconds", "seconds"),
    ("tokens_per_s", "tokens/s"),
    ("peak_mem_gib", "peak mem GiB"),
    ("notes", "notes"),
]


def notes(row: dict) -> str:
    if "skipped" in row:
        return "skipped: " + row["skipped"]
    keys = {
        "vllm_generate": ["engine_start_s", "mean_len", "truncated"],
        "hf_generate": ["mean_len", "truncated"],
        "train_step": ["steps", "step_s", "bf16_autocast", "mem_kind", "capped"],
        "sync_weights": ["all_s", "params_m", "note"],
    }.get(row["part"], [])
    return ", ".join(f"{k}={row[k]}" for k in keys if row.get(k) is not None)


def table(rows: list[dict]) -> str:
    rows = [r for r in rows if r.get("part") not in ("setup", "total")]
    lines = [
        "| " + " | ".join(h for _, h in COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for r in rows:
        cells = [notes(r) if k == "notes" else r.get(k, "") for k, _ in COLUMNS]
        lines.append("| " + " | ".join("" if c is None else str(c) for c in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    a = parse()
    if a.table:
        path = Path(a.table)
        rows = (
            [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if path.exists()
            else []
        )
        print(table(rows))
    else:
        print(table(run(a)))
