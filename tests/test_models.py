"""models.py and engines.py: embedded default model, tiny models, chunked log-probs; sampling and
the thinking budget (engines.py)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import ROOT

import distributed
import engines
import models
import runs
from engines import Completion, SamplingParams


def test_default_model_loads_offline_and_generates(tokenizer):
    model, tok = models.load_policy()  # HF_HUB_OFFLINE=1 is set by conftest
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 30
    assert (models.cache_dir() / "smollm2-135m-instruct" / "model.safetensors").exists()
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is 2+3?"}], add_generation_prompt=True, tokenize=True
    )
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    out = engines.HFEngine(model, tok).generate(
        [ids], SamplingParams(temperature=0, max_new_tokens=20)
    )
    assert len(out) == 1 and out[0].text.strip()
    assert "5" in out[0].text  # the greedy answer of the embedded model


@pytest.mark.parametrize("name,model_type", [("tiny", "llama"), ("tiny-qwen3", "qwen3")])
def test_tiny_models(name, model_type, tokenizer):
    model, tok = models.load_policy(name)
    assert model.config.model_type == model_type
    assert model.config.vocab_size == len(tok) and model.config.head_dim == 64
    assert sum(p.numel() for p in model.parameters()) < 10_000_000
    logits = model(torch.tensor([[1, 2, 3]])).logits
    assert logits.shape == (1, 3, len(tok))


def test_sampling_n_per_prompt_order_and_truncation(tiny, tokenizer):
    eng = engines.HFEngine(tiny, tokenizer, batch_size=3)
    prompts = [[1, 5, 9], [1, 7]]
    out = eng.generate(prompts, SamplingParams(n=3, temperature=1.0, max_new_tokens=6, seed=0))
    assert [c.prompt_index for c in out] == [0, 0, 0, 1, 1, 1]
    assert [c.prompt_ids for c in out] == [prompts[0]] * 3 + [prompts[1]] * 3
    # a random model rarely says EOS within 6 tokens: those are truncated at exactly 6 tokens
    for c in out:
        assert c.truncated == (
            len(c.completion_ids) == 6 and c.completion_ids[-1] not in eng.stop_ids
        )
    # Declare the greedy first token a stop token: generation stops there and is not truncated.
    greedy = eng.generate([prompts[0]], SamplingParams(temperature=0, max_new_tokens=4))[0]
    eng.stop_ids = sorted(set(eng.stop_ids) | {greedy.completion_ids[0]})
    stopped = eng.generate([prompts[0]], SamplingParams(temperature=0, max_new_tokens=4))[0]
    assert stopped.completion_ids == greedy.completion_ids[:1] and not stopped.truncated
    assert stopped.text == ""  # the stop token is not part of the text


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_shared_prompt_prefill_leaves_the_samples_unchanged(tokenizer, monkeypatch, arch):
    """n samples per prompt: each distinct prompt is prefilled once, and the samples equal
    those of the unshared prefill (same seed), for prompts of different lengths (left padding)."""
    model = models.tiny_model(arch, vocab_size=len(tokenizer))
    eng = engines.HFEngine(model, tokenizer, batch_size=8)
    prompts = [[1, 5, 9, 11, 40], [1, 7], [3, 3, 3]]
    calls = []
    real = engines.shared_prompt_cache
    monkeypatch.setattr(
        engines, "shared_prompt_cache", lambda m, i, a: calls.append(len(i)) or real(m, i, a)
    )
    shared = eng.generate(prompts, SamplingParams(n=3, temperature=1.0, max_new_tokens=7, seed=5))
    greedy = eng.generate(prompts, SamplingParams(n=2, temperature=0, max_new_tokens=7))
    two = torch.tensor([[1, 5, 9], [1, 5, 9], [1, 5, 9]])
    cache = real(model, two, torch.ones_like(two))[
        models.cache_key(model)
    ]  # 3 rows, one prefill of 1 row
    assert cache.get_seq_length() == 3 and cache.layers[0].keys.shape[0] == 3
    distinct = two[:, :2] + torch.tensor([[0], [1], [2]])
    assert real(model, distinct, torch.ones_like(distinct)) == {}
    monkeypatch.setattr(distributed, "world_size", lambda: 2)  # torchrun: every rank prefills alike
    assert (
        real(model, distinct, torch.ones_like(distinct))[models.cache_key(model)]
        .layers[0]
        .keys.shape[0]
        == 3
    )
    monkeypatch.setattr(distributed, "world_size", lambda: 1)
    monkeypatch.setattr(engines, "shared_prompt_cache", lambda m, i, a: {})
    plain = eng.generate(prompts, SamplingParams(n=3, temperature=1.0, max_new_tokens=7, seed=5))
    plain_greedy = eng.generate(prompts, SamplingParams(n=2, temperature=0, max_new_tokens=7))
    assert calls == [8, 1, 6]  # batches of 8 + 1 rows, then 6
    assert [c.completion_ids for c in shared] == [c.completion_ids for c in plain]
    assert [c.completion_ids for c in greedy] == [c.completion_ids for c in plain_greedy]
    assert len({tuple(c.completion_ids) for c in shared}) > 3  # sampled, not all alike


def test_sampling_is_seeded(tiny, tokenizer):
    eng = engines.HFEngine(tiny, tokenizer)
    a = eng.generate([[1, 5]], SamplingParams(n=2, max_new_tokens=5, seed=3))
    b = eng.generate([[1, 5]], SamplingParams(n=2, max_new_tokens=5, seed=3))
    assert [c.completion_ids for c in a] == [c.completion_ids for c in b]


class ScriptedEngine:
    """Returns pre-written texts, one token per character, to test the budget logic exactly."""

    def __init__(self, tokenizer, first: list[str], second: list[str], eos_first: list[bool]):
        self.tokenizer, self.stop_ids = tokenizer, [tokenizer.eos_token_id]
        self.first, self.second, self.eos_first, self.calls = first, second, eos_first, []

    def generate(self, prompts, params):
        self.calls.append((prompts, params))
        if len(self.calls) == 1:
            outs = []
            for i, (text, eos) in enumerate(zip(self.first, self.eos_first)):
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                ids = ids + [self.tokenizer.eos_token_id] if eos else ids
                outs.append(Completion(i, prompts[i], ids, text, truncated=not eos))
            return outs
        return [
            Completion(
                i,
                p,
                self.tokenizer(self.second[i], add_special_tokens=False)["input_ids"]
                + [self.tokenizer.eos_token_id],
                self.second[i],
                truncated=False,
            )
            for i, p in enumerate(prompts)
        ]


def test_thinking_budget_inserts_stop_text_once_and_only_when_needed(tokenizer):
    first = [
        "<think>I am still thinking about",  # over budget, think open -> insert
        "<think>done</think>\n\nThe answer",  # over budget, think closed -> continue only
        "<think>short</think>\n\n42",  # finished in budget -> untouched
        "I never opened a think block but",
    ]  # over budget, no </think> -> insert
    eng = ScriptedEngine(
        tokenizer,
        first,
        ["\\boxed{1}", " is 7.", "x", "\\boxed{2}"],
        eos_first=[False, False, True, False],
    )
    out = engines.generate_with_thinking_budget(
        eng, [[1]] * 4, SamplingParams(max_new_tokens=50), thinking_budget=10
    )
    texts = [c.text for c in out]
    assert [t.count("Considering the limited time") for t in texts] == [1, 0, 0, 1]
    assert texts[0] == first[0] + engines.STOP_THINKING + "\\boxed{1}"
    assert texts[1] == first[1] + " is 7."
    assert texts[2] == first[2]
    # only the three unfinished samples were continued, with the remaining 40 tokens
    assert len(eng.calls[1][0]) == 3 and eng.calls[1][1].max_new_tokens == 40
    stop_len = len(tokenizer(engines.STOP_THINKING, add_special_tokens=False)["input_ids"])
    assert out[0].sampled_mask.count(0) == stop_len and out[1].sampled_mask.count(0) == 0
    assert all(len(c.sampled_mask) == len(c.completion_ids) for c in out)


def test_thinking_budget_real_model_inserts_exactly_once(tiny, tokenizer):
    eng = engines.HFEngine(tiny, tokenizer)
    out = engines.generate_with_thinking_budget(
        eng, [[1, 5, 9]], SamplingParams(n=2, max_new_tokens=12, seed=0), thinking_budget=4
    )
    for c in out:  # a random model never writes </think>: the stop text goes in once
        assert c.text.count("Considering the limited time") == 1
        assert len(c.completion_ids) == len(c.sampled_mask)


def naive_logprobs(model, input_ids, attention_mask, temperature):
    pos = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=pos).logits
    logp = torch.log_softmax(logits[:, :-1].float() / temperature, -1)
    tok = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    return tok, ent


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_shared_prompt_logprobs_equal_the_unshared_pass(arch):
    """Two groups of rollouts (prompts of different lengths: left padding), rows interleaved,
    completions of 11, 3 and 1 tokens packed into one row and 2, 6 and 0 into another:
    log-probs, entropies and every parameter's gradient match the full pass, which runs each
    prompt once per row and pads every completion to the longest; past a completion's end the
    packed pass gives 0."""
    model = models.tiny_model(arch, vocab_size=500)
    prompts = [[1, 4, 9, 200, 7], [1, 8, 3]]
    rows = [0, 1, 0, 0, 1, 1]  # prompt of each row
    comps = [list(range(100, 111)), [300, 301], [120, 121, 122], [5], list(range(400, 406)), []]
    assert [len(m) for _, m in models.pack_completions([11, 2, 3, 1, 6, 0], rows, 22)] == [3, 3]
    ids, attn, comp = models.pad_batch([prompts[r] for r in rows], comps, pad_id=2)
    p_len = 5
    params = [p for p in model.parameters()]

    def run(fn):
        model.zero_grad()
        lp, ent = fn()
        mask = comp[:, p_len:].bool()
        (lp[mask].sum() + 0.3 * ent[mask].sum()).backward()
        return lp.detach(), ent.detach(), [p.grad.clone() for p in params], mask

    lp, ent, grads, mask = run(
        lambda: models.token_logprobs(model, ids, attn, 0.7, with_entropy=True, start=p_len - 1)
    )
    lp2, ent2, grads2, _ = run(
        lambda: models.shared_prompt_logprobs(model, ids, attn, p_len, 0.7, with_entropy=True)
    )
    assert lp.shape == lp2.shape == (6, ids.shape[1] - p_len)
    assert not lp2[~mask].any() and not ent2[~mask].any()
    assert torch.allclose(lp[mask], lp2[mask], atol=1e-5) and torch.allclose(
        ent[mask], ent2[mask], atol=1e-5
    )
    for g, g2 in zip(grads, grads2):
        assert torch.allclose(g, g2, atol=1e-5)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunked_logprobs_equal_naive(tiny, temperature):
    torch.manual_seed(0)
    ids, attn, _ = models.pad_batch(
        [[1, 4, 9, 2000], [1, 7]], [list(range(100, 137)), list(range(300, 310))], pad_id=2
    )
    lp, ent = models.token_logprobs(tiny, ids, attn, temperature, chunk_size=8, with_entropy=True)
    ref_lp, ref_ent = naive_logprobs(tiny, ids, attn, temperature)
    mask = attn[:, 1:].bool()
    assert torch.allclose(lp[mask], ref_lp[mask], atol=1e-5)
    assert torch.allclose(ent[mask], ref_ent[mask], atol=1e-5)
    # gradients through the fused head's recomputed chunks equal the naive ones too
    tiny.zero_grad()
    (lp[mask].sum() + ent[mask].sum()).backward()
    g = tiny.model.layers[0].mlp.up_proj.weight.grad.clone()
    tiny.zero_grad()
    ref_lp, ref_ent = naive_logprobs(tiny, ids, attn, temperature)
    (ref_lp[mask].sum() + ref_ent[mask].sum()).backward()
    assert torch.allclose(g, tiny.model.layers[0].mlp.up_proj.weight.grad, atol=1e-5)
    tiny.zero_grad()


def test_pad_batch_layout():
    ids, attn, comp = models.pad_batch([[5, 6], [7]], [[8], [9, 10]], pad_id=0)
    assert ids.tolist() == [[5, 6, 8, 0], [0, 7, 9, 10]]
    assert attn.tolist() == [[1, 1, 1, 0], [0, 1, 1, 1]]
    assert comp.tolist() == [[0, 0, 1, 0], [0, 0, 1, 1]]


PEAK = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {root!r})
    import models
    def status(key):   # kB, from /proc/self/status
        return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1])
    torch.manual_seed(0)
    model = models.tiny_model()
    ids = torch.randint(0, 49152, (1, 2048)); attn = torch.ones_like(ids)
    open("/proc/self/clear_refs", "w").write("5")   # reset the peak-RSS mark (VmHWM) to now
    base = status("VmRSS")
    with torch.no_grad():
        if sys.argv[1] == "naive":
            logp = torch.log_softmax(model(ids).logits.float(), -1)
            out = logp[:, :-1].gather(-1, ids[:, 1:, None])
        else:
            out = models.token_logprobs(model, ids, attn, chunk_size=128)[0]
    print((status("VmHWM") - base) // 1024)
""")


def test_chunked_logprobs_use_less_peak_memory():
    script = PEAK.format(root=str(ROOT))
    # A fixed glibc mmap threshold keeps freed chunk buffers from fragmenting the heap, so RSS
    # measures live tensors and not the allocator's dynamic threshold (bench/loss_memory.py).
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(4 << 20)}
    peak = {
        k: int(
            subprocess.run(
                [sys.executable, "-c", script, k],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout.split()[-1]
        )
        for k in ("naive", "chunked")
    }
    # naive holds [1, 2048, 49152] float32 logits and log-probs (~400 MB each); growth in MB
    assert peak["naive"] > 500 and peak["chunked"] < peak["naive"] / 4, peak


def test_checkpoint_is_atomic_and_loadable(tmp_path, tiny, tokenizer):
    from transformers import AutoModelForCausalLM

    run = runs.RunDir(tmp_path / "run", config={"lr": 1e-6})
    run.save(tiny, tokenizer, {"step": 3, "data_position": 12})
    assert json.loads((tmp_path / "run" / "config.json").read_text()) == {"lr": 1e-6}
    reloaded = AutoModelForCausalLM.from_pretrained(run.checkpoint)
    for (n, a), (_, b) in zip(tiny.state_dict().items(), reloaded.state_dict().items()):
        assert torch.equal(a, b), n
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    run.save(tiny, tokenizer, {"step": 4})  # saving twice swaps the folder in place
    assert run.load_state()["step"] == 4
    assert torch.equal(torch.rand(3), expected)  # RNG restored to the saved point
    assert not list((tmp_path / "run").glob(".checkpoint-*"))  # no temp folders left behind


def test_run_dir_metrics_and_resume_truncation(tmp_path):
    run = runs.RunDir(tmp_path / "r")
    for step in range(1, 6):
        run.log({"step": step, "reward": step / 10})
    run.truncate_metrics(3)
    assert [m["step"] for m in run.metrics()] == [1, 2, 3]
    assert run.plot(["reward"]).exists()


def test_engine_selection_errors(tiny, tokenizer, monkeypatch):
    assert engines.make_engine("auto", tiny, tokenizer).name == "hf"  # no GPU here
    with pytest.raises(ValueError, match="auto, hf, vllm"):
        engines.make_engine("sglang", tiny, tokenizer)


def test_auto_chunk_size_keeps_blocks_above_glibc_mmap_threshold():
    # 40 MiB / (4 B x batch x vocab), rounded up: 41943040 / 196608 = 213.3 -> 214
    assert models.auto_chunk_size(1, 49152) == 214
    assert models.auto_chunk_size(1, 151936) == 70  # 41943040 / 607744 = 69.01
    assert models.auto_chunk_size(64, 49152) == 16  # 3.3 -> the floor of 16 positions
    assert 4 * 214 * 49152 > 32 << 20  # above glibc's 32 MiB dynamic cap


def test_hf_engine_top_k_zero_samples_the_full_distribution(tiny, tokenizer):
    """top_k <= 0 means no truncation (as in vLLM). transformers fills an unset top_k with 50,
    so a near-uniform random model sampled 300 times must show more than 50 distinct tokens;
    with top_k=5 at most 5 appear."""
    eng = engines.HFEngine(tiny, tokenizer, batch_size=300)
    ids = tokenizer("Hello", add_special_tokens=False)["input_ids"]
    first = lambda k: {
        c.completion_ids[0]
        for c in eng.generate(
            [ids],
            engines.SamplingParams(
                n=300, temperature=1.0, top_p=1.0, top_k=k, max_new_tokens=1, seed=0
            ),
        )
    }
    assert len(first(0)) > 50
    assert len(first(5)) <= 5
