"""The pipeline's evaluations of its stages and what it writes from them: each stage's checkpoint
on held-out problems (`eval_stage`: greedy accuracy, thinking rate, mean length, in the training
templates and in templates held out of training), the set sizes the run's time budget allows
(`Evaluations`, `fit_eval_problems`), the table (table.json and table.md, each stage paired with
the one above by the sign test, and the templates whose problems it moved) and the figures
(each stage's curves.png, summary.png).
`pipeline.py` holds the recipes and the loop over their stages; this file, what it measures.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import data
import engines
import evaluate
import models
import runs
import tools
from training import duration

# what the budget keeps for each time-budgeted stage before shrinking evaluation
MIN_ELASTIC_MINUTES = 5.0
# a budget never shrinks the held-out set below this; it is evaluated first
LEAST_EVAL_PROBLEMS = 256
# evaluations still to come are priced at this many times the latest one's pace: a 2-core
# host's speed drifts within a run (a GRPO checkpoint's 1024 problems once took 203 s after the
# SFT checkpoint's took 146 s), and the budget must hold anyway
PACE_MARGIN = 1.25


def fit_eval_problems(left_s: float, s_per_problem: float, evals_left: int, reserve_s: float,
                      most: int, done: int = 0, least: int = LEAST_EVAL_PROBLEMS,
                      step: int = 64) -> int:
    """The largest n in most, most-step, ... (never below `least`) whose evaluations still to run
    fit the time left, `done` problems of the current one being evaluated already:
    (evals_left * n - done) * s_per_problem + reserve_s <= left_s."""
    n = most
    while n - step >= least and (evals_left * n - done) * s_per_problem + reserve_s > left_s:
        n -= step
    return n


def merge_evals(parts: list[tuple[list[dict], dict]]) -> dict:
    """One evaluation from consecutive pieces [(tasks, evaluate_model result)] of greedy (k=1)
    results: per-problem means weighted by problem counts, rows concatenated in order."""
    n = sum(len(t) for t, _ in parts)
    metrics = {**parts[0][1]["metrics"], "num_problems": n}
    for key in ("pass@1", "accuracy", "thinking_rate", "mean_length", "truncation_rate"):
        metrics[key] = sum(r["metrics"][key] * len(t) for t, r in parts) / n
    if "by_family" in metrics:
        count = lambda tasks, f: sum(t.get("family") == f for t in tasks)
        families = {f for _, r in parts for f in r["metrics"].get("by_family", {})}
        metrics["by_family"] = {
            f: sum(r["metrics"].get("by_family", {}).get(f, 0.0) * count(t, f) for t, r in parts)
            / max(sum(count(t, f) for t, _ in parts), 1) for f in sorted(families)}
    return {"metrics": metrics, "rows": [row for _, r in parts for row in r["rows"]]}


def eval_tasks(n: int, heldout: int = 0) -> tuple[list[dict], list[dict]]:
    """The evaluation's problems: `n` in the training templates and `heldout` in templates held
    out of training (test split, level 1, one seed; prefix-stable: the first 256 of 512 are the
    256)."""
    tasks = data.math_tasks(n, "test", seed=1234, levels=(1,))
    held = (data.math_tasks(heldout, "test", seed=1234, levels=(1,), templates="held_out")
            if heldout > 0 else [])
    return tasks, held


def eval_stage(checkpoint: str, n: int, max_new_tokens: int, fit=None, engine: str = "auto",
               prompt_style: str = "default", with_tools: bool = False, heldout: int = 0) -> dict:
    """Greedy accuracy, thinking rate and mean length on held-out synthetic math (test split),
    with each problem's result ("correct") for the paired comparison between stages, and the
    seconds it took (`eval_s`: the pipeline's budget plans the evaluations still to come).
    With `fit(seconds_per_problem, done) -> (n, heldout)`, the first LEAST_EVAL_PROBLEMS are
    evaluated, then as many more (and as many in held-out templates) as `fit` allows (up to n
    and `heldout`). The batches are the same either way.
    `prompt_style` and `with_tools`: as the stage trained (`pipeline.eval_settings`).
    `heldout` > 0: also `heldout` problems in templates no training data holds (the same
    skills in other words: `data.math_tasks(templates="held_out")`), after the others, as
    heldout_accuracy, heldout_correct, heldout_problems, heldout_by_family."""
    model, tok = models.load_policy(checkpoint)
    t0 = time.time()
    tasks, held = eval_tasks(n, heldout)
    longest = max(map(len, data.prompt_ids(tok, tasks + held, style=prompt_style)))
    engine = engines.make_engine(engine, model, tok, max_model_len=longest + max_new_tokens,
                                 batch_size=min(max(n, 1), 128))   # batch_size: the HF engine's
    engine = tools.ToolEngine(engine) if with_tools else engine
    t_pace = time.time()   # the pace per problem leaves out the engine's start-up
    first = LEAST_EVAL_PROBLEMS if fit is not None and n > LEAST_EVAL_PROBLEMS else n

    def run(part):   # in the stage's prompt style; the caller's style is put back
        before = data.set_prompt_style(prompt_style)
        try:
            return part, evaluate.evaluate_model(model, tok, part, k=1,
                                                 max_new_tokens=max_new_tokens, engine=engine)
        finally:
            data.set_prompt_style(before)
    parts = [run(tasks[:first])]
    total, n_held = fit((time.time() - t_pace) / first, first) if first < n else (n, len(held))
    if total > first:
        parts.append(run(tasks[first:total]))
    held = held[:n_held]   # prefix-stable too
    r = merge_evals(parts) if len(parts) > 1 else parts[0][1]
    out = {**r["metrics"], "correct": [row["correct"] for row in r["rows"]]}
    cut = [row["text"] for row in r["rows"] if row.get("truncated")]
    if cut:   # one answer that ran out of tokens, for `truncation_note`
        out["truncated_example"] = cut[0]
    if held:
        h = run(held)[1]
        out.update(heldout_accuracy=h["metrics"]["accuracy"], heldout_problems=len(held),
                   heldout_correct=[row["correct"] for row in h["rows"]],
                   heldout_by_family=h["metrics"].get("by_family", {}))
    return {**out, "eval_s": time.time() - t0}


def with_paired(rows: list[dict]) -> list[dict]:
    """Each row gets `vs_previous`: problems it solves that the row above did not (gained), the
    reverse (lost), and the sign test's p (evaluate.sign_test), on the problems both rows saw
    (`data.math_tasks` lists are prefix-stable: the first 128 of 512 are the 128). 128 problems
    cannot tell a 3-point change from noise; the paired count shows whether a difference is more.
    The held-out-template problems (`heldout_correct`) are paired the same way
    (`heldout_vs_previous`)."""
    for prev, row in zip(rows, rows[1:]):
        for results, out in (("correct", "vs_previous"),
                             ("heldout_correct", "heldout_vs_previous")):
            n = min(len(prev.get(results, [])), len(row.get(results, [])))
            if n:
                row[out] = {**evaluate.paired(prev[results][:n], row[results][:n]), "problems": n}
    return rows


def paired_text(v: dict | None, n: int) -> str:
    """'+32 / -11 (p 0.002)', with 'on the first 64' where fewer than the row's n were paired."""
    if not v:
        return ""
    return (f"+{v['gained']} / -{v['lost']} (p {v['p']:.2g})"
            + (f" on the first {v['problems']}" if v["problems"] < n else ""))


def print_table(rows: list[dict]) -> str:
    """The markdown table of the stages (printed, and returned for table.md): accuracy on the
    in-template held-out problems and on the held-out templates, each with the paired sign test
    against the row above."""
    lines = ["| stage | accuracy | vs previous: gained / lost (p) | held-out templates "
             "| vs previous | thinking rate | mean length | minutes | checkpoint and curves |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        vs = paired_text(r.get("vs_previous"), r["num_problems"])
        held = (f"{r['heldout_accuracy']:.3f} ({r['heldout_problems']})"
                if "heldout_accuracy" in r else "")
        held_vs = paired_text(r.get("heldout_vs_previous"), r.get("heldout_problems", 0))
        lines.append(f"| {r['stage']} | {r['accuracy']:.3f} ({r['num_problems']}) | {vs} "
                     f"| {held} | {held_vs} | {r['thinking_rate']:.2f} | {r['mean_length']:.0f} "
                     f"| {r.get('minutes', 0):.1f} | {r.get('where', '')} |")
    text = "\n".join(lines)
    print("\n" + text)
    return text


def by_template(row: dict) -> dict[str, list[int]]:
    """A row's problems solved per template, [solved, of]: the training templates' from its
    `correct`, the held-out templates' from `heldout_correct`. It shows where a stage's gain
    comes from. In the demo, GRPO's gain is a few templates a run learns outright (money change:
    3 -> 16 of 17), and which ones varies with the seed (docs/experiments.md).

    >>> by_template({"correct": [True, False, True], "heldout_correct": [False, True]})
    {'arithmetic/take-away': [1, 1], 'linear/solve': [1, 2], 'arithmetic/compare-total': [0, 1],
     'linear/sides-swapped': [1, 1]}
    """
    tasks, held = eval_tasks(len(row.get("correct", [])), len(row.get("heldout_correct", [])))
    counts: dict[str, list[int]] = {}
    for task, ok in zip(tasks + held, row.get("correct", []) + row.get("heldout_correct", [])):
        c = counts.setdefault(task["template"], [0, 0])
        c[0], c[1] = c[0] + ok, c[1] + 1
    return counts


def template_changes(before: dict, after: dict, most: int = 6) -> str:
    """The templates whose solved count moved most from `before` to `after` on the problems both
    saw, largest first ("arithmetic/change 3 -> 16 of 17"; a template held out of training says
    so); '' when nothing moved.

    >>> template_changes({"correct": [False, False, True]}, {"correct": [True, False, False]})
    'arithmetic/take-away 0 -> 1 of 1, linear/solve 1 -> 0 of 2'
    """
    n = min(len(before.get("correct", [])), len(after.get("correct", [])))
    h = min(len(before.get("heldout_correct", [])), len(after.get("heldout_correct", [])))
    cut = lambda r: {"correct": r.get("correct", [])[:n],
                     "heldout_correct": r.get("heldout_correct", [])[:h]}
    b, a = by_template(cut(before)), by_template(cut(after))
    moved = sorted((t for t in a if a[t][0] != b[t][0]), key=lambda t: -abs(a[t][0] - b[t][0]))
    held = set(data.held_out_templates())
    return ", ".join(f"{t}{' (held out)' if t in held else ''} {b[t][0]} -> {a[t][0]} of {a[t][1]}"
                     for t in moved[:most])


# a stage figure's panels by script, in order; one whose values never change is left out
STAGE_PANELS = {
    "grpo": ["reward", "accuracy", "entropy", "response_length", "groups_with_signal", "truncated",
             "clip_frac", "kl", "entropy_coef", "step_s"],
    "sft": ["loss", "accuracy", "grad_norm", "lr", "tokens_per_s"],
    "distill": ["loss", "accuracy", "eval_forward_kl", "eval_reverse_kl", "tokens_per_s",
                "grad_norm"],
}


def truncation_note(prev: dict, row: dict) -> str:
    """A line for a trained stage whose greedy answers run out of tokens far more often than
    the stage before's (at least 10% of them, and twice the rate): a policy that drifted where
    the reward cannot see loops under greedy decoding ('' otherwise).
    >>> note = truncation_note({"truncation_rate": 0.06}, {"stage": "02-grpo",
    ...                        "truncation_rate": 0.16, "truncated_example": "1 / 1000000"})
    >>> note.split(", e.g.")[0]
    '02-grpo: 16% of its greedy answers ran out of tokens (the stage before: 6%)'
    """
    rate, before = row.get("truncation_rate", 0.0), prev.get("truncation_rate", 0.0)
    if rate < 0.1 or rate < 2 * before:
        return ""
    example = row.get("truncated_example", "")
    example = f", e.g. ...{example[-60:]!r}" if example else ""
    return (f"{row['stage']}: {rate:.0%} of its greedy answers ran out of tokens (the stage "
            f"before: {before:.0%}){example}. "
            "In RL, tokens the reward cannot see drift until greedy decoding loops on them; "
            "a stronger KL term to the stage's start (`--set grpo.beta=0.04`) holds them.")


def heldout_points(before: dict | None, after: dict, last_step: int) -> dict[str, list]:
    """The pipeline's evaluations around a stage as `runs.plot_curves` evaluations: its input
    model's (the row above) at step 0 and its own at its last step, in-template held-out problems
    and held-out templates, each labelled with its problem counts.

    >>> heldout_points({"accuracy": 0.0, "num_problems": 64}, {"accuracy": 0.2, "num_problems": 512,
    ...                "heldout_accuracy": 0.1, "heldout_problems": 128}, 90)
    {'held-out problems (64 -> 512)': [(0, 0.0), (90, 0.2)],
     'held-out templates (128)': [(90, 0.1)]}
    """
    points = {}
    for acc, n, label in (("accuracy", "num_problems", "held-out problems"),
                          ("heldout_accuracy", "heldout_problems", "held-out templates")):
        if acc not in after:
            continue
        seen = [before[n]] if before and acc in before else []
        counts = " -> ".join(str(c) for c in dict.fromkeys(seen + [after[n]]))
        points[f"{label} ({counts})"] = (([(0, before[acc])] if seen else [])
                                         + [(last_step, after[acc])])
    return points


def write_figures(rows: list[dict], plan: list[tuple], name: str, out: Path) -> list[Path]:
    """Each stage's figure (its run dir's curves.png, redrawn by `runs.plot_curves` with the
    panels of STAGE_PANELS): its training curves, smoothed over the raw points, and the pipeline's
    held-out evaluations before and after it on the accuracy panel; for GRPO with group
    filtering, the share of groups with signal (1 - groups_filtered: 0 < #correct < G or the
    rewards differ). `plan`: (row label, script, run dir, its Config) for each stage in order.
    Then out/summary.png (`runs.plot_stages`): accuracy by stage, in-template and on held-out
    templates, with 95% intervals and the paired sign test against the stage before."""
    by_stage, written = {r["stage"]: r for r in rows}, []
    before = by_stage.get("base")
    for stage, script, stage_dir, sc in plan:
        row, metrics = by_stage.get(stage), runs.read_metrics(stage_dir)
        if row and metrics:
            if getattr(sc, "filter_zero_variance", False):
                metrics = [{**m, "groups_with_signal": 1 - m["groups_filtered"]}
                           if "groups_filtered" in m else m for m in metrics]
            last = max(m.get("step", 0) for m in metrics)
            title = (f"{row['stage']} ({script}.py, lr "
                     f"{getattr(sc, 'learning_rate', 0):g}, {last} step{'s' * (last != 1)}): "
                     "held-out accuracy before (step 0) and after")
            path = runs.plot_curves(metrics, stage_dir / "curves.png",
                                    STAGE_PANELS.get(script), title,
                                    overlay={"accuracy": "eval_accuracy"},
                                    evaluations={"accuracy": heldout_points(before, row, last)})
            written += [path] if path else []
        before = row or before
    point = lambda r, acc, n, vs: ({"accuracy": r[acc], "n": r[n],
                                    "note": paired_text(r.get(vs), r[n])} if acc in r else None)
    series = {"held-out problems, training templates":
              [point(r, "accuracy", "num_problems", "vs_previous") for r in rows],
              "held-out templates":
              [point(r, "heldout_accuracy", "heldout_problems", "heldout_vs_previous")
               for r in rows]}
    families = sorted({f for r in rows for f in r.get("by_family", {})})
    by_group = {label: {f: [r.get(key, {}).get(f) for r in rows] for f in families}
                for label, key in (("in-template", "by_family"),
                                   ("held-out templates", "heldout_by_family"))}
    written.append(runs.plot_stages(
        [r["stage"] for r in rows], series, out / "summary.png",
        f"{name}: greedy accuracy on held-out problems by stage",
        by_group if families else None))
    return written


class Evaluations:
    """The run's held-out evaluations: the table's rows (table.json, rewritten after each one, so
    a resumed run knows which stage was evaluated on which sets), the sets' sizes, and the run's
    time budget (`budget_min`, 0: none). A time-budgeted stage gets what the budget leaves after
    the evaluations still to come (`cap_time_budget`); where the machine is too slow for all
    `n_eval` problems, the first evaluation of a trained stage shrinks the sets of every stage
    (`fit_eval_problems`; never below LEAST_EVAL_PROBLEMS, never where `fixed`: an explicit
    --eval_problems, or a resumed run's sets)."""

    def __init__(self, path: Path, n_eval: int, n_base: int, heldout: int, max_new_tokens: int,
                 engine: str, budget_min: float, t_start: float, resume: bool, fixed: bool):
        self.path, self.max_new_tokens, self.engine = path, max_new_tokens, engine
        self.budget_min, self.t_start = budget_min, t_start
        self.rows = json.loads(path.read_text()) if resume and path.exists() else []
        evaluated = [r for r in self.rows if r["stage"] != "base" and "correct" in r]
        if evaluated and not fixed:   # a resumed run keeps the size its budget chose
            n_eval = evaluated[0]["num_problems"]
        self.fixed = fixed or bool(evaluated)
        self.n_eval, self.n_base = n_eval, n_base
        # as many as in the training templates: a sign test on 128 cannot resolve GRPO's few
        # points there (one standard error is 2 points at 5%)
        self.n_held = 0 if heldout < 0 else heldout or n_eval
        self.n_held_base = min(self.n_held, n_base)
        self.cut: dict[str, tuple[float, float]] = {}   # stage -> (minutes given, asked for)

    def left_s(self) -> float:
        return 60 * self.budget_min - (time.time() - self.t_start)

    def s_per_problem(self) -> float | None:
        """The latest evaluation's pace (in-template and held-out templates)."""
        timed = [r for r in self.rows if r.get("eval_s") and r.get("num_problems")]
        return (timed[-1]["eval_s"]
                / (timed[-1]["num_problems"] + timed[-1].get("heldout_problems", 0))
                if timed else None)

    def current(self, stage: str, n: int | None = None, held: int | None = None) -> bool:
        """Whether `stage` was evaluated as asked for now."""
        n, held = self.n_eval if n is None else n, self.n_held if held is None else held
        return any(r["stage"] == stage and r.get("num_problems") == n and "correct" in r
                   and r.get("heldout_problems", 0) == held for r in self.rows)

    def put(self, row: dict):
        """Replace the stage's row in place, or append it; table.json is rewritten."""
        at = [i for i, r in enumerate(self.rows) if r["stage"] == row["stage"]]
        self.rows = self.rows[:at[0]] + [row] + self.rows[at[0] + 1:] if at else self.rows + [row]
        runs.atomic_write_text(self.path, json.dumps(self.rows, indent=2))

    def evaluate(self, label: str, checkpoint: str, n: int, held: int, settings: dict) -> dict:
        """`checkpoint` on `n` held-out problems and `held` in held-out templates (`eval_stage`,
        in `settings`: `pipeline.eval_settings`), said first."""
        what = "the starting model" if label == "base" else label
        print(f"== evaluating {what} on {n} held-out problems and {held} in held-out templates ==",
              flush=True)
        return eval_stage(checkpoint, n, self.max_new_tokens, engine=self.engine, heldout=held,
                          **settings)

    def evaluate_base(self, model: str, settings: dict):
        """The starting model, in the first stage's `settings`, unless it was evaluated on these
        sets already."""
        if not self.current("base", self.n_base, self.n_held_base):
            self.put({"stage": "base", **self.evaluate("base", model, self.n_base,
                                                       self.n_held_base, settings),
                      "where": model})

    def evaluate_finished(self, label: str, stage_dir: Path, settings: dict):
        """A stage finished earlier, evaluated again where the sets changed (e.g. --resume
        --eval_problems 512: a larger held-out set)."""
        if not self.current(label):
            done_row = json.loads((stage_dir / "DONE.json").read_text())
            self.put({**done_row, **self.evaluate(label, str(stage_dir / "checkpoint"),
                                                  self.n_eval, self.n_held, settings)})

    def cap_time_budget(self, name: str, sc, evals_left: int):
        """A time-budgeted stage (its Config's `time_budget_minutes` > 0) gets at most what the
        run's budget leaves after the `evals_left` evaluations still to come, at PACE_MARGIN
        times the latest evaluation's pace."""
        pace = self.s_per_problem()
        if self.budget_min and pace and getattr(sc, "time_budget_minutes", 0) > 0:
            pace *= PACE_MARGIN
            # - 10 s: the checkpoint save
            cap = (self.left_s() - evals_left * (self.n_eval + self.n_held) * pace - 10) / 60
            if cap < sc.time_budget_minutes:
                given = max(cap, 0.5)
                print(f"== {name}: time budget {duration(60 * given)} instead of "
                      f"{duration(60 * sc.time_budget_minutes)}: what the run's "
                      f"{duration(60 * self.budget_min)} leave "
                      f"after {evals_left} evaluation(s) of {self.n_eval} + {self.n_held} problems"
                      f" at {pace:.2f} s each ({PACE_MARGIN:g} x the latest one's pace) ==",
                      flush=True)
                if given < MIN_ELASTIC_MINUTES:   # said now, not only after the table
                    evals_s = evals_left * (self.n_eval + self.n_held) * pace
                    more = sc.time_budget_minutes + evals_s / 60
                    print(f"== {name}: {duration(60 * given)} is too little to change the table "
                          f"(the budget keeps {duration(60 * MIN_ELASTIC_MINUTES)} where it can; "
                          "this machine is slower than the demo was sized for). For its "
                          f"{duration(60 * sc.time_budget_minutes)}: stop now (Ctrl-C) and run "
                          "the same command with --resume --time_budget_minutes 0; the finished "
                          f"stages are kept (about {duration(60 * more)} more) ==", flush=True)
                self.cut[name] = (given, sc.time_budget_minutes)
                sc.time_budget_minutes = given

    def evaluate_trained(self, label: str, stage_dir: Path, settings: dict, evals_left: int,
                         elastic: int) -> dict:
        """A stage's checkpoint, just trained. The run's first such evaluation sizes the sets, once,
        to what the budget leaves, keeping MIN_ELASTIC_MINUTES for each of the `elastic`
        (time-budgeted) stages still to train."""
        def fit(pace: float, done: int) -> int:
            # its last term: the held-out templates (at most this many)
            reserve = 60 * MIN_ELASTIC_MINUTES * elastic + 30 + evals_left * self.n_held * pace
            n = fit_eval_problems(self.left_s(), pace, evals_left, reserve, self.n_eval, done)
            # the held-out templates shrink with n, and further (to 64) where even that leaves
            # the time-budgeted stages less than 30 s each
            rest = (evals_left * n - done) * pace + 30 * elastic + 10
            held = fit_eval_problems(self.left_s(), pace, evals_left, rest,
                                     self.n_held * n // self.n_eval, least=min(64, self.n_held))
            if (n, held) != (self.n_eval, self.n_held):
                print(f"== {self.n_eval} + {self.n_held} held-out problems do not fit the run's "
                      f"{duration(60 * self.budget_min)} on this machine ({pace:.2f} s each, "
                      f"{self.left_s() / 60:.1f} min left): every stage is evaluated on {n} (and "
                      f"{held} in held-out templates) ==", flush=True)
                self.n_eval, self.n_held = n, held
            return n, held
        use_fit = fit if self.budget_min and not self.fixed else None
        self.fixed = True
        return {"stage": label, **eval_stage(str(stage_dir / "checkpoint"), self.n_eval,
                                             self.max_new_tokens, use_fit, self.engine,
                                             heldout=self.n_held, **settings)}

    def no_change(self, row: dict) -> str:
        """A line for a trained stage whose change on the held-out problems is within noise (sign
        test p >= 0.05), saying where the run's budget cut its training short ('' otherwise)."""
        v = row.get("vs_previous")
        if not v or v["p"] < 0.05:
            return ""
        line = (f"{row['stage']}: no significant change on the held-out problems "
                f"({paired_text(v, v['problems'])})")
        if row["stage"] in self.cut:
            given, asked = self.cut[row["stage"]]
            line += (f"; the run's budget of {duration(60 * self.budget_min)} left it "
                     f"{duration(60 * given)} of its {duration(60 * asked)} on this machine. "
                     f"`--time_budget_minutes 0` gives it all of it (the run then takes longer)")
        return line + "."

    def finish(self, plan: list[tuple], name: str, out: Path) -> list[dict]:
        """The rows paired with the rows above (`with_paired`) and counted by template
        (`by_template`) in table.json; the table printed and in table.md, each stage's most-moved
        templates after it (`template_changes`), then the stages that changed nothing
        significant (`no_change`) or whose greedy answers loop (`truncation_note`); the figures
        (`write_figures`, with its `plan`)."""
        self.rows = [{**r, "by_template": by_template(r)} for r in with_paired(self.rows)]
        runs.atomic_write_text(self.path, json.dumps(self.rows, indent=2))
        text = print_table(self.rows)
        for prev, row in zip(self.rows, self.rows[1:]):
            moved = template_changes(prev, row)
            if moved:
                line = f"{row['stage']} against {prev['stage']}, by template: {moved}"
                text += "\n\n" + line
                print(line)
        for prev, row in zip(self.rows, self.rows[1:]):
            for line in (self.no_change(row), truncation_note(prev, row)):
                if not line:
                    continue
                text += "\n\n" + line
                print(line)
        runs.atomic_write_text(out / "table.md", text + "\n")
        write_figures(self.rows, plan, name, out)
        return self.rows
