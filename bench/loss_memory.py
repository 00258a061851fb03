"""Peak memory of one policy-loss step (forward + backward of sampled-token log-probs).

Three ways to get log π(x_t | x_<t) for a [1, T] sequence, each in a fresh process, measured as
the growth of peak RSS (VmHWM, reset after set-up through /proc/self/clear_refs) over the RSS
once the model and inputs exist:

* naive : full logits -> float32 log_softmax over the vocabulary -> gather (two [T, V] tensors)
* trl   : full logits -> `trl.trainer.utils.selective_log_softmax` (TRL's GRPOTrainer path)
* ours  : `models.token_logprobs`: LM head + log-softmax over a chunk of positions at a time
          (`models.auto_chunk_size`: ~40 MiB blocks), each chunk recomputed in backward
          (`models.HeadLogprobs`), so no [T, V] tensor exists
* ours@128: the same with a fixed 128-position chunk (the earlier default)

The model is a 2-layer random Llama (hidden 256) so that the vocabulary-sized tensors dominate,
as they do for long completions of small models.

Why chunk by bytes, not positions: glibc raises its mmap threshold after large frees (up to
32 MiB), so the ~25 MiB buffers of 128 positions x 49k vocabulary get carved from the heap and
fragment it: RSS grows with T although live tensors do not (`ours@128`). Blocks above 32 MiB
are always mmapped and go back to the OS on free, whatever the vocabulary.

    python bench/loss_memory.py            # prints a markdown table
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, torch
sys.path.insert(0, {root!r})
import models
method, T, V = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
model = models.tiny_model(vocab_size=V, hidden=256)
ids = torch.randint(0, V, (1, T)); attn = torch.ones_like(ids)
def status(key):   # kB, from /proc/self/status
    return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1])
open("/proc/self/clear_refs", "w").write("5")   # reset the peak-RSS mark (VmHWM) to now
base = status("VmRSS")
if method == "ours":
    logp = models.token_logprobs(model, ids, attn, chunk_size=int(sys.argv[4]) or None)[0]
else:
    logits = model(ids).logits[:, :-1]
    if method == "naive":
        logp = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    else:
        from trl.trainer.utils import selective_log_softmax
        logp = selective_log_softmax(logits, ids[:, 1:])
(-logp.mean()).backward()
print((status("VmHWM") - base) / 1024)
"""


def peak_mb(method: str, T: int, V: int) -> float:
    env = dict(os.environ)
    chunk = "0"  # 0: models.auto_chunk_size (~40 MiB blocks, always mmapped)
    if method == "ours@128":  # the old fixed 128-position chunk (25 MiB blocks at 49k vocab)
        method, chunk = "ours", "128"
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT)), method, str(T), str(V), chunk],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.split()[-1])


def main(lengths=(256, 1024, 4096), vocabs=(49152, 151936)):
    methods = ["naive", "ours@128", "ours"]
    try:
        import trl  # noqa: F401

        methods.insert(1, "trl")
    except ImportError:
        print("(trl not installed: `pip install -r bench/requirements.txt` adds the TRL column)")
    print(
        "| vocab | completion tokens | "
        + " | ".join(f"{m} peak MB" for m in methods)
        + " | ours / naive |\n|---|---|"
        + "---|" * (len(methods) + 1)
    )
    rows = []
    for V in vocabs:
        for T in lengths:
            r = {m: peak_mb(m, T, V) for m in methods}
            rows.append((V, T, r))
            print(
                f"| {V} | {T} | "
                + " | ".join(f"{r[m]:.0f}" for m in methods)
                + f" | {r['ours'] / r['naive']:.2f} |",
                flush=True,
            )
    return rows


if __name__ == "__main__":
    main()
