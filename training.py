"""The bookkeeping of a training loop, apart from its algorithm: which prompts come next, which
context stage a step is in, and whether the wall-time budget allows another step.

* `epoch_order`, `stream_indices`: the seeded data order of every trainer. Each epoch is a fresh
  permutation fixed by (seed, epoch), so a step's batch is a pure function of its position in
  the stream and a resumed run sees the batches an uninterrupted one would.
* `parse_stages`, `stage_at`: multi-stage context lengths ('8192:100,16384:100', Skywork-OR1).
* `TimeBudget`: no step starts that would end past `--time_budget_minutes`; under torchrun every
  rank stops at the same step.
* `check_finite`: a loss of NaN or inf stops the run before anything of its step is saved.
"""
from __future__ import annotations

import random
import time

import torch

import distributed


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """A permutation of range(n), the same for the same (seed, epoch).

    >>> epoch_order(5, seed=0, epoch=0), epoch_order(5, seed=0, epoch=1)
    ([0, 4, 3, 1, 2], [4, 3, 0, 2, 1])
    """
    order = list(range(n))
    random.Random(f"{seed}-{epoch}").shuffle(order)
    return order


def stream_indices(n: int, seed: int, position: int, count: int) -> list[int]:
    """Items `position .. position + count - 1` of the endless stream
    epoch_order(n, seed, 0) + epoch_order(n, seed, 1) + ...: consecutive batches of one epoch
    cover the data once, and a batch may run across an epoch boundary.

    >>> stream_indices(5, seed=0, position=0, count=3)       # epoch 0: [0, 4, 3, 1, 2]
    [0, 4, 3]
    >>> stream_indices(5, seed=0, position=3, count=3)       # then epoch 1: [4, 3, 0, 2, 1]
    [1, 2, 4]
    """
    orders: dict[int, list[int]] = {}
    out = []
    for pos in range(position, position + count):
        epoch, i = divmod(pos, n)
        if epoch not in orders:
            orders[epoch] = epoch_order(n, seed, epoch)
        out.append(orders[epoch][i])
    return out


def parse_stages(stages: str, max_completion_length: int, max_steps: int) -> list[tuple[int, int]]:
    """'8192:100,16384:100' -> [(8192, 100), (16384, 100)]; empty: one stage,
    [(max_completion_length, max_steps)].

    >>> parse_stages("8192:100,16384:100", 256, 10)
    [(8192, 100), (16384, 100)]
    """
    if not stages.strip():
        return [(max_completion_length, max_steps)]
    try:
        out = [(int(a), int(b)) for a, b in (s.split(":") for s in stages.split(","))]
    except ValueError:
        raise ValueError(f"--stages {stages!r}: write 'TOKENS:STEPS,TOKENS:STEPS', "
                         "e.g. '8192:100,16384:100'") from None
    if any(t <= 0 or n <= 0 for t, n in out):
        raise ValueError(f"--stages {stages!r}: tokens and steps must be positive")
    return out


def stage_at(stages: list[tuple[int, int]], step: int) -> tuple[int, int]:
    """(stage index, max response tokens) of a 0-based step; past the end, the last stage.

    >>> [stage_at([(8192, 2), (16384, 1)], s) for s in range(4)]
    [(0, 8192), (0, 8192), (1, 16384), (1, 16384)]
    """
    end = 0
    for i, (tokens, steps) in enumerate(stages):
        end += steps
        if step < end:
            return i, tokens
    return len(stages) - 1, stages[-1][0]


class TimeBudget:
    """--time_budget_minutes: no step starts that would end past it, predicted from the pace of
    the step just done (0: no limit). The clock starts when the budget is made.

    >>> TimeBudget(0).spent(step_start=time.perf_counter())
    False
    >>> TimeBudget(1e-9).spent(step_start=time.perf_counter())
    True
    """

    def __init__(self, minutes: float):
        self.minutes, self.start = minutes, time.perf_counter()

    def spent(self, step_start: float) -> bool:
        """Would another step as long as the one begun at `step_start` end past the budget?
        Under torchrun the ranks' clocks differ, so one rank over stops every rank."""
        now = time.perf_counter()
        over = now - self.start + (now - step_start) > 60 * self.minutes
        return self.minutes > 0 and distributed.mean_over_ranks(float(over)) > 0

    def note_stop(self, step: int, total: int, script: str = "grpo"):
        """Says so where the budget, not the step count, ended the run at `step` (saved)."""
        if step < total and distributed.is_main():
            print(f"[{script}] note: stopped at step {step} of {total}: another step would end "
                  f"past the budget of {duration(60 * self.minutes)} (--time_budget_minutes); "
                  "it is saved: --resume with a larger budget goes on", flush=True)


def duration(seconds: float) -> str:
    """A time span as a person reads it, to the second ('--time_budget_minutes 5.55121' printed
    its value unrounded; 1234567.5 as 1.23457e+06).

    >>> duration(5.55121 * 60), duration(0.25), duration(19 * 60), duration(1234567.5 * 60)
    ('5 min 33 s', '0.25 s', '19 min', '20576 h 08 min')
    """
    if seconds < 1:
        return f"{seconds:.2g} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        (big, small), names = divmod(whole, 60), ("min", "s")
    else:
        (big, small), names = divmod(round(whole / 60), 60), ("h", "min")
    return f"{big} {names[0]}" + f" {small:02d} {names[1]}" * (small > 0)


def check_finite(loss, step: int):
    """A NaN or infinite loss stops the run at once, with the likely causes: nothing of this
    step is saved, so the last checkpoint stays intact.

    >>> check_finite(torch.tensor(float("nan")), 3)
    Traceback (most recent call last):
    FloatingPointError: step 3: the loss is nan; nothing of this step was saved. ...
    """
    if not torch.isfinite(loss):
        raise FloatingPointError(
            f"step {step}: the loss is {loss.item()}; nothing of this step was saved. Likely "
            "cause: a learning rate too high for this model (--learning_rate), or log-probs of "
            "-inf (sampling, distillation: a temperature near 0); the last checkpoint in "
            "--output_dir is intact")
