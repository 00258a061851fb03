"""GRPO step time and peak memory: our `grpo.py` against TRL's `GRPOTrainer`, same configuration.

Configuration (both): the embedded default model (SmolLM2-135M-Instruct), 2 prompts x 4
generations per step, 64 new tokens, temperature 1.0, beta 0, one iteration (on-policy), HF
`generate` for rollouts, AdamW lr 1e-6, float32 (`--bf16`: both under bf16 autocast), a dense
reward (share of digits in the completion) so every group carries signal, no zero-variance
filtering. `--vllm` also times ours with `--engine vllm` (the engine `engines.make_engine`
builds: bf16 on a CPU with bf16 math, else float32; its KV cache sized for the step's 8
rollouts). Each run is a fresh process; runs alternate (ours, TRL, ours, TRL, ...) so that load
on the machine hits both alike. The first step of each run is warm-up and is dropped; we report
the median step time over the rest, our step's generation / training / sync seconds,
generation and training tokens/s where the tool reports them, and peak RSS (VmHWM).

    pip install -r bench/requirements.txt
    python bench/grpo_vs_trl.py --repeats 2 --steps 4 [--vllm] [--bf16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPTS, GENERATIONS, NEW_TOKENS = 2, 4, 64
ENGINES = {"ours": "hf", "ours-vllm": "vllm"}  # our rollouts: HF generate, or vLLM
# the settings both trainers are given, under the same names
SAME = dict(
    num_generations=GENERATIONS,
    max_completion_length=NEW_TOKENS,
    beta=0.0,
    num_iterations=1,
    learning_rate=1e-6,
    temperature=1.0,
)


def digit_share(completion: str, *args, **kwargs) -> float:
    """Dense toy reward: fraction of characters that are digits."""
    return sum(ch.isdigit() for ch in completion) / max(len(completion), 1)


def peak_rss_mb() -> float:
    return (
        int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) / 1024
    )


def run_ours(steps: int, out: Path, engine: str = "hf", bf16: bool = False) -> dict:
    sys.path.insert(0, str(ROOT))
    import grpo
    import rewards

    rewards.REWARDS["digits"] = lambda completion, task, **kw: digit_share(completion)
    cfg = grpo.Config(
        rewards="digits",
        prompts_per_step=PROMPTS,
        max_steps=steps,
        **SAME,
        bf16="true" if bf16 else "false",
        filter_zero_variance=False,
        engine=engine,
        eval_problems=0,
        eval_every=10**9,
        save_steps=10**9,
        output_dir=str(out),
        overwrite=True,
        log_samples=0,
        math_levels="1",
    )
    grpo.train(cfg)
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    return {
        "step_s": [r["step_s"] for r in rows],
        **{k: [r.get(k, 0.0) for r in rows] for k in ("gen_s", "train_s", "sync_s")},
        "gen_tokens_per_s": [r.get("gen_tokens_per_s") for r in rows],
        "train_tokens_per_s": [r.get("train_tokens_per_s") for r in rows],
        "peak_rss_mb": peak_rss_mb(),
    }


def run_trl(steps: int, out: Path, bf16: bool = False) -> dict:
    import time

    sys.path.insert(0, str(ROOT))
    import datasets
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    import data
    import models

    model, tok = models.load_policy()
    tasks = data.math_tasks(PROMPTS * steps, "train", seed=0, levels=(1,))
    ds = datasets.Dataset.from_list([{"prompt": data.build_messages(t)} for t in tasks])
    times, gen_times, gen_tokens = [], [], []
    hf_generate = model.generate

    def timed_generate(*args, **kwargs):  # TRL calls the unwrapped model's generate on CPU
        t = time.perf_counter()
        out = hf_generate(*args, **kwargs)
        gen_times.append(time.perf_counter() - t)
        new = out[:, kwargs["input_ids"].shape[1] :] if "input_ids" in kwargs else out
        gen_tokens.append(int((new != tok.pad_token_id).sum()))
        return out

    model.generate = timed_generate

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t)

    def reward(completions, **kw):
        return [digit_share(c[0]["content"] if isinstance(c, list) else c) for c in completions]

    args = GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=PROMPTS * GENERATIONS,
        max_steps=steps,
        **SAME,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=bf16,
        gradient_checkpointing=False,
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=args,
        train_dataset=ds,
        processing_class=tok,
        callbacks=[StepTimer()],
    )
    trainer.train()
    # one generate call per step here (steps_per_generation = 1); training = step - generation
    n = min(len(times), len(gen_times))
    lengths = [
        h["completions/mean_length"]
        for h in trainer.state.log_history
        if "completions/mean_length" in h
    ]
    gen_tps = [k / g for k, g in zip(gen_tokens, gen_times)]
    train_tps = [
        PROMPTS * GENERATIONS * L / max(t - g, 1e-9)
        for L, t, g in zip(lengths, times[:n], gen_times[:n])
    ]
    return {
        "step_s": times,
        "gen_s": gen_times,
        "gen_tokens_per_s": gen_tps,
        "train_tokens_per_s": train_tps,
        "peak_rss_mb": peak_rss_mb(),
    }


def child(which: str, steps: int, bf16: bool):
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "run"
        res = (run_trl(steps, out, bf16) if which == "trl"
               else run_ours(steps, out, ENGINES[which], bf16))
    print("RESULT " + json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--child", choices=["ours", "ours-vllm", "trl"])
    ap.add_argument("--vllm", action="store_true", help="also time ours with --engine vllm")
    ap.add_argument("--bf16", action="store_true",
                    help="both trainers under bf16 autocast (default: float32, both)")
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.steps, a.bf16)
    results = {"ours": [], "trl": [], **({"ours-vllm": []} if a.vllm else {})}
    for r in range(a.repeats):
        for which in results:
            p = subprocess.run(
                [sys.executable, __file__, "--child", which, "--steps", str(a.steps)]
                + (["--bf16"] if a.bf16 else []),
                capture_output=True,
                text=True,
            )
            line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
            if line is None:
                raise RuntimeError(f"{which} run failed:\n{p.stderr[-3000:]}")
            res = json.loads(line[7:])
            results[which].append(res)
            parts = ", ".join(
                f"{k} {statistics.median(res[k][1:]):.2f}"
                for k in ("gen_s", "train_s", "sync_s")
                if k in res and res[k][1:]
            )
            print(
                f"repeat {r} {which}: steps {['%.1f' % s for s in res['step_s']]} s, "
                f"peak RSS {res['peak_rss_mb']:.0f} MB" + (f" (median {parts} s)" if parts else ""),
                flush=True,
            )
    med = {
        w: statistics.median(s for res in rs for s in res["step_s"][1:])
        for w, rs in results.items()
    }
    rss = {w: statistics.median(res["peak_rss_mb"] for res in rs) for w, rs in results.items()}

    def tps(which, key):
        xs = [x for res in results[which] for x in res[key][1:] if x]
        return statistics.median(xs) if xs else float("nan")

    gen = {w: tps(w, "gen_tokens_per_s") for w in results}
    trn = {w: tps(w, "train_tokens_per_s") for w in results}
    cols = [w for w in ("ours", "ours-vllm") if w in results]
    name = {"ours": "ours (grpo.py, HF generate)", "ours-vllm": "ours (grpo.py, vLLM)"}
    print(
        "\n| | "
        + " | ".join(name[w] for w in cols)
        + " | TRL GRPOTrainer | "
        + " | ".join(f"{name[w].split(', ')[1][:-1]} / TRL" for w in cols)
        + " |"
    )
    print("|---" * (2 + 2 * len(cols)) + "|")
    for label, d, fmt in (
        ("median step time (s)", med, ".2f"),
        ("peak RSS (MB)", rss, ".0f"),
        ("generation tokens/s", gen, ".0f"),
        ("training tokens/s (completion tokens / non-generation time)", trn, ".0f"),
    ):
        print(
            f"| {label} | "
            + " | ".join(f"{d[w]:{fmt}}" for w in cols)
            + f" | {d['trl']:{fmt}} | "
            + " | ".join(f"{d[w] / d['trl']:.2f}" for w in cols)
            + " |"
        )


if __name__ == "__main__":
    main()
