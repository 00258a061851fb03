"""Makes an AVX-512 host run like an AVX2-only one, to measure the demo where no such host is
at hand:

    PYTHONPATH=bench/avx2_host python pipeline.py --output_dir runs/avx2-proxy

Python imports `sitecustomize` from PYTHONPATH at start-up, in every process. This one
* sets ATEN_CPU_CAPABILITY=avx2 (PyTorch's own kernels) and ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN's
  matmuls and convolutions), and
* makes torch report no AVX-512, AVX512-BF16, VNNI or AMX, so `models.bf16_supported()` is
  False (float32 training, a float32 vLLM engine) and vLLM loads its AVX2 kernels (`_C_AVX2`).
It keeps the host's cores, clock, caches and memory bandwidth: a real AVX2 host (an older EPYC
or Xeon) may be slower still. Check: `PYTHONPATH=bench/avx2_host python -c "import torch;
print(torch.backends.cpu.get_cpu_capability())"` prints AVX2.
"""
import os

os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
try:
    import torch

    for name in ("_is_avx512_supported", "_is_avx512_vnni_supported",
                 "_is_avx512_bf16_supported", "_is_amx_tile_supported", "_is_amx_fp16_supported"):
        for where in (torch.cpu, torch._C._cpu):
            if hasattr(where, name):
                setattr(where, name, lambda: False)
except ImportError:   # an interpreter without torch (the code sandbox's) starts as usual
    pass
