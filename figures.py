"""Each paper's headline finding, reproduced in miniature on a CPU: one command per figure.

    python figures.py NAME            # one figure -> docs/figures/NAME.png and NAME.json
    python figures.py all             # every figure, in the order below
    python figures.py NAME --scale tiny --output_dir /tmp/f   # a random 2-layer model, seconds

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
  length_reward    Phi-4-reasoning-plus §5: the length-aware reward lengthens right answers and
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
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cli


@dataclass
class Config:
    scale: str = field(default="demo", metadata={"help": "demo: the embedded model, each figure <= 15 min on 2 cores | tiny: a random 2-layer model, seconds (tests)", "choices": ["demo", "tiny"]})
    model: str = field(default="smollm2", metadata={"help": "starting model of the shared SFT: 'smollm2' (embedded default) or a folder ('tiny' with --scale tiny)"})
    output_dir: str = field(default="docs/figures", metadata={"help": "where NAME.png and NAME.json go"})
    runs_dir: str = field(default="runs/figures", metadata={"help": "run directories of the figures' runs (and the shared SFT in <runs_dir>/sft)"})
    minutes: float = field(default=15.0, metadata={"help": "time cap per figure (its runs share it; a run stops early at its share)"})
    engine: str = field(default="auto", metadata={"help": "rollout engine: auto | hf | vllm"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    seed: int = field(default=0, metadata={"help": "the one seed of every run"})


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
    return done.exists() and json.loads(done.read_text()) == json.loads(json.dumps(settings, default=str))


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
        print(f"== figures: the shared SFT checkpoint ({sc.max_steps} steps) -> {root} ==", flush=True)
        sft.train(sc)
        mark_finished(root, settings)
    return str(root / "checkpoint")


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
    if cfg.scale == "tiny" and cfg.model == "smollm2":
        cfg.model = "tiny"
    return (list(FIGURES) if name == "all" else [name]), cfg


def run(args: tuple[list[str], Config]) -> list[Path]:
    names, cfg = args
    if cfg.threads:
        import torch
        torch.set_num_threads(cfg.threads)
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
