"""What `grpo.py` does before its loop: check the flags, load the task splits and the reward
(with its judge or reward model), check the tasks against the rewards and the model's context,
start the rollout engine, restore a run being resumed.
Every check stops at start with a message that names the flag and the fix.

`cfg` is a `grpo.Config` throughout.
"""
from __future__ import annotations

import functools

import cli
import curriculum
import data
import dataset_tasks
import distributed
import engines
import models
import rewards
import tools
import training


def check_config(cfg):
    """Flags that would make the run meaningless or fail later, refused at start."""
    cli.check_sampling(cfg.temperature, cfg.top_p)
    if cfg.tools and cfg.thinking_budget:
        raise ValueError("--tools with --thinking_budget: the budget's second pass would train on "
                         "the tool outputs; use one")
    cli.check_positive(cfg, "num_train_prompts", "prompts_per_step", "max_completion_length",
                       "max_steps", "num_iterations", "micro_batch_size", "save_steps",
                       "eval_every", "eval_samples", "learning_rate", "epsilon")
    # a negative KL or entropy weight pushes the other way
    cli.check_non_negative(cfg, "beta", "beta_min", "entropy_coef", "entropy_coef_min",
                           "entropy_coef_delta", "weight_decay", note=" (0 turns the term off)")
    # a negative count or length passed silently: -1 pass-rate samples sampled n=-1, a negative
    # budget or rejection length meant 'off' or rejected every wrong answer
    cli.check_non_negative(cfg, "pass_rate_samples", "oversample_rounds", "thinking_budget",
                           "length_rejection_tokens", "max_steps_without_signal", "log_samples",
                           "time_budget_minutes", note=" (0: off)")
    # -1 tool calls ran none; an entropy (>= 0) is never below a negative target: bonus never on
    cli.check_non_negative(cfg, "max_tool_calls", "target_entropy")
    cli.check_grad_norm(cfg.max_grad_norm)
    cli.check_seed(cfg.seed)
    models.bf16_note(cfg.bf16, "grpo")
    for low, high in (("pass_rate_min", "pass_rate_max"), ("entropy_coef_min", "entropy_coef_max")):
        if getattr(cfg, low) > getattr(cfg, high):
            raise ValueError(f"--{low} {getattr(cfg, low)} is above --{high} "
                             f"{getattr(cfg, high)}: the range would be empty; swap them")
    if not 0 <= cfg.pass_rate_min <= cfg.pass_rate_max <= 1:
        raise ValueError(f"--pass_rate_min {cfg.pass_rate_min} and --pass_rate_max "
                         f"{cfg.pass_rate_max}: pass rates lie in [0, 1] (Skywork-OR1: 0.01, 0.99)")
    if cfg.kl_anneal == "cosine":
        cli.check_positive(cfg, "kl_anneal_steps")
    if cfg.eval_temperature < 0 or cfg.mini_batch_size < 0 or cfg.eval_problems < 0:
        raise ValueError("--eval_temperature (0: greedy), --mini_batch_size (0: the whole batch) "
                         "and --eval_problems (0: no evaluation) cannot be negative")
    world = distributed.world_size()
    if cfg.prompts_per_step % world or (world > 1 and cfg.filter_zero_variance):
        raise ValueError(f"torchrun with {world} ranks: --prompts_per_step must be a multiple of "
                         "it, and pass --filter_zero_variance false (every rank must train on as "
                         "many groups)")
    if cfg.num_generations < 2:
        raise ValueError(f"--num_generations {cfg.num_generations}: GRPO needs a group of at least "
                         "2 completions per prompt for its baseline; use --num_generations 8 "
                         "(Skywork-OR1: 16)")
    if cfg.epsilon >= 1:    # ratios are > 0: a lower bound 1 - ε <= 0 never clips
        raise ValueError(f"--epsilon {cfg.epsilon}: the ratio's lower clip bound 1 - ε would be "
                         "<= 0, below every ratio, so the update of a negative advantage is never "
                         "clipped; use ε < 1 (PPO, GRPO: 0.2; raise the upper bound alone with "
                         "--epsilon_high)")
    if cfg.epsilon_high is not None and cfg.epsilon_high < cfg.epsilon:
        raise ValueError(f"--epsilon_high {cfg.epsilon_high} is below --epsilon {cfg.epsilon}: "
                         "clip-higher needs ε_high >= ε_low (DAPO: --epsilon 0.2 "
                         "--epsilon_high 0.28)")
    for name, val, ok in (("--scale_rewards", cfg.scale_rewards, ("group", "batch", "none")),
                          ("--loss_type", cfg.loss_type, ("grpo", "dapo", "dr_grpo")),
                          ("--kl_anneal", cfg.kl_anneal, ("none", "cosine")),
                          ("--filter_groups_by", cfg.filter_groups_by, ("reward", "acc"))):
        if val not in ok:
            raise ValueError(f"{name} {val!r} is not one of {', '.join(ok)}")
    # unknown reward names raise, listing the valid ones
    names = {n for n, _ in rewards.parse_reward_spec(cfg.rewards)}
    # a weight of 0 ('math:1,format:0', or 'math:0' alone: no signal) counted nothing, unsaid
    zero = [n for n, w in rewards.parse_reward_spec(cfg.rewards) if w == 0]
    if zero:
        raise ValueError(f"--rewards {cfg.rewards!r}: {', '.join(zero)} weighted 0 never "
                         "counts; drop it, or give it a weight (e.g. format:0.2)")
    for name, flag in rewards.MODEL_REWARDS.items():
        if name in names and not getattr(cfg, flag.lstrip("-")):
            raise ValueError(f"--rewards {cfg.rewards!r} uses {name!r}, which needs a model: "
                             f"pass {flag} PATH")
    # a truncated completion's reward is --truncated_reward only when it is scored, not masked
    # (grpo.truncation_rewards), and not under a reward that scores it itself
    ignored_by = ("--mask_truncated_completions leaves truncated completions out of the loss"
                  if cfg.mask_truncated_completions else
                  "--score_truncated false keeps their computed reward"
                  if not cfg.score_truncated else
                  f"--rewards {cfg.rewards!r} scores them itself"
                  if names & rewards.SCORES_UNFINISHED else "")
    if cfg.truncated_reward != 0.0 and ignored_by:
        raise ValueError(f"--truncated_reward {cfg.truncated_reward} never applies: {ignored_by}; "
                         "drop one of the two (DAPO masks truncated completions, Skywork-OR1 "
                         "scores them 0)")
    best = best_finished_reward(rewards.parse_reward_spec(cfg.rewards))
    # given, not the default 0: a run of penalties alone (--rewards repetition) keeps its 0
    if cfg.truncated_reward and not ignored_by and best is not None \
            and cfg.truncated_reward >= best:
        raise ValueError(f"--truncated_reward {cfg.truncated_reward} is not below the best reward "
                         f"a finished completion can get under --rewards {cfg.rewards!r} "
                         f"({best:g}): running to the length limit would pay as well as the best "
                         "answer, and the policy learns to ramble; use 0 (Skywork-OR1) or a "
                         "negative value")
    if cfg.loss_type == "dr_grpo" and cfg.scale_rewards != "none":
        print(f"[grpo] note: --loss_type dr_grpo with --scale_rewards {cfg.scale_rewards} is only "
              "Dr. GRPO's constant normaliser; Dr. GRPO also drops the std scaling: add "
              "--scale_rewards none")
    batch = cfg.prompts_per_step * cfg.num_generations
    if cfg.mini_batch_size and batch % cfg.mini_batch_size:
        raise ValueError(f"--mini_batch_size {cfg.mini_batch_size} does not divide the rollout "
                         f"batch {batch} (= --prompts_per_step x --num_generations)")
    stages = training.parse_stages(cfg.stages, cfg.max_completion_length, cfg.max_steps)
    data.parse_levels(cfg.math_levels)
    data.parse_families(cfg.math_families)
    check_conflicts(cfg, max(t for t, _ in stages))


# (lowest, highest) score of each reward (rewards.REWARDS, the judge's P(yes)); reward_model's
# scalar head has no bound. A reward added without its range here leaves the bound unknown.
REWARD_RANGES = {"math": (0, 1), "math_partial": (0, 1), "still3_outcome": (-2, 1),
                 "format": (0, 1), "format_strict": (0, 1), "length_aware": (-1, 1),
                 "repetition": (-1, 0), "phi4": (-9 / 13, 8 / 13), "overlong": (-1, 0),
                 "action": (0, 1), "length": (0, 1), "code": (0, 1), "code_all": (0, 1),
                 "instruction": (0, 1), "judge": (0, 1)}


def best_finished_reward(pairs: list[tuple[str, float]]) -> float | None:
    """The most a completion can score under (name, weight) pairs, each reward at the end of its
    range that its weight's sign favours; None where a reward has no known bound."""
    if any(name not in REWARD_RANGES for name, _ in pairs):
        return None
    return sum(max(w * lo, w * hi) for name, w in pairs for lo, hi in [REWARD_RANGES[name]])


def check_conflicts(cfg, longest: int):
    """Flags each valid alone that together would be ignored without a word: a thinking budget
    no response reaches, a KL schedule with no reference model (--beta 0 loads none), k samples
    of a greedy evaluation (identical, so avg@k was avg@1)."""
    if cfg.thinking_budget >= longest:
        raise ValueError(f"--thinking_budget {cfg.thinking_budget} is not below the longest "
                         f"response ({longest} tokens, --max_completion_length/--stages): the "
                         "response ends before the budget, which never applies; give a smaller "
                         "budget, or 0 for none")
    if cfg.kl_anneal == "cosine" and not (cfg.beta > 0 and cfg.beta_min <= cfg.beta):
        raise ValueError(f"--kl_anneal cosine anneals β from --beta {cfg.beta} down to --beta_min "
                         f"{cfg.beta_min}: it needs --beta > 0 (with --beta 0 no reference model "
                         "is loaded and no KL applies) and --beta_min <= --beta (STILL-3: --beta "
                         "0.001 --beta_min 0)")
    if cfg.eval_samples > 1 and cfg.eval_temperature == 0:
        raise ValueError(f"--eval_samples {cfg.eval_samples} with --eval_temperature 0: greedy "
                         "samples are all the same answer; sample with --eval_temperature 0.6 "
                         "(Skywork-OR1), or use --eval_samples 1")
    cli.check_modes_on(cfg, [*MODES, *cli.task_modes(("math", "general"))])


# grpo's modes: (the switch, whether it is on, the settings only it reads)
MODES = (("--tools", lambda c: c.tools, ("max_tool_calls",)),
         ("--kl_anneal cosine", lambda c: c.kl_anneal != "none", ("beta_min", "kl_anneal_steps")),
         ("--adaptive_entropy", lambda c: c.adaptive_entropy,
          ("target_entropy", "entropy_coef_delta", "entropy_coef_min", "entropy_coef_max")),
         ("--pass_rate_samples K", lambda c: c.pass_rate_samples > 0,
          ("pass_rate_min", "pass_rate_max", "refilter_each_stage")),
         # a reward's model without the reward in --rewards: never loaded, never asked
         *((f"{name!r} in --rewards",
            lambda c, name=name: name in {n for n, _ in rewards.parse_reward_spec(c.rewards)},
            (flag.lstrip("-"),)) for name, flag in rewards.MODEL_REWARDS.items()))


def load_task_splits(cfg) -> tuple[list[dict], list[dict]]:
    """(train tasks, test tasks) of --task; no test split (or --eval_problems 0): no evaluation."""
    levels = data.parse_levels(cfg.math_levels)
    test_n = cfg.eval_problems
    if cfg.task in ("instruction", "general"):
        make = (data.instruction_tasks if cfg.task == "instruction"
                else functools.partial(data.general_tasks, levels=levels))
        return (make(cfg.num_train_prompts, "train", cfg.seed),
                make(test_n, "test", cfg.seed) if test_n else [])
    if cfg.task == "math":
        families = data.parse_families(cfg.math_families)
        train = data.math_tasks(cfg.num_train_prompts, "train", cfg.seed, families, levels)
        test = data.math_tasks(test_n, "test", cfg.seed, families, levels) if test_n else []
        return train, test
    answer_field = None if cfg.answer_field.lower() in ("", "none") else cfg.answer_field
    kw = dict(prompt_field=cfg.prompt_field, answer_field=answer_field, seed=cfg.seed)
    if dataset_tasks.is_file_task(cfg.task):    # its test rows, else rows left out of training
        train, test, why = dataset_tasks.held_out_tasks(cfg.task, cfg.num_train_prompts, test_n,
                                                        **kw)
        if why:
            print(f"[grpo] no periodic evaluation: {why}")
            test_n = 0
    else:
        train = dataset_tasks.load_tasks(cfg.task, "train", cfg.num_train_prompts, **kw)
        try:
            test = dataset_tasks.load_tasks(cfg.task, "test", test_n, **kw) if test_n else []
        except Exception:  # a dataset without a test split: no periodic evaluation
            print(f"[grpo] no periodic evaluation: --task {cfg.task} has no 'test' split")
            test = []
    cli.fewer_note("grpo", "--num_train_prompts", cfg.num_train_prompts, len(train),
                   f"--task {cfg.task}", f"each step draws from those {len(train)}")
    held = "the held-out rows" if dataset_tasks.is_file_task(cfg.task) else "the test split"
    cli.fewer_note("grpo", "--eval_problems", test_n, len(test), f"{held} of --task {cfg.task}",
                   f"each evaluation scores those {len(test)}")
    return train, test


def make_reward(cfg) -> rewards.combined_reward:
    """--rewards as one weighted reward; "judge" and "reward_model" load --judge_model and
    --reward_model (Qwen3 general RL: a judge with the reference answer, a reward model without)."""
    names = {n for n, _ in rewards.parse_reward_spec(cfg.rewards)}
    built = {}
    if "judge" in names:
        judge, judge_tok = models.load_policy(cfg.judge_model)
        built["judge"] = rewards.JudgeReward(judge.eval(), judge_tok)
    if "reward_model" in names:
        rm, rm_tok = models.load_reward_model(cfg.reward_model)
        built["reward_model"] = rewards.ScalarRewardModel(rm.eval(), rm_tok)
    return rewards.combined_reward(rewards.parse_reward_spec(cfg.rewards), models=built)


# what a task holds -> a reward that reads it
READ_BY = {"answer": "math", "tests": "code", "constraints": "instruction"}


def check_tasks(cfg, tasks: list[dict], prompts: list[list[int]], model):
    """Every reward must apply to some task (math needs an answer), and the longest prompt plus
    the longest response must fit the model's positions."""
    names = {n for n, _ in rewards.parse_reward_spec(cfg.rewards)}
    for name in sorted(names):
        if not any(rewards.applies(name, t) for t in tasks):
            # code tasks under the default 'math': name the reward that reads what they have
            have = [k for k, reward in READ_BY.items() if any(t.get(k) for t in tasks)]
            fix = (f"they have {have[0]!r}: grade them with --rewards {READ_BY[have[0]]}" if have
                   else "map the column with --answer_field NAME, or use rewards that need no "
                   "answer")
            raise ValueError(f"--rewards {cfg.rewards!r}: {name!r} reads each task's "
                             f"{rewards.NEEDS[name]!r}, but the {len(tasks)} tasks of --task "
                             f"{cfg.task!r} have none (first: {tasks[0].get('id', 0)}); {fix}.")
    # a task no reward reads (a code row under the default 'math') scores 0 in every rollout:
    # its groups teach nothing, and half a mixed file went by without a word
    ungraded = [t for t in tasks if not any(rewards.applies(n, t) for n in names)]
    if ungraded:
        have = [k for k in READ_BY if any(t.get(k) for t in ungraded)]
        fix = (f"they have {have[0]!r}: add {READ_BY[have[0]]} to --rewards, e.g. --rewards "
               f"{cfg.rewards},{READ_BY[have[0]]}" if have else "drop them from the file")
        print(f"[grpo] note: {len(ungraded)} of the {len(tasks)} tasks of --task {cfg.task!r} "
              f"have nothing --rewards {cfg.rewards!r} reads (first: "
              f"{ungraded[0].get('id', '?')}), so they are never graded and their rollouts "
              f"teach nothing; {fix}", flush=True)
    stages = training.parse_stages(cfg.stages, cfg.max_completion_length, cfg.max_steps)
    cue = 64 if cfg.thinking_budget else 0    # room for the thinking budget's inserted cue
    need = max(len(p) for p in prompts) + max(t for t, _ in stages) + cue
    models.check_context(need, "--max_completion_length/--stages", model)


def rollout_engine(cfg, model, tok, prompts: list[list[int]], stages: list[tuple[int, int]]):
    """The engine of the rollouts and evaluations (`engines.make_engine`; HF ignores the
    length): the longest prompt and context stage fit, with 64 tokens for a thinking-budget cue;
    its KV cache holds a step's rollouts (and up to 64 evaluation prompts) at once.
    With --tools a python block the policy writes runs in the sandbox (`tools.ToolEngine`)."""
    longest = max(len(p) for p in prompts) + max(t for t, _ in stages) + 64
    at_once = max(cfg.prompts_per_step * cfg.num_generations, min(cfg.eval_problems, 64))
    engine = engines.make_engine(cfg.engine, model, tok, max_model_len=longest, sequences=at_once)
    return tools.ToolEngine(engine, max_calls=cfg.max_tool_calls) if cfg.tools else engine


def restore(state: dict, run, optimizer, total_steps: int):
    """--resume from state.pt: the optimizer's state is loaded and metrics rows past the step
    dropped. -> (step, position in the prompt stream, active prompts, solved prompts, the
    entropy controller's fields)."""
    run.load_optimizer(optimizer, state["optimizer"])
    run.truncate_metrics(state["step"])
    print(f"[grpo] resumed {run.root} at step {state['step']}/{total_steps}")
    solved = set(state.get("solved", []))
    return state["step"], state["position"], state["active"], solved, state["controller"]


def make_curriculum(cfg, tasks: list[dict], state: dict | None):
    """--curriculum templates: a `curriculum.TemplateCurriculum` over the train tasks, with its
    counts and cursors from state.pt on --resume; otherwise None (the seeded prompt stream)."""
    if cfg.curriculum != "templates":
        return None
    saved = (state or {}).get("curriculum")
    return curriculum.TemplateCurriculum(curriculum.template_keys(tasks), cfg.seed, saved)
