"""Fenced code blocks in a model's markdown: `code_blocks(text) -> [(language, code)]`.

The code reward (`rewards.extract_code`) grades the last Python block of a completion, so which
text counts as that block decides the reward. Models write fences as CommonMark allows: longer
fences around code that itself holds three backticks, blocks indented inside a list item, tilde
fences, a tag after text on the same line. A regex up to the next three backticks cuts such a
block short or swallows the next one; this reads fences line by line, in linear time.
"""
from __future__ import annotations

import ast
import functools
import itertools
import math
import re
import textwrap
from typing import NamedTuple

# An opening fence (CommonMark): 3+ backticks or tildes at the start of a line (indented inside a
# list item), then an info string whose first word is the language; a backtick fence's info string
# holds no backtick ("Use ```python``` like this" opens nothing). After text on the same line
# ("Here:```python") only a Python tag opens a block.
_OPEN_FENCE_RE = re.compile(r"^(?P<pre>.*?)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*?)[ \t]*$")
PYTHON_TAGS = ("python", "py", "python3", "py3")


class Block(NamedTuple):
    """One closed fenced block: its language (lower-case, "" untagged), its code, and where it
    stands in the text: `start`, the offset of its opening fence's line; `end`, the offset just
    after its closing fence."""
    lang: str
    code: str
    start: int
    end: int


def code_blocks(text: str) -> list[tuple[str, str]]:
    """The closed fenced blocks of `text` as (language, code), in order; the language lower-case,
    "" for an untagged block. `fenced_blocks` gives where each stands as well.

    A block ends at a line that is only a fence of the same kind, at least as long as the opening
    one -- not at the first three backticks, which may stand inside the code (``s = "```"``); a
    line that ends in the fence closes it only when no such line follows. The code is dedented: a
    block inside a list item is indented as a whole, which Python reads as an IndentationError.
    Only a Python tag opens a block after text on the line (``Here:```python``); a tilde fence
    opens only at the start of a line.

    >>> code_blocks("1. Code:\\n   ```Python\\n   s = '```'\\n   if s:\\n       print(s)\\n   ```")
    [('python', "s = '```'\\nif s:\\n    print(s)\\n")]
    >>> code_blocks("````\\n```python\\nx\\n```\\n````\\nSo:```py3 title\\ny = 1```")
    [('', '```python\\nx\\n```\\n'), ('py3', 'y = 1\\n')]
    """
    return [(b.lang, b.code) for b in fenced_blocks(text)]


def fenced_blocks(text: str) -> list[Block]:
    """`code_blocks` with the position of each block in `text`.

    >>> fenced_blocks("Run:\\n```py\\nprint(1)\\n```\\nthen x = 1```")
    [Block(lang='py', code='print(1)\\n', start=5, end=23)]
    """
    raw = text.split("\n")
    starts = list(itertools.accumulate((len(ln) + 1 for ln in raw), initial=0))
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in raw]
    blocks, i = [], 0
    # fence character -> the shortest fence that no line after here closes: the search for a
    # closing line is not repeated from every later opener (quadratic on a run of openers)
    unclosed: dict[str, int] = {}
    while i < len(lines):
        m = _OPEN_FENCE_RE.match(lines[i])
        i += 1
        if m is None:
            continue
        pre, fence, info = m.group("pre"), m.group("fence"), m.group("info")
        lang = language(info)
        if (fence[0] == "`" and "`" in info or pre.strip() and (
                fence[0] == "~" or lang not in PYTHON_TAGS)):
            continue
        close, edge = _closing_fences(fence[0], len(fence))
        end = None
        if len(fence) < unclosed.get(fence[0], math.inf):
            end = next((j for j in range(i, len(lines)) if close.fullmatch(lines[j])), None)
            if end is None:
                unclosed[fence[0]] = len(fence)
        if end is not None:
            body = lines[i:end]
            stop = starts[end] + len(lines[end].rstrip())
        else:  # no closing line: a fence that starts a line of text ("``` and so")
            # or ends a line of code ("x = 1```")
            end = next((j for j in range(i, len(lines)) if edge.search(lines[j])), None)
            if end is None:
                break  # never closed (a truncated completion): no block
            last = lines[end]
            edge_at = edge.search(last)
            body = lines[i:end] + ([last[:edge_at.start()]] if last.strip()[0] != fence[0] else [])
            stop = starts[end] + len(last[:edge_at.end()].rstrip())
        code = "\n".join(body) + "\n"
        code = textwrap.dedent(code) if code[:1] in " \t\n" else code
        blocks.append(Block(lang, code, starts[i - 1], stop))
        i = end + 1
    return blocks


# The language of an info string: its first name, written with letters, digits and "_+#-." (c++,
# c#, objective-c), after any "{" or "." (pandoc's ``{.python}``); whatever follows it ends it: a
# space, a file name after ":" or "," (``python:solution.py``, ``python,sol.py``), attributes
# after "{" or "=". A version after a dot is dropped (``python3.11`` is python3, ``py3.8`` py3).
_LANGUAGE_RE = re.compile(r"[{.\s]*([\w+#.-]*)")
_VERSION_RE = re.compile(r"(?<=\d)(?:\.\d+)+$")


def language(info: str) -> str:
    """The language that a fence's info string names, lower-case ("" for none).

    >>> [language(i) for i in ("Python3 title='x'", "python:sol.py", "{.py .numberLines}",
    ...                        "python3.11", "py,main.py", "c++", "", "{python}")]
    ['python3', 'python', 'py', 'python3', 'py', 'c++', '', 'python']
    """
    name = _LANGUAGE_RE.match(info).group(1).strip(".").lower()
    return _VERSION_RE.sub("", name)


@functools.lru_cache(maxsize=64)
def _closing_fences(char: str, n: int) -> tuple[re.Pattern, re.Pattern]:
    """For an opening fence of `n` `char`s: a line that closes it, and (`search`) a fence at the
    start or end of a line of text."""
    run = f"{re.escape(char)}{{{n},}}"
    return re.compile(rf"[ \t]*{run}[ \t]*"), re.compile(rf"^[ \t]*{run}|{run}[ \t]*$")


def with_prelude(prelude: str, code: str) -> str:
    """`code` after `prelude`, but its ``from __future__`` imports (and a docstring before them)
    first, where Python requires them: after the prelude, ``from __future__ import annotations``
    was a SyntaxError, and a correct solution got 0. A prelude gets the line break that ends its
    last line if it has none (a task file's ``"prelude": "import math"`` ran into the code's first
    line: every solution a SyntaxError). `code` must compile.

    >>> print(with_prelude("import math\\n", "from __future__ import annotations\\nx = 1\\n"))
    from __future__ import annotations
    import math
    x = 1
    <BLANKLINE>
    """
    if prelude and not prelude.endswith(("\n", "\r")):
        prelude += "\n"
    if not prelude or "__future__" not in code:
        return prelude + code
    body = ast.parse(code).body
    docstring = bool(body) and isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0].value, "value", None), str)
    futures = []
    for node in body[docstring:]:
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            break
        futures.append(node)
    if not futures:
        return prelude + code
    lines = code.splitlines(keepends=True)
    head = "".join(lines[:futures[-1].end_lineno])
    return (head + ("" if head.endswith("\n") else "\n") + prelude
            + "".join(lines[futures[-1].end_lineno:]))
