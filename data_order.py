"""The seeded order of the training data, shared by the trainers.

Each epoch is a fresh permutation of the data, fixed by (seed, epoch) alone, so the batches of a
step are a pure function of its position in the stream: a run resumed with `--resume` sees the
same batches as an uninterrupted one, and needs no data cursor beyond the step it stopped at.
"""
from __future__ import annotations

import random


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
