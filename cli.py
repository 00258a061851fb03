"""Command lines: flags, the checks every script shares, and errors a person can act on.

Plumbing shared by `sft.py`, `grpo.py`, `distill.py`, `evaluate.py` and `pipeline.py`:

* `flag(default, help)`: one Config field, its default and its --help text.
* `parse(Config, argv)`: `transformers.HfArgumentParser` without prefix abbreviations
  (`--max_step` is not `--max_steps_scale`), and a misspelled flag gets "did you mean";
  `--output_dir=~/x`, which the shell leaves alone, is the home folder's x (`expand_home`).
* `main(run, parse)`: runs a script; a user mistake (a bad value, a missing file, a malformed
  row) prints one line naming the problem and the fix, with no traceback (`RR_TRACEBACK=1`
  shows it); Ctrl-C prints the step reached, the last saved step and the command that resumes,
  and so does SIGTERM (a scheduler's stop, `kill`), which ended the run without a word.
  A command line first runs itself again with tcmalloc preloaded where it is installed
  (`tcmalloc_env`).
* `check_positive`, `check_sampling`: values that would make training meaningless, refused at
  start with the flag's name.
"""
from __future__ import annotations

import ctypes.util
import dataclasses
import difflib
import errno
import json
import math
import os
import shlex
import signal
import sys
import threading

from transformers import HfArgumentParser


class SetupError(RuntimeError):
    """The machine lacks what a setting needs (a package, a kernel); the message names the
    fix (install it, or another setting)."""


# What a user can fix: raised by the scripts' checks (ValueError, data.DataError), a missing file.
USER_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, PermissionError,
               FloatingPointError, SetupError)


class UsageError(SystemExit):
    """A bad command line: its message is printed as is and the exit status is 2."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _flags(parser) -> list[str]:
    """The flags, each once: `--num_generations`, not also its dashed twin `--num-generations`."""
    flags = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    return sorted(f for f in flags
                  if "-" not in f[2:] or "--" + f[2:].replace("-", "_") not in flags)


# Flags renamed so that every script uses one name for one idea (TRL's where TRL has one).
RENAMED = {"--save_every": "--save_steps", "--num_test_prompts": "--eval_problems",
           "--eval_prompts": "--eval_problems", "--num_eval_prompts": "--eval_problems",
           "--num_problems": "--eval_problems", "--max_new_tokens": "--max_completion_length",
           "--eval_max_new_tokens": "--eval_max_completion_length",
           "--batch_size": "--prompts_per_step"}


# TRL's (and transformers') names for our flags: the first of each that a script has
TRL_NAMES = {"--model_name_or_path": ("--model", "--student"),
             "--teacher_model_name_or_path": ("--teacher",), "--teacher_model": ("--teacher",),
             "--dataset_name": ("--dataset", "--task"), "--max_seq_length": ("--max_length",),
             "--per_device_train_batch_size": ("--prompts_per_step",),
             "--use_vllm": ("--engine vllm",), "--bf16": ("--dtype bfloat16",),
             "--model": ("--student",), "--eval_steps": ("--eval_every",),
             "--num_eval_problems": ("--eval_problems",),
             # other trainers' and the papers' names (OpenRLHF, verl, PPO): the fuzzy guess gave
             # '--lr: did you mean --help?', '--kl_coef: --entropy_coef', '--clip_range:
             # --kl_anneal', '--group_size: --prompt_field', '--num_samples: --math_families'
             "--lr": ("--learning_rate",), "--kl_coef": ("--beta",),
             "--init_kl_coef": ("--beta",), "--kl_beta": ("--beta",),
             "--clip_range": ("--epsilon",), "--cliprange": ("--epsilon",),
             "--clip_ratio": ("--epsilon",), "--clip_eps": ("--epsilon",),
             "--epsilon_low": ("--epsilon",), "--clip_ratio_low": ("--epsilon",),
             "--clip_ratio_high": ("--epsilon_high",), "--clip_range_high": ("--epsilon_high",),
             "--group_size": ("--num_generations",), "--num_completions": ("--num_generations",),
             "--n_samples_per_prompt": ("--num_generations", "--k"),
             "--rollout_n": ("--num_generations",),
             "--num_samples": ("--num_generations", "--k"), "--n": ("--num_generations", "--k"),
             "--pass_at_k": ("--k",), "--num_return_sequences": ("--num_generations", "--k"),
             "--torch_dtype": ("--dtype", "--bf16"), "--epochs": ("--num_train_epochs",),
             "--num_epochs": ("--num_train_epochs",), "--warmup_ratio": ("--warmup_steps",)}

# What no script has, said as such rather than guessed at ('--use_peft: did you mean --seed?')
NOT_HERE = {"--use_peft": "LoRA/PEFT is not implemented: every script trains all the weights",
            "--lora_": "LoRA/PEFT is not implemented: every script trains all the weights",
            "--load_in_": "quantized training is not implemented: models load in float32 or "
                          "bfloat16",
            "--fp16": "float16 is not implemented: use bfloat16 (--bf16 true in grpo.py and "
                      "sft.py, --dtype bfloat16 in distill.py)",
            "--max_prompt_length": "prompts are never cut: the longest prompt plus "
                                   "--max_completion_length must fit the model's context"}

# The scripts whose flags a command may have taken from another (`other_script`)
SCRIPTS = ("grpo", "sft", "distill", "evaluate", "pipeline")


def other_script(name: str) -> str:
    """Which other scripts take `name` ('--num_generations' given to sft.py: grpo.py's), or ''."""
    import importlib
    this = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    dest = name[2:].replace("-", "_")
    owners = []
    for script in SCRIPTS:
        try:
            config = importlib.import_module(script).Config
        except (ImportError, AttributeError):
            continue
        if script != this and dest in {f.name for f in dataclasses.fields(config)}:
            owners.append(f"{script}.py")
    return " and ".join(owners)


def did_you_mean(flag: str, known: list[str]) -> str:
    """'--max_step' among the known flags -> "did you mean --max_steps?" (or a pointer to --help).
    A renamed flag or TRL's name gets ours (the first a script has: `TRL_NAMES`, in any case or
    dash spelling), a flag only other scripts take names them.

    >>> did_you_mean("--num_generation", ["--num_generations", "--num_iterations", "--seed"])
    'did you mean --num_generations?'
    >>> did_you_mean("--Model-Name-Or-Path", ["--model", "--seed"])
    'here it is --model'
    """
    name = flag.split("=", 1)[0]
    if RENAMED.get(name) in known:
        return f"renamed: use {RENAMED[name]}"
    key = "--" + name.lstrip("-").lower().replace("-", "_")
    ours = [o for o in TRL_NAMES.get(key, ()) if o.split()[0] in known]
    if ours and key not in known:
        return f"here it is {ours[0]}"
    if key in known:        # another case or dash spelling: '--MAX_STEPS', '--Max-Steps'
        return f"did you mean {key}?"
    lacking = next((why for k, why in NOT_HERE.items() if key.startswith(k)), None)
    if lacking:
        return f"{lacking} (see --help for the flags)"
    if key not in known and (owners := other_script(key)):
        return f"a flag of {owners}, which this script does not take (see --help for its flags)"
    score = lambda k: difflib.SequenceMatcher(None, name, k).ratio()
    known = [k for k in known if k != "--help"]      # '--lr' was 'did you mean --help?'
    close = [k for k in sorted(known, key=score, reverse=True)[:2] if score(k) >= 0.6]
    # near-ties only
    close = [k for k in close if score(k) >= score(close[0]) - 0.05] if close else close
    return f"did you mean {' or '.join(close)}?" if close else "see --help for the flags"


def flag(default, help: str, **metadata):
    """A Config field: its default and its --help text, plus HfArgumentParser's `aliases` or
    `choices` if given (`max_steps: int = flag(100, "training steps")`)."""
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def _join_negative_values(argv: list[str]) -> list[str]:
    """'--learning_rate -1e-4' -> '--learning_rate=-1e-4': argparse reads '-1' and '-0.5' as
    values but '-1e-4' or '--stages -8:5' as a flag, and would report a missing value instead
    of the bad one. No flag starts with '-' and a digit or a point, or is '-inf'.

    >>> _join_negative_values(["--beta", "-1e-3", "--seed", "1", "--stages", "-8:5"])
    ['--beta=-1e-3', '--seed', '1', '--stages=-8:5']
    """
    out: list[str] = []
    for a in argv:
        number = a[:1] == "-" and (a[1:2] in (*"0123456789", ".") or a[1:].lower() == "inf")
        if number and out and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def parse(config_class, argv: list[str] | None = None):
    """`config_class` from the command line: exact flag names only; unknown flags raise UsageError.

    `python script.py config.json` (or .yaml) reads the flags from a file instead, checked as
    the command line's are (`file_argv`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = HfArgumentParser(config_class, allow_abbrev=False)

    def error(message: str):     # argparse's: the whole usage (50 lines) above the one that counts
        raise UsageError(f"{message} (--help lists the flags)")

    parser.error = error
    if len(argv) == 1 and argv[0].lower().endswith(CONFIG_FILES):    # run.yaml, RUN.JSON
        argv = file_argv(argv[0], config_class)
    argv = _join_negative_values(argv)
    refuse_repeats(parser, argv)
    cfg, rest = parser.parse_args_into_dataclasses(argv, return_remaining_strings=True)
    if rest:
        known = _flags(parser)
        lines = [f"  {a}: {did_you_mean(a, known)}" for a in rest if a.startswith("-")]
        lines = lines or [f"  {a}: {_stray_value(a)}" for a in rest]
        raise UsageError("unknown flag(s):\n" + "\n".join(lines))
    return check_numbers(expand_home(check_exclusive(cfg)))


# Switches that undo each other, both given: one won without a word (--resume --overwrite
# resumed; sft.py's --eval_only --resume checked the format of --model, resuming nothing).
# (first, second, what the first does, what the second does)
EXCLUSIVE = (("resume", "overwrite", "continues the run", "replaces it"),
             ("eval_only", "resume", "only checks --model's format", "continues a training run"))


def check_exclusive(cfg):
    """Refuses two switches of `EXCLUSIVE` given together, as a UsageError; returns `cfg`."""
    for first, second, does, other in EXCLUSIVE:
        if getattr(cfg, first, False) is True and getattr(cfg, second, False) is True:
            raise UsageError(f"--{first} with --{second}: --{first} {does}, --{second} {other}; "
                             "pass one")
    return cfg


# A config file's endings, in any case (`python grpo.py run.yaml`)
CONFIG_FILES = (".json", ".yaml", ".yml")


def _stray_value(arg: str) -> str:
    """What a value without a flag is, where it is a config file given otherwise than alone (a
    config file beside flags, or of another format, was 'a value without a flag')."""
    if arg.lower().endswith(CONFIG_FILES):
        return ("a config file, which is read only when it is the whole command line (python "
                "SCRIPT.py run.yaml): put the other flags in it, or give every setting as a flag")
    if os.path.isfile(arg):
        return ("a file, but config files are .json, .yaml or .yml ({flag: value} pairs): "
                "write it as one of those, or give the settings as flags")
    return "a value without a flag"


def refuse_repeats(parser, argv: list[str]):
    """A flag given twice is refused, naming it: argparse keeps the last value without a word
    (`--max_steps 3 ... --max_steps=50` trained 50 steps). Its spellings count as one: a dashed
    twin, `--flag=value`, a bool's negative form (no_ before its name). pipeline.py joins its
    `--set`s before this.

    >>> import grpo
    >>> refuse_repeats(HfArgumentParser(grpo.Config), ["--max_steps=3", "--seed", "1",
    ...                                               "--max-steps", "5"])
    Traceback (most recent call last):
    cli.UsageError: --max_steps is given 2 times (--max_steps=3, --max-steps 5); give it once
    """
    seen: dict[str, list[str]] = {}
    for i, a in enumerate(argv):
        action = parser._option_string_actions.get(a.split("=", 1)[0]) if a[:2] == "--" else None
        if action is None or action.dest == "help":
            continue
        value = argv[i + 1] if "=" not in a and i + 1 < len(argv) else "--"
        seen.setdefault(action.dest, []).append(a if value[:2] == "--" or action.nargs == 0
                                                else f"{a} {value}")
    twice = [f"--{dest} is given {len(given)} times ({', '.join(given)}); give it once"
             for dest, given in seen.items() if len(given) > 1]
    if twice:
        raise UsageError("; ".join(twice))


def file_argv(path: str, config_class) -> list[str]:
    """A config file's {flag: value} pairs as the command line they stand for, so that a file's
    values are checked as the flags' are: HfArgumentParser's own reading kept a value's JSON type
    ("max_steps": "abc" was taken, "learning_rate": "1e-5" stayed a string and failed later) and
    a file holding a list was an AttributeError. A null leaves a field at its default of None.

    >>> import grpo, tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write('{"max_steps": 40, "resume": true, "epsilon_high": null}')
    >>> file_argv(f.name, grpo.Config)
    ['--max_steps=40', '--resume=true']
    >>> os.unlink(f.name)
    """
    import yaml

    # a key written twice: both parsers keep the later value without a word, where the command
    # line refuses a flag given twice (`refuse_repeats`); so in every mapping of either format
    def once(pairs):
        keys = [k for k, _ in pairs]
        twice = [f"{k} is given {keys.count(k)} times "
                 f"({', '.join(json.dumps(v, default=str) for n, v in pairs if n == k)})"
                 for i, k in enumerate(keys) if k in keys[:i] and k not in keys[i + 1:]]
        if twice:
            raise UsageError(f"{path}: {'; '.join(twice)}; give each setting once (the file's "
                             "later value replaced the earlier without a word)")
        return dict(pairs)

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            once([(self.construct_object(k, deep=True), self.construct_object(v, deep=True))
                  for k, v in node.value])
            return super().construct_mapping(node, deep)

    try:
        text = open(path).read()
        values = (json.loads(text, object_pairs_hook=once) if path.lower().endswith(".json")
                  else yaml.load(text, Loader=Loader))
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise UsageError(f"{path} cannot be read: {str(e).splitlines()[0]}") from None
    if not isinstance(values, dict):
        raise UsageError(f"{path} holds a {type(values).__name__}: a config file holds flag: "
                         'value pairs, e.g. {"max_steps": 40}')
    defaults = {f.name: f.default for f in dataclasses.fields(config_class)}
    whole = {f.name for f in dataclasses.fields(config_class) if f.type in (int, "int")}
    argv = []
    for name, value in values.items():
        if value is None and defaults.get(name, 0) is None:
            continue
        if not isinstance(value, (str, int, float, bool)):
            raise UsageError(f"{path}: {name}: {value!r} is not a number, a string or true/false")
        # a whole number a file writes as a float (40.0, YAML's 1.0e+3) is that number: argparse
        # refused '--max_steps=40.0'; 40.5 stays refused
        if name in whole and isinstance(value, float) and value.is_integer():
            value = int(value)
        argv.append(f"--{name}={str(value).lower() if isinstance(value, bool) else value}")
    return argv


def expand_home(cfg):
    """A value that starts with '~' is a path in the home folder: the shell expands it in
    `--output_dir ~/runs/x` but not in `--output_dir=~/runs/x` (nor in a config file), where
    a folder named '~' was made in the current one. Returns `cfg`."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, str) and value.startswith("~"):
            setattr(cfg, f.name, os.path.expanduser(value))
    return cfg


# The float flags for which infinity means something: no clipping.
INFINITE_OK = ("max_grad_norm",)


def check_numbers(cfg):
    """No flag means anything by NaN ('--learning_rate nan' passed every `value <= 0` check and
    trained on NaN), so it is refused for every float field; nor by infinity, `INFINITE_OK`
    aside ('--beta inf' or '--weight_decay inf' trained until the first NaN loss, '--target_entropy
    inf' kept the entropy bonus on for good); returns `cfg`."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, float) and math.isnan(value):
            raise ValueError(f"--{f.name} nan: not a number; give a number (--help shows the "
                             "default)")
        if isinstance(value, float) and math.isinf(value) and f.name not in INFINITE_OK:
            raise ValueError(f"--{f.name} {value}: must be finite; give a number (--help shows "
                             "the default)")
    return cfg


def check_positive(cfg, *names: str):
    """Every named field must be > 0 and finite (an infinite learning rate or time cap is none)."""
    for name in names:
        value = getattr(cfg, name)
        if value is not None and not 0 < value < math.inf:
            raise ValueError(f"--{name} {value}: must be positive" + ", and finite" * (value > 0))


def check_fraction(cfg, *names: str):
    """Every named field must lie in [0, 1] (a ratio, a share, a probability)."""
    for name in names:
        value = getattr(cfg, name)
        if not 0 <= value <= 1:
            raise ValueError(f"--{name} {value}: a fraction in [0, 1]")


def check_seed(seed: int):
    """A seed every generator takes: numpy's lie in [0, 2**32) (python's and torch's take any
    integer; evaluate.py ran with --seed -1 where the training scripts refused it, and distill.py
    refused it only after writing the run's config.json)."""
    if not 0 <= seed < 2 ** 32:
        raise ValueError(f"--seed {seed}: must lie in [0, 2**32) (numpy's seeds); use 0 or "
                         "another whole number below 4294967296")


def check_grad_norm(max_grad_norm: float):
    """Gradient clipping to a norm > 0: clipping to 0 zeroes every update, and to a negative norm
    flips its sign (gradient ascent); inf turns clipping off."""
    if not max_grad_norm > 0:
        raise ValueError(f"--max_grad_norm {max_grad_norm}: must be positive (0 zeroes every "
                         "update, a negative norm reverses it); use 1.0, or inf for no clipping")


def check_non_negative(cfg, *names: str, note: str = ""):
    """Every named field must be >= 0 (a negative count, weight or warm-up passes argparse and
    silently means something else); `note` says what 0 means."""
    for name in names:
        value = getattr(cfg, name)
        if value is not None and value < 0:
            raise ValueError(f"--{name} {value}: cannot be negative{note}")


def warmup_note(script: str, warmup: int, steps: int):
    """A warm-up as long as the run or longer: the learning rate only ramps up and never reaches
    --learning_rate (--max_steps 3 with the default warm-up of 5 trained at 20-60% of it)."""
    if warmup >= steps > 0:
        print(f"[{script}] note: --warmup_steps {warmup} is not below the run's {steps} steps: "
              f"the learning rate only ramps up, to {steps / warmup:.0%} of --learning_rate at "
              "the last step; lower --warmup_steps for the full rate", flush=True)


def fewer_note(script: str, flag: str, asked: int, held: int, where: str, then: str):
    """A count the data cannot meet is said, not passed over (--num_train_prompts 100 on a file
    of 3 rows trained on those 3 without a word): `then` says what the run does instead."""
    if 0 < held < asked:
        print(f"[{script}] note: {flag} {asked}, but {where} holds {held} problems: {then}",
              flush=True)


def check_modes_on(cfg, modes):
    """A setting changed from its default for a mode that is off never applies: refused, naming
    the switch (--max_tool_calls 5 without --tools, --target_entropy 0.3 without
    --adaptive_entropy ran as if neither was given, without a word). `modes`: (the switch,
    whether it is on, the names of the settings only it reads) for each mode."""
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    for switch, on, names in modes:
        unused = [f"--{n} {getattr(cfg, n)!r}" if isinstance(getattr(cfg, n), str)
                  else f"--{n} {getattr(cfg, n)}"
                  for n in names if n in defaults and getattr(cfg, n) != defaults[n]]
        if unused and not on(cfg):
            verb, it = ("applies", "it") if len(unused) == 1 else ("apply", "them")
            raise ValueError(f"{', '.join(unused)} never {verb} without {switch}; add {switch}, "
                             f"or drop {it}")


# --task's built-in tasks: their problems carry their own fields, so --prompt_field and
# --answer_field (a file's or a HF dataset's column names) never apply to them
BUILTIN_TASKS = ("math", "humaneval", "instruction", "general")


def task_modes(level_tasks: tuple[str, ...] = ("math",)) -> list:
    """`check_modes_on`'s modes for the settings that apply to one kind of --task: the column
    names to a file or HF dataset; --math_levels to the generated tasks in `level_tasks`,
    --math_families to math's ('--task data.jsonl --math_levels 1' ran on every row without
    a word). A Config without one of these fields skips it."""
    return [("--task FILE (a file or HF dataset)",
             lambda c: c.task not in BUILTIN_TASKS, ("prompt_field", "answer_field")),
            (f"--task {' or '.join(level_tasks)}", lambda c: c.task in level_tasks,
             ("math_levels",)),
            ("--task math", lambda c: c.task == "math", ("math_families", "math_templates"))]


def check_sampling(temperature: float, top_p: float, what: str = "training rollouts"):
    """Sampling that training can learn from: temperature > 0 (log-probs divide the logits by it;
    0 would be greedy and give NaN weights) and top_p in (0, 1]."""
    if not temperature > 0:
        raise ValueError(f"--temperature {temperature}: {what} need a temperature > 0 "
                         "(the log-probs divide the logits by it); use 1.0 (Skywork-OR1, STILL-3) "
                         "or 0.6 (Qwen3)")
    if not 0 < top_p <= 1:
        raise ValueError(f"--top_p {top_p}: must lie in (0, 1]; 1.0 turns nucleus sampling off")


# The run being trained, for the Ctrl-C message: runs.RunDir registers itself here; "stages":
# pipeline.py's, whose --resume also restarts a stage that saved nothing (it has no --overwrite).
ACTIVE = {"run": None, "stages": False}

# The disk, not the command: a write that failed for these was a traceback. (why, the fix)
_ELSEWHERE = "pass an --output_dir (RR_CACHE for the model cache) on "
DISK_ERRORS = {errno.ENOSPC: ("the disk is full", "free some space, or " + _ELSEWHERE
                              + "another disk"),
               errno.EDQUOT: ("the disk quota is used up", "free some space, or " + _ELSEWHERE
                              + "another disk"),
               errno.EROFS: ("the file system is read-only", _ELSEWHERE + "a writable disk")}


# What the system refuses about a path, whatever it names (--output_dir, --model, --task, a
# file a run writes), at start or mid-run: a traceback (a name too long, a link loop, too many
# open files, an I/O error), or a bare '[Errno 13] Permission denied' without the fix. By errno:
# (why, the fix); a PermissionError the code raises itself, with its own words, has none.
_ACCESS = ("permission is denied (not yours to read or write)", "make it yours (chmod u+rw, "
           "chown), or pass paths you can write (--output_dir, RR_CACHE)")
PATH_ERRORS = {errno.ENAMETOOLONG: ("a name in it is longer than the file system allows "
                                    "(255 bytes a name, 4096 a path)", "use a shorter name"),
               errno.ELOOP: ("its symbolic links point round in a loop",
                             "fix the link, or pass the real path"),
               errno.EACCES: _ACCESS, errno.EPERM: _ACCESS,
               errno.EMFILE: ("too many files are open", "raise the limit (ulimit -n 65536)"),
               errno.ENFILE: ("the system has too many files open", "close other programs"),
               errno.EISDIR: ("it is a folder where the run keeps a file",
                              "move the folder away, or pass another --output_dir"),
               errno.EIO: ("the disk reported an input/output error",
                           "check the disk (dmesg), or pass an --output_dir on another disk")}


def check_links(path, flag: str):
    """A path whose symbolic links lead nowhere, named as such with its flag: a link that points
    round in a loop, or to nothing (its target gone, a mount not there), in the path or in a
    folder above it. It was 'no such folder' (--model), 'the folder cannot be made (File
    exists)' (--output_dir), or a HF dataset that could not be loaded (--task)."""
    from pathlib import Path

    path = Path(path)
    try:
        os.stat(path)
        return
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.ELOOP):
            return      # a name too long, no permission: named where the path is used
    for part in reversed((path, *path.parents)):      # the outermost link that fails
        if not part.is_symlink():
            continue
        try:
            os.stat(part)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ValueError(f"{flag} {path}: {part} is a symbolic link that points round "
                                 f"in a loop (-> {os.readlink(part)}); fix the link, or pass "
                                 "the real path") from None
            if e.errno == errno.ENOENT:
                target = os.path.join(part.parent, os.readlink(part))
                raise FileNotFoundError(f"{flag} {path}: {part} is a symbolic link to {target}, "
                                        "which does not exist; fix the link, or pass the real "
                                        "path") from None


def path_error(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in PATH_ERRORS


def path_message(e: OSError) -> str:
    why, fix = PATH_ERRORS[e.errno]
    name = str(e.filename or "a path")
    shown = name if len(name) <= 120 else f"{name[:60]}...{name[-40:]} ({len(name)} characters)"
    return f"cannot use {shown}: {why}; {fix}{kept_note()}"


def disk_error(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in DISK_ERRORS


def disk_message(e: OSError) -> str:
    """A write the disk refused: which file, why, the fix, and what of the run is kept."""
    why, fix = DISK_ERRORS[e.errno]
    return f"cannot write {e.filename or 'a file'}: {why} ({e.strerror}); {fix}{kept_note()}"


def kept_note() -> str:
    """What of the run an error left: its last save, or none yet ('' before it started)."""
    run = ACTIVE["run"]
    if run is not None and run.saved_step:
        return (f"; the last save, step {run.saved_step} in {run.root}, is intact: add --resume "
                "to continue from it")
    return f"; {run.root} holds no save yet" if run is not None else ""


def interrupted_message(argv: list[str]) -> str:
    run = ACTIVE["run"]
    script = os.path.basename(sys.argv[0]) or "script.py"
    resume = " ".join(shlex.quote(a) for a in [sys.executable.rsplit("/", 1)[-1], script, *argv]
                      if a not in ("--overwrite",))
    if run is None:
        return "interrupted before the run started; nothing was written"
    again = resume if "--resume" in argv else f"{resume} --resume"
    if ACTIVE["stages"]:
        saved = f"its last save is step {run.saved_step}" if run.saved_step else "it saved nothing"
        return (f"interrupted at step {run.logged_step} of the stage in {run.root} ({saved}); "
                f"earlier stages are kept. Resume with: {again}")
    if not run.saved_step:
        return (f"interrupted at step {run.logged_step} in {run.root}; nothing was saved yet "
                f"(--save_steps sets how often). Start again with: {resume} --overwrite")
    return (f"interrupted at step {run.logged_step}; the last save is step {run.saved_step} in "
            f"{run.root}. Resume with: {again}")


def tcmalloc_env(argv: list[str], env: dict) -> dict | None:
    """The environment in which to run this command again with tcmalloc preloaded
    (Debian's libtcmalloc-minimal4, which setup.sh installs), or None: already preloaded,
    not installed, `--help`, or RR_TCMALLOC=0.

    Why: glibc's malloc maps every block above 32 MiB afresh and unmaps it on free, so each
    logits chunk, bf16 weight copy and gradient of a training step is faulted in page by page,
    about a million page faults per GRPO update; with vLLM's engine in the process each fault
    costs the kernel 3-5 times as long and the update took 1.65x its time. tcmalloc keeps
    freed memory in its caches (vLLM's CPU guide asks for it too). In `python pipeline.py`
    the SFT stage then took 0.69x its time and the GRPO steps 0.74x (BENCHMARKS.md)."""
    preloaded = env.get("LD_PRELOAD", "")
    if ("tcmalloc" in preloaded or env.get("RR_TCMALLOC") == "0" or "-h" in argv
            or "--help" in argv or not sys.platform.startswith("linux")):
        return None
    lib = ctypes.util.find_library("tcmalloc_minimal")
    return None if lib is None else {**env, "LD_PRELOAD": f"{lib} {preloaded}".strip()}


# The environment's thread counts: libgomp printed a bare 'Invalid value for environment variable
# OMP_NUM_THREADS' and went on with its default, MKL_NUM_THREADS=abc ran on one thread, without
# a word. Each is a whole number > 0, or a comma-separated list of them (OpenMP's nested levels).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def check_environment(env=os.environ):
    """The variables that set threads and devices, refused as a UsageError where they hold what
    their reader skips or misreads. CUDA_VISIBLE_DEVICES: device numbers or GPU-/MIG- UUIDs,
    comma-separated ('' or -1: none); CUDA stops at the first other item, so 'abc' or '0,,1'
    hid the GPUs from there on and the run trained on the CPU without a word. Checked only where
    the machine has an NVIDIA GPU to hide (`nvidia_gpus_present`)."""
    for name in THREAD_VARIABLES:
        value = env.get(name)
        if value is not None and not all(v.strip().isdigit() and int(v) > 0
                                         for v in value.split(",")):
            raise UsageError(f"{name}={value!r} (the environment) is not a whole number of "
                             f"threads > 0; unset it, or set {name}={_cores()} (the cores this "
                             "process may use; --threads N sets torch's alone)")
    devices = env.get("CUDA_VISIBLE_DEVICES")
    if devices and devices.strip() != "-1" and nvidia_gpus_present() and not all(
            d.strip().lstrip("-").isdigit() or d.strip().upper().startswith(("GPU-", "MIG-"))
            for d in devices.split(",")):
        raise UsageError(f"CUDA_VISIBLE_DEVICES={devices!r} (the environment): CUDA reads device "
                         "numbers (0,1) or GPU-/MIG- UUIDs and hides every GPU from the first "
                         "other item on, so the run would go to the CPU; set it to e.g. 0 or "
                         "0,1, or unset it (-1 or '' for no GPU)")


def nvidia_gpus_present() -> bool:
    """Whether this machine has an NVIDIA GPU (the driver lists one), asked without starting
    CUDA. Where it has none, any CUDA_VISIBLE_DEVICES leaves the run on the CPU, as it would be
    anyway: Slurm sets CUDA_VISIBLE_DEVICES=NoDevFiles on nodes without GPUs."""
    listed = "/proc/driver/nvidia/gpus"
    return ((os.path.isdir(listed) and bool(os.listdir(listed)))
            or any(n.startswith("nvidia") and n[6:].isdigit() for n in os.listdir("/dev")))


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _terminated(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(run, parse_fn, argv: list[str] | None = None) -> int:
    """`run(parse_fn(argv))` with errors a person can act on. Returns the exit status."""
    if argv is None and (env := tcmalloc_env(sys.argv[1:], dict(os.environ))):
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)   # never returns
    argv = sys.argv[1:] if argv is None else argv
    earlier, ACTIVE["stages"], cfg = ACTIVE["run"], False, None
    # SIGTERM stops the run as Ctrl-C does: a save under way is finished or removed whole
    # (runs._removed_on_error), and the resume command is printed; it was a silent exit
    main_thread = threading.current_thread() is threading.main_thread()
    default_term = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        try:
            if not {"-h", "--help"} & set(argv):
                check_environment()
            cfg = parse_fn(argv)
            run(cfg)
        finally:        # a run refused at start leaves no empty folder behind
            if ACTIVE["run"] not in (None, earlier):
                ACTIVE["run"].remove_if_unused()
            if main_thread:
                signal.signal(signal.SIGTERM, default_term)
        return 0
    except UsageError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        signalled = "SIGTERM: " if e.args == ("SIGTERM",) else ""
        print(f"\n{signalled}{interrupted_message(argv)}", file=sys.stderr)
        return 130
    except USER_ERRORS as e:
        if os.environ.get("RR_TRACEBACK"):
            raise
        what = path_message(e) if path_error(e) else e
        print(f"error: {what}\n(RR_TRACEBACK=1 shows where it was raised)", file=sys.stderr)
        return 2
    except OSError as e:
        if not (disk_error(e) or path_error(e)) or os.environ.get("RR_TRACEBACK"):
            raise
        print(f"error: {disk_message(e) if disk_error(e) else path_message(e)}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as e:
        if not out_of_memory(e) or os.environ.get("RR_TRACEBACK"):
            raise
        print(f"error: {memory_message(e, cfg)}", file=sys.stderr)
        return 2


# The settings that size what a step holds in memory, the first the fix names (those a script has)
MEMORY_FLAGS = ("micro_batch_size", "per_device_train_batch_size", "chunk_size",
                "max_completion_length", "max_length", "prompts_per_step", "num_generations")


def out_of_memory(e: BaseException) -> bool:
    """Memory the machine could not give, in any of its words: Python's MemoryError, torch's
    OutOfMemoryError ('CUDA out of memory', 'MPS backend out of memory'), its CPU allocator's
    "can't allocate memory" (errno 12, 'Cannot allocate memory'). It was a traceback mid-run."""
    text = str(e).lower()
    return isinstance(e, MemoryError) or any(
        words in text for words in ("out of memory", "can't allocate memory",
                                    "cannot allocate memory"))


def memory_message(e: BaseException, cfg) -> str:
    where = "the GPU" if "cuda" in str(e).lower() or "gpu" in str(e).lower() else "the machine"
    names = {f.name for f in dataclasses.fields(cfg)} if dataclasses.is_dataclass(cfg) else set()
    lower = [f"--{n} {getattr(cfg, n)}" for n in MEMORY_FLAGS if n in names][:3]
    fix = f"lower {', '.join(lower)}" if lower else "use smaller settings"
    return (f"{where} ran out of memory ({first_words(e)}); {fix}, or use a smaller model"
            f"{kept_note()}")


def first_words(e: BaseException) -> str:
    """An error's first line, cut at 100 characters (torch's run on for a paragraph)."""
    line = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return line if len(line) <= 100 else line[:97] + "..."
