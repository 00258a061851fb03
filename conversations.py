"""Conversations to train on: a row of another dataset's schema read into Qwen3 messages, and
the checks that it can be trained on.

`row_example` reads one row: {messages} (OpenAI's, with text parts, tool calls and roles under
other names: `chat_message`), {"prompt", "completion"} (TRL's), the query and reply under other
names (`QUERY_KEYS`, `REPLY_KEYS`; a preference row's "chosen"), a chat rendered as one text
(`rendered_messages`), ShareGPT, Gemini (`_gemini_messages`), Glaive's function calling
(`_glaive_row`), Alpaca / Dolly / Magpie, {"question", "answer"} (GSM8K's: `_answer_example`),
the Responses API's items, Bedrock's Converse blocks (`_typed_parts`), Sky-T1's marked traces,
OpenAI Harmony (`harmony_messages`); a reply's reasoning under other names or tags becomes its
`reasoning_content`, Mistral's and Hermes' tool calls in its text its `tool_calls`.
`reply_examples` makes one example per reply to train (`trains`: a turn marked weight 0 is
context only), and `check_conversation` refuses, in one line naming the message, one that cannot
be trained on: no reply, a reply that disobeys the latest /think or /no_think, markers of another
chat format, tool results that answer no call, and the rest its docstring lists.

`last_query`, `latest_switch`, `reasoning_of` and `without_reasoning` read a conversation's
structure for `sft.fuse_modes` (where its query is, which soft switch stands, an answer's
reasoning, an answer without it).
"""
from __future__ import annotations

import json
import re
import unicodedata

import chat_template
import data
import dataset_tasks
from chat_template import END_THINK, IM_END, IM_START, THINK, check_messages

# ----------------------------------------------------------------------------------------------
# Conversation structure for thinking-mode fusion (`sft.fuse_modes`)
# ----------------------------------------------------------------------------------------------
# A soft switch: `/think` or `/no_think` as a word of its own, at the start or after whitespace
# (not `/thinking`, nor the end of a path or URL like `example.org/think`). The latest one in the
# user and system turns up to the last query is the one the model is taught to obey (§4.3).
SOFT_SWITCH = re.compile(r"(?<!\S)/(no_think|think)(?!\w)")


def is_query(message: dict) -> bool:
    """A user turn that is a question, not a tool result wrapped in <tool_response></tool_response>
    (the template's test)."""
    c = message.get("content")
    return message.get("role") == "user" and isinstance(c, str) and not (
        c.startswith("<tool_response>") and c.endswith("</tool_response>"))


def last_query(messages: list[dict]) -> int:
    """Index of the last user turn that is a query (`is_query`): the template's
    `last_query_index`. Assistant turns after it are the answer (with tool calls, several turns);
    the ones before it are history."""
    for i in range(len(messages) - 1, -1, -1):
        if is_query(messages[i]):
            return i
    raise data.DataError(f"a fusion example has no user query to put /think or /no_think in "
                         f"(roles: {[m['role'] for m in messages]}); give it a user turn")


def latest_switch(messages: list[dict], upto: int) -> str | None:
    """'think', 'no_think' or None: the latest soft switch in the user and system turns of
    messages[:upto + 1]."""
    return soft_switches(messages[:upto + 1])[-1]


def soft_switches(messages: list[dict]) -> list[str | None]:
    """`latest_switch` up to each message, in one pass.

    >>> soft_switches([{"role": "user", "content": "q /no_think"},
    ...                {"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}])
    ['no_think', 'no_think', 'no_think']
    """
    found, out = None, []
    for m in messages:
        if m["role"] in ("user", "system") and isinstance(m.get("content"), str):
            found = (SOFT_SWITCH.findall(m["content"]) or [found])[-1]
        out.append(found)
    return out


def reasoning_of(message: dict) -> str:
    """The reasoning the template reads from an assistant turn: `reasoning_content`, else what
    precedes `</think>` in the content ('' without one).

    >>> reasoning_of({"role": "assistant", "content": "<think>\\n2+2=4\\n</think>\\n\\n4"})
    '2+2=4'
    """
    if isinstance(message.get("reasoning_content"), str):
        return message["reasoning_content"]
    content = message.get("content") or ""
    if END_THINK not in content:
        return ""
    return content.split(END_THINK)[0].rstrip("\n").split(THINK)[-1].lstrip("\n")


def without_reasoning(message: dict) -> dict:
    """An assistant turn with an empty reasoning: `reasoning_content` "" and no inline think
    block (the template renders the empty block `<think>\n\n</think>\n\n` on a final turn)."""
    content = message.get("content")
    if isinstance(content, str) and END_THINK in content:     # the answer without its think block
        content = split_reasoning(content)[1]
    return {**message, "reasoning_content": "", "content": content}


# ----------------------------------------------------------------------------------------------
# A conversation to train on
# ----------------------------------------------------------------------------------------------
THINK_TAG = re.compile(r"</?think>")


# characters that show nothing: Unicode's format characters (category Cf: zero-width space and
# joiners, the byte order mark, the word joiner, a soft hyphen) and the letters drawn blank (the
# Braille blank, the Hangul fillers)
INVISIBLE = "\u2800\u3164\u115f\u1160\uffa0"


def blank(text: str) -> bool:
    """Whether a text shows nothing: whitespace and `INVISIBLE` characters only.

    >>> blank("\u200b \ufeff"), blank("\u00a0"), blank("0")
    (True, True, False)
    """
    return not "".join(c for c in text if unicodedata.category(c) != "Cf"
                       and c not in INVISIBLE).strip()


def check_conversation(messages) -> None:
    """Raise ValueError, naming the message and the fix, on a conversation that cannot be an SFT
    example. On top of the template's rules (`check_messages`), these: the template renders such
    conversations as the official one does (at inference a model's own malformed output must not
    make it raise), but the reply it yields is not the one to train.
    * It ends in the assistant turn to train on (not marked `"weight": 0`: `trains`), after a
      user query: with no query the template renders the reply without a think block. The reply
      has an answer (or a tool call).
    * The reply obeys the latest `/think` or `/no_think` in the user and system turns up to its
      query (`latest_switch`), or in a system turn after it: reasoning after /think, none after
      /no_think.
    * The turn before that reply is not an assistant turn without reasoning: as the prompt's last
      turn it gets an empty think block, as history none, so the reply cannot be cut out.
    * An assistant turn holds its reasoning once: in `reasoning_content` (then no think tags in
      the content), or as one `<think>...</think>` (or `...</think>`) at the start of the content.
      The template keeps what precedes the first `</think>` as the reasoning and what follows the
      last as the answer: the text between several blocks, or before `<think>`, is dropped; an
      unclosed `<think>`, or one next to `reasoning_content`, becomes a second block in the answer.
    * No text holds `<|im_start|>` or `<|im_end|>`: the tokenizer reads them as turn boundaries
      (a fake turn in the prompt; a reply trained to end, then go on); nor a lone UTF-16
      surrogate (JSON's "\\ud83d" alone), which the tokenizer cannot read. A reply holds no
      other chat format's turn structure (`check_turn_markers`: `</s>` at its end, `[/INST]` at
      its start, ...).
    * Tool-call arguments given as a string are a JSON object, and a call's name needs no JSON
      escape (the template writes both as they are): the model learns to write them. A
      reply's calls are written once, as the template writes them (`check_text_tool_calls`).
    * No turn is a prefill (`PREFIX_MARKS`), nor a reply cut off by its generator
      (`check_finished`: finish_reason "length", "truncated": true, ...), nor a tool result
      that answers no call (`check_tool_results`). Turns of one role are not told apart only
      by their "name" (`check_speakers`: the template does not render it; one name on them all
      is dropped).

    >>> try:
    ...     check_conversation([{"role": "user", "content": "q"},
    ...                         {"role": "assistant", "content": "<think>\\nr ... so 4"}])
    ... except ValueError as e:
    ...     print(str(e).split(":")[0])
    message 1 (assistant) has an unclosed <think>
    """
    check_messages(messages)
    check_reply(messages)
    check_turns(messages)


def check_reply(messages: list[dict], switches: list | None = None) -> None:
    """`check_conversation`'s rules for the reply at the end of a conversation (the rules on its
    last turn, and on the soft switch and the turn before it). `switches`: the `soft_switches`
    of these messages, or of a conversation they begin (computed if not given)."""
    n = len(messages)
    if messages[-1]["role"] != "assistant":
        raise ValueError(f"an SFT conversation must end in the assistant turn to train on; this "
                         f"one ends in a {messages[-1]['role']!r} turn (message {n - 1}): append "
                         "the assistant's reply, or drop the trailing turns")
    reply = messages[-1]
    if not trains(reply, f"message {n - 1}"):
        raise ValueError(f"message {n - 1} (assistant), the reply to train, is marked not to "
                         f"train ({_short({k: reply[k] for k in train_marks(reply, '')})}): "
                         "end the conversation at a reply to train, or drop the row")
    answer = (reply.get("content") or "").split(END_THINK)[-1]
    if blank(answer) and not reply.get("tool_calls"):
        raise ValueError(f"message {n - 1} (assistant), the reply to train, has no answer (no "
                         "text after its reasoning, no tool call): the model would learn to stop "
                         "there; drop the row")
    if not any(is_query(m) for m in messages):
        raise ValueError(f"an SFT conversation needs a user query before the reply (roles "
                         f"{[m['role'] for m in messages]}); without one the template renders the "
                         "reply without its think block: add the user's question")
    q = last_query(messages)
    switch = (switches or soft_switches(messages))[q]
    at = q      # a switch in a system turn after the query stands too
    for k in range(q + 1, n):
        found = SOFT_SWITCH.findall(messages[k]["content"]) if (
            messages[k]["role"] == "system") else []
        if found:
            at, switch = k, found[-1]
    thinks = any(reasoning_of(m).strip() for m in messages[q + 1:] if m["role"] == "assistant")
    if switch is not None and thinks != (switch == "think"):
        raise ValueError(f"the reply {'has' if thinks else 'has no'} reasoning, yet the latest "
                         f"soft switch before it (up to message {at}) is /{switch}: the model "
                         f"would learn to ignore /{switch}; "
                         + ("drop the reasoning or the flag" if thinks else
                            "give the reply its reasoning, or drop the flag"))
    if n > 1 and messages[-2]["role"] == "assistant" and not reasoning_of(messages[-2]):
        raise ValueError(f"messages {n - 2} and {n - 1} are consecutive assistant turns and the "
                         "first has no reasoning: the template renders it with an empty think "
                         "block as the prompt's last turn, without one as history, so the reply "
                         "cannot be cut out; merge consecutive assistant turns, or give the "
                         "earlier one its reasoning_content")


def check_turns(messages: list[dict]) -> None:
    """`check_conversation`'s rules for each turn of a conversation, its speakers and its tool
    results."""
    check_speakers(messages)
    for i, m in enumerate(messages):
        where = f"message {i} ({m['role']})"
        if i and m["role"] != "tool" and _same_turn(messages[i - 1], m):
            raise ValueError(f"messages {i - 1} and {i} are the same {m['role']} turn twice "
                             f"({_short(m.get('content'))}; an exporter's retry, a line "
                             "copied?): the model would learn a conversation no one had; drop "
                             "one")
        trains(m, f"message {i}")
        calls = [c.get("function") or c for c in m.get("tool_calls") or []]
        texts = message_texts(m)
        for token in (IM_START, IM_END):
            if any(token in t for t in texts):
                raise ValueError(f"{where} holds {token}, which the tokenizer reads as a turn "
                                 "boundary, not text: remove it or write it differently")
        for t in texts:
            check_text(t, where)
        written = next((t for t in (m.get("content"), m.get("reasoning_content")) if m["role"] != (
            "tool") and isinstance(t, str) and dataset_tasks.missing_mark(t)), None)
        if written is not None:     # a tool may answer "NULL"
            raise ValueError(f"{where} has {_short(written)}, a missing cell written out as text "
                             "(pandas' 'nan', Excel's '#N/A', SQL's 'NULL'): the model would "
                             "learn it as the text; fill it in, or drop the row")
        placeholder = MEDIA_PLACEHOLDER.search(m["content"]) if m["role"] == "user" else None
        if placeholder:
            raise ValueError(f"{where} holds {placeholder[1]}, a placeholder for media this "
                             "recipe cannot train on (text-only models): the model would learn "
                             "to answer about media it never sees; drop the row")
        if is_query(m) and blank(SOFT_SWITCH.sub("", m["content"])):   # "" or "/think"
            raise ValueError(f"{where} is an empty query ({_short(m['content'])}): the model "
                             "would learn to answer a question never asked; give its text, or "
                             "drop the row")
        for k, c in enumerate(calls):
            if json.dumps(c["name"], ensure_ascii=False)[1:-1] != c["name"]:
                raise ValueError(f"{where}: tool call {k} is named {_short(c['name'])}, which "
                                 "the template writes into its JSON as it is (a quote, backslash "
                                 "or control character unescaped): the model would learn calls "
                                 "no parser reads; rename the function")
            if isinstance(c["arguments"], str):
                try:
                    args = json.loads(c["arguments"])
                except ValueError:
                    args = None
                if not isinstance(args, dict):
                    raise ValueError(f"{where}: tool call {k} has arguments "
                                     f"{c['arguments'][:40]!r}, not a JSON object; give them as "
                                     "a dict or a JSON object string")
        prefix = [k for k in PREFIX_MARKS if m.get(k)]
        if prefix:
            raise ValueError(f"{where} is marked {prefix[0]!r}, a start for the model to continue "
                             "(a prefill), not a whole reply: trained as one it would teach the "
                             "model to stop there; give the whole reply, or drop the row")
        check_finished(m, where)
        if m["role"] == "assistant":
            check_think_block(m, where)
            for t in filter(None, (m.get("content"), m.get("reasoning_content"))):
                check_turn_markers(t, where)
            check_text_tool_calls((m.get("content") or "").split(END_THINK)[-1], where,
                                  m.get("tool_calls"))
    check_tool_results(messages)


def _same_turn(a: dict, b: dict) -> bool:
    """Whether two turns are one turn given twice: the same role, text (surrounding whitespace
    aside), reasoning and tool calls. A tool's result may repeat (two calls, one result)."""
    def said(m):
        return tuple(t.strip() if isinstance(t, str) else t for t in (
            m.get("content"), m.get("reasoning_content"))) + (
            json.dumps(m.get("tool_calls"), sort_keys=True, default=str),)
    return a["role"] == b["role"] and said(a) == said(b)


def check_speakers(messages: list[dict]) -> None:
    """ValueError on turns of one role told apart only by their "name" (OpenAI's: the people of
    a group chat, few-shot examples as system turns named example_user and example_assistant):
    the template, as the official one, does not render names (nor at inference), so the model
    would read several speakers as one. One name on every turn of a role is dropped, harmlessly;
    a tool result's name is its function's, which its call gives.

    >>> try:
    ...     check_speakers([{"role": "user", "content": "hi", "name": "al"},
    ...                     {"role": "user", "content": "yo", "name": "bo"}])
    ... except ValueError as e:
    ...     print(str(e)[:60])
    messages 0 and 1 (user) are from different speakers ('al' an
    """
    for role in ("system", "user", "assistant"):
        named = [(i, m.get("name") or None) for i, m in enumerate(messages) if m["role"] == role]
        other = next(((i, n) for i, n in named if n != named[0][1]), None)
        if other:
            raise ValueError(f"messages {named[0][0]} and {other[0]} ({role}) are from different "
                             f"speakers ({named[0][1]!r} and {other[1]!r}), told apart only by "
                             "'name', which the template does not render: the model would read "
                             "them as one speaker; write who speaks into the text ('Ann: ...'), or "
                             "drop the names if one speaker is meant")


def check_tool_results(messages: list[dict]) -> None:
    """ValueError on tool results that answer no call: the template renders each run of tool
    messages as the results of the calls before it, in order (it reads no ids), so the model
    would learn to answer from results it never asked for, or read one call's result as
    another's. A run follows an assistant turn with tool calls, one result per call (an
    assistant turn's calls, unless the conversation ends there, are answered so, or by the
    template's own user turn of <tool_response> blocks, which also follows calls), and where
    calls and results carry ids (`id`, `tool_call_id`) they match, in order.

    >>> try:
    ...     check_tool_results([{"role": "user", "content": "q"}, {"role": "tool", "content": "6"}])
    ... except ValueError as e:
    ...     print(str(e)[:51])
    message 1 (tool) is a tool result with no tool call
    """
    for i, m in enumerate(messages[:-1]):
        calls, after = m.get("tool_calls") or [], messages[i + 1]
        if m["role"] != "assistant" or not calls or (after["role"] == "user"
                                                      and not is_query(after)):
            continue
        j = next((k for k in range(i + 1, len(messages)) if messages[k]["role"] != "tool"),
                 len(messages))
        if j - i - 1 != len(calls):
            raise ValueError(f"message {i} (assistant) makes {len(calls)} tool call(s) and "
                             f"{j - i - 1} tool result(s) follow: the template pairs results "
                             "with calls in order, so the model would answer from a result it "
                             "never got (or read one as another's); give one result per call")
    for i, m in enumerate(messages):
        prev = messages[i - 1] if i else {}
        if m["role"] == "user" and not is_query(m) and not (
                prev.get("role") == "assistant" and prev.get("tool_calls")):
            raise ValueError(f"message {i} (user) is wrapped in <tool_response></tool_response>, "
                             "which the template reads as a tool result, with no tool call "
                             "before it: give the call, or unwrap the text if it is a query")
    i = 0
    while i < len(messages):
        if messages[i]["role"] != "tool":
            i += 1
            continue
        j = next((k for k in range(i, len(messages)) if messages[k]["role"] != "tool"),
                 len(messages))
        prev = messages[i - 1] if i else {}
        calls = (prev.get("tool_calls") or []) if prev.get("role") == "assistant" else []
        if not calls:
            as_text = prev.get("role") == "assistant" and "<tool_call>" in (
                prev.get("content") or "")
            raise ValueError(f"message {i} (tool) is a tool result with no tool call before it "
                             + (f"(message {i - 1} writes its call as text, read as a call only "
                                "at the end of its answer: give it as tool_calls)" if as_text
                                else "(the turn before is no assistant turn with tool_calls): "
                                "give the call, or drop the result"))
        ids = [c.get("id") for c in calls if isinstance(c, dict)]
        got = [m.get("tool_call_id") for m in messages[i:j]]
        if all(ids) and len(ids) == len(calls) and all(got):
            unknown = [g for g in got if g not in ids]
            if unknown:
                raise ValueError(f"a tool result of messages {i} to {j - 1} has tool_call_id "
                                 f"{unknown[0]!r}, which no call of message {i - 1} has (ids "
                                 f"{ids}): match each result to its call")
            if got != [c for c in ids if c in got]:
                raise ValueError(f"the tool results of messages {i} to {j - 1} ({got}) are in "
                                 f"another order than the calls of message {i - 1} ({ids}); the "
                                 "template matches them by order: give them in the calls' order")
        i = j


# a generator that stopped because it ran out of tokens, as its record says so, in any case or
# camelCase: its stop reason (a key of the words finish, stop, done or incomplete and reason or
# details: OpenAI's and vLLM's finish_reason, Anthropic's and Bedrock's stop_reason, Gemini's
# finishReason, Ollama's done_reason, ChatGPT's finish_details {"type"}, the Responses API's
# incomplete_details {"reason"}) being one of `CUT_REASONS`; a flag that it was cut
# (`CUT_FLAGS` true: "truncated") or did not finish (`DONE_FLAGS` false: "is_complete"); the
# Responses API's "status": "incomplete"
CUT_REASONS = ("length", "max_tokens", "max_output_tokens", "max_new_tokens", "max_length",
               "max_completion_tokens", "token_limit", "max_token")
CUT_FLAGS = ("truncated", "is_truncated", "was_truncated", "cut_off", "cutoff", "is_cut_off")
DONE_FLAGS = ("complete", "is_complete", "completed", "finished", "is_finished")


def cut_off(record: dict):
    """The key of a record (a message, a row) that marks it cut off by its generator (see
    `CUT_REASONS`), or None.

    >>> cut_off({"done_reason": "length"}), cut_off({"isTruncated": "true"}), cut_off({"x": 1})
    ('done_reason', 'isTruncated', None)
    """
    for k, v in record.items():
        name = key_name(k)
        words = set(name.split("_")) if isinstance(name, str) else set()
        said = v.get("type", v.get("reason")) if isinstance(v, dict) else v
        if (words & {"finish", "stop", "done", "incomplete"} and words & {"reason", "details"}
                and isinstance(said, str) and key_name(said.strip()) in CUT_REASONS
                or name in CUT_FLAGS and _mark_value(v) is True
                or name in DONE_FLAGS and _mark_value(v) is False
                or name == "status" and isinstance(v, str) and v.strip().lower() == "incomplete"):
            return k
    return None


def check_finished(record: dict, where: str) -> None:
    """ValueError if a reply (or a row, for its reply) is marked cut off by its generator
    (`cut_off`: it ran out of tokens): its end is lost, and trained as a whole reply it would
    teach the model to stop mid-answer, as `sft_data.teacher_examples` drops its own unfinished
    samples.

    >>> try:
    ...     check_finished({"role": "assistant", "content": "So x =", "finish_reason": "length"},
    ...                    "message 1 (assistant)")
    ... except ValueError as e:
    ...     print(str(e)[:58])
    message 1 (assistant) is marked cut off by its generator (
    """
    cut = cut_off(record)
    if cut:
        raise ValueError(f"{where} is marked cut off by its generator ({cut} "
                         f"{_short(record[cut])}): the reply's end is lost, and trained as whole "
                         "it would teach the model to stop mid-answer; drop the row, or "
                         "regenerate the reply")


# a final assistant turn marked as the start of a reply for the model to continue (Mistral's and
# DeepSeek's "prefix", Moonshot's "partial", transformers' continue_final_message)
PREFIX_MARKS = ("prefix", "partial", "continue_final_message")


# where a multimodal row's media go in its text (LLaVA's, LLaMA-Factory's): a line of its own
MEDIA_PLACEHOLDER = re.compile(r"^[ \t]*(<(?:image|video|audio)>)[ \t]*$", re.M)


# a message's training mark, in any case or camelCase: axolotl's `message_field_training`
# (commonly "train" or "weight", OpenAI's fine-tuning "weight") and other names of it
# (`TRAIN_MARKS`: 0 or false keeps an assistant turn out of the loss, as context only; 1 or
# true, the default for assistant turns, trains it), or a mark the other way round
# (`MASK_MARKS`: torchtune's "masked", a "mask" or "no_loss" true is context only); true and
# false also as text (a CSV's "False", "0"); null is no mark (SlimOrca's system and user turns).
# Another key with a word of `MARK_WORDS` holding such a value ("loss_mask", "ignore", "skip":
# which way it reads is not known) is named.
TRAIN_MARKS = ("weight", "train", "training", "trainable", "trained", "is_train", "learn",
               "loss", "in_loss", "include_in_loss")
MASK_MARKS = ("mask", "masked", "is_masked", "no_loss", "mask_loss", "ignore_loss", "no_train")
MARK_WORDS = frozenset(("mask", "masked", "masking", "loss", "train", "training", "trainable",
                        "trained", "weight", "learn", "ignore", "ignored", "exclude", "excluded",
                        "skip", "skipped"))


def _mark_value(value):
    """A training mark's value as read: text "true", "false", "1", "0" (any case) as the value
    (a CSV's), anything else as given."""
    said = value.strip().lower() if isinstance(value, str) else None
    return {"true": True, "false": False, "1": 1, "0": 0, "1.0": 1, "0.0": 0}.get(said, value)


def train_marks(message: dict, where: str) -> dict:
    """{key: whether it says to train} of a message's training marks (`TRAIN_MARKS`,
    `MASK_MARKS`, any spelling; null: none). ValueError on a mark that is not 0/1/true/false,
    and on a key of `MARK_WORDS` that is neither, holding such a value.

    >>> train_marks({"role": "assistant", "Masked": "True", "weight": 0}, "message 1")
    {'Masked': False, 'weight': False}
    """
    out = {}
    for k, v in message.items():
        name, v = key_name(k), _mark_value(v)
        if v is None or not isinstance(name, str):
            continue
        if name in TRAIN_MARKS or name in MASK_MARKS:
            if v not in (0, 1):         # True == 1, False == 0.0 == 0
                raise ValueError(f"{where} has the training mark(s) {_short({k: message[k]})}; "
                                 "give 0/1 or false/true (0: context only, not trained)")
            out[k] = bool(v) != (name in MASK_MARKS)
        elif set(name.split("_")) & MARK_WORDS and (isinstance(v, bool) or v in (0, 1)):
            raise ValueError(f"{where} has {_short({k: message[k]})}, a training mark not read "
                             "(which way it reads is not known): give 'weight': 0 (context "
                             "only, not trained) or 1 instead")
    return out


def check_row_marks(row: dict) -> None:
    """ValueError on a row marked not to train as a whole (a training mark of `TRAIN_MARKS` or
    `MASK_MARKS` on the row, saying no: OpenAI's "weight": 0, "train": false): SFT would train
    all its replies; and on a row "weight" other than 0 or 1, which is not applied (each row is
    trained once). A mark that is not 0/1 or true/false (NeMo's "mask": "User", which masks
    what is masked anyway) is none.

    >>> try:
    ...     check_row_marks({"messages": [], "Weight": "0"})
    ... except ValueError as e:
    ...     print(str(e)[:51])
    the row is marked not to train ({'Weight': '0'}): d
    """
    for k, v in row.items():
        name, said = key_name(k), _mark_value(v)
        if name in TRAIN_MARKS + MASK_MARKS and not isinstance(said, str) and said in (0, 1):
            if bool(said) == (name in MASK_MARKS):
                raise ValueError(f"the row is marked not to train ({_short({k: v})}): drop the "
                                 "row (a mark on a message keeps that turn as context only)")
        elif name == "weight" and isinstance(said, (int, float)) and not isinstance(said, bool):
            raise ValueError(f"the row has the training weight {_short(v)}, which is not "
                             "applied (each row is trained once): give 0 or 1, or repeat the "
                             "row to weigh it more")


def trains(message: dict, where: str) -> bool:
    """Whether an assistant turn is a reply to train (its `train_marks`, else True); a mark on
    another turn may only say no (only assistant replies are trained). ValueError on a mark that
    is not 0/1/true/false, or marks that disagree.

    >>> trains({"role": "assistant", "content": "a", "weight": 0}, "message 1")
    False
    """
    marks = train_marks(message, where)
    if len(set(marks.values())) > 1:
        raise ValueError(f"{where} has the training marks "
                         f"{_short({k: message[k] for k in marks})}, which disagree; give one, "
                         "0/1 or false/true (0: context only, not trained)")
    train = next(iter(marks.values()), True)
    if train and marks and message.get("role") != "assistant":
        raise ValueError(f"{where} ({message.get('role')}) is marked to train "
                         f"({_short({k: message[k] for k in marks})}), but only assistant "
                         "replies are trained: drop the mark")
    return train and message.get("role") == "assistant"


def reply_examples(example: dict) -> list[dict]:
    """One example per reply of a conversation: for every assistant turn to train (after the first
    user query, not marked `"weight": 0` / `"train": false`: `trains`), the conversation up to
    and including it, so `sft.encode` trains it as the last turn. The Qwen3 template drops the
    reasoning of turns before the last query, so training every reply in one sequence would teach
    the earlier ones without their think block, a form the model never writes at inference; as
    the last turn each is trained with its own reasoning, as the model writes it (the cost: the
    history is encoded once per reply; its turns are checked once, each reply's rules per reply:
    `check_turns`, `check_reply`). The steps of a tool loop are replies too (the model
    learns to write its tool calls). A single-turn conversation is one example, as given; the
    row's "reference" goes with its last reply. ValueError (`check_conversation`, naming the
    message) on a conversation, or a reply of it, that cannot be trained on."""
    messages = example["messages"]
    check_messages(messages)
    first = next((i for i, m in enumerate(messages) if is_query(m)), len(messages))
    ends = [k for k, m in enumerate(messages) if k > first and trains(m, f"message {k}")]
    if messages[-1]["role"] != "assistant" or not ends:
        check_conversation(messages)    # no reply to train: names what is missing
    switches, out = soft_switches(messages), []
    for k in ends:
        check_reply(messages[:k + 1], switches)
        out.append({**example, "messages": messages[:k + 1],
                    "reference": example.get("reference") if k == len(messages) - 1 else None})
    check_turns(messages[:ends[-1] + 1])    # once: each example is a prefix of these turns
    return out


def message_texts(message: dict) -> list[str]:
    """The texts of a message the template writes: its content, reasoning, and its tool calls'
    names and arguments (dict arguments as JSON text, as the template writes them)."""
    calls = [c.get("function") or c for c in message.get("tool_calls") or []]
    texts = [message.get("content"), message.get("reasoning_content")] + [
        v for c in calls for v in (c["name"], c["arguments"])]
    return [t if isinstance(t, str) else json.dumps(t, ensure_ascii=False)
            for t in texts if t is not None]


def check_special_tokens(messages: list[dict], tools, tokenizer) -> None:
    """ValueError if a text holds one of the tokenizer's special tokens (`<|endoftext|>`, a
    reserved or code-metadata token, ...): the tokenizer reads it as that token, not as text, so
    a reply holding its end-of-text marker trains the model to emit it mid-answer. `<think>` and
    the other added tokens that are not special are text as intended. Needs the tokenizer, so
    `sft.encode` runs it; `check_conversation` refuses <|im_start|> and <|im_end|> at load.

    >>> import types
    >>> tok = types.SimpleNamespace(added_tokens_decoder={
    ...     0: types.SimpleNamespace(content="<|endoftext|>", special=True)})
    >>> try:
    ...     check_special_tokens([{"role": "user", "content": "q<|endoftext|>"}], None, tok)
    ... except ValueError as e:
    ...     print(str(e)[:47])
    message 0 (user) holds <|endoftext|>, a special
    """
    specials = [t.content for t in tokenizer.added_tokens_decoder.values() if t.special]
    texts = [(f"message {i} ({m['role']})", message_texts(m)) for i, m in enumerate(messages)]
    texts.append(("'tools'", [json.dumps(tools, ensure_ascii=False)] if tools else []))
    for where, ts in texts:
        token = next((s for s in specials for t in ts if s in t), None)
        if token is not None:
            raise ValueError(f"{where} holds {token}, a special token of the tokenizer, which "
                             "reads it as that token, not as text: remove it or write it "
                             "differently (or drop the row)")


def check_text(value, where: str) -> None:
    """ValueError if `value` (a text, or JSON data rendered as text) holds a lone UTF-16
    surrogate (JSON's "\\ud83d" alone: an emoji cut in two), which the tokenizer cannot read (it
    raised a bare TypeError)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError as e:
        raise ValueError(f"{where} holds {text[e.start]!r} at character {e.start}, half of a "
                         "UTF-16 surrogate pair (an emoji cut in two?), which is not text: "
                         "repair it or drop the row") from None


# other chat formats' turn structure: an end of turn or text (Llama 3 and 4, Gemma, Phi-3,
# Llama 2 / Mistral, OpenAI Harmony, DeepSeek, Cohere; <|endoftext|>, a special token of Qwen's
# tokenizer, is `check_special_tokens`'), and a turn's header (the same formats'; a tool's
# result, which the template writes in a user turn)
OTHER_TURN_ENDS = ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|eot|>", "<end_of_turn>",
                   "<eos>", "<|end|>", "</s>", "[/INST]", "<|return|>", "<|call|>",
                   "<｜end▁of▁sentence｜>", "<|END_OF_TURN_TOKEN|>")


TURN_HEADER = re.compile(r"<\|start_header_id\|>\w*<\|end_header_id\|>|<start_of_turn>\w*\n"
                         r"|<\|header_start\|>\w*<\|header_end\|>"
                         r"|\[INST\](?:(?!\[INST\]).)*?\[/INST\]"     # up to the next [INST]:
                         r"|<\|(?:user|assistant|system)\|>\n"           # linear
                         r"|<\|start\|>\w+(?:<\|channel\|>|<\|message\|>)|<\|channel\|>\w+"
                         r"|<｜(?:User|Assistant)｜>|<\|START_OF_TURN_TOKEN\|><\|\w+_TOKEN\|>"
                         r"|<tool_response>\n", re.S)


def check_turn_markers(text: str, where: str) -> None:
    """ValueError if a reply's text holds another chat format's turn structure: it starts or
    ends with an end-of-turn marker (`OTHER_TURN_ENDS`, [INST]'s `[/INST]` too; `</s>` unless it
    closes an HTML `<s>`), or holds a turn's header (`TURN_HEADER`). It is a chat rendered in
    that format copied into one reply (or the rest of a rendered query), and the model would learn
    to write the markers and the next turn; a reply that mentions a marker in its text (`Llama 3
    ends a turn with <|eot_id|>.`) is text.

    >>> try:
    ...     check_turn_markers("4<|eot_id|>", "message 1 (assistant)")
    ... except ValueError as e:
    ...     print(str(e)[:60])
    message 1 (assistant) ends with <|eot_id|>, another chat for
    """
    side, end = next(((side, e) for e in OTHER_TURN_ENDS for side, edge in (
        ("ends", text.rstrip().endswith), ("starts", text.lstrip().startswith)) if edge(e)),
        (None, None))
    if end == "</s>" and "<s>" in text:     # HTML's strikethrough
        end = None
    if end:
        raise ValueError(f"{where} {side} with {end}, another chat format's end of turn: the "
                         "model would learn to write it in its reply (a rendered chat copied "
                         "into one reply?); remove it, or give each turn as a message")
    header = TURN_HEADER.search(text)
    if header:
        raise ValueError(f"{where} holds {_short(header[0])}, which opens another turn (another "
                         "chat format's header, or a tool's result): a conversation copied into "
                         "one reply, whose next turns (or tool results) the model would learn to "
                         "write; give each turn as a message")


# a tool call written in the text, as the template writes one (Hermes' format): its JSON object
TEXT_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?)\s*(?:</tool_call>|$)", re.S)


# a tool call in another model's format, opening a line: Mistral's [TOOL_CALLS], Glaive's
# <functioncall>, Llama 3.1's <|python_tag|>, DeepSeek-V3's and R1's, Kimi K2's
OTHER_TOOL_CALLS = re.compile(r"^[ \t]*(\[TOOL_CALLS\]|<functioncall>|<\|python_tag\|>"
                              r"|<｜tool▁calls▁begin｜>|<\|tool_calls_section_begin\|>)", re.M)


def outside_code(text: str) -> str:
    """`text` without its markdown code blocks: what lies between a run of three backticks or
    more and the next such run (an unclosed one: to the end, kept).

    >>> outside_code("a\\n```\\n[TOOL_CALLS]\\n```\\nb")
    'a\\n\\nb'
    """
    fences = [m.span() for m in re.finditer(r"`{3,}", text)]
    kept, pos = [], 0
    for (start, _), (_, end) in zip(fences[::2], fences[1::2]):
        kept.append(text[pos:start])
        pos = end
    return "".join(kept) + text[pos:]


def check_text_tool_calls(answer: str, where: str, structured=None) -> None:
    """ValueError if an answer writes a tool call as text (`<tool_call>{...}</tool_call>`, how
    the template renders structured tool_calls and Hermes-format data hold them) whose JSON is
    not {"name": ..., "arguments": {...}}, or next to `structured` tool calls (the template
    renders both: the calls made twice), or in another model's format (`OTHER_TOOL_CALLS`): the
    model would learn to write calls that the parser (vLLM's hermes) cannot read. Tags named in
    prose (no JSON object after them, a marker not opening a line, or in a code block) are
    text.

    >>> try:
    ...     check_text_tool_calls('<tool_call>{"name": calc}</tool_call>', "message 1")
    ... except ValueError as e:
    ...     print(str(e)[:48])
    message 1 writes a tool call as text whose JSON
    """
    other = OTHER_TOOL_CALLS.search(outside_code(answer))     # shown in code: text
    if other:
        raise ValueError(f"{where} writes a tool call in another model's format ({other[1]} ...):"
                         " the model would learn calls the template's parser (<tool_call>) does "
                         "not read; give them as tool_calls" + (
                             " (Mistral's are read so where they end the answer: [TOOL_CALLS] "
                             'and a JSON list of {"name", "arguments": {...}}, or '
                             "[TOOL_CALLS]name[ARGS]{...} each)"
                             if other[1] == "[TOOL_CALLS]" else ""))
    if structured and TEXT_TOOL_CALL.search(answer):
        raise ValueError(f"{where} writes a tool call as text in its content and has tool_calls: "
                         "the template renders both, so the model would learn to make its calls "
                         "twice; give each call once, as tool_calls")
    for body in TEXT_TOOL_CALL.findall(answer):
        try:
            call = json.loads(body)
        except ValueError:
            call = None
        if not (isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]
                and isinstance(call.get("arguments"), dict)):
            raise ValueError(f"{where} writes a tool call as text whose JSON is {_short(body)}, "
                             'not {"name": ..., "arguments": {...}}: the model would learn to '
                             "write calls no parser reads; fix it, or give it as tool_calls")


def check_think_block(message: dict, where: str) -> None:
    """`check_conversation`'s rule for one assistant turn: its reasoning given once."""
    content, reasoning = message.get("content") or "", message.get("reasoning_content")
    other = [k for k in REASONING_NAMES if message.get(k) is not None]
    if reasoning is None and other:
        raise ValueError(f"{where} has {other[0]!r}, which the template does not read (the "
                         "reasoning would be lost): name it reasoning_content")
    tags = THINK_TAG.findall(content)
    if isinstance(reasoning, str) and (tags or THINK_TAG.search(reasoning)):
        raise ValueError(f"{where} has reasoning_content and think tags (in it or in content): "
                         "the template would render two think blocks; give the reasoning once, "
                         "in reasoning_content without tags")
    if tags == [THINK]:
        raise ValueError(f"{where} has an unclosed <think>: close it with </think> before the "
                         "answer (or drop the tag, or the example if it was cut off)")
    if tags not in ([], [END_THINK], [THINK, END_THINK]):
        raise ValueError(f"{where} has the think tags {tags} in its content: the template keeps "
                         "only the text before the first </think> and after the last; give one "
                         "<think>...</think> block at the start")
    if tags[:1] == [THINK] and content.split(THINK)[0].strip():
        raise ValueError(f"{where} has text before <think>, which the template drops: move it "
                         "after </think>, into the answer")
    check_answer_blocks(content.split(END_THINK)[-1], where)


def boxed_sentence(answer: str) -> str:
    """The final sentence of a trace.

    >>> print(boxed_sentence("3/4"))
    The final answer is $\\boxed{3/4}$.
    """
    return f"The final answer is $\\boxed{{{answer}}}$."


def check_tools(tools, messages=None) -> None:
    """A row's optional "tools" (the functions the model may call) is a list of JSON objects, as
    `apply_chat_template(tools=...)` takes: the template lists them in the system turn, so the
    model learns to call them from their signatures (ValueError otherwise). Where they are given
    (and named), each tool call of `messages` calls one of them: a call of a function not listed
    teaches the model to call functions it was never offered.

    >>> check_tools([{"type": "function", "function": {"name": "python"}}])
    >>> try:
    ...     check_tools("python")
    ... except ValueError as e:
    ...     print(str(e)[:36])
    'tools' is 'python'; give a list of
    """
    if tools is None:
        return
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ValueError(f"'tools' is {str(tools)[:40]!r}; give a list of function signatures "
                         '(JSON objects such as {"type": "function", "function": {"name": ...}})')
    check_text(tools, "'tools'")
    names = [(t.get("function") if isinstance(t.get("function"), dict) else t).get("name")
             for t in tools]
    if not names or not all(isinstance(n, str) for n in names):
        return
    for i, m in enumerate(messages or []):
        for c in m.get("tool_calls") or [] if isinstance(m, dict) else []:
            name = (c.get("function") or c).get("name") if isinstance(c, dict) else None
            if isinstance(name, str) and name not in names:
                raise ValueError(f"message {i} ({m.get('role')}) calls {name!r}, which 'tools' "
                                 f"does not list ({_short(names)}): list its signature in "
                                 "'tools', or drop the row")


def row_example(row: dict) -> dict:
    """The example of one row of `sft_data.jsonl_examples` (ValueError on a row of no known form),
    with the row's "tools" if it has them; its messages as `chat_message` writes them. Once a
    reply's Sky-T1 markers have become its think block, the system turn asking for the markers
    (Sky-T1's, Bespoke-Stratos', OpenThoughts') is dropped: the model would learn that a prompt
    asking for them is answered without them. A row's fields in another case or camelCase
    ("Question", "reasoningContent": `ROW_FIELDS`) are read as these (`spelled_keys`)."""
    row = spelled_keys(_unwrapped_row(row), ROW_FIELDS, "the row")
    check_finished(row, "the row")
    check_row_marks(row)
    if isinstance(row.get("chat"), str) and row["chat"].lstrip().startswith("USER: "):
        row = _glaive_row(row)
    row = {k: _json_list(v, k) if k in ("messages", "conversations", "contents", "tools") else v
           for k, v in row.items()}
    row = {k: _columns(v, k) if key_name(k) in CONVERSATION_KEYS else v for k, v in row.items()}
    named = [k for k in row if isinstance(k, str) and k.lower() in CONVERSATION_KEYS
             and k not in CONVERSATION_KEYS[:3]]
    if named and not any(k in row for k in CONVERSATION_KEYS[:3]):   # "dialog", "Messages", ...
        value = _json_list(row[named[0]], named[0])
        if isinstance(value, list):
            row = {**{k: v for k, v in row.items() if k != named[0]}, "messages": value}
    example = _row_messages(row)
    messages = example["messages"]
    if isinstance(messages, list):      # turns without roles, Responses API items: as messages
        messages = _response_items(_turns(messages))
    messages = example["messages"] = _with_system(row, messages)
    if isinstance(messages, list):
        read = [(m, chat_message(r, i)) for i, m in enumerate(messages)
                for r in _tool_results(_typed_parts(m), i)]
        if any(_marked(m) and not _marked(r) for m, r in read):    # a reply's markers converted
            read = [(m, r) for m, r in read if not (r.get("role") == "system" and _marked(r))]
        # a system turn that shows nothing (or null) is no system prompt (at inference none is
        # rendered; kept, it rendered an empty system turn): dropped, as the row's "system" of ""
        example["messages"] = [r for _, r in read if not (
            isinstance(r, dict) and r.get("role") == "system" and "content" in r and (
                r["content"] is None or isinstance(r["content"], str) and (
                    blank(r["content"]) or dataset_tasks.missing_mark(r["content"]))))]
        _check_prompt_fields(row, example["messages"])
        check_unread_texts(row, ROW_FIELDS, [t for m in example["messages"] if isinstance(
            m, dict) for t in (m.get("content"), m.get("reasoning_content"))
            if isinstance(t, str)], "the row")
    tools = _gemini_tools(row["tools"]) if "contents" in row and row.get("tools") else row.get(
        "tools")
    if row.get("toolConfig") not in (None, {}):     # Amazon Bedrock's, as tools
        if tools is not None:
            raise ValueError("the row has 'tools' and 'toolConfig' (Bedrock's): keep one")
        tools = _bedrock_tools(row["toolConfig"])
    if row.get("functions") is not None:        # OpenAI's legacy functions, as tools
        if tools is not None:
            raise ValueError("the row has 'tools' and 'functions' (OpenAI's legacy name): keep one")
        functions = _json_list(row["functions"], "functions")
        tools = ([{"type": "function", "function": f} for f in functions]
                 if isinstance(functions, list) else functions)    # else check_tools names it
    check_thinking_mode(row, example["messages"])
    return {**example, "tools": tools} if tools is not None else example


# a row's fields that are part of its prompt where a form reads them (Alpaca's instruction and
# input, Dolly's context, a query under any of `QUERY_KEYS`) or that set its scene (PIPPA's and
# Character-AI's persona, scenario, a RAG row's document); any case or camelCase
PROMPT_FIELDS = ("prompt", "question", "query", "problem", "input", "instruction", "instructions",
                 "context", "persona", "personality", "scenario", "character", "background",
                 "document", "documents", "passage", "knowledge")


def _check_prompt_fields(row: dict, messages) -> None:
    """ValueError on a row's prompt field (`PROMPT_FIELDS`, a text) that no turn of its
    conversation's prompt (its system, user and tool turns) holds: the form the row was read in
    does not read it (a "persona" or "instruction" beside ShareGPT's conversations, SQuAD's
    "context" beside its question and answer), so the reply would be trained on a prompt
    without it. One a turn holds (UltraChat's "prompt", repeated as its first user turn;
    Alpaca's, joined into its query) is read."""
    texts = [m["content"] for m in messages if isinstance(m, dict) and m.get("role") != (
             "assistant") and isinstance(m.get("content"), str)] if isinstance(
                 messages, list) else []
    for k, v in row.items():
        if not (key_name(k) in PROMPT_FIELDS and isinstance(v, str) and v.strip()) or _rendered(
                v) or dataset_tasks.missing_mark(v):    # a chat rendered as text: its turns
            continue
        if not any(v.strip() in t for t in texts):
            raise ValueError(f"the row has {k!r} ({_short(v)}), which no turn of its "
                             "conversation holds: the reply would be trained without it; put it "
                             "in the turn it belongs to (the system or user message), or drop it")


def check_thinking_mode(row: dict, messages) -> None:
    """ValueError if a row marked with the template's mode (`enable_thinking`, at its top or in
    its `chat_template_kwargs`, SmolTalk2's) has a reply to train in the other mode: reasoning
    where thinking is off (at inference the template prefills the empty think block, so the
    model would learn to think where it is told not to), none where it is on, as a reply must
    obey a soft switch (`check_reply`). Another of `chat_template_kwargs` that is set (SmolLM3's
    xml_tools, custom_instructions) is one this template does not read: a ValueError too.

    >>> try:
    ...     check_thinking_mode({"enable_thinking": False}, [
    ...         {"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>r"
    ...                                                 "</think>a"}])
    ... except ValueError as e:
    ...     print(str(e)[:58])
    the row is marked enable_thinking false, yet message 1 (as
    """
    kwargs = row.get("chat_template_kwargs")
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    unread = next((k for k, v in kwargs.items() if k != "enable_thinking"
                   and v not in (None, "", [], {}, False)), None)
    if unread:
        raise ValueError(f"the row's chat_template_kwargs set {unread!r} "
                         f"({_short(kwargs[unread])}), which the Qwen3 template does not read: "
                         "give tools as 'tools', instructions as the system message, or drop it")
    mode = row.get("enable_thinking", kwargs.get("enable_thinking"))
    if mode is None or not isinstance(messages, list):
        return
    if not isinstance(mode, bool):
        raise ValueError(f"the row's enable_thinking is {_short(mode)}; give true or false")
    first = next((i for i, m in enumerate(messages) if isinstance(m, dict) and is_query(m)),
                 len(messages))
    for i, m in enumerate(messages[first + 1:], first + 1):
        if not (isinstance(m, dict) and m.get("role") == "assistant"
                and trains(m, f"message {i}")) or bool(reasoning_of(m).strip()) == mode:
            continue
        raise ValueError(f"the row is marked enable_thinking {str(mode).lower()}, yet message {i} "
                         f"(assistant) {'has no' if mode else 'has'} reasoning: the model would "
                         "learn to ignore the mode; "
                         + ("give the reply its reasoning, or drop the mark" if mode else
                            "drop the reasoning or the mark"))


# Glaive function calling's turns, in its "chat" text; each reply ends in <|endoftext|>
GLAIVE_TURN = re.compile(r"(?:^|\n\n)(USER|ASSISTANT|FUNCTION RESPONSE): ")


GLAIVE_ROLES = {"USER": "user", "ASSISTANT": "assistant", "FUNCTION RESPONSE": "tool"}


# a Glaive tool call: {"name": ..., "arguments": '<JSON text>'} (the arguments single-quoted)
GLAIVE_CALL = re.compile(r"""\s*\{\s*"name":\s*"([^"]+)",\s*"arguments":\s*'(.*)'\s*\}\s*""",
                         re.S)


def _glaive_row(row: dict) -> dict:
    """A row of Glaive's function-calling data as {"messages", "tools"}: its "chat" text of
    "USER: ...", "ASSISTANT: ... <|endoftext|>" and "FUNCTION RESPONSE: ..." turns as messages
    (an assistant's `<functioncall> {"name": ..., "arguments": '{...}'}` as its tool call, a
    function response as a tool result; the <|endoftext|> that ends a reply is the template's
    <|im_end|>), its "system" text ("SYSTEM: ... Use them if required -" then the functions as
    JSON objects) as the system turn and the tools.

    >>> _glaive_row({"system": "SYSTEM: Be brief.", "chat": "USER: Hi\\n\\n\\nASSISTANT: Hello "
    ...              "<|endoftext|>\\n\\n\\n"})["messages"][1:]
    [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello'}]
    """
    system, tools = _glaive_system(row.get("system"))
    parts = GLAIVE_TURN.split(row["chat"].strip())
    messages = [{"role": "system", "content": system}] if system else []
    for who, text in zip(parts[1::2], parts[2::2]):
        text = text.strip().removesuffix("<|endoftext|>").strip()
        said, _, call = text.partition("<functioncall>")
        if who != "ASSISTANT" or not call:
            messages.append({"role": GLAIVE_ROLES[who], "content": text})
            continue
        m = GLAIVE_CALL.fullmatch(call)
        if not m:
            raise ValueError(f"'chat' turn {len(messages)} calls {_short(call.strip())}, not "
                             """{"name": ..., "arguments": '{...}'} (Glaive's): fix it, or drop """
                             "the row")
        messages.append({"role": "assistant", "content": said.strip() or None, "tool_calls": [
            {"type": "function", "function": {"name": m[1], "arguments": m[2]}}]})
    rest = {k: v for k, v in row.items() if k not in ("system", "chat")}
    return {**rest, "messages": messages, **({"tools": tools} if tools else {})}


def _glaive_system(text) -> tuple[str | None, list]:
    """(the system text, the functions listed after it as tools) of a Glaive row's "system"."""
    if not isinstance(text, str):
        return text, []
    text = text.strip().removeprefix("SYSTEM:").strip()
    start = re.search(r"^\{", text, re.M)
    if not start:
        return text, []
    tools, pos = [], start.start()
    while pos < len(text):
        try:
            function, pos = json.JSONDecoder().raw_decode(text, pos)
        except ValueError:
            raise ValueError(f"'system' lists functions that are not JSON objects (at "
                             f"{_short(text[pos:])}): fix them, or drop the row") from None
        tools.append({"type": "function", "function": function})
        pos = re.compile(r"\s*").match(text, pos).end()
    return text[:start.start()].rstrip(" -\n"), tools


def without_arrow_nulls(example: dict) -> dict:
    """An example read from a parquet file with its tool calls' arguments and its tools as they
    were written: Arrow stores a column of objects as one struct type holding every key any row
    has, so a call's arguments (and a tool's signature) read back with the other rows' keys as
    nulls ({"city": "Oslo", "expr": None}), which the template would render and the model learn
    to write. Null values in them are dropped, at any depth (arguments stored as JSON text, the
    usual way, are read as written).

    >>> without_arrow_nulls({"messages": [{"role": "assistant", "content": None, "tool_calls": [
    ...     {"function": {"name": "w", "arguments": {"city": "Oslo", "expr": None}}}]}]}
    ...     )["messages"][0]["tool_calls"][0]["function"]["arguments"]
    {'city': 'Oslo'}
    """
    def written(value):
        if isinstance(value, dict):
            return {k: written(v) for k, v in value.items() if v is not None}
        return [written(v) for v in value] if isinstance(value, list) else value

    def message(m):
        if not (isinstance(m, dict) and isinstance(m.get("tool_calls"), list)):
            return m
        calls = [{**c, "function": {**c["function"], "arguments": written(
                     c["function"].get("arguments"))}}
                 if isinstance(c, dict) and isinstance(c.get("function"), dict) else c
                 for c in m["tool_calls"]]
        return {**m, "tool_calls": calls}

    messages = example["messages"]
    out = {**example, "messages": [message(m) for m in messages]
           if isinstance(messages, list) else messages}
    return {**out, "tools": written(example["tools"])} if "tools" in example else out


def _turns(items: list) -> list:
    """A conversation given as turns without roles as messages: UltraChat's list of texts
    (the user's first, then the assistant's, in turn), Capybara's and Pure-Dove's list of
    {"input", "output"} exchanges; any other list as it is.

    >>> _turns([{"input": "2+2?", "output": "4"}])
    [{'role': 'user', 'content': '2+2?'}, {'role': 'assistant', 'content': '4'}]
    """
    if items and all(isinstance(t, str) for t in items):
        return [{"role": ("user", "assistant")[k % 2], "content": t} for k, t in enumerate(items)]
    if items and all(isinstance(t, dict) and {"input", "output"} <= set(t)
                     and not {"role", "from"} & set(t) for t in items):
        return [{"role": role, "content": t[key]} for t in items
                for role, key in (("user", "input"), ("assistant", "output"))]
    return items


# the items of OpenAI's Responses API that are no message: an assistant's reasoning, its
# function call, a function's output
RESPONSE_ITEMS = ("reasoning", "function_call", "function_call_output")


def _response_items(items: list) -> list:
    """A conversation as the Responses API writes it (its input and output items) as messages:
    a "reasoning" item is the reasoning of the assistant turn that follows (its reasoning_text
    content, else its summary texts, joined by blank lines), a "function_call" item a tool call
    of that turn, a "function_call_output" item a tool message; a list of no such items as it
    is; a call_id is the call's id and its result's tool_call_id (`check_tool_results`). ValueError
    on reasoning that is only encrypted (`encrypted_content`, nothing readable)
    or followed by no assistant turn.

    >>> _response_items([{"role": "user", "content": "2+2?"},
    ...     {"type": "reasoning", "summary": [{"type": "summary_text", "text": "2+2=4"}]},
    ...     {"type": "message", "role": "assistant", "content": "4"}])[1:]
    [{'role': 'assistant', 'content': '4', 'reasoning_content': '2+2=4'}]
    """
    if not any(isinstance(m, dict) and m.get("type") in RESPONSE_ITEMS for m in items):
        return items
    out, reasoning = [], None
    for i, m in enumerate(items):
        kind = m.get("type") if isinstance(m, dict) else None
        if kind == "reasoning":
            parts = [p for p in m.get("content") or [] if isinstance(p, dict)]
            texts = ([p["text"] for p in parts if isinstance(p.get("text"), str)] or
                     [p.get("text") for p in m.get("summary") or []
                      if isinstance(p, dict) and isinstance(p.get("text"), str)])
            if not texts:
                raise ValueError(f"item {i} is a reasoning item with no text (only encrypted, "
                                 "or empty): the reply cannot be trained with its reasoning; "
                                 "drop the row")
            if reasoning is not None:
                raise ValueError(f"item {i} is a second reasoning item before one assistant "
                                 "turn: merge them")
            reasoning = "\n\n".join(texts)
            continue
        ids = {"id": m["call_id"]} if isinstance(m, dict) and m.get("call_id") else {}
        if kind == "function_call_output":
            out.append({"role": "tool", "content": m.get("output"),
                        **{"tool_call_id": v for v in ids.values()}})
        elif kind == "function_call":
            call = {"type": "function", **ids,
                    "function": {"name": m.get("name"), "arguments": m.get("arguments")}}
            last = out[-1] if out and reasoning is None else None
            if isinstance(last, dict) and chat_template.role_name(last.get("role")) == "assistant":
                last["tool_calls"] = list(last.get("tool_calls") or []) + [call]   # same turn
                continue
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:       # a message ("type": "message" dropped: the template does not read it)
            out.append({k: v for k, v in m.items() if (k, v) != ("type", "message")}
                       if isinstance(m, dict) else m)
        if reasoning is not None:
            if not (isinstance(m, dict) and m.get("type") != "function_call_output"
                    and chat_template.role_name(out[-1].get("role")) == "assistant"):
                raise ValueError(f"item {i} follows a reasoning item but is no assistant turn; "
                                 "a reasoning item goes before the assistant's message or call")
            out[-1]["reasoning_content"] = reasoning
            reasoning = None
    if reasoning is not None:
        raise ValueError("the last item is a reasoning item with no assistant turn after it: "
                         "give the reply, or drop the row")
    return out


def _marked(message) -> bool:
    """Whether a message's text (ShareGPT's "value" or "content") holds Sky-T1's thought mark."""
    text = message.get("content", message.get("value")) if isinstance(message, dict) else None
    return isinstance(text, str) and THOUGHT_MARK in text


def _json_list(value, field: str):
    """A list stored as JSON text (a column saved as a string; LLaMA-Factory's "tools") as the
    list."""
    if not (isinstance(value, str) and value.strip().startswith("[")):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise ValueError(f"{field!r} is {value[:40]!r}..., not valid JSON; give a list") from None


# an assistant turn's reasoning under another name (vLLM's and OpenRouter's "reasoning",
# gpt-oss's "thinking"): the Qwen3 template reads only reasoning_content, and drops the others
REASONING_NAMES = ("reasoning", "thinking")


# a message's role and text under other keys: ShareGPT's "from" and "value"; "speaker",
# "author" and "text" (dialogue corpora, OpenAssistant's exports)
ROLE_KEYS, TEXT_KEYS = ("from", "speaker", "author"), ("value", "text")


# the keys of a message read here, in the spelling read; another case or camelCase ("Role",
# "FROM", "reasoningContent", "toolCalls") is the same key (`key_name`)
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content",
                "function_call", "refusal") + ROLE_KEYS + TEXT_KEYS + REASONING_NAMES


# a key naming a reply's reasoning (in `key_name`'s spelling) that is none of those read
# (reasoning_content, `REASONING_NAMES`, `ROW_REASONING`). The rule is by word: a key with a
# word of `REASONING_WORDS` anywhere in it ("thoughts", "reasoning_text", "think", "scratchpad",
# s1K's "deepseek_thinking_trajectory", "r1_reasoning", "inner_monologue", "reasoning_details")
# names a reasoning, unless a word of `SETTING_WORDS` makes it a setting or a count about one
# ("reasoning_effort", "thinking_budget", "cot_type", "num_thinking_tokens"); "reason" is no
# such word (finish_reason, stop_reason). The template would drop it without a word.
REASONING_WORDS = frozenset((
    "reasoning", "reasonings", "thinking", "think", "thought", "thoughts", "rationale",
    "rationales", "cot", "chain_of_thought", "scratchpad", "monologue", "deliberation",
    "trajectory", "trajectories", "trace", "traces", "analysis"))
SETTING_WORDS = frozenset((
    "effort", "mode", "budget", "tokens", "token", "length", "len", "level", "enabled", "enable",
    "type", "format", "score", "source", "id", "count", "num", "n", "on", "off",
    "switch", "flag", "style", "lang", "language", "time", "status", "label", "version",
    "rating", "url"))


# a key naming another part of a turn's text (in `key_name`'s spelling): the rule is by word, as
# `REASONING_WORDS`: a word of `TURN_TEXT_WORDS` anywhere in it (an "explanation" or
# "justification" of the answer, Reflection's "reflection", a "plan", a "critique", a "draft",
# the "steps" or "working" of a solution, "musings": "explanation_1", "solution_steps",
# "selfCritique") unless a word of `SETTING_WORDS` makes it a setting or a count about one
# ("num_steps", "plan_type", "explanation_score"). The template reads none of them: the turn
# would train without it (`check_unread_texts`).
TURN_TEXT_WORDS = frozenset((
    "explanation", "explanations", "explain", "justification", "justifications", "reflection",
    "reflections", "plan", "plans", "planning", "critique", "critiques", "draft", "drafts",
    "steps", "working", "workings", "derivation", "musings", "elaboration", "outline"))


def names_reasoning(key, words_named=REASONING_WORDS) -> bool:
    """Whether a key (in any case, camelCase, "-" or "_") names a reasoning (`REASONING_WORDS`;
    another part of a turn's text with `words_named=TURN_TEXT_WORDS`).

    >>> [names_reasoning(k) for k in ("deepseekThinkingTrajectory", "scratchpad", "cot_type")]
    [True, True, False]
    """
    if not isinstance(key, str):
        return False
    name = key_name(key).replace("chain_of_thought", "cot")
    words = set(name.split("_"))
    return bool(words & words_named) and not words & SETTING_WORDS


def is_text(value) -> bool:
    """Whether a field's value is text to train (a string, or a list of them, that shows
    something and is no number: "5" in a CSV's column of counts is a count)."""
    if isinstance(value, list):
        return any(is_text(v) for v in value)
    if not isinstance(value, str) or blank(value) or dataset_tasks.missing_mark(value):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def check_unread_texts(record: dict, known, texts: list[str], where: str,
                       prompt: bool = False) -> None:
    """ValueError on a field of `record` (a row, or one message: `where`) that is not `known`
    and holds text of a turn under a name the template does not read (`TURN_TEXT_WORDS`; with
    `prompt`, also a message's `PROMPT_FIELDS`: a user turn's "context" or "document" beside its
    content), unless one of `texts` (the turns read) holds it: the turn would train without it.

    >>> try:
    ...     check_unread_texts({"content": "4", "explanation": "2+2=4"}, (), ["4"], "message 1")
    ... except ValueError as e:
    ...     print(str(e)[:62])
    message 1 has 'explanation' ('2+2=4'), text of a turn under a
    """
    for k, v in record.items():
        if k in known or not (names_reasoning(k, TURN_TEXT_WORDS) or prompt and key_name(
                k) in PROMPT_FIELDS) or not is_text(v):
            continue
        said = [t for t in (v if isinstance(v, list) else [v]) if isinstance(t, str)]
        if all(any(t.strip() in text for text in texts) for t in said):
            continue        # repeated in a turn read (its content, its reasoning)
        raise ValueError(f"{where} has {k!r} ({_short(v)}), text of a turn under a name the "
                         "template does not read (the turn would train without it): put it in "
                         "the turn's content (reasoning as reasoning_content), or drop it")


def key_name(key):
    """A key in the spelling read here: lower case, words split by "_" (camelCase and "-" too).

    >>> key_name("Role"), key_name("reasoningContent"), key_name("TOOL-CALLS")
    ('role', 'reasoning_content', 'tool_calls')
    """
    if not isinstance(key, str):
        return key
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_")


def spelled_keys(record: dict, known: tuple, where: str) -> dict:
    """`record` with its keys of `known` in the spelling read ("Role" -> "role"; another case or
    camelCase: `key_name`). ValueError on one key given in two spellings ("Role" and "role":
    which is meant is not known), and on a reasoning under a name that is not read
    (`names_reasoning`: a text, or a list of them): the reply would train without it.

    >>> spelled_keys({"Role": "user", "Content": "Hi", "ID": 7}, MESSAGE_KEYS, "message 0")
    {'role': 'user', 'content': 'Hi', 'ID': 7}
    """
    out, spelled = {}, {}
    for k, v in record.items():
        name = key_name(k)
        name = name if name in known else k
        if name in out:
            raise ValueError(f"{where} has the key {name!r} twice, as {spelled[name]!r} and "
                             f"{k!r}: keep one")
        out[name], spelled[name] = v, k
    unread = next((k for k, v in out.items() if k not in known and names_reasoning(k) and (
                       is_text(v) if isinstance(v, str) else isinstance(v, list) and v)), None)
    if unread:
        raise ValueError(f"{where} has {unread!r} ({_short(out[unread])}), a reasoning under a "
                         "name not read (the reply would train without it): name it "
                         "reasoning_content (or drop it)")
    return out


def chat_message(message, i: int):
    """One message of a row as the template reads it: its keys in any case or camelCase as read
    ("Role", "reasoningContent": `spelled_keys`), ShareGPT's {"from", "value"} (and the other
    `ROLE_KEYS` and `TEXT_KEYS`) as {"role", "content"}, and then `chat_template.template_message`
    (a role under another name or in other case, OpenAI's text parts, Anthropic's thinking part, a
    tool result given as JSON data); an assistant's "reasoning" or "thinking" field, a Sky-T1 marked
    trace, or a <reasoning>, <thought> or <thinking> block its content opens with, as
    reasoning_content; its tool calls as tool_use parts (Anthropic's) or a function_call (OpenAI's
    legacy) as tool_calls (`_tool_calls_of`), and so its calls written as text at the end of its
    answer (Hermes': `_text_calls`; Mistral's: `_mistral_calls`); OpenAI's "refusal" (its content
    null) as its content. Anything else is left to `check_conversation`.

    >>> chat_message({"from": "human", "value": [{"type": "text", "text": "Hi"}, "there"]}, 0)
    {'role': 'user', 'content': 'Hi\\nthere'}
    """
    if not isinstance(message, dict):
        return message
    m = spelled_keys(message, MESSAGE_KEYS, f"message {i}")
    _said_once(m, i)
    key, text = (next((k for k in keys if k in m), None) for keys in (ROLE_KEYS, TEXT_KEYS))
    who = m.pop(key) if "role" not in m and key else None
    if key and "role" not in m:
        if chat_template.role_name(who) not in chat_template.ROLES and who != "function_call":
            raise ValueError(f"message {i} is from {_short(who)}; {key!r} is one of "
                             f"{', '.join(chat_template.ROLE_NAMES)} or function_call: rename it")
        m = {"role": "assistant" if who == "function_call" else who, **m}
    if "content" not in m and text:
        m["content"] = m.pop(text)
    if who == "function_call":
        m["content"], m["tool_calls"] = None, _function_calls(m["content"], i)
    if chat_template.role_name(m.get("role")) == "assistant":
        if isinstance(m.get("tool_calls"), str):        # a column saved as JSON text
            m["tool_calls"] = _json_list(m["tool_calls"], f"message {i}'s tool_calls")
        m = _tool_calls_of(m, i)
        if m.get("content") is None and isinstance(m.get("refusal"), str):   # OpenAI's
            m["content"] = m.pop("refusal")
    m = chat_template.template_message(m, f"message {i}")
    if m.get("role") == "assistant" and m.get("reasoning_content") is None:
        given = [k for k in REASONING_NAMES if m.get(k) is not None]
        if given:
            _reasoning_once(m.get("content"), given[0], f"message {i} (assistant)")
            m["reasoning_content"] = m.pop(given[0])
        elif isinstance(m.get("content"), str) and THOUGHT_MARK in m["content"]:
            m["reasoning_content"], m["content"] = _marked_thought(m["content"], f"message {i}")
    harmony = m.get("role") == "assistant" and isinstance(m.get("content"), str) and m[
        "content"].lstrip().startswith(("<|channel|>", "<|start|>assistant"))
    if harmony:     # gpt-oss's reply: its analysis and final messages
        text = m["content"].lstrip()
        said = harmony_messages(text if text.startswith("<|start|>") else
                                "<|start|>assistant" + text, f"message {i} (assistant)",
                                reply=True)
        if len(said) > 1:
            raise ValueError(f"message {i} (assistant) holds {len(said)} replies in OpenAI "
                             "Harmony's format: give one analysis and one final message")
        if m.get("reasoning_content") is not None and "reasoning_content" in said[0]:
            raise ValueError(f"message {i} (assistant) has its reasoning twice: given apart, "
                             "and as the analysis of its OpenAI Harmony text; give it once")
        m = {**m, **said[0]}
    tag = reasoning_tag(m["content"]) if (
        m.get("role") == "assistant" and isinstance(m.get("content"), str)) else None
    if tag and m.get("reasoning_content") is not None:
        raise ValueError(f"message {i} (assistant) has its reasoning twice: given apart, and as "
                         f"the {tag} block its content opens with; give it once")
    if tag:
        m["reasoning_content"], m["content"] = _tagged_reasoning(m["content"], tag, i)
    if m.get("role") == "tool" and isinstance(m.get("content"), str):   # wrapped once, by the
        m["content"] = _unwrapped(m["content"])                         # template
    check_unread_texts(m, MESSAGE_KEYS, [t for t in (m.get("content"), m.get(
        "reasoning_content")) if isinstance(t, str)], f"message {i}", prompt=True)
    return (_mistral_calls(_text_calls(_empty_reasoning(m))) if m.get("role") == "assistant"
            else m)


def _said_once(m: dict, i: int) -> None:
    """ValueError on a message that gives its role, or its text, twice under different keys that
    differ ("role": "user" beside ShareGPT's "from": "gpt"; "content" beside a "text" or "value"
    of other words): one would be read and the other dropped, and which is meant is not known.
    The rule: of the role keys ("role", `ROLE_KEYS`), the values that name a role (not a
    person's name under "author") name one; of the text keys ("content", `TEXT_KEYS`), the
    strings are one text (surrounding whitespace aside)."""
    roles = {k: m[k] for k in ("role",) + ROLE_KEYS
             if k in m and chat_template.role_name(m[k]) in chat_template.ROLES}
    texts = {k: m[k] for k in ("content",) + TEXT_KEYS if isinstance(m.get(k), str)}
    for kind, given, same in (("role", roles, chat_template.role_name), ("text", texts, str.strip)):
        if len({same(v) for v in given.values()}) > 1:
            (a, va), (b, vb) = list(given.items())[:2]
            raise ValueError(f"message {i} gives its {kind} twice, as {a!r} ({_short(va)}) and "
                             f"{b!r} ({_short(vb)}), which differ: keep one")


# Mistral's tool calls in a reply's text: [TOOL_CALLS] then a JSON list of {"name",
# "arguments", "id"} (its tokenizers v2 and v3), or one [TOOL_CALLS]name[ARGS]{...} a call
# (v11; [CALL_ID]id before [ARGS] in v13)
MISTRAL_CALL = re.compile(r"\[TOOL_CALLS\]([^\s\[\]{}\"]+)(?:\[CALL_ID\]([^\s\[]+))?\[ARGS\]")


def _mistral_calls(m: dict) -> dict:
    """An assistant turn whose answer ends in Mistral's tool calls (`MISTRAL_CALL`) with them as
    its tool_calls, the text before them its content, each call's name, arguments and id as
    written (the template writes them in its own format). Calls not read so exactly (no JSON
    object of arguments, text after them) are left for `check_text_tool_calls` to name.

    >>> _mistral_calls({"role": "assistant", "content": '[TOOL_CALLS] [{"name": "w", '
    ...                 '"arguments": {"c": "Oslo"}}]'})["tool_calls"][0]["function"]
    {'name': 'w', 'arguments': {'c': 'Oslo'}}
    """
    content = m.get("content")
    if m.get("tool_calls") or not isinstance(content, str):
        return m
    head, think, answer = content.rpartition(END_THINK)
    start = next((k.start(1) for k in OTHER_TOOL_CALLS.finditer(answer) if k[1] == "[TOOL_CALLS]"
                  and len(re.findall(r"`{3,}", answer[:k.start()])) % 2 == 0), None)  # not code
    if start is None:
        return m
    said, rest, calls = answer[:start].rstrip(), answer[start:].rstrip(), []
    decode = json.JSONDecoder().raw_decode
    try:
        if rest.removeprefix("[TOOL_CALLS]").lstrip().startswith("["):      # a JSON list
            body = rest.removeprefix("[TOOL_CALLS]").lstrip()
            listed, end = decode(body)
            if end != len(body) or not isinstance(listed, list):
                return m
            calls = [(c.get("name"), c.get("id"), c.get("arguments")) for c in listed
                     if isinstance(c, dict) and set(c) <= {"name", "arguments", "id"}]
            if len(calls) != len(listed):
                return m
        else:
            pos = 0
            while pos < len(rest):
                call = MISTRAL_CALL.match(rest, pos)
                if not call:
                    return m
                args, pos = decode(rest, call.end())
                calls.append((call[1], call[2], args))
    except ValueError:
        return m
    if not calls or not all(isinstance(name, str) and name and (isinstance(args, dict) or (
            isinstance(args, str) and args.lstrip().startswith("{"))) for name, _, args in calls):
        return m        # arguments as JSON text: `check_turns` reads them
    return {**m, "content": head + think + said or None, "tool_calls": [
        {"type": "function", **({"id": id_} if id_ else {}),
         "function": {"name": name, "arguments": args}} for name, id_, args in calls]}


def _text_calls(m: dict) -> dict:
    """An assistant turn whose answer ends in tool calls written as the template writes them
    (Hermes' format: NousResearch's hermes-function-calling rows) with them as its tool_calls,
    so the results after them answer calls (`check_tool_results` read none); rendered as the
    text was, newlines aside. Calls that are not {"name": ..., "arguments": {...}} are left for
    `check_text_tool_calls` to name.

    >>> m = _text_calls({"role": "assistant", "content": "On it.\\n<tool_call>\\n"
    ...                  '{"name": "w", "arguments": {}}\\n</tool_call>'})
    >>> m["content"], m["tool_calls"][0]["function"]
    ('On it.', {'name': 'w', 'arguments': {}})
    """
    content = m.get("content")
    if m.get("tool_calls") or not isinstance(content, str):
        return m
    head, think, answer = content.rpartition(END_THINK)
    calls, end = [], len(answer.rstrip())       # the calls, read from the last one back
    while answer.endswith("</tool_call>", 0, end) and (
            start := answer.rfind("<tool_call>", 0, end)) >= 0:
        try:
            call = json.loads(answer[start + len("<tool_call>"):end - len("</tool_call>")])
        except ValueError:
            return m
        if not (isinstance(call, dict) and set(call) == {"name", "arguments"}
                and isinstance(call["name"], str) and isinstance(call["arguments"], dict)):
            return m
        calls.append({"type": "function", "function": call})
        end = start
        while end and answer[end - 1].isspace():
            end -= 1
    if not calls:
        return m
    said = head + think + answer[:end]
    return {**m, "content": said or None, "tool_calls": calls[::-1]}


def _unwrapped(result: str) -> str:
    """A tool result without the <tool_response></tool_response> around it (Hermes' rows give
    it so), which the template writes itself: twice, the model would see results wrapped as no
    tool ever returns them. Two blocks in one result are left as they are.

    >>> _unwrapped("<tool_response>\\n-3\\n</tool_response>")
    '-3'
    >>> two = "<tool_response>1</tool_response><tool_response>2</tool_response>"
    >>> _unwrapped(two) == two
    True
    """
    opened, closed = "<tool_response>", "</tool_response>"
    inner = result[len(opened):-len(closed)]
    if result.startswith(opened) and result.endswith(closed) and "tool_response>" not in inner:
        return inner.strip("\n")
    return result


def _empty_reasoning(m: dict) -> dict:
    """An assistant turn whose reasoning is only spaces (`<think> </think>`, reasoning_content
    " ") with the empty reasoning "": the template strips only newlines, so it rendered
    `<think>\\n \\n</think>`, not the empty block `<think>\\n\\n</think>` that the model writes in
    non-thinking mode (and that `enable_thinking=False` prefills). Content whose think tags are
    malformed is left for `check_think_block` to name."""
    content, reasoning = m.get("content"), m.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning and not reasoning.strip():
        return {**m, "reasoning_content": ""}
    if reasoning is not None or not isinstance(content, str) or END_THINK not in content:
        return m
    tags, head = THINK_TAG.findall(content), content.split(END_THINK)[0]
    if (tags in ([END_THINK], [THINK, END_THINK]) and not head.split(THINK)[0].strip()
            and reasoning_of(m) and not reasoning_of(m).strip()):
        return {**m, "reasoning_content": "", "content": content.split(END_THINK)[1]}
    return m


def _reasoning_once(content, name: str, where: str) -> None:
    """ValueError if a reply given with its reasoning apart (`name`) also holds think tags: the
    template would render two think blocks, and which one is meant is not known."""
    if isinstance(content, str) and THINK_TAG.search(content):
        raise ValueError(f"{where} has its reasoning twice: in {name!r} and as a think block in "
                         f"its content; give it once (drop {name!r}, or the <think> block)")


# a reply that opens with its reasoning under another tag (Reflection's <thinking>, the
# <reasoning>...</reasoning> of GRPO format rewards, OpenO1's and Marco-o1's <Thought>, a
# <scratchpad>, an <analysis>, an <inner_monologue>, a <thought_process>), or under think in
# another spelling (<THINK>, Seed-OSS's <seed:think>, Magistral's [THINK]...[/THINK], Kimi's
# ◁think▷...◁/think▷): the rule is a name with a word of `REASONING_WORDS` (`names_reasoning`,
# ":" and "." as "_"), in any case, in <...>, [...] or ◁...▷, closed by the same with "/" before
# the name. The reasoning of the think block; the template's own <think> (lower case, in <>) it
# reads itself. Names other than `STRICT_TAGS` are a block only where their closing tag follows
# (a "[Analysis]" heading is text).
REASONING_TAG = re.compile(r"\s*(<|\[|◁)([A-Za-z][\w:.-]*)(>|\]|▷)")
STRICT_TAGS = ("think", "seed:think", "thinking", "thought", "thoughts", "reasoning", "scratchpad")
TAG_PAIRS = {"<": ">", "[": "]", "◁": "▷"}


def tag_names_reasoning(name: str, words=REASONING_WORDS) -> bool:
    """Whether a tag's name names a reasoning (or, with `TURN_TEXT_WORDS`, another part of a
    turn's text), as a key would (`names_reasoning`)."""
    return names_reasoning(re.sub(r"[:.]", "_", name), words)


def reasoning_tag(content: str) -> str | None:
    """The tag a reply's reasoning opens with (`REASONING_TAG`), None for the template's <think>.

    >>> reasoning_tag("[THINK]r[/THINK]a"), reasoning_tag("<think>r</think>a")
    ('[THINK]', None)
    >>> reasoning_tag("<inner_monologue>r</inner_monologue>a"), reasoning_tag("[Analysis] a")
    ('<inner_monologue>', None)
    """
    m = REASONING_TAG.match(content)
    if not m or m[0].strip() == THINK or TAG_PAIRS[m[1]] != m[3] or not tag_names_reasoning(m[2]):
        return None
    tag = m[0].strip()
    if m[2].lower() not in STRICT_TAGS and tag[0] + "/" + tag[1:] not in content[m.end():]:
        return None
    return tag


# a line that opens a block of another tag (`REASONING_TAG`'s brackets)
TAG_LINE = re.compile(r"^[ \t]*(<|\[|◁)([A-Za-z][\w:.-]*)(>|\]|▷)", re.M)


def check_answer_blocks(answer: str, where: str) -> None:
    """ValueError on an answer that holds a block of reasoning or of another part of a turn's
    text under a tag (`tag_names_reasoning`: an <analysis> or a [reasoning] after the first,
    Reflection's <reflection>, a <plan>, a <critique>, a <draft>): the template trains it as
    answer text, so the model would learn to write its reasoning (its reflection, its plan)
    into the answer. The rule: the opening tag begins a line and its closing tag ("/" before
    the name) ends a later one; a tag named in prose ("Use <thinking>...</thinking> tags."), or
    in a code block, is text.

    >>> try:
    ...     check_answer_blocks("4\\n<reflection>\\nchecked\\n</reflection>", "message 1")
    ... except ValueError as e:
    ...     print(str(e)[:58])
    message 1 has a <reflection> block in its answer, which th
    """
    text, closes = outside_code(answer), {}
    for m in TAG_LINE.finditer(text):
        name = m[2]
        if TAG_PAIRS[m[1]] != m[3] or not (tag_names_reasoning(name) or tag_names_reasoning(
                name, TURN_TEXT_WORDS)):
            continue
        close = f"{m[1]}/{name}{m[3]}"
        if close not in closes:     # where a line ends in it: once a name (linear time)
            closes[close] = [c.end() for c in re.finditer(
                re.escape(close) + r"[ \t]*$", text, re.M)]
        if any(end > m.end() for end in closes[close]):
            tag = m[0].strip()
            raise ValueError(f"{where} has a {tag} block in its answer, which the template trains "
                             "as answer text: make it the reasoning (reasoning_content, or one "
                             "<think> block before the answer), or drop it")


def _tagged_reasoning(content: str, tag: str, i: int) -> tuple[str, str]:
    """(reasoning, answer) of a reply that opens with the tag `tag` and its block (left as is,
    the block would be trained as the answer after an empty think block, i.e. as a non-thinking
    reply); it closes with "/" before its name, in its case.

    >>> _tagged_reasoning("<thinking>\\n2+2=4\\n</thinking>\\n\\n4", "<thinking>", 1)
    ('2+2=4', '4')
    """
    close = tag[0] + "/" + tag[1:]
    m = re.fullmatch(rf"\s*{re.escape(tag)}(.*?){re.escape(close)}(.*)", content, re.S)
    if not m or any(t in m[2] for t in (tag, close)):
        raise ValueError(f"message {i} (assistant) opens with {tag} but not with one "
                         f"{tag}...{close} block before its answer: close it (or drop the "
                         "row if it was cut off), or merge the blocks")
    return m[1].strip(), m[2].strip()


def _tool_calls_of(m: dict, i: int) -> dict:
    """An assistant message with its tool calls given as Anthropic's tool_use content parts, or
    as OpenAI's legacy "function_call", as OpenAI's "tool_calls" (the template reads only
    those: a tool_use part was refused as not text, a function_call dropped)."""
    content = m.get("content")
    if isinstance(content, list):
        uses = [p for p in content if isinstance(p, dict) and p.get("type") == "tool_use"]
        if uses:
            m["tool_calls"] = (m.get("tool_calls") or []) + [
                {"type": "function", **({"id": p["id"]} if p.get("id") else {}),
                 "function": {"name": p.get("name"), "arguments": p.get("input", {})}}
                for p in uses]
            m["content"] = [p for p in content if not (
                isinstance(p, dict) and p.get("type") == "tool_use")] or None
    if m.get("function_call") is not None:
        if m.get("tool_calls"):
            raise ValueError(f"message {i} (assistant) has both function_call and tool_calls; "
                             "keep tool_calls")
        m["tool_calls"] = [{"type": "function", "function": m.pop("function_call")}]
    return m


# the content blocks of Bedrock's Converse format (one key each)
BEDROCK_BLOCKS = {"text", "reasoningContent", "toolUse", "toolResult", "cachePoint", "image",
                  "document", "video", "guardContent"}


def _typed_parts(message):
    """A message whose content is content blocks without a "type", each one key (Amazon Bedrock's
    Converse format: {"text"}, {"reasoningContent"}, {"toolUse"}, {"toolResult"}, {"cachePoint"},
    {"image"}, ...), with them as the typed parts read here (OpenAI's text, Anthropic's thinking,
    tool_use and tool_result; a toolResult's {"json"} block as its JSON text; a cache point, no
    text, dropped; another block as its type, which `chat_template.part_texts` names); any other
    message as it is. They were refused as no string content.

    >>> _typed_parts({"role": "assistant", "content": [
    ...     {"reasoningContent": {"reasoningText": {"text": "2+2=4"}}}, {"text": "4"}]})["content"]
    [{'type': 'thinking', 'thinking': '2+2=4'}, {'type': 'text', 'text': '4'}]
    """
    content = message.get("content") if isinstance(message, dict) else None
    if not (isinstance(content, list) and content and all(
            isinstance(p, dict) and len(p) == 1 and set(p) <= BEDROCK_BLOCKS for p in content)):
        return message      # a tool's result as JSON data ([{"temp": 21}]) too

    def typed(part):
        (kind, value), = part.items()
        value = value if isinstance(value, dict) else {}
        if kind == "text" or kind == "json" and isinstance(part[kind], (dict, list)):
            return {"type": "text", "text": part[kind] if kind == "text" else json.dumps(
                part[kind], ensure_ascii=False)}
        if kind == "reasoningContent":
            text = (value.get("reasoningText") or {}).get("text")
            return ({"type": "thinking", "thinking": text} if isinstance(text, str)
                    else {"type": "redacted_thinking"})
        if kind == "toolUse":
            return {"type": "tool_use", "id": value.get("toolUseId"), "name": value.get("name"),
                    "input": value.get("input", {})}
        if kind == "toolResult":
            inner = value.get("content")
            return {"type": "tool_result", "tool_use_id": value.get("toolUseId"),
                    "content": [typed(p) if isinstance(p, dict) and len(p) == 1 else p
                                for p in inner] if isinstance(inner, list) else inner}
        return {"type": kind}       # an image, a document: named as not text

    return {**message, "content": [typed(p) for p in content if "cachePoint" not in p]}


def _bedrock_tools(config) -> list:
    """Bedrock's "toolConfig" ({"tools": [{"toolSpec": {"name", "description", "inputSchema":
    {"json": schema}}}]}) as the functions the template lists; ValueError on another tool."""
    specs = config.get("tools") if isinstance(config, dict) else None
    specs = [t for t in specs if not (isinstance(t, dict) and set(t) == {"cachePoint"})
             ] if isinstance(specs, list) else specs     # a cache point: no tool
    if not isinstance(specs, list) or not all(
            isinstance(t, dict) and isinstance(t.get("toolSpec"), dict) for t in specs):
        raise ValueError(f"'toolConfig' is {_short(config)}; give {{'tools': [{{'toolSpec': "
                         "{'name': ..., 'inputSchema': {'json': ...}}}]} (Bedrock's)")
    return [{"type": "function", "function": {
                **{k: v for k, v in t["toolSpec"].items() if k != "inputSchema"},
                **({"parameters": t["toolSpec"]["inputSchema"].get("json")}
                   if isinstance(t["toolSpec"].get("inputSchema"), dict) else {})}}
            for t in specs]


def _tool_results(message, i: int) -> list:
    """A message whose content is Anthropic's tool_result parts as one tool message per result
    (the template wraps each in <tool_response>); any other message as it is."""
    content = message.get("content") if isinstance(message, dict) else None
    if not (isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "tool_result" for p in content)):
        return [message]
    if not all(isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
        raise ValueError(f"message {i} mixes tool_result parts with others; give the tool "
                         "results a message of their own")
    return [{"role": "tool", "content": p.get("content", ""),     # ids: `check_tool_results`
             **({"tool_call_id": p["tool_use_id"]} if p.get("tool_use_id") else {})}
            for p in content]


def _function_calls(value, i: int) -> list[dict]:
    """The tool calls of a ShareGPT "function_call" turn (LLaMA-Factory: a JSON object
    {"name", "arguments"}, or a list of them), in OpenAI's form."""
    try:
        calls = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        calls = None
    calls = [calls] if isinstance(calls, dict) else calls
    if not (isinstance(calls, list) and calls and all(isinstance(c, dict) for c in calls)):
        raise ValueError(f"message {i} (function_call) is {_short(value)}; give a JSON object "
                         '{"name": ..., "arguments": {...}} (or a list of them)')
    return [{"type": "function", "function": c} for c in calls]


# Sky-T1's trace format, also Bespoke-Stratos' and OpenThoughts-114k's
THOUGHT_MARK = "<|begin_of_thought|>"


TRACE_MARKS = ("<|begin_of_thought|>", "<|end_of_thought|>", "<|begin_of_solution|>",
               "<|end_of_solution|>")


MARKED_TRACE = re.compile(r"\s*<\|begin_of_thought\|>(.*?)<\|end_of_thought\|>\s*"
                          r"(?:<\|begin_of_solution\|>(.*?)<\|end_of_solution\|>|(.*?))\s*",
                          re.S)


def _marked_thought(content: str, where: str) -> tuple[str, str]:
    """(reasoning, answer) of a reply in Sky-T1's format, <|begin_of_thought|> ...
    <|end_of_thought|> then <|begin_of_solution|> ... <|end_of_solution|>: the thought becomes the
    think block, the solution the answer (left as is, the whole trace would be trained as the
    answer after an empty think block, i.e. as a non-thinking reply).

    >>> _marked_thought("<|begin_of_thought|>\\n\\n2+2=4\\n\\n<|end_of_thought|>\\n\\n"
    ...                 "<|begin_of_solution|>\\n\\n4\\n\\n<|end_of_solution|>", "message 1")
    ('2+2=4', '4')
    """
    m = MARKED_TRACE.fullmatch(content)
    thought, solution, rest = m.groups("") if m else ("", "", "")
    answer = solution + rest        # one of the two matched
    if not m or any(mark in thought + answer for mark in TRACE_MARKS):
        raise ValueError(f"{where} (assistant) has {THOUGHT_MARK} but not one thought then the "
                         "solution (<|begin_of_thought|> ... <|end_of_thought|> "
                         "<|begin_of_solution|> ... <|end_of_solution|>): fix the markers or "
                         "drop the row")
    return thought.strip(), answer.strip()


# a row's system prompt under another name: the rule is "system" or "sys" alone or followed by
# one of these words ("system_prompt", "systemMessage", "sys_msg", "System Instruction"), or
# Cohere's "preamble"; Gemini's systemInstruction is read with its contents
SYSTEM_FIELD = re.compile(r"(system|sys)(_(prompt|message|msg|instruction|instructions|text|"
                          r"content))?|preamble")


def _with_system(row: dict, messages):
    """`messages` after the row's system prompt (its "system" field, Llama-Nemotron's
    "system_prompt", another name: `SYSTEM_FIELD`), if it has one, whatever the row's form
    (OpenThoughts, Bespoke-Stratos, LLaMA-Factory; "" or whitespace is none: LLaMA-Factory's rows
    hold it, and it would render an empty system turn)."""
    given = [k for k in row if isinstance(k, str) and SYSTEM_FIELD.fullmatch(
        key_name(k).replace(" ", "_")) and not ("contents" in row and key_name(
            k) == "system_instruction") and row[k] is not None and not (
                isinstance(row[k], str) and (not row[k].strip() or dataset_tasks.missing_mark(
                    row[k])))]
    if not given or not isinstance(messages, list):
        return messages
    system = row[given[0]]
    if len(given) > 1 and row[given[1]] != system:
        raise ValueError(f"the row has {given[0]!r} and {given[1]!r} fields that differ: keep one")
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    if "system" in map(chat_template.role_name, map(first.get, ("role",) + ROLE_KEYS)):
        if system in map(first.get, ("content",) + TEXT_KEYS):     # the same text twice
            return messages
        raise ValueError(f"the row has a {given[0]!r} field and a system message that differ: "
                         "keep one")
    return [{"role": "system", "content": system}] + messages


def _history(history) -> list[dict]:
    """The earlier exchanges of an Alpaca row (LLaMA-Factory's "history": [[query, reply], ...])
    as user and assistant turns."""
    if history in (None, []):
        return []
    if not (isinstance(history, list) and all(
            isinstance(h, list) and len(h) == 2 and all(isinstance(t, str) for t in h)
            for h in history)):
        raise ValueError(f"'history' is {_short(history)}; give a list of [query, reply] pairs "
                         "of strings")
    return [{"role": role, "content": text} for pair in history
            for role, text in zip(("user", "assistant"), pair)]


def _short(value) -> str:
    return repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."


# a row's reasoning next to its prompt and completion (TRL-style rows with the trace kept apart)
ROW_REASONING = ("reasoning_content", "reasoning", "thinking")


def _row_reasoning(row: dict, reply_is_text: bool) -> dict:
    """{"reasoning_content": ...} of a row whose reply is one text (a string completion, an
    Alpaca output), from its row-level reasoning field if it has one ({} if not); a row whose
    reply is messages keeps its reasoning in them: a row-level one there is a ValueError (it
    would be dropped). "on" or "off" is Llama-Nemotron's reasoning switch, not the reasoning:
    its reply holds its think block (or none) itself."""
    given = [k for k in ROW_REASONING if row.get(k) is not None and not (
        isinstance(row[k], str) and (row[k].strip().lower() in ("on", "off")
                                     or dataset_tasks.missing_mark(row[k])))]
    if not given:
        return {}
    if len(given) > 1 or not isinstance(row[given[0]], str):
        raise ValueError(f"the row's reasoning is {', '.join(map(repr, given))} = "
                         f"{_short(row[given[0]])}; give it once, as a string")
    if not reply_is_text:
        raise ValueError(f"the row has {given[0]!r} next to a reply given as messages, which "
                         "the template does not read: move it into the assistant message's "
                         "reasoning_content")
    reply = next((row[k] for k in REPLY_KEYS if isinstance(row.get(k), str)), None)
    _reasoning_once(reply, given[0], "the row's reply")
    return {"reasoning_content": row[given[0]]}


def _gemini_messages(contents, system) -> list:
    """The messages of a Gemini row (generateContent's, Vertex AI tuning's): "contents" of
    {"role": "user" | "model", "parts": [...]} after "systemInstruction" ({"parts": [...]} or a
    string). Text parts are joined as Gemini joins them (`response.text`: no separator), a text
    part with "thought": true is the reasoning, a functionCall part a tool call (its "args" the
    arguments), and a content of functionResponse parts is one tool message per response (its
    "response" as JSON text). ValueError on other parts (an image, a file, code execution): this
    recipe trains text-only models. snake_case keys (the Python SDK's) are read too.

    >>> _gemini_messages([{"role": "user", "parts": [{"text": "2+2"}, {"text": "?"}]},
    ...                   {"role": "model", "parts": [{"text": "4"}]}], "Be brief.")[1:]
    [{'role': 'user', 'content': '2+2?'}, {'role': 'model', 'content': '4'}]
    """
    if not isinstance(contents, list):
        raise ValueError(f"'contents' is {_short(contents)}; give a list of {{'role': ..., "
                         "'parts': [...]}} (Gemini's)")
    if isinstance(system, dict):        # a content of text parts
        texts = [p.get("text") for p in system.get("parts") or [] if isinstance(p, dict)]
        if not texts or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"'systemInstruction' is {_short(system)}; give {{'parts': "
                             "[{'text': ...}]} or a string")
        system = "".join(texts)
    out = [{"role": "system", "content": system}] if system not in (None, "") else []
    for i, c in enumerate(contents):
        parts = c.get("parts") if isinstance(c, dict) else None
        if isinstance(c, dict) and not parts and parts != {}:      # none, null or []
            raise ValueError(f"'contents' item {i} ({c.get('role')}) has no parts, an empty turn: "
                             "give its text as parts [{'text': ...}], or drop the row")
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise ValueError(f"'contents' item {i} is {_short(c)}; give {{'role': ..., 'parts': "
                             "[{'text': ...}, ...]}")
        m = {k: v for k, v in c.items() if k != "parts"}
        texts, thoughts, calls, results = [], [], [], []
        for k, p in enumerate(parts):
            call = p.get("functionCall", p.get("function_call"))
            result = p.get("functionResponse", p.get("function_response"))
            if isinstance(p.get("text"), str):
                (thoughts if p.get("thought") else texts).append(p["text"])
            elif isinstance(call, dict):
                calls.append({"type": "function", "function": {
                    "name": call.get("name"), "arguments": call.get("args", {})}})
            elif isinstance(result, dict):
                results.append(json.dumps(result.get("response"), ensure_ascii=False))
            else:
                raise ValueError(f"'contents' item {i}: part {k} is {_short(p)}; this recipe "
                                 "trains text-only models (text, thought, functionCall and "
                                 "functionResponse parts): drop the row")
        if results and (texts or thoughts or calls):
            raise ValueError(f"'contents' item {i} mixes functionResponse parts with others; "
                             "give the function results a content of their own")
        if results:
            out += [{"role": "tool", "content": r} for r in results]
            continue
        m["content"] = "".join(texts) if texts or not calls else None
        if thoughts and chat_template.role_name(m.get("role")) != "assistant":
            raise ValueError(f"'contents' item {i} ({m.get('role')}) has a thought part; only a "
                             "model turn may: drop the part")
        if thoughts:
            m["reasoning_content"] = "".join(thoughts)
        out.append({**m, "tool_calls": calls} if calls else m)
    return out


# a row's query and its reply under the names datasets give them: TRL's prompt and completion,
# MetaMathQA's query and response, NuminaMath's problem and solution, Llama-Nemotron's input and
# output, a preference row's chosen reply (the one trained on; "rejected" is not used)
QUERY_KEYS = ("prompt", "question", "query", "problem", "input")


REPLY_KEYS = ("completion", "response", "output", "solution", "chosen")


# the fields of a row read here (its conversation's: `CONVERSATION_KEYS`, any case), as
# `spelled_keys` reads them in another case or camelCase (a CSV's "Question,Answer" header)
ROW_FIELDS = ROW_REASONING + QUERY_KEYS + REPLY_KEYS + (
    "instruction", "context", "history", "answer", "reference", "rejected", "label", "text",
    "system", "system_prompt", "tools", "functions")


def _gemini_tools(tools):
    """Gemini's tools ([{"functionDeclarations": [...]}]) as the template lists functions
    ({"type": "function", "function": declaration} each); ValueError on a tool that is not
    functions (Google Search, code execution): the template lists functions only."""
    if not isinstance(tools, list):
        return tools        # check_tools names it
    out = []
    for t in tools:
        decls = t.get("functionDeclarations", t.get("function_declarations")) if isinstance(
            t, dict) else None
        if not isinstance(decls, list):
            raise ValueError(f"Gemini tool {_short(t)} has no functionDeclarations; the template "
                             "lists functions only: drop it")
        out += [{"type": "function", "function": d} for d in decls]
    return out


# a row's conversation: "messages" (OpenAI's), ShareGPT's "conversations", LMSYS-Chat-1M's and
# WildChat's "conversation"; in other case, or as "dialog", "dialogue", "chat" or UltraChat's
# "data" (a list)
CONVERSATION_KEYS = ("messages", "conversations", "conversation", "dialog", "dialogue", "chat",
                     "data")


# a row's media beside its text (LLaVA's "image", LLaMA-Factory's "images", "videos", "audios")
MEDIA_KEYS = ("image", "images", "video", "videos", "audio", "audios")


# a row's replies to one prompt under a plural of a reply's name (OpenR1's "generations",
# UltraFeedback's "completions", "responses", "outputs", "candidates", "samples", "answers"): a
# list of them is several candidates, of which SFT would train one without saying which
CANDIDATE_KEYS = ("generations", "completions", "responses", "outputs", "candidates", "samples",
                  "answers", "replies")


# the fields that make a row one of a form read here (`_row_messages`)
FORM_FIELDS = CONVERSATION_KEYS + QUERY_KEYS + REPLY_KEYS + ("contents", "instruction", "text",
                                                             "answer")


# several conversations or replies of one row under a read name and a mark that tells them apart
# ("conversation_a" and "conversation_b", Chatbot Arena's; "response_a", "chosen_response",
# "response_rejected", "output_1"): the rule is a word of `CONVERSATION_KEYS` or `REPLY_KEYS`
# (or "reply", "answer", "generation") and a word of `SIDE_WORDS`
SIDE_WORDS = frozenset(("a", "b", "c", "1", "2", "3", "0", "left", "right", "chosen", "rejected",
                        "preferred", "dispreferred", "better", "worse", "pos", "neg", "positive",
                        "negative", "accepted", "winner", "loser", "good", "bad", "first",
                        "second", "human", "model"))
SIDE_OF = frozenset(CONVERSATION_KEYS + REPLY_KEYS + ("reply", "answer", "generation"))


def _unwrapped_row(row: dict) -> dict:
    """A row whose conversation is in a container (`{"data": {"messages": [...]}}`, OpenAI's
    batch file `{"custom_id", "body": {"messages"}}`, a "record", "example" or "conversation"
    holding one, also as JSON text; a preference row's "chosen" given as `{"messages": [...]}`)
    as the row it holds, the container's other fields beside it (a field in both that differs
    is a ValueError). A row of none of the forms read (`FORM_FIELDS`) that holds several
    conversations or replies told apart by a mark (`SIDE_WORDS`: Chatbot Arena's conversation_a
    and conversation_b) is a ValueError: which one to train is not known.

    >>> _unwrapped_row({"id": 7, "data": {"messages": [{"role": "user", "content": "hi"}]}})
    {'id': 7, 'messages': [{'role': 'user', 'content': 'hi'}]}
    """
    def held(value):
        value = value.strip() if isinstance(value, str) else value
        if isinstance(value, str) and value.startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        return value if isinstance(value, dict) and any(
            key_name(k) in FORM_FIELDS for k in value) else None

    for k in ("chosen", "rejected"):
        inner = held(row.get(k))
        if inner is not None and len(inner) == 1 and isinstance(next(iter(inner.values())), list):
            row = {**row, k: next(iter(inner.values()))}        # {"messages": [...]}
    sides = [k for k, v in row.items() if v not in (None, "", []) and isinstance(k, str) and len(
        set(key_name(k).split("_"))) == 2 and set(key_name(k).split("_")) & SIDE_OF
        and set(key_name(k).split("_")) & SIDE_WORDS]
    if sides and not any(key_name(k) in CONVERSATION_KEYS + REPLY_KEYS for k in row):
        raise ValueError(f"the row has {_short(sides)}: conversations or replies told apart by a "
                         "mark (Chatbot Arena's conversation_a and _b, a response_a, a "
                         "chosen_response), of which SFT trains one, and which is not known: "
                         "keep the one to train as 'messages' (a reply as 'completion'), or "
                         "write one row each")
    if any(key_name(k) in FORM_FIELDS and held(v) is None for k, v in row.items()):
        return row
    containers = [k for k, v in row.items() if held(v) is not None]
    if len(containers) != 1:
        return row
    inner = held(row[containers[0]])
    clash = next((k for k in inner if k in row and k != containers[0] and row[k] != inner[k]),
                 None)
    if clash:
        raise ValueError(f"the row has {clash!r} beside {containers[0]!r}, which holds another "
                         f"{clash!r}: keep one")
    return {**{k: v for k, v in row.items() if k != containers[0]}, **inner}


def _columns(value, field: str):
    """A conversation given as columns, one list per key (`{"role": [...], "content": [...]}`,
    as a datasets Sequence of messages reads back), as its list of messages; any other value as
    it is. ValueError on columns of different lengths."""
    if not (isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values())
            and {"role", "content"} & {key_name(k) for k in value} | set(ROLE_KEYS + TEXT_KEYS)
            and any(key_name(k) in ("role",) + ROLE_KEYS for k in value)):
        return value
    lengths = {len(v) for v in value.values()}
    if len(lengths) > 1:
        raise ValueError(f"{field!r} gives its messages as columns of different lengths "
                         f"({ {k: len(v) for k, v in value.items()} }): give one value a message "
                         "in each")
    return [dict(zip(value, m)) for m in zip(*value.values())]


def _row_messages(row: dict) -> dict:
    # a message alone: its role (a role's name) and its text, no conversation, query or reply
    keys = {k.lower(): k for k in row if isinstance(k, str)}
    role = next((keys[k] for k in ("role",) + ROLE_KEYS if k in keys), None)
    one = (role and chat_template.role_name(row[role]) in chat_template.ROLES
           and any(k in keys for k in ("content",) + TEXT_KEYS)
           and not any(k in keys for k in CONVERSATION_KEYS + QUERY_KEYS + REPLY_KEYS))
    if "message_tree_id" in row or {"parent_id", "message_id"} <= set(row) or (
            one and "parent_id" in row):
        raise ValueError("the row is one message of an OpenAssistant tree (message_tree_id, "
                         "parent_id), not a conversation: rebuild each conversation from the "
                         "root to a reply by the parent_id links, one row of messages each")
    if one:
        raise ValueError(f"the row is one message ({role!r}: {_short(row[role])}), not a "
                         'conversation: write each conversation as one row, {"messages": '
                         "[...]}, or as the list of its messages alone on one line")
    media = [k for k in MEDIA_KEYS if row.get(k) not in (None, "", [], {})]
    if media:
        raise ValueError(f"the row has {media[0]!r} ({_short(row[media[0]])}) beside its text: "
                         "this recipe trains text-only models, which would learn to answer about "
                         "media they never see; drop the row")
    candidates = next((k for k, v in row.items() if isinstance(v, list) and v
                       and key_name(k) in CANDIDATE_KEYS), None)
    if candidates:
        n = len(row[candidates])
        raise ValueError(f"the row has {candidates!r}, a list of {n} candidate "
                         f"repl{'y' if n == 1 else 'ies'} (OpenR1's generations, UltraFeedback's "
                         "completions): SFT trains one reply, and which is not known; put "
                         "the one to train (the one verified correct) in 'completion', or "
                         "write one row each")
    if "completion" in row and row.get("label") is not None:    # KTO's label on its completion
        kto_label(row["label"])
    if "contents" in row:       # Gemini's
        system = row.get("systemInstruction", row.get("system_instruction"))
        return {"messages": _gemini_messages(row["contents"], system),
                "reference": _row_reference(row)}
    # ShareGPT's conversations; LMSYS-Chat-1M's and WildChat's conversation
    given = next((k for k in CONVERSATION_KEYS[:3] if k in row), None)
    if given or _whole_conversation(row.get("chosen")):     # a preference row's implicit prompt
        if not given and "prompt" in row:
            _same_prompt(row["prompt"], row["chosen"])
        if given and row.get("chosen") not in (None, "", []):
            _same_chosen(row[given], row["chosen"], given)
        _row_reasoning(row, reply_is_text=False)
        return {"messages": row[given or "chosen"], "reference": _row_reference(row)}
    said = next((k for k in ("output", "response") if k in row), None)
    if "instruction" in row and said:       # Alpaca (input), Dolly (context, response), Magpie
        extra = next((row[k] for k in ("input", "context") if row.get(k) and not (
            isinstance(row[k], str) and dataset_tasks.missing_mark(row[k]))), "")
        # the parts that hold text, joined by a blank line (an empty instruction is no part:
        # its query was "\n\n" and the input)
        parts = [t for t in (row["instruction"], extra)
                 if not (isinstance(t, str) and not t.strip())]
        query = "\n\n".join(map(str, parts)) if len(parts) == 2 else (
            parts or [row["instruction"]])[0]
        return {"messages": _history(row.get("history")) + [
                    {"role": "user", "content": query},
                    {"role": "assistant", "content": row[said],
                     **_row_reasoning(row, isinstance(row[said], str))}],
                "reference": _row_reference(row)}
    asked, said = [k for k in QUERY_KEYS if k in row], [k for k in REPLY_KEYS if k in row]
    rendered = next((k for k in ("text", "chosen") if isinstance(row.get(k), str)), None)
    if rendered and not asked:      # a chat rendered as one text (HH-RLHF's chosen: Human:...)
        _row_reasoning(row, reply_is_text=False)
        return {"messages": rendered_messages(row[rendered], rendered),
                "reference": _row_reference(row)}
    if asked and said:
        if len(asked) > 1 or len(said) > 1:
            raise ValueError(f"the row has the fields {asked + said}: which is the query and "
                             "which the reply is ambiguous; keep one of each (or name them "
                             "'prompt' and 'completion')")
        prompt, completion = row[asked[0]], row[said[0]]
        if isinstance(completion, str) and _rendered(prompt):     # with its chat template
            _row_reasoning(row, reply_is_text=False)
            # the completion is the whole reply: TRL appends the end of turn where it is left out
            end = next((e for s, e in TURN_ENDS if s in prompt and e not in completion), "")
            return {"messages": rendered_messages(prompt + completion + end,
                                                  f"{asked[0]} + {said[0]}"),
                    "reference": _row_reference(row)}
        prompt = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        reasoning = _row_reasoning(row, isinstance(completion, str))
        completion = ([{"role": "assistant", "content": completion, **reasoning}]
                      if isinstance(completion, str) else completion)
        if not isinstance(prompt, list) or not isinstance(completion, list):
            raise ValueError(f"{asked[0]!r} and {said[0]!r} are each a string or a list of "
                             "messages")
        return {"messages": prompt + completion, "reference": _row_reference(row)}
    if "answer" in row and len(asked) == 1:     # the query under any of its names
        return _answer_example(row, asked[0])
    missing = [k for k in ("prompt", "reasoning", "answer") if k not in row]
    raise ValueError(f"no field {missing[0]!r} (fields: {sorted(row)}). Rows need "
                     "'messages', 'conversations' (ShareGPT), 'contents' (Gemini), "
                     "'prompt' and 'completion' (or 'question', 'query', 'problem', 'input' "
                     "and 'response', 'output', 'solution', 'chosen'), 'instruction' and "
                     "'output', or 'prompt', 'reasoning' and 'answer'.")


# a KTO row's label, in any spelling (a CSV's "False", a column of 0 and 1, "bad"; any case)
DESIRABLE = ("true", "1", "1.0", "+1", "yes", "good", "desirable", "positive", "chosen",
             "accepted")
UNDESIRABLE = ("false", "0", "0.0", "-1", "-1.0", "no", "bad", "undesirable", "negative",
               "rejected")


def kto_label(label) -> None:
    """ValueError unless a KTO row's "label" reads as desirable (true, 1, "yes", "good", ...):
    SFT imitates its completion, so an undesirable one (false, 0, "False", "bad", ...) must not
    be trained, and one read as neither is not known to be either.

    >>> kto_label("TRUE"), kto_label(1.0)
    (None, None)
    """
    said = str(label).strip().lower()
    if said in DESIRABLE:
        return
    if said in UNDESIRABLE:
        shown = json.dumps(label) if isinstance(label, bool) else _short(label)   # as in JSON
        raise ValueError(f"the row is marked undesirable ('label': {shown}, a KTO row): "
                         "SFT imitates its replies; drop such rows")
    raise ValueError(f"the row's 'label' is {_short(label)}, neither desirable (true, 1) nor "
                     "undesirable (false, 0) as a KTO row's: give true or false, or drop it")


def _same_prompt(prompt, chosen: list) -> None:
    """ValueError unless a preference row's "prompt" is the one its "chosen" conversation holds
    (UltraFeedback repeats it there): the text of one of its user turns, or the messages it
    starts with. The conversation is trained; a prompt that differs would be dropped unsaid."""
    users = [chat_message(m, k).get("content") for k, m in enumerate(chosen)
             if isinstance(m, dict) and chat_template.role_name(
                 m.get("role", m.get("from"))) == "user"]
    if isinstance(prompt, str) and any(isinstance(u, str) and u.strip() == prompt.strip()
                                       for u in users):
        return
    if isinstance(prompt, list) and chosen[:len(prompt)] == prompt:
        return
    raise ValueError(f"the row's 'prompt' ({_short(prompt)}) is not the query of its 'chosen' "
                     "conversation, which holds its own (the one trained): the 'prompt' would be "
                     "dropped; make them agree, or keep one")


def _same_chosen(conversation, chosen, given: str) -> None:
    """ValueError unless a preference row's "chosen" beside its conversation is that
    conversation (UltraFeedback-binarized's "messages" repeat it) or its last reply's text: the
    conversation is trained, and a "chosen" that differs would be dropped unsaid (while the
    row is announced as a preference row whose chosen reply is trained)."""
    last = conversation[-1] if isinstance(conversation, list) and conversation else None
    text = last.get("content", last.get("value")) if isinstance(last, dict) else None
    if chosen == conversation or isinstance(chosen, str) and isinstance(text, str) and (
            chosen.strip() == text.strip()):
        return
    raise ValueError(f"the row has {given!r} and a 'chosen' reply ({_short(chosen)}) that is not "
                     "its last reply: which one to train is not known; keep one")


def _row_reference(row: dict):
    """The value a row's reply is checked against: its "reference", else its "answer" beside the
    reply (OpenR1's and NuminaMath's final value, read as `dataset_tasks.gold_answer` reads a
    gold: GSM8K's '#### 72' -> '72'); None where there is none (no answer, NuminaMath's 'proof',
    a worked solution with no final value in it).

    >>> _row_reference({"answer": "#### 1,234"}), _row_reference({"answer": "proof"})
    ('1234', None)
    """
    answer = row.get("answer")
    if row.get("reference") is not None or answer is None:
        return row.get("reference")
    if isinstance(answer, str) and (answer.strip().lower() in dataset_tasks.NO_ANSWER
                                    or dataset_tasks.is_worked_solution(answer)):
        return None
    try:
        return dataset_tasks.gold_answer(answer)
    except ValueError:      # an empty answer, an object: nothing to check against
        return None


# GSM8K's calculator annotations (48/2 = <<48/2=24>>24): its tool calls, not text to write
CALCULATOR = re.compile(r"<<[^<>\n]*=[^<>\n]*>>")


# a reply rather than a value: a sentence ends and another begins, or a second line
SENTENCE_BREAK = re.compile(r"[.!?:;]\s+\S|\n\s*\S")


def _answer_example(row: dict, asked: str) -> dict:
    """The example of a row {query, "answer"} (the query under any of `QUERY_KEYS`; a list is the
    prompt's messages). With a "reasoning" (or "reasoning_content", "thinking") the answer is the
    final value, boxed (`boxed_sentence`) unless it holds `\\boxed`. Without one the answer must be
    the reply itself: GSM8K's worked solution ending in '#### 72' (its calculator annotations
    <<48/2=24>> dropped, the '####' line written as `boxed_sentence`; 72 is the reference), or any
    answer of several sentences or lines (orca-math's) as written. A one-line answer without
    reasoning is only a final value: no reply to train, a ValueError."""
    answer = row["answer"]
    if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
        raise ValueError(f"'answer' is {_short(answer)}; give the final answer as a string")
    answer, reasoning = str(answer), _row_reasoning(row, reply_is_text=True)
    prompt = row[asked] if isinstance(row[asked], list) else [   # a chat prompt, or its query
        {"role": "user", "content": row[asked]}]
    if reasoning:
        boxed = "\\boxed" in answer
        return {"messages": prompt + [{"role": "assistant", **reasoning,
                                     "content": answer if boxed else boxed_sentence(answer)}],
                "reference": row.get("reference", None if boxed else answer)}
    if "####" in answer:        # GSM8K
        value = dataset_tasks.gsm8k_answer(answer)
        body = CALCULATOR.sub("", answer.rsplit("####", 1)[0]).strip()
        if not value:
            raise ValueError(f"'answer' ends in '####' with no value after it ({_short(answer)}):"
                             " give the final value after '####', or drop the row")
        return {"messages": prompt + [{"role": "assistant", "content": (
                    body + "\n" + boxed_sentence(value)).strip()}],
                "reference": row.get("reference", value)}
    if SENTENCE_BREAK.search(answer.strip()):
        return {"messages": prompt + [{"role": "assistant", "content": answer}],
                "reference": row.get("reference")}
    raise ValueError(f"'answer' is {_short(answer)}, one line and no reasoning: a final value, "
                     "not a reply to train; give the worked solution, or the reasoning next to "
                     "it as 'reasoning' (a reply of one line: name the field 'response')")


# a conversation rendered as one text: one turn of ChatML (Qwen, SmolLM; Phi-4's with
# <|im_sep|>), of Llama 3, of Gemma, and of Phi-3 (Phi-4-mini's without the line break)
RENDERED_TURNS = (re.compile(r"<\|im_start\|>(\w+)(?:\n|<\|im_sep\|>)(.*?)<\|im_end\|>\s*", re.S),
                  re.compile(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)"
                             r"<\|eot_id\|>\s*", re.S),
                  re.compile(r"<start_of_turn>(\w+)\n(.*?)<end_of_turn>\s*", re.S),
                  re.compile(r"<\|(system|user|assistant)\|>\n?(.*?)<\|end\|>\s*", re.S))


TURN_ENDS = (("<|im_start|>", "<|im_end|>"), ("<|start_header_id|>", "<|eot_id|>"),
             ("<start_of_turn>", "<end_of_turn>"), ("<|user|>", "<|end|>"),
             ("<|start|>", "<|return|>"), ("<｜User｜>", "<｜end▁of▁sentence｜>"))


# one message of OpenAI's Harmony format (gpt-oss): <|start|>{header}<|message|>{text} and its
# end; the header is the role, then <|channel|>{channel}, a recipient (" to=functions.f") and a
# <|constrain|> where it has them
HARMONY_TURN = re.compile(r"<\|start\|>((?:(?!<\|message\|>|<\|start\|>).)*)<\|message\|>(.*?)"
                          r"(<\|end\|>|<\|return\|>|<\|call\|>|\Z)\s*", re.S)


def harmony_messages(text: str, where: str, reply: bool = False) -> list[dict]:
    """The messages of a text in OpenAI's Harmony format (gpt-oss's): a system, developer or
    user message as that turn, an assistant's "analysis" message as the reasoning of its "final"
    message that follows, which is the reply (each text as written; a `reply`'s last message may
    leave out its end, <|return|>, as generators do). ValueError, naming it, on a text that is
    not whole such messages, on a tool call or a tool's result (a recipient, a
    <|call|>, a "commentary" message: give them as tool_calls and tool messages), and on an
    analysis with no final message after it.

    >>> harmony_messages("<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>"
    ...                  "analysis<|message|>2+2=4<|end|><|start|>assistant<|channel|>final"
    ...                  "<|message|>4<|return|>", "'text'")[1]
    {'role': 'assistant', 'content': '4', 'reasoning_content': '2+2=4'}
    """
    out, reasoning, pos = [], None, 0
    while pos < len(text) and (m := HARMONY_TURN.match(text, pos)):
        header, body, end = m.groups()
        if not (end or reply) or "<|start|>" in body:   # a message without its end: cut off?
            break
        role = re.match(r"[^<\s]*", header)[0]
        channel = re.search(r"<\|channel\|>(\w+)", header)
        channel = channel[1] if channel else None
        if " to=" in header or end == "<|call|>" or channel == "commentary" or role not in (
                "system", "developer", "user", "assistant"):
            raise ValueError(f"{where} holds a tool call or a tool's result in OpenAI Harmony's "
                             f"format (<|start|>{_short(header)[1:-1]}<|message|>): give the "
                             "calls as tool_calls and the results as tool messages")
        if role == "assistant" and channel == "analysis" and reasoning is None:
            reasoning = body
        elif role == "assistant" and channel in (None, "final"):
            out.append({"role": "assistant", "content": body,
                        **({} if reasoning is None else {"reasoning_content": reasoning})})
            reasoning = None
        elif role != "assistant" and reasoning is None:
            out.append({"role": role, "content": body})
        else:
            break
        pos = m.end()
    if pos < len(text) or reasoning is not None or not out:
        raise ValueError(f"{where} is in OpenAI Harmony's format but not whole messages, each "
                         "assistant's analysis then its final (at character "
                         f"{pos}: {_short(text[pos:])}): give the conversation as messages, "
                         "the analysis as reasoning_content")
    return out


# the start of a text a tokenizer adds (Llama 3's, Gemma's, Llama 2's and Phi-3's, DeepSeek's)
TEXT_STARTS = ("<|begin_of_text|>", "<bos>", "<s>", "<｜begin▁of▁sentence｜>")


# DeepSeek's (V3, R1) turns: its system text first, then <｜User｜>query<｜Assistant｜>reply and
# its end of text
DEEPSEEK_TURN = re.compile(r"<｜User｜>(.*?)<｜Assistant｜>(.*?)"
                           r"(?:<｜end▁of▁sentence｜>\s*|(?=<｜User｜>)|$)", re.S)


def _deepseek_messages(text: str, field: str) -> list[dict] | None:
    """The messages of a chat rendered in DeepSeek's format (its begin-of-sentence, the system
    text, then its turns: `DEEPSEEK_TURN`), each text as written; None for another text.
    ValueError on its tool calls or outputs (give them as messages)."""
    text = text.strip()
    body = text.removeprefix("<｜begin▁of▁sentence｜>")
    if not (body.startswith("<｜User｜>") or body != text and "<｜User｜>" in body):
        return None
    if "<｜tool▁" in body:
        raise ValueError(f"{field!r} holds DeepSeek's tool calls or outputs (<｜tool▁...): "
                         "give the conversation as messages, the calls as tool_calls")
    start = body.index("<｜User｜>")
    turns = [{"role": "system", "content": body[:start]}] if body[:start] else []
    pos = start
    while pos < len(body) and (m := DEEPSEEK_TURN.match(body, pos)) and m.end() > pos:
        turns += [{"role": "user", "content": m[1]}] + (
            [{"role": "assistant", "content": m[2]}] if m[2] else [])
        pos = m.end()
    return turns if pos == len(body) else None


# Mistral's and Llama 2's [INST] query [/INST] reply</s> (Llama 2's system in <<SYS>>)
INST_TURN = re.compile(r"(?:<s>)?\s*\[INST\](.*?)\[/INST\](.*?)(?:</s>\s*|(?=\[INST\])|$)", re.S)


LLAMA2_SYSTEM = re.compile(r"\s*<<SYS>>\n?(.*?)\n?<</SYS>>\s*(.*)", re.S)


def rendered_messages(text: str, field: str) -> list[dict]:
    """The messages of a chat rendered as one text: turns of ChatML, Llama 3, Gemma or Phi-3
    (their special tokens: `RENDERED_TURNS`), OpenAI's Harmony (`harmony_messages`), DeepSeek's
    (`_deepseek_messages`), Mistral's or Llama 2's `[INST] query [/INST] reply</s>`, or Anthropic
    HH-RLHF's
    "\\n\\nHuman: ...\\n\\nAssistant: ...". The whole text must be such turns: plain text (a
    pretraining row) has no reply to train, and is a ValueError. A row's query rendered so
    (`_rendered`) is read with its reply appended (TRL's text prompt-completion rows), and the
    end of turn after it where the reply leaves it out (ChatML's, Llama 3's: `TURN_ENDS`).

    >>> rendered_messages("<s>[INST] 2+2? [/INST] 4</s>", "text")
    [{'role': 'user', 'content': '2+2?'}, {'role': 'assistant', 'content': '4'}]
    """
    body = _without_text_start(text.strip()).lstrip()
    if body.startswith("<|start|>"):
        return harmony_messages(body, repr(field))
    deepseek = _deepseek_messages(text, field)
    if deepseek:
        return deepseek
    for turn in RENDERED_TURNS:
        turns, pos = [], 0
        while (m := turn.match(body, pos)) and m.end() > pos:
            turns.append({"role": m[1], "content": m[2]})
            pos = m.end()
        if turns and pos == len(body):
            return turns
    if body.startswith("[INST]"):
        turns, pos = [], 0
        while (m := INST_TURN.match(body, pos)) and m.end() > pos:
            turns += [{"role": "user", "content": m[1].strip()}] + (
                [{"role": "assistant", "content": m[2].strip()}] if m[2].strip() else [])
            pos = m.end()
        system = LLAMA2_SYSTEM.fullmatch(turns[0]["content"]) if turns else None
        if system:
            turns[:1] = [{"role": "system", "content": system[1]},
                         {"role": "user", "content": system[2]}]
        if turns and pos == len(body):
            return turns
    if body.startswith("Human: "):
        parts = re.split(r"(?:^|\n\n)(Human|Assistant): ", body)[1:]
        return [{"role": "user" if who == "Human" else "assistant", "content": said.strip()}
                for who, said in zip(parts[::2], parts[1::2])]
    raise ValueError(f"{field!r} is {_short(text)}: not a chat rendered as whole turns of "
                     "ChatML, Llama 3, Gemma, Phi-3, Harmony, DeepSeek, [INST] or "
                     "Human:/Assistant:, so it has no "
                     "reply to train "
                     "(pretraining text? a prompt only?); give the conversation as messages")


def _rendered(prompt) -> bool:
    """Whether a row's query is a chat rendered as text (`rendered_messages`): it starts with
    the markers of one of its formats, or holds HH-RLHF's Human: and Assistant: turns (a query
    merely starting with "Human:" or "<s>" is text)."""
    if not isinstance(prompt, str):
        return False
    body = _without_text_start(prompt.lstrip()).lstrip()
    return body.startswith(("<|im_start|>", "<|start_header_id|>", "<start_of_turn>",
                            "<|system|>", "<|user|>", "[INST]", "<|start|>", "<｜User｜>")) or (
        prompt.lstrip().startswith("<｜begin▁of▁sentence｜>") and "<｜User｜>" in body) or (
        body.startswith("Human: ") and "\n\nAssistant:" in body)


def _without_text_start(text: str) -> str:
    return next((text.removeprefix(s) for s in TEXT_STARTS if text.startswith(s)), text)


def _whole_conversation(chosen) -> bool:
    """Whether a preference row's "chosen" is the whole conversation, its prompt included (TRL's
    implicit prompt, UltraFeedback's), not only the reply."""
    return isinstance(chosen, list) and any(
        isinstance(m, dict) and chat_template.role_name(m.get("role", m.get("from"))) == "user"
        for m in chosen)


# ----------------------------------------------------------------------------------------------
# Reading a response: reasoning, answer, think format
# ----------------------------------------------------------------------------------------------
def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a completion: around `</think>`; without a think block, the last
    line holding `\\boxed` is the answer and everything before it the reasoning.

    >>> split_reasoning("<think>\\n2+2=4\\n</think>\\n\\nSo 4.")
    ('2+2=4', 'So 4.')
    >>> split_reasoning("2+2=4\\nSo \\\\boxed{4}.")[0]
    '2+2=4'
    """
    if END_THINK in text:
        head, tail = text.rsplit(END_THINK, 1)
        return head.split(THINK)[-1].strip("\n"), tail.strip()
    lines = text.strip().split("\n")
    k = max((j for j, l in enumerate(lines) if "\\boxed" in l), default=len(lines) - 1)
    return "\n".join(lines[:k]).strip(), "\n".join(lines[k:]).strip()
