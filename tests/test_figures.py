"""figures.py: the command line (fast) and every figure at tiny scale (slow: ~1 min each on 2
cores; one tiny SFT checkpoint shared by all of them)."""

import json

import pytest

import cli
import figures

# per figure: the runs, and the series every run must hold with at least one point
EXPECTED = {
    "entropy": (3, ["entropy", "entropy_coef", "accuracy", "eval_accuracy"]),
    "length_reward": (2, ["wrong_length", "wrong_share", "accuracy", "eval_accuracy"]),
    "thinking_budget": (3, ["accuracy", "mean_length"]),
    "still3_settings": (4, ["reward", "response_length", "entropy", "beta", "eval_accuracy"]),
    "length_bias": (3, ["wrong_length", "accuracy", "eval_accuracy"]),
    "distill_vs_rl": (2, ["eval_accuracy", "eval_forward_kl", "eval_reverse_kl"]),
}


def test_every_figure_is_tested():
    assert set(EXPECTED) == set(figures.FIGURES)


def test_unknown_figure_is_a_one_line_error(capsys):
    assert cli.main(figures.run, figures.parse, ["entropie"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "unknown figure 'entropie'" in err and all(
        name in err for name in [*figures.FIGURES, "all"]
    )


def test_parse():
    names, cfg = figures.parse(["all", "--scale", "tiny", "--minutes", "5"])
    assert names == list(figures.FIGURES) and cfg.model == "tiny" and cfg.minutes == 5
    with pytest.raises(cli.UsageError) as bad_flag:
        figures.parse(["entropy", "--minute", "5"])
    assert "did you mean --minutes?" in bad_flag.value.message
    with pytest.raises(cli.UsageError) as no_name:
        figures.parse(["--scale", "tiny"])
    assert "name a figure" in no_name.value.message


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("figures")
    return root / "out", root / "runs"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECTED))
def test_figure_at_tiny_scale(name, dirs):
    out, runs = dirs
    [png] = figures.run(
        figures.parse([name, "--scale", "tiny", "--output_dir", str(out), "--runs_dir", str(runs)])
    )
    assert png == out / f"{name}.png" and png.stat().st_size > 10_000
    record = json.loads((out / f"{name}.json").read_text())
    n_runs, keys = EXPECTED[name]
    assert record["figure"] == name and record["claim"] and len(record["runs"]) == n_runs
    for run, rec in record["runs"].items():
        for key in keys:
            assert len(rec["series"][key]) > 0, f"{name}: run {run!r} has no {key!r} points"
            assert all(len(point) == 2 for point in rec["series"][key])
