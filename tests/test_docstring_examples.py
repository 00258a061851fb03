"""The worked `>>>` examples in the docstrings are tests: a reader can trust every one of them."""

import doctest
import importlib

import pytest

MODULES = [
    "grpo",
    "rewards",
    "mathcheck",
    "data",
    "dataset_tasks",
    "sft",
    "distill",
    "distill_run",
    "evaluate",
    "pipeline",
    "pipeline_run",
    "stage_eval",
    "models",
    "engines",
    "runs",
    "distributed",
    "training",
    "grpo_setup",
    "grpo_log",
    "sandbox",
    "sandbox_checks",
    "sandbox_isolation",
    "cli",
    "sft_data",
    "conversations",
    "sft_run",
    "chat_template",
    "tools",
    "curriculum",
    "codeblocks",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name}.py failed"


def test_every_module_with_examples_is_listed():
    """A top-level module whose docstrings show `>>>` examples is in MODULES, so they run."""
    from conftest import ROOT

    with_examples = {p.stem for p in ROOT.glob("*.py") if ">>> " in p.read_text()}
    assert with_examples - set(MODULES) == set(), "add them to MODULES"


def test_the_method_files_have_examples():
    counts = {
        name: doctest.testmod(importlib.import_module(name)).attempted
        for name in ("grpo", "rewards", "pipeline", "data")
    }
    assert all(n > 0 for n in counts.values()), counts


def test_no_file_cites_sources_readers_cannot_open():
    import re

    from conftest import ROOT

    files = [
        p
        for p in ROOT.rglob("*")
        if p.suffix in (".py", ".md", ".sh") and ".git" not in p.parts and "runs" not in p.parts
    ]
    bad = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if p.name != "test_docstring_examples.py"
        and (
            re.search(r"(RECIPES|DESIGN|STYLE)\.md", line) or re.search(r"\b[Ii]ssues? \d+\b", line)
        )
    ]
    assert not bad, bad


def test_section_citations_are_those_docs_recipes_md_cites():
    """'Paper §N' in a docstring or doc is a section that docs/recipes.md cites for that paper
    (or a subsection of one): the readers' copy of the formulas and the code point to the same
    place. A paper recipes.md cites by name only is cited by name (or equation) elsewhere too."""
    import re

    from conftest import ROOT

    papers = (r"DeepSeekMath|DeepSeek-R1|DAPO|Dr\. GRPO|Skywork-OR1|MAGIC|Phi-4-reasoning|Qwen3"
              r"|ToRA|GKD")
    cite = re.compile(rf"({papers})(?:-plus)?(?: [a-z]+ report| [a-z]+ start)? \(?§ ?"
                      r"(\d+(?:\.\d+)*)")
    one = {"MAGIC": "Skywork-OR1"}
    recipes = (ROOT / "docs/recipes.md").read_text()
    cited = {(one.get(p, p), s) for p, s in cite.findall(recipes)}
    paper = None   # a bare '§N' belongs to the paper its bullet or its table's heading names
    for line in recipes.splitlines():
        if line.startswith(("## ", "- **")):
            paper = next(iter(re.findall(papers, line)), None)
        elif not line.startswith(("|", "  ")):
            continue
        if paper:
            cited |= {(paper, s) for s in re.findall(r"§(\d+(?:\.\d+)*)", cite.sub("", line))}
    files = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md") and ".git" not in p.parts
             and "runs" not in p.parts and "tests" not in p.parts]
    bad = [f"{p.relative_to(ROOT)}:{i}: {m.group(0)}"
           for p in files for i, line in enumerate(p.read_text().splitlines(), 1)
           for m in cite.finditer(line)
           if not any(q == one.get(m.group(1), m.group(1))
                      and (m.group(2) + ".").startswith(s + ".") for q, s in cited)]
    assert len(cited) > 15 and not bad, bad


def test_docs_name_only_functions_that_exist():
    """Every `module.name` the README and docs/*.md show lives in that module (a function moved
    to another file leaves no stale pointer); `sft.max_steps` is the flag, a field of sft.Config."""
    import dataclasses
    import re

    from conftest import ROOT

    own = {p.stem for p in ROOT.glob("*.py")}
    docs = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for doc in docs:
        for i, line in enumerate(doc.read_text().splitlines(), 1):
            for code in re.findall(r"`([^`]+)`", line):
                for mod, name in re.findall(r"(?<![\w.-])([a-z_0-9]+)\.([A-Za-z_]\w*)", code):
                    if mod not in own or name in ("py", "md"):
                        continue
                    module = importlib.import_module(mod)
                    config = getattr(module, "Config", None)
                    flags = {f.name for f in dataclasses.fields(config)} if config else set()
                    if not hasattr(module, name) and name not in flags:
                        missing.append(f"{doc.relative_to(ROOT)}:{i}: {mod}.{name}")
    assert not missing, missing


def test_flags_the_docs_name_exist():
    """Every `--flag` the README, docs/*.md, BENCHMARKS.md or a docstring names is a flag of a
    script (a Config field), of a bench script, or one the code passes to another program
    (bwrap, pip, torchrun); cli.RENAMED's old names are named to be refused."""
    import dataclasses
    import re

    from conftest import ROOT

    import cli

    known = {f.name for s in ("sft", "grpo", "distill", "evaluate", "pipeline")
             for f in dataclasses.fields(importlib.import_module(s).Config)}
    code = [*ROOT.glob("*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("bench/*.sh"),
            *ROOT.glob("sandbox_programs/*.py"), *ROOT.glob("tests/*.py"), ROOT / "setup.sh"]
    literal = r"""(?<=["'\s])--([a-z][\w-]*)(?=["'\s=])"""   # add_argument("--x"), argv lists
    known |= {f for p in code for f in re.findall(literal, p.read_text())}
    known |= {k[2:] for k in cli.RENAMED}
    known = {f.replace("-", "_") for f in known}
    texts = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *ROOT.glob("docs/*.md"),
             *ROOT.glob("*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("bench/*.sh")]
    bad = [f"{p.relative_to(ROOT)}:{i}: --{f}" for p in texts
           for i, line in enumerate(p.read_text().splitlines(), 1)
           for f in re.findall(r"(?<![\w-])--([a-z][\w-]*)", line)
           if f.replace("-", "_") not in known]
    assert not bad, bad


def test_the_run_docs_link_the_table_of_is_the_run_described_there():
    """The paragraph of docs/experiments.md that links docs/pipeline_phi4_table.json gives that
    table's accuracies (each stage after the base, in-template and held-out templates): the
    table is that run's, not another's."""
    import json

    from conftest import ROOT

    rows = json.loads((ROOT / "docs/pipeline_phi4_table.json").read_text())
    paragraphs = (ROOT / "docs/experiments.md").read_text().split("\n\n")
    linking = [p for p in paragraphs if "(pipeline_phi4_table.json)" in p]
    wanted = [f"{100 * r[k]:.1f}%" for r in rows[1:] for k in ("accuracy", "heldout_accuracy")]
    assert len(linking) == 1 and all(w in linking[0] for w in wanted), (wanted, linking)


def test_readme_lists_every_module_once():
    """The README's "Files, in reading order" names each top-level .py module exactly once."""
    import re
    from collections import Counter

    from conftest import ROOT

    text = (ROOT / "README.md").read_text()
    files = text[text.index("## Files, in reading order"):]
    files = files[:files.index("\n## ", 1)]
    named = Counter(re.findall(r"`(\w+)\.py`", files))
    modules = {p.stem for p in ROOT.glob("*.py")}
    assert {m: named[m] for m in modules if named[m] != 1} == {}
    assert set(named) <= modules, set(named) - modules


def test_pointers_to_a_doc_section_name_one_of_its_headings():
    """A pointer such as (docs/experiments.md, "sft.py") in a docstring or comment names a
    heading of that doc (sft.py's measurement moved from the README to docs/experiments.md)."""
    import re

    from conftest import ROOT

    pointer = re.compile(r"\((README|BENCHMARKS|docs/\w+)(?:\.md)?, \"([^\"]+)\"\)")
    found, bad = 0, []
    for p in [*ROOT.glob("*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tests/*.py")]:
        for i, line in enumerate(p.read_text().splitlines(), 1):
            for doc, section in pointer.findall(line):
                found += 1
                headings = [h for h in (ROOT / f"{doc}.md").read_text().splitlines()
                            if h.startswith("#")]
                if not any(section in h for h in headings):
                    bad.append(f"{p.relative_to(ROOT)}:{i}: {doc}, {section!r}")
    assert found and not bad, bad


def test_the_run_directory_files_runs_py_names_are_written():
    """Each file runs.py's docstrings say a run directory holds is a name the code writes (a
    string in the code, not only in a docstring)."""
    import ast
    import re

    from conftest import ROOT

    tree = ast.parse((ROOT / "runs.py").read_text())
    rundir = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RunDir")
    named = set(re.findall(r"\b\w+\.(?:jsonl?|png|pt)\b",
                           ast.get_docstring(tree) + ast.get_docstring(rundir)))
    strings = set()
    for p in ROOT.glob("*.py"):
        module = ast.parse(p.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(module)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and ast.get_docstring(n) is not None}
        strings |= {n.value for n in ast.walk(module) if isinstance(n, ast.Constant)
                    and isinstance(n.value, str) and id(n) not in docstrings}
    written = {name for name in named if any(name in s for s in strings)}
    assert len(named) >= 5 and named == written, named - written
