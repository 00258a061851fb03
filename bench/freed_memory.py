"""Page faults in a GRPO update under three allocators, before and after a vLLM engine joins
the process (as in `grpo.py`, `pipeline.py`): glibc's default malloc, glibc serving every
allocation from its heap, and tcmalloc (what the scripts preload: `cli.tcmalloc_env`).

Each mode runs in a fresh process: the embedded model, one update (`grpo.train_on_batch`,
bf16 where the CPU has it) on 4 prompts x 8 completions (bench/shared_prompt.py's batch), timed
`REPEATS` times after a warm-up; then `engines.make_engine` starts vLLM on the same model and
the update is timed again. Printed per update: wall seconds, system (kernel) seconds, minor
page faults. glibc's default maps every block above 32 MiB afresh and unmaps it on free, so
each update faults in about a million pages. `heap` mode (glibc's `mallopt`: M_MMAP_MAX 0,
M_TRIM_THRESHOLD 1 GiB) keeps freed pages for reuse, and lets a long run's heap grow (see
BENCHMARKS.md); tcmalloc keeps them in its caches.

    python bench/freed_memory.py          # a markdown table, ~4 minutes on 2 cores
"""
from __future__ import annotations

import ctypes.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 3

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import ctypes
if sys.argv[1] == "heap":
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(-4, 0)          # M_MMAP_MAX: no block of its own mapping
    libc.mallopt(-1, 1 << 30)    # M_TRIM_THRESHOLD: keep up to 1 GiB freed at the heap's top
import engines, grpo, models
from shared_prompt import batch
model, tok = models.load_policy(None)
opt = __import__("torch").optim.AdamW(model.parameters(), lr=0.0)
ids, attn, mask, adv, _ = batch(tok, 8, prompts=4)
cfg = grpo.parse(["--bf16", "auto"])
def update():
    f0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, os.times(), time.perf_counter()
    grpo.train_on_batch(model, opt, None, ids, attn, mask, adv, None, cfg, 0.0, 0.0, 96, 0, {{}})
    return (time.perf_counter() - t0, os.times().system - c0.system,
            resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
update()
before = [update() for _ in range({repeats})]
engine = engines.make_engine("auto", model, tok, max_model_len=512)
update()
after = [update() for _ in range({repeats})]
print("RESULT", json.dumps([before, after]))
"""


def measure(mode: str) -> tuple[list, list]:
    code = CHILD.format(root=str(ROOT), bench=str(ROOT / "bench"), repeats=REPEATS)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if mode == "tcmalloc":
        env["LD_PRELOAD"] = ctypes.util.find_library("tcmalloc_minimal") or ""
    out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True,
                         env=env)
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(line[len("RESULT"):])


def main():
    print("| malloc | vLLM engine in the process | update s (median) | system s | page faults |")
    print("|---|---|---|---|---|")
    modes = ["default", "heap"]
    if ctypes.util.find_library("tcmalloc_minimal"):
        modes.append("tcmalloc")
    else:
        print("(no tcmalloc here: `apt-get install libtcmalloc-minimal4` adds its rows)")
    for mode in modes:
        for engine, runs in zip(("no", "yes"), measure(mode)):
            wall, system, faults = (statistics.median(r[i] for r in runs) for i in range(3))
            name = {"default": "glibc, default", "heap": "glibc, heap only"}.get(mode, mode)
            print(f"| {name} | {engine} | {wall:.1f} | {system:.1f} | {faults:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
