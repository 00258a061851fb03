"""The Qwen3 chat template, and the ChatML and think tokens it writes (Qwen3 tech report §4.1,
§4.3).

`sft.set_chat_template` installs it; `tests/test_chat_template.py` checks it renders byte for byte
what the official template renders. One deliberate difference: on input the official template
mis-renders without a word (a message of an unknown role is skipped; a user, system or tool
content that is not a string renders as ''), ours raises an error naming the message and the fix
(section 0 of the template; `check_messages` is the same check in Python).

`template_message` reads a message as datasets write it (a role under another name or in
other case, text parts, a tool result as JSON data) as the template reads it.
"""
import json
import reprlib
from collections.abc import Mapping

THINK, END_THINK = "<think>", "</think>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
ROLES = ("system", "user", "assistant", "tool")
_SHORT = reprlib.Repr()         # values quoted in errors: long texts cut, so the error is one line
_SHORT.maxstring = _SHORT.maxother = 40


def check_messages(messages) -> None:
    """Raise ValueError, naming the message and the fix, on a conversation the template would
    mis-render: the official Qwen3 template skips a message of an unknown role and renders a
    non-string user/system/tool content as '' without a word (section 0 of CHAT_TEMPLATE raises on
    the same inputs; this is the Python version, for data loading and `sft.encode`).

    >>> try:
    ...     check_messages([{"role": "user", "content": "hi"}, {"role": "bot", "content": "?"}])
    ... except ValueError as e:
    ...     print(str(e)[:42])
    message 1 has role 'bot'; the roles are sy
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, (list, tuple)):
        raise ValueError(f"messages must be a list of {{'role': ..., 'content': ...}} dicts, not "
                         f"{type(messages).__name__}; wrap a single message in a list")
    if not messages:
        raise ValueError("messages is empty; give at least one message")
    for i, m in enumerate(messages):
        where = f"message {i}"
        if not isinstance(m, Mapping):
            raise ValueError(f"{where} is {_SHORT.repr(m)}, not a dict; write it as "
                             "{'role': 'user', 'content': ...}")
        role, content = m.get("role"), m.get("content")
        if "role" not in m:
            raise ValueError(f"{where} has no role; give it one of {', '.join(ROLES)}")
        if role not in ROLES:
            raise ValueError(f"{where} has role {_SHORT.repr(role)}; the roles are system, user, "
                             "assistant and tool (lower case): rename it")
        if role != "assistant":
            if not isinstance(content, str):
                got = _SHORT.repr(content) if "content" in m else "no content key"
                raise ValueError(f"{where} ({role}) has no string content (got {got}); give its "
                                 "text as a string, joining text parts and json.dumps-ing tool "
                                 "results")
            continue
        if content is not None and not isinstance(content, str):
            raise ValueError(f"{where} (assistant) has content {_SHORT.repr(content)}; give it as "
                             "a string (or null next to tool_calls)")
        if content is None and not m.get("tool_calls"):
            raise ValueError(f"{where} (assistant) has no content and no tool_calls; give its "
                             'reply as a string content ("" for an empty reply)')
        reasoning = m.get("reasoning_content")
        if reasoning is not None and not isinstance(reasoning, str):
            raise ValueError(f"{where} (assistant) has reasoning_content "
                             f"{_SHORT.repr(reasoning)}; give it as a string (or leave it out)")
        calls = m.get("tool_calls")
        if calls and (isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, list)):
            raise ValueError(f"{where} (assistant) has tool_calls {_SHORT.repr(calls)}, not a "
                             "list; give a list of calls (JSON text read as its list)")
        for k, call in enumerate(calls or []):
            fn = call.get("function") or call if isinstance(call, Mapping) else {}
            if (not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str)
                    or not fn.get("name") or not isinstance(fn.get("arguments"), (str, Mapping))):
                raise ValueError(f"{where} (assistant): tool call {k} needs a name and arguments "
                                 "(a dict or a JSON string): write it as {'type': 'function', "
                                 "'function': {'name': ..., 'arguments': {...}}}")

# ----------------------------------------------------------------------------------------------
# Messages as datasets write them -> as the template reads them
# ----------------------------------------------------------------------------------------------
# a role under another name (any case) -> the template's: OpenAI's "developer" (its system
# messages for o1 and later) and legacy "function" (a function's result), ShareGPT's "human",
# "gpt" and "observation" (FastChat, LLaMA-Factory), Gemini's "model", Llama 3's "ipython" (a
# tool's result), OpenAssistant's "prompter", Cohere's "chatbot" (its fine-tuning data), and "bot"
ROLE_NAMES = {"system": "system", "developer": "system", "user": "user", "human": "user",
              "prompter": "user",
              "assistant": "assistant", "gpt": "assistant", "model": "assistant",
              "bot": "assistant", "chatbot": "assistant", "tool": "tool", "observation": "tool",
              "function": "tool", "ipython": "tool"}
# the text-bearing content parts (OpenAI's chat and Responses APIs; as vLLM reads them) -> the
# key of their text; Anthropic's "thinking" part holds an assistant's reasoning
TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal",
              "thinking": "thinking"}


def role_name(role):
    """The template's name of a role (`ROLE_NAMES`, any case); anything else as given, for
    `check_messages` to name.

    >>> role_name("developer"), role_name("ASSISTANT"), role_name("narrator")
    ('system', 'assistant', 'narrator')
    """
    return ROLE_NAMES.get(role.lower(), role) if isinstance(role, str) else role


def template_message(message, where: str):
    """One message as the template reads it: its role by `role_name`; a content given as a list
    of text parts (OpenAI's) as one string, the parts joined by newlines as vLLM's OpenAI server
    joins them for a template that reads strings (Qwen3's renders a list as ''), and an
    assistant's thinking part (Anthropic's) as its reasoning_content; a tool's result given as
    JSON data (a dict, a list that is not parts, a number) as its JSON text, written as the
    template writes a tool call's dict arguments (`tojson`: json.dumps, non-ASCII kept). Anything
    else is left for `check_messages` to name; ValueError on an image, audio or other non-text
    part (this recipe trains text-only models).

    >>> template_message({"role": "User", "content": [{"type": "text", "text": "Hi"}]}, "m 0")
    {'role': 'user', 'content': 'Hi'}
    >>> template_message({"role": "tool", "content": {"temp": 21}}, "m 1")["content"]
    '{"temp": 21}'
    """
    if not isinstance(message, Mapping):
        return message
    m = dict(message)
    if "role" in m:
        m["role"] = role_name(m["role"])
    where = f"{where} ({m.get('role')})"
    content = m.get("content")
    texts = part_texts(content, where) if isinstance(content, list) else None
    if texts is not None:
        m["content"] = "\n".join(texts["text"])
        if texts["thinking"] and (m.get("role") != "assistant"
                                  or m.get("reasoning_content") is not None):
            raise ValueError(f"{where} has a thinking part; only an assistant turn without "
                             "reasoning_content may: drop the part")
        if texts["thinking"]:
            m["reasoning_content"] = "\n".join(texts["thinking"])
    elif m.get("role") == "tool" and isinstance(content, (dict, list, int, float)):
        m["content"] = json.dumps(content, ensure_ascii=False)
    return m


def part_texts(parts: list, where: str) -> dict[str, list[str]] | None:
    """The texts of content parts by kind ("text" or "thinking"; a bare string is text), or None
    for a list that is not content parts (`check_messages` names it)."""
    texts = {"text": [], "thinking": []}
    for k, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if isinstance(part, str):
            texts["text"].append(part)
        elif kind in TEXT_PARTS and isinstance(part.get(TEXT_PARTS[kind]), str):
            texts["thinking" if kind == "thinking" else "text"].append(part[TEXT_PARTS[kind]])
        elif kind == "redacted_thinking":
            raise ValueError(f"{where}: part {k} is redacted_thinking, reasoning encrypted by its "
                             "provider: it cannot be read, so the reply cannot be trained with "
                             "its reasoning; drop the row")
        elif isinstance(kind, str) and kind not in TEXT_PARTS:
            raise ValueError(f"{where}: part {k} is of type {_SHORT.repr(kind)}; this recipe "
                             "trains text-only models: drop the row, or give the part as text")
        else:
            return None
    return texts


# The official Qwen3 template (the `chat_template` of
# https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json), with Jinja comments
# added: `{#- ... #}` renders nothing, and every tag after it strips the whitespace in between,
# so the output is byte-identical to the official template's (tests/test_chat_template.py).
# Long tags are wrapped: a line break inside a tag is whitespace between tokens and renders
# nothing, and adjacent Jinja string literals ("a" "b") are one string, as in Python.
# It does not read `/think` or `/no_think`: they are plain text of a user or system turn, and
# the model learns to obey them from the thinking-mode fusion data (Qwen3 tech report §4.3).
CHAT_TEMPLATE = r"""
{#- ---- 0. Input checks: not in the official template, which renders a message of an unknown
     role as nothing and a user/system/tool content that is not a string as '' -- a turn lost
     without a word in training data. Valid conversations render byte for byte as the official
     template renders them; these only raise (transformers' `raise_exception`). `check_messages`
     below applies the same rules in Python. ------------------------------------------------ #}
{%- if messages is string or messages is mapping or messages is not iterable %}
    {{- raise_exception("Qwen3 chat template: messages must be a list of {'role': ..., "
        "'content': ...} dicts, not " ~ ("a string" if messages is string else "a dict"
        if messages is mapping else "this value") ~ "; wrap a single message in a list") }}
{%- endif %}
{%- for message in messages %}
    {%- set where = "Qwen3 chat template: message " ~ loop.index0 %}
    {%- if message is not mapping %}
        {{- raise_exception(where ~ " is '" ~ (message | string | truncate(40))
            ~ "', not a dict; write it as {'role': 'user', 'content': ...}") }}
    {%- elif message.role is not defined %}
        {{- raise_exception(where ~ " has no role; give it one of system, user, assistant, "
            "tool") }}
    {%- elif message.role not in ["system", "user", "assistant", "tool"] %}
        {{- raise_exception(where ~ " has role '" ~ (message.role | string | truncate(40))
            ~ "'; the roles are system, user, assistant and tool (lower case): rename it") }}
    {%- elif message.role != "assistant" and message.content is not string %}
        {{- raise_exception(where ~ " (" ~ message.role ~ ") has no string content (got "
            ~ ((message.content | string | truncate(40)) if message.content is defined
               else "no content key")
            ~ "); give "
            "its text as a string, joining text parts and json.dumps-ing tool results") }}
    {%- elif message.role == "assistant" and message.content is not string
             and not (message.content is none or message.content is not defined)  %}
        {{- raise_exception(where ~ " (assistant) has content "
            ~ (message.content | string | truncate(40))
            ~ "; give it as a string (or null next to tool_calls)") }}
    {%- elif message.role == "assistant" and message.content is not string
             and not message.tool_calls %}
        {{- raise_exception(where ~ " (assistant) has no content and no tool_calls; give "
            "its reply as a string content (\"\" for an empty reply)") }}
    {%- elif message.role == "assistant" and message.reasoning_content is defined
             and message.reasoning_content is not none
             and message.reasoning_content is not string %}
        {{- raise_exception(where ~ " (assistant) has reasoning_content "
            ~ (message.reasoning_content | string | truncate(40))
            ~ "; give it as a string (or leave it out)") }}
    {%- elif message.role == "assistant" and message.tool_calls
             and (message.tool_calls is string or message.tool_calls is mapping
                  or message.tool_calls is not iterable) %}
        {{- raise_exception(where ~ " (assistant) has tool_calls "
            ~ (message.tool_calls | string | truncate(40))
            ~ ", not a list; give a list of calls (JSON text read as its list)") }}
    {%- endif %}
    {%- if message.role == "assistant" and message.tool_calls %}
        {%- for tool_call in message.tool_calls %}
            {%- set fn = tool_call.function if tool_call.function else tool_call %}
            {%- if fn.name is not string or not fn.name
                   or (fn.arguments is not string and fn.arguments is not mapping) %}
                {{- raise_exception(where ~ " (assistant): tool call " ~ loop.index0 ~ " needs a "
                    "name and arguments (a dict or a JSON string): write it as {'type': "
                    "'function', 'function': {'name': ..., 'arguments': {...}}}") }}
            {%- endif %}
        {%- endfor %}
    {%- endif %}
{%- endfor %}
{#- ---- 1. System turn. With tools, the system turn also lists their signatures (one JSON
     object per line inside <tools></tools>) and says how to call them. -------------------- #}
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
        "</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{#- ---- 2. The last query: the index of the last user message that is not a tool response
     (a user turn wrapped in <tool_response>...</tool_response>). Assistant turns after it
     belong to the current answer (a multi-step tool use); turns before it are history. ---- #}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string
           and not(message.content.startswith('<tool_response>')
                   and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {#- non-string content (e.g. none, next to tool calls) renders as '' #}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {#- ---- 3. User turns, and system turns after the first, verbatim: a /think or
         /no_think in them is text like any other. ---------------------------------------- #}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {#- ---- 4. Assistant turns. The reasoning is `reasoning_content`, or else whatever
             precedes </think> in the content (then the content is what follows it). ------- #}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n')
                                                   .split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {#- After the last query, the think block is kept: always on the final turn (an empty
             reasoning gives the empty block <think>\n\n</think>\n\n), on earlier turns only
             when they have reasoning. Before the last query the reasoning is dropped. ----- #}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n')
                    + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {#- tool calls: one <tool_call>{"name": ..., "arguments": ...}</tool_call> each,
             on a new line after the content #}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {#- ---- 5. Tool results: consecutive tool messages share one user turn, each wrapped
             in <tool_response></tool_response>. ---------------------------------------------- #}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{#- ---- 6. Generation prompt. enable_thinking=False prefills the empty think block, so the
     model answers directly; otherwise the model opens <think> itself. ------------------- #}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""
