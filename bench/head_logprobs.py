"""The LM head + log-softmax of a GRPO update, forward and backward, two ways side by side:
`models.HeadLogprobs` (fused: one custom backward that recomputes each chunk's logits and
writes the gradient (onehot - p) g / τ straight into the two matmuls) against the autograd
chain it replaced (commit 35a27bf: each chunk's matmul, float32 copy, division by τ,
logsumexp and gather under activation checkpointing).

The embedded SmolLM2-135M's head (49,152 x 576, tied to the embeddings), random hidden states
and targets, `positions` response tokens in one pass (545: a demo micro-batch of 8 rollouts of
~68 tokens; 2,178: a whole filtered step of 32), the default chunk (`models.auto_chunk_size`),
T 0.9, with and without the entropy term, under bf16 autocast where it pays
(`models.bf16_supported`) and in float32. Modes alternate within each repeat; the table gives
the median seconds of forward + backward and the ratio fused / chain.

    python bench/head_logprobs.py [--repeats 5] [--positions 545,2178]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import models  # noqa: E402


def chain_logprobs(weight, hidden, targets, temperature, with_entropy):
    """The autograd chain before `HeadLogprobs`: per chunk, checkpointed."""
    def chunk_fn(h, t):
        logits = (h @ weight.T).float() / temperature
        lse = torch.logsumexp(logits, dim=-1)
        logp = logits.gather(-1, t.unsqueeze(-1)).squeeze(-1) - lse
        if not with_entropy:
            return logp, torch.zeros_like(logp)
        return logp, lse - (torch.softmax(logits, -1) * logits).sum(-1)
    size = models.auto_chunk_size(1, weight.shape[0])
    parts = [torch.utils.checkpoint.checkpoint(chunk_fn, hidden[:, s:s + size],
                                               targets[:, s:s + size], use_reentrant=False)
             for s in range(0, hidden.shape[1], size)]
    return torch.cat([p[0] for p in parts], 1), torch.cat([p[1] for p in parts], 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--positions", default="545,2178")
    args = ap.parse_args()
    model, _ = models.load_policy(None)
    weight = model.get_output_embeddings().weight
    print("| precision | positions | entropy | chain s | fused s | fused / chain |")
    print("|---|---|---|---|---|---|")
    for bf16 in (["true"] if models.bf16_supported() else []) + ["false"]:
        for n in (int(p) for p in args.positions.split(",")):
            for with_entropy in (False, True):
                gen = torch.Generator().manual_seed(0)
                hidden = torch.randn(1, n, weight.shape[1], generator=gen, requires_grad=True)
                targets = torch.randint(0, weight.shape[0], (1, n), generator=gen)
                fns = {"chain": lambda: chain_logprobs(weight, hidden, targets, 0.9, with_entropy),
                       "fused": lambda: models._head_logprobs(model, hidden, targets, 0.9, None,
                                                              with_entropy)}
                times = {k: [] for k in fns}
                for _ in range(args.repeats):
                    for k, fn in fns.items():
                        model.zero_grad()
                        hidden.grad = None
                        t = time.perf_counter()
                        with models.autocast(bf16):
                            lp, ent = fn()
                        (lp.sum() + 0.1 * ent.sum()).backward()
                        times[k].append(time.perf_counter() - t)
                chain, fused = (statistics.median(times[k]) for k in ("chain", "fused"))
                print(f"| {'bf16' if bf16 == 'true' else 'float32'} | {n} | "
                      f"{'yes' if with_entropy else 'no'} | {chain:.2f} | {fused:.2f} | "
                      f"{fused / chain:.2f} |", flush=True)


if __name__ == "__main__":
    main()
