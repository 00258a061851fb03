#!/usr/bin/env bash
# GPU timing of a GRPO step's parts on real models: vLLM rollout tokens/s (HF generate as the
# comparison), the training step (grpo.train_on_batch, bf16 autocast) tokens/s and peak GPU
# memory, and sync_weights seconds. Prints a markdown table; JSON lines in $OUT/gpu_timing.jsonl.
#
#   bash bench/gpu.sh                          # on a machine with an NVIDIA GPU (< 8 min, one H200)
#   bash bench/gpu.sh --device cpu --model tiny   # CPU smoke test: HF generate + training step
#
# Sizes (bench/gpu_timing.py): 64 prompts x 8 samples, 512 new tokens, temperature 1.0 for vLLM;
# 8 prompts x 8 samples for HF generate; training in GRPO steps of 8 x 8 completions, micro-batch
# 16, capped at 60 s. Models, one fresh process each (vLLM keeps process-wide state):
#   smollm2     the embedded SmolLM2-135M-Instruct (no download)
#   qwen3-1.7b  random init of Qwen3-1.7B's shape from a config (no download)
# Env: GPU_BENCH_MODELS (default "smollm2 qwen3-1.7b"), GPU_BENCH_ARGS (extra arguments for
# gpu_timing.py, e.g. "--enforce-eager --max-new-tokens 256"), GPU_BENCH_BUDGET_S (whole-run
# limit, default 450), PYTHON, WHEELS, OUT (default runs/gpu_timing).
# vLLM is found as bench/gpu_vllm_check.sh does: importable, else installed only from wheels in
# $WHEELS (default .whl/); without it the vLLM rows say "skipped" and the rest still runs.
# Without an NVIDIA GPU it prints SKIP and exits 3 (unless --device cpu is given).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-runs/gpu_timing}"; mkdir -p "$OUT"; export OUT
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export VLLM_ENABLE_V1_MULTIPROCESSING=0

case " $* " in
  *" --device cpu "*|*" --device=cpu "*)        # smoke mode: no GPU, no vLLM
    "$PY" bench/gpu_timing.py --no-vllm "$@"; exit $? ;;
esac

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
  echo "SKIP: no NVIDIA GPU (nvidia-smi failed)"; exit 3; }
if ! "$PY" -c "import vllm" 2>/dev/null; then
  WHEELS="${WHEELS:-.whl}"
  if [ -d "$WHEELS" ]; then
    "$PY" -m pip install -q --no-index --find-links "$WHEELS" vllm 2>&1 | tail -5
  fi
  "$PY" -c "import vllm" 2>/dev/null || echo "[gpu.sh] vLLM does not import with $PY: vLLM rows will be skipped"
fi

BUDGET="${GPU_BENCH_BUDGET_S:-450}"
: > "$OUT/gpu_timing.jsonl"
rc=0
for model in ${GPU_BENCH_MODELS:-smollm2 qwen3-1.7b}; do
  case "$model" in qwen3-1.7b) cap=240 ;; *) cap=180 ;; esac   # hard cap per process
  left=$(( BUDGET - SECONDS ))
  [ "$cap" -gt "$left" ] && cap=$left
  if [ "$cap" -lt 60 ]; then
    echo "{\"model\": \"$model\", \"part\": \"all\", \"skipped\": \"whole-run budget ${BUDGET} s spent\"}" \
      | tee -a "$OUT/gpu_timing.jsonl"
    continue
  fi
  echo "[gpu.sh] $model (hard cap ${cap} s)"
  # the process skips parts after 85% of its cap, so the hard kill is the last resort
  # shellcheck disable=SC2086
  timeout "$cap" "$PY" bench/gpu_timing.py --model "$model" --budget-s $(( cap * 85 / 100 )) \
    ${GPU_BENCH_ARGS:-} "$@" 2>&1 | grep -v "^INFO\|^(EngineCore\|^(MainProcess.*INFO"
  st=${PIPESTATUS[0]}
  [ "$st" -ne 0 ] && echo "[gpu.sh] $model exited $st (124: hit the ${cap} s cap)"
  rc=$(( rc | st ))
done
echo
echo "## GPU timing ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), ${SECONDS} s)"
echo
"$PY" bench/gpu_timing.py --table "$OUT/gpu_timing.jsonl"
echo "[gpu.sh] rc=$rc; results in $OUT/gpu_timing.jsonl"
exit $rc
