"""evaluate.py: the unbiased pass@k estimator and the evaluation loop."""

import json
import math

import pytest

import evaluate
import stage_eval


@pytest.mark.parametrize(
    "n,c,k,expected",
    [
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (5, 2, 1, 0.4),  # pass@1 = c/n
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (10, 0, 5, 0.0),
        (3, 3, 2, 1.0),
        (8, 6, 3, 1.0),  # n - c < k: every draw of 3 holds a correct one
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert math.isclose(evaluate.pass_at_k(n, c, k), expected, rel_tol=1e-12)


def test_pass_at_k_matches_binomial_formula():
    for n in range(1, 12):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert math.isclose(evaluate.pass_at_k(n, c, k), exact, abs_tol=1e-12)


def test_pass_at_k_rejects_k_above_n():
    with pytest.raises(ValueError, match="k=5"):
        evaluate.pass_at_k(4, 1, 5)


def test_thinking_detection():
    assert evaluate.has_closed_think("<think>\nstep\n</think>\n\n\\boxed{1}")
    assert not evaluate.has_closed_think(
        "<think>\n\n</think>\n\n\\boxed{1}"
    )  # empty: no-think mode
    assert not evaluate.has_closed_think("<think>never closed")


def test_accuracy_by_family_and_pass_at_k_from_scripted_engine(tokenizer):
    """A scripted engine: 2 samples per problem, the arithmetic answers right once, the linear
    ones never. avg@2 = 1/4 overall, by family 0.5 and 0.0, pass@2 = 0.5."""
    import data
    import engines

    pool = data.math_tasks(12, "test", 0, families=["arithmetic", "linear"], levels=(1,))
    tasks = [t for t in pool if t["family"] == "arithmetic"][:2] + [
        t for t in pool if t["family"] == "linear"
    ][:2]

    class Scripted:
        def generate(self, prompts, params):
            outs = []
            for i, t in enumerate(tasks):
                for j in range(params.n):
                    ans = t["answer"] if (t["family"] == "arithmetic" and j == 0) else "999999"
                    outs.append(
                        engines.Completion(
                            i, [], [1, 2, 3], f"<think>\nx\n</think>\n\n\\boxed{{{ans}}}", False
                        )
                    )
            return outs

    r = evaluate.evaluate_model(None, tokenizer, tasks, k=2, engine=Scripted())["metrics"]
    assert r["avg@2"] == pytest.approx(0.25)
    assert r["by_family"] == {"arithmetic": pytest.approx(0.5), "linear": 0.0}
    assert r["pass@2"] == pytest.approx(0.5)
    assert r["thinking_rate"] == 1.0 and r["mean_length"] == 3.0



def test_prompts_only_tasks_get_no_accuracy(tokenizer):
    """Tasks with no answer, tests or constraints (--answer_field none) have nothing to grade:
    accuracy and pass@k are None, not 0.000."""
    import engines

    tasks = [{"id": "a", "prompt": "Say hi."}, {"id": "b", "prompt": "Name a colour."}]

    class Scripted:
        def generate(self, prompts, params):
            return [engines.Completion(i, [], [1], "<think>\nx\n</think>\n\n\\boxed{hi}", False)
                    for i in range(len(prompts)) for _ in range(params.n)]

    r = evaluate.evaluate_model(None, tokenizer, tasks, k=2, engine=Scripted())["metrics"]
    assert r["accuracy"] is None and r["avg@2"] is None and r["pass@2"] is None
    assert r["thinking_rate"] == 1.0
    tasks[0]["answer"] = "hi"
    r = evaluate.evaluate_model(None, tokenizer, tasks, k=2, engine=Scripted())["metrics"]
    assert r["accuracy"] == 0.5

@pytest.mark.parametrize(
    "gained,lost,expected",
    [
        (5, 0, 2 / 32),  # 2 * C(5,5) / 2^5
        (6, 1, 2 * 8 / 128),  # 2 * (C(7,6) + C(7,7)) / 2^7
        (1, 6, 2 * 8 / 128),  # two-sided: symmetric
        (2, 0, 0.5),
        (3, 3, 1.0),
        (0, 0, 1.0),
    ],
)
def test_sign_test_hand_computed(gained, lost, expected):
    assert math.isclose(evaluate.sign_test(gained, lost), expected, rel_tol=1e-12)


def test_paired_counts_discordant_problems():
    old = [True, False, False, True, False]
    new = [True, True, True, False, False]
    assert evaluate.paired(old, new) == {"gained": 2, "lost": 1, "p": 1.0}
    with pytest.raises(ValueError, match="same problems"):
        evaluate.paired(old, new[:3])


def test_eval_problems_of_a_file_are_a_seeded_sample_not_its_first_rows(tmp_path):
    # MMLU's file is sorted by subject: --eval_problems 15 scored its first subject alone
    path = tmp_path / "sorted.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"{s} {i}?", "answer": i, "subject": s}) + "\n"
                            for s in ("algebra", "biology", "chemistry") for i in range(20)))
    cfg = evaluate.Config(task=str(path), eval_problems=15, seed=1)
    picked = evaluate.load_eval_tasks(cfg)
    assert len(picked) == 15 and len({t["subject"] for t in picked}) == 3
    assert picked == evaluate.load_eval_tasks(cfg)


def test_math_templates_held_out_are_the_pipelines_held_out_problems():
    # The pipeline's table scores templates held out of training; --math_templates held_out
    # asks evaluate.py for the same problems (seed 1234, level 1), e.g. to measure pass@8 there
    cfg = evaluate.Config(math_templates="held_out", math_levels="1", seed=1234, eval_problems=6)
    picked = evaluate.load_eval_tasks(cfg)
    assert picked == stage_eval.eval_tasks(6, 6)[1]
    assert all(t["held_out"] for t in picked)
    seen = evaluate.load_eval_tasks(evaluate.Config(math_levels="1", seed=1234, eval_problems=6))
    assert seen == stage_eval.eval_tasks(6)[0] and not any(t["held_out"] for t in seen)


def test_math_templates_held_out_outside_the_test_split_is_refused():
    with pytest.raises(ValueError, match="--math_templates held_out with --split train: the "
                       "held-out templates exist in the test split only; use --split test"):
        evaluate.check_config(evaluate.Config(math_templates="held_out", split="train"))
    with pytest.raises(ValueError,
                       match="--math_templates 'all' never applies without --task math"):
        evaluate.check_config(evaluate.Config(math_templates="all", task="x.jsonl"))
