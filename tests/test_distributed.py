"""torchrun --nproc-per-node 2 (gloo, CPU) for sft.py, grpo.py and distill.py on the tiny model.

Two checks per script:
* DDP: with RANK_WEIGHTS_DEBUG=1, `RunDir.save` writes each rank's own weights after every
  step (`weights.step{s}.rank{r}.pt`, save every step); the two ranks must hold identical weights.
* FSDP2 (fully_shard works with gloo on CPU): the gathered HF checkpoint must equal a
  single-process run on the same data within a small tolerance (the single run sees both ranks'
  data as gradient accumulation steps, or as one batch, so the global token mean is the same).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import TINY_GRPO, run_script, with_flags

ROOT = Path(__file__).resolve().parent.parent


def run(script: str, out: Path, args: list[str], nproc: int = 1, **env) -> Path:
    """`script` under torchrun with `nproc` ranks, each on one thread; nproc 1 (the reference
    run): in this process (conftest's run_script, no torchrun variables set), on one thread too."""
    if nproc == 1:
        assert not env and not {"RANK", "WORLD_SIZE", "LOCAL_RANK"} & set(os.environ)
        threads = torch.get_num_threads()
        try:
            proc = run_script(script, "--output_dir", str(out), "--threads", "1", *args)
        finally:
            torch.set_num_threads(threads)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
        return out
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(nproc),
        "--master-port",
        str(29500 + os.getpid() % 1000),
    ]
    child_env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", **env}
    proc = subprocess.run(
        launcher + [str(ROOT / script), "--output_dir", str(out), *args],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return out


def checkpoint_weights(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(out / "checkpoint" / "model.safetensors")


def assert_ranks_identical(out: Path, steps: int):
    for step in range(1, steps + 1):
        w0 = torch.load(out / f"weights.step{step}.rank0.pt")
        w1 = torch.load(out / f"weights.step{step}.rank1.pt")
        assert w0.keys() == w1.keys()
        for k in w0:
            assert torch.equal(w0[k], w1[k]), f"step {step}: ranks differ in {k}"


def assert_close(a: dict, b: dict, atol: float):
    assert a.keys() == b.keys()
    worst = max((a[k].float() - b[k].float()).abs().max().item() for k in a)
    assert worst < atol, f"max |difference| {worst:.2e}"


# ---- sft ----------------------------------------------------------------------------------------
SFT = [
    "--model",
    "tiny",
    "--num_examples",
    "8",
    "--max_length",
    "256",
    "--packing",
    "false",
    "--max_steps",
    "2",
    "--save_steps",
    "1",
    "--eval_problems",
    "0",
    "--learning_rate",
    "1e-3",
    "--warmup_steps",
    "0",
]


def test_sft_ddp_ranks_identical(tmp_path):
    """DDP: both ranks hold identical weights after each of 2 steps."""
    out = run(
        "sft.py", tmp_path / "ddp", SFT + ["--parallel", "ddp"], nproc=2, RANK_WEIGHTS_DEBUG="1"
    )
    assert_ranks_identical(out, 2)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2  # rank 0 logs, once a step


# float32: under bf16 autocast the two runs round differently, and Adam turns a near-zero
# gradient's rounding into a step of up to lr (9e-4 in one embedding row); in float32 they agree
# to 1e-7
FLOAT32 = ["--bf16", "false"]


def test_sft_fsdp2_matches_single_process(tmp_path):
    """FSDP2: 2 ranks x 1 batch == 1 process x 2 accumulated batches (the same 4 examples)."""
    single = run("sft.py", tmp_path / "one", SFT + FLOAT32 + ["--gradient_accumulation_steps", "2"])
    sharded = run("sft.py", tmp_path / "fsdp2", SFT + FLOAT32 + ["--parallel", "fsdp2"], nproc=2)
    assert_close(checkpoint_weights(sharded), checkpoint_weights(single), atol=1e-6)
    assert (sharded / "state.rank0.pt").exists() and (sharded / "state.rank1.pt").exists()


# ---- distill ------------------------------------------------------------------------------------
DISTILL = [
    "--teacher",
    "tiny",
    "--student_from_teacher",
    "true",
    "--keep_every",
    "2",
    "--num_train_prompts",
    "8",
    "--eval_problems",
    "0",
    "--max_completion_length",
    "8",
    "--prompts_per_step",
    "4",
    "--engine",
    "hf",
    "--max_steps",
    "2",
    "--save_steps",
    "1",
    "--learning_rate",
    "1e-3",
]


def test_distill_ddp_ranks_identical(tmp_path):
    """DDP, on-policy (each rank samples its 2 of the 4 prompts): identical weights each step."""
    out = run(
        "distill.py",
        tmp_path / "ddp",
        DISTILL + ["--lmbda", "1", "--parallel", "ddp"],
        nproc=2,
        RANK_WEIGHTS_DEBUG="1",
    )
    assert_ranks_identical(out, 2)


def test_distill_fsdp2_matches_single_process(tmp_path):
    """FSDP2, off-policy (the same cached teacher answers): 2 ranks x 2 sequences == 1 x 4."""
    single = run("distill.py", tmp_path / "one", DISTILL + ["--lmbda", "0"])
    sharded = run(
        "distill.py", tmp_path / "fsdp2", DISTILL + ["--lmbda", "0", "--parallel", "fsdp2"], nproc=2
    )
    assert_close(checkpoint_weights(sharded), checkpoint_weights(single), atol=2e-5)


# ---- grpo ---------------------------------------------------------------------------------------
# 2 prompts per step = 1 per rank, each rank samples and scores its own group of 4. The entropy
# bonus gives a gradient even when a random model's rewards are all equal. Sampling differs from
# a single process (each rank draws its own completions), so grpo is checked rank against rank.
GRPO = TINY_GRPO + (
    "--score_truncated false --filter_zero_variance false --entropy_coef 0.01 --max_steps 2 "
    "--save_steps 1 --micro_batch_size 2"
).split()


def test_grpo_ddp_ranks_identical(tmp_path):
    """DDP: each rank generates its own group; identical weights after each of 2 steps. With the
    template curriculum, both ranks draw from the same counts: the groups of both ranks, summed
    (2 steps x 2 groups)."""
    args = GRPO + ["--parallel", "ddp", "--curriculum", "templates"]
    out = run("grpo.py", tmp_path / "ddp", args, nproc=2, RANK_WEIGHTS_DEBUG="1")
    assert_ranks_identical(out, 2)
    states = [torch.load(out / f"state.rank{r}.pt", weights_only=False) for r in (0, 1)]
    assert states[0]["curriculum"] == states[1]["curriculum"]
    assert sum(states[0]["curriculum"]["groups"].values()) == 4


def test_grpo_fsdp2_trains_and_gathers(tmp_path):
    """FSDP2: 2 steps run (generate on the sharded policy, ranks in step), the gathered
    checkpoint has every weight and differs from the initial model."""
    from models import load_policy

    out = run("grpo.py", tmp_path / "fsdp2", GRPO + ["--parallel", "fsdp2"], nproc=2)
    init = {k: v for k, v in load_policy("tiny")[0].state_dict().items() if k != "lm_head.weight"}
    after = checkpoint_weights(out)
    assert after.keys() == init.keys()
    assert any(not torch.equal(after[k], init[k]) for k in after), "weights did not change"


def test_grpo_time_budget_stops_every_rank_at_the_same_step(tmp_path):
    """Under torchrun the budget's stop is agreed over ranks (any rank over stops all): a budget
    spent after the first step ends both ranks there, with one checkpoint and one metrics line."""
    import json

    args = list(GRPO)
    args[args.index("--max_steps") + 1] = "5"
    out = run(
        "grpo.py",
        tmp_path / "budget",
        args + ["--parallel", "ddp", "--time_budget_minutes", "1e-6"],
        nproc=2,
    )
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1] and (out / "checkpoint" / "model.safetensors").exists()


@pytest.mark.vllm
def test_grpo_fsdp2_each_rank_samples_from_its_own_synced_vllm_engine(tmp_path):
    """FSDP2 with --engine vllm: each rank builds its own engine from the gathered weights and,
    after every optimizer step, syncs it from its shards: the engine's log-probs agree with the
    trainer's (logprob_mismatch, logged each step: bf16 numerics where the CPU has bf16 math,
    far below a stale engine's 0.1 or more) and the gathered checkpoint trained."""
    from models import load_policy

    out = run(
        "grpo.py",
        tmp_path / "fsdp2-vllm",
        with_flags(*GRPO, "--parallel", "fsdp2", "--engine", "vllm"),
        nproc=2,
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
    )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    mismatch = [r["logprob_mismatch"] for r in rows if "logprob_mismatch" in r]
    assert len(mismatch) == 2 and max(mismatch) < 0.05, mismatch
    init = {k: v for k, v in load_policy("tiny")[0].state_dict().items() if k != "lm_head.weight"}
    after = checkpoint_weights(out)
    assert any(not torch.equal(after[k], init[k]) for k in after), "weights did not change"
