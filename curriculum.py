"""Which prompts GRPO trains on: the offline pass-rate filter (Skywork-OR1, Qwen3), the prompts
dropped at a new context stage (Skywork-OR1), and a curriculum that draws templates in
proportion to how often their groups teach.

GRPO learns only from a group whose samples differ (0 < correct < G, DAPO eq. 11): a prompt the
policy always solves, or never does, costs G rollouts and gives a zero advantage to each. On the
demo after SFT, about half the groups are all wrong, and most of those come from a few templates
the model cannot yet do at all (fraction arithmetic, say), while others (shopping change, shares)
are mixed most of the time.

Skywork-OR1 (§3.1) and Qwen3 (§4.2) filter prompts offline by the starting policy's pass rate,
which costs k rollouts per prompt before training. `TemplateCurriculum` tracks the same thing
online, from the rollouts GRPO samples anyway, per template (problems written from one sentence
template share their difficulty), and draws each step's prompts template by template with weight

    w_t = (mixed_t + 1) / (groups_t + 2)

the Laplace estimate of the share of template t's groups that carried signal (a template not yet
seen: 1/2). A template that is all wrong or all right decays towards zero but is never dropped,
so a skill that becomes learnable comes back. Within a template, prompts come in a seeded order
and each is used once per pass. This online, per-template form is this project's choice, not a
paper's. `grpo.py --curriculum templates` turns it on; `pass_rate_filter` and
`next_stage_prompts` serve `--pass_rate_samples`, `--drop_solved_each_stage` and
`--refilter_each_stage`.
"""
from __future__ import annotations

import random

import distributed
import engines
import rewards
import training


class TemplateCurriculum:
    """Per-template signal counts and prompt cursors; `state()` / `TemplateCurriculum(.., state)`
    round-trip them for --resume.

    >>> c = TemplateCurriculum(["add", "add", "fractions", "fractions"], seed=0)
    >>> c.update([(0, True), (1, True), (2, False), (3, False), (2, False)])
    >>> {t: round(w, 2) for t, w in c.weights([0, 1, 2, 3]).items()}    # (2+1)/(2+2), (0+1)/(3+2)
    {'add': 0.75, 'fractions': 0.2}
    >>> c.draw([0, 1, 2, 3], 4, seed=1)     # task indices: 'add' 3 times (its prompts in turn)
    [0, 2, 1, 1]
    """

    def __init__(self, keys: list[str], seed: int, state: dict | None = None):
        self.keys, self.seed = keys, seed                    # keys[i]: task i's template
        state = state or {}
        self.mixed: dict[str, int] = dict(state.get("mixed", {}))
        self.groups: dict[str, int] = dict(state.get("groups", {}))
        self.cursor: dict[str, int] = dict(state.get("cursor", {}))

    def weights(self, active: list[int]) -> dict[str, float]:
        """w_t for every template with a prompt in `active`, in order of first appearance."""
        templates = dict.fromkeys(self.keys[i] for i in active)
        return {t: (self.mixed.get(t, 0) + 1) / (self.groups.get(t, 0) + 2) for t in templates}

    def draw(self, active: list[int], n: int, seed: int) -> list[int]:
        """n task indices of `active`: a template drawn by weight (with replacement), then that
        template's next prompt in its seeded order. The same counts and seed give the same draw,
        on every rank."""
        w = self.weights(active)
        members: dict[str, list[int]] = {t: [] for t in w}
        for i in active:
            members[self.keys[i]].append(i)
        out = []
        for t in random.Random(seed).choices(list(w), weights=list(w.values()), k=n):
            pos = self.cursor.get(t, 0)
            out.append(members[t][training.stream_indices(len(members[t]), self.seed, pos, 1)[0]])
            self.cursor[t] = pos + 1
        return out

    def update(self, groups: list[tuple[int, bool]]):
        """Count each sampled group, (task index, it carried signal), summed over ranks."""
        # every template's two counts, so that each rank reduces the same keys
        counts = {(table, t): 0.0 for t in set(self.keys) for table in ("groups", "mixed")}
        for i, signal in groups:
            counts[("groups", self.keys[i])] += 1
            counts[("mixed", self.keys[i])] += int(signal)
        for (table, t), v in distributed.all_reduce_mean(counts).items():
            if v:
                total = getattr(self, table)
                total[t] = total.get(t, 0) + round(v * distributed.world_size())

    def state(self) -> dict:
        return {"mixed": self.mixed, "groups": self.groups, "cursor": self.cursor}


def pass_rate_filter(engine, tasks, prompts, cfg, max_tokens: int) -> list[int]:
    """Offline filter (Skywork-OR1 §3.1, Qwen3 §4.2): keep prompts whose pass rate over k =
    --pass_rate_samples samples of the current policy lies in [--pass_rate_min, --pass_rate_max]
    (Skywork-OR1 keeps 1..15 of 16: neither trivial nor hopeless). None kept is an error."""
    k, lo, hi = cfg.pass_rate_samples, cfg.pass_rate_min, cfg.pass_rate_max
    with engines.progress(f"pass-rate filter, {k} samples x {len(prompts)} prompts"):
        params = engines.SamplingParams(n=k, temperature=cfg.temperature,
                                        max_new_tokens=max_tokens, seed=cfg.seed)
        outs = engine.generate(prompts, params)
    passed = [0] * len(tasks)
    for c in outs:
        ok = (not c.truncated) and rewards.task_solved(c.text, tasks[c.prompt_index])
        passed[c.prompt_index] += ok
    keep = [i for i, p in enumerate(passed) if lo <= p / k <= hi]
    if not keep:
        raise ValueError(f"the pass-rate filter [{lo}, {hi}] kept no prompt of {len(tasks)}: widen "
                         "the range, raise --pass_rate_samples or use easier tasks")
    print(f"[grpo] pass-rate filter kept {len(keep)}/{len(tasks)} prompts")
    return keep


def next_stage_prompts(active: list[int], solved: set[int], cfg, refilter,
                       max_tokens: int) -> list[int]:
    """The prompts of a new context stage. --drop_solved_each_stage: drop those the policy solved
    in every rollout of some group during the stage that ended (Skywork-OR1 §3.1: prompts answered
    correctly in all samples of the previous stage carry no signal). --refilter_each_stage: run the
    pass-rate filter [min, max] again with the current policy (this project's variant)."""
    if cfg.drop_solved_each_stage:
        left = [i for i in active if i not in solved]
        print(f"[grpo] new stage: dropped {len(active) - len(left)} prompts solved in all rollouts")
        active = left or active
    if cfg.refilter_each_stage and cfg.pass_rate_samples:
        active = refilter(max_tokens)
    return active


def template_keys(tasks: list[dict]) -> list[str]:
    """The curriculum's unit for each task: its template id, else its family, else its kind."""
    return [t.get("template") or t.get("family") or t.get("kind", "all") for t in tasks]
