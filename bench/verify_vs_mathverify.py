"""Benchmark: `rewards.verify_math` against math-verify on the same hand-written cases.

math-verify is used as its README recommends: the gold wrapped in `\\boxed{}` and parsed, the
whole completion parsed with the default extraction, `verify(gold, prediction)` in that order.

    python bench/verify_vs_mathverify.py            # markdown table on stdout
    python bench/verify_vs_mathverify.py --errors   # also list the cases each one gets wrong
    python bench/verify_vs_mathverify.py --write BENCHMARKS.md   # append the table there

Reported per verifier: accuracy, false accepts (said True, should be False), false rejects,
mean / p95 / max time per case (wall clock, first call included: our worker process boots
in the background during the first call).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from math_cases import CASES  # noqa: E402


def mathverify_readme(completion: str, gold: str) -> bool:
    from math_verify import parse, verify

    try:
        return bool(verify(parse("\\boxed{" + gold + "}"), parse(completion)))
    except Exception:  # noqa: BLE001
        return False


def run(name: str, fn, cases) -> dict:
    times, fa, fr, errors = [], 0, 0, []
    for cat, completion, gold, expected in cases:
        t = time.perf_counter()
        got = fn(completion, gold)
        times.append(time.perf_counter() - t)
        if got != expected:
            fa += got and not expected
            fr += expected and not got
            errors.append((cat, completion[-120:], gold, expected))
    times_sorted = sorted(times)
    return {
        "name": name,
        "n": len(cases),
        "accuracy": 1 - (fa + fr) / len(cases),
        "false_accepts": fa,
        "false_rejects": fr,
        "mean_ms": 1000 * statistics.mean(times),
        "p95_ms": 1000 * times_sorted[int(0.95 * (len(times) - 1))],
        "max_ms": 1000 * times_sorted[-1],
        "errors": errors,
    }


def table(rows: list[dict]) -> str:
    out = [
        "| verifier | cases | accuracy | false accepts | false rejects "
        "| mean ms | p95 ms | max ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['name']} | {r['n']} | {100 * r['accuracy']:.1f}% | {r['false_accepts']} | "
            f"{r['false_rejects']} | {r['mean_ms']:.2f} | {r['p95_ms']:.2f} | {r['max_ms']:.0f} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--errors", action="store_true", help="list the cases each verifier gets wrong")
    ap.add_argument("--write", default=None, help="append the table to this markdown file")
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)
    import math_verify  # noqa: F401  (import time not counted for either side)

    import rewards

    rows = [
        run("math-verify (README usage)", mathverify_readme, CASES),
        run("rewards.verify_math", rewards.verify_math, CASES),
    ]
    text = "## verify_math vs math-verify\n\n" + table(rows) + "\n"
    print(text)
    if args.errors:
        for r in rows:
            print(f"\n### {r['name']}: {len(r['errors'])} wrong")
            for cat, comp, gold, exp in r["errors"]:
                print(f"- [{cat}] expected {exp}: gold `{gold}` completion `...{comp}`")
    if args.write:
        with open(args.write, "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
