"""grpo.py: every piece against numbers worked out by hand, checked flags, learning, resume."""

import json
import math

import pytest
import torch
from conftest import TINY_GRPO, with_flags

import curriculum
import engines
import grpo
import grpo_log
import grpo_setup
import models
import rewards
import runs
import training

# ----------------------------------------------------------------------------------------------
# Group advantages: rewards [1,0,0,0 | 1,1,0,0], G = 4
# ----------------------------------------------------------------------------------------------
R = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])


def test_advantages_none_is_dr_grpo():
    # group means 0.25 and 0.5; no division
    expect = [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]
    assert grpo.group_advantages(R, 4, "none").tolist() == pytest.approx(expect)


def test_advantages_group_std_unbiased():
    # group 1: squared deviations 0.5625 + 3 * 0.0625 = 0.75, / 3 -> var 0.25, std 0.5
    # group 2: 4 * 0.25 = 1, / 3 -> std sqrt(1/3) = 0.57735
    s2 = math.sqrt(1 / 3)
    expect = [1.5, -0.5, -0.5, -0.5, 0.5 / s2, 0.5 / s2, -0.5 / s2, -0.5 / s2]
    assert grpo.group_advantages(R, 4, "group").tolist() == pytest.approx(expect, abs=1e-5)


def test_advantages_batch_std():
    # batch mean 0.375: 3 * 0.625^2 + 5 * 0.375^2 = 1.875, / 7 -> std 0.517549; means per group
    std = math.sqrt(1.875 / 7)
    expect = [
        0.75 / std,
        -0.25 / std,
        -0.25 / std,
        -0.25 / std,
        0.5 / std,
        0.5 / std,
        -0.5 / std,
        -0.5 / std,
    ]
    assert grpo.group_advantages(R, 4, "batch").tolist() == pytest.approx(expect, abs=1e-5)
    assert expect[0] == pytest.approx(1.44914, abs=1e-5)


def test_advantages_all_equal_group_is_zero_and_bad_scale_raises():
    assert grpo.group_advantages(torch.tensor([1.0, 1.0, 0.0, 1.0]), 2, "group").tolist()[:2] == [
        0.0,
        0.0,
    ]
    with pytest.raises(ValueError, match="--scale_rewards"):
        grpo.group_advantages(R, 4, "std")


# ----------------------------------------------------------------------------------------------
# Clipped surrogate, ε_low 0.2, ε_high 0.28
# ----------------------------------------------------------------------------------------------
RATIOS = torch.tensor([[0.5, 0.9, 1.1, 1.25, 1.5]])


def _surrogate(adv, eps_high=0.28):
    return grpo.clipped_surrogate(
        torch.log(RATIOS), torch.zeros_like(RATIOS), torch.tensor([adv]), 0.2, eps_high
    )


def test_clip_positive_advantage():
    # A = +1: -min(ρ, clip(ρ, 0.8, 1.28)): only ρ above 1.28 is clipped (0.5 stays: min picks it)
    loss, clipped = _surrogate(1.0)
    assert loss[0].tolist() == pytest.approx([-0.5, -0.9, -1.1, -1.25, -1.28])
    assert clipped[0].tolist() == [False, False, False, False, True]


def test_clip_negative_advantage():
    # A = -1: -min(-ρ, -clip(ρ)) = max(ρ, clip(ρ)): ρ below 0.8 is clipped up to 0.8, 1.5 stays
    loss, clipped = _surrogate(-1.0)
    assert loss[0].tolist() == pytest.approx([0.8, 0.9, 1.1, 1.25, 1.5])
    assert clipped[0].tolist() == [True, False, False, False, False]


def test_clip_symmetric_default_and_gradients():
    loss, clipped = _surrogate(1.0, eps_high=None)  # ε_high = ε = 0.2: 1.25 now clipped at 1.2
    assert loss[0, 3].item() == pytest.approx(-1.2) and clipped[0, 3]
    # Clipped tokens get no gradient; unclipped ones get -A ρ ∇log π.
    logp = torch.log(RATIOS).clone().requires_grad_(True)
    l, _ = grpo.clipped_surrogate(logp, torch.zeros_like(logp), torch.tensor([1.0]), 0.2, 0.28)
    l.sum().backward()
    assert logp.grad[0].tolist() == pytest.approx([-0.5, -0.9, -1.1, -1.25, 0.0])


def test_on_policy_ratio_is_one_with_policy_gradient():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    loss, clipped = grpo.clipped_surrogate(logp, logp.detach(), torch.tensor([-0.5]))
    assert loss.tolist() == [[0.5, 0.5]] and not clipped.any()
    loss.sum().backward()
    assert logp.grad.tolist() == [[0.5, 0.5]]  # -A ∇log π


# ----------------------------------------------------------------------------------------------
# Loss aggregation: per-token [[1,2,3,·],[4,·,·,·]] (· masked)
# ----------------------------------------------------------------------------------------------
PER_TOKEN = torch.tensor([[1.0, 2.0, 3.0, 9.0], [4.0, 9.0, 9.0, 9.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    "loss_type,expect",
    [
        ("grpo", 3.0),  # sequence means 2 and 4, then mean
        ("dapo", 2.5),  # (1+2+3+4) / 4 tokens
        ("dr_grpo", 1.25),  # 10 / (2 sequences * 4 max tokens)
    ],
)
def test_loss_aggregation(loss_type, expect):
    assert grpo.aggregate_loss(PER_TOKEN, MASK, loss_type, max_tokens=4).item() == pytest.approx(
        expect
    )
    # split into micro-batches with the mini-batch's counts: the parts add up to the whole
    parts = sum(
        grpo.aggregate_loss(
            PER_TOKEN[i : i + 1],
            MASK[i : i + 1],
            loss_type,
            max_tokens=4,
            num_seqs=2,
            num_tokens=4.0,
        ).item()
        for i in range(2)
    )
    assert parts == pytest.approx(expect)


def test_loss_aggregation_unknown_raises():
    with pytest.raises(ValueError, match="--loss_type"):
        grpo.aggregate_loss(PER_TOKEN, MASK, "seq")


# ----------------------------------------------------------------------------------------------
# KL: k3 estimator and the STILL-3 cosine schedule
# ----------------------------------------------------------------------------------------------
def test_k3_kl_hand_values():
    logp = torch.zeros(4)
    ref = torch.tensor([math.log(2), math.log(0.5), 0.0, 30.0])
    kl = grpo.k3_kl(logp, ref).tolist()
    assert kl[0] == pytest.approx(2 - math.log(2) - 1)  # 0.306853
    assert kl[1] == pytest.approx(0.5 + math.log(2) - 1)  # 0.193147
    assert kl[2] == 0.0
    assert kl[3] == 10.0  # log-ratio clamped to 20, result to 10
    assert min(grpo.k3_kl(torch.randn(100), torch.randn(100)).tolist()) >= 0


def test_kl_pulls_reward_blind_tokens_back_to_the_reference():
    # Tokens the reward cannot see (A = 0 here) have no policy gradient; once they drift, only
    # the k3 term moves them: d(β k3)/d log π = β (1 - π_ref / π), over the 2 tokens (dapo).
    # A token that rose (0.01 -> 0.5) is pushed down, one that fell (0.2 -> 0.05) up; β 0: nothing.
    ref = torch.log(torch.tensor([[0.01, 0.2]]))
    for beta, expect in ((0.04, [0.04 * (1 - 0.02) / 2, 0.04 * (1 - 4.0) / 2]), (0.0, [0.0, 0.0])):
        logp = torch.log(torch.tensor([[0.5, 0.05]])).requires_grad_(True)
        loss, _, _ = grpo.grpo_loss(logp, logp.detach(), torch.zeros(1), torch.ones(1, 2), ref,
                                    beta=beta)
        loss.backward()
        assert logp.grad[0].tolist() == pytest.approx(expect, abs=1e-6)


def test_cosine_beta_schedule():
    assert grpo.cosine_beta(0, 0.001, 0.0, 500) == pytest.approx(0.001)
    assert grpo.cosine_beta(125, 0.001, 0.0, 500) == pytest.approx(
        0.001 * 0.5 * (1 + math.sqrt(0.5))
    )  # 8.5355e-4
    assert grpo.cosine_beta(250, 0.001, 0.0, 500) == pytest.approx(0.0005)
    assert grpo.cosine_beta(250, 0.001, 0.0002, 500) == pytest.approx(0.0006)
    assert grpo.cosine_beta(500, 0.001, 0.0002, 500) == 0.0002
    assert grpo.cosine_beta(9999, 0.001, 0.0, 500) == 0.0


# ----------------------------------------------------------------------------------------------
# Skywork-OR1 adaptive entropy control over a scripted entropy sequence
# ----------------------------------------------------------------------------------------------
def test_entropy_controller_scripted():
    ctl = grpo.EntropyController(target=0.2, delta=0.001, coef_min=0.0, coef_max=0.0025, coef=0.0)
    coefs, loss_coefs = [], []
    for e in [0.1, 0.1, 0.3, 0.3, 0.3, 0.1, 0.1, 0.1]:
        ctl.update(e)
        coefs.append(ctl.coef)
        loss_coefs.append(ctl.loss_coef)
    # below target: c += Δ and the term is on; above: c -= Δ (floored at 0) and the term is off
    assert coefs == pytest.approx([0.001, 0.002, 0.001, 0.0, 0.0, 0.001, 0.002, 0.0025])
    assert loss_coefs == pytest.approx([0.001, 0.002, 0.0, 0.0, 0.0, 0.001, 0.002, 0.0025])


# ----------------------------------------------------------------------------------------------
# Group filtering, truncation, length rejection, stages, data order
# ----------------------------------------------------------------------------------------------
def test_zero_variance_group_filter():
    r = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.5, -1.0, -1.0])
    assert grpo.zero_variance_groups(r, 2).tolist() == [True, False, False, True, True]
    assert grpo.zero_variance_groups(torch.tensor([0.0, 0.0, 0.0, 1.0]), 4).tolist() == [False]


def test_zero_variance_filter_on_correctness():
    """Phi-4-style shaped rewards: an all-wrong group differs only by a small shaping term. The
    reward test keeps it (and group std would inflate 0.01 to A = ±1); DAPO's test on
    correctness drops it and keeps the group with 0 < #correct < G."""
    shaped = torch.tensor([-0.31, -0.32, -0.31, -0.33, 0.61, -0.31, 0.60, -0.32])
    correct = torch.tensor([False, False, False, False, True, False, True, False])
    assert grpo.zero_variance_groups(shaped, 4).tolist() == [False, False]
    assert grpo.zero_variance_groups(correct, 4).tolist() == [True, False]
    adv = grpo.group_advantages(shaped, 4, "group")[:4]
    assert adv.abs().max() > 0.8  # noise blown up to unit scale


def shaped_wrong(completion, task, **_):
    """Math correctness plus a small length term: the tiny model's groups are all wrong, unequal."""
    return float(rewards.verify_math(completion, task["answer"])) + 1e-3 * len(completion)


@pytest.mark.parametrize("by,filtered", [("reward", 0.0), ("acc", 1.0)])
def test_filter_groups_by_acc_drops_all_wrong_shaped_groups(tmp_path, monkeypatch, by, filtered):
    monkeypatch.setitem(rewards.REWARDS, "shaped_wrong", shaped_wrong)
    out = grpo.train(
        grpo.parse(
            _tiny_args(
                tmp_path / by,
                "--rewards",
                "shaped_wrong",
                "--max_steps",
                "2",
                "--eval_problems",
                "0",
                "--filter_groups_by",
                by,
            )
        )
    )
    rows = _metrics(out)
    assert [r["accuracy"] for r in rows] == [0.0, 0.0]
    assert [r["groups_filtered"] for r in rows] == [filtered, filtered]
    assert all(("train_tokens" in r) == (by == "reward") for r in rows)  # acc: nothing to train on


def test_truncation_masking_and_scoring():
    r, trunc = torch.tensor([1.0, 0.5, 1.0]), torch.tensor([False, True, True])
    rm, wm = grpo.truncation_rewards(r, trunc, mask_truncated=True)
    assert rm.tolist() == [1.0, 0.5, 1.0] and wm.tolist() == [1.0, 0.0, 0.0]  # out of the loss
    rw, ww = grpo.truncation_rewards(r, trunc, mask_truncated=False, truncated_reward=0.0)
    assert rw.tolist() == [1.0, 0.0, 0.0] and ww.tolist() == [1.0, 1.0, 1.0]  # scored as wrong
    rk, wk = grpo.truncation_rewards(r, trunc, mask_truncated=False, truncated_reward=None)
    assert rk.tolist() == [1.0, 0.5, 1.0] and wk.tolist() == [1.0, 1.0, 1.0]  # kept as computed
    # Scored as wrong, a truncated sample gets a negative advantage in a mixed group
    assert grpo.group_advantages(rw, 3, "none").tolist() == pytest.approx([2 / 3, -1 / 3, -1 / 3])


def test_length_rejection():
    lengths = torch.tensor([100, 900, 900, 501])
    correct = torch.tensor([False, False, True, False])
    assert grpo.length_rejection(lengths, correct, 500).tolist() == [True, False, True, False]


def test_stages_and_prompt_order():
    st = training.parse_stages("8192:2,16384:3", 256, 100)
    assert st == [(8192, 2), (16384, 3)]
    assert [training.stage_at(st, s) for s in range(6)] == [
        (0, 8192),
        (0, 8192),
        (1, 16384),
        (1, 16384),
        (1, 16384),
        (1, 16384),
    ]
    assert training.parse_stages("", 256, 7) == [(256, 7)]
    with pytest.raises(ValueError, match="--stages"):
        training.parse_stages("8192-100", 256, 1)
    a = training.stream_indices(5, 0, 0, 12)
    assert (
        sorted(a[:5]) == list(range(5)) and sorted(a[5:10]) == list(range(5)) and a[:5] != a[5:10]
    )
    assert training.stream_indices(5, 0, 7, 5) == a[7:12]  # a resumed run continues the same stream


def test_reflection_counts():
    c = grpo_log.reflection_counts(["Wait, let me verify. wait", "However, I checked it"])
    assert c["reflect_wait"] == 1.0 and c["reflect_verify"] == 0.5
    assert c["reflect_however"] == 0.5 and c["reflect_check"] == 0.5


# ----------------------------------------------------------------------------------------------
# Checked flags
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,match",
    [
        (["--num_generations", "1"], "--num_generations 1"),
        (["--epsilon", "0.2", "--epsilon_high", "0.1"], "--epsilon_high 0.1 is below --epsilon"),
        (["--rewards", "math,nonsense"], "unknown reward 'nonsense'"),
        (["--loss_type", "token"], "--loss_type"),
    ],
)
def test_checked_flags(args, match):
    with pytest.raises(ValueError, match=match):
        grpo_setup.check_config(grpo.parse(args))


def test_dash_flag_names_parse():
    cfg = grpo.parse(
        [
            "--epsilon-high",
            "0.28",
            "--loss-type",
            "dr_grpo",
            "--mask-truncated",
            "--scale-rewards",
            "none",
            "--max-response-tokens",
            "64",
        ]
    )
    assert (
        cfg.epsilon_high,
        cfg.loss_type,
        cfg.mask_truncated_completions,
        cfg.scale_rewards,
        cfg.max_completion_length,
    ) == (0.28, "dr_grpo", True, "none", 64)


def test_checked_positions_and_answers(tiny):
    tasks = [{"id": "a", "prompt": "hi", "answer": "1"}]
    cfg = grpo.parse(["--max_completion_length", "4000"])  # tiny model: 2048 positions
    with pytest.raises(ValueError, match="rope_theta_factor"):
        grpo_setup.check_tasks(cfg, tasks, [[1] * 50], tiny)
    cfg = grpo.parse(["--rewards", "math:1,format:0.2", "--max_completion_length", "16"])
    with pytest.raises(ValueError, match="have none .*--answer_field"):
        grpo_setup.check_tasks(cfg, [{"id": "q1", "prompt": "hi"}], [[1] * 5], tiny)
    # a code dataset under the default 'math' reward was told to map an answer column
    code = [{"id": "mbpp-0", "prompt": "Add.", "tests": [{"assert": "assert add(1, 1) == 2"}]}]
    with pytest.raises(ValueError, match="have none .*they have 'tests': grade them with "
                                         "--rewards code"):
        grpo_setup.check_tasks(cfg, code, [[1] * 5], tiny)
    grpo_setup.check_tasks(
        grpo.parse(["--rewards", "format", "--max_completion_length", "16"]),
        [{"id": "q1", "prompt": "hi"}],
        [[1] * 5],
        tiny,
    )  # no answer needed: fine


# ----------------------------------------------------------------------------------------------
# On-policy: no old log-probs are recomputed; off-policy: they are
# ----------------------------------------------------------------------------------------------
def test_on_policy_computes_no_old_logprobs(tokenizer, monkeypatch):
    model, _ = models.load_policy("tiny")
    calls = []
    for name in ("token_logprobs", "shared_prompt_logprobs"):
        real = getattr(models, name)
        monkeypatch.setattr(
            models,
            name,
            lambda *a, real=real, **k: calls.append(torch.is_grad_enabled()) or real(*a, **k),
        )
    ids, attn, cmask = models.pad_batch(
        [[1, 5, 9]] * 4, [[7, 8], [7], [9, 9, 9], [4, 2]], tokenizer.pad_token_id
    )
    mask = cmask[:, 1:].float()
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    cfg = grpo.parse(["--micro_batch_size", "4"])
    out = grpo.train_on_batch(model, opt, None, ids, attn, mask, adv, None, cfg, 0.0, 0.0, 8, 0, {})
    assert calls == [True] and out["clip_frac"] == 0.0 and out["optimizer_steps"] == 1
    calls.clear()
    cfg = grpo.parse(["--micro_batch_size", "2", "--num_iterations", "2", "--mini_batch_size", "2"])
    out = grpo.train_on_batch(model, opt, None, ids, attn, mask, adv, None, cfg, 0.0, 0.0, 8, 0, {})
    assert (
        calls == [False] * 2 + [True] * 4 and out["optimizer_steps"] == 4
    )  # old log-probs once, 2 micro-batches


def test_logprob_mismatch_comes_from_the_training_pass(tokenizer):
    """The engine's log-probs, laid out like the batch (`engines.engine_logprobs`), are compared
    with the trainer's in the update's own forward pass: an engine that is off by 0.1 nats on
    every token it sampled reads 0.1; its inserted tokens (sampled_mask 0) and a completion
    without log-probs are left out."""
    model, _ = models.load_policy("tiny")
    prompts, comps = [[1, 5, 9], [1, 5, 9], [6, 2]], [[7, 8, 3], [7], [9, 9]]
    ids, attn, cmask = models.pad_batch(prompts, comps, tokenizer.pad_token_id)
    with torch.no_grad():
        true, _ = models.token_logprobs(model, ids, attn)
    p_len = 3
    completions = [
        engines.Completion(i, p, c, "", False,
                           logprobs=[float(true[b, p_len - 1 + j]) + 0.1 for j in range(len(c))])
        for b, (i, p, c) in enumerate(zip(range(3), prompts, comps))
    ]
    completions[0].logprobs[2] += 5.0           # an inserted token: not sampled, not compared
    completions[0].sampled_mask = [1, 1, 0]
    completions[2].logprobs = None              # no log-probs from the engine for this one
    ids, attn, mask = models.completion_batch(completions, torch.ones(3, dtype=torch.bool),
                                              tokenizer.pad_token_id)
    engine = engines.engine_logprobs(completions, ids.shape[1])
    assert engine.shape == mask.shape and int(engine.isfinite().sum()) == 4
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    cfg = grpo.parse(["--micro_batch_size", "2", "--bf16", "false"])
    out = grpo.train_on_batch(model, opt, None, ids, attn, mask, torch.tensor([1.0, -1.0, 0.5]),
                              engine, cfg, 0.0, 0.0, 8, 0, {})
    assert out["logprob_mismatch"] == pytest.approx(0.1, abs=1e-4)
    assert engines.engine_logprobs([c for c in completions if not c.logprobs], 5) is None


def test_shared_prompt_training_step_equals_the_unshared_one(tokenizer):
    """--share_prompt (default) changes the cost, not the update: two groups of a left-padded
    batch, off-policy (old log-probs and 2 mini-batches), with a reference model and an entropy
    bonus; parameters after the step agree to float rounding."""
    ids, attn, cmask = models.pad_batch(
        [[1, 5, 9]] * 3 + [[1, 6]] * 3,
        [[7, 8], [7], [9, 9, 9], [4, 2, 11, 12], [30], [31, 32]],
        tokenizer.pad_token_id,
    )
    mask = cmask[:, 1:].float()
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, -1.0])
    after, stats = [], []
    for share in ("true", "false"):
        model, _ = models.load_policy("tiny")
        ref, _ = models.load_policy("tiny")
        opt = torch.optim.SGD(
            model.parameters(), lr=1.0
        )  # Adam would magnify rounding in ~0 gradients
        cfg = grpo.parse(
            [
                "--bf16",
                "false",  # float32: the comparison is to rounding
                "--micro_batch_size",
                "3",
                "--num_iterations",
                "2",
                "--mini_batch_size",
                "3",
                "--share_prompt",
                share,
            ]
        )
        stats.append(
            grpo.train_on_batch(
                model, opt, ref, ids, attn, mask, adv, None, cfg, 0.01, 0.01, 8, 0, {}
            )
        )
        after.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    before = torch.cat([p.detach().flatten() for p in models.load_policy("tiny")[0].parameters()])
    assert (after[0] - before).abs().max().item() > 1e-3  # the step moved the weights
    assert (after[0] - after[1]).abs().max().item() < 1e-5
    for k in ("loss", "grad_norm", "entropy", "kl", "entropy_full"):
        assert stats[0][k] == pytest.approx(stats[1][k], rel=1e-4, abs=1e-7), k


# ----------------------------------------------------------------------------------------------
# End to end on a tiny random model
# ----------------------------------------------------------------------------------------------
def _tiny_args(out, *extra):
    return with_flags(*TINY_GRPO, "--eval_problems", "2", "--output_dir", str(out),
                      "--score_truncated", "false", *extra)  # fmt: skip


def _metrics(path):
    return [json.loads(l) for l in (path / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("curriculum", ["none", "templates"])
def test_resume_after_kill_matches_uninterrupted(tmp_path, monkeypatch, curriculum):
    monkeypatch.setitem(rewards.REWARDS, "upper_share", upper_share)
    common = [
        "--curriculum",
        curriculum,
        "--rewards",
        "upper_share",
        "--max_steps",
        "3",
        "--save_steps",
        "2",
        "--eval_every",
        "3",
        "--num_iterations",
        "2",
        "--mini_batch_size",
        "4",
        "--adaptive_entropy",
        "--target_entropy",
        "20",
    ]
    a = grpo.train(grpo.parse(_tiny_args(tmp_path / "a", *common)))

    class Killed(Exception):
        pass

    class KilledAfterStep3(runs.RunDir):  # dies after logging step 3, before saving it (saved: 2)
        def log(self, metrics, file="metrics.jsonl"):
            super().log(metrics, file)
            if file == "metrics.jsonl" and metrics.get("step") == 3:
                raise Killed

    real_rundir = runs.RunDir
    monkeypatch.setattr(runs, "RunDir", KilledAfterStep3)
    with pytest.raises(Killed):
        grpo.train(grpo.parse(_tiny_args(tmp_path / "b", *common)))
    monkeypatch.setattr(runs, "RunDir", real_rundir)
    b = grpo.train(grpo.parse(_tiny_args(tmp_path / "b", *common, "--resume")))

    ma, mb = _metrics(a), _metrics(b)
    assert [m["step"] for m in mb] == [0, 1, 2, 3] == [m["step"] for m in ma]
    for x, y in zip(ma, mb):  # same data order, same samples, same updates
        for k in ("reward", "response_length", "loss", "entropy", "entropy_coef", "eval_accuracy"):
            assert x.get(k) == pytest.approx(y.get(k), abs=1e-6), k
    sa, sb = (
        torch.load(a / "state.pt", weights_only=False),
        torch.load(b / "state.pt", weights_only=False),
    )
    assert (sa["step"], sa["position"], sa["controller"], sa["curriculum"]) == (
        sb["step"],
        sb["position"],
        sb["controller"],
        sb["curriculum"],
    )
    if curriculum == "templates":  # 3 steps of 2 groups each, counted over the templates
        assert sum(sa["curriculum"]["groups"].values()) == 6
    wa = models.load_policy(str(a / "checkpoint"))[0].state_dict()
    wb = models.load_policy(str(b / "checkpoint"))[0].state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)
    assert (b / "curves.png").exists() and (b / "samples.jsonl").exists()


def upper_share(completion, task, **_):
    """Dense reward: share of upper-case characters (about 0.06 for the random model). Digits, the
    issue's example, are 10 of 49152 tokens: a random model never samples one, so no signal."""
    return sum(ch.isupper() for ch in completion) / max(len(completion), 1)


def test_tiny_model_learns_dense_reward(tmp_path, monkeypatch):
    monkeypatch.setitem(rewards.REWARDS, "upper_share", upper_share)
    args = _tiny_args(
        tmp_path / "learn",
        "--rewards",
        "upper_share",
        "--num_generations",
        "8",
        "--max_steps",
        "10",
        "--learning_rate",
        "5e-2",
        "--eval_problems",
        "0",
        "--micro_batch_size",
        "16",
        "--save_steps",
        "100",
    )
    rows = _metrics(grpo.train(grpo.parse(args)))
    r = [m["reward"] for m in rows]
    print("reward per step:", [round(x, 3) for x in r])
    assert len(r) == 10 and r[0] < 0.15
    assert sum(r[-3:]) / 3 > max(0.4, 3 * r[0])  # learning, not just running


def test_pass_rate_filter_keeps_prompts_between_bounds():
    """3 prompts x 4 samples: 0/4, 2/4 and 4/4 correct; Skywork-OR1 keeps only the middle one."""

    class FakeEngine:
        def generate(self, prompts, params):
            right = {0: 0, 1: 2, 2: 4}
            return [
                engines.Completion(
                    p, [1], [2], "\\boxed{7}" if k < right[p] else "\\boxed{0}", False
                )
                for p in range(len(prompts))
                for k in range(params.n)
            ]

    tasks = [{"id": str(i), "prompt": "q", "answer": "7"} for i in range(3)]
    cfg = lambda lo, hi: grpo.Config(pass_rate_samples=4, pass_rate_min=lo, pass_rate_max=hi)
    assert curriculum.pass_rate_filter(FakeEngine(), tasks, [[1]] * 3, cfg(0.01, 0.99), 16) == [1]
    keep = curriculum.pass_rate_filter(FakeEngine(), tasks, [[1]] * 3, cfg(0.0, 1.0), 16)
    assert keep == [0, 1, 2]
    with pytest.raises(ValueError, match=r"kept no prompt of 3: widen the range"):
        curriculum.pass_rate_filter(FakeEngine(), tasks, [[1]] * 3, cfg(0.6, 0.9), 16)


def test_token_logprobs_start_skips_the_prompt(tiny, tokenizer):
    ids, attn, _ = models.pad_batch(
        [[1, 5, 9, 4], [1, 7]], [[7, 8], [7, 3, 3]], tokenizer.pad_token_id
    )
    full, _ = models.token_logprobs(tiny, ids, attn)
    part, _ = models.token_logprobs(tiny, ids, attn, start=3)
    assert part.shape == (2, ids.shape[1] - 4) and torch.allclose(part, full[:, 3:], atol=1e-5)


def test_math_partial_reward():
    task = {"answer": "12"}
    assert rewards.math_partial_reward("5 + 7 = 12. The answer is \\boxed{12}.", task) == 1.0
    assert rewards.math_partial_reward("So 5 + 7 = 12", task) == 0.5  # right, not boxed
    assert rewards.math_partial_reward("12 apples, minus 3 = 9", task) == 0.0  # last number wrong
    assert rewards.math_partial_reward("The answer is within \\boxed{}.", task) == 0.0  # no hack
    assert "math_partial" in rewards.REWARDS


# ----------------------------------------------------------------------------------------------
# Recipe fidelity: truncation under self-scoring rewards, rejection before the group statistics,
# one mask for every loss term, model-based rewards by flag, Skywork's per-stage drop
# ----------------------------------------------------------------------------------------------
def test_phi4_truncated_scores_as_the_paper_says():
    # Phi-4-reasoning-plus: no EOS -> R_acc -0.5. A finished wrong answer gets -1 (short) .. -0.5
    # (from L_neg on: the paper punishes short wrong answers hardest), a right one 0.5 .. 1. Before,
    # the loop overwrote the -0.5 with --truncated_reward 0, above every finished wrong answer.
    f = rewards.combined_reward("phi4")
    assert f.scores_unfinished and not rewards.combined_reward("math").scores_unfinished
    text = "<think>\nsome reasoning here\n</think>\n\nThe answer is \\boxed{3}."
    L = 96
    L_neg = rewards.scaled_phi4_lengths(L)[2]
    cut = f(text, {"answer": "4"}, num_tokens=L, finished=False, max_tokens=L)
    wrong = [
        f(text, {"answer": "4"}, num_tokens=n, finished=True, max_tokens=L) for n in range(1, L + 1)
    ]
    right = [
        f(text, {"answer": "3"}, num_tokens=n, finished=True, max_tokens=L) for n in range(1, L + 1)
    ]
    assert cut == pytest.approx(8 / 13 * -0.5 + 1 / 13 * rewards.phi4_repetition_penalty(text))
    assert cut < 0 and cut < min(right)
    assert all(cut <= w + 1e-12 for w in wrong[L_neg:])  # no better than any long wrong answer
    assert cut > min(wrong)  # the paper's shortest wrong answers: -1
    # the training loop leaves such a score alone: truncation_rewards(..., None) keeps it
    raw, trunc = torch.tensor([cut, wrong[-1]]), torch.tensor([True, False])
    assert grpo.truncation_rewards(raw, trunc, False, None)[0].tolist() == raw.tolist()


def test_reward_is_what_the_loss_sees_and_reward_raw_the_functions_output(tmp_path):
    # tiny random model, 8 tokens: every completion is truncated
    phi4 = grpo.train(
        grpo.parse(
            _tiny_args(
                tmp_path / "phi4",
                "--rewards",
                "phi4",
                "--max_steps",
                "1",
                "--score_truncated",
                "true",
                "--filter_zero_variance",
                "false",
            )
        )
    )
    row = _metrics(phi4)[-1]
    assert row["truncated"] == 1.0
    assert (
        row["reward"] == pytest.approx(row["reward_raw"]) and row["reward"] < -0.3
    )  # -0.5 * 8/13 + R_rep/13
    math_run = grpo.train(
        grpo.parse(
            _tiny_args(
                tmp_path / "math",
                "--rewards",
                "math",
                "--max_steps",
                "1",
                "--score_truncated",
                "true",
                "--truncated_reward",
                "-1",
                "--filter_zero_variance",
                "false",
            )
        )
    )
    row = _metrics(math_run)[-1]
    assert row["reward_raw"] == 0.0 and row["reward"] == -1.0  # the override is visible


def test_length_rejection_happens_before_the_group_statistics():
    r = torch.tensor([1.0, 0.0, 0.0, 0.5, 1.0, 1.0, 0.0, 0.0])
    keep = torch.tensor([True, True, False, True, True, True, True, False])
    for scale in ("group", "none"):
        adv = grpo.group_advantages(r, 4, scale, keep=keep)
        # the remaining samples' advantages are those of groups that never held the rejected ones
        g1 = grpo.group_advantages(torch.tensor([1.0, 0.0, 0.5]), 3, scale)
        g2 = grpo.group_advantages(torch.tensor([1.0, 1.0, 0.0]), 3, scale)
        assert adv[keep].tolist() == pytest.approx(torch.cat([g1, g2]).tolist(), abs=1e-6)
        assert adv[~keep].tolist() == [0.0, 0.0]
    # a group left with one sample, or whose kept samples agree, carries no signal: filtered and
    # refilled
    flat = grpo.zero_variance_groups(
        torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0]),
        3,
        torch.tensor([True, True, True, True, False, False]),
    )
    assert flat.tolist() == [False, True]
    assert grpo.zero_variance_groups(
        torch.tensor([1.0, 0.0, 1.0, 1.0]), 2, torch.tensor([True, False, True, True])
    ).tolist() == [True, True]


def test_one_mask_for_policy_gradient_kl_and_entropy():
    logp = torch.log(torch.tensor([[0.5, 0.4], [0.3, 0.9]])).requires_grad_(True)
    ref = torch.log(torch.tensor([[0.6, 0.6], [0.1, 0.1]]))
    ent = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0], [0.0, 0.0]])  # the second sample is left out
    loss, _, kl = grpo.grpo_loss(
        logp, logp.detach(), torch.tensor([1.0, -1.0]), mask, ref, ent, beta=0.1, entropy_coef=0.01
    )
    loss.backward()
    assert logp.grad[1].abs().sum() == 0 and ent.grad[1].abs().sum() == 0
    # hand-computed: dapo mean over the 2 kept tokens of -A + β k3 - c H
    k3 = [0.6 / 0.5 - math.log(0.6 / 0.5) - 1, 0.6 / 0.4 - math.log(0.6 / 0.4) - 1]
    expect = sum(-1 + 0.1 * k - 0.01 * h for k, h in zip(k3, (1.0, 2.0))) / 2
    assert loss.item() == pytest.approx(expect, abs=1e-6)


def test_general_rl_rule_judge_and_reward_model_rewards_by_flag(tmp_path):
    out = grpo.train(
        grpo.parse(
            _tiny_args(
                tmp_path / "g",
                "--task",
                "general",
                "--rewards",
                "math:1,instruction:0.5,judge:0.5,reward_model:0.5",
                "--judge_model",
                "tiny",
                "--reward_model",
                "tiny",
                "--max_steps",
                "1",
                "--filter_zero_variance",
                "false",
            )
        )
    )
    row = _metrics(out)[-1]
    for part in ("reward_math", "reward_instruction", "reward_judge", "reward_reward_model"):
        assert part in row, part
    assert 0.0 < row["reward_judge"] < 1.0  # p(yes) of a random judge
    with pytest.raises(ValueError, match="--judge_model"):
        grpo_setup.check_config(grpo.parse(["--rewards", "math,judge"]))


def test_dr_grpo_without_scale_none_says_so(capsys):
    grpo_setup.check_config(grpo.parse(["--loss_type", "dr_grpo"]))
    assert "--scale_rewards none" in capsys.readouterr().out
    grpo_setup.check_config(grpo.parse(["--loss_type", "dr_grpo", "--scale_rewards", "none"]))
    assert capsys.readouterr().out == ""


def test_skywork_drops_solved_prompts_at_each_stage():
    cfg = grpo.parse(["--drop_solved_each_stage"])
    assert curriculum.next_stage_prompts([0, 1, 2, 3], {1, 3}, cfg, None, 96) == [0, 2]
    cfg = grpo.parse([])
    assert curriculum.next_stage_prompts([0, 1, 2, 3], {1, 3}, cfg, None, 96) == [0, 1, 2, 3]
    cfg = grpo.parse(["--refilter_each_stage", "--pass_rate_samples", "4"])
    refilter = lambda max_tokens: [2]
    assert curriculum.next_stage_prompts([0, 1, 2, 3], set(), cfg, refilter, 96) == [2]


def test_share_of_groups_with_any_correct_sample():
    """Zero RL's first question: does any sample of a group get it right? Two rounds of 2 groups
    of 4: one group of the four has a correct sample."""

    def roll(correct):
        n = len(correct)
        c = [engines.Completion(0, [1], [2, 3], "x", False) for _ in range(n)]
        return grpo.Rollouts(
            [0, 1],
            c,
            [{}, {}],
            torch.zeros(n),
            torch.zeros(n),
            {},
            torch.tensor(correct),
            torch.zeros(n, dtype=torch.bool),
            torch.ones(n, dtype=torch.bool),
        )

    seen = [roll([False, True, False, False, False, False, False, False]), roll([False] * 8)]
    m = grpo_log.step_metrics(seen, 0.75, {}, {"gen_s": 1.0})
    assert m["groups_any_correct"] == 0.25 and m["accuracy"] == 1 / 16


def test_a_file_task_is_not_evaluated_on_its_own_training_rows(tmp_path, capsys):
    # a file has one split: "test" gave its first --eval_problems rows, the prompts it trained on,
    # reported as held-out accuracy
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"{i}+1?", "answer": i + 1}) + "\n"
                            for i in range(6)))
    train, test = grpo_setup.load_task_splits(grpo.Config(task=str(path), eval_problems=4))
    assert len(train) == 6 and test == []
    out = capsys.readouterr().out                   # said once, with the fix
    assert out.count("no periodic evaluation: --task") == 1 and "'split' column" in out
    # rows that training leaves out are held out (it was off for any single file), seeded
    cfg = grpo.Config(task=str(path), eval_problems=4, num_train_prompts=4, seed=3)
    train, test = grpo_setup.load_task_splits(cfg)
    assert len(train) == 4 and len(test) == 2
    assert not {t["id"] for t in train} & {t["id"] for t in test}
    assert grpo_setup.load_task_splits(cfg) == (train, test)
    assert "--eval_problems 4, but the held-out rows of --task" in capsys.readouterr().out
    # a file that repeats its prompts (under ids of their own, so not read once each): no
    # held-out row is a copy of a trained one
    path.write_text("".join(json.dumps({"id": i, "prompt": f"{i % 6}+1?", "answer": i % 6 + 1})
                            + "\n" for i in range(30)))
    for seed in range(5):
        cfg = grpo.Config(task=str(path), eval_problems=4, num_train_prompts=3, seed=seed)
        train, test = grpo_setup.load_task_splits(cfg)
        assert test and not {t["prompt"] for t in train} & {t["prompt"] for t in test}
    # a file whose rows name their split: evaluated on its test rows, trained on the others
    path.write_text("".join(json.dumps({"prompt": f"{i}+1?", "answer": i + 1,
                                        "split": "test" if i < 2 else "train"}) + "\n"
                            for i in range(6)))
    train, test = grpo_setup.load_task_splits(grpo.Config(task=str(path), eval_problems=4))
    assert [t["prompt"] for t in test] == ["0+1?", "1+1?"] and len(train) == 4
    # no test split, a validation one: evaluated on that (it was held out of training too)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"train": [{"prompt": "1+1?", "answer": 2}],
                                "validation": [{"prompt": "2+2?", "answer": 4}]}))
    train, test = grpo_setup.load_task_splits(grpo.Config(task=str(path), eval_problems=4))
    assert [t["prompt"] for t in train] == ["1+1?"] and [t["prompt"] for t in test] == ["2+2?"]
    train, test = grpo_setup.load_task_splits(grpo.Config(task="math", eval_problems=4,
                                                          num_train_prompts=6))
    assert len(train) == 6 and len(test) == 4
