"""distill.py: divergences against hand-computed numbers, top-k, chunking, layer dropping, and
short tiny-model runs (on-policy KL reduction, off-policy filtering, resume)."""

import json
import math

import pytest
import torch

import distill
import distill_run
import engines
import models
import runs
import training

# p_T = (1/2, 1/4, 1/4), p_S = (1/8, 1/2, 3/8): the worked example of distill.py's docstrings.
P_T = torch.tensor([1 / 2, 1 / 4, 1 / 4], dtype=torch.float64).log()
P_S = torch.tensor([1 / 8, 1 / 2, 3 / 8], dtype=torch.float64).log()
LN2, LN3, LN5, LN7 = math.log(2), math.log(3), math.log(5), math.log(7)


def test_forward_and_reverse_kl_hand_computed():
    # KL(T||S) = 1/2 ln 4 + 1/4 ln(1/2) + 1/4 ln(2/3) = ln 2 - ln 3 / 4
    assert distill.forward_kl(P_S, P_T).item() == pytest.approx(LN2 - LN3 / 4, abs=1e-12)
    # KL(S||T) = 1/8 ln(1/4) + 1/2 ln 2 + 3/8 ln(3/2) = 3/8 ln 3 - 1/8 ln 2
    assert distill.reverse_kl(P_S, P_T).item() == pytest.approx(3 * LN3 / 8 - LN2 / 8, abs=1e-12)


def test_generalized_jsd_hand_computed():
    # β = 1/2: M = (5/16, 3/8, 5/16); KL(T||M) = 9/4 ln2 - 3/4 ln5 - 1/4 ln3,
    # KL(S||M) = 3/2 ln2 - 1/2 ln5 - 1/8 ln3; JSD = ½ KL(T||M) + ½ KL(S||M)
    kl_tm = 9 * LN2 / 4 - 3 * LN5 / 4 - LN3 / 4
    kl_sm = 3 * LN2 / 2 - LN5 / 2 - LN3 / 8
    assert distill.generalized_jsd(P_S, P_T, 0.5).item() == pytest.approx(
        0.5 * (kl_tm + kl_sm), abs=1e-12
    )
    # β = 1/4: M = 1/4 T + 3/4 S = (7/32, 7/16, 11/32), worked out the same way
    m = torch.tensor([7 / 32, 7 / 16, 11 / 32], dtype=torch.float64)
    t, s = P_T.exp(), P_S.exp()
    want = 0.25 * (t * (t / m).log()).sum() + 0.75 * (s * (s / m).log()).sum()
    assert distill.generalized_jsd(P_S, P_T, 0.25).item() == pytest.approx(want.item(), abs=1e-12)


def test_jsd_endpoints_are_the_two_kls_and_the_limits_agree():
    fwd, rev = distill.forward_kl(P_S, P_T), distill.reverse_kl(P_S, P_T)
    assert distill.generalized_jsd(P_S, P_T, 0.0).item() == fwd.item()  # TRL: β=0 -> KL(T||S)
    assert distill.generalized_jsd(P_S, P_T, 1.0).item() == rev.item()  # TRL: β=1 -> KL(S||T)
    eps = 1e-6  # the formula's own limits
    assert (distill.generalized_jsd(P_S, P_T, eps) / eps).item() == pytest.approx(
        fwd.item(), rel=1e-4
    )
    assert (distill.generalized_jsd(P_S, P_T, 1 - eps) / eps).item() == pytest.approx(
        rev.item(), rel=1e-4
    )
    assert distill.divergence(P_S, P_T, "jsd", 0.0).item() == fwd.item()
    with pytest.raises(ValueError, match="forward_kl, reverse_kl, jsd"):
        distill.divergence(P_S, P_T, "kl")


@pytest.mark.parametrize(
    "kind,beta", [("forward_kl", 0), ("reverse_kl", 0), ("jsd", 0.1), ("jsd", 0.5), ("jsd", 0.9)]
)
@pytest.mark.parametrize("top_k,tail", [(0, "rest"), (5, "rest"), (5, "renorm")])
def test_zero_when_distributions_match(kind, beta, top_k, tail):
    z = torch.randn(4, 7, 50) * 3
    d = distill.logits_divergence(z, z.clone(), kind, beta, temperature=0.7, top_k=top_k, tail=tail)
    assert d.shape == (4, 7) and d.abs().max().item() < 1e-5
    other = distill.logits_divergence(
        z, torch.randn(4, 7, 50) * 3, kind, beta, top_k=top_k, tail=tail
    )
    assert (other > 0).all() and other.mean().item() > 1e-2  # one position may be close by chance


def test_topk_rest_bucket_hand_computed():
    s, t = distill.topk_log_probs(P_S, P_T, k=1, tail="rest")  # buckets: {token 0}, {tokens 1, 2}
    assert torch.allclose(t.exp(), torch.tensor([1 / 2, 1 / 2], dtype=torch.float64))
    assert torch.allclose(s.exp(), torch.tensor([1 / 8, 7 / 8], dtype=torch.float64))
    # KL((1/2, 1/2) || (1/8, 7/8)) = 1/2 ln 4 + 1/2 ln(4/7) = 2 ln 2 - ln 7 / 2
    assert distill.forward_kl(s, t).item() == pytest.approx(2 * LN2 - LN7 / 2, abs=1e-12)
    s, t = distill.topk_log_probs(P_S, P_T, k=2, tail="renorm")  # tokens 0 and one of the 1/4s
    assert torch.allclose(t.exp(), torch.tensor([2 / 3, 1 / 3], dtype=torch.float64))


@pytest.mark.parametrize("kind,beta", [("forward_kl", 0), ("reverse_kl", 0), ("jsd", 0.5)])
def test_topk_error_shrinks_as_k_grows(kind, beta):
    torch.manual_seed(0)
    V = 200
    teacher = torch.randn(16, V) * 2.5
    student = teacher + torch.randn(16, V)
    full = distill.logits_divergence(student, teacher, kind, beta).double()
    ks = [1, 2, 5, 10, 20, 50, 100, 199]
    rest = [
        (full - distill.logits_divergence(student, teacher, kind, beta, top_k=k))
        .abs()
        .mean()
        .item()
        for k in ks
    ]
    # coarse-graining never increases a divergence, and k+1 buckets refine k: monotone
    assert all(a >= b - 1e-5 for a, b in zip(rest, rest[1:])), rest
    assert rest[-1] < 1e-4 < rest[0] and rest[4] < 0.5 * rest[0]
    renorm = [
        (full - distill.logits_divergence(student, teacher, kind, beta, top_k=k, tail="renorm"))
        .abs()
        .mean()
        .item()
        for k in ks
    ]
    assert renorm[-1] < 0.1 * renorm[0]


def test_temperature_softens_both_distributions():
    zs, zt = torch.randn(3, 11), torch.randn(3, 11) * 2
    tau = 2.0
    want = distill.forward_kl((zs / tau).log_softmax(-1), (zt / tau).log_softmax(-1))
    assert torch.allclose(distill.logits_divergence(zs, zt, "forward_kl", temperature=tau), want)


def _pair(vocab=97):
    teacher = models.tiny_model("llama", vocab_size=vocab, layers=2, hidden=64, seed=0)
    student = models.tiny_model("llama", vocab_size=vocab, layers=1, hidden=64, seed=1)
    return teacher, student


@pytest.mark.parametrize("top_k", [0, 7])
def test_chunked_token_divergence_matches_full_logits(top_k):
    teacher, student = _pair()
    prompts, completions = [[1, 5, 9], [1, 7]], [[4, 4, 8, 2], [3, 2]]
    ids, attn, mask = models.pad_batch(prompts, completions, pad_id=0)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    zs = student(input_ids=ids, attention_mask=attn, position_ids=pos).logits[:, :-1]
    with torch.no_grad():
        zt = teacher(input_ids=ids, attention_mask=attn, position_ids=pos).logits[:, :-1]
    sel = mask[:, 1:].bool()
    want = distill.logits_divergence(zs[sel], zt[sel], "jsd", 0.3, 0.8, top_k)
    want.mean().backward()
    grads = [p.grad.clone() for p in student.parameters()]
    student.zero_grad()
    got = distill.token_divergence(
        student, teacher, ids, attn, mask, "jsd", 0.3, 0.8, top_k, chunk_size=2
    )
    assert got.shape == (6,) and torch.allclose(got, want, atol=1e-6)
    got.mean().backward()
    for g, p in zip(grads, student.parameters()):
        assert torch.allclose(p.grad, g, atol=1e-6)
    assert all(p.grad is None for p in teacher.parameters())


def test_drop_layers_keeps_every_kth_and_still_generates(tmp_path, tokenizer):
    teacher = models.tiny_model("qwen3", vocab_size=len(tokenizer), layers=5, seed=0)
    student = distill.drop_layers(teacher, 2)
    assert student.config.num_hidden_layers == 3 and len(student.model.layers) == 3
    assert len(student.config.layer_types) == 3 and len(teacher.model.layers) == 5
    for new, old in zip(student.model.layers, [teacher.model.layers[i] for i in (0, 2, 4)]):
        assert torch.equal(new.mlp.up_proj.weight, old.mlp.up_proj.weight)
        assert new.mlp.up_proj.weight.data_ptr() != old.mlp.up_proj.weight.data_ptr()
    assert [l.self_attn.layer_idx for l in student.model.layers] == [0, 1, 2]
    out = engines.HFEngine(student, tokenizer).generate(
        [[1, 5, 9]], engines.SamplingParams(temperature=0, max_new_tokens=5)
    )
    assert len(out[0].completion_ids) == 5  # the KV cache works
    runs.save_checkpoint(student, tokenizer, tmp_path / "s")
    again, _ = models.load_policy(str(tmp_path / "s"))
    assert again.config.num_hidden_layers == 3


def test_different_vocabularies_are_refused(tokenizer):
    teacher, student = _pair(vocab=97)
    other = models.tiny_model("llama", vocab_size=98, layers=1, hidden=64)
    distill_run.check_same_vocab(student, teacher, tokenizer, tokenizer)
    with pytest.raises(ValueError, match="vocabularies differ.*same\\s+tokenizer"):
        distill_run.check_same_vocab(other, teacher, tokenizer, tokenizer)


def test_batches_epochs_think_flags_and_flags():
    cfg = distill.Config(prompts_per_step=4, seed=0)  # steps 1-3: one epoch of 12
    seen = [i for step in range(1, 4) for i in distill.step_indices(12, step, cfg)]
    assert sorted(seen) == list(range(12))  # one epoch, each once
    assert distill.step_indices(12, 5, cfg) == distill.step_indices(12, 5, cfg)
    assert distill.step_indices(12, 5, cfg) == training.stream_indices(12, 0, 16, 4)
    flags = distill.think_flags(1000, 0.3, seed=0)
    assert 0.25 < sum(flags) / 1000 < 0.35 and distill.think_flags(3, -1, 0) == [None] * 3
    cfg = distill.parse(
        [
            "--student-from-teacher",
            "--keep-every",
            "3",
            "--lmbda",
            "0.25",
            "--beta",
            "0.1",
            "--temperature",
            "1.0",
            "--max_completion_length",
            "64",
            "--learning_rate",
            "1e-5",
        ]
    )
    assert (
        cfg.student_from_teacher,
        cfg.keep_every,
        cfg.lmbda,
        cfg.beta,
        cfg.max_completion_length,
    ) == (True, 3, 0.25, 0.1, 64)
    with pytest.raises(ValueError, match="--lmbda"):
        distill.check_config(distill.Config(lmbda=1.5))


@pytest.fixture
def tiny_teacher(tmp_path, tokenizer):
    """A 2-layer random teacher whose final norm is scaled up, so its distributions are peaked
    (a random tiny model is close to uniform, and every student would already match it)."""
    teacher = models.tiny_model("llama", vocab_size=len(tokenizer), layers=2, hidden=64, seed=0)
    with torch.no_grad():
        teacher.model.norm.weight.mul_(8.0)
    return str(runs.save_checkpoint(teacher, tokenizer, tmp_path / "teacher"))


def _cfg(teacher, out, **kw):
    base = dict(
        teacher=teacher,
        student_from_teacher=True,
        keep_every=2,
        num_train_prompts=16,
        eval_problems=0,
        max_completion_length=12,
        prompts_per_step=4,
        learning_rate=1e-3,
        temperature=1.0,
        engine="hf",
        output_dir=str(out),
    )
    return distill.Config(**{**base, **kw})


def _rows(run, name="metrics.jsonl"):
    return [json.loads(l) for l in (run / name).read_text().splitlines()]


def test_on_policy_distillation_reduces_held_out_kl(tiny_teacher, tmp_path):
    cfg = _cfg(
        tiny_teacher,
        tmp_path / "run",
        lmbda=1.0,
        divergence="reverse_kl",
        eval_problems=8,
        max_completion_length=16,
        prompts_per_step=8,
        max_steps=6,
        eval_every=6,
        save_steps=6,
    )
    run = distill.train(cfg)
    rows = _rows(run)
    before, after = rows[0], rows[-1]
    assert before["step"] == 0 and after["step"] == 6 and all(r["on_policy"] == 1 for r in rows[1:])
    assert after["eval_reverse_kl"] < 0.7 * before["eval_reverse_kl"], (before, after)
    assert after["eval_forward_kl"] < 0.7 * before["eval_forward_kl"], (before, after)
    assert "eval_accuracy" in after and after["tokens_per_s"] > 0
    assert not (run / "teacher_samples.jsonl").exists()  # λ = 1 never needs it
    assert (run / "curves.png").exists() and (run / "checkpoint" / "config.json").exists()


def test_off_policy_filter_keeps_only_correct_teacher_answers(tiny_teacher, tmp_path, tokenizer):
    # A hand-made cache (as the teacher would write it, for the run's own prompts): only rows 3
    # and 7 are correct.
    cache = tmp_path / "cache.jsonl"
    cfg = _cfg(tiny_teacher, tmp_path / "run", think_ratio=-1)
    tasks = distill.load_prompts(cfg, "train", cfg.num_train_prompts)
    prompts = distill.render(tokenizer, tasks, distill.think_flags(len(tasks), -1, cfg.seed))
    rows = [
        {
            "teacher": tiny_teacher,
            "task_id": f"t{i}",
            "think": None,
            "prompt_ids": prompts[i],
            "completion_ids": [4, 8, 2],
            "text": "x",
            "truncated": False,
            "correct": i in (3, 7),
        }
        for i in range(16)
    ]
    cache.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = distill.train(
        _cfg(
            tiny_teacher,
            tmp_path / "run",
            lmbda=0.0,
            filter_correct=True,
            teacher_cache=str(cache),
            max_steps=2,
            think_ratio=-1,
        )
    )
    used = {s["task_id"] for s in _rows(run, "samples.jsonl")}
    assert used <= {"t3", "t7"} and all(r["on_policy"] == 0 for r in _rows(run))
    wrong = [dict(r, teacher="another-teacher") for r in rows]
    cache.write_text("".join(json.dumps(r) + "\n" for r in wrong))
    with pytest.raises(ValueError, match="delete .* or pass --teacher_cache"):
        distill.train(
            _cfg(tiny_teacher, tmp_path / "run2", lmbda=0.0, teacher_cache=str(cache), max_steps=1)
        )


def test_resume_continues_exactly(tiny_teacher, tmp_path):
    kw = dict(
        lmbda=0.5,
        divergence="jsd",
        beta=0.5,
        top_k_vocab=64,
        save_steps=1,
        eval_every=100,
        num_train_prompts=6,
        prompts_per_step=2,
        max_completion_length=8,
    )
    full = distill.train(_cfg(tiny_teacher, tmp_path / "full", max_steps=3, **kw))
    part = tmp_path / "part"
    distill.train(_cfg(tiny_teacher, part, max_steps=2, **kw))
    cache_text = (part / "teacher_samples.jsonl").read_text()
    distill.train(_cfg(tiny_teacher, part, max_steps=3, resume=True, **kw))
    assert (part / "teacher_samples.jsonl").read_text() == cache_text  # made once
    a, b = _rows(full), _rows(part)
    assert [r["step"] for r in b] == [1, 2, 3] and [r["on_policy"] for r in a] == [0, 1, 1]
    for ra, rb in zip(a, b):
        assert ra["on_policy"] == rb["on_policy"]
        assert rb["loss"] == pytest.approx(ra["loss"], rel=1e-4, abs=1e-6)


def test_a_file_task_is_not_evaluated_on_its_own_training_rows(tmp_path):
    # a file has one split: "test" gave its first --eval_problems rows, the prompts it trained on
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"{i}+1?", "answer": i + 1}) + "\n"
                            for i in range(6)))
    cfg = distill.Config(task=str(path))
    assert len(distill.load_prompts(cfg, "train", 6)) == 6
    assert distill.load_prompts(cfg, "test", 4) == []
    # the rows that training leaves out are held out: none trained on
    cfg = distill.Config(task=str(path), num_train_prompts=4)
    train, test = distill.load_prompts(cfg, "train", 4), distill.load_prompts(cfg, "test", 4)
    assert len(train) == 4 and len(test) == 2
    assert not {t["id"] for t in train} & {t["id"] for t in test}
    assert len(distill.load_prompts(distill.Config(task="math"), "test", 4)) == 4
