"""The pipeline's bookkeeping around its stages: the `--set` items typed as the fields of a
stage's script (`user_overrides`), what `--resume` checks before anything in the run directory is
written (`check_resumable`), and the `--dry-run` table of a stage's settings beside the paper's
(`settings_table`).

`cfg` is a `pipeline.Config` and `stage` a `pipeline.Stage` throughout.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path

import cli


def _bool(value: str) -> bool:
    """'true'/'1'/'yes' or 'false'/'0'/'no': a typo is an error, not a silent False."""
    if value.strip().lower() not in ("1", "true", "yes", "0", "false", "no"):
        raise ValueError(f"{value!r} is not a boolean: write true or false")
    return value.strip().lower() in ("1", "true", "yes")


def set_items(spec: str) -> list[str]:
    """--set 'grpo.math_levels=1,2,grpo.beta=0.01' -> its STAGE.FIELD=VALUE items: a comma starts
    a new item only before `STAGE.FIELD=`, so a value may hold commas."""
    return [x.strip() for x in re.split(r",(?=\s*[\w-]+\.\w+=)", spec) if x.strip()]


def joined_sets(argv: list[str]) -> list[str]:
    """Every `--set` of a command line as one: argparse kept only the last, and the stages ran
    without the others' values.

    >>> joined_sets(["--set", "grpo.beta=0.1", "--dry-run", "--set=sft.max_steps=5"])
    ['--dry-run', '--set', 'grpo.beta=0.1,sft.max_steps=5']
    """
    sets, rest, i = [], [], 0
    while i < len(argv):
        if argv[i] == "--set" and i + 1 < len(argv):
            sets.append(argv[i + 1])
            i += 2
            continue
        if argv[i].startswith("--set="):
            sets.append(argv[i][len("--set="):])
        else:
            rest.append(argv[i])
        i += 1
    return [*rest, "--set", ",".join(sets)] if len(sets) > 1 else list(argv)


def user_overrides(spec: str, stage) -> dict:
    """'grpo.max_steps=40,sft.learning_rate=1e-4' -> this stage's {field: typed value}, typed as
    the field of its script's Config. A comma starts a new item only before `STAGE.FIELD=`, so a
    value may hold commas: 'grpo.math_levels=1,2,grpo.beta=0.01'.

    >>> from pipeline import Stage
    >>> user_overrides("grpo.math_levels=1,2,grpo.beta=0.01", Stage("grpo", "grpo", {}))
    {'math_levels': '1,2', 'beta': 0.01}
    """
    fields = dataclasses.fields(importlib.import_module(stage.script).Config)
    types = {f.name: f.type for f in fields}
    # HfArgumentParser rewrites a parsed field's `float | None` to `float`: the default tells
    optional = {f.name for f in fields if f.default is None or str(f.type).endswith("| None")}
    out = {}
    for item in set_items(spec):
        key, sep, value = item.partition("=")
        name, dot, fld = (k.strip() for k in key.partition("."))
        if not (sep and dot):
            raise cli.UsageError(f"--set {item!r}: write STAGE.FIELD=VALUE, e.g. grpo.max_steps=40")
        if name != stage.name:
            continue
        if fld in out:      # the last one won without a word
            raise cli.UsageError(f"--set: {name}.{fld} is set twice; give it once")
        if fld not in types:
            close = cli.did_you_mean(f"--{fld}", [f"--{t}" for t in types])
            hint = (close.replace("--", f"{name}.") if close.startswith("did") else
                    f"python {stage.script}.py --help lists them")
            raise cli.UsageError(f"--set {item!r}: {stage.script}.Config has no field {fld!r}; "
                                 f"{hint}")
        t = getattr(types[fld], "__name__", str(types[fld])).replace(" | None", "")
        value = value.strip()
        try:            # a bare "invalid literal for int()" named neither the field nor the item
            out[fld] = (None if fld in optional and value.lower() == "none" else
                        {"bool": _bool, "int": int, "float": float}.get(t, str)(value))
        except ValueError:
            what = {"bool": "a boolean (true or false)", "int": "a whole number"}.get(t, "a number")
            raise ValueError(f"--set {item!r}: {value!r} is not {what}, as {fld} needs"
                             + " (or none)" * (fld in optional)) from None
        if fld in ("output_dir", "resume", "overwrite", "engine", stage.input_field):  # ignored
            raise cli.UsageError(f"--set {item!r}: the pipeline sets {fld} itself (a stage "
                                 "starts from the one before); use its --output_dir, --resume, "
                                 "--engine or --model")
    return out


# What makes a stage's DONE.json and checkpoint the ones this command would train: with another
# value, --resume would skip "finished" stages of another recipe, scale or starting model and
# report them as this run's. A finished stage's own --set items and the step scale must match
# too; the stages still to run may change them (e.g. GRPO settings after a finished SFT stage).
# The evaluation, engine, threads and time budget may change.
SAME_ON_RESUME = ("recipe", "scale", "model")


def read_json(path: Path, what: str, kind: type = dict):
    """A JSON file this run wrote earlier, holding a `kind` (an object, a list), or ValueError
    naming it and the fix ('null' or '[]' in a hand-edited record was a TypeError later)."""
    try:
        value = json.loads(path.read_text())
        if not isinstance(value, kind):
            raise ValueError(f"it holds a {type(value).__name__}, not a {kind.__name__}")
        return value
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"--resume: {path} ({what}) cannot be read ({e}); it is damaged. Restore "
                         "it, delete it (the finished stages are kept and evaluated again), or "
                         "start over with another --output_dir (nothing was changed)") from None


def check_resumable(cfg, out: Path, plan):
    """--resume of `out`: the run was made by the same recipe, scale and starting model, its
    finished stages with the same --set items and step scale, and its table and stage records
    read; otherwise one line with the fix, before anything in `out` is written. `plan`: the
    recipe's `pipeline.stage_plan`."""
    if not out.is_dir() or not any(out.iterdir()):     # it ran a whole new pipeline
        raise ValueError(f"--resume: {out} holds no run to resume (it is missing or empty); drop "
                         "--resume to start one there, or pass the --output_dir of the run to "
                         "continue (nothing was changed)")
    if (out.is_dir() and any(out.iterdir()) and not (out / "pipeline.json").exists()
            and not any(d.is_dir() and re.match(r"\d\d-", d.name) for d in out.iterdir())):
        raise ValueError(f"--resume: {out} holds no pipeline run (no pipeline.json, no stage "
                         "folders such as 01-sft): another tool's output? Pass the pipeline's "
                         "--output_dir, or a new one (nothing was changed)")
    if (out / "pipeline.json").exists():
        before = read_json(out / "pipeline.json", "the run's settings")
        changed = [f"--{k} {before.get(k)!r} (now {getattr(cfg, k)!r})" for k in SAME_ON_RESUME
                   if k in before and before[k] != getattr(cfg, k)]
        if not changed:
            finished = [s for _, s, stage_dir, _, _ in plan if (stage_dir / "DONE.json").exists()]
            scale = before.get("max_steps_scale", cfg.max_steps_scale)
            if finished and scale != cfg.max_steps_scale:
                changed.append(f"--max_steps_scale {scale!r} (now {cfg.max_steps_scale!r})")
            changed += [f"--set for the finished stage {s.name!r}: {old!r} (now {new!r})"
                        for s in finished
                        if (old := user_overrides(before.get("set", ""), s))
                        != (new := user_overrides(cfg.set, s))]
        if changed:
            raise ValueError(f"--resume: {out} was run with {', '.join(changed)}; its finished "
                             "stages would be taken for this run's. Resume with the run's own "
                             "values, or pass another --output_dir (nothing was changed)")
    if (out / "table.json").exists():
        read_json(out / "table.json", "the table of evaluations", list)
    for done in sorted(out.glob("*/DONE.json")):
        read_json(done, "the record of a finished stage")
        if not (done.parent / "checkpoint" / "config.json").exists():
            raise ValueError(f"--resume: {done.parent} is marked finished but holds no "
                             f"checkpoint; delete {done} to train the stage again (nothing was "
                             "changed)")


def settings_table(stage, sc) -> str:
    """A stage's key settings, ours next to the paper's, under the script's flag names (a paper
    value with no flag of its own is listed with ours as '-')."""
    ours = dataclasses.asdict(sc)
    keys = list(dict.fromkeys([*stage.paper, *(k for k in stage.overrides if k in ours)]))
    width = max(len(k) for k in keys) if keys else 8
    lines = [f"  {'setting':<{width}}  {'ours':<28}  paper", f"  {'-' * width}  {'-' * 28}  -----"]
    for k in keys:
        mine = ours.get(k, stage.overrides.get(k, "-"))
        lines.append(f"  {k:<{width}}  {str(mine):<28}  {stage.paper.get(k, '')}")
    return "\n".join(lines)
