"""GRPO training pass with and without `--share_prompt`, and HF rollouts with and without the
shared prompt prefill, side by side. The training table also times the shared pass as it was
before completions were packed (`padded_shared_logprobs`: every completion padded to the
longest in its micro-batch), so the packing's gain is measured in the same run.

`grpo.train_on_batch` on the embedded SmolLM2-135M: 8 level-1 math prompts of the demo's
families (arithmetic, percent; chat template, 38-59 tokens) x G rollouts of 55-85 random tokens
(the demo's 96-token rollouts average ~67), one optimizer step, strictly on-policy, micro-batch
= G (one group). Modes alternate within each repeat, so both see the same machine load; the
table gives the median seconds and the ratio shared / unshared. The rollout table times
`HFEngine.generate` (8 prompts x G samples, T 1.0, 96 new tokens, same seed) with each distinct
prompt prefilled once (`engines.shared_prompt_cache`) and with the plain per-row prefill.
`--checkpoint DIR`: the model and the training batch's rollouts are that checkpoint's own
(sampled at T 1.0, 96 new tokens, as the demo's GRPO does), so the completions have their
real lengths, and the training pass runs as the demo's does (bf16 autocast where it pays).

    python bench/shared_prompt.py [--repeats 3] [--groups 4,8] [--checkpoint DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import data  # noqa: E402
import engines  # noqa: E402
import grpo  # noqa: E402
import models  # noqa: E402


def batch(tok, G: int, prompts: int = 8, seed: int = 0, engine=None):
    tasks = data.math_tasks(prompts, "train", seed, ["arithmetic", "percent"], (1,))
    p_ids = data.prompt_ids(tok, tasks)
    gen = torch.Generator().manual_seed(seed)
    if engine is not None:   # the checkpoint's own rollouts
        params = engines.SamplingParams(n=G, temperature=1.0, max_new_tokens=96, seed=seed)
        comps = [c.completion_ids for c in engine.generate(p_ids, params)]
    else:
        comps = [
            torch.randint(
                100, 40000, (int(torch.randint(55, 86, (1,), generator=gen)),), generator=gen
            ).tolist()
            for _ in range(prompts * G)
        ]
    ids, attn, cmask = models.pad_batch(
        [p for p in p_ids for _ in range(G)], comps, tok.pad_token_id
    )
    adv = torch.randn(len(comps), generator=gen)
    return ids, attn, cmask[:, 1:].float(), adv, [len(p) for p in p_ids]


def padded_shared_logprobs(model, input_ids, attention_mask, prompt_len, temperature=1.0,
                           chunk_size=None, with_entropy=False):
    """`models.shared_prompt_logprobs` before packing (commit 99207ed): the prompt's KV cache
    gathered to every row, the completions run padded to the longest one."""
    prompt, prompt_attn = input_ids[:, :prompt_len], attention_mask[:, :prompt_len]
    uniq, inverse = torch.unique(torch.cat([prompt, prompt_attn], 1), dim=0, return_inverse=True)
    u_ids, u_attn = uniq[:, :prompt_len], uniq[:, prompt_len:]
    decoder = model.get_decoder()
    key = models.cache_key(decoder)
    out = decoder(input_ids=u_ids, attention_mask=u_attn,
                  position_ids=(u_attn.cumsum(-1) - 1).clamp(min=0), use_cache=True)
    cache = out[key]
    cache.reorder_cache(inverse)
    comp, comp_attn = input_ids[:, prompt_len:], attention_mask[:, prompt_len:]
    positions = prompt_attn.sum(-1, keepdim=True) + comp_attn.cumsum(-1) - 1
    hidden_c = decoder(input_ids=comp, attention_mask=attention_mask,
                       position_ids=positions.clamp(min=0), use_cache=True,
                       **{key: cache}).last_hidden_state
    hidden = torch.cat([out.last_hidden_state[inverse, -1:], hidden_c[:, :-1]], 1)
    return models._head_logprobs(model, hidden, comp, temperature, chunk_size, with_entropy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--groups", default="4,8")
    ap.add_argument("--checkpoint", default="", help="rollouts of this checkpoint (default: "
                    "random tokens on the embedded model)")
    args = ap.parse_args()
    model, tok = models.load_policy(args.checkpoint or None)
    sampler = engines.HFEngine(model, tok) if args.checkpoint else None
    bf16 = "auto" if args.checkpoint else "false"
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # times the step; weights stay put
    print(
        "| G | rollouts | prompt tokens | tokens in batch | unshared s | shared, padded s "
        "| shared, packed s | padded / unshared | packed / unshared | packed / padded |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    packed = models.shared_prompt_logprobs
    for G in (int(g) for g in args.groups.split(",")):
        ids, attn, mask, adv, p_lens = batch(tok, G, engine=sampler)
        lens = mask.sum(1).view(-1, G)   # a completion's tokens, by group (rows are grouped)
        print(f"(G {G}: completions of {lens.mean():.1f} tokens on average; the longest of a "
              f"group, {lens.max(1).values.mean():.1f} on average)")
        times = {"unshared": [], "padded": [], "packed": []}
        for _ in range(args.repeats):
            for mode in times:
                models.shared_prompt_logprobs = (padded_shared_logprobs if mode == "padded"
                                                 else packed)
                cfg = grpo.parse(["--micro_batch_size", str(G), "--share_prompt",
                                  str(mode != "unshared").lower(), "--bf16", bf16])
                t = time.perf_counter()
                grpo.train_on_batch(
                    model, opt, None, ids, attn, mask, adv, None, cfg, 0.0, 0.0, 96, 0, {}
                )
                times[mode].append(time.perf_counter() - t)
        models.shared_prompt_logprobs = packed
        off, pad, on = (statistics.median(times[m]) for m in ("unshared", "padded", "packed"))
        print(
            f"| {G} | {len(adv)} | {min(p_lens)}-{max(p_lens)} | {int(attn.sum())} "
            f"| {off:.1f} | {pad:.1f} | {on:.1f} "
            f"| {pad / off:.2f} | {on / off:.2f} | {on / pad:.2f} |",
            flush=True,
        )

    print()
    print("| G | rollouts | plain prefill s | shared prefill s | shared / plain |")
    print("|---|---|---|---|---|")
    real = engines.shared_prompt_cache
    engine = engines.HFEngine(model, tok)
    tasks = data.math_tasks(8, "train", 0, ["arithmetic", "percent"], (1,))
    params = engines.SamplingParams(temperature=1.0, max_new_tokens=96, seed=0)
    for G in (int(g) for g in args.groups.split(",")):
        times = {"plain": [], "shared": []}
        for _ in range(args.repeats):
            for mode in ("plain", "shared"):
                engines.shared_prompt_cache = real if mode == "shared" else (lambda m, i, a: {})
                t = time.perf_counter()
                engine.generate(
                    data.prompt_ids(tok, tasks),
                    engines.SamplingParams(**{**params.__dict__, "n": G}),
                )
                times[mode].append(time.perf_counter() - t)
        engines.shared_prompt_cache = real
        off, on = statistics.median(times["plain"]), statistics.median(times["shared"])
        print(f"| {G} | {8 * G} | {off:.1f} | {on:.1f} | {on / off:.2f} |", flush=True)


if __name__ == "__main__":
    main()
