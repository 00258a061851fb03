"""Tool-augmented reasoning: the policy runs Python in the sandbox while it reasons.

STILL-3 (Chen et al. 2025, "An Empirical Study on Eliciting and Improving R1-like Reasoning
Models", arXiv:2503.04548) lets its reasoning model call a Python interpreter and reports that a
few high-quality examples of tool use are enough to activate it, and that it then lifts accuracy.
The call format is ToRA's (Gou et al. 2024, "ToRA: A Tool-Integrated Reasoning Agent for
Mathematical Problem Solving", §2; also Qwen2.5-Math's tool-integrated reasoning): the model
writes a fenced block, and what it printed comes back as an output block,

    ```python
    from fractions import Fraction
    print(Fraction(3, 4) + Fraction(1, 6))
    ```
    ```output
    11/12
    ```

* `ToolEngine(engine)` wraps any engine (`engines.HFEngine`, `engines.VLLMEngine`): it generates,
  finds the first closed Python block in the new text (```python, ```py, ~~~python, ...: as
  `rewards.extract_code` reads fences, `first_call`), cuts the completion there (so it works
  without stop strings on both engines), runs the block with `sandbox.run_program` (CPU time,
  memory and process limits, no network, none of the host's files), appends the observation
  (which the program cannot close or turn into a chat turn or the end of the thinking:
  `observation`, `plain_ids`), and continues, at most `max_calls` times per rollout. Each call
  runs alone, in a fresh sandbox: not a notebook. A name, a file or a process that an earlier call
  made (this rollout's or another's) is gone -- a block must be whole, as the SFT examples are, and
  a NameError says so in the observation -- and a process a call leaves running ends with it. The
  observation's tokens are marked 0 in `Completion.sampled_mask` (the trainer leaves them out of
  the loss, `engines.logprob_mismatch` out of its comparison) and get log-prob 0.0 where the
  inner engine reports log-probs, so `Completion.logprobs` stays one per completion token.
* `sft_examples`: worked solutions of the synthetic math (arithmetic, fractions, percent) that
  compute with Python, for a short SFT stage that teaches the call format.
* `mask_observations`: SFT leaves the output blocks out of its loss as well (ToRA §2.3: the
  interpreter's outputs are not the model's to predict).
* `tool_metrics`: calls per rollout and the share of calls that failed (by the sandbox's verdict),
  for the training log.
"""
from __future__ import annotations

import bisect
import re
from concurrent.futures import ThreadPoolExecutor

import codeblocks
import data
import engines
import mathcheck
import sandbox

# the header of a traceback, an exception group's too (its lines then start with "  | ")
TRACEBACK_RE = re.compile(r"^( *\+ Exception Group )?Traceback \(most recent call last\):$", re.M)
# a frame's line in a traceback
FRAME_RE = re.compile(r'  File "(?P<file>[^"\n]*)", line (?P<line>\d{1,9}), in [^\n]*')
# what the graders read as structure in a completion's text: the think tags and the turn markers
# (`mathcheck.SPECIAL_TOKEN_RE`); a tool's output holds them only as broken text (`observation`)
MARKER_RE = re.compile(rf"</?think>|{mathcheck.SPECIAL_TOKEN_RE.pattern}")
# the families whose tasks carry an `expr`
TOOL_FAMILIES = ("arithmetic", "fractions", "percent")


def first_call(text: str) -> codeblocks.Block | None:
    """The first closed Python block of `text`, read as `rewards.extract_code` reads fences
    (`codeblocks`: ```py, ```Python, ~~~python, a longer fence, an indented one, trailing spaces);
    its `.code` runs, and the rollout is cut at its `.end`. None if no Python block is closed yet.

    >>> first_call("So\\n```python\\nprint(2 ** 10)\\n```\\n```output\\n9\\n```").code
    'print(2 ** 10)\\n'
    >>> first_call("1. Run:\\n   ~~~Py  \\n   print(1)\\n   ~~~\\nok")
    Block(lang='py', code='print(1)\\n', start=8, end=37)
    >>> first_call("```python\\nprint(1)") is None          # not closed yet: no call
    True
    """
    return next((b for b in codeblocks.fenced_blocks(text) if b.lang in codeblocks.PYTHON_TAGS),
                None)


def exception_text(stderr: str) -> str | None:
    """What the interpreter printed after the frames of the last traceback in `stderr` -- the
    exception's line, the rest of a multi-line message, its notes, whatever was printed after it
    -- or None if `stderr` holds no traceback header.

    >>> exception_text('Traceback (most recent call last):\\n  File "main.py", line 1, in <module>'
    ...                '\\nValueError: a\\nb\\n')
    'ValueError: a\\nb'
    >>> exception_text("bye\\n") is None
    True
    """
    heads = list(TRACEBACK_RE.finditer(stderr))
    if not heads:
        return None
    prefix = "  | " if heads[-1].group(1) else ""   # an exception group: its own lines only
    shown = []
    for line in stderr[heads[-1].end():].split("\n")[1:]:
        if prefix:
            if not line.startswith(prefix):
                break
            line = line[len(prefix):]
        if shown or (line and not line.startswith(" ")):   # frames are indented
            shown.append(line)
    return "\n".join(shown).strip("\n")


def traceback_text(stderr: str, code: str | None = None) -> str | None:
    """`stderr` as a notebook shows a failed cell's: each traceback without the sandbox's own
    frames (its runner's, before the program's first), each frame of the program with its source
    line from `code` (the interpreter cannot show it: the program is no file); None if `stderr`
    holds no traceback header.

    >>> print(traceback_text('Traceback (most recent call last):\\n'
    ...                      '  File "<runner>", line 9, in <module>\\n'
    ...                      '  File "main.py", line 2, in <module>\\nNameError: x\\n',
    ...                      code="y = 1\\nprint(x)\\n"))
    Traceback (most recent call last):
      File "main.py", line 2, in <module>
        print(x)
    NameError: x
    """
    if not TRACEBACK_RE.search(stderr):
        return None
    source = code.split("\n") if code else []
    shown, lines, head = [], stderr.split("\n"), False
    for i, line in enumerate(lines):
        prefix = re.match(r"(?: *\| )?", line).group()   # an exception group's "  | "
        frame = FRAME_RE.fullmatch(line[len(prefix):])
        if TRACEBACK_RE.fullmatch(line):
            head = True
        elif head and frame and frame["file"] in ("<string>", "<runner>"):
            continue                                    # the sandbox's runner
        else:
            head = False
        shown.append(line)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if frame and frame["file"] == "main.py" and 0 < int(frame["line"]) <= len(source) and (
                FRAME_RE.fullmatch(nxt[len(prefix):]) or not nxt[len(prefix):].startswith("    ")):
            shown.append(f"{prefix}    {source[int(frame['line']) - 1].strip()}")
    return "\n".join(shown).rstrip("\n")


def _head(text: str, n: int) -> str:
    """`text` cut to its first `n` characters, saying how many more there were."""
    return text if len(text) <= n else f"{text[:n]}\n... ({len(text) - n} more characters)"


def _tail(text: str, n: int) -> str:
    """`text` cut to its last `n` characters (from a line's start), saying how many came before."""
    if len(text) <= n:
        return text
    kept = text[len(text) - n:]
    kept = kept[kept.index("\n") + 1:] if "\n" in kept[:-1] else kept
    return f"... ({len(text) - len(kept)} more characters)\n{kept}"


def observation(result: sandbox.Output, max_chars: int = 400, code: str | None = None) -> str:
    """The output block for one run, as a notebook shows a cell's: what it printed on stdout, then
    on stderr -- for a failed run the traceback (`traceback_text`, with the source lines of `code`
    where given; ToRA shows the interpreter's error message, so the model can repair its code), or
    the limit it ran past, or that it failed and its exit status. About `max_chars` at most: of a
    long stdout the head, of a long traceback its last frames and its exception's first
    `max_chars` characters, each saying how much was cut.

    >>> observation(sandbox.Output("accepted", "11/12\\n", ""))
    '```output\\n11/12\\n```\\n'
    >>> print(observation(sandbox.Output("runtime_error", "1\\n", "Traceback (most recent call "
    ...       'last):\\n  File "main.py", line 2, in <module>\\nNameError: x\\n'), code="print(1)"
    ...       "\\nprint(x)"), end="")
    ```output
    1
    Traceback (most recent call last):
      File "main.py", line 2, in <module>
        print(x)
    NameError: x
    ```
    >>> observation(sandbox.Output("runtime_error", "", "bye\\n", "program: exit status 1; bye"))
    '```output\\nError: the program failed with exit status 1: bye\\n```\\n'
    >>> print(observation(sandbox.Output("accepted", "```\\nforged\\n", "")), end="")
    ````output
    ```
    forged
    ````
    >>> observation(sandbox.Output("accepted", "</think><|im_end|>", ""))
    '```output\\n<\\u200b/think><\\u200b|im_end|>\\n```\\n'
    """
    out, err = result.stdout, result.stderr
    if result.verdict == "timeout":
        err = "TimeoutError: the program ran past its time limit"
    elif result.verdict == "memory_limit":
        err = "MemoryError: the program ran past its memory limit"
    elif result.verdict == "output_limit":
        err = "OutputLimitError: the program printed more than the output limit"
    elif (shown := traceback_text(err, code)) is not None:   # a thread's, in a run that ends well
        err = shown
    elif result.verdict != "accepted":
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        err = lines[-1] if lines else ""
        if result.verdict == "syntax_error":   # the parent's compile error (sandbox.compile_error)
            if not re.match(r"[A-Za-z]+Error: ", err):
                err = f"SyntaxError: {err}"
        else:
            # No traceback: `sys.exit('bye')` prints only 'bye', `os._exit(7)` or a signal print
            # nothing, a traceback longer than the sandbox's stderr tail (64 KiB) lost its header.
            # Shown bare, the model would take a failed run for output: say it failed.
            status = re.search(r"exit status (-?\d+)", result.detail)
            head = ("Error: the program failed"
                    + (f" with exit status {status.group(1)}" if status else ""))
            err = f"{head}: {err}" if err else head
    out, err = out.strip("\n"), err.strip("\n")
    # stderr gets at least half the room when both are long; of a traceback the exception (from its
    # first line) is kept before the frames above it
    room = min(len(err), max(max_chars - len(out), max_chars // 2))
    exception = exception_text(err) or ""
    if exception and err.endswith(exception) and len(err) > room:
        frames = err[:len(err) - len(exception)].rstrip("\n")
        exception = _head(exception, room)
        err = "\n".join(x for x in (_tail(frames, room - len(exception)) if
                                     room > len(exception) else "", exception) if x)
    else:
        err = _tail(err, room) if result.verdict == "accepted" else _head(err, room)
    text = "\n".join(x for x in (_head(out, max(max_chars - len(err), 0)) if out else "", err)
                     if x)
    # The program prints what it likes, so its output must not be able to end its block: the fence
    # is longer than any run of backticks in the text (CommonMark: a block closes only at a fence at
    # least as long), and a printed "```", "```output ... ```" or "```python" stays inside it. The
    # chat template's tokens a program prints (<|im_end|>, </think>) stay text (`plain_ids`), and
    # that text is broken by a zero-width space (`MARKER_RE`), since the graders read the text: a
    # printed "</think>\boxed{42}<|im_end|>" was the rollout's final answer (mathcheck reads after
    # the last </think>, up to a turn marker) though the policy never ended its thinking, and
    # whatever the policy answered after it was ignored.
    text = MARKER_RE.sub(lambda m: m.group()[0] + "\u200b" + m.group()[1:], text)
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    return f"{fence}output\n{text}\n{fence}\n"


def plain_ids(tokenizer, text: str) -> list[int]:
    """`text` encoded with ordinary tokens only: a string that spells an added or special token
    (`<|im_end|>`, `<|im_start|>`, `<|endoftext|>`; Qwen3's `<think>`, `<tool_response>`) comes
    out as the characters it is made of, never as that token.

    A tool's output is the program's, and the program is the policy's: `tokenizer(text)` would turn
    a printed `<|im_end|>` into the end-of-turn token itself, so a program could end the
    assistant's turn in the middle of a rollout (the stop token inside `completion_ids`, which
    `decode_completion` then drops from the text) and open a user or system turn of its choosing
    that the policy would go on from. Spelled out, the observation stays text inside its block.

    >>> import models
    >>> tok = models.load_tokenizer()
    >>> ids = plain_ids(tok, "a<|im_end|>b")
    >>> tok.decode(ids) == "a<|im_end|>b" and tok.eos_token_id not in ids
    True
    """
    added = getattr(tokenizer, "added_tokens_encoder", None) or tokenizer.get_added_vocab()
    if not added or not any(a in text for a in added):
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    # the longest first, so that a token whose string contains another's is found whole
    pattern = "|".join(re.escape(a) for a in sorted(added, key=len, reverse=True))
    ids, pos = [], 0
    for m in re.finditer(pattern, text):
        if m.start() > pos:
            ids += tokenizer(text[pos:m.start()], add_special_tokens=False)["input_ids"]
        # its first character alone, then the rest (shorter than the token, so never it)
        ids += tokenizer(m.group()[0], add_special_tokens=False)["input_ids"]
        ids += plain_ids(tokenizer, m.group()[1:])
        pos = m.end()
    if pos < len(text):
        ids += tokenizer(text[pos:], add_special_tokens=False)["input_ids"]
    return ids


class ToolEngine:
    """An engine whose rollouts may call Python: the interface of `engines.HFEngine`.

    `max_calls` python blocks run per rollout; after that, blocks are plain text. Observation
    tokens count towards `SamplingParams.max_new_tokens`, so a completion never exceeds it.
    Each tool call runs with `timeout_s` CPU seconds and `memory_mb` MiB (`sandbox.Limits`).
    """

    def __init__(self, engine, max_calls: int = 2, timeout_s: float = 2.0, memory_mb: int = 256,
                 max_output_chars: int = 400, workers: int = 4):
        if max_calls < 0:
            raise ValueError(f"--max_tool_calls {max_calls}: must be 0 (no calls) or more")
        self.engine, self.max_calls, self.workers = engine, max_calls, workers
        self.limits = dict(timeout_s=timeout_s, memory_mb=memory_mb)
        self.max_output_chars = max_output_chars
        self.tokenizer, self.stop_ids = engine.tokenizer, engine.stop_ids
        self.name = f"{getattr(engine, 'name', 'engine')}+tools"

    def sync_weights(self, model) -> float:
        return self.engine.sync_weights(model)

    def close(self):
        getattr(self.engine, "close", lambda: None)()

    def run_calls(self, codes: list[str]) -> list[tuple[str, bool]]:
        """Run the blocks in the sandbox, in parallel; (observation, whether the run failed) for
        each, in order. Failed is the sandbox's verdict (exit status, limits), not the text."""
        def one(code):
            result = sandbox.run_program(code, **self.limits)
            return (observation(result, self.max_output_chars, code),
                    result.verdict != "accepted")
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(codes)))) as pool:
            return list(pool.map(one, codes))

    def _take(self, c: engines.Completion, seg: engines.Completion, budget: int, calls: int):
        """Append the policy's tokens of segment `seg` to `c`, at most `budget` of them and only
        up to the end of its first python block if `calls` allows one; the block's code or None."""
        ids, logprobs = seg.completion_ids[:budget], seg.logprobs
        code = None
        if calls < self.max_calls:
            text = engines.decode_completion(self.tokenizer, ids, self.stop_ids)
            if call := first_call(text):   # the shortest prefix of tokens that closes the block
                closed = text[:call.end]
                lo, hi = 1, len(ids)
                while lo < hi:
                    mid = (lo + hi) // 2
                    if engines.decode_completion(self.tokenizer, ids[:mid],
                                                 self.stop_ids).startswith(closed):
                        hi = mid
                    else:
                        lo = mid + 1
                if (lo < len(ids) and not self.tokenizer.decode(ids[lo:lo + 1]).strip("\n")
                        and ids[lo] not in self.stop_ids):
                    lo += 1   # the policy's own line break after the fence stays the policy's
                ids = ids[:lo]
                code = (first_call(engines.decode_completion(self.tokenizer, ids, self.stop_ids))
                        or call).code
        c.completion_ids += ids
        c.sampled_mask += (seg.sampled_mask or [1] * len(seg.completion_ids))[:len(ids)]
        if c.logprobs is not None:
            c.logprobs = c.logprobs + list(logprobs[:len(ids)]) if logprobs is not None else None
        stopped = bool(ids) and ids[-1] in self.stop_ids
        c.truncated = code is None and not stopped
        return code

    def generate(self, prompts, params: engines.SamplingParams) -> list[engines.Completion]:
        tok = self.tokenizer
        first = self.engine.generate(prompts, params)
        out = []
        for seg in first:   # each rollout starts empty and takes its first segment
            c = engines.Completion(seg.prompt_index, seg.prompt_ids, [], "", False,
                                   logprobs=[] if seg.logprobs is not None else None,
                                   sampled_mask=[], tool_failed=[])
            out.append(c)
        calls = [0] * len(out)
        codes = {i: self._take(c, seg, params.max_new_tokens, 0)
                 for i, (c, seg) in enumerate(zip(out, first))}
        pending = [i for i, code in codes.items() if code is not None]
        rnd = 0
        while pending:
            rnd += 1
            # ---- run the blocks, append their observations (not sampled: mask 0, log-prob 0) ----
            for i, (obs, failed) in zip(pending, self.run_calls([codes[i] for i in pending])):
                c = out[i]
                c.tool_failed.append(failed)
                text = engines.decode_completion(tok, c.completion_ids, self.stop_ids)
                # plain tokens only: a printed `<|im_end|>` must not end the turn (plain_ids)
                obs_ids = plain_ids(tok, ("" if text.endswith("\n") else "\n") + obs)
                obs_ids = obs_ids[:max(params.max_new_tokens - len(c.completion_ids), 0)]
                c.completion_ids += obs_ids
                c.sampled_mask += [0] * len(obs_ids)
                if c.logprobs is not None:
                    c.logprobs += [0.0] * len(obs_ids)
                calls[i] += 1
                # no room left to answer
                c.truncated = len(c.completion_ids) >= params.max_new_tokens
            pending = [i for i in pending if not out[i].truncated]
            if not pending:
                break
            # ---- continue each rollout after its observation ----
            budgets = [params.max_new_tokens - len(out[i].completion_ids) for i in pending]
            cont = self.engine.generate(
                [out[i].prompt_ids + out[i].completion_ids for i in pending],
                engines.SamplingParams(**{
                    **params.__dict__, "n": 1, "max_new_tokens": max(budgets),
                    "seed": None if params.seed is None else params.seed + 1_000_003 * rnd}))
            # a shorter budget is the same sample cut earlier: sampling is left to right
            codes = {i: self._take(out[i], seg, b, calls[i])
                     for i, seg, b in zip(pending, cont, budgets)}
            pending = [i for i in pending if codes[i] is not None]
        for c in out:
            c.text = engines.decode_completion(tok, c.completion_ids, self.stop_ids)
        return out


def tool_metrics(completions: list[engines.Completion]) -> dict[str, float]:
    """{"tool_calls": mean calls per rollout, "tool_errors": share of calls whose run failed}, from
    what `ToolEngine` recorded (`Completion.tool_failed`: the sandbox's verdict). Not from the
    observation's text: a failed run may print anything (`raise StopIteration`, a class `Oops`, a
    multi-line message), and a run that succeeds may print "ValueError: ...".

    >>> c = engines.Completion(0, [], [], "", False, tool_failed=[False, True])
    >>> tool_metrics([c, engines.Completion(0, [], [], "", False)])
    {'tool_calls': 1.0, 'tool_errors': 0.5}
    """
    failed = [f for c in completions for f in (c.tool_failed or [])]
    return {"tool_calls": len(failed) / max(len(completions), 1),
            "tool_errors": sum(failed) / max(len(failed), 1)}


# ----------------------------------------------------------------------------------------------
# SFT with tool calls
# ----------------------------------------------------------------------------------------------
def printed(answer: str) -> str:
    """What `print` shows for a synthetic answer: `\\\\frac{a}{b}` -> a/b (a `Fraction`), integers
    as is.

    >>> printed("-\\\\frac{5}{12}"), printed("42")
    ('-5/12', '42')
    """
    return re.sub(r"\\frac\{(\d+)\}\{(\d+)\}", r"\1/\2", answer)


def tool_solution(task: dict) -> str:
    """A worked solution that computes the task's expression in Python (a synthetic task with an
    `expr`: arithmetic, fractions, percent), with the observation the sandbox returns for it."""
    code = f"print({task['expr']})"
    if "Fraction(" in task["expr"]:
        code = f"from fractions import Fraction\n{code}"
    result = observation(sandbox.Output("accepted", printed(task["answer"]) + "\n", ""))
    return (f"I will compute this exactly in Python.\n```python\n{code}\n```\n{result}"
            f"So the answer is {task['answer']}.")


def sft_examples(n: int, seed: int = 0, families: tuple[str, ...] = TOOL_FAMILIES) -> list[dict]:
    """SFT examples in sft.py's format: the reasoning calls Python once, the answer is a boxed
    sentence (as sft.py's synthetic traces). STILL-3: a few such examples activate tool use."""
    unknown = set(families) - set(TOOL_FAMILIES)
    if unknown:
        raise ValueError(
            f"tool solutions exist for {', '.join(TOOL_FAMILIES)}, not {sorted(unknown)}")
    tasks = data.math_tasks(n, "train", seed, families=list(families))
    return [{"messages": data.build_messages(t) + [
                {"role": "assistant", "reasoning_content": tool_solution(t),
                 "content": f"The final answer is $\\boxed{{{t['answer']}}}$."}],
             "reference": t["answer"]}
            for t in tasks]


def token_spans(tokenizer, ids: list[int], window: int = 8) -> list[tuple[int, int]]:
    """The character span of each token in `tokenizer.decode(ids)`, found by decoding.

    A token's length is what it adds to the decode of the `window` tokens before it, not to the
    whole prefix: decoding every prefix cost O(n^2) -- 30 s for one 16K-token example, minutes for
    32K -- and the differences are the same (a decoder's joins -- a byte sequence split across
    tokens, a leading space dropped -- depend on the neighbouring tokens only).

    >>> import models
    >>> tok = models.load_tokenizer()
    >>> ids = tok("a π b", add_special_tokens=False)["input_ids"]
    >>> ["a π b"[s:e] for s, e in token_spans(tok, ids)]
    ['a', ' π', ' b']
    """
    spans, end = [], 0
    for k in range(len(ids)):
        ctx = ids[max(0, k - window):k]
        grow = len(tokenizer.decode(ctx + [ids[k]])) - len(tokenizer.decode(ctx))
        spans.append((end, end + grow))
        end += grow
    return spans


def mask_observations(tokenizer, ids: list[int], mask: list[int]) -> tuple[list[int], list[int]]:
    """(ids, mask) with 0 on every token that lies wholly inside an output block (```output ...
    ```), so SFT does not teach the model to predict the interpreter's answers."""
    text = tokenizer.decode(ids)
    if "```output\n" not in text:
        return ids, mask
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if enc["input_ids"] == list(ids):
        spans = enc["offset_mapping"]
    else:   # decode -> encode is not the identity here: character spans token by token
        spans = token_spans(tokenizer, ids)
    # the blocks ```output\n ... \n```\n? in order, each closed by a fence as long as its own
    # (`observation` makes it longer than any run of backticks the output holds), found with
    # str.find: a regex scan would go to the end from every unclosed opener (quadratic), and testing
    # every token against every block is tokens x blocks; both took seconds on one long example
    blocks, pos = [], 0
    while (a := text.find("```output\n", pos)) >= 0:
        start = a
        while start > pos and text[start - 1] == "`":
            start -= 1
        close = "\n" + text[start:a + 3]
        if (b := text.find(close, a + 10)) < 0:
            break
        pos = b + len(close) + text.startswith("\n", b + len(close))
        blocks.append((start, pos))
    starts = [a for a, _ in blocks]
    inside = []
    for s, e in spans:   # the last block that starts at or before the token must hold it whole
        k = bisect.bisect_right(starts, s) - 1
        inside.append(k >= 0 and e <= blocks[k][1])
    return ids, [0 if hidden else m for m, hidden in zip(mask, inside)]
