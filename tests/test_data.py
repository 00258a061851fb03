"""data.py and dataset_tasks.py: synthetic math, HumanEval, other datasets, prompts."""

import gzip
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

import data
import dataset_tasks


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


def exact(expr: str) -> Fraction:
    """An integer expression's value in exact arithmetic: `//` read as `/`, so a floor that
    drops a remainder shows (10% of 76 is 7.6, not 7)."""
    return eval(
        re.sub(r"(?<![\w.])(\d+)", r"Fraction(\1)", expr.replace("//", "/")), {"Fraction": Fraction}
    )


def computations(text: str) -> list[tuple[str, Fraction, Fraction]]:
    """Every 'a op b ... = v' in a worked solution: (the left side, its exact value, v)."""
    found = []
    for m in re.finditer(r"=\s*(-?\d+(?:/\d+)?)(?![\w/])", text):
        lhs = re.search(r"[\d()+\-*/ ]*$", text[: m.start()]).group().strip()
        while lhs and (lhs.count("(") != lhs.count(")") or lhs[0] in "+*/)"):
            lhs = lhs[1:].strip()
        if re.search(r"\d\)?\s*[-+*/]\s*\(?-?\d", lhs):
            found.append((lhs, exact(lhs), Fraction(m[1])))
    return found


def all_templates_tasks() -> list[dict]:
    return (
        data.math_tasks(600, "train", seed=0)
        + data.math_tasks(300, "test", seed=0, templates="all")
        + data.math_tasks(200, "test", seed=3, levels=(1,), templates="all")
    )


def test_math_answers_are_correct():
    """Each task's `expr` is its answer exactly (also in exact arithmetic: no floor drops a
    remainder) and an int where the answer is one (tools.py prints it)."""
    tasks = all_templates_tasks()
    assert {t["family"] for t in tasks} == set(data.MATH_FAMILIES)
    assert {t["level"] for t in tasks} == {1, 2, 3}
    for t in tasks:
        value = eval(t["expr"], {"Fraction": Fraction})
        assert parse_answer(t["answer"]) == Fraction(value) == exact(t["expr"]), t
        assert isinstance(value, int) or "\\frac" in t["answer"] or t["family"] == "fractions", t
        assert t["solution"].endswith(f"So the answer is {t['answer']}.")


def test_linear_roots_satisfy_their_equations():
    for t in all_templates_tasks():
        if t["template"] in ("linear/solve", "linear/sides-swapped"):
            eq = next(p for p in re.findall(r"[-\dx+= ]+", t["prompt"]) if "=" in p).strip()
            lhs, rhs = eq.split(" = ")
            f = lambda s: eval(
                re.sub(r"(\d)x", r"\1*x", s.replace(" ", "")), {"x": int(t["answer"])}
            )
            assert f(lhs) == f(rhs), t


def test_every_template_works_its_answer_out_step_by_step():
    """Every template, at every level: each 'a op b = v' in the worked solution is true, and the
    last one's value is the answer (SFT learns from these steps)."""
    tasks = all_templates_tasks()
    templates = {t.id for ts in data.MATH_FAMILIES.values() for t in ts}
    assert {t["template"] for t in tasks} == templates
    assert {(t["template"], t["level"]) for t in tasks} == {
        (x, lv) for x in templates for lv in (1, 2, 3)
    }
    for t in tasks:
        steps = computations(t["solution"])
        assert steps, t
        for lhs, value, written in steps:
            assert value == written, (lhs, value, written, t["solution"])
        assert steps[-1][1] == parse_answer(t["answer"]), t


def test_several_templates_per_family_and_some_held_out():
    for family, templates in data.MATH_FAMILIES.items():
        seen = [t for t in templates if not t.held_out]
        held = [t for t in templates if t.held_out]
        assert len(seen) >= 3 and len(held) >= 2, family
    kinds = {t.name for ts in data.MATH_FAMILIES.values() for t in ts}
    assert {"add", "take-away", "groups", "share", "compare", "change", "fill-and-give"} <= kinds
    assert data.held_out_templates() == [
        t.id for ts in data.MATH_FAMILIES.values() for t in ts if t.held_out
    ]


def test_held_out_templates_never_reach_training():
    """Train and held-out templates are disjoint; no train list of any seed, family or level holds
    a held-out template or a held-out-template problem; asking for them in the train split is
    an error that says why."""
    held = set(data.held_out_templates())
    train = [t for seed in (0, 1) for t in data.math_tasks(1500, "train", seed)]
    train += data.math_tasks(400, "train", 2, families=["arithmetic", "percent"], levels=(1,))
    assert not held & {t["template"] for t in train} and not any(t["held_out"] for t in train)
    test_seen = data.math_tasks(300, "test", seed=0)
    assert not held & {t["template"] for t in test_seen}
    test_held = [
        t for seed in (0, 1234) for t in data.math_tasks(200, "test", seed, templates="held_out")
    ]
    assert {t["template"] for t in test_held} == held and all(t["held_out"] for t in test_held)
    assert not {t["prompt"] for t in test_held} & {t["prompt"] for t in train}
    with pytest.raises(ValueError, match="never trained on"):
        data.math_tasks(4, "train", templates="held_out")
    with pytest.raises(ValueError, match="templates must be one of seen, held_out, all"):
        data.math_tasks(4, "test", templates="unseen")


def test_held_out_sets_are_deterministic_and_prefix_stable():
    a = data.math_tasks(128, "test", 1234, levels=(1,), templates="held_out")
    assert a == data.math_tasks(128, "test", 1234, levels=(1,), templates="held_out")
    assert [
        t["prompt"] for t in data.math_tasks(32, "test", 1234, levels=(1,), templates="held_out")
    ] == [t["prompt"] for t in a][:32]
    per_family = [sum(t["family"] == f for t in a) for f in data.MATH_FAMILIES]
    assert min(per_family) >= 24, per_family  # every family, about a quarter
    assert a != data.math_tasks(128, "test", 99, levels=(1,), templates="held_out")


def test_wordings_vary_within_a_template():
    """Names, items and sentence order vary: no two of a template's problems read alike once the
    numbers are masked, for most of them."""
    tasks = data.math_tasks(1200, "train", seed=0)
    for tid in (
        "arithmetic/add",
        "arithmetic/compare",
        "arithmetic/share",
        "linear/find",
        "percent/part-of-group",
    ):
        shapes = {re.sub(r"\d+", "N", t["prompt"]) for t in tasks if t["template"] == tid}
        assert len(shapes) >= 10, tid
    assert any(
        t["prompt"].startswith("How many") for t in tasks if t["template"] == "arithmetic/add"
    )


def test_every_training_template_has_several_wordings():
    """Each template the model trains on puts its problems in at least three wordings (verbs,
    question forms, sentence order) once numbers, names and items are masked: a skill learned
    on one sentence would not carry to problems phrased in other words."""
    tasks = data.math_tasks(2000, "train", seed=0)
    masked = re.compile("|".join([r"\d+"] + data.NAMES + data.ITEMS))
    shapes = {}
    for t in tasks:
        shapes.setdefault(t["template"], set()).add(masked.sub("W", t["prompt"]))
    seen = [tpl.id for tpls in data.MATH_FAMILIES.values() for tpl in tpls if not tpl.held_out]
    assert sorted(shapes) == sorted(seen)
    assert all(len(shapes[tid]) >= 3 for tid in seen), {k: len(v) for k, v in shapes.items()}


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
    assert dataset_tasks.gsm8k_answer("She sold 48 + 24 = 72 clips.\n#### 1,234") == "1234"
    assert dataset_tasks.gsm8k_answer(" 72 ") == "72"


def test_file_gold_answers_keep_their_commas_and_are_reduced_like_a_gold(tmp_path):
    # every comma of a file's answer was dropped: "(1, 2)" became "(1 2)", "\\{1,2\\}" the
    # set {12}, "3, 500" the number 3500, so right answers earned 0 and wrong ones 1
    from rewards import math_reward

    golds = [("(1, 2)", "(1, 2)"), ("\\{1,2\\}", "\\{1,2\\}"), ("3, 500", "3, 500"),
             ("1,000", "1000"), ("So $x=(1,2)$, hence \\boxed{(1,2)}.", "(1,2)"),
             ("#### 1,234", "1234"), ("The answer is 12.", "12"), (72, "72"), (0.5, "0.5"),
             (True, "True"), ([2, "3"], "2, 3"),
             # a float computed in binary was its 17 digits, which no answer of 0.3 equals
             (0.1 + 0.2, "0.3"), (1e-7, "1e-07"),
             # ASDiv's unit in parentheses: '9 (apples)', which no answer equals
             ("1,200 (apples)", "1200 apples"), ("3 (mod 4)", "3 (mod 4)")]
    path = tmp_path / "golds.jsonl"
    path.write_text("".join(json.dumps({"prompt": "q", "answer": g}) + "\n" for g, _ in golds))
    tasks = dataset_tasks.load_tasks(str(path))
    assert [t["answer"] for t in tasks] == [a for _, a in golds]
    right = ["\\boxed{(1,2)}", "\\boxed{\\{2, 1\\}}", "\\boxed{3, 500}", "\\boxed{1000}",
             "\\boxed{(1, 2)}", "\\boxed{1234}", "\\boxed{12}", "\\boxed{72}", "\\boxed{\\frac12}",
             "\\boxed{Yes}", "\\boxed{3, 2}", "\\boxed{0.3}", "\\boxed{10^{-7}}", "\\boxed{1200}",
             "\\boxed{3 (mod 4)}"]
    wrong = ["\\boxed{(12)}", "\\boxed{\\{12\\}}", "\\boxed{3500}", "\\boxed{100}",
             "\\boxed{(12)}", "\\boxed{123}", "\\boxed{13}", "\\boxed{27}", "\\boxed{0.05}",
             "\\boxed{No}", "\\boxed{23}", "\\boxed{0.31}", "\\boxed{10^{-6}}", "\\boxed{120}",
             "\\boxed{4}"]
    assert [math_reward(c, t) for c, t in zip(right, tasks)] == [1.0] * len(tasks)
    assert [math_reward(c, t) for c, t in zip(wrong, tasks)] == [0.0] * len(tasks)


def test_a_parquet_decimal_answer_is_its_digits(tmp_path):
    # a decimal column (a database export) was refused: 'is "1.50", a Decimal'
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    golds = [decimal.Decimal("1.50"), decimal.Decimal("1E+2"), decimal.Decimal("-0.25")]
    pq.write_table(pa.table({"prompt": ["a", "b", "c"], "answer": pa.array(
        golds, pa.decimal128(6, 2))}), str(tmp_path / "decimal.parquet"))
    tasks = dataset_tasks.load_tasks(str(tmp_path / "decimal.parquet"))
    assert [t["answer"] for t in tasks] == ["1.50", "100.00", "-0.25"]
    with pytest.raises(ValueError, match="is NaN, not a finite number"):
        dataset_tasks.gold_answer(decimal.Decimal("NaN"))


@pytest.mark.parametrize("answer,needle", [
    (None, "row 1's 'answer' is null"), ("  ", "row 1's 'answer' is empty"),
    ([], "is an empty list"), ({"value": 5}, 'is {"value": 5}, a dict'),
    ([[1, 2], [3, 4]], "a list of lists"), (float("nan"), "not a finite number"),
    ([{"text": "5"}], "a list of lists or objects (write such an answer as one string: \"(1, 2), "
     "(3, 4)\"). Give each row its answer as a string or a number (or name a field inside it: "
     "--answer-field answer.text)")])
def test_a_file_answer_that_is_no_answer_is_named(tmp_path, answer, needle):
    # null and "" were "has no field 'answer'" of a row that had one; "  " loaded as an empty
    # gold, an object or a nested list as its Python repr
    path = tmp_path / "golds.jsonl"
    path.write_text(json.dumps({"prompt": "a", "answer": "1"}) + "\n"
                    + json.dumps({"prompt": "b", "answer": answer}) + "\n")
    with pytest.raises(data.DataError, match=re.escape(needle) + ".*or drop the row"):
        dataset_tasks.load_tasks(str(path))


PROOF = ("We argue by induction on $n$. For $n = 1$ both sides equal $1$. Assume the claim for "
         "$n$; adding the next odd number to both sides gives it for $n + 1$, as required.")


def test_worked_solutions_with_no_final_answer_are_skipped_or_refused(tmp_path, capsys):
    # NuminaMath's proofs: the whole paragraph became the gold, which no reply can equal
    path = tmp_path / "numina.jsonl"
    rows = [{"problem": "Prove it.", "solution": PROOF},
            {"problem": "1 + 1?", "solution": "So $1 + 1 = \\boxed{2}$."},
            {"problem": "Roots?", "solution": "x = 3 or x = 4"},
            # NuminaMath-1.5's answer column for a proof, and for an answer it did not find
            {"problem": "Prove it.", "solution": "proof"}, {"problem": "?", "solution": "notfound"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="problem", answer_field="solution")
    assert [t["answer"] for t in tasks] == ["2", "x = 3 or x = 4"]
    assert "3 of 5 rows (row 0, ...) have no final answer as their 'solution': a worked " \
        "solution" in capsys.readouterr().out
    path.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(data.DataError, match="numina.jsonl: 1 of 1 rows .* nothing can grade a "
                       "reply against them; map the column of final answers .*, or load them "
                       "as prompts only, ungraded, with --answer-field none"):
        dataset_tasks.load_tasks(str(path), prompt_field="problem", answer_field="solution")
    # which keeps them all, a proof a prompt as any other (a teacher's, distill's)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = dataset_tasks.load_tasks(str(path), prompt_field="problem", answer_field=None)
    assert [t["prompt"] for t in plain] == [r["problem"] for r in rows]


def test_fields_inside_an_object_are_named_by_a_dotted_path(tmp_path):
    # {"answer": {"value": 5}} could not be loaded at all: "is {...}, a dict", with no way to map
    # the field inside it (nor a question kept in verl's extra_info)
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps({"extra_info": {"question": "2 + 3?"}, "answer": {"value": 5}})
                    + "\n" + json.dumps({"extra_info": '{"question": "1 + 1?"}',
                                         "answer": {"value": "#### 2"}}) + "\n")
    with pytest.raises(data.DataError, match=r"'answer' is \{\"value\": 5\}, a dict\. .*or name "
                       "a field inside it: --answer-field answer.value"):
        dataset_tasks.load_tasks(str(path), prompt_field="extra_info.question")
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="extra_info.question",
                            answer_field="answer.value")
    assert [(t["prompt"], t["answer"]) for t in tasks] == [("2 + 3?", "5"), ("1 + 1?", "2")]


def test_local_jsonl_with_column_mapping(tmp_path):
    path = tmp_path / "gsm.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"question": "What is 70+2?", "solution": "70+2=72\n#### 72"},
                {"question": "What is 1000+234?", "solution": "#### 1,234"},
            ]
        )
    )
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field="solution")
    assert [t["answer"] for t in tasks] == ["72", "1234"]
    assert tasks[0]["prompt"] == "What is 70+2?"


def test_parquet(tmp_path):
    import subprocess
    import sys

    import datasets

    path = tmp_path / "d.parquet"
    datasets.Dataset.from_list([{"prompt": "1+1?", "answer": "2", "meta": {"tags": ["a"]}}]
                               ).to_parquet(str(path))
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["answer"] == "2" and task["meta"] == {"tags": ["a"]}
    # read by pyarrow: datasets took 1 s to import and wrote a copy of the file to its cache
    code = ("import sys, dataset_tasks; dataset_tasks.load_tasks(sys.argv[1]); "
            "print('datasets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         cwd=Path(dataset_tasks.__file__).parent, check=True)
    assert out.stdout.strip() == "False"


def test_a_parquet_file_mixing_code_and_math_rows_keeps_each_kind(tmp_path):
    # a table gives every row every column: the math row's null 'tests' made it a code task with
    # tests None, its answer left unreduced ('70+2=72\n#### 72' for the gold '72')
    import datasets

    path = tmp_path / "mixed.parquet"
    rows = [{"prompt": "70+2?", "answer": "70+2=72\n#### 72", "tests": None},
            {"prompt": "p", "answer": None, "tests": [{"input": "", "output": "1"}]}]
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    math_row, code_row = dataset_tasks.load_tasks(str(path))
    assert math_row["answer"] == "72" and math_row.get("tests") is None
    assert code_row["tests"] == [{"input": "", "output": "1"}]


def test_malformed_rows_name_file_row_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a", "answer": "1"}\n{"prompt": "b"}\n')
    with pytest.raises(data.DataError) as e:
        dataset_tasks.load_tasks(str(path))
    msg = str(e.value)
    assert "bad.jsonl" in msg and "row 1" in msg and "'answer'" in msg and "--answer-field" in msg
    path.write_text('{"question": "a", "answer": "1"}\n')
    with pytest.raises(data.DataError, match=r"row 0 has no field 'prompt'.*--prompt-field"):
        dataset_tasks.load_tasks(str(path))
    path.write_text('{"prompt": "a", "answer": "1"}\nnot json\n')
    with pytest.raises(data.DataError, match="line 2 is not valid JSON"):
        dataset_tasks.load_tasks(str(path))


@pytest.mark.parametrize("tests,needle", [
    ("f(1) == 2", "'tests' is \"f(1) == 2\", not a list of tests"),   # asserts are read
    ('[{"assert": "assert f(1) == 2"', "'tests' is not valid JSON"),
    ([{"fn_name": "f", "args": "ab", "expected": 1}], "'tests': test 0 (call-based): 'args' is a "),
    ([{"input": "1"}], "'tests': test 0 (stdin/stdout): no 'output'")])
def test_a_file_code_task_with_malformed_tests_is_named_at_load(tmp_path, tests, needle):
    # was a ValueError from sandbox.run_many at the first reward of a training run, naming a job
    # of the batch, not the row (or, before run_tests checked them, a wrong reward)
    path = tmp_path / "code.jsonl"
    path.write_text(json.dumps({"prompt": "p", "tests": [{"input": "", "output": "1"}]}) + "\n"
                    + json.dumps({"prompt": "q", "tests": tests}) + "\n")
    with pytest.raises(data.DataError, match=re.escape(f"row 1's {needle}")):
        dataset_tasks.load_tasks(str(path))


ROWS = [{"prompt": "q1", "answer": "1,000"}, {"prompt": "q2", "answer": "(1, 2)"}]
JSONL = "".join(json.dumps(r) + "\n" for r in ROWS)


@pytest.mark.parametrize("name,content", [
    ("bom.jsonl", b"\xef\xbb\xbf" + JSONL.encode()),                  # Excel, Notepad
    ("crlf.jsonl", ("\n" + JSONL.replace("\n", "\r\n\r\n")).encode()),
    ("bom.json", b"\xef\xbb\xbf" + json.dumps(ROWS).encode()),
    ("lines.json", JSONL.encode()),                                  # datasets' Dataset.to_json
    ("columns.json", json.dumps({"prompt": ["q1", "q2"], "answer": ["1,000", "(1, 2)"]}).encode()),
    ("pandas.json", json.dumps({"prompt": {"0": "q1", "1": "q2"},    # DataFrame.to_json
                                "answer": {"0": "1,000", "1": "(1, 2)"}}).encode()),
    # rows by their id (pandas' orient="index", a benchmark keyed by problem id) were read as
    # columns ("no field 'prompt' (fields: ['0', '1'])"); orient="split" as rows of lists
    ("index.json", json.dumps({"0": ROWS[0], "1": ROWS[1]}).encode()),
    ("by-id.json", json.dumps({"TheoremQA/1": ROWS[0], "TheoremQA/2": ROWS[1]}).encode()),
    ("split-orient.json", json.dumps({"columns": ["prompt", "answer"], "index": [0, 1], "data": [
        ["q1", "1,000"], ["q2", "(1, 2)"]]}).encode()),
    ("rows.csv", b'prompt,answer\r\nq1,"1,000"\r\nq2,"(1, 2)"\r\n'),
    ("rows.tsv", "\ufeffprompt\tanswer\nq1\t1,000\nq2\t(1, 2)\n".encode()),
    ("UPPER.JSONL", JSONL.encode()),
    # JSON Lines under its other names: "unsupported file type '.ndjson'"
    ("rows.ndjson", JSONL.encode()), ("rows.jsonlines.gz", gzip.compress(JSONL.encode())),
    # each of these was a DataError: '.gz' unsupported; a semicolon CSV (Excel where the comma
    # is the decimal mark) "has more cells"; rows under another key than "data", or under the
    # split's name: "row 0 has no field 'prompt' (fields: ['rows'])"
    ("rows.jsonl.gz", gzip.compress(JSONL.encode())),
    ("rows.json.gz", gzip.compress(json.dumps(ROWS).encode())),
    ("rows.csv.gz", gzip.compress(b'prompt,answer\nq1,"1,000"\nq2,"(1, 2)"\n')),
    ("semicolons.csv", b"prompt;answer\nq1;1,000\nq2;(1, 2)\n"),
    ("rows.json", json.dumps({"version": 2, "rows": ROWS}).encode()),
    ("examples.json", json.dumps({"examples": ROWS}).encode()),
    # BIG-bench's task file: its rows beside lists of metadata ("a .json file holds a list...")
    ("task.json", json.dumps({"name": "t", "keywords": ["math", "arithmetic"],
                              "metrics": ["exact_str_match"], "examples": ROWS}).encode()),
    ("viewer.json", json.dumps({"features": [{"name": "prompt"}, {"name": "answer"}],
                                "rows": [{"row_idx": i, "row": r, "truncated_cells": []}
                                         for i, r in enumerate(ROWS)]}).encode()),
    ("data-columns.json", json.dumps({"data": {"prompt": ["q1", "q2"],
                                               "answer": ["1,000", "(1, 2)"]}}).encode()),
    ("splits.json", json.dumps({"train": ROWS, "test": [{"prompt": "t", "answer": "0"}]}).encode()),
    # the splits under "data": 'a .json file holds a list of rows, or {"data": [rows]}'
    ("data-splits.json", json.dumps({"version": 1, "data": {
        "train": ROWS, "test": [{"prompt": "t", "answer": "0"}]}}).encode()),
    # a split's key in capitals: 'holds rows under Train, Test, and none is the split train'
    ("Splits.json", json.dumps({"Test": [{"prompt": "t", "answer": "0"}], "Train": ROWS}).encode()),
    # a .jsonl that is one JSON document, or objects pretty-printed one after another (jq), was
    # "row 0 is not valid JSON"; a header padded with spaces had the column ' answer'
    ("array.jsonl", json.dumps(ROWS).encode()),
    ("pretty.jsonl", json.dumps(ROWS, indent=2).encode()),
    ("jq.jsonl", "\n".join(json.dumps(r, indent=2) for r in ROWS).encode()),
    ("pretty-data.jsonl", json.dumps({"data": ROWS}, indent=2).encode()),
    ("padded.csv", b'prompt , answer\nq1,"1,000"\nq2,"(1, 2)"\n'),
    # a value over 128 KiB: 'field larger than field limit', blamed on an open quote
    ("long.csv", f'prompt,answer,note\nq1,"1,000",{"x" * 200_000}\nq2,"(1, 2)",y\n'.encode()),
    # lines ended by CR alone (Excel for the old Mac): csv's Error, a traceback
    ("mac.csv", b'prompt,answer\rq1,"1,000"\rq2,"(1, 2)"\r'),
    ("mac.tsv", b"prompt\tanswer\rq1\t1,000\rq2\t(1, 2)\r"),
    # UTF-16 with its byte order mark: "line 1 is not UTF-8 text ... iconv -f latin1"
    ("excel.tsv", "\ufeffprompt\tanswer\nq1\t1,000\nq2\t(1, 2)\n".encode("utf-16-le")),
    ("powershell.jsonl", "\ufeff".encode("utf-16-be") + JSONL.encode("utf-16-be")),
])
def test_file_forms_that_other_tools_write(tmp_path, name, content):
    # each was a DataError (a BOM: "not valid JSON"; .csv: "unsupported", though the error for
    # a missing --task listed .csv) or, for a .json of one row a line, "Extra data"
    path = tmp_path / name
    path.write_bytes(content)
    tasks = dataset_tasks.load_tasks(str(path))
    assert [(t["prompt"], t["answer"]) for t in tasks] == [("q1", "1000"), ("q2", "(1, 2)")]


@pytest.mark.parametrize("name,content,needle", [
    ("latin1.jsonl", '{"prompt": "caf\xe9", "answer": "1"}\n'.encode("latin-1"),
     "line 1 is not UTF-8 text (byte b'\\xe9' at offset 15); save the file as UTF-8"),
    ("cells.csv", b"prompt,answer\nq1,1,000\n", "row 0 has more cells than the header line"),
    ("cells.tsv", b"prompt\tanswer\nq1\n", "row 0 has fewer cells than the header line"),
    ("broken.parquet", b"PAR1 not really", "not a readable parquet file"),
    ("ragged.json", b'{"prompt": ["q1", "q2"], "answer": ["1"]}', "columns of equal length"),
    ("rows.txt", b"q1", "use .jsonl, .json, .csv, .tsv, .parquet, .arrow or .feather"),
    # a compressed file or a spreadsheet was 'unsupported file type', with no way out named
    ("rows.jsonl.zst", b"\x28\xb5\x2f\xfd", "rows.jsonl.zst: a .zst archive or compressed "
     "file, which is not read as it is (gzip is); decompress it (zstd -d FILE)"),
    ("rows.zip", b"PK\x03\x04", "rows.zip: a .zip archive or compressed file"),
    ("rows.xlsx", b"PK\x03\x04", "rows.xlsx: a spreadsheet (.xlsx), which is not read; save its "
     "sheet as .csv"),
    ("broken.arrow", b"ARROW1 not really", "broken.arrow: not a readable Arrow file"),
    ("broken.jsonl.gz", b"not gzip", "broken.jsonl.gz: not a readable gzip file"),
    # a sheet saved with its formulas: the gold '=1+1', which no reply (\\boxed{2}) equals
    ("formulas.csv", b"prompt,answer\nq1,1\nq2,=1+1\n", "formulas.csv: row 1's 'answer' is "
     "'=1+1', a spreadsheet formula, not its value (a sheet saved with its formulas: export its "
     "values)"),
    ("formulas.tsv", b"prompt\tanswer\nq1\t=SUM(B2:B3)\n", "'=SUM(B2:B3)', a spreadsheet formula"),
    # a quote opened in a value that goes on: it lost its quotes ('Hi she said.') or, left open,
    # ran on through the next rows
    ("quotes.csv", b'prompt,answer\n"Hi" she said. How many?,5\n', "quotes.csv: line 2: ',' "
     "expected after '\"' (a quote opened in a value that goes on after it); quote the whole "
     "value, its quotes doubled"),
    ("open-quote.csv", b'prompt,answer\n"Hi she said,5\nq2,6\n', "unexpected end of data"),
    # a CR inside a value that is not quoted: a .tsv recursed until RecursionError, a .csv
    # blamed an open quote
    ("cr.tsv", b"prompt\tanswer\nq1\rmore\t1\n", "cr.tsv: line 2: new-line character seen in "
     "unquoted field"),
    ("cr.csv", b"prompt,answer\nq1\rmore,1\n", "(a line break, CR, inside a value that is not "
     "quoted); quote the value, or end every line with LF or CRLF"),
    # a header naming a column twice lost one of them; a file with no header line lost its first
    # row to it ("the file holds no rows", or "no field 'prompt' (fields: ['What is 2+2?', ...])")
    ("twice.csv", b"prompt,answer,answer\nq1,1,2\n", "twice.csv: the header line names the "
     "column 'answer' twice; rename one"),
    ("no-header.csv", b"What is 2+2?,3,4,5,6,B\n", "no-header.csv: the file holds no rows, only "
     "the header line (a .csv's first line names its columns"),
    # JSON5 / JSONC's trailing commas and comments: the parser's "Expecting property name"
    ("commas.jsonl", b'{"prompt": "q1", "answer": "1"}\n{"prompt": "q2", "answer": "2",}\n',
     "commas.jsonl: line 2 is not valid JSON (a trailing comma before '}' at column 32: JSON "
     "has none, drop it); a .jsonl file holds one JSON object a line"),
    ("comments.jsonl", b'// exported rows\n{"prompt": "q1", "answer": "1"}\n',
     "line 1 is not valid JSON (a comment at column 1: JSON has none, drop it)"),
    ("commas.json", b'[\n  {"prompt": "q1", "answer": "1"},\n]\n',
     "commas.json: not valid JSON (a trailing comma before ']' at line 3 column 1: JSON has "
     "none, drop it)"),
    ("splits.json", json.dumps({"dev": ROWS, "eval": ROWS}).encode(),
     "holds rows under 'dev', 'eval', and none is the split 'train'"),
    ("test-only.json", json.dumps({"test": ROWS}).encode(),      # were trained on
     "holds rows under 'test', and none is the split 'train'"),
])
def test_unreadable_files_are_named_with_the_fix(tmp_path, name, content, needle):
    # latin-1 and a broken parquet file were tracebacks (UnicodeDecodeError, ArrowInvalid)
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(data.DataError, match=re.escape(needle)):
        dataset_tasks.load_tasks(str(path))


def test_arrow_files_are_read(tmp_path):
    # Arrow's files were 'unsupported file type': pandas' to_feather (the random-access form)
    # and a shard of datasets' save_to_disk (the stream form)
    import datasets
    import pyarrow.feather

    table = datasets.Dataset.from_list(ROWS)
    table.save_to_disk(str(tmp_path / "saved"))
    pyarrow.feather.write_feather(table.data.table, str(tmp_path / "rows.feather"))
    for path in (tmp_path / "rows.feather", *(tmp_path / "saved").glob("*.arrow")):
        tasks = dataset_tasks.load_tasks(str(path))
        assert [(t["prompt"], t["answer"]) for t in tasks] == [("q1", "1000"), ("q2", "(1, 2)")]


def test_a_raw_tsv_keeps_the_quotes_in_its_values(tmp_path):
    # '"Hi" she said.' was read as 'Hi she said.' (a quoted CSV value's quotes)
    path = tmp_path / "raw.tsv"
    path.write_text('prompt\tanswer\n"Hi" she said. How many?\t5\n5" of rain?\t6\n')
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(path))] == [
        '"Hi" she said. How many?', '5" of rain?']
    path.write_text('prompt\tanswer\n"""Hi"" she said."\t5\n"a\tb"\t6\n')   # quoted: Excel's
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(path))] == [
        '"Hi" she said.', "a\tb"]


def test_dataset_folders_load_the_split_asked_for(tmp_path):
    # a folder of datasets' save_to_disk, or of data files named by split as on the hub, was
    # "no such file; pass a .jsonl, .json, .csv or .parquet file"
    import datasets

    train = datasets.Dataset.from_list(ROWS)
    test = datasets.Dataset.from_list([{"prompt": "t", "answer": "0"}])
    train.save_to_disk(str(tmp_path / "one"))
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(tmp_path / "both"))
    (tmp_path / "files" / "data").mkdir(parents=True)
    train.to_parquet(str(tmp_path / "files" / "data" / "train-00000-of-00001.parquet"))
    test.to_parquet(str(tmp_path / "files" / "data" / "test-00000-of-00001.parquet"))
    for name in ("one", "both", "files"):
        tasks = dataset_tasks.load_tasks(str(tmp_path / name))
        assert [(t["prompt"], t["answer"]) for t in tasks] == [("q1", "1000"), ("q2", "(1, 2)")]
        # grpo and distill look for a test split where there are splits, and not in one Dataset
        assert dataset_tasks.is_file_task(str(tmp_path / name)) == (name == "one")
    for name in ("both", "files"):
        tasks = dataset_tasks.load_tasks(str(tmp_path / name), "test")
        assert [t["prompt"] for t in tasks] == ["t"]
    for name in ("both", "files"):      # was "Pass a local file or one of those names"
        with pytest.raises(data.DataError, match=f"{name}' has no split 'dev' .*Unknown split.*"
                           "; ask for one of its splits"):
            dataset_tasks.load_tasks(str(tmp_path / name), "dev")
    (tmp_path / "empty").mkdir()
    with pytest.raises(data.DataError, match="empty: a folder that could not be loaded as a "
                       "dataset .*; pass a folder of save_to_disk"):
        dataset_tasks.load_tasks(str(tmp_path / "empty"))


def test_a_jsonl_of_one_pretty_printed_row_is_that_row(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(ROWS[0], indent=2))      # was "row 0 is not valid JSON"
    tasks = dataset_tasks.load_tasks(str(path))
    assert [(t["prompt"], t["answer"]) for t in tasks] == [("q1", "1000")]


@pytest.mark.parametrize("row", [
    {"prompt": "Add.", "tests": [{"assert": "assert add(1, 2) == 3"}]},
    {"prompt": [{"role": "user", "content": "1 + 1?"}], "answer": "2"},
    {"messages": [{"role": "user", "content": "1 + 1?"}, {"role": "assistant", "content": "2"}]},
    {"question": "Pick one.", "choices": [{"label": "A", "text": "1"}], "answer": "A"},
])
def test_a_pretty_printed_row_with_a_list_of_objects_is_one_row(tmp_path, row):
    # its one list of objects (tests, turns, options) was read as the file's rows
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(row, indent=2))
    assert dataset_tasks.rows_from_file(path) == [row]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(row, indent=2))
    with pytest.raises(data.DataError, match=r"holds one row .*; put it in a list"):
        dataset_tasks.rows_from_file(path)


def test_ids_that_name_several_rows_are_made_unique(tmp_path):
    # two problems with the dataset's id 7 were both '7' in samples and results
    path = tmp_path / "dup.jsonl"
    path.write_text("".join(json.dumps({"id": k, **r}) + "\n" for k, r in zip([7, 7, 8], ROWS * 2)))
    assert [t["id"] for t in dataset_tasks.load_tasks(str(path))] == ["7", "7#2", "8"]
    # an id made unique is no other row's own id: '7#2' was two problems again
    path.write_text("".join(json.dumps({"id": k, "prompt": f"q{j}", "answer": "1"}) + "\n"
                            for j, k in enumerate(["7", "7", "7#2", "7", "7#2"])))
    ids = [t["id"] for t in dataset_tasks.load_tasks(str(path))]
    assert ids == ["7", "7#3", "7#2", "7#4", "7#2#2"]


def test_a_file_that_repeats_its_rows_reads_each_once(tmp_path, capsys):
    # verl's dapo-math-17k.parquet holds each prompt 100 times, its aime-2024.parquet each
    # problem 32 times: a sample of 4 training prompts held copies, and AIME scored 30 as 960
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "aime-2024.parquet"
    row = {"data_source": "aime", "prompt": [{"role": "user", "content": "Find m + n."}],
           "reward_model": {"style": "rule", "ground_truth": "204"}, "extra_info": {"index": 0}}
    pq.write_table(pa.Table.from_pylist([row] * 32 + [{**row, "reward_model": {
        "style": "rule", "ground_truth": "33"}}] * 32), path)
    tasks = dataset_tasks.load_tasks(str(path))
    assert [t["answer"] for t in tasks] == ["204", "33"]      # the same prompt, another answer
    assert "62 of 64 rows repeat an earlier row's prompt and answer" in capsys.readouterr().out
    assert len(dataset_tasks.load_tasks(str(path), n=2, seed=1)) == 2
    # rows with ids of their own that differ are two problems; prompts only: all rows
    path = tmp_path / "ids.jsonl"
    path.write_text("".join(json.dumps({"id": k, **ROWS[0]}) + "\n" for k in (1, 2, 2)))
    assert [t["id"] for t in dataset_tasks.load_tasks(str(path))] == ["1", "2"]
    assert len(dataset_tasks.load_tasks(str(path), answer_field=None)) == 3


def test_a_file_whose_rows_name_their_split_gives_the_split_asked_for(tmp_path):
    # both splits were loaded for either: training on the test rows, then scoring on them
    path = tmp_path / "both.jsonl"
    path.write_text("".join(json.dumps({**r, "split": s}) + "\n"
                            for r, s in zip(ROWS, ["train", "test"])))
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(path), "train")] == ["q1"]
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(path), "test")] == ["q2"]
    with pytest.raises(data.DataError, match="both.jsonl: no row is of split 'validation' "
                       r"\(its 'split' column holds test, train\); ask for one of them"):
        dataset_tasks.load_tasks(str(path), "validation")
    path.write_text("".join(json.dumps({**r, "split": s}) + "\n"      # in capitals: refused
                            for r, s in zip(ROWS, ["TRAIN", "Test"])))
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(path), "test")] == ["q2"]
    path.write_text(json.dumps({**ROWS[0], "split": "train"}) + "\n" + json.dumps(ROWS[1]) + "\n")
    # not every row names one: all rows
    assert len(dataset_tasks.load_tasks(str(path), "test")) == 2
    path.write_text(json.dumps({**ROWS[0], "split": ["train"]}) + "\n")   # was a TypeError
    assert len(dataset_tasks.load_tasks(str(path), "test")) == 1


def test_a_count_of_a_file_is_a_seeded_sample_not_its_first_rows(tmp_path):
    # MMLU's file is sorted by subject: its first rows were one subject's
    path = tmp_path / "sorted.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"{s} {i}?", "answer": i, "subject": s}) + "\n"
                            for s in ("algebra", "biology", "chemistry") for i in range(20)))
    picked = dataset_tasks.load_tasks(str(path), n=15, seed=1)
    assert len(picked) == 15 and len({t["subject"] for t in picked}) == 3
    assert picked == dataset_tasks.load_tasks(str(path), n=15, seed=1)      # reproducible
    assert picked != dataset_tasks.load_tasks(str(path), n=15, seed=2)
    assert len(dataset_tasks.load_tasks(str(path), n=60, seed=1)) == 60     # the whole file
    ids = [t["id"] for t in picked]
    assert ids == sorted(ids, key=lambda x: int(x.rsplit("-", 1)[1]))      # the file's order


def test_mmlu_rows_show_their_choices_and_are_graded_on_the_letter(tmp_path):
    # MMLU's question / choices / answer-index: the prompt lacked the options and the gold was
    # the index ("1"), so "\\boxed{B}" earned 0 and "\\boxed{1}" 1
    from rewards import math_reward

    path = tmp_path / "mmlu.jsonl"
    path.write_text(json.dumps({"question": "2 + 2?", "choices": ["3", "4", "5", "6"],
                                "answer": 1}) + "\n"
                    + json.dumps({"question": "Odd?", "choices": ["2", "3"], "answer": "B"}) + "\n")
    mmlu, letter = dataset_tasks.load_tasks(str(path), prompt_field="question")
    assert mmlu["prompt"] == ("2 + 2?\n\n(A) 3\n(B) 4\n(C) 5\n(D) 6\n\n"
                              + dataset_tasks.CHOICE_INSTRUCTION)
    assert mmlu["answer"] == "B"
    assert math_reward("\\boxed{B}", mmlu) == 1.0 and math_reward("\\boxed{1}", mmlu) == 0.0
    assert letter["prompt"].startswith("Odd?\n\n(A) 2\n(B) 3\n") and letter["answer"] == "B"


MC_ROWS = [   # each dataset's own schema, as it ships
    ("arc", {"question": "Which is a liquid?", "answerKey": "B",
             "choices": {"text": ["ice", "water", "steam"], "label": ["A", "B", "C"]}}),
    ("arc-numbered", {"question": "Which is a liquid?", "answerKey": "2",
                      "choices": {"text": ["ice", "water", "steam"], "label": ["1", "2", "3"]}}),
    ("csqa", {"question": "Which is a liquid?", "question_concept": "liquid", "answerKey": "B",
              "choices": {"label": ["A", "B", "C"], "text": ["ice", "water", "steam"]}}),
    ("aqua", {"question": "Which is a liquid?", "options": ["A)ice", "B)water", "C)steam"],
              "rationale": "Water flows. Answer: B", "correct": "B"}),
    ("mmlu-text", {"question": "Which is a liquid?", "choices": ["ice", "water", "steam"],
                   "answer": "water"}),
    ("mmlu-pro", {"question_id": 70, "question": "Which is a liquid?", "answer": "B",
                  "options": ["ice", "water", "steam"], "answer_index": 1, "cot_content": ""}),
    ("hellaswag", {"ind": 4, "ctx": "Which is a liquid?", "endings": ["ice", "water", "steam"],
                   "label": "1"}),
    ("openbookqa", {"id": "7-980", "question_stem": "Which is a liquid?", "answerKey": "B",
                    "choices": {"text": ["ice", "water", "steam"], "label": ["A", "B", "C"]}}),
    # each of these was read as no multiple choice: the options were not shown, and the gold was
    # "(B)" or "B. water" as written, or "B" for options the model could not see
    ("letter-in-parens", {"question": "Which is a liquid?", "choices": ["ice", "water", "steam"],
                          "answer": "(B)"}),
    ("letter-and-text", {"question": "Which is a liquid?", "options": ["ice", "water", "steam"],
                         "answer": "B. water"}),
    ("choices-by-label", {"question": "Which is a liquid?", "answer": "B",
                          "choices": {"A": "ice", "B": "water", "C": "steam"}}),
    ("letter-columns", {"question": "Which is a liquid?", "A": "ice", "B": "water", "C": "steam",
                        "answer": "B"}),                          # C-Eval, CMMLU, AGIEval
    # the options as one string (MathQA's; '(A) ...' too) were not shown, the gold 'b' graded
    ("mathqa", {"Problem": "Which is a liquid?", "Rationale": "water flows",
                "options": "a ) ice , b ) water , c ) steam", "correct": "b"}),
    ("options-string", {"question": "Which is a liquid?", "answer": "B",
                        "options": "(A) ice (B) water (C) steam"}),
    # one a line after 'A.' or 'A:' (a spreadsheet export's): not shown, 'B' graded as text
    ("options-lines", {"question": "Which is a liquid?", "answer": "B",
                       "options": "A. ice\nB. water\nC. steam"}),
    ("options-colons", {"question": "Which is a liquid?", "answer": "B",
                        "options": "A: ice\r\nB: water\r\nC: steam"}),
    # MedQA's options by label were not shown: graded on a letter the model could not see
    ("medqa", {"question": "Which is a liquid?", "answer": "water", "answer_idx": "B",
               "options": {"A": "ice", "B": "water", "C": "steam"}}),
    # an index written as a float (pandas' int column with a NaN in it): 1.0 named no option,
    # so the options were not shown and '1' was graded as free text
    ("index-float", {"question": "Which is a liquid?", "choices": ["ice", "water", "steam"],
                     "answer": 1.0}),
    ("index-float-text", {"question": "Which is a liquid?", "choices": ["ice", "water", "steam"],
                          "answer": "1.0"}),
    # lettered in lower case (MathQA's options as a list): shown as "(A) a ) ice"
    ("options-lower-lettered", {"question": "Which is a liquid?", "correct": "b",
                                "options": ["a ) ice", "b ) water", "c ) steam"]}),
    # lettered options under 'choices' (lighteval's "(A)ice"): shown as "(A) (A)ice"
    ("choices-lettered", {"question": "Which is a liquid?", "answer": 1,
                          "choices": ["(A)ice", "B. water", "C) steam"]}),
    # options as objects: shown as their Python repr, "(A) {'label': 'A', 'text': 'ice'}"
    ("option-objects", {"question": "Which is a liquid?", "answerKey": "B", "choices": [
        {"label": "A", "text": "ice"}, {"label": "B", "text": "water"},
        {"label": "C", "text": "steam"}]}),
    ("option-values", {"question": "Which is a liquid?", "answer": 1, "options": [
        {"value": "ice"}, {"value": "water"}, {"value": "steam"}]}),
    # a gold that is a list of one: the options were not shown, "B" graded as free text
    ("list-of-one", {"question": "Which is a liquid?", "choices": ["ice", "water", "steam"],
                     "answer": ["B"]}),
    # AI2's own files (ARC, OpenBookQA, CommonsenseQA): the question an object of its stem and
    # options, 'not text'; as --prompt-field question.stem, the options were not shown
    ("arc-original", {"id": "Mercury_7", "answerKey": "B", "question": {
        "stem": "Which is a liquid?", "choices": [{"text": "ice", "label": "A"},
                                                  {"text": "water", "label": "B"},
                                                  {"text": "steam", "label": "C"}]}}),
    # ReClor's options are its `answers` (label an index): not shown, '1' graded as free text
    ("reclor", {"question": "Which is a liquid?", "answers": ["ice", "water", "steam"],
                "label": 1, "id_string": "train_7"}),
]


@pytest.mark.parametrize("name,row", MC_ROWS)
def test_multiple_choice_schemas_show_their_options_and_are_graded_on_the_letter(
        tmp_path, name, row):
    # ARC's and CommonsenseQA's {"text", "label"} choices, AQuA's "A)21" and MMLU-Pro's options
    # and HellaSwag's endings were not shown: the model was asked to pick a letter it could not
    # see; ARC's answerKey "2" was graded as "2" though the second option is B
    from rewards import question_text, task_solved

    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps(row) + "\n")
    field = next(k for k in ("answerKey", "correct", "answer", "label") if k in row)
    prompt = next(k for k in ("question", "ctx", "question_stem", "Problem") if k in row)
    for asked in (prompt, f"{prompt}.stem") if isinstance(row[prompt], dict) else (prompt,):
        task = dataset_tasks.load_tasks(str(path), prompt_field=asked, answer_field=field)[0]
        assert task["prompt"] == ("Which is a liquid?\n\n(A) ice\n(B) water\n(C) steam\n\n"
                                  "Answer with the letter of the right option.")
    assert task["answer"] == "B"
    assert task_solved("\\boxed{B}", task) and not task_solved("\\boxed{2}", task)
    # the judge read the row's own question, with no options, against the reference "B"
    assert question_text(task) == task["prompt"]


@pytest.mark.parametrize("column", ["choices", "options"])
def test_a_list_column_whose_gold_names_no_option_is_no_multiple_choice(tmp_path, column):
    # a dataset that is not multiple choice but has a list column of that name (the tools a
    # problem allows) was refused ("'42' is none of the 2 options"), or with prompts only had
    # the list put to the model as options to pick a letter from
    from rewards import task_solved

    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps({"question": "6 * 7?", column: ["calculator", "python"],
                                "answer": "42"}) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["prompt"] == "6 * 7?" and task["answer"] == "42"
    assert task_solved("\\boxed{42}", task) and not task_solved("\\boxed{A}", task)
    plain = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field=None)[0]
    assert plain["prompt"] == "6 * 7?"
    path.write_text(json.dumps({"question": "6 * 7?", column: ["41", "42"], "answer": 1}) + "\n")
    # still MC
    assert dataset_tasks.load_tasks(str(path), prompt_field="question")[0]["answer"] == "B"
    assert "(B) 42" in dataset_tasks.load_tasks(str(path), prompt_field="question",
                                       answer_field=None)[0]["prompt"]


@pytest.mark.parametrize("gold", ["water.", "Water", "WATER", " water ", '"water"', "water!"])
def test_a_gold_that_spells_an_option_otherwise_names_it(tmp_path, gold):
    # a gold that is an option's text in another case, spacing or with a closing period named no
    # option: the options were not shown, and 'water.' was graded as free text
    from rewards import task_solved

    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"question": "Which is a liquid?", "answer": gold,
                                "choices": ["ice", "water", "Steam  vapour"]}) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["answer"] == "B" and "(B) water\n" in task["prompt"]
    assert task_solved("\\boxed{B}", task) and not task_solved("\\boxed{A}", task)
    path.write_text(json.dumps({"question": "Which is a gas?", "answer": "steam vapour.",
                                "choices": ["ice", "water", "Steam  vapour"]}) + "\n")
    assert dataset_tasks.load_tasks(str(path), prompt_field="question")[0]["answer"] == "C"
    # two options that read the same so: it names neither, and is graded as written
    path.write_text(json.dumps({"question": "Which?", "answer": "ice",
                                "choices": ["Ice", "ICE."]}) + "\n")
    assert dataset_tasks.load_tasks(str(path), prompt_field="question")[0]["answer"] == "ice"


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_option_numbers_counted_from_one_are_read_so(tmp_path, suffix):
    # golds 1-4 beside a list of 4 options: a 4 named no option (the options not shown, '4'
    # graded as free text), and every other row was graded on the option after the right one
    from rewards import task_solved

    rows = [{"question": "Which is a liquid?", "choices": ["ice", "steam", "water"], "answer": 3},
            {"question": "Which is solid?", "choices": ["ice", "steam", "water"], "answer": 1},
            {"question": "Which is a gas?", "choices": [10, 20, 30], "answer": 2}]
    path = tmp_path / f"mc{suffix}"
    if suffix == ".csv":        # a CSV's gold is text, its options JSON text
        path.write_text("question,choices,answer\n" + "".join(
            f'{r["question"]},"{json.dumps(r["choices"]).replace(chr(34), 2 * chr(34))}",'
            f'{r["answer"]}\n' for r in rows))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="question")
    assert [t["answer"] for t in tasks] == ["C", "A", "B"]
    assert "(C) water\n" in tasks[0]["prompt"] and "(B) 20\n" in tasks[2]["prompt"]
    assert task_solved("\\boxed{C}", tasks[0]) and not task_solved("\\boxed{D}", tasks[0])
    plain = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field=None)
    assert "(C) water\n" in plain[0]["prompt"]
    # counted from 0 (MMLU's), or neither said: as the hub's datasets count
    for golds, letters in (([0, 2, 1], ["A", "C", "B"]), ([1, 2, 1], ["B", "C", "B"])):
        path = tmp_path / "zero.jsonl"
        path.write_text("".join(json.dumps({**r, "answer": g}) + "\n"
                                for r, g in zip(rows, golds)))
        assert [t["answer"] for t in dataset_tasks.load_tasks(
            str(path), prompt_field="question")] == letters
    # both said: refused, each row would be graded on the option before or after the right one
    path.write_text("".join(json.dumps({**r, "answer": g}) + "\n"
                            for r, g in zip(rows, (3, 0, 1))))
    with pytest.raises(data.DataError, match=r"zero.jsonl: 'answer', the right option's number, "
                       r"is 0 in some rows and 3, the option count, in others.*option's letter"):
        dataset_tasks.load_tasks(str(path), prompt_field="question")
    # a gold beyond the options (a count beside a list of 2 tools): no option numbers at all
    path.write_text("".join(json.dumps({"question": q, "options": ["pen", "ruler"], "answer": a})
                            + "\n" for q, a in (("1 + 1?", 2), ("6 * 7?", 42))))
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="question")
    assert [(t["prompt"], t["answer"]) for t in tasks] == [("1 + 1?", "2"), ("6 * 7?", "42")]


@pytest.mark.parametrize("mark", ["nan", "NaN", "<NA>", "NA", "N/A", "#N/A", "NULL", "\\N",
                                  "#DIV/0!", " nan "])
def test_a_missing_value_written_as_text_is_no_gold_and_no_prompt(tmp_path, mark):
    # pandas' astype(str) writes a missing answer as 'nan', Excel '#N/A', R 'NA', SQL 'NULL': it
    # was read as the gold, and a reply '\boxed{nan}' graded right; a prompt so was asked
    from rewards import task_solved

    path = tmp_path / "rows.csv"
    path.write_text(f"prompt,answer\n1 + 1?,2\n2 + 2?,{mark}\n")
    with pytest.raises(data.DataError, match=re.escape(
            f"rows.csv: row 1's 'answer' is {mark.strip()!r}, a missing value written as text "
            "(pandas, Excel, R and SQL exports write one so), not an answer. Give each row")):
        dataset_tasks.load_tasks(str(path))
    path.write_text(f"prompt,answer\n1 + 1?,2\n{mark},4\n")
    with pytest.raises(data.DataError, match=re.escape(
            f"rows.csv: row 1's 'prompt' is {mark.strip()!r}, a missing value written as text")):
        dataset_tasks.load_tasks(str(path))
    # answers that only look like one: sodium's symbol, 'None' of the options, 'null' in code
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"prompt": "q", "answer": a}) + "\n"
                            for a in ("Na", "None", "null", "nano")))
    tasks = dataset_tasks.load_tasks(str(path))
    assert [t["answer"] for t in tasks] == ["Na", "None", "null", "nano"]
    assert task_solved("\\boxed{Na}", tasks[0]) and not task_solved("\\boxed{nan}", tasks[0])


@pytest.mark.parametrize("tests", [
    ["assert f(2) == 4", "assert f(3) == 6"],                     # asserts as texts
    '["assert f(2) == 4", "assert f(3) == 6"]',                   # a CSV's JSON text
    [{"stdin": "2\n", "stdout": "4\n"}, {"stdin": "3\n", "stdout": "6\n"}],
    [{"input": "2\n", "expected_output": "4\n"}, {"Input": "3\n", "Expected": "6\n"}],
    {"stdin": ["2\n", "3\n"], "stdout": ["4\n", "6\n"]}])          # columns of cases
def test_code_tests_in_other_forms_are_run(tmp_path, tests):
    # a list of assert texts and {"stdin", "stdout"} cases were refused as 'not a list of tests';
    # {"input", "expected_output"} was refused for having no 'output'
    from rewards import task_solved

    path = tmp_path / "code.jsonl"
    path.write_text(json.dumps({"prompt": "Double n, as f(n) or from stdin.", "tests": tests})
                    + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert len(task["tests"]) == 2
    both = "def f(n):\n    return 2 * n\n\nif __name__ == '__main__':\n    print(2 * int(input()))"
    wrong = both.replace("2 *", "3 *")
    assert task_solved(f"```python\n{both}\n```", task)
    assert not task_solved(f"```python\n{wrong}\n```", task)
    # texts that are no asserts are still refused, named
    path.write_text(json.dumps({"prompt": "Double n.", "tests": ["f(2) is 4"]}) + "\n")
    with pytest.raises(data.DataError, match=r"row 0's 'tests' is \["):
        dataset_tasks.load_tasks(str(path))


@pytest.mark.parametrize("missing", [None, "", "  "])
def test_a_split_column_that_some_rows_leave_empty_is_refused(tmp_path, missing):
    # the filter by split needed every row to name one, so a file where one row did not was
    # read whole: the training rows were evaluated as the test split, and trained on as well
    path = tmp_path / "rows.jsonl"
    rows = (("1 + 1?", 2, "train"), ("2 + 2?", 4, missing), ("3 + 3?", 6, "test"))
    path.write_text("".join(json.dumps({"prompt": p, "answer": a, "split": s}) + "\n"
                            for p, a, s in rows))
    for split in ("test", "train"):
        with pytest.raises(data.DataError, match=re.escape(
                f"rows.jsonl: row 1's 'split' is {json.dumps(missing)}, while other rows name "
                "theirs (test, train); give every row its split, or drop the column")):
            dataset_tasks.load_tasks(str(path), split=split)
    path.write_text(path.read_text().replace(json.dumps(missing), '"test"'))
    assert [t["prompt"] for t in dataset_tasks.load_tasks(str(path), split="test")] == [
        "2 + 2?", "3 + 3?"]


@pytest.mark.parametrize("row,field", [
    ({"question": "Capital of France?", "answers": ["", "Paris", "paris, france"]}, "answers"),
    ({"question": "Capital of France?", "answers": ["Paris", None, "nan"]}, "answers"),
    ({"question": "Capital of France?", "answer": ["Paris", " ", "paris, france"]}, "answer"),
    ({"question": "Capital of France?", "answers": {"text": ["Paris", ""]}}, "answers.text"),
    ({"prompt": "Capital of France?", "reward_model": {"ground_truth": '["Paris", ""]'}},
     "answer")])
def test_blank_entries_of_a_list_of_acceptable_answers_are_left_out(tmp_path, row, field):
    # a list of acceptable answers with a blank entry (an annotator's empty span, a null) was
    # refused whole: "row 0's 'answers' is empty", though it held 'Paris'
    from rewards import task_solved

    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field=next(iter(row)), answer_field=field)[0]
    assert task["answer"] == "Paris" and "" not in task.get("answers", [])
    assert task_solved("\\boxed{Paris}", task) and not task_solved("\\boxed{Lyon}", task)
    assert not task_solved("\\boxed{}", task) and not task_solved("\\boxed{nan}", task)
    # all of them blank: still refused, named
    path.write_text(json.dumps({"question": "q?", "answers": ["", None]}) + "\n")
    with pytest.raises(data.DataError, match="row 0's 'answers' is"):
        dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field="answers")


def test_a_semicolon_csv_reads_a_decimal_comma_as_the_decimal_mark(tmp_path):
    # Excel writes 2.5 as '2,5' where the comma is the decimal mark, and separates cells by
    # semicolons there: '2,5' was the gold, read as the list 2, 5, and '\\boxed{2.5}' graded wrong
    from rewards import task_solved

    path = tmp_path / "de.csv"
    path.write_text("prompt;answer\n1,5 + 1?;2,5\nq;0,125\nr;-3,25\ns;1,000\n")
    tasks = dataset_tasks.load_tasks(str(path))
    assert [(t["prompt"], t["answer"]) for t in tasks] == [
        ("1,5 + 1?", "2.5"), ("q", "0.125"), ("r", "-3.25"), ("s", "1000")]
    assert task_solved("\\boxed{2.5}", tasks[0]) and not task_solved("\\boxed{25}", tasks[0])
    # a comma-separated file's quoted '2,5' is as written (its decimal mark is the point)
    path = tmp_path / "en.csv"
    path.write_text('prompt,answer\nq,"2,5"\n')
    assert dataset_tasks.load_tasks(str(path))[0]["answer"] == "2,5"


ASK = "\n\nAnswer with the letter of the right option."


@pytest.mark.parametrize("gold", ["Answer: B", "The answer is (B).", "So $\\boxed{B}$",
                                  "rationale...\n#### B"])
@pytest.mark.parametrize("options", [["ice", "water", "steam"],
                                     {"A": "ice", "B": "water", "C": "steam"}])
def test_a_gold_that_states_its_option_in_a_sentence_names_it(tmp_path, gold, options):
    # 'Answer: B' named no option as written: the options were not shown, and the model was
    # graded on the letter B of options it never saw (or refused: 'none of the 3 options')
    from rewards import task_solved

    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"question": "Which is a liquid?", "options": options,
                                "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["prompt"] == "Which is a liquid?\n\n(A) ice\n(B) water\n(C) steam" + ASK
    assert task["answer"] == "B"
    assert task_solved("\\boxed{B}", task) and not task_solved("\\boxed{A}", task)
    plain = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field=None)[0]
    assert plain["prompt"] == task["prompt"]


OPTION_ROWS = [   # (name, row with one column per option, --prompt-field, prompt, gold)
    ("piqa", {"goal": "Which is a liquid?", "sol1": "ice", "sol2": "water", "label": 1}, "goal",
     "Which is a liquid?\n\n(A) ice\n(B) water" + ASK, "B"),
    ("winogrande", {"sentence": "The _ flows.", "option1": "water", "option2": "ice",
                    "answer": "1"}, "sentence", "The _ flows.\n\n(A) water\n(B) ice" + ASK, "A"),
    ("siqa", {"context": "Tracy poured a glass.", "question": "Which is a liquid?",
              "answerA": "ice", "answerB": "water", "answerC": "steam", "label": "2"}, "question",
     "Tracy poured a glass.\nWhich is a liquid?\n\n(A) ice\n(B) water\n(C) steam" + ASK, "B"),
    # COPA's question is "cause" or "effect" of its premise: the prompt was 'cause' alone
    ("copa", {"premise": "The ice was gone.", "question": "cause", "choice1": "It froze.",
              "choice2": "It melted.", "label": 1, "idx": 0}, "prompt",
     "The ice was gone. What was the cause of this?\n\n(A) It froze.\n(B) It melted." + ASK, "B"),
    ("copa-effect", {"premise": "The ice was warmed.", "question": "effect", "choice1":
                     "It melted.", "choice2": "It froze.", "label": 0}, "question",
     "The ice was warmed. What happened as a result?\n\n(A) It melted.\n(B) It froze." + ASK,
     "A"),
    ("chat_prompt", {"prompt": [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Which is a liquid?"}],
                     "choices": ["ice", "water"], "answer": 1}, "prompt",
     [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Which is a liquid?\n\n(A) ice\n(B) water" + ASK}], "B"),
]


@pytest.mark.parametrize("name,row,field,prompt,gold", OPTION_ROWS,
                         ids=[r[0] for r in OPTION_ROWS])
def test_one_column_per_option_and_chat_prompts_show_the_options(
        tmp_path, name, row, field, prompt, gold):
    # PIQA's label, SIQA's '1'-'3' and WinoGrande's '1'/'2' were graded as written with no
    # options in the prompt (WinoGrande's '1' is its first option, A; PIQA's and SIQA's label is
    # not --answer-field answer: 'no field'); a chat prompt's options were not listed either
    from rewards import question_text, task_solved

    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field=field)[0]
    assert task["prompt"] == prompt and task["answer"] == gold
    assert task_solved(f"\\boxed{{{gold}}}", task) and not task_solved("\\boxed{1}", task)
    assert "(A) " in question_text(task) and "(B) " in question_text(task)   # what a judge reads


@pytest.mark.parametrize("cops,golds", [
    ([0, 2, 3], "ACD"), (["0", "2"], "AC"),        # the hub's copy counts from 0 (a CSV's text)
    ([4, 2, 1], "DBA"),                             # the original JSON files from 1
    ([4.0, 2.0], "DB"),                             # pandas' float column (a NaN in it)
    (["b", "D"], "BD")])                            # the option's letter
def test_medmcqa_options_are_shown_and_its_numbered_right_option_read_as_the_file_counts(
        tmp_path, cops, golds):
    # MedMCQA's opa-opd were not shown ('no field answer'), and --answer-field cop graded the
    # number as written: the model never saw the options
    from rewards import task_solved

    path = tmp_path / "medmcqa.jsonl"
    path.write_text("".join(json.dumps({"question": "Which?", "opa": "ice", "opb": "water",
                                        "opc": "steam", "opd": "snow", "cop": c}) + "\n"
                            for c in cops))
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="question")
    assert [t["answer"] for t in tasks] == list(golds)
    assert tasks[0]["prompt"].startswith("Which?\n\n(A) ice\n(B) water\n(C) steam\n(D) snow")
    assert task_solved(f"\\boxed{{{golds[0]}}}", tasks[0]) and not task_solved("\\boxed{1}",
                                                                                  tasks[0])


@pytest.mark.parametrize("cops,needle", [
    ([1, 2], "holds 1-3 only, so whether it counts from 0"),     # either: A-B or B-C
    ([0, 4], "holds both 0 and 4"),
    ([-1], "row 0's right option is -1, no option: a split whose answers are withheld"),
    ([""], "row 0's right option is empty, no option: a split whose answers are withheld")])
def test_a_numbered_right_option_that_cannot_be_read_is_named(tmp_path, cops, needle):
    path = tmp_path / "medmcqa.jsonl"
    path.write_text("".join(json.dumps({"question": "Which?", "opa": "a", "opb": "b", "opc": "c",
                                        "opd": "d", "cop": c}) + "\n" for c in cops))
    with pytest.raises(data.DataError, match=re.escape(needle)):
        dataset_tasks.load_tasks(str(path), prompt_field="question")
    plain = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field=None)
    assert "(D) d" in plain[0]["prompt"] and "answer" not in plain[0]


@pytest.mark.parametrize("row,field,answer,context", [
    ({"ID": "chal-1", "Body": "Jack had 8 pens.", "Question": "He gave 3 away. How many are left?",
      "Answer": 5.0}, "Question", "Answer", "Jack had 8 pens."),                   # SVAMP
    ({"body": "Jack had 8 pens.", "question": "How many are left?", "answer": "5"},
     "question", "answer", "Jack had 8 pens."),                                    # ASDiv
    ({"passage": "The Bears won 24-7.", "question": "Who won?", "answers_spans": {
        "spans": ["The Bears"]}}, "question", "answers_spans.spans", "The Bears won 24-7."),
    ({"passage": "Water is wet.", "question": "is water wet", "answer": True}, "question",
     "answer", "Water is wet."),                                                  # BoolQ
    # titled paragraphs, or a list of them, were not text: the question was asked without them
    ({"question": "Who is older?", "answer": "Ada", "context": {                  # HotpotQA
        "title": ["Ada", "Bob"], "sentences": [["Ada was born", " in 1815."], ["Bob in 1900."]]}},
     "question", "answer", "Ada: Ada was born in 1815.\n\nBob: Bob in 1900."),
    ({"question": "Who is older?", "answer": "Ada", "context": [                  # 2Wiki
        ["Ada", ["Ada was born in 1815."]], ["Bob", ["Bob in 1900."]]]},
     "question", "answer", "Ada: Ada was born in 1815.\n\nBob: Bob in 1900."),
    ({"question": "Who is older?", "answer": "Ada", "paragraphs": [               # MuSiQue
        {"idx": 0, "title": "Ada", "paragraph_text": "Ada was born in 1815."},
        {"idx": 1, "title": "Bob", "paragraph_text": "Bob in 1900."}]},
     "question", "answer", "Ada: Ada was born in 1815.\n\nBob: Bob in 1900."),
    ({"question": "Does it help?", "final_decision": "yes", "context": {         # PubMedQA
        "contexts": ["It was tried.", "It helped."], "labels": ["A", "B"]}},
     "question", "final_decision", "It was tried.\n\nIt helped."),
])
def test_a_question_is_asked_after_the_text_it_is_about(tmp_path, row, field, answer, context):
    # the model was asked 'How many are left?' without the Body / passage that says of what
    path = tmp_path / "context.jsonl"
    path.write_text(json.dumps(row) + "\n")
    for answer_field in (None, answer):
        task = dataset_tasks.load_tasks(str(path), prompt_field=field,
                                        answer_field=answer_field)[0]
        assert task["prompt"] == f"{context}\n{row[field]}"
    # a prompt read from that text, or one that holds it already, is as written
    for prompt in (context, f"{context} {row[field]}"):
        path.write_text(json.dumps({**row, "q": prompt}) + "\n")
        assert dataset_tasks.load_tasks(str(path), prompt_field="q", answer_field=None)[0][
            "prompt"] == prompt


def test_an_alpaca_instruction_is_followed_by_its_input(tmp_path):
    # 'Summarize this.' was asked without the text (Alpaca's input), and a row with no prompt
    # column was told to map --prompt-field input, the text to act on, not the instruction
    path = tmp_path / "alpaca.jsonl"
    path.write_text(json.dumps({"instruction": "Add the numbers.", "input": "2 and 3",
                                "output": "5"}) + "\n")
    for answer_field in (None, "output"):
        task = dataset_tasks.load_tasks(str(path), prompt_field="instruction",
                                        answer_field=answer_field)[0]
        assert task["prompt"] == "Add the numbers.\n\n2 and 3"
    with pytest.raises(data.DataError, match="--prompt-field instruction"):
        dataset_tasks.load_tasks(str(path))
    path.write_text(json.dumps({"instruction": "Add 2 and 3.", "input": "", "output": "5"}) + "\n")
    assert dataset_tasks.load_tasks(str(path), prompt_field="instruction", answer_field="output"
                                    )[0]["prompt"] == "Add 2 and 3."


@pytest.mark.parametrize("right,wrong", [("Correct Answer", "Incorrect Answer {}"),   # GPQA
                                         ("correct_answer", "distractor{}")])         # SciQ
def test_right_first_options_are_shuffled_once_per_row_and_graded_on_the_letter(
        tmp_path, right, wrong):
    # GPQA lists the right answer first ('Correct Answer', 'Incorrect Answer 1'..'3'): in column
    # order every gold would be A; the order is drawn from the row, the same in every run.
    # SciQ's distractors were not shown: its correct_answer was graded as free text
    from rewards import task_solved

    rows = [{"Question": f"Which of these is {k}?", right: f" right {k}\n", "Record ID": f"r{k}",
             **{wrong.format(j): f"wrong {j}" for j in (1, 2, 3)}} for k in range(8)]
    path = tmp_path / "gpqa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="Question")
    assert tasks == dataset_tasks.load_tasks(str(path), prompt_field="Question")
    assert [t["id"] for t in tasks] == [f"r{k}" for k in range(8)]     # GPQA's own (was gpqa-0)
    assert len({t["answer"] for t in tasks}) > 1
    for k, t in enumerate(tasks):
        assert f"({t['answer']}) right {k}\n" in t["prompt"]
        assert sorted(re.findall(r"\(\w\) (.*)", t["prompt"])) == [
            f"right {k}", "wrong 1", "wrong 2", "wrong 3"]
        assert task_solved(f"\\boxed{{{t['answer']}}}", t)


@pytest.mark.parametrize("row", [
    {"question": "Which is a liquid?", "mc1_targets": {"choices": ["water", "ice", "steam"],
                                                       "labels": [1, 0, 0]}},       # TruthfulQA
    {"inputs": "Which is a liquid?", "targets": ["water"], "multiple_choice_targets": [
        "ice", "water", "steam"], "multiple_choice_scores": [0, 1, 0]},            # BIG-bench
    {"input": "Which is a liquid?", "target_scores": {"ice": 0, "steam": 0, "water": 1}}])
def test_options_scored_right_or_wrong_are_shown_and_graded_on_the_letter(tmp_path, row):
    # the options were not shown: TruthfulQA was 'no field answer', BIG-bench graded on its
    # free-form targets or refused ('target_scores' is a dict)
    from rewards import task_solved

    path = tmp_path / "scored.jsonl"
    path.write_text(json.dumps(row) + "\n")
    field = next(k for k in ("question", "inputs", "input") if k in row)
    task = dataset_tasks.load_tasks(str(path), prompt_field=field)[0]
    assert task["prompt"].startswith("Which is a liquid?\n\n(A) ")
    assert f"({task['answer']}) water\n" in task["prompt"]
    assert sorted(re.findall(r"\(\w\) (.*)", task["prompt"])) == ["ice", "steam", "water"]
    assert task_solved(f"\\boxed{{{task['answer']}}}", task) and not task_solved(
        "\\boxed{water}", task)


def test_a_conversation_with_its_reply_and_an_answer_is_a_task(tmp_path, tokenizer):
    # OpenR1's rows: {"messages": [user, assistant], "answer"} had no field 'prompt'; the prompt
    # is the conversation up to its last user turn (a lone user turn: the question as text)
    from rewards import task_solved

    u1, a1 = {"role": "user", "content": "1 + 1?"}, {"role": "assistant", "content": "2"}
    u2 = {"role": "user", "content": "And 2 + 2?"}
    rows = [{"messages": [u1, a1], "answer": "2"}, {"messages": [u1, a1, u2, a1], "answer": "4"}]
    path = tmp_path / "openr1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    one, two = dataset_tasks.load_tasks(str(path))
    assert one["prompt"] == "1 + 1?" and two["prompt"] == [u1, a1, u2]
    assert data.build_messages(one, style="default")[-1]["content"].endswith(
        data.MATH_INSTRUCTION)
    assert task_solved("\\boxed{2}", one) and task_solved("\\boxed{4}", two)
    path.write_text(json.dumps({"messages": [a1], "answer": "2"}) + "\n")
    with pytest.raises(data.DataError, match="row 0's 'messages' is .* a conversation with no "
                       "user turn to answer"):
        dataset_tasks.load_tasks(str(path))
    # ShareGPT's conversations [{"from": "human", "value": ...}] were "no field 'prompt'", and
    # as --prompt-field conversations "message 0 is {\"from\": ..."
    sharegpt = [{"from": "human", "value": "1 + 1?"}, {"from": "gpt", "value": "2"}]
    path.write_text(json.dumps({"conversations": sharegpt, "answer": "2"}) + "\n")
    for kw in ({}, {"prompt_field": "conversations"}):
        assert dataset_tasks.load_tasks(str(path), **kw)[0]["prompt"] == "1 + 1?"
    csv_path = tmp_path / "openr1.csv"          # a CSV holds the conversation as JSON text
    csv_path.write_text("messages,answer\n" + '"' + json.dumps([u1, a1]).replace('"', '""')
                        + '",2\n')
    assert dataset_tasks.load_tasks(str(csv_path))[0]["prompt"] == "1 + 1?"


def test_chat_prompts_in_other_role_names_and_text_parts(tmp_path, tokenizer):
    # OpenAI's developer role, 'User' and text parts were refused ('not {"role": one of ...'); they
    # read as sft_data reads them, and render as the official template renders the messages
    from test_chat_template import OFFICIAL_QWEN3_TEMPLATE

    prompt = [{"role": "developer", "content": [{"type": "text", "text": "Box it."}]},
              {"role": "Human", "content": [{"type": "input_text", "text": "1 +"}, "1?"]}]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"prompt": prompt, "answer": "2"}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    expected = [{"role": "system", "content": "Box it."}, {"role": "user", "content": "1 +\n1?"}]
    assert task["prompt"] == expected
    assert data.render_prompt(tokenizer, task, chat_template=OFFICIAL_QWEN3_TEMPLATE) == (
        "<|im_start|>system\nBox it.<|im_end|>\n<|im_start|>user\n1 +\n1?<|im_end|>\n"
        "<|im_start|>assistant\n")


def test_options_that_are_not_text_are_named(tmp_path):
    # an option that is a list, or an object with no text, was shown as its Python repr
    path = tmp_path / "objects.jsonl"
    path.write_text(json.dumps({"question": "q", "choices": [["a"], ["b"]], "answer": 1}) + "\n")
    for answer_field in ("answer", None):
        with pytest.raises(data.DataError, match=re.escape(
                "row 0's option (A) is [\"a\"], not text (an object's text under none of text, "
                "value, content, option); give each option as text")):
            dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field=answer_field)
    # a list of objects whose gold names no option is no multiple choice (as a list of text)
    path.write_text(json.dumps({"question": "6 * 7?", "answer": "42", "options": [
        {"name": "calculator"}, {"name": "python"}]}) + "\n")
    assert dataset_tasks.load_tasks(str(path), prompt_field="question")[0]["prompt"] == "6 * 7?"


def test_a_multiple_choice_answer_that_names_no_option_is_named(tmp_path):
    path = tmp_path / "arc.jsonl"
    path.write_text(json.dumps({"question": "q", "answerKey": "E", "choices": {
        "text": ["a", "b"], "label": ["A", "B"]}}) + "\n")
    with pytest.raises(data.DataError, match=r"row 0's 'answerKey' \"E\" is none of the 2 options"
                       r" \(an index 0-1, a label A, B, or an option's text\)"):
        dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field="answerKey")
    with pytest.raises(data.DataError, match="Map the answer column with --answer-field answerKey"):
        dataset_tasks.load_tasks(str(path), prompt_field="question")
    # a test split's withheld gold (CommonsenseQA's answerKey ""): 'give each row its answer'
    path.write_text(json.dumps({"question": "q", "answerKey": "", "choices": {
        "text": ["a", "b"], "label": ["A", "B"]}}) + "\n")
    with pytest.raises(data.DataError, match="row 0's 'answerKey' is empty: no right option, as "
                       "in a split whose answers are withheld"):
        dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field="answerKey")
    # several right options (AGIEval's ["A", "C"]): the options were not shown and 'A, C' was
    # graded as free text; as texts, read as acceptable answers, no letter could earn anything
    for golds in (["A", "C"], ["ice", "steam"]):
        path.write_text(json.dumps({"question": "q", "options": ["ice", "water", "steam"],
                                    "answer": golds}) + "\n")
        with pytest.raises(data.DataError, match=re.escape(
                "row 0's 'answer' names 2 options (A, C): a question with several right options, "
                "which the one letter asked for cannot answer; drop such rows")):
            dataset_tasks.load_tasks(str(path), prompt_field="question")


def _lcb_private(cases: list) -> str:
    """LiveCodeBench's private tests as it ships them: base64 of zlib of a pickled JSON string."""
    import base64
    import pickle
    import zlib

    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


DOUBLE = "print(int(input()) * 2)"
CODE_ROWS = [   # (name, prompt column, row as the dataset ships it, right code, wrong code)
    ("humaneval", "prompt", {"task_id": "HumanEval/53",
                             "prompt": "def add(x, y):\n    \"\"\"x + y\"\"\"\n",
                             "canonical_solution": "    return x + y\n", "entry_point": "add",
                             "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"},
     "def add(x, y):\n    return x + y", "def add(x, y):\n    return x - y"),
    ("mbpp", "text", {"task_id": 2, "text": "Write a function to add two numbers.",
                      "code": "def add(a, b):\n    return a + b", "test_setup_code": "",
                      "test_list": ["assert add(2, 3) == 5", "assert add(0, 1) == 1"],
                      "challenge_test_list": []},
     "def add(a, b):\n    return a + b", "def add(a, b):\n    return 5"),
    ("apps", "question", {"problem_id": 0, "question": "Read n, print 2n.", "starter_code": "",
                          "solutions": json.dumps([DOUBLE]), "difficulty": "interview",
                          "input_output": json.dumps({"inputs": ["3\n", "5\n"],
                                                      "outputs": ["6\n", "10\n"]})},
     DOUBLE, "print(6)"),
    ("apps-call", "question", {"problem_id": 1, "question": "Return x + 1.",
                               "starter_code": "class Solution:\n    def inc(self, x):\n        ",
                               "input_output": json.dumps({"fn_name": "inc", "inputs": [[1], [5]],
                                                           "outputs": [[2], [6]]})},
     "class Solution:\n    def inc(self, x):\n        return x + 1",
     "class Solution:\n    def inc(self, x):\n        return 2"),
    ("code_contests", "description", {"name": "1_A", "description": "Read n, print 2n.",
                                      "public_tests": {"input": ["3\n"], "output": ["6\n"]},
                                      "private_tests": {"input": ["5\n"], "output": ["10\n"]},
                                      "generated_tests": {"input": [], "output": []}},
     DOUBLE, "print(6)"),
    ("livecodebench", "question_content", {
        "question_title": "Double", "question_content": "Read n, print 2n.", "starter_code": "",
        "public_test_cases": json.dumps([{"input": "3\n", "output": "6\n", "testtype": "stdin"}]),
        "private_test_cases": _lcb_private([{"input": "5\n", "output": "10\n",
                                             "testtype": "stdin"}]), "metadata": "{}"},
     DOUBLE, "print(6)"),
    ("open-r1", "problem", {"problem": "Read n, print 2n.", "verification_info": json.dumps(
        {"language": "python", "test_cases": [{"input": "3\n", "output": "6\n",
                                               "type": "stdin_stdout"},
                                              {"input": "5\n", "output": "10\n"}]})},
     DOUBLE, "print(6)"),
    ("codeforces", "description", {      # open-r1's: the statement in parts, official_tests
        "id": "1A", "description": "Read n.", "input_format": "One integer n (1 <= n <= 9).",
        "output_format": "Print 2n.", "interaction_format": None, "note": None,
        "examples": [{"input": "3\n", "output": "6\n"}], "time_limit": 1.0,
        "memory_limit": 256.0, "official_tests": [{"input": "3\n", "output": "6\n"},
                                                   {"input": "5\n", "output": "10\n"}],
        "official_tests_complete": True, "input_mode": "stdio", "generated_checker": None},
     DOUBLE, "print(6)"),
    ("livecodebench-call", "question_content", {
        "question_content": "Add a and b.", "private_test_cases": "", "metadata": json.dumps(
            {"func_name": "add"}), "starter_code": "class Solution:\n    def add(self, a, b):\n",
        "public_test_cases": json.dumps([{"input": "2\n3", "output": "5",
                                          "testtype": "functional"}])},
     "class Solution:\n    def add(self, a, b):\n        return a + b",
     "class Solution:\n    def add(self, a, b):\n        return 6"),
]


def test_code_dataset_schemas_load_their_tests_and_grade_a_right_program(tmp_path):
    # HumanEval's test/entry_point, MBPP's test_list, APPS' and TACO's input_output JSON,
    # CodeContests' public/private tests and LiveCodeBench's test cases were each "row 0 has no
    # field 'answer'": no code dataset loaded from a file unless its tests were rewritten first
    from rewards import code_rewards

    tasks = []
    for name, field, row, _, _ in CODE_ROWS:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps(row) + "\n")
        tasks += dataset_tasks.load_tasks(str(path), prompt_field=field)
        # a column of reference code mapped as the answer: still graded on the tests
        solutions = {"code", "canonical_solution", "solutions"} & set(row)
        for answer_field in solutions:
            again = dataset_tasks.load_tasks(str(path), prompt_field=field,
                                             answer_field=answer_field)[0]
            assert again["tests"] == tasks[-1]["tests"] and "answer" not in again, answer_field
    fence = "<think>\nok\n</think>\n```python\n{}\n```".format
    right = code_rewards([fence(r[3]) for r in CODE_ROWS], tasks, all_or_nothing=True)
    wrong = code_rewards([fence(r[4]) for r in CODE_ROWS], tasks, all_or_nothing=True)
    assert right == [1.0] * len(CODE_ROWS) and wrong == [0.0] * len(CODE_ROWS)
    by_name = dict(zip([r[0] for r in CODE_ROWS], tasks))
    # the dataset's own ids (were 'humaneval-0', 'apps-0': the row number in the file)
    assert (by_name["humaneval"]["id"], by_name["mbpp"]["id"], by_name["apps"]["id"]) == (
        "HumanEval/53", "2", "0")
    assert len(by_name["code_contests"]["tests"]) == len(by_name["livecodebench"]["tests"]) == 2
    # the model is told what it must write: MBPP's function name is only in its tests
    user = {n: data.build_messages(t)[-1]["content"] for n, t in by_name.items()}
    assert user["humaneval"].startswith(data.CODE_INSTRUCTION) and "```python\ndef add" in \
        user["humaneval"]
    assert "assert add(2, 3) == 5" in user["mbpp"] and data.FUNCTION_INSTRUCTION in user["mbpp"]
    assert "class Solution:\n    def inc(self, x):\n```" in user["apps-call"]
    assert all(data.PROGRAM_INSTRUCTION in user[n] for n in ("apps", "code_contests",
                                                            "livecodebench", "codeforces"))
    # codeforces' statement was its story alone ('Read n.'): not what to read or to print
    assert by_name["codeforces"]["prompt"] == (
        "Read n.\n\n## Input\n\nOne integer n (1 <= n <= 9).\n\n## Output\n\nPrint 2n."
        "\n\n## Examples\n\nInput:\n```\n3\n```\nOutput:\n```\n6\n```\n\n"
        "Time limit: 1 s; Memory limit: 256 MB.")
    # a prompt that states the statement's parts already (open-r1's verifiable-prompts) as is
    stated = {**next(r[2] for r in CODE_ROWS if r[0] == "codeforces"),
              "prompt": by_name["codeforces"]["prompt"]}
    assert dataset_tasks.code_prompt(stated["prompt"], stated) == stated["prompt"]


BIGCODEBENCH_TEST = """import unittest

class TestCases(unittest.TestCase):
    def setUp(self):
        self.n = 2

    def test_double(self):
        self.assertEqual(task_func(self.n), 4)

    def test_zero(self):
        self.assertEqual(task_func(0), 0)
"""


def test_bigcodebench_unittest_classes_run_each_test_method(tmp_path):
    # its `test` (a unittest.TestCase class) was run as HumanEval's: check(task_func), a
    # NameError that failed every program, right or wrong
    from rewards import code_rewards

    row = {"task_id": "BigCodeBench/0", "instruct_prompt": "Write task_func(n): return 2 n.",
           "test": BIGCODEBENCH_TEST, "entry_point": "task_func", "libs": "[]"}
    path = tmp_path / "bigcodebench.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="instruct_prompt")[0]
    assert len(task["tests"]) == 2
    fence = "```python\n{}\n```".format
    programs = ["def task_func(n):\n    return 2 * n", "def task_func(n):\n    return 4",
                "def task_func(n):\n    return n + 1"]
    assert code_rewards([fence(p) for p in programs], [task] * 3) == [1.0, 0.5, 0.0]
    # a test that patches the program cannot reach it in the sandbox: every program would fail
    mocked = "from unittest.mock import patch\n" + BIGCODEBENCH_TEST
    path.write_text(json.dumps({**row, "test": mocked}) + "\n")
    with pytest.raises(data.DataError, match="row 0's 'test' patches the program with "
                       "unittest.mock, which cannot reach it: .*or drop the row"):
        dataset_tasks.load_tasks(str(path), prompt_field="instruct_prompt")


KODCODE_TEST = """from solution import (
    double,
)

def test_double():
    assert double(2) == 4

def test_double_zero():
    assert double(0) == 0
"""


def test_an_entry_point_that_is_a_method_of_a_class_is_called(tmp_path):
    # LeetCode's 'Solution().twoSum': check() got an instance of the program's class, which the
    # sandbox refuses to pass to the tests ("returned a value of type Solution"): every program
    # failed
    from rewards import code_rewards

    row = {"problem_description": "Return the indices of the two numbers adding to target.",
           "starter_code": "class Solution:\n    def twoSum(self, nums, target):\n",
           "entry_point": "Solution().twoSum",
           "test": "def check(candidate):\n    assert candidate(nums=[2, 7, 11], target=9) == "
                   "[0, 1]\n    assert candidate([3, 2, 4], 6) == [1, 2]\n"}
    path = tmp_path / "leetcode.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="problem_description")[0]
    fence = "```python\n{}\n```".format
    right = ("class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
             "        for i, x in enumerate(nums):\n            if target - x in seen:\n"
             "                return [seen[target - x], i]\n            seen[x] = i")
    wrong = "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]"
    assert code_rewards([fence(right), fence(wrong)], [task] * 2) == [1.0, 0.0]
    path.write_text(json.dumps({**row, "entry_point": "Solution()."}) + "\n")
    with pytest.raises(data.DataError, match="row 0's 'entry_point' is 'Solution\\(\\)\\.', not a "
                       "function's name or an expression"):
        dataset_tasks.load_tasks(str(path), prompt_field="problem_description")


def test_leetcodedataset_helpers_run_before_the_solution_and_the_tests(tmp_path):
    # LeetCodeDataset's `prompt` column holds the imports and the ListNode helpers that its
    # solutions and tests use (the model's prompt is `query`): they ran nowhere, so every program
    # failed (NameError: ListNode in the solution's annotations, list_node in the tests)
    from rewards import code_rewards

    helpers = ("from typing import *\n\nclass ListNode:\n"
               "    def __init__(self, val=0, next=None):\n"
               "        self.val, self.next = val, next\n\ndef list_node(values):\n"
               "    head = None\n    for v in reversed(values):\n"
               "        head = ListNode(v, head)\n    return head\n\ndef is_same_list(p, q):\n"
               "    while p and q and p.val == q.val:\n        p, q = p.next, q.next\n"
               "    return p is None and q is None\n")
    row = {"query": "Reverse a linked list.", "prompt": helpers,
           "entry_point": "Solution().reverseList",
           "test": "def check(candidate):\n    assert is_same_list(candidate(head=list_node("
                   "[1, 2])), list_node([2, 1]))\n    assert candidate(head=None) is None\n"}
    path = tmp_path / "leetcode.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="query")[0]
    assert task["prompt"].startswith("Reverse a linked list.")
    fence = "```python\n{}\n```".format
    right = ("class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> "
             "Optional[ListNode]:\n        prev = None\n        while head:\n"
             "            head.next, prev, head = prev, head, head.next\n        return prev")
    wrong = right.replace("return prev", "return head")
    assert code_rewards([fence(right), fence(wrong)], [task] * 2) == [1.0, 0.0]


def test_kodcode_pytest_functions_run_each_as_a_test(tmp_path):
    # its `test` (pytest functions importing the solution) was no test at all: "row 0 has no
    # field 'answer'"
    from rewards import code_rewards

    row = {"question": "Write double(n).", "solution": "def double(n): return 2 * n",
           "test": KODCODE_TEST, "test_info": [{"function_name": "double"}]}
    path = tmp_path / "kodcode.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert len(task["tests"]) == 2
    fence = "```python\n{}\n```".format
    programs = ["def double(n):\n    return 2 * n", "def double(n):\n    return 4"]
    assert code_rewards([fence(p) for p in programs], [task] * 2) == [1.0, 0.5]
    # a question that does not name the function its tests import: the model could not know it
    assert task["prompt"] == "Write double(n)."
    path.write_text(json.dumps({**row, "question": "Write a function that doubles n.",
                                "test_info": [{"function_name": "double", "function_declaration":
                                               "def double(n):"}]}) + "\n")
    assert dataset_tasks.load_tasks(str(path), prompt_field="question")[0]["prompt"] == (
        "Write a function that doubles n.\n\nNote that the function declaration is def double(n):")
    path.write_text(json.dumps({**row, "test_info": 2}) + "\n")      # no list: nothing to add
    assert dataset_tasks.load_tasks(str(path), prompt_field="question")[0]["prompt"] == (
        "Write double(n).")
    # pytest itself (pytest.raises, a fixture) is not in the sandbox: named, not failed silently
    for test in ("import pytest\n" + KODCODE_TEST, KODCODE_TEST + "\ndef test_f(tmp_path):\n"
                 "    pass\n"):
        path.write_text(json.dumps({**row, "test": test}) + "\n")
        with pytest.raises(data.DataError, match="row 0's 'test' needs pytest .*which the "
                           "sandbox's Python does not have. .*or drop the row"):
            dataset_tasks.load_tasks(str(path), prompt_field="question")


def test_code_contests_generated_tests_are_hidden_tests(tmp_path):
    # they were unused: a program that special-cased the public and private tests passed
    from rewards import code_rewards

    generated = {"input": ["7\n", "0\n"], "output": ["14\n", "0\n"]}
    row = dict(CODE_ROWS[4][2], generated_tests=generated)
    path = tmp_path / "code_contests.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="description")[0]
    assert [t["input"] for t in task["tests"]] == ["3\n", "5\n", "7\n", "0\n"]
    fence = "```python\n{}\n```".format
    cheat = "n = int(input())\nprint({3: 6, 5: 10}.get(n, n))"
    assert code_rewards([fence(DOUBLE), fence(cheat)], [task, task]) == [1.0, 0.75]


def test_tests_written_as_json_text_are_read(tmp_path):
    # a CSV's tests column, and DeepCoder's (JSON text, LiveCodeBench's with a testtype), were
    # "'tests' is \"[{...\", not a list of tests"
    from rewards import code_rewards

    stdin = [{"input": "3\n", "output": "6\n", "testtype": "stdin"}]
    call = [{"input": "2\n3", "output": "5", "testtype": "functional"}]
    path = tmp_path / "deepcoder.jsonl"
    path.write_text(json.dumps({"problem": "Double n.", "tests": json.dumps(stdin)}) + "\n"
                    + json.dumps({"problem": "Add.", "tests": json.dumps(call),
                                  "metadata": {"func_name": "add"}}) + "\n")
    csv_path = tmp_path / "tests.csv"
    csv_path.write_text('problem,tests\n"Double n.","[{""input"": ""3"", ""output"": ""6""}]"\n')
    double, add = dataset_tasks.load_tasks(str(path), prompt_field="problem")
    assert double["tests"] == [{"input": "3\n", "output": "6\n"}]
    assert add["tests"] == [{"fn_name": "add", "expected": 5, "args": [2, 3]}]
    from_csv = dataset_tasks.load_tasks(str(csv_path), prompt_field="problem")[0]
    fence = "```python\n{}\n```".format
    assert code_rewards([fence(DOUBLE), fence("def add(a, b):\n    return a + b"), fence(DOUBLE)],
                        [double, add, from_csv]) == [1.0, 1.0, 1.0]
    # a tests column of cases in columns (CodeContests', APPS' form) was "not a list of tests"
    cases = [{"input": ["3\n", "5\n"], "output": ["6\n", "10\n"]},
             {"inputs": ["3\n", "5\n"], "outputs": ["6\n", "10\n"]}]
    path.write_text("".join(json.dumps({"problem": "Double n.", "tests": c}) + "\n"
                            for c in cases))
    for task in dataset_tasks.load_tasks(str(path), prompt_field="problem"):
        assert task["tests"] == [{"input": "3\n", "output": "6\n"},
                                 {"input": "5\n", "output": "10\n"}]
    path.write_text(json.dumps({"problem": "p", "tests": {"input": ["3"], "output": []}}) + "\n")
    with pytest.raises(data.DataError, match="row 0's 'tests' is .* without an output for each "
                       "input. Fix its tests, or drop the row"):
        dataset_tasks.load_tasks(str(path), prompt_field="problem")


def test_a_stdin_case_given_as_a_list_of_lines_is_one_case(tmp_path):
    # {"input": ["1 2", "3 4"]} (a case's lines, as most code datasets write them) was "'input' is
    # a list; give it as one string"
    from rewards import code_rewards

    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps({"prompt": "Print each line's sum.", "tests": [
        {"input": ["1 2", "3 4"], "output": ["3", 7]}, {"input": "5 5\n", "output": "10\n"}]})
        + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["tests"] == [{"input": "1 2\n3 4", "output": "3\n7"},
                             {"input": "5 5\n", "output": "10\n"}]
    fence = "```python\n{}\n```".format
    sums = "import sys\nfor line in sys.stdin:\n    print(sum(map(int, line.split())))"
    assert code_rewards([fence(sums), fence("print(3)\nprint(7)")], [task, task]) == [1.0, 0.5]
    # CodeContests' columns of cases, each case's lines a list
    for column in ("tests", "public_tests"):
        path.write_text(json.dumps({"prompt": "Print each line's sum.", column: {
            "input": [["1 2", "3 4"]], "output": [["3", "7"]]}}) + "\n")
        assert dataset_tasks.load_tasks(str(path))[0]["tests"] == [
            {"input": "1 2\n3 4", "output": "3\n7"}]


@pytest.mark.parametrize("row,needle", [
    ({"input_output": "{not json"}, "row 0's 'input_output' is not valid JSON"),
    ({"input_output": '{"inputs": ["1"], "outputs": []}'},
     "'input_output' is not {\"inputs\": [...], \"outputs\": [...]} of equal length"),
    # a row with no tests was "no field 'answer'. Map the answer column with --answer-field"
    ({"input_output": ""}, "'input_output' holds no tests, so nothing can grade the row"),
    ({"test_list": []}, "'test_list' holds no tests"),
    # was a TypeError (sequence item 0: expected str instance, list found)
    ({"test_list": ["assert f()"], "test_imports": [["import math"]]},
     "'test_imports' is [[\"import math\"]], not a list of import statements"),
    ({"public_tests": {"input": [], "output": []}}, "'public_tests' holds no tests"),
    # a TypeError ('int' object is not iterable); an output short of the inputs dropped a case
    ({"public_tests": '{"input": ["1"], "output": 2}'}, "'public_tests' is {\"input\": [\"1\"], "
     "\"output\": 2}, not {\"input\": [...], \"output\": [...]} with an output for each input"),
    ({"public_tests": {"input": ["1"], "output": ["1"]}, "private_tests": {
        "input": ["1", "2"], "output": ["1"]}}, "'private_tests' is {\"input\": [\"1\", \"2\"]"),
    ({"public_test_cases": "[]", "private_test_cases": ""}, "'public_test_cases' holds no tests"),
    ({"public_test_cases": '[{"input": "1"}]'}, "'public_test_cases' is not a list of"),
    ({"public_test_cases": "[]", "private_test_cases": "bm90IHpsaWI="},
     "'private_test_cases' is not LiveCodeBench's form"),
    ({"public_test_cases": '[{"input": "1", "output": "2", "testtype": "functional"}]'},
     "'public_test_cases' has functional tests, but 'metadata' names no func_name"),
    # was "row 0's Expecting value: line 1 column 1 (char 0)", naming no column
    ({"public_test_cases": '[{"input": "abc", "output": "2", "testtype": "functional"}]',
      "metadata": '{"func_name": "f"}'}, "'public_test_cases' has a functional test whose "
     "input or output is not JSON, one value a line (Expecting value: line 1 column 1 (char 0): "
     "'abc')"),
    ({"tests": [{"stdin": "1"}]}, "'tests' is [{\"stdin\": \"1\"}], not a list of tests"),
    ({"verification_info": {"language": "cpp", "test_cases": [{"input": "1", "output": "2"}]}},
     "'verification_info' is for 'cpp'; the sandbox runs Python only"),
    # codeforces problems that comparing stdout cannot judge: a right program graded wrong
    ({"official_tests": [{"input": "1", "output": "2"}], "generated_checker": "def check(): ..."},
     "'official_tests' cannot judge it: the row has a generated_checker: a problem with several "
     "right outputs"),
    ({"official_tests": [{"input": "1", "output": "2"}], "interaction_format": "Ask ? x."},
     "an interaction_format: an interactive problem"),
    ({"official_tests": [{"input": "1", "output": "2"}], "input_mode": "file"},
     "input_mode 'file': the program reads and writes files"),
    ({"official_tests": []}, "'official_tests' holds no tests"),
    ({"verification_info": '{"test_cases": [{"input": 1}]}'},
     "'verification_info' is not {\"test_cases\": [{\"input\": text, \"output\": text}]}"),
])
def test_malformed_code_tests_are_named(tmp_path, row, needle):
    path = tmp_path / "code.jsonl"
    path.write_text(json.dumps({"prompt": "Solve.", **row}) + "\n")
    with pytest.raises(data.DataError, match=re.escape(needle) + ".*or drop the row"):
        dataset_tasks.load_tasks(str(path))


def verl_row(truth, ability="math") -> dict:
    """A row in verl's schema, as Skywork-OR1-RL-Data and DAPO-Math ship them."""
    return {"data_source": "x", "ability": ability, "extra_info": {"index": 0},
            "prompt": [{"content": "Solve. Put the answer within \\boxed{}.", "role": "user"}],
            "reward_model": {"ground_truth": truth, "style": "rule"}}


@pytest.mark.parametrize("truth,gold,right,wrong", [
    ('["\\\\frac{1}{2}"]', "\\frac{1}{2}", "\\boxed{0.5}", "\\boxed{2}"),    # Skywork-OR1: JSON
    ('["12", "12.0"]', "12", "\\boxed{12}", "\\boxed{13}"),                 # acceptable answers
    # any of them is right (only the first was): Skywork's checker takes any
    ('["\\\\frac{\\\\pi}{3}", "60^\\\\circ"]', "\\frac{\\pi}{3}", "\\boxed{60^\\circ}",
     "\\boxed{30^\\circ}"),
    ("34", "34", "\\boxed{34}", "\\boxed{3}"),                              # DAPO-Math, verl
    ("[1, 2)", "[1, 2)", "\\boxed{[1, 2)}", "\\boxed{[1, 2]}"),            # an interval stays
])
def test_verl_rows_are_graded_on_their_ground_truth(tmp_path, truth, gold, right, wrong):
    # verl's reward_model {"ground_truth": ...} was "no field 'answer'", and --answer_field
    # reward_model "is {...}, a dict": Skywork-OR1's own RL data could not be loaded
    from rewards import math_reward, task_solved

    path = tmp_path / "verl.jsonl"
    path.write_text(json.dumps(verl_row(truth)) + "\n")
    for kw in ({}, {"answer_field": "reward_model"},
               {"answer_field": "reward_model.ground_truth"}):    # a path inside the row too
        task = dataset_tasks.load_tasks(str(path), **kw)[0]
        assert task["answer"] == gold and task["prompt"][0]["role"] == "user"
        assert task_solved(right, task) and not task_solved(wrong, task)
        assert (math_reward(right, task), math_reward(wrong, task)) == (1.0, 0.0)


@pytest.mark.parametrize("row,field", [
    ({"inputs": "Q: 2 + 2?", "targets": ["4", "four"]}, "targets"),                # BIG-bench
    ({"input": "Q: 2 + 2?", "target": ["4", "four"]}, "target"),        # its task files' rows
    ({"question": "Q: 2 + 2?", "answer": {"aliases": ["4", "four"], "value": "4"}},  # TriviaQA
     "answer.aliases"),
    ({"question": "Q: 2 + 2?", "answers": {"text": ["4", "four", "4"]}}, "answers.text"),  # SQuAD
    # SQuAD's own JSON: a list of objects ('no field answers.text', then '--answer-field answers')
    ({"question": "Q: 2 + 2?", "answers": [{"text": "4", "answer_start": 0},
                                           {"text": "four", "answer_start": 9}]}, "answers.text"),
    ({"question": "Q: 2 + 2?", "answers_spans": {"spans": ["4", "four"]}},            # DROP
     "answers_spans.spans"),
    ({"question": "Q: 2 + 2?", "answer": ["4", "four"]}, "answer"),    # NQ-open: texts, words
    # as JSON text (PopQA's, a CSV's): the gold was the text '["4", "four"]'
    ({"question": "Q: 2 + 2?", "possible_answers": '["4", "four"]'}, "possible_answers"),
    ({"question": "Q: 2 + 2?", "answer": '["4", "four"]'}, "answer")])
def test_a_column_of_acceptable_answers_accepts_any_of_them(tmp_path, row, field):
    # the list was one list answer '4, four', which neither '4' nor 'four' equals
    from rewards import task_solved

    path = tmp_path / "alternatives.jsonl"
    path.write_text(json.dumps(row) + "\n")
    prompt = "inputs" if "inputs" in row else "input" if "input" in row else "question"
    task = dataset_tasks.load_tasks(str(path), prompt_field=prompt, answer_field=field)[0]
    assert task["answer"] == "4" and task["answers"] == ["4", "four"]
    assert [task_solved(f"\\boxed{{{c}}}", task) for c in ("4", "four", "5")] == [
        True, True, False]
    # and a list of numbers or math under another name stays one answer that is a list (all
    # the roots)
    for roots, gold in (([2, 3], "2, 3"), (["\\sqrt{2}", "-\\sqrt{2}"], "\\sqrt{2}, -\\sqrt{2}"),
                        (["2 sqrt(3)", "x = 2"], "2 sqrt(3), x = 2")):
        path.write_text(json.dumps({"question": "Roots?", "answer": roots}) + "\n")
        task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
        assert task["answer"] == gold and "answers" not in task


def test_answers_beside_an_answer_are_its_spellings_not_options(tmp_path):
    # ReClor's answers are options (its label an index); beside an answer text, its spellings
    from rewards import task_solved

    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps({"question": "Capital of France?", "answer": "Paris",
                                "answers": ["Paris", "paris"]}) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["prompt"] == "Capital of France?" and task["answer"] == "Paris"
    assert task_solved("\\boxed{Paris}", task) and not task_solved("\\boxed{A}", task)
    path.write_text(json.dumps({"question": "2 + 2?", "answer": 4, "answers": ["4", "four"]})
                    + "\n")                                   # a number: no index either
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["prompt"] == "2 + 2?" and task_solved("\\boxed{4}", task)


@pytest.mark.parametrize("question", [
    "Name the three primary colours of light.", "Which 3 colours make white light?",
    "List the primary colours of light.", "Name all primary colours of light."])
def test_a_list_of_words_asked_for_together_is_one_answer(tmp_path, question):
    # it was read as acceptable answers: 'red' alone was graded right
    from rewards import task_solved

    path = tmp_path / "parts.jsonl"
    path.write_text(json.dumps({"question": question, "answer": ["red", "green", "blue"]}) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["answer"] == "red, green, blue" and "answers" not in task
    assert task_solved("\\boxed{red, green, blue}", task)
    assert not task_solved("\\boxed{red}", task)
    # a column named for choices is one, whatever the question asks (TriviaQA's aliases)
    path.write_text(json.dumps({"question": question, "aliases": ["red", "green", "blue"]}) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field="aliases")[0]
    assert task_solved("\\boxed{red}", task)


def test_olympiadbench_error_is_the_tolerance_a_numeric_answer_is_graded_within(
        tmp_path, capsys):
    # its `error` was ignored: 6450 for 6.4e3 within 1e2 was graded wrong
    from rewards import math_reward, task_solved

    row = {"id": 1606, "question": "Find the height, in m.", "is_multiple_answer": False,
           "final_answer": ["$6.4 \\times 10^{3}$"], "unit": "m", "error": "1e2"}
    parts = {**row, "id": 7, "final_answer": ["$3$", "$4$"], "error": "1e-2,1e-2"}
    path = tmp_path / "olympiadbench.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(parts) + "\n"
                    + json.dumps({**row, "id": 8, "error": None}) + "\n")
    task, multi, plain = dataset_tasks.load_tasks(str(path), prompt_field="question",
                                                  answer_field="final_answer")
    assert task["tolerance"] == 100.0
    for reply, right in (("\\boxed{6450}", True), ("\\boxed{6.35 \\times 10^3}", True),
                         ("The answer is 6500 m.", True), ("\\boxed{6501}", False),
                         ("\\boxed{6450} or \\boxed{9000}", False)):     # a hedge: none
        assert task_solved(reply, task) is right and math_reward(reply, task) == float(right)
    assert not task_solved("\\boxed{6450}", plain)                # no tolerance: exact
    # one tolerance per part is not honoured: graded exactly, and said once
    assert "tolerance" not in multi and task_solved("\\boxed{3, 4}", multi)
    out = capsys.readouterr().out
    assert out.count("graded exactly") == 1 and "1e-2,1e-2" in out


def test_squad_own_json_files_are_read_one_row_a_question(tmp_path, capsys):
    # {"version", "data": [{"title", "paragraphs": [{"context", "qas"}]}]}: it was one row an
    # article, 'no field question'
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "Paris", "paragraphs": [
        {"context": "Paris is the capital of France.", "qas": [
            {"id": "q1", "question": "Capital of France?", "is_impossible": False,
             "answers": [{"text": "Paris", "answer_start": 0}]},
            {"id": "q2", "question": "Capital of Mars?", "is_impossible": True, "answers": [],
             "plausible_answers": [{"text": "Paris", "answer_start": 0}]}]},
        {"context": "It lies on the Seine.", "qas": [
            {"id": "q3", "question": "Which river?", "answers": [{"text": "the Seine",
                                                                 "answer_start": 7}]}]}]}]}))
    tasks = dataset_tasks.load_tasks(str(path), prompt_field="question",
                                     answer_field="answers.text")
    assert [(t["id"], t["prompt"], t["answer"]) for t in tasks] == [
        ("q1", "Paris is the capital of France.\nCapital of France?", "Paris"),
        ("q3", "It lies on the Seine.\nWhich river?", "the Seine")]
    assert tasks[0]["title"] == "Paris"
    assert "1 unanswerable questions (SQuAD 2.0's is_impossible)" in capsys.readouterr().out


def test_a_row_column_named_as_a_graded_field_is_not_graded(tmp_path):
    # a row's own 'answers' (SQuAD's {"text": [...], "answer_start": [...]}) was copied into the
    # task and graded as its acceptable answers: the key 'text' was right, 'France' wrong; a code
    # row's 'answer' column was graded instead of its tests
    from rewards import task_solved

    path = tmp_path / "squad.jsonl"
    path.write_text(json.dumps({"context": "Paris is in France.", "question": "Where is Paris?",
                                "answers": {"text": ["France"], "answer_start": [12]}}) + "\n")
    squad = dataset_tasks.load_tasks(str(path), prompt_field="question",
                                     answer_field="answers.text")[0]
    path.write_text(json.dumps({"question": "2 + 2?", "answer": "4", "answers": ["5"]}) + "\n")
    other = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert [task_solved(f"\\boxed{{{c}}}", squad) for c in ("France", "text")] == [True, False]
    assert [task_solved(f"\\boxed{{{c}}}", other) for c in ("4", "5")] == [True, False]
    path.write_text(json.dumps({"prompt": "Print 6.", "answer": "print(6)", "prelude": "exit()",
                                "tests": [{"input": "", "output": "6"}]}) + "\n")
    code = dataset_tasks.load_tasks(str(path))[0]
    assert "answer" not in code and "prelude" not in code
    assert task_solved("```python\nprint(6)\n```", code)
    assert not task_solved("```python\nprint(7)\n```", code)


def test_skywork_code_rows_are_graded_on_their_tests(tmp_path):
    from rewards import code_rewards

    io = json.dumps({"inputs": ["3\n"], "outputs": ["6\n"]})
    path = tmp_path / "skywork.jsonl"
    path.write_text(json.dumps(verl_row(io, "code")) + "\n"
                    + json.dumps(verl_row({"assert_case": ["assert f(2) == 4"]}, "code")) + "\n")
    tasks = dataset_tasks.load_tasks(str(path))
    assert tasks[0]["tests"] == [{"input": "3\n", "output": "6\n"}] and "answer" not in tasks[0]
    fence = "<think>\nok\n</think>\n```python\n{}\n```".format
    assert code_rewards([fence(DOUBLE), fence("def f(x):\n    return 2 * x")], tasks) == [1, 1]
    # its grader runs a solution after a prelude of imports (typing, math, inf, ...): a solution
    # that used them unimported failed every test here (NameError: List)
    uses = "def f(xs: List[int]) -> float:\n    return sqrt(max(xs)) if xs else inf"
    check = "def check(candidate):\n    assert candidate([4]) == 2\n    assert candidate([9]) == 3"
    skywork = (json.dumps(verl_row({"assert_case": ["assert f([4]) == 2",
                                                    "assert f([]) == inf"]}, "code")) + "\n"
               + json.dumps(verl_row({"import_prefix": "from typing import List\n"
                                      "from math import sqrt\ninf = float('inf')\n",
                                      "test_code": check, "entry_point": "f"}, "code")) + "\n")
    path.write_text(skywork)
    tasks = dataset_tasks.load_tasks(str(path))
    assert [len(t["tests"]) for t in tasks] == [2, 2]
    # tests of another schema in the same row: graded on those (a ground truth the prelude is
    # not read from was a ValueError traceback)
    path.write_text(json.dumps({**verl_row({"assert_case": "x"}, "code"),
                                "tests": [{"input": "3\n", "output": "6\n"}]}) + "\n")
    assert "prelude" not in dataset_tasks.load_tasks(str(path))[0]
    path.write_text(skywork)
    tasks = dataset_tasks.load_tasks(str(path))
    assert code_rewards([fence(uses)] * 2, tasks) == [1.0, 1.0]
    assert code_rewards([fence(uses.replace("sqrt(", "2 * ("))] * 2, tasks) == [0.5, 0.0]
    path.write_text(json.dumps(verl_row({"import_prefix": "", "test_code": ""}, "code")) + "\n")
    with pytest.raises(data.DataError, match="'reward_model.ground_truth' holds tests of a form"):
        dataset_tasks.load_tasks(str(path))


def test_skywork_linked_list_tests_grade_the_solution(tmp_path):
    # LeetCode's import_prefix defines ListNode and the list_node/is_same_list helpers that its
    # test code calls: the tests ran without them (the values could not reach the tests either),
    # and every solution got 0
    from rewards import code_rewards
    prefix = ("from typing import *\nclass ListNode:\n    def __init__(self, val=0, next=None):\n"
              "        self.val, self.next = val, next\ndef list_node(values):\n    head = None\n"
              "    for v in reversed(values):\n        head = ListNode(v, head)\n    return head\n"
              "def is_same_list(p, q):\n    while p and q and p.val == q.val:\n"
              "        p, q = p.next, q.next\n    return p is None and q is None\n")
    check = ("def check(candidate):\n"
             "    assert is_same_list(candidate(head=list_node([1, 2])), list_node([2, 1]))\n"
             "    assert is_same_list(candidate(head=list_node([3])), list_node([3]))\n")
    path = tmp_path / "skywork.jsonl"
    path.write_text(json.dumps(verl_row({"import_prefix": prefix, "test_code": check,
                                         "entry_point": "Solution().reverseList"}, "code")))
    tasks = dataset_tasks.load_tasks(str(path))
    solution = ("<think>\nok\n</think>\n```python\nclass Solution:\n"
                "    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n"
                "        prev = None\n        while head:\n"
                "            head.next, prev, head = prev, head, head.next\n"
                "        return prev\n```")
    assert code_rewards([solution, solution.replace("prev = None", "return head")],
                        tasks * 2) == [1.0, 0.5]


def test_prompts_only_leaves_out_what_would_be_graded(tmp_path):
    # --answer_field none copied a row's raw answer and tests columns into the task, so the
    # "prompts only" run graded them anyway (GSM8K's "... #### 72" as the gold); constraints rows
    # needed --answer_field none to load at all
    from rewards import gradable

    instruction = data.instruction_tasks(1)[0]
    rows = [{"question": "Natalia sold 48 + 24 clips. How many?", "answer": "48+24=72\n#### 72"},
            {"question": "Double n.", "tests": [{"input": "3\n", "output": "6\n"}]},
            {"question": instruction["prompt"], "constraints": instruction["constraints"]}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graded = dataset_tasks.load_tasks(str(path), prompt_field="question")
    assert [gradable(t) for t in graded] == [True, True, True]
    assert graded[2]["constraints"] == instruction["constraints"] and "answer" not in graded[2]
    plain = dataset_tasks.load_tasks(str(path), prompt_field="question", answer_field=None)
    assert [gradable(t) for t in plain] == [False, False, False]
    assert [t["prompt"] for t in plain] == [r["question"] for r in rows]


@pytest.mark.parametrize("name,row,field,prompt,gold",
                         [OPTION_ROWS[0], OPTION_ROWS[2], OPTION_ROWS[3], (
                             "mmlu", {"question": "Which is a liquid?",
                                      "choices": ["ice", "water"], "answer": 1}, "question",
                             "Which is a liquid?\n\n(A) ice\n(B) water" + ASK, "B")],
                         ids=["piqa", "siqa", "chat_prompt", "mmlu"])
def test_prompts_only_multiple_choice_rows_still_show_their_options(
        tmp_path, name, row, field, prompt, gold):
    # --answer_field none (distill's teacher, evaluate's prompts) left the options out: the
    # model was asked a question whose options it could not see
    from rewards import gradable

    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field=field, answer_field=None)[0]
    assert task["prompt"] == prompt and "answer" not in task and not gradable(task)


def test_list_columns_of_a_csv_are_read_as_json_or_named(tmp_path):
    # pandas' to_csv prints a list column as "['3' '4']": the row loaded with no options shown and
    # the index '1' as its gold
    path = tmp_path / "mmlu.csv"
    path.write_text('question,choices,answer\n2 + 2?,"[""3"", ""4""]",1\n')
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["prompt"].startswith("2 + 2?\n\n(A) 3\n(B) 4\n") and task["answer"] == "B"
    path.write_text('question,choices,answer\n2 + 2?,"[\'3\', \'4\']",1\n')   # pandas' to_csv
    # was the error below
    task = dataset_tasks.load_tasks(str(path), prompt_field="question")[0]
    assert task["prompt"].startswith("2 + 2?\n\n(A) 3\n(B) 4\n") and task["answer"] == "B"
    path.write_text("question,choices,answer\n2 + 2?,['3' '4'],1\n")      # numpy's: ['34']
    with pytest.raises(data.DataError, match=r"row 0's 'choices' is \"\['3' '4'\]\".*, a list "
                                             r"printed as text .*save the dataset as \.jsonl"):
        dataset_tasks.load_tasks(str(path), prompt_field="question")
    path.write_text('question,choices,answer\n1 + 0?,"[""1"", ""2""]",1\n')   # option or index?
    with pytest.raises(data.DataError, match="'1' is ambiguous: an option reads '1', and index 1"):
        dataset_tasks.load_tasks(str(path), prompt_field="question")


class _Opens:
    """A pickle that, unpickled, creates a file: what a hostile data file could run."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def test_livecodebench_private_tests_are_read_without_unpickling(tmp_path):
    import base64
    import pickle
    import zlib

    cases = json.dumps([{"input": "5\n", "output": "10\n", "testtype": "stdin"}])
    for protocol in (0, 2, pickle.HIGHEST_PROTOCOL):    # pickles of one string, any protocol
        packed = base64.b64encode(zlib.compress(pickle.dumps(cases, protocol))).decode()
        assert dataset_tasks._pickled_text(packed) == cases, protocol
    hostile = base64.b64encode(zlib.compress(pickle.dumps(_Opens(tmp_path / "ran")))).decode()
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps({"question_content": "q", "public_test_cases": "[]",
                                "private_test_cases": hostile}) + "\n")
    with pytest.raises(data.DataError, match="'private_test_cases' is not LiveCodeBench's form"):
        dataset_tasks.load_tasks(str(path), prompt_field="question_content")
    assert not (tmp_path / "ran").exists()


def test_a_hub_dataset_with_configs_is_named_with_its_config(monkeypatch):
    # GSM8K, MMLU, ARC and MBPP on the hub each need a config, and --task had no way to give one:
    # "Config name is missing" for every command line
    import datasets

    calls = []

    def load_dataset(name, config=None, split=None):
        calls.append((name, config, split))
        if config is None:
            raise ValueError("Config name is missing. Please pick one among ['main', 'socratic']")
        return [{"question": "1 + 1?", "answer": "#### 2"}]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    task = dataset_tasks.load_tasks("openai/gsm8k:main", "test", prompt_field="question")[0]
    assert calls == [("openai/gsm8k", "main", "test")] and task["answer"] == "2"
    with pytest.raises(data.DataError, match="Config name is missing.*NAME:CONFIG, e.g. "
                                             "openai/gsm8k:main"):
        dataset_tasks.load_tasks("openai/gsm8k", "test", prompt_field="question")


def test_a_missing_column_error_names_the_column_that_was_likely_meant(tmp_path):
    path = tmp_path / "math.jsonl"
    path.write_text(json.dumps({"problem": "Solve.", "solution": "So \\boxed{(1, 2)}."}) + "\n")
    with pytest.raises(data.DataError, match="Map the prompt column with --prompt-field problem"):
        dataset_tasks.load_tasks(str(path))
    with pytest.raises(data.DataError, match="Map the answer column with --answer-field solution"):
        dataset_tasks.load_tasks(str(path), prompt_field="problem")
    task = dataset_tasks.load_tasks(str(path), prompt_field="problem", answer_field="solution")[0]
    assert task["answer"] == "(1, 2)" and task["solution"] == "So \\boxed{(1, 2)}."
    path.write_text(json.dumps({"Question": "1+1?", "Answer": "2"}) + "\n")
    with pytest.raises(data.DataError, match="--prompt-field Question"):
        dataset_tasks.load_tasks(str(path), prompt_field="question")
    with pytest.raises(data.DataError, match="--answer-field Answer"):
        dataset_tasks.load_tasks(str(path), prompt_field="Question")
    # a column whose name holds the usual one was not named ("--answer-field NAME")
    path.write_text(json.dumps({"problem_id": 3, "problem_text": "1+1?",
                                "expected_answer": "2"}) + "\n")
    with pytest.raises(data.DataError, match="--prompt-field problem_text"):
        dataset_tasks.load_tasks(str(path))
    with pytest.raises(data.DataError, match="--answer-field expected_answer"):
        dataset_tasks.load_tasks(str(path), prompt_field="problem_text")
    path.write_text(json.dumps({"prompt": "Double n.", "outputs": ["6"]}) + "\n")
    with pytest.raises(data.DataError, match="--answer-field NAME"):    # not a code's 'outputs'
        dataset_tasks.load_tasks(str(path))
    # a column of acceptable answers (WebQuestions', BIG-bench's) was not named either
    for column in ("answers", "targets", "gold"):       # 'gold': '--answer-field NAME'
        path.write_text(json.dumps({"prompt": "Capital?", column: ["Paris", "paris"]}) + "\n")
        with pytest.raises(data.DataError, match=f"--answer-field {column}"):
            dataset_tasks.load_tasks(str(path))
    # a .csv or .tsv with no header line (MMLU's own files): its first row was read as the
    # column names, and the fix offered was --prompt-field NAME
    for name, text in (("mmlu.csv", '"What is 2 + 2, roughly?",3,4,5,6,B\n"1 + 1?",1,2,3,4,B\n'),
                       ("raw.tsv", "What is 2 + 2?\t4\nWhat is 3 + 3?\t6\n")):
        (tmp_path / name).write_text(text)
        with pytest.raises(data.DataError, match=r"--prompt-field NAME\. Its first line reads as "
                           "a row of values, not column names: add a header line"):
            dataset_tasks.load_tasks(str(tmp_path / name))
    (tmp_path / "mmlu.csv").write_text("question,A,B,C,D,answer\n" + "1 + 1?,1,2,3,4,B\n")
    assert dataset_tasks.load_tasks(str(tmp_path / "mmlu.csv"), "test", prompt_field="question")[
        0]["answer"] == "B"
    with pytest.raises(data.DataError, match=r"--prompt-field question\.$"):    # names: no hint
        dataset_tasks.load_tasks(str(tmp_path / "mmlu.csv"))
    # a null answer beside the column that holds it (MGSM's test rows: answer_number) named none
    path.write_text(json.dumps({"question": "1+1?", "answer": None, "answer_number": 2,
                                "equation_solution": None}) + "\n")
    with pytest.raises(data.DataError, match=r"row 0's 'answer' is null\. .* \(or map the "
                       r"column that holds it: --answer-field answer_number\)"):
        dataset_tasks.load_tasks(str(path), prompt_field="question")


@pytest.mark.parametrize(
    "name,text,needle",
    [
        ("empty.jsonl", "\n\n", "holds no rows"),
        ("empty.json", "[]", "holds no rows"),
        ("ints.json", "[1, 2]", "row 0 is 1, not an object of fields"),
        ("nested.jsonl", '["a", "b"]\n', "row 0 is \"a\", not an object"),
        ("bad.json", "{'prompt': 1}", "not valid JSON"),
        ("other.json", '{"rows": []}', 'a list of rows, or {"data": [rows]}'),
        ("missing.jsonl", None, "no such file"),
    ],
)
def test_a_file_without_usable_rows_is_named_with_the_fix(tmp_path, name, text, needle):
    # each once raised an IndexError, AttributeError or KeyError deep in a script, or looked a
    # missing file up on the hub
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(data.DataError, match=re.escape(needle)):
        dataset_tasks.load_tasks(str(path))


def test_a_folder_given_as_a_data_file_is_named_with_one_inside(tmp_path):
    # was 'no such file' for a folder that is there (a dataset saved as a folder of shards)
    (tmp_path / "gsm8k" / "data").mkdir(parents=True)
    with pytest.raises(data.DataError, match="gsm8k: a folder .*pass a folder of save_to_disk"):
        dataset_tasks.load_tasks(str(tmp_path / "gsm8k"))     # a folder with no data file in it
    with pytest.raises(data.DataError, match="gsm8k: a folder, not a file; .*it holds none"):
        dataset_tasks.rows_from_file(tmp_path / "gsm8k")
    (tmp_path / "gsm8k" / "data" / "train.jsonl").write_text('{"prompt": "1+1?", "answer": "2"}')
    with pytest.raises(data.DataError, match=re.escape("a folder, not a file; pass one data file "
                                                       "(it holds 1, e.g. ")):
        dataset_tasks.rows_from_file(tmp_path / "gsm8k")     # sft.py --dataset reads one file
    tasks = dataset_tasks.load_tasks(str(tmp_path / "gsm8k"))    # --task reads the folder
    assert [(t["prompt"], t["answer"]) for t in tasks] == [("1+1?", "2")]


def test_prompt_asks_for_boxed_answer(tokenizer):
    task = data.math_tasks(1, seed=0)[0]
    text = data.render_prompt(tokenizer, task)
    assert task["prompt"] in text and "\\boxed{}" in text
    assert text.endswith("<|im_start|>assistant\n")
    assert data.build_messages(task, think=False)[-1]["content"].endswith("/no_think")
    code = data.build_messages(data.humaneval_tasks()[0])[-1]["content"]
    assert "```python" in code and "def has_close_elements" in code


def test_rows_of_a_conversation_alone_and_rlvr_rows_are_tasks(tmp_path):
    # Open-Reasoner-Zero's rows are [human turn, assistant turn holding the ground truth]: "row 0
    # is [...], not an object of fields"; open-instruct's RLVR rows name no column for the fix
    from rewards import task_solved

    path = tmp_path / "orz.json"
    path.write_text(json.dumps([[{"from": "human", "value": "2 + 2?"},
                                 {"from": "assistant", "ground_truth": {"value": "4"}}]]))
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == "2 + 2?" and task["answer"] == "4"
    assert task_solved("\\boxed{4}", task) and not task_solved("\\boxed{5}", task)
    path = tmp_path / "rlvr.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "2 + 2?"}],
                                "ground_truth": "4", "dataset": "gsm8k"}) + "\n")
    with pytest.raises(data.DataError, match="Map the answer column with --answer-field "
                                             "ground_truth"):
        dataset_tasks.load_tasks(str(path))
    assert dataset_tasks.load_tasks(str(path), answer_field="ground_truth")[0]["answer"] == "4"


def test_a_conversation_prompt_is_rendered_as_written(tmp_path, tokenizer):
    # TRL's conversational format: was put into the user turn as its Python repr ("[{'role': ...")
    chat = [{"role": "system", "content": "Answer in \\boxed{}."},
            {"role": "user", "content": "What is 2+2?"}]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"prompt": chat, "answer": "4"}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == chat and task["answer"] == "4"
    expected = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    for style in data.PROMPT_STYLES:
        assert data.render_prompt(tokenizer, task, style=style) == expected
    assert data.build_messages(task, think=True)[-1]["content"] == "What is 2+2? /think"
    assert data.build_messages(task, system="S") == [{"role": "system", "content": "S"}, chat[1]]
    assert task["prompt"] == chat                  # the task's messages are left as they were


def test_a_conversation_prompt_written_as_json_text_is_read_as_messages(tmp_path):
    # a CSV (or a parquet string column) holds the chat as JSON text: the model was asked the
    # JSON itself, '[{"role": "user", ...}]', as its question
    chat = [{"role": "system", "content": "Box it."}, {"role": "user", "content": "2+2?"}]
    path = tmp_path / "chat.csv"
    path.write_text("prompt,answer\n" + '"' + json.dumps(chat).replace('"', '""') + '",4\n'
                    + '"[1, 2] is an interval; [ok]",1\n' + '"[{""a"": 1}]",1\n')
    chat_task, interval, other = dataset_tasks.load_tasks(str(path))
    assert chat_task["prompt"] == chat and chat_task["answer"] == "4"
    assert interval["prompt"] == "[1, 2] is an interval; [ok]"     # text that is no chat stays
    assert other["prompt"] == '[{"a": 1}]'
    path.write_text("prompt,answer\n" + '"' + json.dumps(chat[:1]).replace('"', '""') + '",4\n')
    with pytest.raises(data.DataError, match="row 0's 'prompt' has a last turn of role 'system'"):
        dataset_tasks.load_tasks(str(path))


@pytest.mark.parametrize("prompt,needle", [
    (None, "row 1's 'prompt' is null, not text or a list of chat messages"),
    (5, "row 1's 'prompt' is 5, not text"), ("  ", "row 1's 'prompt' is empty"),
    ([], "is [], not text"),
    ([{"role": "user", "text": "hi"}], 'message 0 is {"role": "user", "te'),
    ([{"role": "narrator", "content": "hi"}], "not {\"role\": one of system, user, assistant"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
     "row 1's 'prompt' message 0 (user): part 0 is of type 'image_url'; this recipe trains "
     "text-only models"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "4"}],
     "has a last turn of role 'assistant'; end it with the user turn to answer"),
])
def test_a_prompt_that_is_no_prompt_is_named(tmp_path, prompt, needle):
    # each became the text of the user turn ("None\nPlease reason ...", a repr of the list)
    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps({"prompt": "a", "answer": "1"}) + "\n"
                    + json.dumps({"prompt": prompt, "answer": "1"}) + "\n")
    with pytest.raises(data.DataError, match=re.escape(needle)):
        dataset_tasks.load_tasks(str(path))


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
    assert data.build_messages(task) == [
        {"role": "user", "content": f"{task['prompt']}\n{data.MATH_INSTRUCTION}"}
    ]
    short = data.build_messages(task, style="short")
    assert short == [
        {"role": "system", "content": data.SHORT_SYSTEM},
        {"role": "user", "content": task["prompt"]},
    ]
    assert (
        "<think>" in data.SHORT_SYSTEM
        and "\\boxed{}" in data.SHORT_SYSTEM
        and "step" not in data.SHORT_SYSTEM
    )
    long = data.build_messages(task, style="long", think=True)
    assert (
        long[0]["content"] == data.LONG_SYSTEM and long[1]["content"] == task["prompt"] + " /think"
    )
    for phrase in ("analyse the problem", "summarise your findings", '"Wait', '"Alternatively'):
        assert phrase in data.LONG_SYSTEM
    assert (
        data.build_messages(task, system="S", style="long")[0]["content"] == "S"
    )  # an explicit system wins
    code = data.humaneval_tasks()[0]
    assert data.build_messages(code, style="short") == data.build_messages(
        code
    )  # code keeps its instruction
    texts = {s: data.render_prompt(tokenizer, task, style=s) for s in data.PROMPT_STYLES}
    assert len(set(texts.values())) == 3 and all(
        t.endswith("<|im_start|>assistant\n") for t in texts.values()
    )


def test_set_prompt_style_changes_later_prompts_and_refuses_unknown_names(tokenizer):
    task = data.math_tasks(1, seed=0)[0]
    before = data.set_prompt_style("short")
    try:
        assert data.prompt_ids(tokenizer, [task]) == data.prompt_ids(
            tokenizer, [task], style="short"
        )
        assert data.prompt_ids(tokenizer, [task]) != data.prompt_ids(
            tokenizer, [task], style="default"
        )
    finally:
        assert data.set_prompt_style(before) == "short"
    with pytest.raises(
        ValueError, match="--prompt_style 'terse' is not one of default, short, long"
    ):
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


@pytest.mark.parametrize("script, field", [("grpo", "task"), ("distill", "task"),
                                           ("evaluate", "task"), ("sft", "dataset")])
def test_the_data_flags_help_names_every_file_type_read(script, field):
    """--task (grpo, distill, evaluate) and sft's --dataset read every dataset_tasks.FILE_TYPES
    file (and --task a HF dataset id): their --help says so, and names no other."""
    import dataclasses
    import importlib

    config = importlib.import_module(script).Config
    text = next(f for f in dataclasses.fields(config) if f.name == field).metadata["help"]
    named = set(re.findall(r"\.(?:jsonl|json|csv|tsv|parquet|arrow|feather)\b", text))
    assert named == set(dataset_tasks.FILE_TYPES), (script, text)
    assert field == "dataset" or "HF dataset id" in text, text


@pytest.mark.parametrize("prompt,gold", [
    ("Which is a liquid?\nA. ice\nB. water\nC. steam", "B"),
    ("Which is a liquid?\nOptions:\n(a) ice\n(b) water\n(c) steam", "(b)"),
    ("Which is a liquid? Answer Choices: (A) ice (B) water (C) steam", "B. Water"),
    ("Which is a liquid?\nA: ice\nB: water\nC: steam", "water."),
    ("Which is a liquid?\nA) ice\nB) water\nC) steam", "The answer is (B)."),
])
def test_options_listed_in_the_question_ask_for_the_letter_the_gold_names(tmp_path, prompt, gold):
    # the question listed its options and the gold named one ('B', or its text 'water'): the
    # prompt never said a letter was asked for, so a reply boxing 'water' earned nothing against
    # 'B' (and a reply 'B' nothing against 'water')
    from rewards import question_text, task_solved

    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"prompt": prompt, "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == f"{prompt}\n\nAnswer with the letter of the right option."
    assert task["answer"] == "B" and question_text(task) == task["prompt"]
    assert task_solved("\\boxed{B}", task) and not task_solved("\\boxed{A}", task)
    # a chat prompt: its last turn asks for the letter
    path.write_text(json.dumps({"messages": [{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": prompt}],
                                "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"][-1]["content"].endswith("\n\nAnswer with the letter of the right option.")
    assert task["answer"] == "B"


@pytest.mark.parametrize("prompt,gold", [
    ("Which is a liquid?\nA. ice\nB. water\n\nReply with the letter only.", "B"),  # asks already
    ("Solve x + 1 = 3.\nA. 1\nB. 2\nC. 3", "2"),        # a number: the value, or option 2?
    ("Did Ann get an A or a B? She got the top grade.", "A"),   # no options listed
    ("(a) Find x if x + 1 = 3. (b) Find 2x.", "4"),       # parts of a problem, not options
])
def test_a_question_that_lists_no_options_or_asks_for_the_letter_is_kept(tmp_path, prompt, gold):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"prompt": prompt, "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == prompt and task["answer"] == gold


@pytest.mark.parametrize("choices,gold,letter", [
    (["yes", "no"], True, "A"), (["No", "Yes"], True, "B"), (["Yes.", "No."], False, "B"),
    (["yes", "no", "maybe"], "FALSE", "B"), (["Correct", "Incorrect"], "true", "A"),
    ({"A": "no", "B": "yes"}, True, "B"),
])
def test_a_true_false_gold_names_the_option_that_says_it(tmp_path, choices, gold, letter):
    # BoolQ's true beside the options 'yes' / 'no' (a CSV's TRUE / FALSE): the options were not
    # shown and the gold was graded as the text 'True'
    from rewards import task_solved

    path = tmp_path / "yn.jsonl"
    path.write_text(json.dumps({"prompt": "Is water wet?", "options": choices,
                                "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["answer"] == letter and task["prompt"].endswith(
        "\n\nAnswer with the letter of the right option.")
    assert f"({letter}) " in task["prompt"]
    assert task_solved(f"\\boxed{{{letter}}}", task) and not task_solved("\\boxed{C}", task)


@pytest.mark.parametrize("choices", [["ice", "water"], ["A", "B"], ["yes", "yes"]])
def test_a_true_false_gold_beside_other_options_is_named(tmp_path, choices):
    path = tmp_path / "tf.jsonl"
    path.write_text(json.dumps({"prompt": "Is water wet?", "choices": choices,
                                "answer": True}) + "\n")
    with pytest.raises(data.DataError, match=r"tf.jsonl: row 0's 'answer' is true, a "
                       r"true/false answer .*give the right option's letter"):
        dataset_tasks.load_tasks(str(path))


@pytest.mark.parametrize("column,options", [
    ("Options", ["ice", "water", "steam"]), ("CHOICES", ["ice", "water", "steam"]),
    ("answer_choices", ["ice", "water", "steam"]), ("Answer Options", ["ice", "water", "steam"]),
    ("mc_options", '["ice", "water", "steam"]'),
    ("Choices", {"Label": ["A", "B", "C"], "Text": ["ice", "water", "steam"]}),
])
def test_options_under_another_name_or_case_are_shown(tmp_path, column, options):
    # a column of options named in another case or with more words was not read: the options
    # were not shown, and the gold 'B' was graded as the text 'B'
    from rewards import task_solved

    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"prompt": "Which is a liquid?", column: options,
                                "answer": "B"}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == ("Which is a liquid?\n\n(A) ice\n(B) water\n(C) steam\n\n"
                              "Answer with the letter of the right option.")
    assert task["answer"] == "B" and not task_solved("\\boxed{A}", task)
    plain = dataset_tasks.load_tasks(str(path), answer_field=None)[0]
    assert "(B) water\n" in plain["prompt"]


def test_a_column_of_some_options_only_is_not_the_options(tmp_path):
    # the wrong options alone lack the right one: not listed as the options
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"prompt": "Capital of France?", "answer": "Paris",
                                "incorrect_choices": ["Lyon", "Nice"]}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == "Capital of France?" and task["answer"] == "Paris"


@pytest.mark.parametrize("columns,gold", [
    (("option_a", "option_b", "option_c"), "B"), (("optionA", "optionB", "optionC"), "b"),
    (("Option A", "Option B", "Option C"), "B"), (("choice_a", "choice_b", "choice_c"), "(B)"),
    (("opt-1", "opt-2", "opt-3"), "2"), (("ending0", "ending1", "ending2"), 1),
    (("option1", "option2", "option3"), 2),     # WinoGrande's names, a third option
])
def test_one_column_per_option_under_other_names_is_shown(tmp_path, columns, gold):
    # options one a column under names other than A, B, C were not shown (the gold 'B' graded
    # as the text 'B'); WinoGrande's option1, option2 showed two of three
    from rewards import task_solved

    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"prompt": "Which is a liquid?", "answer": gold,
                                **dict(zip(columns, ["ice", "water", "steam"]))}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == ("Which is a liquid?\n\n(A) ice\n(B) water\n(C) steam\n\n"
                              "Answer with the letter of the right option.")
    assert task["answer"] == "B" and not task_solved("\\boxed{A}", task)


def test_option_columns_left_empty_in_a_row_are_no_options(tmp_path):
    # a sheet of five option columns for questions of four: the fifth, empty, is not listed
    path = tmp_path / "mc.csv"
    path.write_text("prompt,option_a,option_b,option_c,option_d,option_e,answer\n"
                    "Which is a liquid?,ice,water,steam,snow,,B\n"
                    "Which is a gas?,ice,water,steam,snow,fog,C\n")
    one, two = dataset_tasks.load_tasks(str(path))
    assert "(D) snow\n\nAnswer" in one["prompt"] and "(E)" not in one["prompt"]
    assert "(E) fog\n" in two["prompt"] and (one["answer"], two["answer"]) == ("B", "C")
    # the answer's own column is none of them, nor are a problem's numbered values
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"prompt": "Capital of France?", "answer1": "Paris",
                                "answer2": "paris"}) + "\n"
                    + json.dumps({"prompt": "Sum?", "x1": 1, "x2": 2, "answer1": "3"}) + "\n")
    tasks = dataset_tasks.load_tasks(str(path), answer_field="answer1")
    assert [(t["prompt"], t["answer"]) for t in tasks] == [("Capital of France?", "Paris"),
                                                           ("Sum?", "3")]


@pytest.mark.parametrize("column,options,gold", [
    ("options", "ice|water|steam", "B"), ("choices", "ice; water; steam", "water"),
    ("options", "ice\nwater\nsteam\n", 1), ("choices", "a ) ice , b ) water , c ) steam", "b"),
])
def test_options_listed_in_one_string_are_shown(tmp_path, column, options, gold):
    # a sheet's one cell of options, unlettered between bars, semicolons or lines (or MathQA's
    # lettered string under 'choices'), was no options: not shown, and 'B' graded as text
    from rewards import task_solved

    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"prompt": "Which is a liquid?", column: options,
                                "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["prompt"] == ("Which is a liquid?\n\n(A) ice\n(B) water\n(C) steam\n\n"
                              "Answer with the letter of the right option.")
    assert task["answer"] == "B" and not task_solved("\\boxed{A}", task)
    # a string that names no option the gold names is not listed: 'Paris' graded as written
    path.write_text(json.dumps({"prompt": "Capital?", column: "fast|accurate",
                                "answer": "Paris"}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert (task["prompt"], task["answer"]) == ("Capital?", "Paris")


@pytest.mark.parametrize("row,field", [
    ({"test_list": ["assert double(2) == 4", "assert double(3) == 6"]}, "test_list"),
    ({"unit_tests": "assert double(2) == 4\nassert double(3) == 6"}, "unit_tests"),
    ({"test": "assert double(2) == 4\nassert double(3) == 6"}, "test"),
    ({"tests": "assert double(2) == 4\nassert double(3) == 6"}, "answer"),
])
def test_test_code_as_the_answer_or_one_text_is_run(tmp_path, row, field):
    # test code mapped as the answer (--answer-field test_list) was graded as the math answer
    # 'assert double(2) == 4', which no reply equals; a 'tests' text of asserts was refused
    from rewards import task_solved

    path = tmp_path / "code.jsonl"
    path.write_text(json.dumps({"prompt": "Write double(x), which returns 2 * x.", **row}) + "\n")
    task = dataset_tasks.load_tasks(str(path), answer_field=field)[0]
    assert "answer" not in task and task["tests"] == [{"assert": "assert double(2) == 4"},
                                                      {"assert": "assert double(3) == 6"}]
    assert task_solved("```python\ndef double(x):\n    return 2 * x\n```", task)
    assert not task_solved("```python\ndef double(x):\n    return x + 2\n```", task)


@pytest.mark.parametrize("row,prompt,answer", [
    ({"data": {"question": "Which is a liquid?", "choices": ["ice", "water", "steam"],
               "answer": "B"}}, "data.question", "data.answer"),
    ({"q": {"text": "Which is a liquid?", "options": {"A": "ice", "B": "water", "C": "steam"}},
      "a": {"letter": "b"}}, "q.text", "a.letter"),
])
def test_options_beside_a_prompt_inside_an_object_are_shown(tmp_path, row, prompt, answer):
    # a row kept inside an object, read by dotted paths: its options were not shown, and the
    # gold 'B' graded as the text 'B'
    from rewards import task_solved

    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps(row) + "\n")
    task = dataset_tasks.load_tasks(str(path), prompt_field=prompt, answer_field=answer)[0]
    assert task["prompt"] == ("Which is a liquid?\n\n(A) ice\n(B) water\n(C) steam\n\n"
                              "Answer with the letter of the right option.")
    assert task["answer"] == "B" and not task_solved("\\boxed{A}", task)


@pytest.mark.parametrize("column", ["possible_answers", "candidate_answers", "Alternatives"])
def test_a_letter_gold_beside_options_under_a_name_not_read_is_named(tmp_path, column):
    # the gold 'B' beside a list of options under a name not read as options was graded as the
    # free text 'B', the options not shown
    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"prompt": "Which is a liquid?", column: ["ice", "water"],
                                "answer": "B"}) + "\n")
    with pytest.raises(data.DataError, match=rf"mc.jsonl: row 0's 'answer' is 'B', an option's "
                       rf"letter.*{column!r} holds a list.*rename it 'options'"):
        dataset_tasks.load_tasks(str(path))
    # a letter that is the answer itself (boron's symbol), beside a list without it, or of a
    # list that holds it, is graded as written
    for other, values in (("tags", ["chemistry", "elements"]), (column, ["B", "Bo"])):
        path.write_text(json.dumps({"prompt": "Symbol of boron?", other: values,
                                    "answer": "B"}) + "\n")
        assert dataset_tasks.load_tasks(str(path))[0]["answer"] == "B"


@pytest.mark.parametrize("gold", ["Option B", "choice: (b)", "option 2", "[B]", "Ｂ", "（B）"])
@pytest.mark.parametrize("listed", ["column", "question"])
def test_a_letter_gold_after_a_word_in_brackets_or_full_width_names_its_option(
        tmp_path, gold, listed):
    # 'Option B', '[B]' and a CJK file's full-width 'Ｂ' named no option: the options were not
    # shown (or not asked for by letter) and the gold graded as free text
    from rewards import task_solved

    path = tmp_path / "mc.jsonl"
    row = ({"prompt": "Which is a liquid?", "options": ["ice", "water", "steam"]}
           if listed == "column" else {"prompt": "Which is a liquid?\nA. ice\nB. water\nC. steam"})
    path.write_text(json.dumps({**row, "answer": gold}) + "\n")
    task = dataset_tasks.load_tasks(str(path))[0]
    assert task["answer"] == "B" and task["prompt"].endswith(
        "\n\nAnswer with the letter of the right option.")
    assert task_solved("\\boxed{B}", task) and not task_solved("\\boxed{C}", task)


def test_options_the_question_lists_already_are_listed_once(tmp_path):
    # a question that lists its options, beside the same options in a column: they were listed
    # twice; options that differ from those the question lists are listed after it
    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"prompt": "Which is a liquid?\nA. ice\nB. water",
                                "options": ["ice", "water"], "answer": 1}) + "\n"
                    + json.dumps({"prompt": "Which is a gas?\nA. ice\nB. water",
                                  "options": ["ice", "steam"], "answer": 1}) + "\n")
    one, two = dataset_tasks.load_tasks(str(path))
    assert one["prompt"] == ("Which is a liquid?\nA. ice\nB. water\n\n"
                             "Answer with the letter of the right option.")
    assert two["prompt"] == ("Which is a gas?\nA. ice\nB. water\n\n(A) ice\n(B) steam\n\n"
                             "Answer with the letter of the right option.")
    assert (one["answer"], two["answer"]) == ("B", "B")


def test_a_code_row_with_no_answer_names_its_tests_column(tmp_path):
    # 'no field answer ... --answer-field NAME': the row's asserts under 'test_cases' were not
    # named, and nothing said that mapping them runs them
    path = tmp_path / "code.jsonl"
    path.write_text(json.dumps({"prompt": "Write double(x).",
                                "test_cases": ["assert double(2) == 4"]}) + "\n")
    with pytest.raises(data.DataError, match=r"row 0 has no field 'answer' .*--answer-field "
                       r"test_cases \(its tests: they are run\)"):
        dataset_tasks.load_tasks(str(path))
    task = dataset_tasks.load_tasks(str(path), answer_field="test_cases")[0]
    assert task["tests"] == [{"assert": "assert double(2) == 4"}]
