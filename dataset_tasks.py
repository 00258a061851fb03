"""Tasks from other datasets: a local file or a HF hub dataset, read in its own schema.

`load_tasks(source, ...)` is the one entry point (`--task` of evaluate.py, grpo.py, distill.py):
"math" and "humaneval" are `data`'s own tasks; anything else is a local
.jsonl/.json/.csv/.tsv/.parquet/.arrow/.feather file (the text ones gzip'd too), a dataset
folder, or a HF dataset id, with column mapping (`prompt_field`, `answer_field`, a dotted path
inside an object too). What it reads, and where:

* the gold answer, reduced as `verify_math` reads a gold (`gold_answer`: GSM8K `#### 72` ->
  `72`, a MATH solution -> its boxed answer, a list of math -> one list answer; a column of
  acceptable answers, BIG-bench's `targets`, or a list of texts, NQ-open's: any of them,
  unless the question asks for them all, 'Name the three ...': `alternative_answers`); a row
  with no final answer to grade (a proof: `is_worked_solution`) is skipped and counted; a
  numeric answer's stated tolerance (OlympiadBench's `error`) is its `tolerance`
  (`answer_tolerance`);
* the prompt: a text column (after the text it is about, SVAMP's Body: `with_context`), or a
  row's `messages` (or ShareGPT's `conversations`) up to the last user turn
  (`conversation_prompt`, checked by `check_prompt`);
* multiple choice: the options are listed in the prompt and the gold is the letter
  (`row_choices`; one column per option: `option_columns`);
* code: the tests of each code dataset's own schema, in the sandbox's format (`code_tests`).

A row without a usable field raises `data.DataError` naming file, row and field.
"""
from __future__ import annotations

import ast
import csv
import gzip
import io
import json
import math
import random
import re
import unicodedata
from decimal import Decimal
from pathlib import Path

import cli
import mathcheck
from chat_template import ROLES, role_name, template_message
from data import DataError, humaneval_tasks, math_tasks


class MissingSplit(DataError):
    """A file that names its rows' splits (a `split` column, a .json's lists under split names)
    holds none of the split asked for: a file of training rows alone, to `held_out_tasks`."""

_THOUSANDS_RE = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def gsm8k_answer(text: str) -> str:
    """GSM8K answers end with '#### 1,234': keep what follows '####'. A number loses its
    thousands separators ('1234'); any other answer keeps its commas ('(1, 2)', '3, 500')."""
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    text = text.strip()
    return text.replace(",", "") if _THOUSANDS_RE.fullmatch(text) else text


# a number and its unit in parentheses: ASDiv's '9 (apples)' (not '3 (mod 4)': a unit is words)
_UNIT_IN_PARENS = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?)\s*\(([A-Za-z][A-Za-z .'/-]*)\)")


# a spreadsheet formula: =SUM(A1:A3), =B2*2, =1+1 (a sheet saved with its formulas)
_FORMULA = re.compile(r"=\s*(?:[A-Z][A-Z0-9.]*\(.*\)|\$?[A-Z]{1,3}\$?\d+(?:[-+*/^ ].*)?"
                      r"|[-+(]*\d[\d.]*(?:\s*[-+*/^]\s*[-+(]*\d[\d.]*\)*)+)")


# how tools write a missing cell as text, in their own spellings (pandas' astype(str) 'nan',
# '<NA>', 'NaT'; Excel's '#N/A' and its error values; R's 'NA'; SQL dumps' 'NULL', MySQL's
# '\\N'); not 'None', 'null' or 'Na', which may be an answer ('Which is prime? None', sodium)
MISSING_MARKS = {"nan", "NaN", "NAN", "-nan", "-NaN", "<NA>", "NA", "N/A", "n/a", "#N/A",
                 "#N/A N/A", "#NA", "NULL", "\\N", "NaT", "#VALUE!", "#REF!", "#DIV/0!",
                 "#NAME?", "#NUM!", "#NULL!"}


def missing_mark(text: str) -> bool:
    """Whether a text is a missing cell written out (`MISSING_MARKS`), not a value.

    >>> missing_mark(" NaN "), missing_mark("#N/A"), missing_mark("None"), missing_mark("Na")
    (True, True, False, False)
    """
    return text.strip() in MISSING_MARKS


def gold_answer(value) -> str:
    """The gold answer of a row's answer field, as one string; a ValueError says why a value is
    none.

    A string is reduced as `verify_math` reads a gold (`mathcheck.gold_answer`): GSM8K's
    '#### 1,234' -> '1234', a MATH solution -> its last `\\boxed{}`, 'The answer is 12.' -> '12'.
    An integer keeps its JSON spelling, a float is written to 15 significant digits (0.1 + 0.2
    computed in binary is 0.30000000000000004, which no answer of 0.3 equals), a decimal
    (a parquet's decimal column) as its digits ('1.50', not '1.5E+0'); true / false
    read 'True' / 'False' (yes / no to `verify_math`); a spreadsheet formula ('=1+1', whose
    value is not in the file) is a ValueError. A number with its unit in parentheses
    (ASDiv's '9 (apples)', which no reply equals) is the number and its unit: '9 apples'. A
    list is one answer that is a list (all the roots: [2, 3] -> '2, 3'), as `verify_math` reads
    a list gold; it is not a choice of acceptable answers (a column named for those, or a list
    of texts, is read as such: `alternative_answers`).

    >>> gold_answer("48 + 24 = 72.\\n#### 1,234"), gold_answer("(1, 2)"), gold_answer([2, "3"])
    ('1234', '(1, 2)', '2, 3')
    >>> gold_answer("So $x = 3$ or $x = 4$: $\\\\boxed{\\\\{3, 4\\\\}}$.")
    '\\\\{3, 4\\\\}'
    """
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("is an empty list")
        if any(isinstance(v, (list, tuple, dict)) for v in value):
            raise ValueError(f"is {json.dumps(value, default=str)[:60]}, a list of lists or "
                             "objects (write such an answer as one string: \"(1, 2), (3, 4)\")")
        return ", ".join(gold_answer(v) for v in value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"is {value}, not a finite number")
        # a float to 15 digits, as it was meant: 0.1 + 0.2 is 0.30000000000000004 in binary
        return f"{value:.15g}" if isinstance(value, float) else str(value)
    if isinstance(value, Decimal):      # a parquet's decimal column (a database export): exact
        if not value.is_finite():
            raise ValueError(f"is {value}, not a finite number")
        return format(value, "f")
    if value is None:
        raise ValueError("is null")
    if isinstance(value, str) and _FORMULA.fullmatch(value.strip()):
        raise ValueError(f"is {value.strip()!r}, a spreadsheet formula, not its value (a sheet "
                         "saved with its formulas: export its values)")
    if not isinstance(value, str):
        raise ValueError(f"is {json.dumps(value, default=str)[:60]}, a {type(value).__name__}")
    if missing_mark(value):     # a missing cell written out: 'nan' was graded as the gold
        raise ValueError(f"is {value.strip()!r}, a missing value written as text (pandas, Excel, "
                         "R and SQL exports write one so), not an answer")
    text = gsm8k_answer(mathcheck.gold_answer(value)) if value.strip() else ""
    unit = _UNIT_IN_PARENS.fullmatch(text.strip())
    text = f"{gsm8k_answer(unit[1])} {unit[2].strip()}" if unit else text  # ASDiv's
    if not text.strip():
        raise ValueError("is empty")
    return text


# prose outside math: a word of letters not part of a \\command, and the end of a sentence
_PROSE_WORD = re.compile(r"(?<![\\\w])[A-Za-z]{2,}\b")
_SENTENCE_END = re.compile(r"[.!?:;]\s+\S|\n\s*\S")
_INLINE_MATH = re.compile(r"\$\$.*?\$\$|\$.*?\$|\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)


# what NuminaMath-1.5 writes as the answer of a problem that has none (a proof) or of one whose
# answer its pipeline did not find: no reply can be graded against it
NO_ANSWER = ("proof", "notfound", "not found")


def is_worked_solution(gold: str) -> bool:
    """Whether a gold answer is a worked solution with no final answer in it (no `\\boxed{}`,
    '####' or 'answer' that `gold_answer` could reduce it to; NuminaMath's proofs): several
    sentences of prose, 15 words or more outside the math. `verify_math` compares the final
    answer with the whole paragraph, so no completion can be graded right against it.

    >>> is_worked_solution("We argue by induction. For $n = 1$ it holds; assume it for $n$. "
    ...                    "Then the sum grows by one term, so it holds for n + 1 as well.")
    True
    >>> is_worked_solution("\\text{all primes } p"), is_worked_solution("x = 3 or x = 4")
    (False, False)
    """
    prose = _INLINE_MATH.sub(" ", gold)
    return bool(_SENTENCE_END.search(prose.strip())) and len(_PROSE_WORD.findall(prose)) >= 15


FILE_TYPES = (".jsonl", ".json", ".csv", ".tsv", ".parquet", ".arrow", ".feather")
BINARY_TYPES = (".parquet", ".arrow", ".feather")       # columnar: never gzip'd as a whole
SPLIT_NAMES = ("train", "test", "validation", "valid", "dev", "eval")   # a .json's keys of rows
# a .json's key of its rows beside lists of metadata (BIG-bench's examples beside its keywords)
ROW_KEYS = ("examples", "rows", "questions", "problems", "items", "instances", "records",
            "samples")


def _json_rows(path: Path, text: str, split: str | None = None) -> list:
    """The rows of a .json file: a list of rows, an object holding them under one key ({"data":
    [rows]}, "rows", "examples", ..., next to metadata), or under each split's name ({"train":
    [rows], "test": [rows]}, also under "data": `split`'s), columns {"prompt": [...], "answer":
    [...]} (a HF dataset's columns; pandas' `to_json` default {"prompt": {"0": ...}} too), rows
    by their id ({"7": {"prompt": ...}}, pandas' orient="index"; the id their "id"), pandas'
    orient="split" {"columns": [...], "data": [[...]]}, SQuAD's articles (`_squad_rows`), or one
    row a line (what `datasets.Dataset.to_json` writes, also to a .json file). An object that
    is one row (`_one_row`) is none of these: a DataError (`_jsonl_rows` reads it as its row)."""
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":
            raise DataError(f"{path}: not valid JSON ({_json_problem(text, e)}); a .json file "
                            "holds a list of rows, or {\"data\": [rows]} (one row a line: "
                            ".jsonl)") from None
        return _jsonl_rows(path, text)
    if is_conversation(rows):       # one conversation, not a row per message
        return [rows]
    inner = rows.get("data") if isinstance(rows, dict) else None
    if isinstance(inner, dict) and inner and all(
            str(k).lower() in SPLIT_NAMES and isinstance(v, list) for k, v in inner.items()):
        rows = inner                            # {"data": {"train": [rows], "test": [rows]}}
    lists = {k: v for k, v in rows.items() if isinstance(v, list)} if isinstance(rows, dict) else {}
    held = {k: v for k, v in lists.items() if v and all(isinstance(r, dict) for r in v)}
    if len(held) < len(lists):      # other lists too: columns, or metadata beside named rows
        held = {k: v for k, v in held.items() if k in ROW_KEYS + SPLIT_NAMES}
    if isinstance(rows, dict) and isinstance(rows.get("columns"), list) and isinstance(
            rows.get("data"), list) and all(isinstance(r, list) for r in rows["data"]):
        rows = [dict(zip(rows["columns"], r)) for r in rows["data"]]   # pandas' orient="split"
    elif isinstance(rows, dict) and isinstance(rows.get("data"), (list, dict)):
        rows = rows["data"]                     # {"data": [rows]}, or {"data": {columns}}
    elif isinstance(rows, dict) and "features" in rows and isinstance(rows.get("rows"), list):
        # the hub's dataset viewer API: {"features": [...], "rows": [{"row_idx", "row"}, ...]}
        rows = [r["row"] if isinstance(r, dict) and "row" in r else r for r in rows["rows"]]
    elif held and not _one_row(rows):    # lists of rows: no column of other values, or named rows
        named = len(held) > 1 or next(iter(held)).lower() in SPLIT_NAMES   # {"train": [rows]}
        split = next((k for k in held if split and k.lower() == split.lower()), split)  # "Train"
        if named and split is not None and split not in held:
            raise MissingSplit(f"{path}: holds rows under {', '.join(map(repr, held))}, and none "
                            f"is the split {split!r}; ask for one of them as the split "
                            "(evaluate.py --split; training reads 'train'), or write the one to "
                            "use to its own file")
        rows = held[split] if split in held else next(iter(held.values()))
    if isinstance(rows, dict) and rows and not _one_row(rows):
        cols = list(rows.values())
        by_index = all(isinstance(c, dict) and all(str(k).isdigit() for k in c) for c in cols)
        if all(isinstance(c, dict) for c in cols) and not by_index:
            # rows by their id ({"7": {"prompt": ...}}: pandas' orient="index", a benchmark
            # keyed by problem id); they were read as columns, each row a column's values
            rows = [{"id": k, **c} if "id" not in c else c for k, c in rows.items()]
        elif by_index and len({tuple(c) for c in cols}) == 1:
            cols = [list(c.values()) for c in cols]              # pandas: {"prompt": {"0": ...}}
        if all(isinstance(c, list) for c in cols) and len({len(c) for c in cols}) == 1:
            rows = [dict(zip(rows, values)) for values in zip(*cols)] or None
    if isinstance(rows, list) and rows and all(
            isinstance(r, dict) and isinstance(r.get("paragraphs"), list) for r in rows):
        rows = _squad_rows(path, rows)          # SQuAD's own files: articles of paragraphs
    if isinstance(rows, dict) and _one_row(rows):
        raise DataError(f"{path}: holds one row ({', '.join(list(rows)[:4])}); put it in a list "
                        "([{...}]) or write it to a .jsonl file")
    if not isinstance(rows, list):
        raise DataError(f"{path}: a .json file holds a list of rows, or {{\"data\": [rows]}}, or "
                        "columns of equal length {\"prompt\": [...], \"answer\": [...]}")
    return rows


def _squad_rows(path: Path, articles: list) -> list:
    """The questions of SQuAD's own JSON files ({"version", "data": [{"title", "paragraphs":
    [{"context", "qas": [{"id", "question", "answers": [{"text", ...}]}]}]}]}, as SQuAD 1.1
    and 2.0 ship them, and datasets built on them), one row each with its paragraph as its
    `context` and its article's `title`: they were read as one row an article, with no
    question. SQuAD 2.0's unanswerable questions (`is_impossible`: no answer to grade) are
    skipped, and counted.

    >>> row = _squad_rows(Path("dev.json"), [{"title": "Paris", "paragraphs": [{"context":
    ...     "Paris is in France.", "qas": [{"id": "q1", "question": "Where?"}]}]}])[0]
    >>> row["context"], row["question"]
    ('Paris is in France.', 'Where?')
    """
    rows, impossible = [], 0
    for article in articles:
        for paragraph in article["paragraphs"]:
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not (isinstance(qas, list) and isinstance(paragraph.get("context"), str)):
                raise DataError(f"{path}: a paragraph of {article.get('title', 'an article')!r} "
                                "is not {\"context\": text, \"qas\": [questions]}, as SQuAD's "
                                "files hold them; fix it, or write one row a question (.jsonl)")
            for qa in qas:
                if isinstance(qa, dict) and qa.get("is_impossible") is True:
                    impossible += 1
                    continue
                rows.append({"title": article.get("title"), "context": paragraph["context"],
                             **(qa if isinstance(qa, dict) else {"question": qa})})
    if impossible:
        print(f"[data] {path}: {impossible} unanswerable questions (SQuAD 2.0's is_impossible)"
              " skipped: no answer grades a reply to them")
    return rows


def _one_row(value: dict) -> bool:
    """Whether a JSON object is one row, not rows held under a key or in columns: it has a
    prompt column of text, or lists that are conversations (turns with a 'role' or 'from': a
    `messages` column, ShareGPT's, Gemini's `contents`). A row's tests, options or turns were
    read as the file's rows.

    >>> _one_row({"prompt": "Add.", "tests": [{"assert": "assert f() == 1"}]})
    True
    >>> _one_row({"messages": [{"role": "user", "content": "Hi"}]}), _one_row({"data": [{}]})
    (True, False)
    """
    turns = [v for v in value.values() if isinstance(v, list) and v
             and all(isinstance(m, dict) and ("role" in m or "from" in m) for m in v)]
    return bool(turns) or any(isinstance(value.get(k), str) for k in PROMPT_COLUMNS
                              if k != "description")      # a .json's metadata has one


def _jsonl_rows(path: Path, text: str) -> list:
    """The rows of a .jsonl file, one a line; a file that is one JSON document instead (a list
    of rows on one line, or pretty-printed over many) is read as a .json file (`_json_rows`)."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return _json_rows(path, text)
    if isinstance(whole, dict) and "\n" in text.strip():     # pretty-printed: rows, or a row
        try:
            return _json_rows(path, text)
        except DataError:
            return [whole]
    rows = []
    # "\n" ends a row, not every line break splitlines() knows: U+2028, U+2029 and U+0085 stand
    # unescaped inside a row's strings (json.dumps(ensure_ascii=False) writes them so)
    for i, line in enumerate(text.split("\n")):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                stream = _json_stream(text)       # objects pretty-printed one after another (jq)
                if stream is None:
                    raise DataError(f"{path}: line {i + 1} is not valid JSON "
                                    f"({_json_problem(line, e)}); a .jsonl file holds one JSON "
                                    "object a line") from None
                return stream
    return rows


def _json_problem(doc: str, e: json.JSONDecodeError) -> str:
    """What a JSON error is, named with its fix where JSON's parser does not say: a trailing
    comma, or a comment (JSON has neither; JSON5 and JSONC, which some tools write, have both).

    >>> _json_problem('{"a": 1,}', json.JSONDecodeError("Expecting property name", '{"a": 1,}', 8))
    "a trailing comma before '}' at column 9: JSON has none, drop it"
    """
    rest = doc[e.pos:]
    at = f"line {e.lineno} column {e.colno}" if e.lineno > 1 else f"column {e.colno}"
    if doc[:e.pos].rstrip().endswith(",") and rest[:1] in ("]", "}"):
        return f"a trailing comma before {rest[0]!r} at {at}: JSON has none, drop it"
    if rest.startswith(("//", "/*", "#")):
        return f"a comment at {at}: JSON has none, drop it"
    return str(e)


def _json_stream(text: str) -> list | None:
    """The JSON values written one after another in `text` (`jq`'s output), None if it is not
    such a stream."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return None
        values.append(value)


def _csv_rows(path: Path, text: str) -> list:
    """The rows of a .csv (.tsv) file with a header line; every value is a string. A .csv's
    separator is the one its header line uses: a comma, else a semicolon (what Excel writes
    where the comma is the decimal mark), a tab or a bar. A value that opens a quote it does not
    close at its end ('"Hi" she said.') is read as written in a .tsv (a raw one, whose quotes are
    text) and named in a .csv; it lost its quotes, or ran on to the next rows. Lines may end in
    LF, CRLF or CR alone (Excel for the old Mac); a CR inside a value not quoted is named. A
    value may be of any length (csv's own limit is 128 KiB).

    A semicolon file's cell that is one number with a decimal comma ('2,5', as Excel writes 2.5
    where the comma is the decimal mark, the reason it separates by semicolons) is that number
    with a point: '2,5' was graded as the list 2, 5, and '\\boxed{2.5}' wrong. Text around it
    ('1,5 + 1?') is kept as written, and so is '1,000' (a thousand, or 1: `_DECIMAL_COMMA`).

    >>> [dict(r) for r in _csv_rows(Path("de.csv"), "prompt;answer\\n1,5 + 1?;2,5\\n")]
    [{'prompt': '1,5 + 1?', 'answer': '2.5'}]
    """
    if "\r" in text and "\n" not in text:     # lines ended by CR alone (Excel for the old Mac)
        text = text.replace("\r", "\n")
    # csv refuses a value over 128 KiB ('field larger than field limit'): a long reasoning
    # trace, or a code problem's tests as JSON text, is one
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    header = text.split("\n", 1)[0]
    sep = "\t" if file_type(path) == ".tsv" else next(
        (c for c in (",", ";", "\t", "|") if c in header), ",")
    def read(quoting):
        reader = csv.DictReader(io.StringIO(text), delimiter=sep, quoting=quoting, strict=True)
        try:
            if reader.fieldnames:       # "prompt, answer": the column is 'answer', not ' answer'
                reader.fieldnames = [name.strip() for name in reader.fieldnames]
            return list(reader)
        except csv.Error as e:
            if sep == "\t" and quoting != csv.QUOTE_NONE:   # a raw .tsv: its quotes are text
                return read(csv.QUOTE_NONE)
            why = ("a line break, CR, inside a value that is not quoted); quote the value, or "
                   "end every line with LF or CRLF" if "new-line" in str(e) else
                   "a quote opened in a value that goes on after it); quote the whole value, "
                   "its quotes doubled: \"\"\"Hi\"\" she said.\"")
            raise DataError(f"{path}: line {reader.reader.line_num}: {e} ({why}") from None
    rows = read(csv.QUOTE_MINIMAL)
    names = [n.strip() for n in next(csv.reader(io.StringIO(header), delimiter=sep), [])]
    twice = next((n for n in names if n and names.count(n) > 1), None)
    if twice is not None:       # csv keeps the last one's values: the other column was lost
        raise DataError(f"{path}: the header line names the column {twice!r} twice; "
                        "rename one (a file with no header line: add one, e.g. prompt,answer)")
    if not rows and text.strip():
        raise DataError(f"{path}: the file holds no rows, only the header line (a .csv's first "
                        "line names its columns: a file with no header line needs one, e.g. "
                        "prompt,answer)")
    for i, row in enumerate(rows):
        if None in row or None in row.values():
            more = "more" if None in row else "fewer"
            raise DataError(f"{path}: row {i} has {more} cells than the header line; quote a "
                            f"value that holds the separator {sep!r} (\"1{sep}000\")")
        if sep == ";":      # the comma is the decimal mark: '2,5' is 2.5
            row.update({k: v.replace(",", ".") for k, v in row.items()
                        if _DECIMAL_COMMA.fullmatch(v.strip())})
    return rows


# one number, its decimal mark a comma: not 3 digits after it ('1,000' may be a thousand, and
# is read so), unless it starts with 0 ('0,125')
_DECIMAL_COMMA = re.compile(r"[-+]?(?:\d+,(?:\d{1,2}|\d{4,})|0,\d+)")


# JSON Lines under its other names (ndjson.org's, jsonlines.org's): one JSON row a line
JSONL_SUFFIXES = (".ndjson", ".jsonlines")


def file_type(path: Path) -> str:
    """A data file's type: its suffix, the one before '.gz' for a gzip'd file ('.jsonl' for
    'rows.jsonl.gz'); JSON Lines under another name is '.jsonl' (`JSONL_SUFFIXES`).

    >>> file_type(Path("rows.JSONL.gz")), file_type(Path("rows.csv")), file_type(Path("a.ndjson"))
    ('.jsonl', '.csv', '.jsonl')
    """
    suffix = path.suffix.lower()
    suffix = Path(path.stem).suffix.lower() if suffix == ".gz" else suffix
    return ".jsonl" if suffix in JSONL_SUFFIXES else suffix


def read_text(path: Path) -> str:
    """A data file's text: UTF-8, with or without the byte-order mark that Windows tools write
    (it was 'row 0 is not valid JSON'), or UTF-16 with its byte-order mark (Excel's "Unicode
    text", PowerShell's files: it was 'not UTF-8 ... iconv -f latin1'); other bytes are a
    DataError naming the line and the fix (it was a bare UnicodeDecodeError, naming no file)."""
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:        # gzip.BadGzipFile is an OSError
            raise DataError(f"{path}: not a readable gzip file ({e}); gzip the file again, or "
                            "pass it uncompressed") from None
    try:
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):   # UTF-16 (Excel's "Unicode text", PowerShell)
            return raw.decode("utf-16")
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise DataError(f"{path}: line {line} is not UTF-8 text (byte {raw[e.start:e.start + 1]!r}"
                        f" at offset {e.start}); save the file as UTF-8, e.g. iconv -f latin1 -t "
                        "utf-8 FILE > NEW") from None


# files that hold a data file but are none: how to get it out
COMPRESSED = {".zst": "zstd -d FILE", ".zstd": "zstd -d FILE", ".bz2": "bunzip2 FILE",
              ".xz": "unxz FILE", ".lz4": "lz4 -d FILE", ".zip": "unzip FILE",
              ".7z": "7z x FILE", ".tar": "tar xf FILE", ".tgz": "tar xzf FILE"}
SPREADSHEETS = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")


def rows_from_file(path: Path, split: str | None = None) -> list[dict]:
    """The rows of a .jsonl, .json (`_json_rows`: `split`'s where it holds several lists of
    rows), .csv / .tsv (a header line), .parquet or Arrow file (.arrow: a shard of `datasets`'
    save_to_disk or cache, .feather: pandas' to_feather), the text ones UTF-8 with or without a
    byte order mark, gzip'd or not (.jsonl.gz); a bad row or file is a DataError that names the
    file and the row. A row that is a conversation alone (Open-Reasoner-Zero's; a file, or a
    .jsonl of one line, that is one conversation: `is_conversation`) is read by
    `conversation_row`. Where every row names its split (a `split` column), those of `split`."""
    suffix = file_type(path)
    if path.is_dir():       # was 'no such file': a dataset saved as a folder of shards, say
        inside = sorted(p for p in (*path.glob("*"), *path.glob("*/*"))
                        if file_type(p) in FILE_TYPES and p.is_file())
        raise DataError(f"{path}: a folder, not a file; pass one data file"
                        + (f" (it holds {len(inside)}, e.g. {inside[0]})" if inside else
                           f" ({', '.join(FILE_TYPES)}; it holds none)"))
    if not path.exists():
        cli.check_links(path, "the data file")    # a link to nothing, or in a loop
        raise DataError(f"{path}: no such file; pass a .jsonl, .json, .csv or .parquet file")
    if path.suffix.lower() in COMPRESSED:     # was 'unsupported file type': what to do with it
        raise DataError(f"{path}: a {path.suffix} archive or compressed file, which is not read "
                        f"as it is (gzip is); decompress it ({COMPRESSED[path.suffix.lower()]}) "
                        "and pass the .jsonl, .json, .csv or .parquet file inside")
    if path.suffix.lower() in SPREADSHEETS:
        raise DataError(f"{path}: a spreadsheet ({path.suffix}), which is not read; save its "
                        "sheet as .csv (CSV UTF-8, the header line naming the columns) and pass "
                        "that")
    if suffix not in FILE_TYPES or suffix in BINARY_TYPES and path.suffix.lower() == ".gz":
        raise DataError(f"{path}: unsupported file type {path.suffix!r}; use "
                        f"{', '.join(FILE_TYPES[:-1])} or {FILE_TYPES[-1]} (the text ones "
                        "gzip'd too: .jsonl.gz)")
    if suffix in BINARY_TYPES:
        rows = _arrow_rows(path)
    else:
        text = read_text(path)
        if suffix == ".json":
            rows = _json_rows(path, text, split)
        else:
            rows = (_jsonl_rows if suffix == ".jsonl" else _csv_rows)(path, text)
    if not rows:
        raise DataError(f"{path}: the file holds no rows")
    rows = [conversation_row(row) for row in rows]
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(f"{path}: row {i} is {json.dumps(row, default=str)[:60]}, not an "
                            f"object of fields (e.g. {{\"prompt\": ..., \"answer\": ...}})")
    named = [row.get("split") for row in rows]
    unnamed = [j for j, x in enumerate(named) if not (isinstance(x, str) and x.strip())]
    if split is not None and len(unnamed) < len(rows) and any(
            "split" in rows[j] and named[j] in (None, "") or isinstance(named[j], str)
            for j in unnamed):
        # a column of splits (a table's: CSV, parquet) empty in some rows: a row of none was
        # read for every split (the test rows trained on, the training rows evaluated as held
        # out); a row with no such key at all reads the file as one of no splits
        j = next(j for j in unnamed if "split" in rows[j] and named[j] in (None, "")
                 or isinstance(named[j], str))
        names = sorted({x for k, x in enumerate(named) if k not in unnamed})
        raise DataError(f"{path}: row {j}'s 'split' is {json.dumps(named[j], default=str)[:30]}, "
                        "while other rows name theirs ("
                        f"{', '.join(names)[:60]}"
                        f"); give every row its split, or drop the column to use every row")
    if split is not None and all(isinstance(x, str) and x for x in named):
        # a dataset's splits in one file, each row's in its 'split' column: train on the train
        # rows, evaluate on the test rows (all of them were both)
        rows = [row for row in rows if row["split"].lower() == split.lower()]   # 'TRAIN' too
        if not rows:
            raise MissingSplit(f"{path}: no row is of split {split!r} (its 'split' column holds "
                            f"{', '.join(sorted(set(named)))}); ask for one of them (evaluate.py "
                            "--split; training reads 'train'), or drop the column to use every "
                            "row")
    return rows


def _arrow_rows(path: Path) -> list:
    """The rows of a .parquet file, or of an Arrow file: its random-access form (.feather,
    pyarrow's and pandas' writers) or its stream form (what `datasets` writes: a save_to_disk
    shard, a cache file). Read by pyarrow, a table's nested columns as dicts and lists
    (`datasets`, which read parquet here before, took about 1 s to import and 0.4 s to read
    10,000 rows that pyarrow reads in 0.05 s, and wrote a copy of the file to its cache)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    kind = "parquet" if file_type(path) == ".parquet" else "Arrow"
    try:
        if kind == "parquet":
            table = pq.read_table(path)
        else:
            try:
                table = pa.ipc.open_file(path).read_all()
            except pa.ArrowInvalid:
                table = pa.ipc.open_stream(path).read_all()
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"{path}: not a readable {kind} file ({type(e).__name__}: "
                        f"{str(e).splitlines()[0][:100] if str(e) else ''}); write the rows "
                        "again with pyarrow, pandas or datasets, or as .jsonl") from None
    return table.to_pylist()


def conversation_row(row):
    """A row written as its conversation alone, as Open-Reasoner-Zero's data is ([{"from":
    "human", "value": ...}, {"from": "assistant", "ground_truth": {"value": "4"}}]), as
    {"messages": ..., "answer": ...} (its last turn's ground truth, where it holds one); any
    other row as it is.

    >>> conversation_row([{"from": "human", "value": "2 + 2?"},
    ...                   {"from": "assistant", "ground_truth": {"value": "4"}}])["answer"]
    '4'
    """
    if not is_conversation(row):
        return row
    truth = row[-1].get("ground_truth")
    answer = truth.get("value") if isinstance(truth, dict) else truth
    return {"messages": row, **({"answer": answer} if answer is not None else {})}


# a message's role under the keys of `conversation_row`'s turns (any case: "Role", "FROM")
ROLE_COLUMNS = ("role", "from")


# the keys of a message that is a node of an OpenAssistant tree, which a flat export writes one
# a row: such messages are not one conversation (`conversations` names the fix)
TREE_KEYS = ("message_tree_id", "parent_id")


def is_conversation(value) -> bool:
    """Whether a value is one conversation: a list of messages, each with a role (`ROLE_COLUMNS`,
    any case), none a node of a message tree (`TREE_KEYS`). A file, or a line of a .jsonl, that is
    one is one row, not a row per message.

    >>> is_conversation([{"Role": "user", "Content": "Hi"}]), is_conversation([{"prompt": "Hi"}])
    (True, False)
    """
    return isinstance(value, list) and bool(value) and all(
        isinstance(m, dict) and any(isinstance(k, str) and k.lower() in ROLE_COLUMNS for k in m)
        and not any(k in m for k in TREE_KEYS) for m in value)


def _json_chat(text: str) -> list | None:
    """The messages of a conversation written as JSON text, None for any other text."""
    if not (text.lstrip().startswith("[") and text.rstrip().endswith("]")):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    chat = (isinstance(value, list) and value
            and all(isinstance(m, dict) and "role" in m for m in value))
    return value if chat else None


def check_prompt(value):
    """A row's prompt as given, if it is one: text, or a conversation as TRL's conversational
    datasets hold it ([{"role": "system", ...}, {"role": "user", "content": ...}], ending with the
    user turn the model answers), its messages read as the template reads them (roles under other
    names, OpenAI's text parts: `chat_template.template_message`); a ValueError says what it is
    instead.

    >>> check_prompt([{"role": "user", "content": "1 + 1?"}, {"role": "assistant", "content": ""}])
    Traceback (most recent call last):
    ValueError: has a last turn of role 'assistant'; end it with the user turn to answer

    A conversation written as JSON text (a CSV's or parquet's string column: '[{"role": "user",
    ...}]') is read as its messages; other text that looks like JSON stays text.

    >>> check_prompt('[{"role": "user", "content": "1 + 1?"}]')
    [{'role': 'user', 'content': '1 + 1?'}]
    """
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("is empty")
        if missing_mark(value):     # 'nan': a missing cell, put to the model as its question
            raise ValueError(f"is {value.strip()!r}, a missing value written as text (pandas, "
                             "Excel, R and SQL exports write one so), not a prompt; give the "
                             "row its prompt, or drop the row")
        chat = _json_chat(value)
        return value if chat is None else check_prompt(chat)
    if not isinstance(value, list) or not value:
        raise ValueError(f"is {json.dumps(value, default=str)[:60]}, not text or a list of chat "
                         "messages [{\"role\": \"user\", \"content\": ...}]")
    messages = [template_message(sharegpt_message(m), f"message {j}")
                for j, m in enumerate(value)]
    for j, m in enumerate(messages):
        if not (isinstance(m, dict) and m.get("role") in ROLES
                and isinstance(m.get("content"), str)):
            raise ValueError(f"message {j} is {json.dumps(value[j], default=str)[:60]}, not "
                             f"{{\"role\": one of {', '.join(ROLES)}, \"content\": text}}")
    if messages[-1]["role"] != "user":
        raise ValueError(f"has a last turn of role {messages[-1]['role']!r}; end it with the "
                         "user turn to answer")
    return messages


# a column of the text that a question is about, kept apart from it: SVAMP's and ASDiv's Body,
# DROP's and BoolQ's passage, SQuAD's, SIQA's and LogiQA's context, RACE's article, CoQA's story,
# MuSiQue's paragraphs (titled paragraphs: `context_text`)
CONTEXT_COLUMNS = ("body", "passage", "context", "article", "story", "paragraph", "paragraphs")


def context_text(value) -> str | None:
    """A question's context as text: text as it is; paragraphs, a list of texts (PubMedQA's
    {"contexts": [...]} too), one after another; titled paragraphs, as multi-hop datasets keep
    them, each under its title: HotpotQA's {"title": [...], "sentences": [[...], ...]} (its
    original files' and 2WikiMultihopQA's [[title, [sentences]], ...]), MuSiQue's [{"title",
    "paragraph_text"}, ...]. None for a value of another form. The model was asked the question
    without them (only text was read).

    >>> print(context_text({"title": ["Ada"], "sentences": [["Ada was born", " in 1815."]]}))
    Ada: Ada was born in 1815.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("contexts"), list):   # PubMedQA's
        value = value["contexts"]
    if isinstance(value, list) and value and all(isinstance(p, str) for p in value):
        return "\n\n".join(p.strip() for p in value)
    if isinstance(value, dict) and isinstance(value.get("title"), list) and isinstance(
            value.get("sentences"), list):
        value = list(zip(value["title"], value["sentences"]))
    if isinstance(value, list) and value and all(isinstance(p, dict) for p in value):
        key = next((k for k in ("paragraph_text", "text", "content") if all(
            isinstance(p.get(k), str) for p in value)), None)
        value = [(p.get("title", ""), p[key]) for p in value] if key else None
    if not (isinstance(value, list) and value and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str)
            for p in value)):
        return None
    body = [(title, " ".join(str(x).strip() for x in text) if isinstance(text, list)
             else str(text)) for title, text in value]
    return "\n\n".join(f"{title}: {text.strip()}" if title else text.strip()
                        for title, text in body)


def with_context(row: dict, field: str, prompt):
    """A question read from a text column with the text it is about (`CONTEXT_COLUMNS`, any
    case) put before it: the model was asked SVAMP's 'How many are left?' without its Body.
    The prompt as it is where the row has no such text, reads its prompt from it, or the prompt
    holds it already (a conversation is as written). An Alpaca row's `instruction` is followed
    by its `input`, the text it is to act on, as Alpaca's template puts them.

    >>> with_context({"Body": "Jack had 8 pens.", "Question": "He gave 3 away. How many are "
    ...               "left?"}, "Question", "He gave 3 away. How many are left?")
    'Jack had 8 pens.\\nHe gave 3 away. How many are left?'
    >>> with_context({"instruction": "Add them.", "input": "2 and 3"}, "instruction", "Add them.")
    'Add them.\\n\\n2 and 3'
    """
    if not isinstance(prompt, str):
        return prompt
    given = row.get("input")
    if field == "instruction" and isinstance(given, str) and given.strip() and (
            given.strip() not in prompt):       # Alpaca's: 'Summarize this.' and the text
        return f"{prompt}\n\n{given.strip()}"
    by_case = {str(k).lower(): k for k in row}
    for name in CONTEXT_COLUMNS:
        text = context_text(row.get(by_case[name])) if name in by_case else None
        if by_case.get(name) != field and isinstance(text, str) and text.strip() and (
                text.strip() not in prompt):
            return f"{text.strip()}\n{prompt}"
    return prompt


# what COPA's `question` asks about its `premise`, in words (SuperGLUE's own prompt)
PREMISE_QUESTIONS = {"cause": "What was the cause of this?",
                     "effect": "What happened as a result?"}


def premise_question(row: dict) -> str | None:
    """A COPA row's question: its `premise`, then what its `question` ("cause" or "effect")
    asks about it; None for a row of another schema. The model was asked 'cause' alone, or
    refused a missing prompt column.

    >>> premise_question({"premise": "The man broke his toe.", "question": "cause"})
    'The man broke his toe. What was the cause of this?'
    """
    premise, asked = row.get("premise"), row.get("question")
    if not (isinstance(premise, str) and premise.strip() and isinstance(asked, str)
            and asked.strip().lower() in PREMISE_QUESTIONS):
        return None
    return f"{premise.strip()} {PREMISE_QUESTIONS[asked.strip().lower()]}"


# columns of a solved conversation, read up to its last user turn (`conversation_prompt`):
# OpenR1's messages, ShareGPT's conversations
CONVERSATION_COLUMNS = ("messages", "conversations")


def sharegpt_message(m):
    """A ShareGPT message {"from": "human", "value": ...} as {"role", "content"} (the template
    reads the role's name: `chat_template.role_name`); any other message as it is.

    >>> sharegpt_message({"from": "human", "value": "1 + 1?"})
    {'role': 'human', 'content': '1 + 1?'}
    """
    if not (isinstance(m, dict) and "from" in m and "value" in m and "role" not in m):
        return m
    rest = {k: v for k, v in m.items() if k not in ("from", "value")}
    return {"role": m["from"], "content": m["value"], **rest}


def conversation_prompt(messages):
    """The prompt of a solved conversation (a `messages` column, as OpenR1's rows hold one next
    to their `answer`): its turns up to the last user query, the reply after it dropped; a lone
    user turn is the question as text, so the prompt style asks for the `\\boxed{}` answer as
    for a question column (`check_prompt` reads the turns).

    >>> conversation_prompt([{"role": "user", "content": "1 + 1?"},
    ...                      {"role": "assistant", "content": "2"}])
    '1 + 1?'
    """
    messages = [sharegpt_message(m) for m in messages] if isinstance(messages, list) else messages
    roles = [role_name(m.get("role")) if isinstance(m, dict) else None
             for m in (messages if isinstance(messages, list) else [])]
    if "user" not in roles:
        raise ValueError(f"is {json.dumps(messages, default=str)[:60]}, a conversation with no "
                         "user turn to answer")
    prompt = check_prompt(messages[:len(roles) - roles[::-1].index("user")])
    return prompt[0]["content"] if len(prompt) == 1 else prompt


PROMPT_COLUMNS = ("question", "problem", "prompt", "query", "instruction", "input", "text",
                  "description", "question_content",      # MBPP, CodeContests, LiveCodeBench
                  "question_stem", "ctx",                 # OpenBookQA, HellaSwag
                  "inputs")                               # BIG-bench
ANSWER_COLUMNS = ("answer", "solution", "final_answer", "target", "output", "label", "gold",
                  "answerKey", "correct",                  # ARC and CommonsenseQA, AQuA-RAT
                  "targets", "answers",          # BIG-bench, WebQuestions and SQuAD
                  "ground_truth")                # open-instruct's RLVR data


def _likely_column(row: dict, field: str, usual: tuple[str, ...]) -> str:
    """The row's column that `field` most likely meant ('Question' for 'question'), else the
    first usual name of such a column that it has (MATH: 'problem', 'solution'), else one whose
    name has one of those as a word ('expected_answer', 'problem_text'; not an id), else NAME.

    >>> _likely_column({"problem_id": 3, "expected_answer": "7"}, "answer", ANSWER_COLUMNS)
    'expected_answer'
    """
    by_case = {str(k).lower(): k for k in row}
    for name in (field, *usual):
        if name.lower() in by_case:
            return str(by_case[name.lower()])
    for name in (field, *usual):
        for low, k in by_case.items():
            parts = re.split(r"[_\W]+", low)       # a word of the name: not 'outputs' for output
            if name.lower() in parts and parts[-1] not in ("id", "ids"):
                return str(k)
    return "NAME"


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _header_hint(where: str, row: dict) -> str:
    """For a missing column's error: where a .csv's or .tsv's column names read as values (a
    number, a sentence: the file has no header line, as MMLU's own CSV files have none), the
    fix, a header line; "" otherwise.

    >>> _header_hint("test.csv", {"What is 2 + 2?": "Name 3 + 1.", "4": "4"})[:40]
    ' Its first line reads as a row of values'
    """
    if file_type(Path(where)) not in (".csv", ".tsv"):
        return ""
    names = [str(k).strip() for k in row]
    if not any(_NUMBER.fullmatch(n) or len(n.split()) >= 4 for n in names):
        return ""
    return (" Its first line reads as a row of values, not column names: add a header line "
            "naming the columns (e.g. question,A,B,C,D,answer)")


def _json_text(value, column: str):
    """A column that datasets ship as JSON text (APPS' `input_output`), decoded; a value that is
    already decoded (a dict, a list) is kept."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise ValueError(f"{column!r} is not valid JSON ({e})") from None


def _pickled_text(value: str):
    """LiveCodeBench's private tests: base64 of zlib of a pickle of one JSON string. The pickle
    is read op by op (`pickletools`), never unpickled (unpickling a file runs its code); None if
    it holds anything but one string."""
    import base64
    import pickletools
    import zlib
    try:
        ops = list(pickletools.genops(zlib.decompress(base64.b64decode(value))))
    except Exception:  # noqa: BLE001 - binascii, zlib and pickletools each raise their own
        return None
    texts = [arg for op, arg, _ in ops if isinstance(arg, str) and "UNICODE" in op.name]
    plain = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP",
             "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}   # any protocol
    return texts[0] if len(texts) == 1 and all(op.name in plain for op, _, _ in ops) else None


def _io_tests(spec, column: str) -> list[dict]:
    """APPS' and TACO's `input_output` ({"inputs": [...], "outputs": [...], "fn_name"?}) as
    sandbox tests: stdin/stdout, or calls of fn_name. A call's expected value that APPS wraps in
    a list of one ([[3], [6]] for 3 and 6: its checker accepts either) is unwrapped."""
    spec = _json_text(spec, column)
    if not (isinstance(spec, dict) and isinstance(spec.get("inputs"), list)
            and isinstance(spec.get("outputs"), list)
            and len(spec["inputs"]) == len(spec["outputs"])):
        raise ValueError(f"{column!r} is not {{\"inputs\": [...], \"outputs\": [...]}} of equal "
                         "length")
    ins, outs, fn = spec["inputs"], spec["outputs"], spec.get("fn_name")
    if fn:
        if all(isinstance(o, list) and len(o) == 1 for o in outs):
            outs = [o[0] for o in outs]
        return [{"fn_name": fn, "args": a if isinstance(a, list) else [a], "expected": o}
                for a, o in zip(ins, outs)]
    return [{"input": _lines_text(a), "output": _lines_text(o)} for a, o in zip(ins, outs)]


def _lines_text(value) -> str:
    """A stdin/stdout case's input or output as one text: a list is its lines (["1 2", "3 4"],
    as APPS and many code datasets write a case), joined by newlines.

    >>> _lines_text(["1 2", 3]), _lines_text("1 2\\n")
    ('1 2\\n3', '1 2\\n')
    """
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


# a stdin/stdout case's keys under the names code datasets give them ('stdin'/'stdout',
# 'expected_output', ...), any case: the sandbox's 'input' and 'output'
CASE_KEYS = {"input": "input", "output": "output", "stdin": "input", "input_data": "input",
             "stdout": "output",
             "expected_output": "output", "expected_stdout": "output", "output_data": "output",
             "expected": "output"}


def _case_keys(test):
    """A test as the sandbox names its parts: an assert statement given as text ("assert f(1)
    == 2", a list of them as many datasets ship their tests) as {"assert": ...}; a stdin/stdout
    case's keys under other names (`CASE_KEYS`, any case: {"stdin", "stdout"}, {"input",
    "expected_output"}) as "input" and "output" (a call's "expected" stays its own); any other
    test as it is. They were refused as 'not a list of tests', or read with no output.

    >>> _case_keys("assert f(1) == 2"), _case_keys({"Stdin": "2", "Expected_Output": "4"})
    ({'assert': 'assert f(1) == 2'}, {'input': '2', 'output': '4'})
    """
    if isinstance(test, str) and re.search(r"^\s*assert\b", test, re.MULTILINE):
        return {"assert": test}
    if not isinstance(test, dict) or test.get("fn_name") is not None or any(
            k in test for k in ("assert", "output")):
        return test
    renamed = {CASE_KEYS.get(str(k).lower(), k): v for k, v in test.items()}
    ok = "input" in renamed and "output" in renamed and len(renamed) == len(test)
    return renamed if ok else test


def _stdio_lines(test):
    """A stdin/stdout test whose input or output is a list of lines, as one text each
    (`_lines_text`); any other test (or a list of other than plain values, which
    `sandbox.check_tests` names) as it is."""
    if not isinstance(test, dict) or test.get("assert") is not None or test.get(
            "fn_name") is not None:
        return test
    return {**test, **{k: _lines_text(v) for k, v in test.items() if k in ("input", "output")
                       and isinstance(v, list) and all(isinstance(x, (str, int, float))
                                                       for x in v)}}


def _lcb_tests(cases: list, column: str, func_name: str | None) -> list[dict]:
    """LiveCodeBench's test cases: "stdin" ones as stdin/stdout tests, "functional" ones (one
    JSON argument a line) as calls of the function its `metadata` names."""
    if not (isinstance(cases, list) and all(
            isinstance(c, dict) and isinstance(c.get("input"), str)
            and isinstance(c.get("output"), str) for c in cases)):
        raise ValueError(f"{column!r} is not a list of {{\"input\": text, \"output\": text, "
                         "\"testtype\": ...}")
    tests = []
    for c in cases:
        if c.get("testtype") == "functional":
            if not func_name:
                raise ValueError(f"{column!r} has functional tests, but 'metadata' names no "
                                 "func_name to call")
            try:
                tests.append({"fn_name": func_name, "expected": json.loads(c["output"]), "args": [
                    json.loads(x) for x in c["input"].splitlines() if x.strip()]})
            except json.JSONDecodeError as e:
                raise ValueError(f"{column!r} has a functional test whose input or output is "
                                 f"not JSON, one value a line ({e}: {e.doc[:40]!r})") from None
        else:
            tests.append({"input": c["input"], "output": c["output"]})
    return tests


# the parts of a problem statement that open-r1's codeforces rows keep beside its `description`
STATEMENT_PARTS = (("input_format", "Input"), ("output_format", "Output"),
                   ("interaction_format", "Interaction"), ("examples", "Examples"),
                   ("note", "Note"))


def codeforces_statement(row: dict, prompt: str) -> str:
    """What an open-r1 codeforces row's statement adds to its `description`: each part of
    `STATEMENT_PARTS` under its heading (the examples as input and output blocks) that the
    prompt lacks, and the time and memory limits.

    >>> codeforces_statement({"input_format": "One integer n.", "time_limit": 2.0}, "Double n.")
    '\\n\\n## Input\\n\\nOne integer n.\\n\\nTime limit: 2 s.'
    """
    text = ""
    for column, heading in STATEMENT_PARTS:
        part = row.get(column)
        if column == "examples" and isinstance(part, list):
            part = "\n\n".join(f"Input:\n```\n{str(e.get('input', '')).rstrip()}\n```\n"
                                f"Output:\n```\n{str(e.get('output', '')).rstrip()}\n```"
                                for e in part if isinstance(e, dict))
        if isinstance(part, str) and part.strip() and part.strip() not in prompt:
            text += f"\n\n## {heading}\n\n{part.strip()}"
    limits = [f"{name} limit: {row[k]:g} {unit}" for k, name, unit in (
        ("time_limit", "Time", "s"), ("memory_limit", "Memory", "MB")) if isinstance(
            row.get(k), (int, float)) and not isinstance(row.get(k), bool)
        and f"{name.lower()} limit" not in prompt.lower()]     # open-r1's prompts state them
    return text + (f"\n\n{'; '.join(limits)}." if limits else "")


def code_prompt(prompt, row: dict):
    """A code row's problem as the model needs it: MBPP's test asserts appended, the only place
    the function's name is given (as the MBPP paper's prompt does); APPS', TACO's and
    LiveCodeBench's `starter_code` (the class or function to fill in) appended in a code block;
    KodCode's function declaration (`test_info`), where the question does not name the function
    its tests import; the statement's parts that open-r1's codeforces rows keep beside the
    `description` (the input and output formats, the examples, the note, the limits:
    `codeforces_statement`), where the prompt lacks them (the model was asked to solve the story
    alone, not told what to read or print)."""
    if not isinstance(prompt, str):
        return prompt
    if isinstance(row.get("input_format"), str):      # a statement kept in parts: codeforces'
        prompt += codeforces_statement(row, prompt)
    if isinstance(row.get("test_list"), list) and "entry_point" not in row:
        prompt += "\nYour code should pass these tests:\n" + "\n".join(map(str, row["test_list"]))
    starter = row.get("starter_code")
    if isinstance(starter, str) and starter.strip():
        prompt += f"\n\nUse this starter code:\n```python\n{starter.rstrip()}\n```"
    infos = row.get("test_info")                # KodCode's: the function its tests import
    for info in infos if isinstance(infos, list) else []:
        name = info.get("function_name") if isinstance(info, dict) else None
        if isinstance(name, str) and name and not re.search(rf"\b{re.escape(name)}\b", prompt):
            declared = info.get("function_declaration")
            prompt += (f"\n\nNote that the function declaration is {declared.strip()}"
                       if isinstance(declared, str) and declared.strip() else
                       f"\n\nNote that the function is named {name}")
    return prompt


def ground_truth(row: dict):
    """The answer of a row in verl's schema (Skywork-OR1-RL-Data, DAPO-Math, DeepScaleR's verl
    copy): `reward_model` {"ground_truth": ..., "style": "rule"}, None if the row is in another.
    Skywork-OR1 writes it as JSON text: a list of acceptable answers (its checker takes any; the
    first is the gold here, and `acceptable_answers` all of them), or a code problem's tests (a
    dict: `code_tests`).

    >>> ground_truth({"reward_model": {"ground_truth": '["12", "12.0"]', "style": "rule"}})
    '12'
    >>> ground_truth({"reward_model": {"ground_truth": "[1, 2)", "style": "rule"}})
    '[1, 2)'
    """
    answers = acceptable_answers(row)
    return answers[0] if answers else _ground_truth_value(row)


# answer columns that hold several acceptable answers, any of which is right: BIG-bench's
# `targets` (its task files' `target`), SQuAD's `answers.text`, TriviaQA's `answer.aliases`,
# DROP's `answers_spans.spans`
ALTERNATIVE_COLUMNS = ("targets", "target", "answers", "aliases", "normalized_aliases", "spans")


def alternative_answers(field: str, value, question: str = "") -> list | None:
    """The acceptable answers of an answer column, where it holds a list of them: a column
    named for several (`ALTERNATIVE_COLUMNS`, a word of its dotted path: 'answers.text'), or a
    list of texts under another name, one of them words (NQ-open's `answer` ["Paris", "paris,
    france"], the annotators' spellings: `is_text_answer`), unless the question asks for
    several things at once (`asks_for_several`: 'Name the three primary colours', whose
    ["red", "green", "blue"] is one answer, all three, not a choice of one). A list of numbers
    or math under another name is one answer that is a list (all the roots: `gold_answer`):
    None. A list of texts written as JSON text (PopQA's `possible_answers`, a CSV's) is read as
    that list.

    >>> alternative_answers("answer.aliases", ["Paris", "City of Light"])
    ['Paris', 'City of Light']
    >>> alternative_answers("answer", ["December 1972", "1972"])
    ['December 1972', '1972']
    >>> alternative_answers("answer", [2, 3]), alternative_answers("answer", ["\\sqrt{2}", "-2"])
    (None, None)
    """
    named = set(re.split(r"[._]", field.lower())) & set(ALTERNATIVE_COLUMNS)
    if isinstance(value, str) and value.lstrip()[:1] == "[":
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:        # an interval '[1, 2)': one answer
            decoded = None
        if isinstance(decoded, list) and all(isinstance(x, str) for x in decoded):
            value = decoded
    kept = [x for x in value if not _blank(x)] if isinstance(value, list) else []
    if kept and (named or all(isinstance(x, str) for x in kept)):
        value = kept    # SQuAD's and NQ's lists with a blank entry: the others are the answers
    plain = isinstance(value, list) and value and all(
        isinstance(x, (str, int, float)) for x in value)
    texts = plain and all(isinstance(x, str) for x in value) and any(map(is_text_answer, value))
    several = plain and not named and asks_for_several(question, len(value))
    return value if plain and (named or texts) and not several else None


def _blank(x) -> bool:
    """Whether an entry of a list of acceptable answers holds none: null, NaN, empty text, or a
    missing value written out (`missing_mark`); such entries are left out, the rest kept (the
    row was refused, 'answers is empty', though it held 'Paris')."""
    return (x is None or isinstance(x, float) and math.isnan(x)
            or isinstance(x, str) and (not x.strip() or missing_mark(x)))


_COUNTS = {w: j for j, w in enumerate("zero one two three four five six seven eight nine ten "
                                      "eleven twelve".split())} | {"both": 2}
# a count of things: a number (in digits or words) before a word ('three primary', '2 cities')
_COUNTED = re.compile(r"\b([A-Za-z]+|\d+)(?=\s+([A-Za-z]+))")
_NOT_COUNTED = {"times", "plus", "minus", "more", "less", "of", "and", "or", "hundred",
                "thousand", "million", "billion", "percent", "divided", "over", "to", "x"}
# asking for all of several things: 'List the ...', 'Name all ...', 'What are all the ...'
_ASKS_ALL = re.compile(r"(?:^|[.!?:]\s+)list\b|\b(?:name|give|list|what are) (?:all|each|every|"
                       r"both)\b", re.IGNORECASE)


def asks_for_several(question: str, count: int) -> bool:
    """Whether a question asks for `count` things together, so that a list of that many texts
    is one answer in parts, not a choice of spellings of one: it names how many ('the three
    primary colours', 'two cities', 'both'), or asks to list them all ('List ...', 'Name all
    ...'). A field name says as much (`ALTERNATIVE_COLUMNS`: 'answers', 'aliases' are choices).

    >>> asks_for_several("Name the three primary colours of light.", 3)
    True
    >>> asks_for_several("Where is the Eiffel Tower?", 2), asks_for_several("List the moons.", 2)
    (False, True)
    """
    named = {_COUNTS.get(w.lower(), int(w) if w.isdigit() else -1) for w, noun in
             _COUNTED.findall(question) if noun.lower() not in _NOT_COUNTED}   # not '2 + 2'
    return count > 1 and (count in named or bool(_ASKS_ALL.search(question)))



# words that math answers are written with ('2 sqrt(3)', 'pi/2', 'log 5', '-oo')
MATH_WORDS = {"sqrt", "pi", "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan",
              "log", "ln", "exp", "frac", "inf", "infty", "infinity", "oo", "mod", "gcd", "lcm",
              "max", "min"}


def is_text_answer(answer: str) -> bool:
    """Whether an answer is words, not math: a word of two letters or more outside `$...$`
    that is no command or function of math (`\\sqrt`, 'sqrt', 'pi', 'sin').

    >>> is_text_answer("Jerry Siegel"), is_text_answer("x = 2"), is_text_answer("2 sqrt(3)")
    (True, False, False)
    """
    words = _PROSE_WORD.findall(_INLINE_MATH.sub(" ", answer))
    return any(w.lower() not in MATH_WORDS for w in words)


def acceptable_answers(row: dict) -> list[str] | None:
    """A verl row's list of acceptable answers (`ground_truth`), graded as any of them
    (`rewards.answer_verified`); None for a row with one answer, or in another schema.

    >>> acceptable_answers({"reward_model": {"ground_truth": '["1/2", "0.5"]'}})
    ['1/2', '0.5']
    """
    value = _ground_truth_value(row)
    alternatives = isinstance(value, list) and value and all(isinstance(x, str) for x in value)
    kept = [x for x in value if not _blank(x)] if alternatives else []
    return (kept or value) if alternatives else None    # a blank entry is no answer


def _ground_truth_value(row: dict):
    """`reward_model.ground_truth`, JSON text decoded where it is a list of answers or a dict of
    tests; None for a row in another schema."""
    model = row.get("reward_model")
    if not (isinstance(model, dict) and "ground_truth" in model):
        return None
    value = model["ground_truth"]
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:        # an interval '[1, 2)', a set '{1, 2}': the answer
            return value
        if isinstance(decoded, dict) or (isinstance(decoded, list) and decoded
                                         and all(isinstance(x, str) for x in decoded)):
            value = decoded
    return value


TEST_KINDS = ("assert", "fn_name", "input")     # sandbox.run_tests' three kinds of test


def code_tests(row: dict, tests_field: str = "tests") -> list[dict] | None:
    """A code row's tests in the sandbox's form (`sandbox.run_tests`), read from the schemas that
    code datasets ship; None for a row with none. A malformed value is a ValueError naming it.

    * `tests_field` ("tests"): sandbox tests already ([{"assert": ...}, {"input", "output"}, ...];
      a list as a case's input or output is its lines: `_stdio_lines`), also as JSON text (a
      CSV's; DeepCoder's, whose LiveCodeBench tests carry a "testtype": `_lcb_tests`), or as
      columns of cases, CodeContests' {"input": [...], "output": [...]} or APPS' {"inputs":
      [...], "outputs": [...], "fn_name"?}.
    * HumanEval: `test` (a `check(candidate)` function) and `entry_point`; BigCodeBench: `test`
      a `unittest.TestCase` class; KodCode: `test` pytest functions (`_entry_point_tests`).
    * MBPP: `test_list` (assert statements), after `test_setup_code` or `test_imports`.
    * APPS, TACO: `input_output`, JSON text {"inputs", "outputs", "fn_name"?} (`_io_tests`).
    * CodeContests: `public_tests`, `private_tests` and `generated_tests`, {"input": [...],
      "output": [...]}. The generated ones (inputs mutated from the others, outputs agreed on by
      correct solutions) are hidden tests too, as CodeContests' authors use them (AlphaCode, Li
      et al. 2022, on false positives): a program that passes the few public and private tests
      is often still wrong, and RL would reward it. They are many (up to hundreds a problem),
      which makes a reward slower: drop the column to grade on fewer.
    * LiveCodeBench: `public_test_cases` and `private_test_cases` (`_lcb_tests`; the private
      ones are compressed: `_pickled_text`).
    * open-r1's verifiable-coding-problems: `verification_info` (`_verification_tests`); its
      codeforces: `official_tests` (`_codeforces_tests`; the statement: `code_prompt`).
    * Skywork-OR1 (verl's schema): `reward_model.ground_truth` (`ground_truth`), APPS' form,
      {"assert_case": [...]} or {"import_prefix", "test_code", "entry_point"}, run as its grader
      runs them, after a prelude of imports (`_skywork_tests`; the task's `prelude`).

    >>> code_tests({"test_list": ["assert f(1) == 2"], "test_setup_code": "import math"})
    [{'assert': 'import math\\nassert f(1) == 2'}]
    >>> code_tests({"input_output": '{"inputs": ["3\\\\n"], "outputs": ["6\\\\n"]}'})
    [{'input': '3\\n', 'output': '6\\n'}]
    """
    found = _checked_tests(row, tests_field)
    return found[1] if found else None


def _checked_tests(row: dict, tests_field: str) -> tuple[str, list[dict]] | None:
    """`_schema_tests`, checked as the sandbox will run them."""
    found = _schema_tests(row, tests_field)
    if found is None:
        return None
    column, tests = found
    if not tests:                      # APPS has problems with an empty input_output
        raise ValueError(f"{column!r} holds no tests, so nothing can grade the row")
    import sandbox  # lazy: only code tasks need it
    sandbox.check_tests(tests, repr(column))   # here, not at a training run's first reward
    return column, tests


def is_test_code(value) -> bool:
    """Whether a value is test code: Python that asserts at its top level ('assert f(1) == 2',
    lines of them), or a list of such texts (MBPP's test_list). Such a column mapped as the
    answer (--answer-field test_list) was graded as the math answer 'assert f(1) == 2', which no
    reply equals; a `tests` column of one text of asserts was refused.

    >>> is_test_code("assert f(1) == 2\\nassert f(2) == 4"), is_test_code(["assert f(1) == 2"])
    (True, True)
    >>> is_test_code("x = 2"), is_test_code("The assert keyword checks.")
    (False, False)
    """
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) and is_test_code(v) for v in value)
    if not (isinstance(value, str) and re.search(r"^assert\b", value, re.MULTILINE)):
        return False
    try:
        return any(isinstance(node, ast.Assert) for node in ast.parse(value).body)
    except (SyntaxError, ValueError):
        return False


def assert_statements(code: str) -> list[dict]:
    """Test code as sandbox tests: each top-level assert its own test where the code is asserts
    alone (each counted in a pass rate), else the code as one test (its setup, then asserts).

    >>> assert_statements("assert f(1) == 2\\nassert f(2) == 4")
    [{'assert': 'assert f(1) == 2'}, {'assert': 'assert f(2) == 4'}]
    """
    body = ast.parse(code).body
    if all(isinstance(node, ast.Assert) for node in body):
        return [{"assert": ast.get_source_segment(code, node)} for node in body]
    return [{"assert": code}]


CODE_CONTESTS_TESTS = ("public_tests", "private_tests", "generated_tests")


def _schema_tests(row: dict, tests_field: str) -> tuple[str, list[dict]] | None:
    """(the column the tests were read from, the tests) in `code_tests`' schemas; None if none."""
    # null: a table (parquet, a HF dataset) mixing code and other rows gives every row the
    # column; such a row has no tests
    if row.get(tests_field) is not None:
        tests = row[tests_field]
        if is_test_code(tests) and isinstance(tests, str):    # 'assert f(1) == 2\nassert ...'
            tests = assert_statements(tests)
        if isinstance(tests, str) and tests.lstrip()[:1] in ("[", "{"):
            tests = _json_text(tests, tests_field)     # a CSV's, or DeepCoder's JSON text
        if isinstance(tests, dict) and "inputs" not in tests:   # {"stdin": [...], "stdout": ...}
            tests = _case_keys(tests)
        if isinstance(tests, list):     # "assert ..." texts; {"stdin", "stdout"} cases
            tests = [_case_keys(t) for t in tests]
        if isinstance(tests, dict) and "inputs" in tests:          # APPS' columns of cases
            return tests_field, _io_tests(tests, tests_field)
        if isinstance(tests, dict) and isinstance(tests.get("input"), list):   # CodeContests'
            if not (isinstance(tests.get("output"), list)
                    and len(tests["output"]) == len(tests["input"])):
                raise ValueError(f"{tests_field!r} is {{\"input\": [...], \"output\": ...}} "
                                 "without an output for each input")
            return tests_field, [_stdio_lines({"input": i, "output": o})
                                 for i, o in zip(tests["input"], tests["output"])]
        if isinstance(tests, list) and tests and all(
                isinstance(t, dict) and "testtype" in t for t in tests):
            return tests_field, _lcb_tests(tests, tests_field, _func_name(row))
        if not (isinstance(tests, list) and all(
                isinstance(t, dict) and any(k in t for k in TEST_KINDS) for t in tests)):
            raise ValueError(f"{tests_field!r} is {json.dumps(tests, default=str)[:60]}, not a "
                             "list of tests [{\"assert\": ...}, {\"input\": ..., \"output\": "
                             "...}, {\"fn_name\": ..., \"args\": [...], \"expected\": ...}]")
        return tests_field, [_stdio_lines(t) for t in tests]   # a case's lines: one text
    if isinstance(row.get("test"), str) and (isinstance(row.get("entry_point"), str)
                                             or _test_functions(row["test"])):
        return "test", _entry_point_tests(row["test"], row.get("entry_point"))
    if isinstance(row.get("test_list"), list):
        imports = row.get("test_imports") or []
        if not (isinstance(imports, list) and all(isinstance(x, str) for x in imports)):
            raise ValueError(f"'test_imports' is {json.dumps(imports, default=str)[:60]}, not a "
                             "list of import statements")
        setup = row.get("test_setup_code") or "\n".join(imports)
        return "test_list", [{"assert": f"{setup}\n{t}" if setup else str(t)}
                             for t in row["test_list"]]
    if "input_output" in row:
        spec = row["input_output"]
        return "input_output", _io_tests(spec, "input_output") if spec else []
    if isinstance(row.get("official_tests"), list):
        return "official_tests", _codeforces_tests(row)
    if isinstance(row.get("public_tests"), dict):
        tests = []
        for k in CODE_CONTESTS_TESTS:
            if not isinstance(row.get(k), dict):
                continue
            ins, outs = row[k].get("input") or [], row[k].get("output") or []
            if not (isinstance(ins, list) and isinstance(outs, list) and len(ins) == len(outs)):
                raise ValueError(f"{k!r} is {json.dumps(row[k], default=str)[:60]}, not "
                                 "{\"input\": [...], \"output\": [...]} with an output for each "
                                 "input")
            tests += [_stdio_lines({"input": i, "output": o}) for i, o in zip(ins, outs)]
        return "public_tests", tests
    if "verification_info" in row and row["verification_info"] is not None:
        return "verification_info", _verification_tests(row["verification_info"])
    truth = ground_truth(row)
    if isinstance(truth, dict):
        return "reward_model.ground_truth", _skywork_tests(truth)[0]
    if "public_test_cases" in row:
        public = _json_text(row["public_test_cases"] or "[]", "public_test_cases")
        private = row.get("private_test_cases") or []
        if isinstance(private, str) and not private.lstrip().startswith("["):
            private = _pickled_text(private)
            if private is None:
                raise ValueError("'private_test_cases' is not LiveCodeBench's form (base64 of "
                                 "zlib of a pickled JSON string); drop the column to grade on "
                                 "the public tests only")
        private = _json_text(private, "private_test_cases")
        fn = _func_name(row)
        return "public_test_cases", (_lcb_tests(public, "public_test_cases", fn)
                                     + _lcb_tests(private, "private_test_cases", fn))
    return None


def _codeforces_tests(row: dict) -> list[dict]:
    """open-r1's codeforces rows: `official_tests` [{"input", "output"}], each a program's stdin
    and stdout. A problem the sandbox cannot judge by comparing stdout is a ValueError naming
    it: one with a `generated_checker` (several right outputs: a right program was graded
    wrong), an `interaction_format` (the judge talks with the program), or an `input_mode` other
    than "stdio" (the program reads input.txt)."""
    why = ("a generated_checker: a problem with several right outputs, which comparing stdout "
           "grades wrong" if row.get("generated_checker") else
           "an interaction_format: an interactive problem, judged by talking with the program"
           if row.get("interaction_format") else
           f"input_mode {row['input_mode']!r}: the program reads and writes files, not stdin"
           if row.get("input_mode") not in (None, "stdio") else None)
    if why:
        raise ValueError(f"'official_tests' cannot judge it: the row has {why}; drop such rows")
    return [_stdio_lines(t) for t in row["official_tests"]]


def entry_point_prelude(row: dict) -> str:
    """For an entry point that is an expression, not a name (LeetCode's 'Solution().twoSum'), a
    function `_entry_point` that calls it, to run before the program (`code_rewards`' prelude):
    the tests call that (`_entry_point_tests`), as an instance of the program's class cannot pass
    to them (`sandbox`: plain values only; every program failed); "" for any other row.

    >>> print(entry_point_prelude({"entry_point": "Solution().twoSum"}).strip())
    def _entry_point(*args, **kwargs):
        return Solution().twoSum(*args, **kwargs)
    """
    entry = row.get("entry_point")
    if not isinstance(entry, str) or entry.isidentifier():
        return ""
    return f"def _entry_point(*args, **kwargs):\n    return {entry}(*args, **kwargs)\n\n\n"


def code_prefix(row: dict, prompt_field: str) -> str:
    """The code that a row's harness runs before the solution and before its tests, where the row
    holds it apart from the model's prompt: LeetCodeDataset's `prompt` column (its imports, and the
    ListNode/TreeNode classes with the list_node/tree_node/is_same_list helpers that its tests
    call; its harness runs prompt + completion + test) when the prompt is another column
    (`query`); "" for any other row. Without it every program failed (NameError: list_node).

    >>> code_prefix({"prompt": "import math\\nclass ListNode: pass", "query": "Q"}, "query")
    'import math\\nclass ListNode: pass'
    >>> code_prefix({"prompt": "Reverse the list.", "query": "Q"}, "query")
    ''
    """
    code = row.get("prompt")
    if prompt_field == "prompt" or not isinstance(code, str):
        return ""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return ""
    defines = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    return code if any(isinstance(node, defines) for node in body) else ""


def _test_functions(source: str) -> list:
    """The test functions (`def test_...`) of test code, as pytest collects them; [] for code
    that defines none or does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]


def _entry_point_tests(source: str, entry_point: str | None) -> list[dict]:
    """The tests of a row with `test` code and an `entry_point` (or test functions): HumanEval's
    `check(candidate)` function, called with the entry point; BigCodeBench's `unittest.TestCase`
    classes, each test method one test (the class, then that method run; it was
    `check(task_func)`, a NameError that failed every program); KodCode's pytest functions
    (`from solution import f`, then `def test_f(): assert ...`), each one test, the program
    being the solution; else the statements as they are.

    The sandbox runs the tests in another process than the program (`sandbox`'s assert tests),
    in a Python without pytest: a test that patches the program (`unittest.mock`) cannot reach
    it, and one that needs pytest (`import pytest`, a fixture) cannot run, so either is a
    ValueError.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [{"assert": source}]            # sandbox.check_tests names what does not compile
    cases = [(c.name, f.name) for c in tree.body if isinstance(c, ast.ClassDef) and any(
                 ast.unparse(b).endswith("TestCase") for b in c.bases)
             for f in c.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
    functions = _test_functions(source)
    if any(isinstance(f, ast.FunctionDef) and f.name == "check" for f in tree.body):
        called = entry_point if str(entry_point).isidentifier() else "_entry_point"
        try:                                # what `entry_point_prelude` calls
            ast.parse(str(entry_point), mode="eval")
        except SyntaxError:
            raise ValueError(f"'entry_point' is {entry_point!r}, not a function's name or an "
                             "expression ('Solution().twoSum')") from None
        return [{"assert": f"{source}\ncheck({called})"}]
    if not cases and not functions:
        return [{"assert": source}]
    if re.search(r"\bunittest\.mock\b|\bfrom mock\b|\bimport mock\b", source):
        raise ValueError("'test' patches the program with unittest.mock, which cannot reach it: "
                         "the sandbox runs the program in another process than its tests")
    if not cases:
        if re.search(r"^\s*(import|from) pytest\b", source, re.M) or any(
                f.args.args for f in functions):
            raise ValueError("'test' needs pytest (import pytest, or a fixture as an argument), "
                             "which the sandbox's Python does not have")
        lines = source.split("\n")
        for node in tree.body:              # `from solution import f`: the program defines f
            if isinstance(node, ast.ImportFrom) and node.module == "solution":
                lines[node.lineno - 1:node.end_lineno] = [""] * (node.end_lineno - node.lineno + 1)
        return [{"assert": "\n".join(lines) + f"\n\n{f.name}()"} for f in functions]
    run = ("\n\nimport unittest as _unittest\n_result = _unittest.TestResult()\n"
           "{}({!r}).run(_result)\nassert _result.wasSuccessful(), "
           "(_result.failures + _result.errors)[0][1].strip().splitlines()[-1]").format
    return [{"assert": source + run(case, method)} for case, method in cases]


def _verification_tests(info) -> list[dict]:
    """open-r1's verifiable coding problems: `verification_info`
    {"language": "python", "test_cases": [{"input", "output", "type"?}]}, as open-r1's code
    reward runs them: each case a program's stdin and stdout."""
    info = _json_text(info, "verification_info")
    cases = info.get("test_cases") if isinstance(info, dict) else None
    if not (isinstance(cases, list) and all(
            isinstance(c, dict) and isinstance(c.get("input"), str)
            and isinstance(c.get("output"), str)
            and c.get("type", "stdin_stdout") == "stdin_stdout" for c in cases)):
        raise ValueError("'verification_info' is not {\"test_cases\": [{\"input\": text, "
                         "\"output\": text}]} of stdin/stdout cases")
    if str(info.get("language", "python")).lower() != "python":
        raise ValueError(f"'verification_info' is for {info['language']!r}; the sandbox runs "
                         "Python only")
    return [{"input": c["input"], "output": c["output"]} for c in cases]


def _func_name(row: dict) -> str | None:
    """The function LiveCodeBench's functional tests call: its `metadata`'s func_name."""
    meta = _json_text(row.get("metadata") or "{}", "metadata")
    return meta.get("func_name") if isinstance(meta, dict) else None


# what Skywork-OR1's grader runs before a solution with `assert_case` tests: names that its
# tests (and the solutions it was trained on) use unimported, as LeetCode's judge provides them
SKYWORK_PRELUDE = "".join(f"from {m} import *\n" for m in (
    "typing", "functools", "collections", "itertools", "heapq", "bisect", "string", "operator",
    "math")) + "import math\nimport datetime\ninf = float('inf')\n\n"


def _skywork_tests(truth: dict) -> tuple[list[dict], str]:
    """Skywork-OR1's code tests (`reward_model.ground_truth`) as its grader runs them, and the
    prelude that runs before the solution (`rewards.code_rewards`):

    * {"inputs", "outputs", "fn_name"?}: APPS' form (`_io_tests`), no prelude;
    * {"assert_case": [...]}: each statement after the solution, the solution after
      `SKYWORK_PRELUDE`;
    * {"import_prefix", "test_code", "entry_point"}: the solution after `import_prefix`; the
      test code's first non-empty line (`def check(candidate):`) with each of the others is one
      test, calling `check(entry_point)`, after `import_prefix` as well: LeetCode's prefix defines
      the `ListNode`/`TreeNode` classes and the `list_node`/`is_same_list` helpers that its tests
      use, which then build and judge the values in the tests' own process (`sandbox`).
    """
    column = "reward_model.ground_truth"
    if "assert_case" in truth and isinstance(truth["assert_case"], list):
        return [{"assert": str(a)} for a in truth["assert_case"]], SKYWORK_PRELUDE
    if "inputs" in truth:
        return _io_tests(truth, column), ""
    if all(isinstance(truth.get(k), str) for k in ("import_prefix", "test_code", "entry_point")):
        lines = [x for x in truth["test_code"].split("\n") if x]
        prefix = truth["import_prefix"] + "\n" if truth["import_prefix"].strip() else ""
        return ([{"assert": f"{prefix}{lines[0]}{x}\ncheck({truth['entry_point']})"}
                 for x in lines[1:]], truth["import_prefix"])
    raise ValueError(f"{column!r} holds tests of a form not read here (keys {sorted(truth)[:5]});"
                     " give them as 'tests' [{\"input\": ..., \"output\": ...}]")


_LETTERED = re.compile(r"\s*\(?([A-Za-z])\s*[).:]\s*(.*)", re.DOTALL)


def row_choices(row: dict, gold: str | None = None) -> tuple[list, list | None] | None:
    """The options of a multiple-choice row and their labels (None: a plain list, whose labels
    are the letters A, B, ...), in the forms public datasets ship them; None for a row with no
    options:

    * MMLU: `choices` ["0", "4", "2", "6"] (`answer` an index).
    * ARC, CommonsenseQA, OpenBookQA: `choices` {"text": [...], "label": ["A", "B", ...]} (some
      ARC rows are labelled "1", "2", ...; `answerKey` names the label).
    * AQuA-RAT: `options` ["A)21", "B)21.5", ...] (`correct` a letter): the letters are cut off
      (`_unlettered`; under `choices` too: lighteval's "(A)ice").
    * MMLU-Pro: `options` ["...", ...] (`answer` a letter); HellaSwag: `endings` (`label` "3").
    * MathQA: `options` one string 'a ) 5 , b ) 6 , ...' (`lettered_options`).
    * ReClor: `answers` [...], where the gold is an index in a column named for one (`gold`:
      its `label`; 'answer_index'); else `answers` are the gold's acceptable spellings
      (SQuAD's, WebQuestions', or beside a numeric `answer`).
    * `choices` or `options` {"A": "ice", "B": "water"} (MedQA's); one column per letter, A, B,
      C, D (C-Eval, CMMLU, AGIEval exports), a plain list's kind: options only where the gold
      names one.

    >>> row_choices({"choices": {"text": ["ice", "water"], "label": ["1", "2"]}})
    (['ice', 'water'], ['1', '2'])
    >>> row_choices({"options": ["A)21", "B)21.5"]})
    (['21', '21.5'], ['A', 'B'])
    """
    choices = row.get("choices")
    if isinstance(choices, list):
        return _option_objects(choices) or _unlettered(choices) or (choices, None)
    if isinstance(choices, dict) and isinstance(choices.get("text"), list):
        labels = choices.get("label")
        ok = isinstance(labels, list) and len(labels) == len(choices["text"])
        return choices["text"], [str(x) for x in labels] if ok else None
    for column in ("choices", "options", "endings"):
        options = row.get(column)
        if isinstance(options, dict) and len(options) > 1 and all(
                isinstance(v, (str, int, float)) for v in options.values()):
            return list(options.values()), [str(k) for k in options]  # {"A": "ice", ...}
    index = row.get(gold) if gold else None         # ReClor's label: its answers are options
    indexed = bool(gold and {"label", "index", "idx"} & set(re.split(r"[._\W]+", gold.lower()))
                   ) and (isinstance(index, int) and not isinstance(index, bool)
                          or isinstance(index, str) and index.strip().isdigit())
    for column in ("choices", "options", "endings"):      # one string: MathQA's, 'ice|water'
        text = row.get(column)
        if isinstance(text, str) and (found := lettered_options(text) or split_options(text)):
            return found
    for column in ("options", "endings", "answers") if indexed else ("options", "endings"):
        options = row.get(column)
        if isinstance(options, str) and lettered_options(options):    # MathQA: one string
            return lettered_options(options)
        if isinstance(options, list) and _option_objects(options):
            return _option_objects(options)
        if isinstance(options, list) and options:
            return _unlettered(options) or (options, None)
    return per_option_columns(row, gold)      # one column per option: A, B, C; option_a, ...


# how a sheet's one cell lists its options unlettered: one a line, or between bars or semicolons
OPTION_SEPARATORS = ("\n", "|", ";")


def split_options(text: str) -> tuple[list, None] | None:
    """The options of a string that lists them unlettered, one a line or separated by bars or
    semicolons ('ice|water|steam', 'ice; water'), the first of `OPTION_SEPARATORS` that splits
    it into 2-26 options none empty; as a plain list (labels None: A, B, ...; the gold must name
    one, `names_option`). The string was no options: they were not shown, and the gold 'B'
    graded as the text 'B'. Not a comma, which numbers hold ('1,000').

    >>> split_options("ice | water|steam"), split_options("1,000")
    ((['ice', 'water', 'steam'], None), None)
    """
    for sep in OPTION_SEPARATORS:
        parts = [p.strip() for p in text.strip().split(sep)]
        if 2 <= len(parts) <= 26 and all(parts):
            return parts, None
    return None


def _unlettered(options: list) -> tuple[list, list] | None:
    """Options written after their letters, A, B, C, ... in order (AQuA's "A)21", lighteval's
    "(A)ice", "A. ice"; or a, b, c, ..., MathQA's "a ) 5" in a list): (their texts, the
    letters); None for options of another form.

    >>> _unlettered(["(A)ice", "B. water"]), _unlettered(["A", "C"])
    ((['ice', 'water'], ['A', 'B']), None)
    >>> _unlettered(["a ) 5", "b ) 6"]), _unlettered(["a.m.", "p.m."])
    ((['5', '6'], ['a', 'b']), None)
    """
    found = [_LETTERED.fullmatch(o) if isinstance(o, str) else None for o in options]
    letters = "".join(m[1] for m in found) if options and all(found) else ""
    in_order = "".join(chr(65 + j) for j in range(len(options)))
    if letters and letters in (in_order, in_order.lower()):
        return [m[2].strip() for m in found], [m[1] for m in found]
    return None


# the keys of an option written as an object: its text, and its label
OPTION_TEXT_KEYS = ("text", "value", "content", "option")
OPTION_LABEL_KEYS = ("label", "key", "letter")


def _option_objects(options: list) -> tuple[list, list | None] | None:
    """Options written as objects, [{"label": "A", "text": "ice"}, ...] (`OPTION_TEXT_KEYS`,
    `OPTION_LABEL_KEYS`): (their texts, their labels, None if some have none); None for options
    of another form.

    >>> _option_objects([{"label": "A", "text": "ice"}, {"label": "B", "text": "water"}])
    (['ice', 'water'], ['A', 'B'])
    """
    if not (options and all(isinstance(o, dict) for o in options)):
        return None
    text = next((k for k in OPTION_TEXT_KEYS if all(k in o for o in options)), None)
    if text is None:
        return None
    label = next((k for k in OPTION_LABEL_KEYS if all(o.get(k) is not None for o in options)),
                 None)
    return [o[text] for o in options], [str(o[label]) for o in options] if label else None


_OPTION_MARK = re.compile(r"(?:^|(?<=[\s,;]))\(?([A-Za-z])\s*\)\s*")


# a letter that starts a line of its own, 'A. 5' or 'B: 6' ('A.' within a line: 'U.S.')
_LINE_OPTION_MARK = re.compile(r"^[ \t]*\(?([A-Za-z])[ \t]*[.:)][ \t]*", re.MULTILINE)


def lettered_options(text: str) -> tuple[list, list] | None:
    """The options of a string that lists them after their letters (MathQA's 'a ) 5 , b ) 6',
    '(A) 5 (B) 6'; one a line, 'A. 5\\nB. 6' or 'A: 5\\nB: 6', as spreadsheet exports write
    them), and the letters; None if it does not start with a and run on b, c, ...

    >>> lettered_options("a ) rs . 5 , b ) 6 , c ) none")
    (['rs . 5', '6', 'none'], ['a', 'b', 'c'])
    >>> lettered_options("A. 5 m\\nB. 6 m")
    (['5 m', '6 m'], ['A', 'B'])
    """
    for mark in (_OPTION_MARK, _LINE_OPTION_MARK):
        marks = []
        for m in mark.finditer(text):
            if m[1].lower() == chr(ord("a") + len(marks)):
                marks.append(m)
        if len(marks) >= 2 and not text[:marks[0].start()].strip():
            ends = [m.start() for m in marks[1:]] + [len(text)]
            return ([text[m.end():end].strip().rstrip(",;").strip()
                     for m, end in zip(marks, ends)], [m[1] for m in marks])
    return None


# the first option of a question that lists its options in its own text: '(A)', 'A)', 'A.' or
# 'A:', any case, at a line's start or after a space ('Answer Choices: (A) 21 (B) 22')
_FIRST_OPTION = re.compile(r"(?:^|(?<=\s))\(?[Aa][ \t]*[).:]", re.MULTILINE)


# the words of a column's name that may hold a question's options under a name not read as
# such ('possible_answers', 'candidate_answers', 'alternatives')
MAYBE_OPTION_WORDS = {"answers", "candidates", "candidate", "alternatives", "possible",
                      "possibilities", "opts", "selections"}


def unread_options(row: dict, gold: str, field: str | None) -> str | None:
    """The column that a gold written as an option's letter ('B', '(B)') may name an option of,
    where the row lists its options nowhere they are read (`row_choices`, `inline_options`): a
    list of 2-26 texts or numbers, not holding the letter itself, under a name of
    `MAYBE_OPTION_WORDS`; None otherwise. Such a row was graded on the letter as free text,
    its options not shown (`load_tasks` names the column and the fix).

    >>> unread_options({"possible_answers": ["ice", "water"], "answer": "B"}, "B", "answer")
    'possible_answers'
    """
    m = re.fullmatch(r"\(([A-Za-z])\)|([A-Z])", gold.strip())
    if not m:
        return None
    index = ord((m[1] or m[2]).upper()) - 65
    for k, v in row.items():
        words = set(re.split(r"[_\W]+", str(k).lower()))
        if (k != field and words & MAYBE_OPTION_WORDS and isinstance(v, list)
                and index < len(v) <= 26 and all(isinstance(x, (str, int, float)) for x in v)
                and gold.strip() not in map(str, v)):
            return str(k)
    return None


def inline_options(text: str) -> tuple[list, list] | None:
    """The options that a question lists in its own text, from its first option to its end
    (one a line, 'A. ice\\nB. water', or in a line, '(A) ice (B) water': `lettered_options`),
    and their letters; None where it lists none.

    >>> inline_options("Which is a liquid?\\nA. ice\\nB. water")
    (['ice', 'water'], ['A', 'B'])
    >>> inline_options("Did Ann get an A or a B?") is None
    True
    """
    for m in _FIRST_OPTION.finditer(text):
        found = lettered_options(text[m.start():])
        if found:
            return found
    return None


def inline_choice(prompt, gold: str) -> dict | None:
    """A question that lists its options in its own text (`inline_options`; a chat prompt's
    last turn) and a gold that names one of them, by its letter in any spelling ('B', '(b)',
    'B. water') or by its text (one option's alone: `option_key`; not a number, which may be
    an option's text, its number or a part's answer: graded as written), as {"prompt": the question
    asking for the letter (`CHOICE_INSTRUCTION`, unless it asks for a letter already),
    "answer": the letter}; None for any other row. The letter was graded with no word that a
    letter is asked for (a reply boxing the option's text earned nothing), and a gold that is
    the text was graded against replies the listed letters invite.

    >>> inline_choice("Liquid? (A) ice (B) water", "water")["answer"]
    'B'
    """
    asked = prompt if isinstance(prompt, str) else prompt[-1]["content"]
    found = inline_options(asked)
    if not found:
        return None
    texts, key = found[0], str(gold).strip()
    if _NUMBER.fullmatch(key):   # a value or an option's number? ('(a) ... (b) ...': parts)
        return None
    index = spelled_letter(key, texts, loose=True)
    if index is None:
        same = [j for j, t in enumerate(texts) if option_key(t) == option_key(key)]
        index = same[0] if len(same) == 1 else None
    if index is None:
        return None
    letter = chr(ord("A") + index)
    if re.search(r"\bletters?\b", asked, re.IGNORECASE):
        return {"answer": letter}
    return {"prompt": with_question(prompt, lambda q: f"{q.rstrip()}\n\n{CHOICE_INSTRUCTION}"),
            "answer": letter}


# graded on the letter: a boxed option text ("\\boxed{4}" for "(B) 4") would earn nothing
CHOICE_INSTRUCTION = "Answer with the letter of the right option."


def multiple_choice(question, choices: list, answer, labels: list | None = None) -> dict:
    """A multiple-choice question (text, or a chat prompt whose last user turn asks it; its
    `choices`, and the right one as an index, a label or the option's own text; an index as
    text, as a CSV holds it, where no option reads the same) as a prompt that lists the options
    (A) ... and asks for a letter (`CHOICE_INSTRUCTION`), and the letter as the answer: the
    model could not see the options and was graded on the index ('1' for B; 1.0 too, pandas'
    index column with a NaN in it; a list of one, ["B"], is the option it names). `labels` are
    the dataset's own names of the options (ARC's '1', '2', ...), A, B, ... if None. An answer
    that names no option, or two (a list of several right options, AGIEval's ["A", "C"], too),
    is a ValueError; None gives the prompt alone (prompts only); 1 option or more than 26 are no
    multiple choice ({}).

    >>> mc = multiple_choice("2 + 2?", ["3", "4"], 1)
    >>> mc["prompt"].splitlines(), mc["answer"]
    (['2 + 2?', '', '(A) 3', '(B) 4', '', 'Answer with the letter of the right option.'], 'B')
    >>> multiple_choice("Liquid?", ["ice", "water"], "2", labels=["1", "2"])["answer"]
    'B'
    """
    if not 2 <= len(choices) <= 26:
        return {}
    if isinstance(answer, list) and len(answer) == 1:     # ["B"]: the one option it names
        answer = answer[0]
    if isinstance(answer, list) and answer:         # several: each must name one (else raises)
        named = [multiple_choice(question, choices, a, labels)["answer"] for a in answer]
        raise ValueError(f"names {len(named)} options ({', '.join(named)}): a question with "
                         "several right options, which the one letter asked for cannot answer; "
                         "drop such rows")
    letters = [chr(ord("A") + j) for j in range(len(choices))]
    texts = [str(c) for c in choices]
    options = "\n".join(f"({x}) {c}" for x, c in zip(letters, texts))
    prompt = with_question(question, lambda q: f"{q.rstrip()}\n\n{CHOICE_INSTRUCTION}"
                           if lists_options(q, texts) else
                           f"{q}\n\n{options}\n\n{CHOICE_INSTRUCTION}")
    shaped = next((j for j, c in enumerate(choices) if isinstance(c, (dict, list))), None)
    if answer is None:                            # prompts only: nothing to grade
        if shaped is not None:
            raise ValueError(_not_text(choices, shaped))
        return {"prompt": prompt}
    key = str(answer).strip()
    if key not in texts and re.fullmatch(r"\d+\.0+", key):   # 1.0: pandas' index column with a
        key = key.split(".")[0]                             # NaN in it is a float column
        answer = int(key)
    if labels and key in labels:                  # ARC's answerKey "2" is B, not index 2
        index = labels.index(key)
    elif isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(choices):
        index = answer
    elif key in letters:
        index = letters.index(key)
    elif key in texts or key.isdigit() and int(key) < len(choices):   # a CSV's index is text
        meant = {texts.index(key)} if key in texts else set()
        meant |= {int(key)} if key.isdigit() and int(key) < len(choices) else set()
        if len(meant) > 1:
            raise ValueError(f"{key!r} is ambiguous: an option reads {key!r}, and index {key} is "
                             f"option ({letters[int(key)]}); give the right option as its letter")
        index = meant.pop()
    elif spelled_letter(key, texts) is not None:     # "(B)", "B.", "b", "B. water"
        index = spelled_letter(key, texts)
    elif len(same := [j for j, t in enumerate(texts) if option_key(t) == option_key(key)]) == 1:
        index = same[0]         # the option's text in another case or spacing: 'paris.'
    elif isinstance(answer, bool) or key.lower() in ("true", "false"):  # BoolQ's true: 'yes'
        index = truth_option(key, texts)
    elif key in ("-1", ""):     # the hub's marks of a missing label (PIQA's, WinoGrande's test)
        raise ValueError(f"is {key or 'empty'}, no option: a split whose answers are withheld; "
                         "use one with answers (evaluate.py --split), or load prompts only "
                         "(--answer-field none)")
    else:
        names = f"a label {', '.join(labels)}" if labels else f"a letter A-{letters[-1]}"
        raise ValueError(f"{json.dumps(answer, default=str)[:40]} is none of the "
                         f"{len(choices)} options (an index 0-{len(choices) - 1}, {names}, "
                         "or an option's text)")
    if shaped is not None:      # it names an option, which the model would see as a repr
        raise ValueError(_not_text(choices, shaped))
    return {"prompt": prompt, "answer": letters[index]}


# an option's text that says yes or no (any case, a closing period: `option_key`)
TRUTH_WORDS = {"true": True, "yes": True, "correct": True, "right": True, "false": False,
               "no": False, "incorrect": False, "wrong": False}


def truth_option(key: str, texts: list[str]) -> int:
    """The index of the one option that says what a true/false gold says ('True' -> 'Yes.',
    'false' -> 'no': `TRUTH_WORDS`); a ValueError where none or several do (true beside 'ice'
    and 'water': an index, counted from 0 or from 1? the first option?). It was graded as the
    text 'True', the options not shown.

    >>> truth_option("True", ["No", "Yes", "Maybe"]), truth_option("FALSE", ["yes.", "no."])
    (1, 1)
    """
    truth = key.strip().lower() == "true"
    said = [j for j, t in enumerate(texts) if TRUTH_WORDS.get(option_key(t)) is truth]
    if len(said) != 1:
        raise ValueError(f"is {key.strip().lower()}, a true/false answer beside options that "
                         f"do not say yes or no, one each ({', '.join(texts)[:60]}): which "
                         "option it names cannot be told; give the right option's letter")
    return said[0]


def lists_options(question: str, texts: list[str]) -> bool:
    """Whether a question lists these options in its own text already, in order, lettered
    (`inline_options`): they were listed twice, the column's after the question's.

    >>> lists_options("Liquid?\\n(A) ice\\n(B) water", ["ice", "Water"])
    True
    """
    found = inline_options(question)
    return bool(found) and [option_key(t) for t in found[0]] == [option_key(t) for t in texts]


def _not_text(choices: list, j: int) -> str:
    """What `multiple_choice` says of an option that is an object or a list, not text."""
    return (f"option ({chr(65 + j)}) is {json.dumps(choices[j], default=str)[:50]}, not text "
            f"(an object's text under none of {', '.join(OPTION_TEXT_KEYS)}); give each option "
            "as text")


def option_key(text: str) -> str:
    """An option's text as a gold may spell it: any case, any run of spaces, no closing period
    or quotes ('Paris.', 'paris', 'New  York' -> 'new york'). A gold that reads the same as
    one option so (and one only) names it; it was graded as free text, the options not shown.

    >>> option_key(' New  York. '), option_key('"Paris"')
    ('new york', 'paris')
    """
    return " ".join(text.split()).strip(" .;!'\"“”").casefold()


_SPELLED = re.compile(r"\(?([A-Za-z])(?:\)|[.:])?(?:\s+(.*))?", re.DOTALL)


# a word naming an option before its letter or number: 'Option B', 'Choice: (b)', 'option 2'
_OPTION_WORD = re.compile(r"(?:option|choice)\s*[:#]?\s*(.+)", re.IGNORECASE)


def spelled_letter(key: str, texts: list[str], loose: bool = False) -> int | None:
    """The index of the option a gold names by its letter in another spelling: "(B)", "B)",
    "B.", "b", "[B]", full-width "Ｂ", after a word "Option B" (or its number counted from 1,
    "option 2"), or with the option's text after it ("B. water"); None if it names none.

    >>> spelled_letter("(B)", ["ice", "water"]), spelled_letter("b. water", ["ice", "water"])
    (1, 1)
    >>> spelled_letter("B. ice", ["ice", "water"]) is None
    True
    """
    key = unicodedata.normalize("NFKC", key).strip()    # 'Ｂ': a CJK file's full-width letter
    named = _OPTION_WORD.fullmatch(key)     # 'Option B', 'choice: (b)'; 'Option 2': the 2nd
    key = named[1] if named else key
    if named and key.isdigit():
        return int(key) - 1 if 1 <= int(key) <= len(texts) else None
    key = re.sub(r"^\[(.*)\]$", r"\1", key)       # '[B]'
    m = _SPELLED.fullmatch(key)
    index = ord(m[1].upper()) - 65 if m else -1
    if not 0 <= index < len(texts):
        return None
    if m[2] is None or m[2].strip() == texts[index] or loose and option_key(
            m[2]) == option_key(texts[index]):      # loose: 'B. Water.' for 'water'
        return index
    return None


def names_option(answer, choices: list) -> bool:
    """Whether a gold names one of a plain list of options (an index, a letter, an option's
    text), as a multiple-choice dataset's gold does: a list column `choices` or `options` of a
    dataset that is no multiple choice (the tools a problem allows, its answer "42") is not
    listed as options, and its answer is graded as written.

    >>> names_option(1, ["3", "4"]), names_option("B", ["3", "4"]), names_option("42", ["3", "4"])
    (True, True, False)
    """
    try:
        return bool(multiple_choice("", choices, answer).get("answer"))
    except ValueError as e:     # names one option either way, or one that is not text
        return any(x in str(e) for x in ("is ambiguous", ", not text", "several right options",
                                         "a true/false answer"))


def stated_option(gold, final: str, choices: list, labels: list | None) -> bool:
    """Whether a gold names no option as written but its final answer does ('Answer: C', 'The
    answer is (B)', a rationale ending '\\boxed{B}': `gold_answer`'s `final`): the options were
    not shown, and the letter, which the model never saw, was graded as free text.

    >>> stated_option("The answer is (B)", "(B)", ["3", "4"], None)
    True
    """
    def names(x):
        try:
            return bool(multiple_choice("", choices, x, labels).get("answer"))
        except ValueError:
            return False
    return isinstance(gold, str) and gold.strip() != final and not names(gold) and names(final)


def with_question(prompt, edit):
    """`prompt` with its question edited: the text, or a chat prompt's last (user) turn."""
    if isinstance(prompt, str):
        return edit(prompt)
    return prompt[:-1] + [{**prompt[-1], "content": edit(prompt[-1]["content"])}]


# one column per option -> (its columns, the column naming the right one, the labels it uses;
# None: a number counted from 0 or from 1, as the file's values tell: `index_base`)
OPTION_COLUMNS = ((("sol1", "sol2"), "label", ("0", "1")),                      # PIQA
                  (("choice1", "choice2"), "label", ("0", "1")),                # COPA
                  (("option1", "option2"), "answer", ("1", "2")),               # WinoGrande
                  (("answerA", "answerB", "answerC"), "label", ("1", "2", "3")),    # SIQA
                  (("opa", "opb", "opc", "opd"), "cop", None))                  # MedMCQA
# the right option's column, then the wrong ones': GPQA's, SciQ's
RIGHT_FIRST_COLUMNS = (("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
                        "Incorrect Answer 3"),
                       ("correct_answer", "distractor1", "distractor2", "distractor3"))


def continued_columns(columns: tuple, row: dict) -> list:
    """A schema's option columns and those of the row that run on after them, their last mark
    counted on ('option1', 'option2' -> 'option3', 'option4'; 'opa' ... 'opd' -> 'ope'), each
    up to the first empty one: the row's further options were not shown, so a right one among
    them was refused, and a wrong pick among the few shown was the only choice.

    >>> continued_columns(("option1", "option2"), {"option1": 1, "option2": 2, "option3": 3})
    ['option1', 'option2', 'option3']
    """
    columns = list(columns)
    while columns[-1][-1] not in "9zZ":
        after = columns[-1][:-1] + chr(ord(columns[-1][-1]) + 1)
        if _blank(row.get(after)):
            break
        columns.append(after)
    return columns


# one column per option, named by a word for options and a running mark: 'option_a', 'optionB',
# 'Option C', 'opt-d', 'choice1', 'ending0', SIQA's 'answerA' (an 'answer' word with letters
# only: 'answer1', 'answer2' may be two spellings of one answer); capitals alone, A, B, C, D
_OPTION_COLUMN = re.compile(r"([A-Za-z]*?)[ _-]?([A-Za-z]|\d{1,2})")
OPTION_STEMS = ("option", "opt", "op", "choice", "ending", "alternative", "answer", "ans")


def per_option_columns(row: dict, gold: str | None = None) -> tuple[list, list | None] | None:
    """The options of a row with one column per option (`_OPTION_COLUMN`), marked A, B, C, ...
    (any case) or 0, 1, 2, ... or 1, 2, 3, ... in order, up to the first left empty (a file of
    5 option columns for questions of 4), and their labels (None for letters; the numbers
    otherwise: 'choice2' is the gold '2'); None for another row, or where the gold's own column
    (`gold`) is one of them. The options were not shown and the gold 'B' graded as text.

    >>> per_option_columns({"q": "Liquid?", "option_a": "ice", "option_b": "water"})
    (['ice', 'water'], None)
    >>> per_option_columns({"choice1": "ice", "choice2": "water", "choice3": ""})
    (['ice', 'water'], ['1', '2'])
    """
    runs: dict = {}
    for k in row:
        m = _OPTION_COLUMN.fullmatch(str(k))
        stem = m[1].lower() if m else None
        if m and (stem in OPTION_STEMS and not (stem.startswith("ans") and m[2].isdigit())
                  or stem == "" and m[2].isupper()):
            runs.setdefault((m[1], m[2].isdigit(), m[2].isupper()), []).append((m[2], k))
    for (_, digits, _), marks in runs.items():
        marks.sort(key=lambda x: int(x[0]) if digits else x[0])
        start = int(marks[0][0]) if digits else ord(marks[0][0].upper()) - 65
        names = [k for j, (mark, k) in enumerate(marks)
                 if (int(mark) if digits else ord(mark.upper()) - 65) == start + j]
        while names and _blank(row[names[-1]]):
            names.pop()
        if (len(names) < 2 or start not in ((0, 1) if digits else (0,)) or gold in names
                or not all(isinstance(row[k], (str, int, float)) and not isinstance(row[k], bool)
                           for k in names)):
            continue
        return [row[k] for k in names], [m for m, _ in marks[:len(names)]] if digits else None
    return None


def option_columns(row: dict, question, base: int = 0) -> tuple | None:
    """The arguments of `multiple_choice` for a row with one column per option, whose schema
    names the right one (`OPTION_COLUMNS`: PIQA, WinoGrande, SIQA; MedMCQA's by its number,
    counted from `base`: `index_base`, or by its letter a-d); GPQA's and SciQ's right option
    comes first in its columns (`RIGHT_FIRST_COLUMNS`), so they are shuffled, seeded by the row
    (the same order in every run), its columns' names being the labels; so are options scored
    right or wrong (`scored_options`: TruthfulQA lists the right one first too). None for a row
    of another schema.

    >>> option_columns({"sol1": "a", "sol2": "b", "label": 1}, "Goal?")
    ('Goal?', ['a', 'b'], '1', ['0', '1'])
    """
    for columns, right, labels in OPTION_COLUMNS:
        if right in row and all(c in row for c in columns):
            columns = continued_columns(columns, row)   # a third option1: option3
            labels = [str(int(labels[0]) + j) for j in range(len(columns))] if labels else [
                str(j + base) for j in range(len(columns))]
            return question, [row[c] for c in columns], str(row[right]), labels
    for columns in RIGHT_FIRST_COLUMNS:
        if all(c in row for c in columns):
            names = list(columns)
            random.Random(json.dumps([row[c] for c in names], default=str)).shuffle(names)
            return question, [str(row[c]).strip() for c in names], columns[0], names
    scored = scored_options(row)
    if scored:
        options, right = scored
        order = list(range(len(options)))
        random.Random(json.dumps(options, default=str)).shuffle(order)
        return question, [str(options[j]) for j in order], order.index(right), None
    return None


def index_base(rows: list, where: str) -> int:
    """Whether the rows' right options, named by their number in a column of `OPTION_COLUMNS`
    whose labels are not fixed (MedMCQA's `cop`: the hub's copy counts from 0, the original
    JSON files from 1), count from 0 or from 1, as the file's values tell: a 0 is 0-based, the
    option count (4) 1-based. A file whose values say both, or neither (1-3 only), is a
    DataError: the rows would be graded on the option before or after the right one.

    >>> index_base([{"opa": 1, "opb": 2, "opc": 3, "opd": 4, "cop": c} for c in (4, 2)], "f")
    1
    """
    first = rows[0] if rows and isinstance(rows[0], dict) else {}
    for columns, right, labels in OPTION_COLUMNS:
        if labels is None and right in first and all(c in first for c in columns):
            n, last = len(columns), chr(ord("a") + len(columns) - 1)
            seen = {re.sub(r"^(\d+)\.0+$", r"\1", str(r.get(right)).strip())   # 1.0: 1
                    for r in rows if isinstance(r, dict)}
            zero, top = "0" in seen, str(n) in seen
            if zero != top:
                return 0 if zero else 1
            if zero or seen & {str(j) for j in range(1, n)}:    # letters, -1 (withheld): no
                why = (f"holds both 0 and {n}: some rows count from 0, some from 1" if zero else
                       f"holds 1-{n - 1} only, so whether it counts from 0 (as the hub's "
                       "MedMCQA does) or from 1 (its original JSON files) cannot be told")
                raise DataError(f"{where}: {right!r}, the right option's number, {why}; write "
                                f"it as the option's letter (a-{last}) in every row")
    return 0


def _choice_index(row: dict, field: str | None) -> tuple[int, int] | None:
    """(the gold's number, the option count) of a row whose options are a list (`row_choices`)
    and whose gold (`field`; None: its first `ANSWER_COLUMNS`) is a whole number (an int, or a
    CSV's digits) that is none of the options' texts; None for any other row."""
    try:
        row = decoded_lists(row)
    except ValueError:
        return None
    field = field or next((k for k in ANSWER_COLUMNS if k in row), None)
    row = with_nested_fields(row, field)
    gold = row.get(field) if field else None
    mc = row_choices(row, field)
    if isinstance(gold, str) and re.fullmatch(r"\s*\d+(?:\.0+)?\s*", gold):
        gold = int(float(gold))
    if not (mc and isinstance(gold, (int, float)) and not isinstance(gold, bool)
            and float(gold).is_integer() and str(row.get(field)).strip() not in map(str, mc[0])
            and (mc[1] is None or str(row.get(field)).strip() not in mc[1])):
        return None
    return int(gold), len(mc[0])


def choice_base(rows: list, field: str | None, where: str) -> int:
    """Whether the rows' right options, given as a number beside a list of options (`choices`,
    `options`), count from 0 (MMLU's, the hub's) or from 1 (a file of 1-4 for 4 options), as the
    file's values tell: a gold equal to its row's option count is counted from 1 (it was graded
    as the free text '4', the options not shown, and the file's other rows each as the option
    after the right one), a 0 from 0; a file with both is a DataError; one with neither, 0, as
    the hub's datasets count. A file where some gold is beyond its row's options (42 beside a
    list of 2 tools) numbers no options: 0, each row read as it is.

    >>> choice_base([{"question": "q", "choices": ["a", "b", "c"], "answer": k} for k in (3, 1)],
    ...             "answer", "f")
    1
    """
    found = [c for c in (_choice_index(r, field) for r in rows if isinstance(r, dict)) if c]
    if any(not 0 <= g <= n for g, n in found):   # not an option's number: no multiple choice
        return 0
    zero = next((g for g, n in found if g == 0), None)
    top = next((g for g, n in found if g == n), None)
    if zero is not None and top is not None:
        raise DataError(f"{where}: {field or 'the answer'!r}, the right option's number, is 0 in "
                        f"some rows and {top}, the option count, in others: some count from 0, "
                        "some from 1; write it as the option's letter (A, B, ...) in every row")
    return 1 if top is not None else 0


def scored_options(row: dict) -> tuple[list, int] | None:
    """Options that each carry a score, the one right option scored highest (1, the others 0):
    TruthfulQA's `mc1_targets` {"choices", "labels"}, BIG-bench's `multiple_choice_targets` and
    `multiple_choice_scores`, its task files' `target_scores` {option: score}; (the options, the
    index of the right one), None where there are none or several are right.

    >>> scored_options({"mc1_targets": {"choices": ["water", "ice"], "labels": [1, 0]}})
    (['water', 'ice'], 0)
    """
    mc1, by_option = row.get("mc1_targets"), row.get("target_scores")
    if isinstance(mc1, dict):
        options, scores = mc1.get("choices"), mc1.get("labels")
    elif isinstance(by_option, dict):
        options, scores = list(by_option), list(by_option.values())
    else:
        options, scores = row.get("multiple_choice_targets"), row.get("multiple_choice_scores")
    if not (isinstance(options, list) and isinstance(scores, list)
            and len(options) == len(scores) > 1 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in scores)):
        return None
    best = [j for j, x in enumerate(scores) if x == max(scores)]
    return (options, best[0]) if len(best) == 1 and max(scores) > 0 else None


LIST_COLUMNS = ("choices", "options", "endings", "test_list", "public_tests", "private_tests",
                *CONVERSATION_COLUMNS)


# the plural words that name a column of options, in any case and inside a longer name
# ('Options', 'CHOICES', 'answer_choices', 'mc_options', 'options_list'); not a column of some
# of them ('incorrect_options', 'wrong_choices'), which lacks the right one
OPTION_LIST_WORDS = ("choices", "options", "endings")
_SOME_OPTIONS = {"wrong", "incorrect", "false", "bad", "negative", "other", "correct", "right",
                 "true", "num", "n", "count"}


def named_options(row: dict) -> dict:
    """The row with its one column of options under another name or case (`OPTION_LIST_WORDS`:
    'Options', 'answer_choices') also under its own ('options'), and ARC's {"text", "label"}
    in any case ({"Label", "Text"}); any other row as it is. The options were not shown, and a
    gold 'B' was graded as the text 'B'.

    >>> named_options({"q": "Liquid?", "Answer_Choices": ["ice", "water"]})["choices"]
    ['ice', 'water']
    """
    out = dict(row)
    if not any(c in row for c in OPTION_LIST_WORDS):
        found = []
        for k, v in row.items():
            words = [w for w in re.split(r"[_\W]+", str(k).lower()) if w]
            word = next((w for w in words if w in OPTION_LIST_WORDS), None)
            if word and not set(words) & _SOME_OPTIONS and isinstance(v, (list, dict, str)):
                found.append((word, v))
        if len(found) == 1:
            out[found[0][0]] = found[0][1]
    for c in OPTION_LIST_WORDS:
        v = out.get(c)
        if isinstance(v, dict) and {str(k).lower() for k in v} == {"text", "label"} and (
                "text" not in v or "label" not in v):
            out[c] = {str(k).lower(): x for k, x in v.items()}
    return out


def decoded_lists(row: dict) -> dict:
    """The row with its options under their own names (`named_options`), and its options, tests
    and messages columns (`LIST_COLUMNS`) decoded where a CSV
    holds them as JSON text, or in Python's print form (pandas' `to_csv` of a list: "['3', '4']",
    read back only where it prints the same again); one in numpy's print form ("['0' '4']",
    which reads as ['04']) is a ValueError naming it: read as text, the model saw no options and
    was graded on an index.

    >>> decoded_lists({"choices": '["3", "4"]', "answer": "1"})["choices"]
    ['3', '4']
    >>> decoded_lists({"choices": "['3', '4']", "answer": "1"})["choices"]
    ['3', '4']
    """
    out = named_options(row)
    for col in LIST_COLUMNS:
        text = out.get(col)
        if isinstance(text, str) and text.lstrip()[:1] in ("[", "{"):
            try:
                out[col] = json.loads(text)
                continue
            except json.JSONDecodeError:
                pass
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if isinstance(value, (list, dict)) and "".join(repr(value).split()) == "".join(
                    text.split()):
                out[col] = value
                continue
            raise ValueError(f"{col!r} is {text[:40]!r}, a list printed as text (a CSV "
                             "export?), not JSON; save the dataset as .jsonl or .parquet "
                             "(datasets' to_json / to_parquet)")
    return out


def stem_question(row: dict) -> dict:
    """A row whose `question` is an object of its stem and its options, as AI2's own files write
    ARC, OpenBookQA and CommonsenseQA ({"question": {"stem": ..., "choices": [{"text", "label"},
    ...]}, "answerKey": ...}), with the stem as its `question` and the options as its
    `choices` (`row_choices`); any other row as it is. Its question was not text,
    or asked as 'question.stem' without the options it names a letter of.

    >>> stem_question({"question": {"stem": "Liquid?", "choices": [{"text": "ice", "label": "A"}]},
    ...                "answerKey": "A"})["question"]
    'Liquid?'
    """
    asked = row.get("question")
    if not (isinstance(asked, dict) and isinstance(asked.get("stem"), str)):
        return row
    inner = {k: v for k, v in asked.items() if k != "stem" and k not in row}  # question_concept
    return {**inner, **row, "question": asked["stem"]}


def with_parent_fields(row: dict, prompt_field: str) -> dict:
    """The row with the fields beside a prompt named inside an object ('data.question': the
    object's own options, id, context) as columns of its own, where the row has none of that
    name; any other row as it is. A row kept whole inside an object ({"data": {"question",
    "choices", "answer"}}, read with 'data.question' and 'data.answer') had its options not
    shown, and the gold 'B' graded as text.

    >>> with_parent_fields({"data": {"q": "Liquid?", "choices": ["ice", "water"]}}, "data.q")[
    ...     "choices"]
    ['ice', 'water']
    """
    if prompt_field in row or "." not in prompt_field:
        return row
    parent = row
    for key in prompt_field.split(".")[:-1]:
        parent = parent.get(key) if isinstance(parent, dict) else None
    if not isinstance(parent, dict):
        return row
    return {**{k: v for k, v in parent.items() if k not in row}, **row}


def with_nested_fields(row: dict, *fields: str | None) -> dict:
    """The row with each field that names a value inside an object ('answer.value',
    'extra_info.answer': a dotted path of keys) as a column of its own, where the row has no
    column of that name; through a list of objects, the list of their values ('answers.text' of
    [{"text": "Paris", "answer_start": 0}, ...], SQuAD's own JSON files).

    >>> with_nested_fields({"q": "1+1?", "answer": {"value": 2}}, "q", "answer.value")
    {'q': '1+1?', 'answer': {'value': 2}, 'answer.value': 2}
    >>> with_nested_fields({"answers": [{"text": "a"}, {"text": "b"}]}, "answers.text")
    {'answers': [{'text': 'a'}, {'text': 'b'}], 'answers.text': ['a', 'b']}
    """
    out = row
    for field in fields:
        if not field or field in row or "." not in field:
            continue
        value = row
        for key in field.split("."):
            if isinstance(value, str) and value.lstrip()[:1] == "{":   # an object as JSON text
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    break
            if isinstance(value, list) and value and all(
                    isinstance(v, dict) and key in v for v in value):
                value = [v[key] for v in value]             # each object's: SQuAD's answers
                continue
            if not (isinstance(value, dict) and key in value):
                break
            value = value[key]
        else:
            out = {**out, field: value}
    return out


# a numeric answer's stated tolerance: OlympiadBench's `error` ("1e-1"), graded as its judge
# grades it, |answer - gold| <= error (`rewards.answer_verified`)
TOLERANCE_COLUMNS = ("error", "tolerance")


def answer_tolerance(row: dict, gold: str) -> float | None:
    """The absolute tolerance a row states for its gold (`TOLERANCE_COLUMNS`), where the gold
    is one number and the tolerance one positive number; None where the row states none. A
    tolerance that cannot be honoured (one per part of a multi-part answer, "1e-2,1e-2", or a
    gold that is no number) is a ValueError saying so: `load_tasks` grades such a row exactly
    and says so once.

    >>> answer_tolerance({"error": "1e2"}, "6.4 \\\\times 10^{3}"), answer_tolerance({}, "5")
    (100.0, None)
    """
    column = next((c for c in TOLERANCE_COLUMNS if row.get(c) not in (None, "")), None)
    if column is None:
        return None
    value = row[column]
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        tolerance = math.nan
    if not (math.isfinite(tolerance) and tolerance > 0) or isinstance(value, bool):
        raise ValueError(f"{column!r} is {json.dumps(value, default=str)[:40]}, not one "
                         "positive number, so the answer's tolerance cannot be honoured")
    if mathcheck.exact_number(mathcheck.normalize_answer(gold)) is None:
        raise ValueError(f"{column!r} states a tolerance of {tolerance:g}, but the answer "
                         f"{gold[:40]!r} is not one number, so it cannot be honoured")
    return tolerance


# a row's own id (HumanEval's task_id, APPS' problem_id, MATH-500's unique_id, GPQA's Record
# ID, ...): samples and results name the dataset's problem, not its row number
ID_COLUMNS = ("id", "task_id", "problem_id", "question_id", "unique_id", "uuid", "ID",
              "Record ID", "id_string")                     # ReClor's
# what rewards grade a task by (`rewards.task_solved`, `code_rewards`): the loader's to set, never
# a row's own column of that name (SQuAD's `answers`, an answer column beside a code row's tests)
GRADED_FIELDS = ("answer", "answers", "tests", "constraints", "prelude", "tolerance")


def is_file_task(source: str) -> bool:
    """Whether --task names a local file or a folder of one `Dataset` (one split: no test split
    of its own), not a HF id or a folder of splits."""
    path = Path(source)
    return (path.is_file() or (path / "state.json").is_file()
            or not path.is_dir() and file_type(path) in FILE_TYPES)


def load_tasks(source: str, split: str = "train", n: int | None = None, seed: int = 0,
               prompt_field: str = "prompt", answer_field: str | None = "answer",
               tests_field: str = "tests", hf_config: str | None = None) -> list[dict]:
    """Tasks from "math", "humaneval", a local file, a folder (of `datasets`' `save_to_disk`, or
    of data files named by split as the hub's are: `split`'s rows), or a HF dataset id (needs
    the network; "NAME:CONFIG" names one of its configs, as GSM8K's "main", MMLU's "all" or ARC's
    "ARC-Challenge": the scripts' --task has no flag of its own for it).

    `n` tasks are a sample seeded by `seed` (`seeded_sample`: not the first rows of a file
    sorted by subject), all of them where there are no more; `held_out_tasks` gives a file's
    training and held-out tasks.

    `answer_field=None` loads prompts only (for tasks without answers: a row's own answer, tests
    or constraints column is left out, as nothing is to be graded; a multiple-choice row's
    options are listed all the same). Column names are mapped
    with `prompt_field` / `answer_field`; the answer is reduced by `gold_answer` (GSM8K-style
    '#### 72' -> '72', a MATH solution -> its boxed answer; the row's own fields stay in the task,
    those graded aside (`GRADED_FIELDS`: a row's 'answers' column is not the task's);
    a row whose answer is a worked solution with no final answer, a proof (`is_worked_solution`),
    or NuminaMath's placeholder 'proof' / 'notfound' (`NO_ANSWER`) is skipped, and the count
    printed; a copy of an earlier row is read once, `once_each`; an id that names several rows
    is made unique: the second '7' is '7#2');
    a multiple-choice row (the options of MMLU, ARC, AQuA-RAT and others: `row_choices`; one
    column per option, as PIQA, WinoGrande, SIQA, MedMCQA and GPQA: `option_columns`, whose
    schema names the right one) gets them listed in its prompt, graded on the letter
    (`multiple_choice`), and its `question`, which an LLM judge reads (`rewards.question_text`),
    lists them too. A row with no prompt column and a `messages` one (OpenR1) is prompted with
    that conversation up to its last user turn (`conversation_prompt`). A code row's tests
    (`tests_field`, or the schema of HumanEval, MBPP, APPS, TACO, CodeContests or LiveCodeBench:
    `code_tests`) make it a code task, graded by running them, with what the problem statement
    lacks added to its prompt (`code_prompt`). A row in verl's schema (Skywork-OR1's RL data) is
    graded on its `reward_model.ground_truth` (`ground_truth`); one with `constraints` and no
    answer is an instruction-following task (`instruction_tasks`' form).
    """
    if source == "math":
        return math_tasks(n or 64, split, seed)
    if not source.strip():          # Path('') is the current folder
        raise DataError("--task '': an empty name (an unset shell variable?); pass 'math', "
                        "'humaneval' or a .jsonl/.json/.parquet/.csv file")
    if source == "humaneval":
        tasks = humaneval_tasks()
        return tasks[:n] if n else tasks
    path = Path(source)
    # a link in a loop or to nothing was 'as a HF dataset it could not be loaded'
    cli.check_links(path, "--task")
    if is_file_task(source) and not path.is_dir():
        rows, where = rows_from_file(path, split), str(path)   # a missing file: no hub id
    else:
        import datasets
        name, _, config = source.partition(":")    # 'openai/gsm8k:main': a dataset's config
        try:
            if (path / "state.json").is_file():       # a folder of Dataset.save_to_disk
                rows = list(datasets.load_from_disk(str(path)))
            else:       # a hub id, or a folder of data files (data/train-*.parquet, test.jsonl)
                rows = list(datasets.load_dataset(name, hf_config or config or None, split=split))
        except (ConnectionError, OSError, ValueError) as e:
            # offline, a misspelled name or a split it lacks: was a ConnectionError traceback
            why = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
            if "Unknown split" in str(e):          # datasets' words for a split it lacks
                raise DataError(f"--task {source!r} has no split {split!r} ({why}); ask for one "
                                "of its splits (evaluate.py --split)") from None
            if path.is_dir():
                raise DataError(f"{path}: a folder that could not be loaded as a dataset ({why})"
                                "; pass a folder of save_to_disk, one of data files named by "
                                "split (train.jsonl, data/test-*.parquet), or a file") from None
            raise DataError(f"--task {source!r} is not 'math', 'humaneval' or a .jsonl/.json/"
                            f".csv/.parquet file, and as a HF dataset it could not be loaded "
                            f"({type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
                            "). Pass a local file or one of those names (a dataset with configs: "
                            "NAME:CONFIG, e.g. openai/gsm8k:main).") from None
        where = f"{source}[{split}]"
    if answer_field and answer_field.endswith(".ground_truth"):   # 'reward_model.ground_truth'
        answer_field = answer_field.rsplit(".", 1)[0]    # read as verl's (`ground_truth`)
    base = index_base(rows, where) if answer_field is not None else 0   # MedMCQA's cop: 0, 1?
    first = choice_base(rows, answer_field, where)      # a gold 1-4 beside a list of 4: from 1
    stem = path.stem if path.exists() else source       # a row with no id of its own: stem-i
    tasks, unanswered, exact, owns = [], [], [], []
    for i, row in enumerate(rows):
        try:
            row = decoded_lists(with_parent_fields(row, prompt_field))
        except ValueError as e:
            raise DataError(f"{where}: row {i}'s {e}") from None
        row = stem_question(with_nested_fields(row, prompt_field, answer_field))
        field = prompt_field            # OpenR1's rows: no prompt column, a solved conversation
        if field == "prompt" and field not in row:
            field = next((c for c in CONVERSATION_COLUMNS if c in row), field)
        copa = premise_question(row) if field in ("prompt", "question", "premise") else None
        if field not in row and copa is None:
            raise DataError(f"{where}: row {i} has no field {prompt_field!r} (fields: "
                            f"{sorted(row)}). Map the prompt column with --prompt-field "
                            f"{_likely_column(row, prompt_field, PROMPT_COLUMNS)}."
                            + _header_hint(where, row))
        try:
            read = conversation_prompt if field in CONVERSATION_COLUMNS else check_prompt
            prompt = copa or with_context(row, field, read(row[field]))   # COPA's: built
        except ValueError as e:
            raise DataError(f"{where}: row {i}'s {field!r} {e}") from None
        own = next((row[k] for k in ID_COLUMNS if row.get(k) not in (None, "")), None)
        task = {"id": str(own if own is not None else f"{stem}-{i}"), "prompt": prompt}
        if answer_field is not None:            # a row with tests is a code task, whatever
            try:                                # --answer_field names (APPS' 'solutions')
                found = _checked_tests(row, tests_field)
                if found is None and is_test_code(row.get(answer_field)):
                    found = _checked_tests(row, answer_field)   # tests as the answer: run them
                column, tests = found or (None, None)
            except ValueError as e:
                raise DataError(f"{where}: row {i}'s {e}. Fix its tests, or drop the row") from None
            if tests:
                task.update(tests=tests, prompt=code_prompt(prompt, row))
                prelude = (_skywork_tests(ground_truth(row))[1]
                           if column == "reward_model.ground_truth"
                           else entry_point_prelude(row) if column == "test" else "")
                if column == "test" and (code := code_prefix(row, field)):
                    prelude = f"{code.rstrip()}\n\n\n{prelude}"
                    task["tests"] = [{"assert": f"{code}\n{t['assert']}"} for t in tests]
                if prelude:     # Skywork's imports, LeetCode's entry point: before the code
                    task["prelude"] = prelude
        rules = answer_field not in row and isinstance(row.get("constraints"), list)
        options = option_columns(row, task["prompt"], base)
        if answer_field is None:        # prompts only: the options are listed all the same
            named = next((k for k in ANSWER_COLUMNS if k in row), None)
            mc = row_choices(row, named)
            if mc and mc[1] is None:    # a plain list: options if the row's answer names one
                gold = row[named] if named else None
                if (counted := _choice_index(row, None)) and choice_base([row], None, where):
                    gold = counted[0] - 1           # 4 of 4 options, counted from 1: (D)
                if isinstance(gold, str) and not names_option(gold, mc[0]):
                    try:                        # 'Answer: C': the option it states
                        gold = gold_answer(gold)
                    except ValueError:
                        pass
                mc = mc if gold is None or names_option(gold, mc[0]) else None
            question, choices = options[:2] if options else (task["prompt"], mc[0] if mc else [])
            try:
                task.update(multiple_choice(question, choices, None))
            except ValueError as e:
                raise DataError(f"{where}: row {i}'s {e}") from None
        elif options:                   # the schema names the right option
            try:
                task.update(multiple_choice(*options))
            except ValueError as e:
                raise DataError(f"{where}: row {i}'s right option {e}; fix it or drop the "
                                "row") from None
        elif answer_field is not None and "tests" not in task and not rules:  # rules: below
            value = row.get(answer_field)
            if isinstance(value, dict) and "ground_truth" in value:  # --answer_field reward_model
                verl = {"reward_model": value}
            else:                       # verl's schema (`ground_truth`) has no answer column
                verl = {} if answer_field in row else row
            answer = ground_truth(verl) if verl else value
            alternatives = (acceptable_answers(verl) if verl else alternative_answers(
                answer_field, value, task["prompt"] if isinstance(task["prompt"], str)
                else task["prompt"][-1]["content"])) or []
            answer = alternatives[0] if alternatives else answer
            if first and (counted := _choice_index(row, answer_field)):
                answer = counted[0] - first         # the file counts its options from 1
            if answer is None and answer_field not in row:
                # a code row's asserts under a name not read as tests ('test_cases'): map them
                code = next((k for k, v in row.items() if is_test_code(v)), None)
                raise DataError(f"{where}: row {i} has no field {answer_field!r} (fields: "
                                f"{sorted(row)}). Map the answer column with --answer-field "
                                f"{code or _likely_column(row, answer_field, ANSWER_COLUMNS)}"
                                f"{' (its tests: they are run)' if code else ''}, or drop "
                                "the row." + _header_hint(where, row))
            column = answer_field if answer_field in row else "reward_model.ground_truth"
            try:
                task["answer"] = gold_answer(answer)
                answers = list(dict.fromkeys(gold_answer(a) for a in alternatives))
                if len(answers) > 1:        # any of them is right (Skywork's checker, BIG-bench)
                    task["answers"] = answers
            except ValueError as e:
                keys = (list(answer) if isinstance(answer, dict) else list(answer[0]) if
                        isinstance(answer, list) and answer and isinstance(answer[0], dict) else [])
                inside = (f" (or name a field inside it: --answer-field {column}.{keys[0]})"
                          if keys else "")
                other = _likely_column({k: v for k, v in row.items() if v not in (None, "")
                                        and k != column}, answer_field, ANSWER_COLUMNS)
                if answer in (None, "") and other != "NAME":   # MGSM's test rows: answer_number
                    inside = f" (or map the column that holds it: --answer-field {other})"
                if answer in (None, "") and row_choices(row, column):   # CommonsenseQA's test
                    raise DataError(f"{where}: row {i}'s {column!r} {e}: no right option, as in "
                                    "a split whose answers are withheld; use one with answers "
                                    "(evaluate.py --split), or load prompts only (--answer-field "
                                    "none)") from None
                raise DataError(f"{where}: row {i}'s {column!r} {e}. Give each row its answer "
                                f"as a string or a number{inside}, or drop the row") from None
            mc = row_choices(row, answer_field)
            named = value if isinstance(value, list) and not verl else answer   # ["A", "C"]
            if mc and stated_option(named, task["answer"], *mc):
                named = task["answer"]  # 'Answer: C', 'The answer is (B)': the option it states
            if mc and mc[1] is None and not names_option(named, mc[0]):
                mc = None               # a list column of something else: the answer is no option
            if mc:
                task.pop("answers", None)       # graded on the letter, not on option texts
                try:
                    task.update(multiple_choice(task["prompt"], mc[0], named, labels=mc[1]))
                except ValueError as e:
                    if ", not text" in str(e):      # the options' fault, not the gold's
                        raise DataError(f"{where}: row {i}'s {e}, or drop the row") from None
                    if "several right options" in str(e):
                        raise DataError(f"{where}: row {i}'s {column!r} {e}") from None
                    raise DataError(f"{where}: row {i}'s {column!r} {e}; map the column "
                                    "that names the right option with --answer-field NAME, or "
                                    "drop the row") from None
            if not mc and (inline := inline_choice(task["prompt"], task["answer"])):
                task.pop("answers", None)       # graded on the letter, as a listed option is
                task.update(inline)
                mc = True
            if not mc and (unread := unread_options(row, task["answer"], answer_field)):
                raise DataError(f"{where}: row {i}'s {column!r} is {task['answer']!r}, an "
                                f"option's letter, and the row lists no options where they are "
                                f"read, but {unread!r} holds a list the letter may name: rename "
                                "it 'options', or map the column of the answer's text with "
                                "--answer-field NAME")
            if not mc and (is_worked_solution(task["answer"])
                           or task["answer"].strip().lower() in NO_ANSWER):
                unanswered.append(i)        # a proof: nothing to grade a final answer against
                continue
            try:                            # OlympiadBench's error: an answer within it is right
                tolerance = None if mc else answer_tolerance(row, task["answer"])
            except ValueError as e:
                exact.append((i, str(e)))   # graded exactly, and said
                tolerance = None
            if tolerance is not None:
                task["tolerance"] = tolerance
        asked = task["prompt"] if isinstance(task["prompt"], str) else task["prompt"][-1]["content"]
        if "answer" in task and asked.endswith(CHOICE_INSTRUCTION):
            task["question"] = asked    # what a judge reads: the row's own has no options
        # prompts only, nothing is graded; else what grades the task is what was read above,
        # and an instruction row's constraints (`instruction_tasks`' form) as they are
        graded = set(GRADED_FIELDS) - ({"constraints"} if rules and answer_field else set())
        for k, v in row.items():
            if k not in graded:
                task.setdefault(k, v)
        tasks.append(task)
        owns.append(own)
    if answer_field is not None:        # graded: a copy of a row is the same task
        tasks = once_each(tasks, owns, where, len(rows))
    taken, count = {t["id"] for t in tasks}, {}
    for task in tasks:      # a row's id names one problem in samples and results
        own = task["id"]
        count[own] = count.get(own, 0) + 1
        if count[own] > 1:  # the second '7' is '7#2' ('7#3' where a row's own id is '7#2')
            while f"{own}#{count[own]}" in taken:
                count[own] += 1
            task["id"] = f"{own}#{count[own]}"
            taken.add(task["id"])
    if exact:       # a tolerance not honoured: said once, not passed over
        print(f"[data] {where}: {len(exact)} of {len(rows)} rows (row {exact[0][0]}"
              f"{', ...' if len(exact) > 1 else ''}) are graded exactly: {exact[0][1]}")
    if unanswered:
        what = (f"{where}: {len(unanswered)} of {len(rows)} rows (row {unanswered[0]}"
                f"{', ...' if len(unanswered) > 1 else ''}) have no final answer as their "
                f"{answer_field!r}: a worked solution with no \\boxed{{}}, '####' or 'answer', or "
                "a placeholder ('proof', 'notfound': NuminaMath's)")
        if not tasks:
            raise DataError(f"{what}, and nothing can grade a reply against them; map the "
                            "column of final answers with --answer-field NAME, or load them "
                            "as prompts only, ungraded, with --answer-field none")
        print(f"[data] {what}: skipped, as nothing can grade them (prompts only, ungraded: "
              "--answer-field none)")
    return seeded_sample(tasks, n, seed)


def once_each(tasks: list[dict], owns: list, where: str, rows: int) -> list[dict]:
    """The tasks, a row that repeats an earlier one (its own id, `owns`, none or the same; its
    prompt and what grades it: its answer, tests, constraints) read once, and the count said:
    verl's dapo-math-17k.parquet holds each of its 17k prompts 100 times, its aime-2024.parquet
    each problem 32 times, so a sample of training prompts held copies, held-out rows copied
    trained ones, and each problem was scored as 32. Rows with ids of their own that differ are
    two problems.

    >>> len(once_each([{"prompt": "1+1?", "answer": "2"}] * 3, [None] * 3, "f", 3))
    [data] f: 2 of 3 rows repeat an earlier row's prompt and answer: each is read once
    1
    """
    seen, once = set(), []
    for t, own in zip(tasks, owns):
        key = json.dumps([own] + [t.get(k) for k in ("prompt", "answer", "answers", "tests",
                                                     "constraints", "tolerance")], default=str)
        if key not in seen:
            seen.add(key)
            once.append(t)
    if len(once) < len(tasks):
        print(f"[data] {where}: {len(tasks) - len(once)} of {rows} rows repeat an earlier row's "
              "prompt and answer: each is read once")
    return once


def seeded_sample(tasks: list, n: int | None, seed: int) -> list:
    """`n` of the tasks drawn at random, the same for the same seed, kept in the file's order;
    all of them where `n` is None, 0 or covers them. A file's first rows were taken: a file
    sorted by subject (MMLU's) or by difficulty gave a subset of its first subjects.

    >>> rows = list(range(10))
    >>> seeded_sample(rows, 3, 0) == seeded_sample(rows, 3, 0) != rows[:3]
    True
    >>> len(seeded_sample(rows, 0, 0)), len(seeded_sample(rows, 12, 0))
    (10, 10)
    """
    if not n or n >= len(tasks):
        return tasks
    return [tasks[j] for j in sorted(random.Random(seed).sample(range(len(tasks)), n))]


def held_out_tasks(source: str, n_train: int, n_test: int, seed: int = 0,
                   **kw) -> tuple[list[dict], list[dict], str]:
    """(training tasks, held-out tasks, why there are none) of one file (`is_file_task`): the
    seeded sample of its training rows that `load_tasks` gives, and `n_test` tasks of its own
    test split (its rows' `split` column, a .json's "test" rows; else its "validation", "dev",
    ... rows: `SPLIT_NAMES`), else of the rows that sample left out, never one trained on (nor
    a copy of its prompt). A file whose rows are all trained on has none, and says why: it was
    evaluated on its training rows, reported as held-out accuracy.

    `kw` are `load_tasks`' column mappings."""
    every = load_tasks(source, "train", None, seed, **kw)
    train = seeded_sample(every, n_train, seed)
    if not n_test:
        return train, [], ""
    own = None
    named = file_type(Path(source)) == ".json" or all(     # else it has no other split to read
        isinstance(t.get("split"), str) and t["split"] for t in every)
    for name in SPLIT_NAMES[1:] if named else ():   # its test split, else its validation split
        try:
            own = load_tasks(source, name, None, seed, **kw)
            break
        except MissingSplit:            # rows of named splits, none of them this one
            continue
    if own and [(t["id"], str(t["prompt"])) for t in own] != [
            (t["id"], str(t["prompt"])) for t in every]:
        return train, seeded_sample(own, n_test, seed), ""
    taken = {t["id"] for t in train} | {json.dumps(t["prompt"]) for t in train}
    # not a copy of a trained prompt either (DAPO-Math-17k's file holds each about 100 times)
    rest = [t for t in every if t["id"] not in taken and json.dumps(t["prompt"]) not in taken]
    if not rest:
        copies = " or copies of them" if len(train) < len(every) else ""
        return train, [], (f"--task {source} has no test split (a 'split' column), and all its "
                            f"{len(every)} rows are training prompts{copies}; give its rows a "
                            "'split' column (train / test), or lower --num_train_prompts below "
                            f"{len(every)} to hold the rest out")
    return train, seeded_sample(rest, n_test, seed), ""
