"""vLLM's KV block size on CPU: how much prefill the prefix cache saves, side by side.

vLLM's prefix cache shares whole KV blocks only. With the CPU attention's default block of 128
tokens, a 50-token prompt fills no block, so each of a GRPO group's n samples prefills it
anew; with blocks of 32 (`engines.VLLMEngine` on CPU) the samples share its first 32 tokens,
and every prompt shares the chat template's opening. Each block size runs in a fresh process
(one engine per process); per repeat it times, on the same prompts and seeds:
  * rollouts: 8 level-1 math prompts (the demo's families) x 8 samples, T 1.0, 96 new tokens;
  * prefill: the same 8 x 8 with one new token (nearly all prefill);
  * greedy: 64 distinct prompts, one greedy answer each, 96 new tokens (an evaluation).
The table gives the median over the repeats after the first (warm-up), and the tokens the
rollouts generated (equal across block sizes: the same samples).

    python bench/vllm_block_size.py [--block_sizes 128,32] [--repeats 3] [--checkpoint DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import data  # noqa: E402
import engines  # noqa: E402
import models  # noqa: E402


def child(block_size: int, repeats: int, checkpoint: str):
    import vllm

    real = vllm.LLM
    vllm.LLM = lambda *a, **k: real(*a, **{**k, "block_size": block_size})
    model, tok = models.load_policy(checkpoint or None)
    engine = engines.make_engine("vllm", model, tok, max_model_len=256)
    tasks = data.math_tasks(64, "train", 0, ["arithmetic", "percent"], (1,))
    prompts = data.prompt_ids(tok, tasks)
    times = {"rollouts": [], "prefill": [], "greedy": []}
    tokens = []
    for rep in range(repeats):
        for name, ps, params in (
            ("rollouts", prompts[:8], engines.SamplingParams(8, 1.0, max_new_tokens=96, seed=rep)),
            ("prefill", prompts[:8], engines.SamplingParams(8, 1.0, max_new_tokens=1, seed=rep)),
            ("greedy", prompts, engines.SamplingParams(1, 0.0, max_new_tokens=96)),
        ):
            t = time.perf_counter()
            out = engine.generate(ps, params)
            times[name].append(time.perf_counter() - t)
            if name == "rollouts":
                tokens.append(sum(len(c.completion_ids) for c in out))
    block = engine.llm.llm_engine.vllm_config.cache_config.block_size   # what vLLM used
    print("RESULT " + json.dumps({"times": times, "tokens": tokens, "block": block}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block_sizes", default="128,32")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--checkpoint", default="", help="default: the embedded model")
    ap.add_argument("--child", type=int, default=0)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.repeats, a.checkpoint)
    rows = {}
    for bs in (int(b) for b in a.block_sizes.split(",")):
        p = subprocess.run([sys.executable, __file__, "--child", str(bs), "--repeats",
                            str(a.repeats), "--checkpoint", a.checkpoint],
                           capture_output=True, text=True)
        line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
        if line is None:
            raise SystemExit(f"block size {bs} failed:\n{p.stderr[-2000:]}")
        rows[bs] = json.loads(line[7:])
    print("| KV block (tokens) | rollouts 8 x 8 s | prefill 8 x 8 s | greedy 64 s "
          "| rollout tokens |")
    print("|---|---|---|---|---|")
    for bs, r in rows.items():
        med = {k: statistics.median(v[1:] or v) for k, v in r["times"].items()}
        print(f"| {r['block']} | {med['rollouts']:.2f} | {med['prefill']:.2f} "
              f"| {med['greedy']:.2f} | {' / '.join(map(str, r['tokens']))} |")


if __name__ == "__main__":
    main()
