"""bench/gpu.sh: the CPU smoke mode (tiny model, HF generate + training step) and the SKIP path."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_bench_cpu_smoke(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", "bench/gpu.sh", "--device", "cpu", "--model", "tiny", "--max-new-tokens", "8"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "| model | part | engine | seqs | tokens | seconds | tokens/s | peak mem GiB |"
        in proc.stdout
    )
    rows = {
        r["part"]: r
        for r in map(json.loads, (tmp_path / "gpu_timing.jsonl").read_text().splitlines())
    }
    assert {"setup", "hf_generate", "train_step", "sync_weights", "total"} <= set(rows)
    hf, train = rows["hf_generate"], rows["train_step"]
    assert hf["engine"] == "hf" and hf["sequences"] == 4 and hf["tokens"] > 0
    assert hf["seconds"] > 0 and hf["tokens_per_s"] > 0
    assert train["steps"] >= 1 and train["tokens"] > 0 and train["seconds"] > 0
    assert train["tokens_per_s"] > 0 and train["peak_mem_gib"] > 0 and train["loss_finite"]
    assert train["mem_kind"] == "cpu_peak_rss" and train["bf16_autocast"] is False
    assert rows["sync_weights"]["engine"] == "hf"  # no vLLM on CPU: nothing to copy
    assert "vllm_generate" not in rows


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_bench_skips_without_gpu(tmp_path):
    proc = subprocess.run(
        ["bash", "bench/gpu.sh"],
        cwd=ROOT,
        env={**os.environ, "OUT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3 and "SKIP" in proc.stdout


def test_bench_programs_name_only_functions_that_exist():
    """Every `module.name` a bench program (bench/*.py, and the Python a bench/*.sh writes out)
    takes from a project module exists there: a function moved to another module (models.py ->
    engines.py) breaks a GPU check only on the GPU, so it is caught here."""
    import ast
    import importlib
    import re

    own = {p.stem for p in ROOT.glob("*.py")}
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in ROOT.glob("bench/*.py")}
    for sh in ROOT.glob("bench/*.sh"):
        for i, body in enumerate(re.findall(r"<<'PY'\n(.*?)\nPY\n", sh.read_text(), re.S)):
            sources[f"{sh.relative_to(ROOT)} (program {i + 1})"] = body
    missing = []
    for where, text in sources.items():
        tree = ast.parse(text)
        imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                    for a in n.names if a.name in own}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported
                    and not hasattr(importlib.import_module(node.value.id), node.attr)):
                missing.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    assert len(sources) > 10 and not missing, missing


def test_run_all_leaves_benchmarks_md_as_it_is(tmp_path):
    """bench/run_all.sh writes its tables to $OUT, never over BENCHMARKS.md (which holds notes,
    hand-run sections and the GPU timing). Run on a copy, with a stub `python` that prints a
    line per benchmark in place of 20 minutes of them."""
    repo = tmp_path / "repo"
    (repo / "bench").mkdir(parents=True)
    shutil.copy(ROOT / "bench" / "run_all.sh", repo / "bench" / "run_all.sh")
    kept = (ROOT / "BENCHMARKS.md").read_text()
    (repo / "BENCHMARKS.md").write_text(kept)
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "python").write_text('#!/bin/sh\necho "stub table for $*"\n')
    (stub / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}"}
    env.pop("OUT", None)
    proc = subprocess.run(["bash", "bench/run_all.sh"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "BENCHMARKS.md").read_text() == kept
    written = (repo / "runs" / "benchmarks" / "BENCHMARKS.md").read_text()
    assert "stub table for bench/grpo_vs_trl.py" in written and "## GPU timing" not in written
