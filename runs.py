"""Runs: atomic HF checkpoints, RNG state, and the run directory (metrics.jsonl, samples.jsonl,
curves.png, state.pt for `--resume`, summary.json)."""
from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import cli
import distributed


# ----------------------------------------------------------------------------------------------
# Checkpoints, state, run directories
# ----------------------------------------------------------------------------------------------
def _atomic_dir_swap(tmp: Path, final: Path):
    old = final.with_name(final.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    if old.exists():
        shutil.rmtree(old)


def save_checkpoint(model, tokenizer, path: str | Path) -> Path:
    """HF `save_pretrained` into a temporary folder, then swap it in: a kill never leaves a
    half-written checkpoint. The result loads with transformers and vLLM."""
    path = Path(path)
    state = distributed.full_state_dict(model) if distributed.world_size() > 1 else None   # collective: every rank
    bad = [n for n, t in (state or distributed.unwrap(model).state_dict()).items()
           if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad:
        raise FloatingPointError(f"not saving {path}: {len(bad)} tensors hold NaN or inf (first: {bad[0]}); "
                                 "the run diverged (lower the learning rate) or a setting divided by 0")
    if distributed.is_main():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}-"))
        distributed.unwrap(model).save_pretrained(tmp, state_dict=state)
        tokenizer.save_pretrained(tmp)
        _atomic_dir_swap(tmp, path)
    distributed.barrier()
    return path


def atomic_write_text(path: str | Path, text: str):
    """Write a text file atomically (temporary file, then rename): a kill mid-write leaves the
    old file. The temporary name carries the pid, so torchrun ranks never share one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def atomic_torch_save(obj, path: str | Path):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def rng_state() -> dict:
    return {"python": random.getstate(), "numpy": np.random.get_state(),
            "torch": torch.get_rng_state()}


def set_rng_state(state: dict):
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def seed_everything(seed: int):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def state_file(root: str | Path) -> Path:
    """<root>/state.pt; under torchrun each rank keeps its own state.rank{r}.pt (sharded optimizer)."""
    return Path(root) / ("state.pt" if distributed.world_size() == 1 else f"state.rank{distributed.rank()}.pt")


def holds_run(root: str | Path) -> bool:
    """A folder holds a run when it has metrics, a checkpoint or a saved state."""
    root = Path(root)
    return any((root / f).exists() for f in ("metrics.jsonl", "checkpoint", "state.pt"))


def open_run(root: str | Path, config, resume: bool, overwrite: bool) -> "RunDir":
    """The run directory of a script's --output_dir, --resume, --overwrite:
    a folder that already holds a run is refused unless one of the two is given, so a second run
    never wipes or mixes into the first; --resume without a saved state is an error."""
    root = Path(root)
    if resume and not state_file(root).exists():
        raise ValueError(f"--resume: {root} has no saved state (state.pt) to continue from; drop "
                         "--resume to start a new run there, or point --output_dir at the run to continue")
    if not resume and not overwrite and holds_run(root) and distributed.is_main():
        raise ValueError(f"{root} already holds a run: pass --resume to continue it, --overwrite to "
                         "replace it, or --output_dir to start another (nothing was changed)")
    return RunDir(root, config, resume=resume)


class RunDir:
    """runs/<name>/: config.json, metrics.jsonl, samples.jsonl, curves.png, checkpoint/, state.pt."""

    def __init__(self, root: str | Path, config=None, resume: bool = False):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.logged_step, self.saved_step = 0, 0        # for the Ctrl-C message (cli.main)
        cli.ACTIVE["run"] = self
        if config is not None and distributed.is_main():
            cfg = config if isinstance(config, dict) else config.__dict__
            (self.root / "config.json").write_text(json.dumps(cfg, indent=2, default=str))
        if not resume and distributed.is_main():
            for f in ("metrics.jsonl", "samples.jsonl"):
                (self.root / f).unlink(missing_ok=True)
        self._t0 = time.time()

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def state_path(self) -> Path:
        return state_file(self.root)

    def log(self, metrics: dict, file: str = "metrics.jsonl"):
        if not distributed.is_main():
            return
        with open(self.root / file, "a") as f:
            f.write(json.dumps(metrics, default=float) + "\n")
        if file == "metrics.jsonl":
            self.logged_step = metrics.get("step", self.logged_step)

    def log_samples(self, step: int, rows: list[dict]):
        for row in rows:
            self.log({"step": step, **row}, "samples.jsonl")

    def metrics(self) -> list[dict]:
        path = self.root / "metrics.jsonl"
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []

    def truncate_metrics(self, step: int):
        """On --resume, drop lines logged after the last saved state (they will be redone)."""
        for name in ("metrics.jsonl", "samples.jsonl"):
            path = self.root / name
            if path.exists():
                rows = [l for l in path.read_text().splitlines()
                        if l.strip() and json.loads(l).get("step", 0) <= step]
                path.write_text("".join(r + "\n" for r in rows))

    def save(self, model, tokenizer, state: dict):
        """Checkpoint then state; state.pt is written last, so it never points past the model."""
        save_checkpoint(model, tokenizer, self.checkpoint)
        atomic_torch_save({**state, "rng": rng_state()}, self.state_path)
        self.saved_step = state.get("step", self.saved_step)
        if os.environ.get("RANK_WEIGHTS_DEBUG"):  # tests: each rank's own copy, per step
            local = {k: getattr(v, "_local_tensor", v).detach().clone() for k, v in distributed.unwrap(model).state_dict().items()}
            torch.save(local, self.root / f"weights.step{state.get('step', 0)}.rank{distributed.rank()}.pt")

    def load_state(self) -> dict | None:
        if not self.state_path.exists():
            return None
        state = torch.load(self.state_path, weights_only=False)
        set_rng_state(state["rng"])
        self.saved_step = self.logged_step = state.get("step", 0)
        return state

    def summary(self, keys: list[str]) -> str:
        """The end of a run: its last value of each metric, and where checkpoint, metrics and
        curves are. Printed, and returned."""
        rows = self.metrics()
        last = {k: next((r[k] for r in reversed(rows) if k in r), None) for k in keys}
        shown = ", ".join(f"{k} {v:.4g}" for k, v in last.items() if isinstance(v, (int, float)))
        text = (f"\n== done: step {rows[-1].get('step', len(rows)) if rows else 0}: {shown or 'no metrics'}\n"
                f"   checkpoint {self.checkpoint}\n   metrics    {self.root / 'metrics.jsonl'}\n"
                f"   curves     {self.root / 'curves.png'}")
        if distributed.is_main():
            print(text, flush=True)
        return text

    def plot(self, keys: list[str] | None = None, title: str = "", overlay: dict[str, str] | None = None,
             smooth: float = 0.6) -> Path | None:
        """curves.png: one panel per metric, raw points with a smoothed line (an exponential moving
        average, weight `smooth`), integer steps. `overlay` {"accuracy": "eval_accuracy"} draws a
        second metric's points on the first's panel (held-out evaluations over rollout accuracy).
        A metric that never changes gets no panel; the title names the run and its settings."""
        rows = self.metrics()
        if not rows:
            return None
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
        overlay = overlay or {}
        series = lambda k: [(r.get("step", i), r[k]) for i, r in enumerate(rows)
                            if isinstance(r.get(k), (int, float)) and math.isfinite(r[k])]
        keys = keys or [k for k, v in rows[-1].items() if isinstance(v, (int, float)) and k != "step"]
        keys = [k for k in keys if k not in overlay.values() or k in overlay]
        varies = lambda k: len({v for _, v in series(k)}) > 1
        keys = [k for k in keys if varies(k) or (k in overlay and varies(overlay[k]))]
        if not keys:
            return None
        cols = min(3, len(keys))
        nrows = math.ceil(len(keys) / cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(4.5 * cols, 3 * nrows), squeeze=False)
        for ax, k in zip(axes.flat, keys):
            pts = series(k)
            if pts:
                xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                ax.plot(xs, ys, "o", ms=3, alpha=0.35, color="C0")
                ema, smoothed = ys[0], []
                for y in ys:
                    ema = smooth * ema + (1 - smooth) * y
                    smoothed.append(ema)
                ax.plot(xs, smoothed, "-", color="C0", label=k)
            if k in overlay and series(overlay[k]):
                ev = series(overlay[k])
                ax.plot([p[0] for p in ev], [p[1] for p in ev], "s-", color="C3", label=overlay[k])
                ax.legend(fontsize=7)
            ax.set_title(k, fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in list(axes.flat)[len(keys):]:
            ax.axis("off")
        if title:
            fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        out = self.root / "curves.png"
        fig.savefig(out, dpi=80)
        plt.close(fig)
        return out


@contextlib.contextmanager
def timer(store: dict, key: str):
    t = time.perf_counter()
    yield
    store[key] = store.get(key, 0.0) + time.perf_counter() - t
