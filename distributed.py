"""Distributed training under torchrun: FSDP2 or DDP wrapping, ranks, sharding and metric means.
A single-process run never touches torch.distributed."""
from __future__ import annotations

import os

import torch


# ----------------------------------------------------------------------------------------------
# Distributed (torchrun): FSDP2 or DDP. A single-process run never touches torch.distributed.
# ----------------------------------------------------------------------------------------------
def dist_init() -> tuple[int, int]:
    """(rank, world_size). Under torchrun, joins the process group (nccl on GPU, gloo on CPU)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return dist.get_rank(), world


def _dist_on() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank() -> int:
    return torch.distributed.get_rank() if _dist_on() else 0


def world_size() -> int:
    return torch.distributed.get_world_size() if _dist_on() else 1


def is_main() -> bool:
    return rank() == 0


def barrier():
    if _dist_on():
        torch.distributed.barrier()


def shard_for_rank(items: list, pad: bool = False) -> list:
    """This rank's share: items[rank::world]. Shard prompts, not samples, so a group of n
    completions of one prompt is always scored on one rank. `pad`: repeat items from the start
    until every rank gets the same number (as DistributedSampler does): under FSDP2 every
    forward is a collective, so all ranks must run the same number of them."""
    if pad and len(items) % world_size():
        items = items + items[:world_size() - len(items) % world_size()]
    return items[rank()::world_size()]


def wrap_model(model, strategy: str = "fsdp2"):
    """FSDP2 (`fully_shard` on each decoder layer, then the root) or DDP; identity when alone.

    Returns the HF model itself, so a script keeps calling `model.get_decoder()`,
    `model.get_output_embeddings()` and `model.generate()` as in a single process. The scripts
    run the decoder directly (never the root forward, whose LM head would materialise [B, T, V]
    logits), so the wrapper's forward logic is attached to the decoder call with hooks:
    FSDP2's root pre/post-forward (gathers embeddings, final norm, LM head; the root keeps them
    gathered until backward, so the chunked LM head can read the weight) or DDP's
    (prepares the bucketed gradient all-reduce for the next backward).
    """
    if world_size() == 1 or strategy == "none":
        return model
    decoder = model.get_decoder()
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        # broadcasts rank 0's weights once; buffers (rotary tables) are computed, not learned
        ddp = DistributedDataParallel(model, broadcast_buffers=False)   # held by the hooks
        decoder.register_forward_pre_hook(lambda m, args, kwargs: ddp._pre_forward(*args, **kwargs),
                                          with_kwargs=True)
        decoder.register_forward_hook(lambda m, args, out: ddp._post_forward(out))
        return model
    if strategy != "fsdp2":
        raise ValueError(f"--parallel {strategy!r} is not one of fsdp2, ddp, none")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.fsdp._fully_shard._fsdp_common import TrainingState
    mesh = init_device_mesh("cuda" if torch.cuda.is_available() else "cpu", (world_size(),))
    for layer in decoder.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    state = model._get_fsdp_state()
    entered = []                               # the decoder hook ran the root's pre-forward

    def pre(m, args, kwargs):                  # skipped inside the root forward (generate)
        if state._training_state == TrainingState.IDLE:
            entered.append(True)
            return state._pre_forward(model, args, kwargs)

    def post(m, args, out):
        if entered:
            entered.pop()
            return state._post_forward(model, args, out)

    decoder.register_forward_pre_hook(pre, with_kwargs=True)
    decoder.register_forward_hook(post)
    return model


def unwrap(model):
    """The HF model inside a DDP wrapper (FSDP2 shards in place and needs no unwrapping)."""
    return getattr(model, "module", model)


def all_reduce_mean(metrics: dict) -> dict:
    """Mean of each numeric metric over ranks (identity when alone)."""
    if world_size() == 1:
        return metrics
    keys = sorted(k for k, v in metrics.items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool))
    t = torch.tensor([float(metrics[k]) for k in keys], dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return {**metrics, **{k: v / world_size() for k, v in zip(keys, t.tolist())}}


def mean_over_ranks(x: float) -> float:
    """The mean of a number over ranks (identity when alone). A loss summed over this rank's
    tokens and divided by `mean_over_ranks(n_tokens)` gives, after DDP/FSDP2 average the
    gradients over ranks, the token mean over the global batch: Σ_r loss_r / Σ_r n_r."""
    return all_reduce_mean({"x": float(x)})["x"]


def full_state_dict(model) -> dict:
    """The whole model's weights on CPU, gathered from all ranks (a collective under FSDP2)."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
    )
    model = unwrap(model)
    if world_size() == 1:
        return model.state_dict()
    state = get_model_state_dict(
        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    # a tied LM head gathers as a separate copy of the embedding: keep one, as HF does
    first = {}
    for name, t in model.state_dict(keep_vars=True).items():
        first.setdefault(id(t), name)
    return {k: v for k, v in state.items() if k in set(first.values())}
