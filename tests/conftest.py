import importlib.util
import os
import subprocess
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


def run_script(script: str, *args: str) -> subprocess.CompletedProcess:
    """`python SCRIPT ARGS` run in this process as its `__main__` block runs it (`cli.main` on
    the script's entry and parse), in the repository root, RR_TRACEBACK unset, stdout and stderr
    captured; an exception that escapes is a traceback on stderr and exit status 1, as in a fresh
    process. A fresh interpreter pays 3-6 s of imports (python, torch, transformers) a call:
    tests keep one only where the process is the point (signals, torchrun, tcmalloc's re-exec)."""
    import contextlib
    import importlib
    import io
    import traceback

    import cli

    module = importlib.import_module(Path(script).stem)
    entry = getattr(module, {"pipeline": "run", "evaluate": "evaluate", "figures": "run"}.get(
        module.__name__, "train"))
    parse = getattr(module, "parse", lambda argv: cli.parse(module.Config, argv))
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, os.environ.pop("RR_TRACEBACK", None), cli.ACTIVE["run"]
    sys.argv = [str(ROOT / script), *args]      # argparse's and the resume hint's script name
    cli.ACTIVE["run"] = None                    # no run of an earlier test is this one's
    try:
        with (contextlib.chdir(ROOT), contextlib.redirect_stdout(out),
              contextlib.redirect_stderr(err)):
            try:
                code = cli.main(entry, parse, list(args))
            except SystemExit as e:     # as the interpreter reads sys.exit's argument
                code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
                if not isinstance(e.code, (int, type(None))):
                    print(e.code, file=sys.stderr)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        sys.argv, cli.ACTIVE["run"] = saved[0], saved[2]
        if saved[1] is not None:
            os.environ["RR_TRACEBACK"] = saved[1]
    return subprocess.CompletedProcess([sys.executable, str(ROOT / script), *args], code,
                                       out.getvalue(), err.getvalue())


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


@pytest.fixture(autouse=True, scope="session")
def _embedded_tokenizer_read_once():
    """`models.load_tokenizer` of the embedded tokenizer (the tiny model's and the default's)
    reads its files once a session; each call then gets a deep copy of that load, a third of a
    load's time (most of the suite's runs load it, often several times). The path is resolved
    as models does it on every call (RR_CACHE, a patched `_embedded_checkpoint` still act), and
    a test that changes its copy changes no other test's."""
    import copy

    import models

    real, read = models.load_tokenizer, {}

    def load_tokenizer(name: str | None = None):
        if name is not None and name != models.DEFAULT_MODEL and not models.is_tiny(name):
            return real(name)
        path = str(models._embedded_checkpoint())
        if path not in read:
            read[path] = real(path)
        return copy.deepcopy(read[path])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(models, "load_tokenizer", load_tokenizer)
        yield


@pytest.fixture(autouse=True, scope="session")
def _tiny_model_built_once():
    """`models.tiny_model` builds each (architecture, size, seed) once a session; each call then
    gets a deep copy (a tenth of a build's time: no random init of 49152 x 128 embeddings) and
    leaves torch's CPU random state where a build leaves it (seeded, then drawn from), so what a
    test samples next is what it sampled before."""
    import copy

    import torch

    import models

    real, built = models.tiny_model, {}

    def tiny_model(*args, **kwargs):
        key = repr((args, sorted(kwargs.items())))
        if key not in built:
            built[key] = real(*args, **kwargs), torch.get_rng_state()
        model, rng = built[key]
        torch.set_rng_state(rng)
        return copy.deepcopy(model)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(models, "tiny_model", tiny_model)
        yield


@pytest.fixture(scope="session")
def tokenizer():
    import models

    return models.load_tokenizer()


@pytest.fixture(scope="session")
def tiny(tokenizer):
    import models

    model, _ = models.load_policy("tiny")
    return model
