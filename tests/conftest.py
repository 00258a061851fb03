import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach a model hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# `--engine auto` means HF generate in tests: tiny models start in no time there, a vLLM engine
# takes 8-40 s. The tests marked `vllm` ask for vLLM by name.
os.environ.setdefault("RR_ENGINE", "hf")

# grpo.py on the tiny random model in seconds: 2 prompts x 4 samples of 8 tokens per step
TINY_GRPO = (
    "--model tiny --engine hf --num_generations 4 --prompts_per_step 2 --max_completion_length 8 "
    "--num_train_prompts 8 --eval_problems 0 --math_levels 1 --learning_rate 1e-3"
).split()


def with_flags(*args: str) -> list[str]:
    """`args` with each flag once, a later one in place of an earlier one: `with_flags(*TINY_GRPO,
    "--learning_rate", "1e-4")` (the scripts refuse a flag given twice)."""
    groups: dict[str, list[str]] = {}
    for i, a in enumerate(args):
        if a.startswith("--") or not groups:
            key = a.split("=", 1)[0] if a.startswith("--") else str(i)
            groups.pop(key, None)
            groups[key] = [a]
        else:
            groups[next(reversed(groups))].append(a)
    return [a for group in groups.values() for a in group]


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("vllm") is None:
        skip = pytest.mark.skip(
            reason="vllm does not import here (setup.sh installs it where a wheel exists)"
        )
        for item in items:
            if "vllm" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state, whatever ran before it (CI order, -k, -x)."""
    import random

    import numpy as np
    import torch

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def tokenizer():
    import models

    return models.load_tokenizer()


@pytest.fixture(scope="session")
def tiny(tokenizer):
    import models

    model, _ = models.load_policy("tiny")
    return model
