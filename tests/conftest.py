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
