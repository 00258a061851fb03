"""curriculum.TemplateCurriculum: the draw follows each template's share of groups with signal."""

import collections

import curriculum
import data


def _tasks():
    return data.math_tasks(200, "train", seed=0, levels=(1,))


def test_draw_concentrates_on_templates_whose_groups_teach():
    tasks = _tasks()
    keys = curriculum.template_keys(tasks)
    assert len(set(keys)) >= 10 and all("/" in k for k in keys)   # one unit per sentence template
    c = curriculum.TemplateCurriculum(keys, seed=0)
    active = list(range(len(tasks)))
    teaches = {k for k in keys if k.startswith("arithmetic/")}
    for step in range(40):   # every template's groups: mixed if arithmetic, else all wrong
        drawn = c.draw(active, 8, seed=step)
        c.update([(i, keys[i] in teaches) for i in drawn])
    w = c.weights(active)
    assert min(w[t] for t in teaches) > 3 * max(w[t] for t in w if t not in teaches)
    late = collections.Counter(keys[i] in teaches for i in c.draw(active, 400, seed=99))
    share = len(teaches) / len(w)
    assert late[True] / 400 > 0.8 > share   # a uniform draw over templates would give `share`
    assert late[False] > 0                  # a template without signal is never dropped


def test_prompts_of_a_template_each_come_once_per_pass():
    keys = ["a"] * 5 + ["b"] * 3
    c = curriculum.TemplateCurriculum(keys, seed=3)
    c.update([(5, False)] * 50)             # 'b' never teaches: nearly every draw is 'a'
    drawn = [i for i in c.draw(list(range(8)), 40, seed=0) if keys[i] == "a"]
    for start in range(0, len(drawn) - 4, 5):
        assert sorted(drawn[start:start + 5]) == [0, 1, 2, 3, 4]


def test_state_round_trip_gives_the_same_draws():
    keys = curriculum.template_keys(_tasks())
    a = curriculum.TemplateCurriculum(keys, seed=0)
    a.update([(i, i % 3 == 0) for i in range(60)])
    a.draw(list(range(200)), 16, seed=1)
    b = curriculum.TemplateCurriculum(keys, seed=0, state=a.state())
    assert a.draw(list(range(200)), 16, seed=2) == b.draw(list(range(200)), 16, seed=2)


def test_draw_stays_inside_the_active_prompts():
    keys = curriculum.template_keys(_tasks())
    c = curriculum.TemplateCurriculum(keys, seed=0)
    active = list(range(0, 200, 7))
    assert set(c.draw(active, 64, seed=0)) <= set(active)
