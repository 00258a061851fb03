"""Runs: atomic HF checkpoints, RNG state, and the run directory (config.json, metrics.jsonl,
samples.jsonl, curves.png, state.pt for `--resume`; `RunDir.summary`, the lines printed at the
end); the figures (`plot_curves`: a run's curves, `plot_stages`: accuracy by stage, with Wilson
intervals)."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import random
import re
import resource
import shutil
import textwrap
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
    # collective: every rank
    state = distributed.full_state_dict(model) if distributed.world_size() > 1 else None
    bad = [n for n, t in (state or distributed.unwrap(model).state_dict()).items()
           if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad:
        raise FloatingPointError(f"not saving {path}: {len(bad)} tensors hold NaN or inf "
                                 f"(first: {bad[0]}); the run diverged (lower the learning rate) "
                                 "or a setting divided by 0")
    if distributed.is_main():
        path.parent.mkdir(parents=True, exist_ok=True)
        # a save killed outright (SIGKILL, the OOM killer) left its temporary folder, a whole
        # model's size, each time; only this process writes here
        for stale in path.parent.glob(f".{path.name}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        # made as any folder is, so the checkpoint others read is as readable as its run folder
        # (tempfile.mkdtemp's is private, 0700, and the checkpoint kept that)
        tmp = path.parent / f".{path.name}-{os.getpid()}"
        tmp.mkdir()
        with _removed_on_error(tmp, path):   # a full disk, Ctrl-C: the old checkpoint stays
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
    with _removed_on_error(tmp, path):
        tmp.write_text(text)
    os.replace(tmp, path)


@contextlib.contextmanager
def _removed_on_error(tmp: Path, path: Path):
    """The temporary file or folder that a failed write (a full disk, Ctrl-C) would leave,
    taking space, is removed; the error is raised as the OSError it is (`os_error`)."""
    try:
        yield
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
        err = os_error(e, path)
        if err is e:
            raise
        if isinstance(err, KeyboardInterrupt):   # Ctrl-C, whatever torch.save raised after it
            raise KeyboardInterrupt from None
        raise err from e


def os_error(e: BaseException, path: Path) -> BaseException:
    """`e` as the OSError it is, which `cli.main` could then tell from a bug: torch.save raises
    a RuntimeError ("unexpected pos") while handling a full disk's OSError, and safetensors
    names the OS error in its own message ("No space left on device (os error 28)"). Under a
    Ctrl-C torch.save raises the same RuntimeError: then it is the KeyboardInterrupt.

    >>> os_error(RuntimeError("I/O error: No space left on device (os error 28)"), Path("c"))
    OSError(28, 'No space left on device')
    """
    if isinstance(e, (OSError, KeyboardInterrupt)):
        return e
    cause = e.__context__
    while cause is not None and not isinstance(cause, (OSError, KeyboardInterrupt)):
        cause = cause.__context__
    if isinstance(cause, KeyboardInterrupt):
        return cause
    named = re.search(r"\(os error (\d+)\)", str(e))
    code = cause.errno if cause is not None else named and int(named[1])
    return OSError(code, os.strerror(code), str(path)) if code else e


def rng_state() -> dict:
    return {"python": random.getstate(), "numpy": np.random.get_state(),
            "torch": torch.get_rng_state()}


def set_rng_state(state: dict):
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def seed_everything(seed: int, threads: int = 0):
    """Seed python, numpy and torch; threads > 0 also fixes torch's CPU thread count (the order
    of its float sums, and so the last bits of a run, depend on it)."""
    if threads < 0:     # torch's own error was a traceback
        raise ValueError(f"--threads {threads}: cannot be negative (0: torch's default)")
    cli.check_seed(seed)
    set_threads(threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def set_threads(threads: int):
    """torch's CPU thread count, `threads` > 0 (0: torch's default). More threads than the cores
    this process may use take turns on them, and every step is slower: said, not passed over
    (--threads 1000 on 2 cores ran without a word)."""
    if not threads:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if threads > cores:
        print(f"[runs] note: --threads {threads} is above the {cores} CPU cores this process may "
              f"use: the threads take turns and each step is slower; use --threads {cores} "
              "(or 0, torch's default)", flush=True)
    torch.set_num_threads(threads)


def state_file(root: str | Path) -> Path:
    """<root>/state.pt; under torchrun each rank keeps its own state.rank{r}.pt (sharded
    optimizer)."""
    return Path(root) / ("state.pt" if distributed.world_size() == 1
                         else f"state.rank{distributed.rank()}.pt")


def holds_run(root: str | Path) -> bool:
    """A folder holds a run when it has metrics, a checkpoint or a saved state."""
    root = Path(root)
    return any((root / f).exists() for f in ("metrics.jsonl", "checkpoint", "state.pt"))


# What --resume may change: settings that cannot change what a run trains. Where the run lives
# and how it starts; the machine, speed and memory (the same updates up to rounding); logging,
# evaluation, saving and when to give up. Any other setting, changed, would go on training under
# settings the run's config.json does not record (as pipeline.py refuses for finished stages).
MAY_CHANGE_ON_RESUME = frozenset({
    "output_dir", "resume", "overwrite",
    "threads", "engine", "parallel", "device", "bf16", "chunk_size", "micro_batch_size",
    "share_prompt",
    "eval_every", "eval_problems", "eval_samples", "eval_temperature",
    "eval_max_completion_length", "eval_only", "log_samples", "save_steps",
    "time_budget_minutes", "max_steps_without_signal"})


def check_same_settings(root: Path, config, may_change: tuple[str, ...] = ()):
    """--resume: every setting that shapes the training, `MAY_CHANGE_ON_RESUME` and a script's
    own `may_change` aside, equals the one in the run's config.json; otherwise ValueError naming
    each change (old -> new) and the fix, before anything is written. A setting that config.json
    lacks (a run made before it existed) is not compared; one that this script lacks means
    another script's run (sft.py's, resumed by grpo.py), refused as well."""
    path = root / "config.json"
    try:
        before = json.loads(path.read_text())
        if not isinstance(before, dict):    # 'null', a list: a TypeError traceback
            raise ValueError(f"JSON {type(before).__name__}, not an object")
    except (OSError, ValueError) as e:     # missing or damaged: nothing to compare against
        print(f"[runs] note: --resume: {path} cannot be read ({type(e).__name__}: "
              f"{str(e)[:60]}); the settings of the run are not compared", flush=True)
        return
    now = json.loads(json.dumps(_fields(config), default=str))   # as config.json holds them
    foreign = sorted(set(before) - set(now))   # grpo.py resumed an sft.py run: its optimizer's
    if foreign:                                # error, after config.json was overwritten
        named = ", ".join(f"--{k}" for k in foreign[:4]) + ", ..." * (len(foreign) > 4)
        raise ValueError(f"--resume: {root} holds a run of another script (or of another "
                         f"version of this one): its config.json records settings this one does "
                         f"not have ({named}); resume it with the script that made it, or train "
                         "into another --output_dir (nothing was changed)")
    changed = [f"--{k} {before[k]!r} -> {v!r}" for k, v in now.items()
               if k in before and before[k] != v and k not in MAY_CHANGE_ON_RESUME
               and k not in may_change]
    if changed:
        raise ValueError(f"--resume: {state_file(root)} continues a run trained with other "
                         f"settings: {', '.join(changed)}; resume with the run's own values (its "
                         "config.json), or train with the new ones into another --output_dir "
                         "(or drop --resume for --overwrite); nothing was changed")


def _fields(config) -> dict:
    return config if isinstance(config, dict) else config.__dict__


def open_run(root: str | Path, config, resume: bool, overwrite: bool,
             may_change: tuple[str, ...] = ()) -> "RunDir":
    """The run directory of a script's --output_dir, --resume, --overwrite:
    a folder that already holds a run is refused unless one of the two is given, so a second run
    never wipes or mixes into the first; --resume without a saved state, or with settings other
    than the run's (`check_same_settings`; `may_change` names the script's own exceptions), is
    an error."""
    if not str(root).strip():      # Path('') is the current folder: the run went there
        raise ValueError("--output_dir '': an empty folder name (an unset shell variable?); "
                         "name the run's folder, e.g. --output_dir runs/NAME")
    root = check_folder_path(root)
    if is_checkpoint(root):    # the run's config.json went over the model's: the model was lost
        raise ValueError(f"--output_dir {root} holds a model checkpoint (config.json and its "
                         "weights), which a run there would overwrite with its own config.json; "
                         "pass another --output_dir, e.g. runs/NAME (nothing was changed)")
    if (root / "config.json").is_file() and not holds_run(root) and not run_config(root):
        # a folder of other work (an app's, a tokenizer's config.json): a run there went over it
        raise ValueError(f"--output_dir {root} holds a config.json that is no run's (it records "
                         "no run settings), which a run there would overwrite with its own; "
                         "pass a folder of its own, e.g. --output_dir runs/NAME (nothing was "
                         "changed)")
    if resume and not state_file(root).exists():
        raise ValueError(f"--resume: {root} has no saved state (state.pt) to continue from; drop "
                         "--resume to start a new run there, or point --output_dir at the run to "
                         "continue")
    if resume and config is not None:
        check_same_settings(root, config, may_change)
    if not resume and not overwrite and holds_run(root) and distributed.is_main():
        raise ValueError(f"{root} already holds a run: pass --resume to continue it, --overwrite "
                         "to replace it, or --output_dir to start another (nothing was changed)")
    return RunDir(root, config, resume=resume)


def run_config(root: Path) -> bool:
    """Whether root/config.json is a run's record: a JSON object of settings with an output_dir
    (every script has one)."""
    try:
        settings = json.loads((root / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(settings, dict) and "output_dir" in settings


def is_checkpoint(root: Path) -> bool:
    """A folder holding a model as save_pretrained writes it: config.json and weights (a run's
    own checkpoint is the folder `checkpoint/` inside it)."""
    weights = ("*.safetensors", "*.safetensors.index.json", "pytorch_model*.bin")
    return (root / "config.json").is_file() and any(any(root.glob(w)) for w in weights)


def check_folder_path(root: str | Path, flag: str = "--output_dir") -> Path:
    """`root` as a Path, refused when a file stands where it or a folder above it would go (a
    FileExistsError traceback, or a bare '[Errno 20] Not a directory')."""
    root = Path(root)
    cli.check_links(root, flag)
    file = next((p for p in (root, *root.parents) if p.exists() and not p.is_dir()), None)
    if file is not None:
        raise NotADirectoryError(f"{flag} {root}: {file} is a file, not a folder; pass another "
                                 f"{flag} (nothing was changed)")
    return root


def make_dir(root: str | Path, flag: str = "--output_dir") -> Path:
    """`root`, made now, so that a folder that cannot be written (a file in its way, a read-only
    disk) fails at start and not after the work that would have gone in it. One that cannot be
    made is named with its flag ('/proc/x' was a bare '[Errno 2] No such file or directory')."""
    root = check_folder_path(root, flag)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if cli.disk_error(e):      # a full or read-only disk: cli.disk_message names it
            raise
        raise ValueError(f"{flag} {root}: the folder cannot be made ({e.strerror}: "
                         f"{e.filename}); pass a folder you can write, e.g. {flag} runs/NAME "
                         "(nothing was changed)") from None
    # there, but not writable (another user's, chmod a-w): the first write failed mid-run,
    # after the model had loaded and the first step had run
    if not os.access(root, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {root}: the folder cannot be written (no write permission for "
                         f"this user); pass a folder you can write, e.g. {flag} runs/NAME, or "
                         f"make it yours (chmod u+w {root}) (nothing was changed)")
    return root


def keep_earlier(path: Path, overwrite: bool):
    """A result file written earlier is replaced only with --overwrite (a second evaluation into
    the same folder wiped the first)."""
    if path.exists() and not overwrite:
        raise ValueError(f"{path} holds an earlier result; pass another --output_dir, or "
                         "--overwrite to replace it (nothing was changed)")


# The run folders this process holds locked: folder -> its open descriptor (`lock_run_dir`)
_LOCKS: dict[Path, int] = {}


def lock_run_dir(root: Path):
    """Holds `root` for this process until it exits (flock on the folder itself, so no file is
    added; the kernel lets go when the process ends, even if killed). A second run on the same
    --output_dir at once interleaved its metrics and checkpoints with the first's: refused.
    Where the file system cannot lock (some network disks) the run goes on unlocked."""
    root = root.resolve()
    if root in _LOCKS:          # this process's earlier run there (pipeline stages, tests)
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise ValueError(f"--output_dir {root}: another run is writing to it now (two runs "
                             "in one folder interleave their metrics and checkpoints); wait for "
                             "it to end, or pass another --output_dir (nothing was changed)"
                             ) from None
        return
    _LOCKS[root] = fd


def unlock_run_dir(root: Path):
    fd = _LOCKS.pop(root.resolve(), None)
    if fd is not None:
        os.close(fd)


def peak_rss_gb() -> float:
    """This process's peak resident memory in GB (Linux reports ru_maxrss in KiB). The vLLM
    engine runs in this process, so its weights and KV cache are counted."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


class RunDir:
    """runs/<name>/: config.json, metrics.jsonl, samples.jsonl, curves.png, checkpoint/,
    state.pt."""

    def __init__(self, root: str | Path, config=None, resume: bool = False):
        self.root = Path(root)
        self.made = not self.root.exists()      # by this run: removed if it stays empty
        make_dir(self.root)
        if distributed.is_main():
            lock_run_dir(self.root)
        self.logged_step, self.saved_step = 0, 0        # for the Ctrl-C message (cli.main)
        cli.ACTIVE["run"] = self
        self._config = None
        if config is not None and distributed.is_main():
            self._config = json.dumps(_fields(config), indent=2, default=str)
        # config.json and the end of an earlier run's metrics (--overwrite) wait for the first
        # metrics line or save: a run refused before it trains (no example fits, a response
        # longer than the context) leaves no config.json and loses nothing of an earlier run.
        # On --resume, load_state writes config.json once the state has loaded.
        self._fresh = not resume and distributed.is_main()
        self._t0 = time.time()

    def begin(self):
        """The run's first record: config.json, and for a new run no earlier metrics."""
        if self._fresh:
            for f in ("metrics.jsonl", "samples.jsonl"):
                (self.root / f).unlink(missing_ok=True)
            self._fresh = False
        self.write_config()

    def write_config(self):
        if self._config is not None:
            atomic_write_text(self.root / "config.json", self._config)
            self._config = None

    def remove_if_unused(self):
        """The folder this run made, while it holds nothing (the run was refused at start)."""
        if self.made and self.root.is_dir() and not any(self.root.iterdir()):
            unlock_run_dir(self.root)
            self.root.rmdir()

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def state_path(self) -> Path:
        return state_file(self.root)

    def log(self, metrics: dict, file: str = "metrics.jsonl"):
        if not distributed.is_main():
            return
        self.begin()
        with open(self.root / file, "a") as f:
            f.write(json.dumps(metrics, default=float) + "\n")
        if file == "metrics.jsonl":
            self.logged_step = metrics.get("step", self.logged_step)

    def log_samples(self, step: int, rows: list[dict]):
        for row in rows:
            self.log({"step": step, **row}, "samples.jsonl")

    def metrics(self) -> list[dict]:
        return read_metrics(self.root)

    def truncate_metrics(self, step: int):
        """On --resume, drop lines logged after the last saved state (they will be redone)."""
        for name in ("metrics.jsonl", "samples.jsonl"):
            path = self.root / name
            if path.exists():   # read_jsonl: a line cut short by the kill is dropped too
                rows = [r for r in read_jsonl(path) if r.get("step", 0) <= step]
                atomic_write_text(path, "".join(json.dumps(r, default=float) + "\n"
                                                for r in rows))

    def save(self, model, tokenizer, state: dict):
        """Checkpoint and state.pt of one step: the state goes to a temporary file, the
        checkpoint is swapped in, then the state. A full disk or a kill in either write leaves
        both at the last save (the model was at the new step, state.pt at the old one, and
        --resume trained that step twice), with no temporary files taking space."""
        if distributed.is_main():
            self.begin()
        tmp = self.state_path.with_name(f".{self.state_path.name}.tmp")
        with _removed_on_error(tmp, self.state_path):
            with open(tmp, "wb") as f:   # a file: torch.save(obj, name) hid the OSError
                torch.save({**state, "rng": rng_state()}, f)
            save_checkpoint(model, tokenizer, self.checkpoint)
        os.replace(tmp, self.state_path)
        self.saved_step = state.get("step", self.saved_step)
        if os.environ.get("RANK_WEIGHTS_DEBUG"):  # tests: each rank's own copy, per step
            local = {k: getattr(v, "_local_tensor", v).detach().clone()
                     for k, v in distributed.unwrap(model).state_dict().items()}
            torch.save(local, self.root
                       / f"weights.step{state.get('step', 0)}.rank{distributed.rank()}.pt")

    def load_state(self, max_steps: int | None = None) -> dict | None:
        """state.pt of the run being resumed (None: there is none). A run already past
        `max_steps`, the step it is now to end at, is refused before its config.json records
        the new value (`--resume --max_steps 1` on a run at step 3 did nothing and wrote
        max_steps 1 into the record)."""
        if not self.state_path.exists():
            return None
        try:
            state = torch.load(self.state_path, weights_only=False)
            set_rng_state(state["rng"])
        except Exception as e:      # truncated, overwritten or not ours: unpickling raises anything
            raise ValueError(f"--resume: {self.state_path} cannot be read ({type(e).__name__}: "
                             f"{str(e)[:80]}); it is damaged. Weights and metrics are "
                             f"untouched: start a new run from the saved weights with --model "
                             f"{self.checkpoint} --output_dir OTHER, or start this one over "
                             "with --overwrite") from None
        step = state.get("step", 0)
        if max_steps is not None and step > max_steps:
            raise ValueError(f"--resume: {self.root} is already at step {step}, past --max_steps "
                             f"{max_steps}; a run cannot go back: give --max_steps above {step} "
                             f"to continue it, or start from its checkpoint ({self.checkpoint}) "
                             "in another --output_dir (nothing was changed)")
        self.resumable_checkpoint()
        self.saved_step = self.logged_step = step
        self.write_config()             # the resumed run's flags, now that its state is good
        return state

    def resumable_checkpoint(self) -> Path:
        """--resume: the run's checkpoint, which its state.pt goes with; refused with the fix
        where it is missing or lacks config.json or weights (deleted, a copy cut short): it was
        "model '.../checkpoint': no such folder. Pass a checkpoint folder", naming no run."""
        if not is_checkpoint(self.checkpoint):
            raise ValueError(f"--resume: {self.root} has its state.pt but not the model it goes "
                             f"with ({self.checkpoint}: config.json and weights), so the run "
                             "cannot continue; restore that folder, or start the run over with "
                             "--overwrite (nothing was changed)")
        return self.checkpoint

    def load_optimizer(self, optimizer, saved: dict):
        """--resume: the optimizer's saved state into `optimizer`, refused with the fix when it
        does not fit this model's parameters (a state.pt of another run or model size): torch
        checks the number of parameters only, and a shape that differs failed at the first step
        with a bare RuntimeError."""
        params = [p for group in optimizer.param_groups for p in group["params"]]
        try:
            optimizer.load_state_dict(saved)
            wrong = next((tuple(v.shape) for p in params
                          for v in optimizer.state.get(p, {}).values()
                          if torch.is_tensor(v) and v.dim() and v.shape != p.shape), None)
            if wrong is not None:
                raise ValueError(f"a moment of shape {wrong} does not fit its parameter")
        except ValueError as e:
            raise ValueError(f"--resume: {self.state_path} holds the optimizer of another model "
                             f"({e}); it belongs to another run or model size. Resume with "
                             f"that run's own state.pt, or start this one over with "
                             "--overwrite (nothing was changed)") from None

    def summary(self, keys: list[str]) -> str:
        """The end of a run: its last value of each metric, and where checkpoint, metrics and
        curves are. Printed, and returned."""
        rows = self.metrics()
        last = {k: next((r[k] for r in reversed(rows) if k in r), None) for k in keys}
        shown = ", ".join(f"{k} {v:.4g}" for k, v in last.items() if isinstance(v, (int, float)))
        text = (f"\n== done: step {rows[-1].get('step', len(rows)) if rows else 0}: "
                f"{shown or 'no metrics'}\n"
                f"   checkpoint {self.checkpoint}\n   metrics    {self.root / 'metrics.jsonl'}\n"
                f"   curves     {self.root / 'curves.png'}\n   peak RSS   {peak_rss_gb():.1f} GB")
        if distributed.is_main():
            print(text, flush=True)
        return text

    def plot(self, keys: list[str] | None = None, title: str = "",
             overlay: dict[str, str] | None = None, smooth: float = 0.6,
             evaluations: dict[str, dict[str, list]] | None = None) -> Path | None:
        """curves.png from this run's metrics (`plot_curves`)."""
        return plot_curves(self.metrics(), self.root / "curves.png", keys, title, overlay, smooth,
                           evaluations)


# ----------------------------------------------------------------------------------------------
# Figures
# ----------------------------------------------------------------------------------------------
def read_jsonl(path: str | Path) -> list[dict]:
    """The rows of a jsonl file a run appends to. A last line that does not parse is a row cut
    short by a kill mid-write: it is left out, with a note, so the curves, --resume and the
    figures go on from the good rows (it was a bare JSON error). A bad line before the last is
    damage: ValueError naming the file and the line."""
    path = Path(path)
    lines = [(i, line) for i, line in enumerate(path.read_text().splitlines(), 1)
             if line.strip()]
    rows = []
    for k, (i, line) in enumerate(lines):
        try:
            rows.append(json.loads(line))
        except ValueError as e:
            if k < len(lines) - 1:
                raise ValueError(f"{path}, line {i}, cannot be read ({e}); restore the file or "
                                 "delete that line") from None
            print(f"[runs] note: {path}: the last line is cut short (a run stopped mid-write); "
                  f"it is left out", flush=True)
    return rows


def read_metrics(root: str | Path) -> list[dict]:
    """The rows of <root>/metrics.jsonl ([] when there is none; see `read_jsonl`)."""
    path = Path(root) / "metrics.jsonl"
    return read_jsonl(path) if path.exists() else []


def smoothed(ys: list[float], weight: float = 0.6) -> list[float]:
    """Exponential moving average, started at the first value: s_t = w * s_(t-1) + (1 - w) * y_t.

    >>> smoothed([0.0, 1.0, 1.0], 0.5)
    [0.0, 0.5, 0.75]
    """
    out, ema = [], ys[0] if ys else 0.0
    for y in ys:
        ema = weight * ema + (1 - weight) * y
        out.append(ema)
    return out


def pyplot():
    """matplotlib.pyplot on the Agg backend (PNG files, no display), imported when a run first
    draws: the scripts that never plot do not load it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, path: str | Path, title: str = "") -> Path:
    """`fig` under its `title` as a PNG at `path` (80 dpi), closed; returns the path."""
    if title:   # wrapped to the figure's width: one panel's figure cut a long title at both ends
        fig.suptitle(textwrap.fill(title, max(40, int(fig.get_figwidth() * 12))), fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=80)
    pyplot().close(fig)
    return path


def plot_curves(rows: list[dict], path: str | Path, keys: list[str] | None = None, title: str = "",
                overlay: dict[str, str] | None = None, smooth: float = 0.6,
                evaluations: dict[str, dict[str, list]] | None = None) -> Path | None:
    """One panel per metric: raw points with a smoothed line (`smoothed`, weight `smooth`),
    integer steps. `overlay` {"accuracy": "eval_accuracy"} draws a second metric's points on the
    first's panel (held-out evaluations over rollout accuracy). `evaluations` {"accuracy":
    {"held-out problems (512)": [(0, 0.21), (7, 0.25)]}} draws evaluations made outside the run
    (the pipeline's, before and after a stage) on a panel, as labelled markers with their values;
    a panel is made for them when no metric has that name. A panel whose values never change
    gets none; the title names the run and its settings. Returns the PNG's path (None: nothing to
    draw)."""
    if not rows and not evaluations:
        return None
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator
    overlay, evaluations = overlay or {}, evaluations or {}
    series = lambda k: [(r.get("step", i), r[k]) for i, r in enumerate(rows)
                        if isinstance(r.get(k), (int, float)) and math.isfinite(r[k])]
    keys = keys or ([k for k, v in rows[-1].items() if isinstance(v, (int, float)) and k != "step"]
                    if rows else [])
    keys = [k for k in keys if k not in overlay.values() or k in overlay]
    keys += [k for k in evaluations if k not in keys]
    varies = lambda k: len({v for _, v in series(k)}) > 1
    evaluated = lambda k: len({y for pts in evaluations.get(k, {}).values() for _, y in pts}) > 1
    keys = [k for k in keys if varies(k) or (k in overlay and varies(overlay[k])) or evaluated(k)]
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
            ax.plot(xs, smoothed(ys, smooth), "-", color="C0", label=k)
        if k in overlay and series(overlay[k]):
            ev = series(overlay[k])
            ax.plot([p[0] for p in ev], [p[1] for p in ev], "s-", color="C3", label=overlay[k])
        for j, (label, ev) in enumerate(evaluations.get(k, {}).items()):
            xs, ys = [p[0] for p in ev], [p[1] for p in ev]
            ax.plot(xs, ys, "D--", ms=6, color=f"C{j + 1}", label=label)
            for x, y in zip(xs, ys):
                ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=7, color=f"C{j + 1}")
        if (k in overlay and series(overlay[k])) or evaluations.get(k):
            ax.legend(fontsize=7)
            ax.margins(x=0.12, y=0.12)   # room for the values written beside the evaluations
        ax.set_title(k, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    return save_figure(fig, path, title)


def wilson_interval(accuracy: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of an accuracy measured on n problems (Wilson 1927,
    "Probable inference, the law of succession, and statistical inference", JASA 22(158)):

        (p + z²/2n ± z √(p(1 - p)/n + z²/4n²)) / (1 + z²/n)

    It stays inside [0, 1] and is not empty at p = 0, where the normal approximation is.

    >>> [round(v, 3) for v in wilson_interval(0.0, 64)]
    [0.0, 0.057]
    >>> [round(v, 3) for v in wilson_interval(0.25, 512)]
    [0.214, 0.289]
    """
    if n <= 0:
        return (0.0, 1.0)
    centre = accuracy + z * z / (2 * n)
    spread = z * math.sqrt(accuracy * (1 - accuracy) / n + z * z / (4 * n * n))
    return (max(0.0, (centre - spread) / (1 + z * z / n)),
            min(1.0, (centre + spread) / (1 + z * z / n)))


def plot_stages(stages: list[str], series: dict[str, list[dict | None]], path: str | Path,
                title: str = "",
                by_group: dict[str, dict[str, list[float | None]]] | None = None) -> Path:
    """Accuracy by stage (pipeline.py's summary.png). `series` {label: one point per stage,
    {"accuracy", "n", "note"?} or None}: a line per series, each point with its 95% Wilson interval
    (`wilson_interval`) and its note beside it (e.g. the paired sign test against the stage
    before). `by_group` {label: {group: accuracy per stage}} adds a second panel (e.g. per
    family)."""
    plt = pyplot()
    panels = 2 if by_group else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    xs = list(range(len(stages)))
    # at each stage, the highest point's note sits above it and the others' below theirs, so the
    # notes of two close values do not overlap
    top = [max(range(len(col)), key=lambda j: col[j]["accuracy"] if col[j] else -1)
           for col in zip(*series.values())]
    for j, (label, points) in enumerate(series.items()):
        at = [(x, p) for x, p in zip(xs, points) if p]
        if not at:
            continue
        ys = [p["accuracy"] for _, p in at]
        lo_hi = [wilson_interval(p["accuracy"], p["n"]) for _, p in at]
        err = [[y - lo for y, (lo, _) in zip(ys, lo_hi)], [hi - y for y, (_, hi) in zip(ys, lo_hi)]]
        shift = (j - (len(series) - 1) / 2) * 0.06   # side by side, so the bars do not overlap
        ax.errorbar([x + shift for x, _ in at], ys, yerr=err, fmt="o-", capsize=4, color=f"C{j}",
                    label=label)
        for (x, p), y in zip(at, ys):
            note = f"{y:.3f} (n={p['n']})" + (f"\n{p['note']}" if p.get("note") else "")
            above = j == top[x]
            ax.annotate(note, (x + shift, y), textcoords="offset points",
                        xytext=(6, 4 if above else -6), va="bottom" if above else "top",
                        fontsize=7, color=f"C{j}")
    ax.set_xticks(xs, stages, fontsize=8)
    ax.set_ylabel("greedy accuracy (95% interval)", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("held-out accuracy by stage", fontsize=9)
    if by_group:
        ax = axes[0][1]
        for style, (label, groups) in zip(["o-", "s--", "^:"], by_group.items()):
            for g, (group, ys) in enumerate(groups.items()):
                at = [(x, y) for x, y in zip(xs, ys) if y is not None]
                if at:
                    ax.plot([x for x, _ in at], [y for _, y in at], style, color=f"C{g}",
                            label=f"{group}, {label}")
        ax.set_xticks(xs, stages, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6, ncol=2)
        ax.set_title("by family", fontsize=9)
    return save_figure(fig, path, title)


@contextlib.contextmanager
def timer(store: dict, key: str):
    t = time.perf_counter()
    yield
    store[key] = store.get(key, 0.0) + time.perf_counter() - t
