"""data.py: synthetic math, HumanEval, local files, prompts."""
import json
import re
from fractions import Fraction

import pytest

import data


def parse_answer(ans: str) -> Fraction:
    m = re.fullmatch(r"(-?)\\frac\{(\d+)\}\{(\d+)\}", ans)
    if m:
        return Fraction(int(m[2]), int(m[3])) * (-1 if m[1] else 1)
    return Fraction(int(ans))


def test_math_tasks_deterministic_by_seed():
    a, b = data.math_tasks(40, "train", seed=1), data.math_tasks(40, "train", seed=1)
    assert a == b
    assert [t["prompt"] for t in data.math_tasks(40, "train", seed=2)] != [t["prompt"] for t in a]


def test_math_train_and_test_never_share_a_problem():
    train = {t["prompt"] for seed in (0, 1) for t in data.math_tasks(300, "train", seed)}
    test = {t["prompt"] for seed in (0, 1) for t in data.math_tasks(150, "test", seed)}
    assert len(test) > 250 and not train & test


def test_math_answers_are_correct():
    tasks = data.math_tasks(400, "train", seed=0) + data.math_tasks(100, "test", seed=0)
    assert {t["family"] for t in tasks} == set(data.MATH_FAMILIES)
    assert {t["level"] for t in tasks} == {1, 2, 3}
    for t in tasks:
        value = eval(t["expr"], {"Fraction": Fraction})
        if t["family"] == "linear":      # check the root by substitution into the equation
            lhs, rhs = t["prompt"].removeprefix("Solve for x: ").rstrip(".").split(" = ")
            x = int(t["answer"])
            f = lambda s: eval(re.sub(r"(\d)x", r"\1*x", s.replace(" ", "")), {"x": x})
            assert f(lhs) == f(rhs), t
        assert parse_answer(t["answer"]) == Fraction(value), t
        assert t["solution"].endswith(f"So the answer is {t['answer']}.")


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="geometry"):
        data.math_tasks(3, families=["geometry"])


def test_humaneval_loads_164_tasks():
    tasks = data.humaneval_tasks()
    assert len(tasks) == 164
    t = tasks[0]
    assert t["id"] == "HumanEval/0" and t["entry_point"] == "has_close_elements"
    assert t["tests"][0]["assert"].endswith("check(has_close_elements)")


def test_gsm8k_answers():
    assert data.gsm8k_answer("She sold 48 + 24 = 72 clips.\n#### 1,234") == "1234"
    assert data.gsm8k_answer(" 72 ") == "72"


def test_local_jsonl_with_column_mapping(tmp_path):
    path = tmp_path / "gsm.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"question": "What is 70+2?", "solution": "70+2=72\n#### 72"},
        {"question": "What is 1000+234?", "solution": "#### 1,234"}]))
    tasks = data.load_tasks(str(path), prompt_field="question", answer_field="solution")
    assert [t["answer"] for t in tasks] == ["72", "1234"]
    assert tasks[0]["prompt"] == "What is 70+2?"


def test_parquet(tmp_path):
    import datasets
    path = tmp_path / "d.parquet"
    datasets.Dataset.from_list([{"prompt": "1+1?", "answer": "2"}]).to_parquet(str(path))
    assert data.load_tasks(str(path))[0]["answer"] == "2"


def test_malformed_rows_name_file_row_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a", "answer": "1"}\n{"prompt": "b"}\n')
    with pytest.raises(data.DataError) as e:
        data.load_tasks(str(path))
    msg = str(e.value)
    assert "bad.jsonl" in msg and "row 1" in msg and "'answer'" in msg and "--answer-field" in msg
    path.write_text('{"question": "a", "answer": "1"}\n')
    with pytest.raises(data.DataError, match=r"row 0 has no field 'prompt'.*--prompt-field"):
        data.load_tasks(str(path))
    path.write_text('{"prompt": "a", "answer": "1"}\nnot json\n')
    with pytest.raises(data.DataError, match="row 1 is not valid JSON"):
        data.load_tasks(str(path))


def test_prompt_asks_for_boxed_answer(tokenizer):
    task = data.math_tasks(1, seed=0)[0]
    text = data.render_prompt(tokenizer, task)
    assert task["prompt"] in text and "\\boxed{}" in text
    assert text.endswith("<|im_start|>assistant\n")
    assert data.build_messages(task, think=False)[-1]["content"].endswith("/no_think")
    code = data.build_messages(data.humaneval_tasks()[0])[-1]["content"]
    assert "```python" in code and "def has_close_elements" in code


def test_prompt_without_chat_template_is_a_named_error(tokenizer):
    import copy
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = None
    with pytest.raises(data.DataError, match="no chat template"):
        data.render_prompt(tok, {"prompt": "x", "answer": "1"})


def test_prompt_styles(tokenizer):
    """default is the prompt as it always was; short asks only for the format (R1-Zero-like);
    long describes the reasoning process and recommends 'wait' and 'alternatively' (STILL-3)."""
    task = data.math_tasks(1, seed=0)[0]
    assert data.build_messages(task) == [{"role": "user", "content": f"{task['prompt']}\n{data.MATH_INSTRUCTION}"}]
    short = data.build_messages(task, style="short")
    assert short == [{"role": "system", "content": data.SHORT_SYSTEM}, {"role": "user", "content": task["prompt"]}]
    assert "<think>" in data.SHORT_SYSTEM and "\\boxed{}" in data.SHORT_SYSTEM and "step" not in data.SHORT_SYSTEM
    long = data.build_messages(task, style="long", think=True)
    assert long[0]["content"] == data.LONG_SYSTEM and long[1]["content"] == task["prompt"] + " /think"
    for phrase in ("analyse the problem", "summarise your findings", '"Wait', '"Alternatively'):
        assert phrase in data.LONG_SYSTEM
    assert data.build_messages(task, system="S", style="long")[0]["content"] == "S"   # an explicit system wins
    code = data.humaneval_tasks()[0]
    assert data.build_messages(code, style="short") == data.build_messages(code)       # code keeps its instruction
    texts = {s: data.render_prompt(tokenizer, task, style=s) for s in data.PROMPT_STYLES}
    assert len(set(texts.values())) == 3 and all(t.endswith("<|im_start|>assistant\n") for t in texts.values())


def test_set_prompt_style_changes_later_prompts_and_refuses_unknown_names(tokenizer):
    task = data.math_tasks(1, seed=0)[0]
    before = data.set_prompt_style("short")
    try:
        assert data.prompt_ids(tokenizer, [task]) == data.prompt_ids(tokenizer, [task], style="short")
        assert data.prompt_ids(tokenizer, [task]) != data.prompt_ids(tokenizer, [task], style="default")
    finally:
        assert data.set_prompt_style(before) == "short"
    with pytest.raises(ValueError, match="--prompt_style 'terse' is not one of default, short, long"):
        data.set_prompt_style("terse")


@pytest.mark.parametrize("script", ["grpo", "sft", "distill", "evaluate"])
def test_every_script_that_renders_prompts_takes_prompt_style(script):
    import dataclasses
    import importlib
    config = importlib.import_module(script).Config
    fields = {f.name: f for f in dataclasses.fields(config)}
    assert fields["prompt_style"].default == "default"
    assert "small model did better with the short prompt" in fields["prompt_style"].metadata["help"]
    assert "shorter" in fields["prompt_style"].metadata["help"]
    import cli
    assert cli.parse(config, ["--prompt_style", "long"]).prompt_style == "long"
    with pytest.raises(SystemExit):
        cli.parse(config, ["--prompt_style", "terse"])
