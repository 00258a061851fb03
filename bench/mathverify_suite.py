"""Hold `verify_math` against math-verify's own regression suite.

math-verify (Hugging Face) ships its tests in its source distribution (`tests/*.py`, MIT
licence). Most are `pytest.mark.parametrize` tables of (gold, prediction, expected) run through
a helper `compare_strings(gold, pred, ...)` or `verify(parse(gold), parse(pred))`; a few are
literal `assert compare_strings(...) == 1` lines. This script reads those files with `ast` (it
never imports or runs them), keeps every case whose gold and prediction are strings, and asks
`verify_math(prediction, gold)` (prediction = the completion, gold = the dataset answer) and its
lenient variant for each one.

    python bench/mathverify_suite.py                 # agreement, then every disagreement
    python bench/mathverify_suite.py --quiet         # agreement only
    python bench/mathverify_suite.py --sdist FILE    # use this math_verify-X.tar.gz

The sdist is looked for in --sdist, then in the cache dir ($MATHVERIFY_SUITE_CACHE, default
~/.cache/mathverify_suite); when absent it is downloaded there with
`pip download --no-deps --no-binary :all: math-verify==<installed version>`.

Disagreements are of two kinds: deliberate policies of ours (each listed with its reason in
`POLICIES` below and in `mathcheck.verify_math`'s docstring) and the rest, printed as
"unexplained": a gap in our checker, or a case we judge math-verify's expectation wrong on.
Cases whose expectation depends on a math-verify option we do not have (a float tolerance
`precision`, `strict=False`, `allow_set_relation_comp`) are labelled with that option.
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_VERSION = "0.9.0"


# ---------------------------------------------------------------------------- the sdist


def installed_version() -> str:
    try:
        from importlib.metadata import version

        return version("math-verify")
    except Exception:  # noqa: BLE001
        return DEFAULT_VERSION


def cache_dir() -> Path:
    return Path(
        os.environ.get("MATHVERIFY_SUITE_CACHE", Path.home() / ".cache" / "mathverify_suite")
    )


def locate_sdist(explicit: str | None, version: str) -> Path:
    """The math_verify-<version>.tar.gz: --sdist, else the cache dir, else downloaded there."""
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            sys.exit(f"--sdist {p}: no such file")
        return p
    d = cache_dir()
    for name in (f"math_verify-{version}.tar.gz", f"math-verify-{version}.tar.gz"):
        if (d / name).is_file():
            return d / name
    d.mkdir(parents=True, exist_ok=True)
    print(f"downloading the math-verify {version} source distribution to {d} ...", file=sys.stderr)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        f"math-verify=={version}",
        "-d",
        str(d),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(d.glob(f"math[_-]verify-{version}.tar.gz"))
    if r.returncode != 0 or not found:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        sys.exit(
            "could not download the math-verify sdist (offline?). Run, where the network is "
            f"reachable:\n  {' '.join(cmd)}\nthen pass --sdist FILE or put the file in {d}.\n"
            + "\n".join(tail)
        )
    return found[0]


def test_sources(sdist: Path) -> dict[str, str]:
    """{'tests/test_all.py': source, ...} read straight from the archive."""
    out = {}
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            parts = m.name.split("/")
            if (
                m.isfile()
                and len(parts) >= 3
                and parts[-2] == "tests"
                and parts[-1].startswith("test_")
                and parts[-1].endswith(".py")
            ):
                out["tests/" + parts[-1]] = tar.extractfile(m).read().decode("utf-8")
    if not out:
        sys.exit(f"{sdist}: no tests/test_*.py inside")
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------- the cases


@dataclass
class Case:
    where: str  # file::test[index]
    gold: str
    pred: str
    expected: bool
    options: dict = field(default_factory=dict)  # math-verify options that differ from defaults


def _value(node: ast.AST):
    """A literal (or an f-string over `math`) from the test source; raises on anything else."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    allowed = (
        ast.Expression,
        ast.JoinedStr,
        ast.FormattedValue,
        ast.Constant,
        ast.Call,
        ast.Attribute,
        ast.Name,
        ast.Load,
        ast.Tuple,
        ast.List,
        ast.BinOp,
        ast.UnaryOp,
        ast.operator,
        ast.unaryop,
    )
    expr = ast.Expression(node)
    for sub in ast.walk(expr):
        if not isinstance(sub, allowed) or (isinstance(sub, ast.Name) and sub.id != "math"):
            raise ValueError(f"not a literal: {ast.unparse(node)[:60]}")
    return eval(compile(expr, "<case>", "eval"), {"__builtins__": {}, "math": math})  # noqa: S307


def _helper_call(func: ast.FunctionDef) -> ast.Call | None:
    """The compare_strings(...) / verify(...) call that the test asserts on."""
    for sub in ast.walk(func):
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id in ("compare_strings", "verify")
        ):
            return sub
    return None


_DEFAULTS = {"precision": 6, "float_rounding": 6, "strict": True, "allow_set_relation_comp": False}


def _options(call: ast.Call, row: dict) -> dict:
    opts = {}
    for kw in call.keywords:
        if kw.arg in _DEFAULTS:
            v = row.get(kw.value.id) if isinstance(kw.value, ast.Name) else _value(kw.value)
            if v != _DEFAULTS[kw.arg]:
                opts[kw.arg] = v
    return opts


def extract_cases(sources: dict[str, str]) -> tuple[list[Case], list[str]]:
    """Every (gold, pred, expected) case, and the tests that hold none (library API tests)."""
    cases, skipped = [], []
    for path, src in sources.items():
        tree = ast.parse(src)
        for func in tree.body:
            if not isinstance(func, ast.FunctionDef) or not func.name.startswith("test"):
                continue
            found = 0
            call = _helper_call(func)
            for dec in func.decorator_list:
                if not (
                    isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize")
                ):
                    continue
                names = _value(dec.args[0])
                names = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
                if "gold" not in names or "pred" not in names or call is None:
                    continue
                exp_name = next((n for n in ("expected", "result") if n in names), None)
                for i, elt in enumerate(dec.args[1].elts):
                    try:
                        row = dict(zip(names, _value(elt)))
                    except ValueError:
                        continue
                    if not isinstance(row.get("gold"), str) or not isinstance(row.get("pred"), str):
                        continue
                    cases.append(
                        Case(
                            f"{path}::{func.name}[{i}]",
                            row["gold"],
                            row["pred"],
                            bool(row[exp_name]),
                            _options(call, row),
                        )
                    )
                    found += 1
            # literal lines: assert compare_strings("...", "...", ...) == 1
            for sub in ast.walk(func):
                if (
                    isinstance(sub, ast.Compare)
                    and isinstance(sub.left, ast.Call)
                    and isinstance(sub.left.func, ast.Name)
                    and sub.left.func.id == "compare_strings"
                ):
                    try:
                        gold, pred = _value(sub.left.args[0]), _value(sub.left.args[1])
                        expected = bool(_value(sub.comparators[0]))
                    except (ValueError, IndexError):
                        continue
                    if isinstance(gold, str) and isinstance(pred, str):
                        cases.append(
                            Case(
                                f"{path}::{func.name}[line {sub.lineno}]",
                                gold,
                                pred,
                                expected,
                                _options(sub.left, {}),
                            )
                        )
                        found += 1
            if not found:
                skipped.append(f"{path}::{func.name}")
    return cases, skipped


# ---------------------------------------------------------------------------- policies


# Disagreements we keep on purpose. Each: (reason, predicate on the case). The first that
# matches names the policy; the same list is in mathcheck.verify_math's docstring.
def _verify(pred: str, gold: str, lenient: bool = False) -> bool:
    import mathcheck

    if not lenient:
        return mathcheck.verify_math(pred, gold)
    try:
        return mathcheck.verify_math(pred, gold, lenient=True)
    except TypeError:  # a verify_math from before lenient mode
        return mathcheck.verify_math(pred, gold)


def _unanchored(c: Case) -> bool:
    return _verify(c.pred, c.gold, lenient=True) != _verify(c.pred, c.gold)


def _region(pred: str) -> str:
    import mathcheck

    region = mathcheck.answer_region(pred) or ""
    return mathcheck.DOUBLED_CMD_RE.sub("", mathcheck.SPECIAL_TOKEN_RE.split(region, 1)[0])


def _competing_boxes(c: Case) -> bool:
    """The prediction (or the gold) has boxes that neither join the last one nor equal it."""
    import mathcheck

    for text in (c.pred, c.gold):
        answer, others = mathcheck.extract(_region(text), retract=False)
        final = mathcheck.normalize_answer(answer or "")
        if any(mathcheck.normalize_answer(o) != final for o in others):
            return True
    return False


def _false_numeric_equation(c: Case) -> bool:
    import mathcheck

    answer = mathcheck.extract_answer(_region(c.pred)) or ""
    sides = mathcheck.normalize_answer(answer).split("=")
    values = [mathcheck.exact_number(x) for x in sides]
    return len(sides) == 2 and None not in values and values[0] != values[1]


POLICIES: list[tuple[str, object]] = [
    (
        "1. a final answer needs a box or an anchor ('The answer is', 'Final Answer:' ...); a bare "
        "value in running text earns nothing (lenient mode accepts it)",
        _unanchored,
    ),
    (
        "2. exact numbers: no float tolerance (0.0833333 != 1/12, 0.33 != 1/3)",
        lambda c: "precision" in c.options or bool(re.search(r"\d\.\d{4,}", c.pred + " " + c.gold)),
    ),
    (
        "3. variables are compared strictly: f(x) != f(y), W(x) != W(n)",
        lambda c: (
            c.options.get("strict") is False
            or (
                {m for m in re.findall(r"[A-Za-z]\(([a-z])\)", c.gold)}
                and {m for m in re.findall(r"[A-Za-z]\(([a-z])\)", c.pred)}
                and not {m for m in re.findall(r"[A-Za-z]\(([a-z])\)", c.gold)}
                & {m for m in re.findall(r"[A-Za-z]\(([a-z])\)", c.pred)}
            )
        ),
    ),
    (
        "4. ',' is never a decimal separator: '1000,99' is not 1000.99",
        lambda c: any(
            len(x) < 40 and re.search(r"\d,\d{1,2}(?!\d)|\d,\d{4,}|(?<!\d)0,\d", x)
            for x in (c.gold, c.pred)
        ),
    ),
    (
        "5. '\\approx' in the answer is a hedge, even after an exact value",
        lambda c: "\\approx" in c.pred,
    ),
    (
        "6. an equation between two different numbers ('1/2 = 10/9') is no answer",
        _false_numeric_equation,
    ),
    (
        "7. boxes that neither join the last one nor equal it compete with it (a hedge), also "
        "before a 'Final Answer:' line; a gold's last box group is the gold",
        _competing_boxes,
    ),
]

# Cases where we judge math-verify's expectation wrong (the answers differ mathematically).
JUDGED_WRONG: list[tuple[str, str, str]] = [
    ("1 - 1/e is not 1 + 1/e", "$1 - \\frac{1}{\\mathrm{e}}$", "$1 + \\frac{1}{\\mathrm{e}}$"),
]


def policy_label(key: str) -> str:
    """A disagreement's short name: 'unexplained', a math-verify test file, or 'policy <name>'."""
    if key == "unexplained":
        return key
    return key.split(":")[0] if key.startswith("math") else "policy " + key.split(".")[0]


def policy_of(c: Case) -> str | None:
    for reason, gold, pred in JUDGED_WRONG:
        if c.gold == gold and c.pred == pred:
            return "math-verify's expectation judged wrong: " + reason
    for reason, pred in POLICIES:
        try:
            if pred(c):
                return reason
        except Exception:  # noqa: BLE001
            continue
    return None


# ---------------------------------------------------------------------------- main


def short(s: str, n: int = 110) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:40] + " ... " + s[-(n - 45) :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sdist", default=None, help="path to math_verify-X.tar.gz (default: cache/download)"
    )
    ap.add_argument(
        "--version", default=None, help="math-verify version (default: the installed one)"
    )
    ap.add_argument("--quiet", action="store_true", help="only the agreement figures")
    args = ap.parse_args()
    version = args.version or installed_version()
    sdist = locate_sdist(args.sdist, version)
    cases, skipped = extract_cases(test_sources(sdist))
    t0 = time.perf_counter()
    strict = [_verify(c.pred, c.gold) for c in cases]
    t_strict = time.perf_counter() - t0
    lenient = [_verify(c.pred, c.gold, lenient=True) for c in cases]
    n = len(cases)
    agree = sum(g == c.expected for g, c in zip(strict, cases))
    agree_l = sum(g == c.expected for g, c in zip(lenient, cases))
    print(
        f"math-verify {version} regression suite ({sdist.name}): {n} (gold, prediction, expected) "
        f"cases from {len({c.where.split('::')[0] for c in cases})} files; "
        f"{len(skipped)} tests without such cases skipped"
    )
    print(
        f"verify_math (strict, as rewards use it): {agree}/{n} agree ({100 * agree / n:.1f}%), "
        f"{1000 * t_strict / n:.1f} ms per case"
    )
    print(
        f"verify_math(lenient=True) (evaluate.py --lenient): {agree_l}/{n} agree "
        f"({100 * agree_l / n:.1f}%)"
    )
    rows = [(c, got, policy_of(c)) for c, got in zip(cases, strict) if got != c.expected]
    by_policy: dict[str, int] = {}
    for _, _, pol in rows:
        by_policy[pol or "unexplained"] = by_policy.get(pol or "unexplained", 0) + 1
    print(
        f"disagreements (strict): {len(rows)}: "
        + ", ".join(
            f"{v} {policy_label(k)}" for k, v in sorted(by_policy.items(), key=lambda kv: -kv[1])
        )
    )
    if args.quiet:
        return
    print("\nskipped (library API tests, no gold/prediction pair):", ", ".join(skipped))
    labels = [p for p, _ in POLICIES] + sorted(
        {pol for _, _, pol in rows if pol and pol.startswith("math-verify")}
    )
    for label in labels + [None]:
        group = [(c, got) for c, got, pol in rows if pol == label]
        if not group:
            continue
        title = (
            "unexplained"
            if label is None
            else label
            if label.startswith("math-verify")
            else "policy " + label
        )
        print(f"\n### {title} ({len(group)})")
        for c, got in group:
            opts = f" options={c.options}" if c.options else ""
            print(
                f"- {c.where}: expected {int(c.expected)}, verify_math {int(got)}{opts}\n"
                f"    gold `{short(c.gold)}`\n    pred `{short(c.pred)}`"
            )


if __name__ == "__main__":
    main()
