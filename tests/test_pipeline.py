"""pipeline.py: every recipe's stage list resolves (fast); every recipe runs end to end (slow)."""

import json
from pathlib import Path

import pytest

import pipeline
import stage_eval
import training


@pytest.mark.parametrize("recipe", sorted(pipeline.RECIPES))
@pytest.mark.parametrize("scale", ["demo", "small", "full"])
def test_dry_run_resolves_every_stage(recipe, scale, capsys, tmp_path):
    pipeline.run(
        pipeline.parse(
            ["--recipe", recipe, "--scale", scale, "--dry-run", "--output_dir", str(tmp_path / "r")]
        )
    )
    out = capsys.readouterr().out
    n = len(pipeline.RECIPES[recipe](scale))
    assert out.count("== stage ") == n and out.count("paper: ") == n
    assert not (tmp_path / "r").exists()  # a dry run writes nothing
    # each stage reads the previous stage's checkpoint
    configs = [json.loads(l[len("ours : ") :]) for l in out.splitlines() if l.startswith("ours : ")]
    for prev, cur in zip(configs, configs[1:]):
        assert prev["output_dir"] + "/checkpoint" in (
            cur.get("model"),
            cur.get("teacher"),
            cur.get("student"),
        )


def test_recipe_contents_follow_the_papers():
    phi4 = pipeline.phi4_reasoning("full")
    assert (
        phi4[0].overrides["think_tokens"] == "repurpose"
        and phi4[0].overrides["rope_theta_factor"] == 2.0
    )
    assert phi4[1].overrides["rewards"] == "phi4" and phi4[1].overrides["beta"] == 0.001
    sky = pipeline.skywork_or1("full")[-1].overrides
    assert sky["adaptive_entropy"] and sky["beta"] == 0.0 and sky["temperature"] == 1.0
    assert sky["stages"] == "8192:400,16384:400,32768:400" and sky["pass_rate_samples"] == 16
    q = [s.name for s in pipeline.qwen3("demo")]
    assert q == [
        "cold-start-sft",
        "reasoning-rl",
        "thinking-fusion-sft",
        "general-rl",
        "distill-off-policy",
        "distill-on-policy",
    ]


def test_bad_flags_are_named(tmp_path):
    with pytest.raises(SystemExit, match="--recipe 'qwen4'"):
        pipeline.run(pipeline.parse(["--recipe", "qwen4", "--dry-run"]))
    with pytest.raises(SystemExit, match="--scale 'huge'"):
        pipeline.run(pipeline.parse(["--scale", "huge", "--dry-run"]))


def test_existing_run_needs_resume(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "table.json").write_text("[]")
    with pytest.raises(SystemExit, match="--resume"):
        pipeline.run(pipeline.parse(["--output_dir", str(tmp_path / "r"), "--model", "tiny"]))
    assert (tmp_path / "r" / "table.json").read_text() == "[]"  # nothing lost


def test_qwen3_stages_as_the_report_describes_them(capsys, tmp_path):
    q = {s.name: s for s in pipeline.qwen3("demo")}
    rl = q["reasoning-rl"].overrides
    batch = rl["prompts_per_step"] * rl["num_generations"]
    assert (
        rl["adaptive_entropy"] and batch // rl["mini_batch_size"] >= 2
    )  # off-policy, entropy control
    fusion = q["thinking-fusion-sft"].overrides
    assert (
        fusion["dataset"] == "fusion" and "teacher" not in fusion
    )  # samples from the stage-2 model
    assert 0 < fusion["no_think_ratio"] < 1 and fusion["multi_turn_ratio"] > 0
    general = q["general-rl"]
    names = {n for n, _ in __import__("rewards").parse_reward_spec(general.overrides["rewards"])}
    assert {"math", "instruction", "judge", "reward_model"} <= names and general.overrides[
        "task"
    ] == "general"
    assert (
        general.reward_model_pairs > 0 and general.overrides["judge_model"] == pipeline.BASE_MODEL
    )
    pipeline.run(
        pipeline.parse(["--recipe", "qwen3", "--dry-run", "--output_dir", str(tmp_path / "q")])
    )
    out = capsys.readouterr().out
    configs = [json.loads(l[len("ours : ") :]) for l in out.splitlines() if l.startswith("ours : ")]
    assert configs[1]["mini_batch_size"] == 16 and configs[1]["adaptive_entropy"]
    assert configs[2]["dataset"] == "fusion" and configs[2]["model"].endswith(
        "02-reasoning-rl/checkpoint"
    )
    assert configs[3]["judge_model"] == "smollm2" and configs[3]["reward_model"].endswith(
        "04-general-rl/reward_model"
    )
    assert "Bradley-Terry reward model" in out


def test_global_batch_is_split_over_ranks(monkeypatch, tmp_path):
    assert pipeline.per_device_batch(32, 8) == 4 and pipeline.per_device_batch(32, 2, 4) == 4
    with pytest.raises(ValueError, match="does not split over 3 ranks"):
        pipeline.per_device_batch(32, 3)
    stage = pipeline.phi4_reasoning("full")[0]
    cfg = pipeline.parse([])
    monkeypatch.setattr(pipeline.distributed, "world_size", lambda: 8)
    _, sc = pipeline.stage_config(stage, cfg, tmp_path, "smollm2", None)
    assert sc.per_device_train_batch_size == 4  # the paper's 32 is global
    monkeypatch.setattr(pipeline.distributed, "world_size", lambda: 1)
    _, sc = pipeline.stage_config(stage, cfg, tmp_path, "smollm2", None)
    assert sc.per_device_train_batch_size == 32


def test_reward_model_of_general_rl_learns_the_synthetic_preferences(tmp_path):
    import models
    import rewards

    path = pipeline.train_stage_reward_model("tiny", tmp_path / "rm", 32)
    assert (path / "config.json").exists()
    model, tok = models.load_reward_model(str(path))
    rm = rewards.ScalarRewardModel(model.eval(), tok)
    import data

    tasks = data.instruction_tasks(8, "train", 0)
    chosen = rm.score_batch([t["response"] for t in tasks], tasks)
    rejected = rm.score_batch([t["rejected"] for t in tasks], tasks)
    assert sum(c > r for c, r in zip(chosen, rejected)) >= 6  # trained pairs: chosen scored higher
    assert pipeline.train_stage_reward_model("tiny", path, 32) == path  # trained once, reused


@pytest.mark.slow
@pytest.mark.parametrize("recipe", sorted(pipeline.RECIPES))
def test_each_recipe_runs_end_to_end_at_demo_scale(recipe, tmp_path, monkeypatch):
    import sft_data

    real = sft_data.teacher_examples
    # fusion rejection-samples the stage-2 model; a random tiny model is never right, so verified
    # traces are added to what it sampled (the sampling and the filter still run)
    monkeypatch.setattr(
        sft_data, "teacher_examples", lambda cfg: real(cfg) + sft_data.synthetic_examples(8, 0)
    )
    out = tmp_path / recipe
    args = [
        "--recipe",
        recipe,
        "--model",
        "tiny",
        "--output_dir",
        str(out),
        "--max_steps_scale",
        "0.05",
        "--eval_problems",
        "4",
    ]
    if recipe == "skywork-or1":  # a random model solves nothing: keep every problem
        args += ["--set", "grpo-multistage.pass_rate_min=0"]
    rows = pipeline.run(pipeline.parse(args))
    stages = pipeline.RECIPES[recipe]("demo")
    assert [r["stage"] for r in rows] == ["base"] + [
        f"{i:02d}-{s.name}" for i, s in enumerate(stages, 1)
    ]
    for i, s in enumerate(stages, 1):
        d = out / f"{i:02d}-{s.name}"
        assert (d / "checkpoint" / "config.json").exists() and (
            d / "metrics.jsonl"
        ).read_text().strip()
        assert (d / "DONE.json").exists()
    # a restart with --resume re-runs nothing
    again = pipeline.run(pipeline.parse(args + ["--resume"]))
    assert again == rows


def finished_phi4_run(out, monkeypatch) -> list:
    """A phi4-reasoning run whose stages are all done, and a fake evaluator: the base model
    solves nothing, SFT every 4th problem (every 8th in held-out templates), GRPO every 2nd
    (every 4th). Returns the evaluator's calls (checkpoint, problems, held-out-template
    problems)."""
    calls = []

    def fake_eval(checkpoint, n, max_new_tokens, fit=None, heldout=0, **settings):
        calls.append((checkpoint, n, heldout))
        every = {"02-grpo": 2, "01-sft": 4}.get(Path(checkpoint).parent.name)
        correct = [every is not None and i % every == 0 for i in range(n)]
        held = [every is not None and i % (2 * every) == 0 for i in range(heldout)]
        return {
            "num_problems": n,
            "accuracy": sum(correct) / n,
            "thinking_rate": 1.0,
            "mean_length": 10.0,
            "correct": correct,
            "by_family": {"arithmetic": sum(correct) / n},
            "heldout_accuracy": sum(held) / max(heldout, 1),
            "heldout_problems": heldout,
            "heldout_correct": held,
        }

    monkeypatch.setattr(stage_eval, "eval_stage", fake_eval)
    for i, s in enumerate(pipeline.RECIPES["phi4-reasoning"]("demo"), 1):
        (out / f"{i:02d}-{s.name}" / "checkpoint").mkdir(parents=True)
        (out / f"{i:02d}-{s.name}" / "checkpoint" / "config.json").write_text("{}")
        (out / f"{i:02d}-{s.name}" / "DONE.json").write_text(
            json.dumps({"stage": f"{i:02d}-{s.name}", "minutes": 1.5, "where": "x"})
        )
    (out / "table.json").write_text("[]")
    return calls


def test_resume_reevaluates_finished_stages_on_a_larger_heldout_set(tmp_path, monkeypatch, capsys):
    """`--resume --eval_problems N` with finished stages: nothing is trained again, every row is
    evaluated again on N problems, and the table pairs each stage with the one above."""
    calls = finished_phi4_run(out := tmp_path / "r", monkeypatch)
    args = ["--output_dir", str(out), "--resume", "--eval_problems"]

    rows = pipeline.run(pipeline.parse(args + ["8"]))
    assert [r["stage"] for r in rows] == ["base", "01-sft", "02-grpo"] and len(calls) == 3
    assert [r["accuracy"] for r in rows] == [0.0, 0.25, 0.5] and rows[2]["minutes"] == 1.5
    # sft solves problems 0 and 4, grpo 0, 2, 4, 6: gained 2, lost 0, p = 2 * (1/2)^2
    assert rows[2]["vs_previous"] == {"gained": 2, "lost": 0, "p": 0.5, "problems": 8}
    assert "+2 / -0 (p 0.5)" in capsys.readouterr().out

    pipeline.run(pipeline.parse(args + ["8"]))  # same set: nothing evaluated again
    assert len(calls) == 3
    rows = pipeline.run(pipeline.parse(args + ["16"]))  # a larger set: every row again
    assert len(calls) == 6 and all(r["num_problems"] == 16 for r in rows)
    assert rows[2]["vs_previous"] == {"gained": 4, "lost": 0, "p": 0.125, "problems": 16}


def test_demo_evaluates_512_problems_and_the_starting_model_on_the_first_64(
    tmp_path, monkeypatch, capsys
):
    """Demo defaults: every stage on 512 held-out problems (a 3-point change is resolvable),
    the raw starting model, which runs every answer to the token limit, on the first 64; the
    base/SFT pair is compared on those 64 (the problem lists are prefix-stable)."""
    import data

    assert [t["prompt"] for t in data.math_tasks(128, "test", 1234, levels=(1,))] == [
        t["prompt"] for t in data.math_tasks(512, "test", 1234, levels=(1,))
    ][:128]
    calls = finished_phi4_run(out := tmp_path / "r", monkeypatch)
    rows = pipeline.run(pipeline.parse(["--output_dir", str(out), "--resume"]))
    assert [n for _, n, _ in calls] == [64, 512, 512]
    assert rows[1]["vs_previous"] == {
        "gained": 16,
        "lost": 0,
        "p": pytest.approx(2 * 0.5**16),
        "problems": 64,
    }
    assert rows[2]["vs_previous"]["problems"] == 512 and rows[2]["vs_previous"]["gained"] == 128
    printed = capsys.readouterr().out
    assert (
        "+16 / -0 (p 3.1e-05) on the first 64" in printed and "+128 / -0 (p 5.9e-39) |" in printed
    )


def test_the_table_reports_held_out_templates_paired_across_stages(tmp_path, monkeypatch, capsys):
    """Every stage is also evaluated on problems in templates held out of training (as many as
    in the training templates: 512; the starting model on its 64), paired with the stage above
    by the sign test; the table (printed and table.md) has the columns, and summary.png is
    written."""
    calls = finished_phi4_run(out := tmp_path / "r", monkeypatch)
    rows = pipeline.run(pipeline.parse(["--output_dir", str(out), "--resume"]))
    assert [h for _, _, h in calls] == [64, 512, 512]
    # base solves none of 64; SFT every 8th of the first 64 (8); GRPO every 4th of 512 (128) vs
    # SFT's 64
    assert rows[1]["heldout_vs_previous"] == {
        "gained": 8,
        "lost": 0,
        "p": pytest.approx(2 * 0.5**8),
        "problems": 64,
    }
    assert rows[2]["heldout_vs_previous"] == {
        "gained": 64,
        "lost": 0,
        "p": pytest.approx(2 * 0.5**64),
        "problems": 512,
    }
    printed = capsys.readouterr().out
    header = next(l for l in printed.splitlines() if l.startswith("| stage"))
    assert header.split(" | ")[1:5] == [
        "accuracy",
        "vs previous: gained / lost (p)",
        "held-out templates",
        "vs previous",
    ]
    grpo_line = next(l for l in printed.splitlines() if l.startswith("| 02-grpo"))
    assert "| 0.250 (512) | +64 / -0 (p 1.1e-19) |" in grpo_line
    assert "| 0.125 (512) | +8 / -0 (p 0.0078) on the first 64 |" in next(
        l for l in printed.splitlines() if l.startswith("| 01-sft")
    )
    assert (out / "table.md").read_text().splitlines()[0] == header
    assert (out / "summary.png").exists()
    # none for the held-out templates: the columns stay, empty
    calls.clear()
    rows = pipeline.run(
        pipeline.parse(["--output_dir", str(out), "--resume", "--eval_heldout_problems", "-1"])
    )
    assert [h for _, _, h in calls] == [0, 0, 0] and "heldout_vs_previous" not in rows[2]


def test_the_table_says_which_templates_a_stage_learned():
    """by_template counts each template's solved problems from a row's per-problem results (so
    the counts add up to its accuracy), and template_changes names the templates that moved, the
    largest move first, on the problems both rows saw."""
    tasks, held = stage_eval.eval_tasks(512, 64)
    money = [t["template"] == "arithmetic/change" for t in tasks]
    sft = {"correct": [i % 8 == 0 for i in range(512)], "heldout_correct": [False] * 64}
    # GRPO: every money-change problem right, one held-out-template problem more, one lost
    grpo = {"correct": [ok or m for ok, m in zip(sft["correct"], money)],
            "heldout_correct": [i == 5 for i in range(64)]}
    grpo["correct"][0] = False
    counts = stage_eval.by_template(grpo)
    assert sum(c[1] for c in counts.values()) == 512 + 64
    assert sum(c[0] for c in counts.values()) == sum(grpo["correct"]) + 1
    n_money = sum(money)
    was = sum(ok for ok, m in zip(sft["correct"], money) if m)
    assert n_money >= 10 and was < n_money
    assert counts["arithmetic/change"] == [n_money, n_money]
    first = tasks[0]["template"]
    moved = stage_eval.template_changes(sft, grpo).split(", ")
    assert moved[0] == f"arithmetic/change {was} -> {n_money} of {n_money}"
    assert f"{held[5]['template']} (held out) 0 -> 1 of" in ", ".join(moved)
    assert any(m.startswith(f"{first} ") for m in moved)   # the lost one
    # a base row evaluated on 64 problems: only those 64 are compared
    short = stage_eval.template_changes({"correct": [False] * 64}, grpo)
    assert all(int(m.rsplit(" of ", 1)[1]) <= 64 for m in short.split(", "))
    assert stage_eval.template_changes(sft, sft) == ""


def test_the_table_flags_a_stage_whose_greedy_answers_loop():
    """A stage whose greedy answers run out of tokens far more often than the stage before's is
    named, with the tail of one such answer and the KL flag that holds the drift; a small or
    a shared truncation rate is not (the measured case: SFT 5.9%, GRPO without KL 15.6%)."""
    note = stage_eval.truncation_note
    loop = "The increase is 75% of 96: 96 * 75 / 10000000000000000000000000000000000000000"
    grpo = {"stage": "02-grpo", "truncation_rate": 0.156, "truncated_example": loop}
    line = note({"stage": "01-sft", "truncation_rate": 0.059}, grpo)
    assert line.startswith("02-grpo: 16% of its greedy answers ran out of tokens")
    assert "(the stage before: 6%)" in line and "0000000000'" in line and "grpo.beta" in line
    assert note({"truncation_rate": 0.059}, {**grpo, "truncation_rate": 0.039}) == ""
    assert note({"truncation_rate": 0.08}, {**grpo, "truncation_rate": 0.12}) == ""
    assert note({"truncation_rate": 0.0}, {**grpo, "truncation_rate": 0.09}) == ""


def test_stage_figures_and_the_summary_figure(tmp_path, monkeypatch):
    """Each stage's figure: its curves, the held-out evaluations before (step 0) and after (its
    last step) on the accuracy panel, the share of GRPO groups with signal; no constant panel.
    The summary: accuracy by stage, in-template and held-out templates, with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finished_phi4_run(out := tmp_path / "r", monkeypatch)
    with open(out / "01-sft" / "metrics.jsonl", "w") as f:
        for step in range(1, 11):
            f.write(
                json.dumps(
                    {"step": step, "loss": 2.0 / step, "lr": 2e-4, "grad_norm": 1.0 + step % 3}
                )
                + "\n"
            )
    with open(out / "02-grpo" / "metrics.jsonl", "w") as f:
        for step in range(1, 8):
            f.write(
                json.dumps(
                    {
                        "step": step,
                        "reward": 0.1 * step,
                        "accuracy": 0.05 * step,
                        "entropy": 0.3 - 0.02 * step,
                        "response_length": 40 + step,
                        "groups_filtered": 0.5 - 0.05 * step,
                        "kl": 0.0,
                        "entropy_coef": 0.0,
                        "truncated": 0.0,
                        "step_s": 50.0,
                    }
                )
                + "\n"
            )
    made = []
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    pipeline.run(pipeline.parse(["--output_dir", str(out), "--resume"]))
    assert (out / "01-sft" / "curves.png").exists() and (out / "02-grpo" / "curves.png").exists()
    panels = lambda axes: {ax.get_title(): ax for ax in axes.flat if ax.get_title()}
    sft, grpo, summary = (panels(axes) for _, axes in made)
    assert list(sft) == ["loss", "accuracy", "grad_norm"]  # lr is constant: no panel
    assert list(grpo) == ["reward", "accuracy", "entropy", "response_length", "groups_with_signal"]
    signal = [
        l for l in grpo["groups_with_signal"].get_lines() if l.get_label() == "groups_with_signal"
    ][0]
    assert list(signal.get_ydata())[0] == pytest.approx(0.55)  # smoothed from 1 - 0.45
    lines = {l.get_label(): l for l in grpo["accuracy"].get_lines()}
    assert list(lines["held-out problems (512)"].get_xdata()) == [
        0,
        7,
    ]  # SFT's evaluation, then GRPO's
    assert list(lines["held-out problems (512)"].get_ydata()) == [0.25, 0.5]
    assert list(lines["held-out templates (512)"].get_ydata()) == [0.125, 0.25]
    assert list(lines["accuracy"].get_xdata()) == list(range(1, 8))  # the smoothed rollout accuracy
    sft_lines = {l.get_label(): l for l in sft["accuracy"].get_lines()}
    assert list(sft_lines["held-out problems (64 -> 512)"].get_ydata()) == [0.0, 0.25]
    assert list(sft_lines["held-out templates (64 -> 512)"].get_xdata()) == [0, 10]
    assert (out / "summary.png").exists()
    by_stage = summary["held-out accuracy by stage"]
    assert [t.get_text() for t in by_stage.get_xticklabels()] == ["base", "01-sft", "02-grpo"]
    assert by_stage.get_legend_handles_labels()[1] == [
        "held-out problems, training templates",
        "held-out templates",
    ]
    assert "by family" in summary


def test_fit_eval_problems_hand_computed():
    # 2 evaluations left, 0.7 s a problem, 330 s kept for GRPO, 386.8 s left, 256 of this one done:
    # 512 -> (1024 - 256) * 0.7 + 330 = 867.6 > 386.8; ... 256 is the floor
    assert stage_eval.fit_eval_problems(386.8, 0.7, 2, 330, 512, done=256) == 256
    # 800 s left at 0.27 s: 512 -> 768 * 0.27 + 330 = 537.4 fits
    assert stage_eval.fit_eval_problems(800, 0.27, 2, 330, 512, done=256) == 512
    # 700 s left at 0.5 s: 512 -> 714 no; 448 -> 650 fits
    assert stage_eval.fit_eval_problems(700, 0.5, 2, 330, 512, done=256) == 448



def test_cap_time_budget_says_early_when_the_stage_gets_too_little(tmp_path, capsys):
    # the run's 19 min, 10 min gone; the SFT checkpoint's 256 + 192 problems took 224 s (0.5 s
    # each, priced at 0.625): one evaluation left costs 448 * 0.625 = 280 s, so GRPO gets
    # (540 - 280 - 10) / 60 = 4.17 min of its 14, under the 5 kept for it: said before it trains
    import time
    from types import SimpleNamespace
    evals = stage_eval.Evaluations(tmp_path / "table.json", 256, 64, 192, 96, "hf", 19.0,
                                   time.time() - 600, False, True)
    evals.rows = [{"stage": "01-sft", "num_problems": 256, "heldout_problems": 192,
                   "eval_s": 224.0, "correct": []}]
    sc = SimpleNamespace(time_budget_minutes=14.0)
    evals.t_start = time.time() - 600
    evals.cap_time_budget("02-grpo", sc, 1)
    out = capsys.readouterr().out
    assert 4.1 < sc.time_budget_minutes < 4.2 and evals.cut["02-grpo"][1] == 14.0
    assert "02-grpo: 4 min 10 s is too little to change the table" in out
    assert "--resume --time_budget_minutes 0" in out
    assert "(about 18 min 40 s more)" in out          # 14 min + 280 s
    # 8 minutes of 14 is enough: the cut is said, with no advice to stop
    evals.t_start = time.time() - 360
    sc = SimpleNamespace(time_budget_minutes=14.0)
    evals.cap_time_budget("02-grpo", sc, 1)
    out = capsys.readouterr().out
    assert "instead of 14 min" in out and "too little" not in out

def test_merge_evals_weights_by_problems_and_families():
    a = (
        [{"family": "x"}, {"family": "x"}, {"family": "y"}],
        {
            "metrics": {
                "num_problems": 3,
                "k": 1,
                "pass@1": 2 / 3,
                "accuracy": 2 / 3,
                "thinking_rate": 1.0,
                "mean_length": 30.0,
                "truncation_rate": 0.0,
                "by_family": {"x": 1.0, "y": 0.0},
            },
            "rows": [{"correct": True}, {"correct": True}, {"correct": False}],
        },
    )
    b = (
        [{"family": "y"}],
        {
            "metrics": {
                "num_problems": 1,
                "k": 1,
                "pass@1": 1.0,
                "accuracy": 1.0,
                "thinking_rate": 0.0,
                "mean_length": 70.0,
                "truncation_rate": 1.0,
                "by_family": {"y": 1.0},
            },
            "rows": [{"correct": True}],
        },
    )
    m = stage_eval.merge_evals([a, b])
    assert m["metrics"]["num_problems"] == 4 and m["metrics"]["accuracy"] == 0.75
    assert m["metrics"]["mean_length"] == 40.0 and m["metrics"]["thinking_rate"] == 0.75
    assert m["metrics"]["by_family"] == {"x": 1.0, "y": 0.5}
    assert [r["correct"] for r in m["rows"]] == [True, True, False, True]


def all_wrong(tasks: list[dict], thinking_rate: float) -> dict:
    """A greedy `evaluate.evaluate_model` result on `tasks` in which every answer is wrong."""
    return {
        "metrics": {
            "num_problems": len(tasks),
            "k": 1,
            "pass@1": 0.0,
            "accuracy": 0.0,
            "thinking_rate": thinking_rate,
            "mean_length": 9.0,
            "truncation_rate": 0.0,
        },
        "rows": [{"correct": False} for _ in tasks],
    }


@pytest.mark.parametrize("machine", ["fast", "slow"])
def test_demo_budget_sizes_evaluation_and_grpo_to_the_machine(
    machine, tmp_path, monkeypatch, capsys
):
    """The demo's 19-minute budget on a fake clock; each evaluation also runs as many problems
    in held-out templates (the starting model: 64 + 64). Fast machine (base 0.3 s a problem,
    SFT 3.5 min, trained model 0.27 s): 512 + 512 problems, and GRPO gets what is left of the
    budget after the SFT evaluation and its own, priced at 1.25 x the SFT's pace (PACE_MARGIN):
    (1140 - 38 - 210 - 276 - 1.25 x 276 - 10) / 60 = 4.33 min of the 14 it asks for. Slow
    machine (1.0 s, 8.5 min, 0.7 s): after the first 256 of the SFT evaluation, 512 no longer
    fits, and 256 in held-out templates would leave GRPO nothing, so every stage gets 256 + 64,
    and GRPO gets the floor of 0.5 min ((1140 - 862 - 1.25 x 320 x 0.7 - 10) / 60 < 0)."""
    import evaluate
    import grpo
    import sft

    base_pace, sft_minutes, pace = {"fast": (0.3, 3.5, 0.27), "slow": (1.0, 8.5, 0.7)}[machine]
    clock = [0.0]
    fake_time = type("FakeTime", (), {"time": staticmethod(lambda: clock[0])})
    monkeypatch.setattr(pipeline, "time", fake_time)
    monkeypatch.setattr(stage_eval, "time", fake_time)
    monkeypatch.setattr(stage_eval.models, "load_policy", lambda ck: (ck, None))
    monkeypatch.setattr(stage_eval.engines, "make_engine", lambda *a, **k: None)
    monkeypatch.setattr(
        stage_eval.data,
        "prompt_ids",
        lambda tok, tasks, **kw: [[0] * len(t["prompt"]) for t in tasks],
    )
    evaluated, budgets = [], []

    def fake_evaluate_model(model, tok, tasks, **kw):
        clock[0] += len(tasks) * (base_pace if model == "smollm2" else pace)
        evaluated.append((model, len(tasks)))
        return all_wrong(tasks, thinking_rate=1.0)

    def fake_train(minutes):
        def train(sc):
            Path(sc.output_dir).mkdir(parents=True)
            budgets.append(getattr(sc, "time_budget_minutes", None))
            clock[0] += 60 * (minutes or sc.time_budget_minutes)

        return train

    monkeypatch.setattr(evaluate, "evaluate_model", fake_evaluate_model)
    monkeypatch.setattr(sft, "train", fake_train(sft_minutes))
    monkeypatch.setattr(grpo, "train", fake_train(None))
    rows = pipeline.run(pipeline.parse(["--output_dir", str(tmp_path / "r")]))
    sizes = [n for _, n in evaluated]
    if machine == "fast":
        assert sizes == [64, 64, 256, 256, 512, 512, 512]
        grpo_minutes = (1140 - 128 * 0.3 - 210 - 2.25 * 1024 * 0.27 - 10) / 60
        assert budgets == [None, pytest.approx(grpo_minutes)]
        assert [r["num_problems"] for r in rows] == [64, 512, 512]
        assert [r["heldout_problems"] for r in rows] == [64, 512, 512]
    else:
        assert sizes == [64, 64, 256, 64, 256, 64] and budgets[1] == pytest.approx(0.5)
        assert [r["num_problems"] for r in rows] == [64, 256, 256]
        assert [r["heldout_problems"] for r in rows] == [64, 64, 64]
    out = capsys.readouterr().out
    if machine == "slow":
        assert "every stage is evaluated on 256 (and 64 in held-out templates)" in out
    assert clock[0] <= 19 * 60
    # every evaluation here is all wrong: no stage changed anything, and the run says so, with
    # where the budget cut GRPO short (SFT has no time budget to cut)
    given = budgets[1]
    assert (
        "02-grpo: no significant change on the held-out problems (+0 / -0 (p 1)); the run's "
        f"budget of 19 min left it {training.duration(60 * given)} of its 14 min on this "
        "machine." in out
    )
    assert "01-sft: no significant change on the held-out problems (+0 / -0 (p 1))." in out


def test_still3_recipes_zero_rl_and_tool_rl():
    """zero-rl: one GRPO stage from the starting model, the short prompt, outcome + format reward,
    no early stop (the signal is what it measures); tool-rl: SFT on tool traces, then GRPO with
    tools, both evaluated with tools."""
    (zero,) = pipeline.zero_rl("demo")
    o = zero.overrides
    assert (
        zero.script == "grpo"
        and o["prompt_style"] == "short"
        and o["max_steps_without_signal"] == 0
    )
    assert {n for n, _ in __import__("rewards").parse_reward_spec(o["rewards"])} == {
        "math",
        "format",
    }
    assert pipeline.zero_rl("full")[0].overrides["kl_anneal"] == "cosine"
    sft_stage, rl = pipeline.tool_rl("demo")
    assert (
        sft_stage.overrides["dataset"] == "math_tools"
        and rl.overrides["tools"]
        and rl.script == "grpo"
    )
    cfg = pipeline.parse([])
    assert pipeline.eval_settings(zero, cfg) == {"prompt_style": "short", "with_tools": False}
    assert pipeline.eval_settings(rl, cfg) == {"prompt_style": "default", "with_tools": True}
    cfg = pipeline.parse(["--set", "zero-rl.prompt_style=long"])
    assert pipeline.eval_settings(zero, cfg)["prompt_style"] == "long"


def test_stages_are_evaluated_in_their_prompt_style_and_with_their_tools(
    tmp_path, monkeypatch, tokenizer
):
    """The starting model and the stage both in the stage's style; the caller's style is kept."""
    import data
    import evaluate

    seen = []

    def fake_evaluate_model(model, tok, tasks, engine=None, **kw):
        seen.append((data.build_messages(tasks[0])[0]["content"], type(engine).__name__))
        return all_wrong(tasks, thinking_rate=0.0)

    monkeypatch.setattr(evaluate, "evaluate_model", fake_evaluate_model)
    monkeypatch.setattr(stage_eval.models, "load_policy", lambda ck: ("model", tokenizer))
    monkeypatch.setattr(
        stage_eval.engines,
        "HFEngine",
        lambda *a, **k: type("HF", (), {"tokenizer": None, "stop_ids": []})(),
    )
    stage_eval.eval_stage("x", 2, 8, prompt_style="short")
    stage_eval.eval_stage("x", 2, 8, with_tools=True)
    first = data.math_tasks(1, "test", 1234, levels=(1,))[0]
    assert seen == [
        (data.SHORT_SYSTEM, "HF"),
        (f"{first['prompt']}\n{data.MATH_INSTRUCTION}", "ToolEngine"),
    ]
    assert data.CURRENT_STYLE["name"] == "default"
