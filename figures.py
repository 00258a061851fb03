"""Each paper's headline finding, reproduced in miniature on a CPU: one command per figure.

    python figures.py NAME            # one figure -> docs/figures/NAME.png and NAME.json
    python figures.py all             # every figure, in the order below
    python figures.py NAME --scale tiny --output_dir /tmp/f   # a random 2-layer model, ~1 min

Each figure runs the project's own scripts in-process (`sft.train`, `grpo.train`,
`distill.train`, `evaluate.evaluate_model`) with one seed and one budget, the runs differing only
in the knob under study, and plots their metrics.jsonl: a smoothed line over the raw points per
run, held-out evaluations on the same axes (squares), no panel whose values never change.
The RL figures start from one shared SFT checkpoint (`runs/figures/sft`, built once with the
phi4-reasoning recipe's demo SFT stage, `pipeline.phi4_reasoning`). A finished run is reused
when its settings match (delete its folder under `runs/figures/` to redo it).

Figures (docs/figures.md: the paper's claim, the settings, what the miniature shows):
  entropy          Skywork-OR1 §4 (MAGIC): entropy collapses without control; adaptive entropy
                   control holds it near the target
  length_reward    Phi-4-reasoning-plus §4: the length-aware reward lengthens right answers and
                   shortens wrong ones against the plain binary reward
  thinking_budget  Qwen3 §4.3 (Fig. thinking budget): accuracy rises with the thinking budget;
                   thinking off is the zero-budget point
  still3_settings  STILL-3: on-policy against off-policy updates (reward, length); KL with a
                   cosine-annealed coefficient against a fixed one against none
  length_bias      Dr. GRPO §3.1 / DAPO §3.3: the per-sequence 1/|o| (grpo) lets wrong answers grow
                   long; the token-level (dapo) and constant (dr_grpo) normalisers do not
  distill_vs_rl    Qwen3 §4.5: strong-to-weak distillation beats RL for the same student at the
                   same cost (accuracy, KL to the teacher)
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import cli
from cli import flag


@dataclass
class Config:
    scale: str = flag("demo", "demo: the embedded model, each figure <= 15 min on 2 cores | "
        "tiny: a random 2-layer model, about a minute a figure (tests)", choices=["demo", "tiny"])
    model: str = flag("smollm2", "starting model of the shared SFT: 'smollm2' (embedded default) "
        "or a folder ('tiny' with --scale tiny)")
    output_dir: str = flag("docs/figures", "where NAME.png and NAME.json go")
    runs_dir: str = flag("runs/figures", "run directories of the figures' runs (and the shared SFT "
        "in <runs_dir>/sft)")
    minutes: float = flag(15.0, "time cap per figure "
        "(its runs share it; a run stops early at its share)")
    engine: str = flag("auto", "rollout engine", choices=["auto", "hf", "vllm"])
    threads: int = flag(0, "torch CPU threads (0: torch's default)")
    seed: int = flag(0, "the one seed of every run")


FIGURES: dict = {}   # name -> function(cfg) -> the figure's JSON record (filled by @figure)


def figure(fn):
    FIGURES[fn.__name__] = fn
    return fn


# ==============================================================================================
# Runs: the shared SFT checkpoint, GRPO runs that differ in one knob, reuse of finished runs
# ==============================================================================================
def finished(root: Path, settings: dict) -> bool:
    """A run of the same settings finished earlier in `root` (figure_done.json matches)."""
    done = root / "figure_done.json"
    try:
        marked = json.loads(done.read_text()) if done.exists() else None
    except ValueError:      # damaged: the run is made again (--overwrite), as if never marked
        marked = None
    return marked == json.loads(json.dumps(settings, default=str))


def mark_finished(root: Path, settings: dict):
    (root / "figure_done.json").write_text(json.dumps(settings, indent=2, default=str))


def sft_checkpoint(cfg: Config) -> str:
    """The shared starting point of the RL figures: the phi4-reasoning recipe's demo SFT stage
    (repurposed think tokens, RoPE base x2, 90 steps on synthetic worked solutions; ~7 min on
    2 idle cores), built once in <runs_dir>/sft. Tiny scale: 4 steps of the tiny model."""
    import pipeline
    import sft
    root = Path(cfg.runs_dir) / "sft"
    stage = pipeline.phi4_reasoning("demo")[0]
    _, sc = pipeline.stage_config(stage, pipeline.Config(model=cfg.model), root, cfg.model, None)
    sc.seed, sc.threads, sc.overwrite = cfg.seed, cfg.threads, True
    if cfg.scale == "tiny":
        sc.max_steps, sc.num_examples, sc.max_length, sc.warmup_steps = 4, 16, 256, 1
    settings = asdict(sc)
    if not finished(root, settings):
        print(f"== figures: the shared SFT checkpoint ({sc.max_steps} steps) -> {root} ==",
              flush=True)
        sft.train(sc)
        mark_finished(root, settings)
    return str(root / "checkpoint")


# ==============================================================================================
# Settings: one GRPO base for every RL figure; each run changes only its figure's knob
# ==============================================================================================
# The phi4-reasoning demo GRPO stage (pipeline.py) as it was when the figures were measured
# (today's trains levels 1-2 at temperature 0.9 with β 0.01), with the binary math reward:
# level-1 arithmetic + percent, where the SFT model's groups carry signal; G 8, 96 tokens,
# lr 1e-5, temperature 1.0, groups kept by correctness, no KL, no entropy bonus. Every rollout
# of a step is written to samples.jsonl (`log_samples`) so the figures can split lengths by
# correctness.
GRPO_DEMO = dict(math_levels="1", math_families="arithmetic,percent", rewards="math",
                 num_generations=8, prompts_per_step=4, max_completion_length=96,
                 learning_rate=1e-5, temperature=1.0, filter_groups_by="acc", max_steps=12,
                 eval_problems=64, eval_every=6, log_samples=32, save_steps=10 ** 6,
                 max_steps_without_signal=0)
# tiny: a random model learns nothing; groups are kept unfiltered so every series exists
GRPO_TINY = dict(GRPO_DEMO, num_generations=2, prompts_per_step=2, max_completion_length=12,
                 max_steps=2, eval_problems=4, eval_every=1, log_samples=4,
                 filter_zero_variance=False)


def grpo_run(cfg: Config, fig: str, name: str, knob: dict, minutes: float, model: str | None = None,
             **base_changes) -> Path:
    """One grpo.train run of figure `fig`: the base settings, `base_changes` shared by all of the
    figure's runs, and `knob`, the one thing this run changes. Capped at `minutes` of training."""
    import grpo
    base = GRPO_TINY if cfg.scale == "tiny" else GRPO_DEMO
    root = Path(cfg.runs_dir) / fig / slug(name)
    gc = grpo.Config(**{**base, **base_changes, **knob}, model=model or sft_checkpoint(cfg),
                     engine=cfg.engine, output_dir=str(root), seed=cfg.seed, threads=cfg.threads,
                     overwrite=True,
                     time_budget_minutes=0.0 if cfg.scale == "tiny" else round(minutes, 2))
    settings = asdict(gc)
    if not finished(root, settings):
        print(f"== {fig}: run '{name}' {knob} -> {root} ==", flush=True)
        grpo.train(gc)
        mark_finished(root, settings)
    return root


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_").lower()


def metrics(root: Path) -> list[dict]:
    """A finished run's metrics.jsonl (a last line cut short is left out: `runs.read_jsonl`)."""
    import runs
    path = Path(root) / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no metrics, though {root} is marked finished; delete "
                                f"{Path(root) / 'figure_done.json'} to run it again")
    return runs.read_jsonl(path)


def series(rows: list[dict], key: str, x: str = "step") -> list[list[float]]:
    """[[step, value], ...] of the rows that hold a finite `key`."""
    return [[r[x], r[key]] for r in rows
            if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]


def lengths_by_correctness(root: Path, tokenizer) -> dict[str, list[list[float]]]:
    """Mean response length (tokens, the text re-tokenized) of right and of wrong rollouts per
    step, from samples.jsonl (every rollout of the step: `log_samples`). Truncated = wrong."""
    from rewards import verify_math
    per_step: dict[int, dict[str, list[int]]] = {}
    import runs
    for row in runs.read_jsonl(Path(root) / "samples.jsonl"):
        n = len(tokenizer(row["completion"], add_special_tokens=False)["input_ids"])
        right = not row["truncated"] and verify_math(row["completion"], row["answer"])
        per_step.setdefault(row["step"], {"right": [], "wrong": []})[
            "right" if right else "wrong"].append(n)
    out = {"right_length": [], "wrong_length": [], "wrong_share": []}
    for step, d in sorted(per_step.items()):
        for k in ("right", "wrong"):
            if d[k]:
                out[f"{k}_length"].append([step, sum(d[k]) / len(d[k])])
        out["wrong_share"].append([step, len(d["wrong"]) / (len(d["right"]) + len(d["wrong"]))])
    return out


def run_record(root: Path, knob: dict, keys: list[str], tokenizer=None) -> dict:
    """A run's entry in NAME.json: its knob, a series per metric, the steps it reached and its
    wall time (training and evaluation)."""
    rows = metrics(root)
    out = {"knob": knob, "run_dir": str(root), "series": {k: series(rows, k) for k in keys}}
    if tokenizer is not None:
        out["series"].update(lengths_by_correctness(root, tokenizer))
    out["steps"] = max((r["step"] for r in rows), default=0)
    out["wall_minutes"] = sum(r.get("step_s", 0.0) for r in rows) / 60
    return out


def tokenizer_of(path: str):
    import models
    return models.load_tokenizer(path)


def share(cfg: Config, runs: int) -> float:
    """Each run's cap in minutes: the figure's budget split evenly, 20% kept for model loads and
    the evaluations before the first and after the last step."""
    return 0.8 * cfg.minutes / runs


# ==============================================================================================
# Plotting: a smoothed line over raw points per run, held-out evaluations on the same axes
# ==============================================================================================
def ema(ys: list[float], smooth: float = 0.6) -> list[float]:
    out, avg = [], ys[0]
    for y in ys:
        avg = smooth * avg + (1 - smooth) * y
        out.append(avg)
    return out


def plot(record: dict, panels: list[dict], path: Path, title: str, ncols: int = 3):
    """panels: [{"title", "xlabel", "lines": [(run, key, kind)]}], kind "train" (raw points and
    an EMA line), "eval" (held-out: squares joined by a line), "point" (markers joined by a line),
    or ("hline", run, key) for one value drawn across the panel. A panel whose values never change
    is left out (STYLE: no constant panel)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    colors = {run: f"C{i}" for i, run in enumerate(record["runs"])}
    pts = lambda run, key: record["runs"][run]["series"].get(key, [])
    values = lambda p: {v for run, key, _ in p["lines"] for _, v in pts(run, key)}
    varying = [p for p in panels if len(values(p)) > 1]
    if not varying:   # e.g. a tiny random model at 0% everywhere: show them, and say so
        title += "\n(every panel is constant at this scale)"
    panels = varying or panels
    ncols = min(ncols, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.3 * nrows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        for run, key, kind in p["lines"]:
            xy = pts(run, key)
            if not xy:
                continue
            xs, ys = [a for a, _ in xy], [b for _, b in xy]
            label = p.get("labels", {}).get((run, key),
                                            run if kind != "eval" else f"{run}, held-out")
            c = colors[run]
            if kind == "train":
                ax.plot(xs, ys, "o", ms=3, alpha=0.3, color=c)
                ax.plot(xs, ema(ys), "-", color=c, label=label)
            elif kind == "eval":
                ax.plot(xs, ys, "s--", ms=5, color=c, label=label)
            elif kind == "hline":
                ax.axhline(ys[0], ls=":", color=c, label=label)
            else:
                ax.plot(xs, ys, "o-", ms=5, color=c, label=label)
        for y, label in p.get("hlines", []):
            ax.axhline(y, ls="-.", color="gray", lw=1, label=label)
        ax.set_title(p["title"], fontsize=9)
        ax.set_xlabel(p.get("xlabel", "GRPO step"), fontsize=8)
        if p.get("xlabel", "GRPO step") == "GRPO step":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=9.5)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(cfg: Config, name: str, record: dict, panels: list[dict], title: str,
          ncols: int = 3) -> Path:
    """docs/figures/NAME.json (the numbers) and NAME.png (drawn from them)."""
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {"figure": name, "scale": cfg.scale, "model": cfg.model, "seed": cfg.seed, **record}
    (out / f"{name}.json").write_text(json.dumps(record, indent=1, default=str))
    plot(record, panels, out / f"{name}.png",
         f"{title}\n({cfg.scale} scale: {settings_line(cfg, record)})", ncols)
    return out / f"{name}.png"


def settings_line(cfg: Config, record: dict) -> str:
    steps = sorted({r.get("steps") for r in record["runs"].values() if r.get("steps")})
    mins = sum(r.get("wall_minutes", 0) for r in record["runs"].values())
    s = f"{cfg.model if cfg.scale == 'tiny' else 'SmolLM2-135M after the shared SFT'}"
    if steps:
        s += f", {'/'.join(map(str, steps))} steps"
    return s + f", {mins:.1f} min of runs"


def summary(rec: dict, key: str, last: int = 3) -> dict:
    """First value and mean of the last `last` values of a run's series (for the verdicts)."""
    ys = [v for _, v in rec["series"].get(key, [])]
    return {"first": ys[0], f"last{last}_mean": sum(ys[-last:]) / len(ys[-last:])} if ys else {}


# ==============================================================================================
# The figures
# ==============================================================================================
@figure
def entropy(cfg: Config) -> Path:
    """Skywork-OR1 §4: without entropy control, entropy collapses and exploration with it;
    adaptive control (bonus on while entropy < target) holds it near the target, a fixed bonus
    does not adapt. Miniature: target, step Δ and ceiling scaled to a dozen steps (the paper's Δ
    1e-4 acts over thousands); the fixed bonus is the adaptive run's ceiling, always on."""
    target = 0.1
    adaptive = dict(adaptive_entropy=True, target_entropy=target, entropy_coef_delta=0.005,
                    entropy_coef_max=0.02)
    knobs = {"no entropy control": {}, "fixed bonus c=0.02": {"entropy_coef": 0.02},
             f"adaptive, target {target}": adaptive}
    keys = ["entropy", "entropy_coef", "accuracy", "eval_accuracy", "response_length"]
    runs = {n: run_record(grpo_run(cfg, "entropy", n, k, share(cfg, len(knobs))), k, keys)
            for n, k in knobs.items()}
    for rec in runs.values():
        rec["summary"] = {k: summary(rec, k) for k in ("entropy", "eval_accuracy")}
    panels = [
        {"title": "entropy of the rollouts (nats per token, sampled-token estimate)",
         "hlines": [(target, "target")],
         "lines": [(n, "entropy", "train") for n in runs]},
        {"title": "accuracy: rollouts (points, line) and held-out greedy (squares)",
         "lines": [(n, k, kind) for n in runs
                   for k, kind in (("accuracy", "train"), ("eval_accuracy", "eval"))]},
        {"title": "entropy coefficient c in the loss",
         "lines": [(n, "entropy_coef", "point") for n in runs]},
    ]
    return write(cfg, "entropy",
                 {"claim": CLAIMS["entropy"], "runs": runs, "target_entropy": target},
                 panels, "Skywork-OR1: entropy with and without adaptive entropy control")


@figure
def length_reward(cfg: Config) -> Path:
    """Phi-4-reasoning-plus §4: the length-aware reward keeps right answers short (1.0 up to
    L_pos, down to 0.5 at L_max) and lets wrong ones run long (-1.0 for the shortest, -0.5 from
    L_neg on), against the plain binary reward. Lengths scaled to 96 tokens: L_pos 77, L_neg 11."""
    knobs = {"binary math reward": {"rewards": "math"},
             "phi4 length-aware reward": {"rewards": "phi4"}}
    keys = ["accuracy", "eval_accuracy", "response_length", "truncated", "reward"]
    tok = tokenizer_of(sft_checkpoint(cfg))
    runs = {n: run_record(grpo_run(cfg, "length_reward", n, k, share(cfg, len(knobs))), k,
                          keys, tok)
            for n, k in knobs.items()}
    for rec in runs.values():
        rec["summary"] = {k: summary(rec, k)
                          for k in ("right_length", "wrong_length", "eval_accuracy")}
    panels = [
        {"title": "length of right answers (tokens)",
         "lines": [(n, "right_length", "train") for n in runs]},
        {"title": "length of wrong answers (tokens)",
         "lines": [(n, "wrong_length", "train") for n in runs]},
        {"title": "accuracy: rollouts (points, line) and held-out greedy (squares)",
         "lines": [(n, k, kind) for n in runs
                   for k, kind in (("accuracy", "train"), ("eval_accuracy", "eval"))]},
    ]
    return write(cfg, "length_reward", {"claim": CLAIMS["length_reward"], "runs": runs}, panels,
                 "Phi-4-reasoning-plus: length-aware reward against the binary reward")


@figure
def thinking_budget(cfg: Config) -> Path:
    """Qwen3 §4.3: accuracy grows with the thinking budget; thinking off (an empty think block)
    is the zero-budget end. The shared SFT checkpoint, greedy, on held-out level-1 problems of all
    four families (the pipeline's held-out set); at each budget the think block is cut with
    Qwen3's stop-thinking sentence and the answer gets `answer_tokens` more."""
    import data
    import engines
    import evaluate
    import models
    tiny = cfg.scale == "tiny"
    n, budgets, answer_tokens, full = ((4, [2, 4], 8, 16) if tiny
                                       else (128, [4, 8, 16, 24, 32, 48, 64, 96], 32, 128))
    path = sft_checkpoint(cfg)
    model, tok = models.load_policy(path)
    tasks = data.math_tasks(n, "test", seed=1234, levels=(1,))
    longest = max(map(len, data.prompt_ids(tok, tasks)))
    engine = engines.make_engine(cfg.engine, model, tok, max_model_len=longest + full + 64)
    run = lambda mode, budget, tokens: evaluate.evaluate_model(
        model, tok, tasks, k=1, max_new_tokens=tokens, thinking=mode, budget=budget, engine=engine,
        seed=cfg.seed)["metrics"]
    t0 = time.time()
    on = [(b, run("default", b, b + answer_tokens)) for b in budgets]
    unlimited = run("default", None, full)
    off = run("off", None, answer_tokens)
    keys = ("accuracy", "mean_length", "thinking_rate", "truncation_rate")
    pack = lambda pts: {k: [[x, m[k]] for x, m in pts] for k in keys}
    runs = {"thinking on, budget": {"knob": {"thinking": "on", "budgets": budgets,
                                             "answer_tokens": answer_tokens},
                                    "series": pack(on)},
            "thinking on, no budget": {"knob": {"thinking": "on", "max_new_tokens": full},
                                       "series": pack([(full, unlimited)])},
            "thinking off": {"knob": {"thinking": "off", "max_new_tokens": answer_tokens},
                             "series": pack([(0, off)])}}
    runs["thinking on, budget"]["wall_minutes"] = (time.time() - t0) / 60
    panels = [
        {"title": f"held-out accuracy, greedy ({n} problems)", "xlabel": "thinking budget (tokens)",
         "lines": [("thinking on, budget", "accuracy", "point"),
                   ("thinking on, no budget", "accuracy", "hline"),
                   ("thinking off", "accuracy", "point")]},
        {"title": "mean response length (tokens)", "xlabel": "thinking budget (tokens)",
         "lines": [("thinking on, budget", "mean_length", "point"),
                   ("thinking on, no budget", "mean_length", "hline"),
                   ("thinking off", "mean_length", "point")]},
    ]
    return write(cfg, "thinking_budget",
                 {"claim": CLAIMS["thinking_budget"], "runs": runs, "problems": n}, panels,
                 "Qwen3: accuracy against the thinking budget", ncols=2)


@figure
def still3_settings(cfg: Config) -> Path:
    """STILL-3: on-policy updates (one optimizer step per rollout batch) keep entropy and
    response length growing, off-policy ones (several mini-batch steps per batch) do not; the KL
    penalty annealed by a cosine against a fixed coefficient against none. β is raised from
    STILL-3's 0.001 to 0.05 so the penalty acts within a dozen steps (at 0.001 the KL term stays
    below 0.01: the pipeline's note); the final KL to the SFT model is measured for all three."""
    base = GRPO_TINY if cfg.scale == "tiny" else GRPO_DEMO
    batch, steps, beta = base["prompts_per_step"] * base["num_generations"], base["max_steps"], 0.05
    knobs = {"on-policy, no KL": {},
             "off-policy, 4 steps per batch":
                 {"mini_batch_size": batch // 4 if batch % 4 == 0 else batch // 2},
             f"KL fixed β={beta}": {"beta": beta},
             f"KL cosine β={beta}→0": {"beta": beta, "kl_anneal": "cosine",
                                       "kl_anneal_steps": steps}}
    keys = ["reward", "accuracy", "eval_accuracy", "response_length", "entropy", "kl", "beta",
            "clip_frac"]
    roots = {n: grpo_run(cfg, "still3_settings", n, k, share(cfg, len(knobs)))
             for n, k in knobs.items()}
    runs = {n: run_record(roots[n], knobs[n], keys) for n in knobs}
    for n in (n for n in knobs if "KL" in n):   # the KL of the final policy, for all three arms
        runs[n]["series"]["final_kl"] = [[runs[n]["steps"], final_kl(cfg, roots[n] / "checkpoint")]]
    for rec in runs.values():
        rec["summary"] = {k: summary(rec, k)
                          for k in ("reward", "response_length", "entropy", "kl")}
    onoff, kl = list(knobs)[:2], [n for n in knobs if "KL" in n]
    panels = [
        {"title": "on- vs off-policy: reward", "lines": [(n, "reward", "train") for n in onoff]},
        {"title": "on- vs off-policy: response length (tokens)",
         "lines": [(n, "response_length", "train") for n in onoff]},
        {"title": "on- vs off-policy: entropy (nats per token)",
         "lines": [(n, "entropy", "train") for n in onoff]},
        {"title": "KL(π || π_SFT): k3 in training (line), final on held-out answers (squares)",
         "lines": [(n, k, kind) for n in kl
                   for k, kind in (("kl", "train"), ("final_kl", "eval"))]},
        {"title": "KL arms: reward", "lines": [(n, "reward", "train") for n in kl]},
        {"title": "KL coefficient β", "lines": [(n, "beta", "point") for n in kl]},
    ]
    return write(cfg, "still3_settings",
                 {"claim": CLAIMS["still3_settings"], "runs": runs, "beta": beta}, panels,
                 "STILL-3: on- vs off-policy updates (top), KL annealed vs fixed vs none (bottom)")


def final_kl(cfg: Config, checkpoint: Path) -> float:
    """KL(π || π_SFT) per token (full vocabulary, τ 1) on the policy's greedy answers to held-out
    prompts: distill.evaluate's reverse KL with the SFT model in the teacher's seat."""
    import data
    import distill
    import models
    n = 4 if cfg.scale == "tiny" else 32
    policy, tok = models.load_policy(str(checkpoint))
    ref, _ = models.load_policy(sft_checkpoint(cfg))
    base = GRPO_TINY if cfg.scale == "tiny" else GRPO_DEMO
    tasks = data.math_tasks(n, "test", cfg.seed, base["math_families"].split(","), (1,))
    dc = distill.Config(max_completion_length=base["max_completion_length"], prompts_per_step=8)
    scores, _ = distill.evaluate(policy.eval(), ref.eval(), tok, tasks,
                                 data.prompt_ids(tok, tasks), dc)
    return scores["eval_reverse_kl"]


@figure
def length_bias(cfg: Config) -> Path:
    """Dr. GRPO §3.1 (and DAPO §3.3): GRPO's per-sequence 1/|o_i| weights each token of a long
    wrong answer less, so its penalty is diluted and wrong answers grow long; the token-level
    mean (dapo) and the constant normaliser (dr_grpo) weigh every token alike. Only the
    aggregation changes (the std scaling stays on: Dr. GRPO's other change is not the knob)."""
    knobs = {f"loss_type {t}": {"loss_type": t} for t in ("grpo", "dapo", "dr_grpo")}
    keys = ["accuracy", "eval_accuracy", "response_length", "truncated"]
    tok = tokenizer_of(sft_checkpoint(cfg))
    runs = {n: run_record(grpo_run(cfg, "length_bias", n, k, share(cfg, len(knobs))), k,
                          keys, tok)
            for n, k in knobs.items()}
    for rec in runs.values():
        rec["summary"] = {k: summary(rec, k)
                          for k in ("wrong_length", "right_length", "eval_accuracy")}
    panels = [
        {"title": "length of wrong answers (tokens)",
         "lines": [(n, "wrong_length", "train") for n in runs]},
        {"title": "length of right answers (tokens)",
         "lines": [(n, "right_length", "train") for n in runs]},
        {"title": "accuracy: rollouts (points, line) and held-out greedy (squares)",
         "lines": [(n, k, kind) for n in runs
                   for k, kind in (("accuracy", "train"), ("eval_accuracy", "eval"))]},
    ]
    return write(cfg, "length_bias", {"claim": CLAIMS["length_bias"], "runs": runs}, panels,
                 "Dr. GRPO / DAPO: length of wrong answers under three loss aggregations")


@figure
def distill_vs_rl(cfg: Config) -> Path:
    """Qwen3 §4.5: for a small student, distillation from the strong model beats RL at a
    fraction of the cost. The same half-depth student (every 2nd layer of the SFT model) gets
    off-policy logit distillation (forward KL on the teacher's answers, Qwen3's first phase) or
    GRPO with the binary reward for the same training time, the teacher's answering included;
    both evaluated on the same held-out problems (accuracy, KL to the teacher)."""
    import distill
    import models
    import runs as rundirs
    tiny = cfg.scale == "tiny"
    teacher_path = sft_checkpoint(cfg)
    root = Path(cfg.runs_dir) / "distill_vs_rl"
    dc = distill.Config(teacher=teacher_path, student_from_teacher=True, keep_every=2, lmbda=0.0,
                        divergence="forward_kl", think_ratio=-1, math_levels="1",
                        num_train_prompts=8 if tiny else 64,
                        max_completion_length=12 if tiny else 96,
                        prompts_per_step=2 if tiny else 8, learning_rate=1e-4,
                        max_steps=2 if tiny else 40, eval_problems=4 if tiny else 32,
                        eval_every=1 if tiny else 10, save_steps=10 ** 6, engine=cfg.engine,
                        seed=cfg.seed, threads=cfg.threads, output_dir=str(root / "distill"),
                        teacher_cache=str(root / "teacher_samples.jsonl"), overwrite=True)
    # the student, saved once as a checkpoint for GRPO (distill builds the same one in memory)
    student_dir = root / "student"
    teacher, tok = models.load_policy(teacher_path)
    if not (student_dir / "config.json").exists():
        rundirs.save_checkpoint(distill.drop_layers(teacher, dc.keep_every), tok, student_dir)
    # ---- distillation, the teacher's answers timed as part of its cost ----
    settings = asdict(dc)
    if not finished(root / "distill", settings):
        cache = Path(dc.teacher_cache)
        cache.unlink(missing_ok=True)
        tasks = distill.load_prompts(dc, "train", dc.num_train_prompts)
        flags = distill.think_flags(len(tasks), dc.think_ratio, dc.seed)
        t0 = time.time()
        distill.teacher_outputs(teacher, tok, tasks, distill.render(tok, tasks, flags), flags, dc,
                                cache)
        teacher_s = time.time() - t0
        print(f"== distill_vs_rl: distillation ({dc.max_steps} steps) -> {root / 'distill'} ==",
              flush=True)
        distill.train(dc)
        mark_finished(root / "distill", settings)
        (root / "distill" / "teacher_s.json").write_text(json.dumps(teacher_s))
    teacher_s = json.loads((root / "distill" / "teacher_s.json").read_text())
    drows = metrics(root / "distill")
    train_s = teacher_s + sum(r["time/step_s"] for r in drows if "time/step_s" in r)
    # ---- RL for as long: GRPO's budget is the distillation's training time ----
    rl_root = grpo_run(cfg, "distill_vs_rl", "grpo", {}, train_s / 60, model=str(student_dir),
                       math_families="", eval_problems=dc.eval_problems, eval_every=4)
    rrows = metrics(rl_root)
    # ---- both students on the same held-out problems: accuracy, KL to the teacher ----
    tasks = distill.load_prompts(dc, "test", dc.eval_problems)
    prompts = distill.render(tok, tasks,
                             distill.think_flags(len(tasks), dc.think_ratio, dc.seed + 1))
    rl_final, _ = distill.evaluate(models.load_policy(str(rl_root / "checkpoint"))[0].eval(),
                                   teacher, tok, tasks, prompts, dc)
    start = next(r for r in drows if r["step"] == 0)
    d_t, r_t = training_clock(drows, "time/step_s", teacher_s), training_clock(rrows, "step_s")
    pick = lambda timed, key: [[t, r[key]] for t, r in timed
                               if isinstance(r.get(key), (int, float))]
    teacher_acc = start.get("eval_teacher_accuracy")
    runs = {
        "distillation (off-policy, forward KL)": {
            "knob": {"method": "distill", "lmbda": 0.0, "divergence": "forward_kl",
                     "steps": dc.max_steps},
            "series": {"eval_accuracy": pick(d_t, "eval_accuracy"),
                       "eval_forward_kl": pick(d_t, "eval_forward_kl"),
                       "eval_reverse_kl": pick(d_t, "eval_reverse_kl")},
            "steps": dc.max_steps, "teacher_answers_minutes": teacher_s / 60,
            "train_minutes": train_s / 60, "wall_minutes": train_s / 60},
        "GRPO (binary math reward)": {
            "knob": {"method": "grpo", "time_budget_minutes": round(train_s / 60, 2)},
            "series": {"eval_accuracy": pick(r_t, "eval_accuracy"),
                       "eval_forward_kl": [[0.0, start["eval_forward_kl"]],
                                           [r_t[-1][0], rl_final["eval_forward_kl"]]],
                       "eval_reverse_kl": [[0.0, start["eval_reverse_kl"]],
                                           [r_t[-1][0], rl_final["eval_reverse_kl"]]],
                       "groups_filtered": pick(r_t, "groups_filtered")},
            "steps": max(r["step"] for r in rrows), "train_minutes": r_t[-1][0],
            "wall_minutes": r_t[-1][0], "final": rl_final},
    }
    hl = [(teacher_acc, f"teacher ({teacher_acc:.2f})")] if teacher_acc is not None else []
    panels = [
        {"title": f"held-out accuracy, greedy ({dc.eval_problems} problems)",
         "xlabel": "training minutes", "hlines": hl,
         "lines": [(n, "eval_accuracy", "eval") for n in runs]},
        {"title": "KL(teacher || student) per token, held-out", "xlabel": "training minutes",
         "lines": [(n, "eval_forward_kl", "eval") for n in runs]},
        {"title": "KL(student || teacher) per token, held-out", "xlabel": "training minutes",
         "lines": [(n, "eval_reverse_kl", "eval") for n in runs]},
    ]
    return write(cfg, "distill_vs_rl",
                 {"claim": CLAIMS["distill_vs_rl"], "runs": runs, "teacher_accuracy": teacher_acc},
                 panels, "Qwen3: strong-to-weak distillation vs RL for a half-depth student, "
                 "same training time")


def training_clock(rows: list[dict], key: str, offset_s: float = 0.0) -> list[tuple[float, dict]]:
    """(training minutes when the row was logged, row): the step times `key` summed, evaluation
    time (`eval_s`) left out, starting at `offset_s` (the teacher's answers, for distillation)."""
    out, t = [], offset_s
    for r in rows:
        if r["step"] > 0:
            t += r.get(key, 0.0) - r.get("eval_s", 0.0)
        out.append((t / 60, r))
    return out


CLAIMS = {
    "entropy": "Skywork-OR1: without entropy control the policy's entropy collapses (and "
               "exploration with it); adaptive entropy control keeps it near the target",
    "length_reward": "Phi-4-reasoning-plus: the length-aware reward keeps right answers concise "
                     "and lets wrong ones think longer, against a binary reward",
    "thinking_budget": "Qwen3: accuracy rises smoothly with the thinking budget; thinking off is "
                       "the cheap end",
    "still3_settings": "STILL-3: on-policy training keeps response length and entropy growing "
                       "where off-policy updates do not; the KL penalty is annealed by a cosine",
    "length_bias": "Dr. GRPO / DAPO: GRPO's per-sequence length normaliser lets wrong answers "
                   "grow long; token-level and constant normalisers remove the bias",
    "distill_vs_rl": "Qwen3: for small models, strong-to-weak distillation beats RL at a fraction "
                     "of the cost (Qwen3-8B: 1,800 GPU h against 17,920)",
}


# ==============================================================================================
# Command line
# ==============================================================================================
def parse(argv: list[str] | None = None) -> tuple[list[str], Config]:
    """`NAME [flags]` -> (the figures to run, Config). An unknown name is a one-line error."""
    argv = sys.argv[1:] if argv is None else list(argv)
    names = ", ".join([*FIGURES, "all"])
    if not argv or argv[0].startswith("-"):
        if argv and argv[0] in ("-h", "--help"):
            print(__doc__)
            cli.parse(Config, ["--help"])
        raise cli.UsageError(f"name a figure: python figures.py NAME [flags], NAME one of {names}")
    name, rest = argv[0], argv[1:]
    if name != "all" and name not in FIGURES:
        raise cli.UsageError(f"unknown figure {name!r}: choose one of {names}")
    cfg = cli.parse(Config, rest)
    # a cap of 0 reached grpo.py as time_budget_minutes 0, which means no cap at all: the
    # figure ran without end
    cli.check_positive(cfg, "minutes")
    cli.check_non_negative(cfg, "threads", note=" (0: torch's default)")
    cli.check_seed(cfg.seed)
    if cfg.scale == "tiny" and cfg.model == "smollm2":
        cfg.model = "tiny"
    import models
    models.checked_path(cfg.model)      # a missing folder: at start, not after the first run
    for folder in ("output_dir", "runs_dir"):
        if not getattr(cfg, folder).strip():  # Path(''): the figures would go in the current folder
            raise ValueError(f"--{folder} '': an empty folder name; name a folder (--help shows "
                             "the default)")
    return (list(FIGURES) if name == "all" else [name]), cfg


def run(args: tuple[list[str], Config]) -> list[Path]:
    names, cfg = args
    import runs
    for folder in ("output_dir", "runs_dir"):  # a folder that cannot be written: now, not after
        runs.make_dir(getattr(cfg, folder), f"--{folder}")     # the runs (minutes to hours)
    runs.set_threads(cfg.threads)
    out = []
    for name in names:
        t0 = time.time()
        print(f"\n== figure {name} ({cfg.scale}) ==", flush=True)
        out.append(FIGURES[name](cfg))
        print(f"== figure {name}: {(time.time() - t0) / 60:.1f} min -> {out[-1]} ==", flush=True)
    return out


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(cli.main(run, parse))
