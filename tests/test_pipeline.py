"""pipeline.py: every recipe's stage list resolves (fast); every recipe runs end to end (slow)."""
import json

import pytest

import pipeline


@pytest.mark.parametrize("recipe", sorted(pipeline.RECIPES))
@pytest.mark.parametrize("scale", ["demo", "small", "full"])
def test_dry_run_resolves_every_stage(recipe, scale, capsys, tmp_path):
    pipeline.run(pipeline.parse(["--recipe", recipe, "--scale", scale, "--dry-run",
                                 "--output_dir", str(tmp_path / "r")]))
    out = capsys.readouterr().out
    n = len(pipeline.RECIPES[recipe](scale))
    assert out.count("== stage ") == n and out.count("paper: ") == n
    assert not (tmp_path / "r").exists()          # a dry run writes nothing
    # each stage reads the previous stage's checkpoint
    configs = [json.loads(l[len("ours : "):]) for l in out.splitlines() if l.startswith("ours : ")]
    for prev, cur in zip(configs, configs[1:]):
        assert prev["output_dir"] + "/checkpoint" in (cur.get("model"), cur.get("teacher"), cur.get("student"))


def test_recipe_contents_follow_the_papers():
    phi4 = pipeline.phi4_reasoning("full")
    assert phi4[0].overrides["think_tokens"] == "repurpose" and phi4[0].overrides["rope_theta_factor"] == 2.0
    assert phi4[1].overrides["rewards"] == "phi4" and phi4[1].overrides["beta"] == 0.001
    sky = pipeline.skywork_or1("full")[-1].overrides
    assert sky["adaptive_entropy"] and sky["beta"] == 0.0 and sky["temperature"] == 1.0
    assert sky["stages"] == "8192:400,16384:400,32768:400" and sky["pass_rate_samples"] == 16
    q = [s.name for s in pipeline.qwen3("demo")]
    assert q == ["cold-start-sft", "reasoning-rl", "thinking-fusion-sft", "general-rl",
                 "distill-off-policy", "distill-on-policy"]


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
    assert (tmp_path / "r" / "table.json").read_text() == "[]"    # nothing lost


@pytest.mark.slow
@pytest.mark.parametrize("recipe", sorted(pipeline.RECIPES))
def test_each_recipe_runs_end_to_end_at_demo_scale(recipe, tmp_path):
    out = tmp_path / recipe
    args = ["--recipe", recipe, "--model", "tiny", "--output_dir", str(out),
            "--max_steps_scale", "0.05", "--eval_problems", "4",
            "--set", "grpo-multistage.pass_rate_min=0"]    # a random model solves nothing
    rows = pipeline.run(pipeline.parse(args))
    stages = pipeline.RECIPES[recipe]("demo")
    assert [r["stage"] for r in rows] == ["base"] + [f"{i:02d}-{s.name}" for i, s in enumerate(stages, 1)]
    for i, s in enumerate(stages, 1):
        d = out / f"{i:02d}-{s.name}"
        assert (d / "checkpoint" / "config.json").exists() and (d / "metrics.jsonl").read_text().strip()
        assert (d / "DONE.json").exists()
    # a restart with --resume re-runs nothing
    again = pipeline.run(pipeline.parse(args + ["--resume"]))
    assert again == rows
