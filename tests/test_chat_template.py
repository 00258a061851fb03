"""chat_template.CHAT_TEMPLATE (installed by sft.set_chat_template) renders exactly what the
official Qwen3 chat template renders.

Both templates are rendered by the tokenizer's own `apply_chat_template` (transformers' Jinja
environment) on the same conversations and settings, and compared byte for byte.
"""

import copy
import itertools
import re

import pytest

import chat_template
import sft

# The official Qwen3 chat template, verbatim: the "chat_template" string of
# https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json (JSON-decoded; the same
# template ships with the other Qwen3 models, e.g. Qwen/Qwen3-0.6B, Qwen/Qwen3-30B-A3B).
OFFICIAL_QWEN3_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
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
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""


@pytest.fixture(scope="module")
def tok(tokenizer):
    """The test tokenizer with sft's template installed the way training installs it."""
    return sft.set_chat_template(copy.deepcopy(tokenizer))


def render(tok, messages, template=None, tools=None, **kw):
    """`template=None` renders the tokenizer's own template (chat_template.CHAT_TEMPLATE)."""
    return tok.apply_chat_template(
        messages, tokenize=False, chat_template=template, tools=tools, **kw
    )


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CALC_TOOL = {
    "type": "function",
    "function": {
        "name": "calc",
        "description": "Evaluate an arithmetic expression, e.g. 2×3.",
        "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}},
    },
}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


U = lambda c: {"role": "user", "content": c}  # noqa: E731
S = lambda c: {"role": "system", "content": c}  # noqa: E731
A = lambda c, **kw: {"role": "assistant", "content": c, **kw}  # noqa: E731
T = lambda c: {"role": "tool", "content": c}  # noqa: E731

# name -> (messages, tools)
CONVERSATIONS = {
    "single_user": ([U("What is 2+2?")], None),
    "single_turn_reasoning_content": (
        [U("What is 2+2?"), A("\\boxed{4}", reasoning_content="2+2=4.")],
        None,
    ),
    "single_turn_inline_think": (
        [U("What is 2+2?"), A("<think>\n2+2=4.\n</think>\n\n\\boxed{4}")],
        None,
    ),
    "single_turn_no_reasoning": ([U("Hi"), A("Hello")], None),
    "inline_think_without_newlines": ([U("Hi"), A("<think>hm</think>Hello")], None),
    "reasoning_content_none_inline_think": (
        [U("Hi"), A("<think>\nparsed\n</think>\n\nHello", reasoning_content=None)],
        None,
    ),
    "reasoning_content_wins_over_inline": (
        [U("Hi"), A("<think>\ninline\n</think>\n\nHello", reasoning_content="given")],
        None,
    ),
    "reasoning_with_surrounding_newlines": (
        [U("Hi"), A("\n\nHello", reasoning_content="\n\nlots of thought\n\n")],
        None,
    ),
    "empty_reasoning_last_turn": (
        [U("2+2? /no_think"), A("\\boxed{4}", reasoning_content="")],
        None,
    ),
    "multi_turn_reasoning_content": (
        [U("Hi"), A("a1", reasoning_content="r1"), U("And 3+3?"), A("6", reasoning_content="r2")],
        None,
    ),
    "multi_turn_inline_think": (
        [U("Hi"), A("<think>\nr1\n</think>\n\na1"), U("And 3+3?"), A("<think>\nr2\n</think>\n\n6")],
        None,
    ),
    "multi_turn_ends_with_user": ([U("Hi"), A("<think>\nr1\n</think>\n\na1"), U("And 3+3?")], None),
    "no_think_then_think": (
        [
            U("2+2? /no_think"),
            A("4", reasoning_content=""),
            U("And 3+3? /think"),
            A("6", reasoning_content="3+3=6."),
        ],
        None,
    ),
    "think_then_no_think": (
        [
            U("2+2? /think"),
            A("4", reasoning_content="2+2=4."),
            U("And 3+3? /no_think"),
            A("6", reasoning_content="3+3=6."),
        ],
        None,
    ),
    "think_then_no_think_prompt": (
        [U("2+2? /think"), A("<think>\n2+2=4.\n</think>\n\n4"), U("And 3+3? /no_think")],
        None,
    ),
    "both_flags_in_one_turn": (
        [U("/think 2+2? /no_think"), A("4", reasoning_content="2+2=4.")],
        None,
    ),
    "system_with_flag": (
        [
            S("Be brief. /no_think"),
            U("Hi"),
            A("<think>\nr1\n</think>\n\na1"),
            U("/no_think And 3+3? /think"),
            A("6", reasoning_content="r2"),
        ],
        None,
    ),
    "system_with_flag_prompt": ([S("You are helpful. /no_think"), U("What is 2+2?")], None),
    "second_system_message": (
        [
            S("first"),
            U("Hi"),
            A("a1", reasoning_content="r1"),
            S("second /think"),
            U("Again"),
            A("a2", reasoning_content="r2"),
        ],
        None,
    ),
    "tool_call_and_response": (
        [
            U("Weather in Paris?"),
            A(
                "",
                reasoning_content="Need the tool.",
                tool_calls=[call("get_weather", {"city": "Paris"})],
            ),
            T('{"temp_c": 21}'),
            A("It is 21°C in Paris.", reasoning_content="Got it."),
        ],
        [WEATHER_TOOL],
    ),
    "tool_call_content_none_empty_reasoning": (
        [
            S("Use tools."),
            U("Weather in Paris and 2×3?"),
            A(
                None,
                reasoning_content="",
                tool_calls=[
                    call("get_weather", {"city": "Paris"}),
                    call("calc", '{"expr": "2*3"}'),
                ],
            ),
            T("21°C"),
            T("6"),
            A("21°C; 6."),
        ],
        [WEATHER_TOOL, CALC_TOOL],
    ),
    "tool_call_with_text_no_function_wrapper": (
        [
            U("Weather?"),
            A("Checking.", tool_calls=[{"name": "get_weather", "arguments": {"city": "Rome"}}]),
            T("sunny"),
        ],
        [WEATHER_TOOL],
    ),
    "tool_history_then_new_query": (
        [
            U("Weather in Paris?"),
            A(
                "<think>\nuse tool\n</think>\n\n",
                tool_calls=[call("get_weather", {"city": "Paris"})],
            ),
            T("21°C"),
            A("21°C.", reasoning_content="done"),
            U("Thanks /no_think"),
            A("You're welcome.", reasoning_content=""),
        ],
        [WEATHER_TOOL],
    ),
    "user_turn_that_is_a_tool_response": (
        [
            U("Weather?"),
            A("", reasoning_content="call it", tool_calls=[call("get_weather", {"city": "Oslo"})]),
            U("<tool_response>\n-3°C\n</tool_response>"),
            A("-3°C.", reasoning_content="cold"),
        ],
        [WEATHER_TOOL],
    ),
    "tools_without_system": ([U("Hi")], [WEATHER_TOOL]),
}

# enable_thinking: True, False, or not passed at all (the template sees it undefined)
ENABLE_THINKING = {
    "thinking_true": {"enable_thinking": True},
    "thinking_false": {"enable_thinking": False},
    "thinking_absent": {},
}
CASES = [
    pytest.param(name, gen, et, id=f"{name}-{'gen' if gen else 'nogen'}-{et}")
    for name, gen, et in itertools.product(CONVERSATIONS, (False, True), ENABLE_THINKING)
]


def test_set_chat_template_installs_it(tok):
    assert (
        tok.chat_template == chat_template.CHAT_TEMPLATE and tok.eos_token == chat_template.IM_END
    )


@pytest.mark.parametrize("name, add_generation_prompt, thinking", CASES)
def test_renders_exactly_like_the_official_qwen3_template(
    tok, name, add_generation_prompt, thinking
):
    messages, tools = CONVERSATIONS[name]
    kw = dict(tools=tools, add_generation_prompt=add_generation_prompt, **ENABLE_THINKING[thinking])
    ours = render(tok, copy.deepcopy(messages), **kw)
    official = render(tok, copy.deepcopy(messages), template=OFFICIAL_QWEN3_TEMPLATE, **kw)
    assert ours == official


def test_flags_are_plain_text_not_switches(tok):
    """A `/no_think` in the last user turn does not hide the assistant's reasoning: the
    template renders it (the model, not the template, obeys the flag)."""
    msgs = [
        U("What is 2+2? /think"),
        A("<think>\n2+2=4.\n</think>\n\n4"),
        U("And 3+3? /no_think"),
        A("\\boxed{6}", reasoning_content="3+3=6."),
    ]
    expected = (
        "<|im_start|>user\nWhat is 2+2? /think<|im_end|>\n"
        "<|im_start|>assistant\n4<|im_end|>\n"  # history: reasoning stripped
        "<|im_start|>user\nAnd 3+3? /no_think<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n3+3=6.\n</think>\n\n\\boxed{6}<|im_end|>\n"
    )
    assert render(tok, msgs, template=OFFICIAL_QWEN3_TEMPLATE) == expected
    assert render(tok, msgs) == expected
    # ... nor does enable_thinking=False change a rendered assistant turn; it only prefills the
    # generation prompt
    assert render(tok, msgs, enable_thinking=False) == expected
    assert render(tok, msgs[:3], add_generation_prompt=True, enable_thinking=False) == (
        expected[: expected.rindex("<|im_start|>assistant\n")]
        + "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert render(tok, msgs[:3], add_generation_prompt=True) == (
        expected[: expected.rindex("<|im_start|>assistant\n")] + "<|im_start|>assistant\n"
    )


# ---- bad input: a clear error (the official template would drop the turn or render it empty) --
BAD_INPUT = {
    "unknown_role": ([U("q"), {"role": "bot", "content": "x"}, A("a")], "role 'bot'"),
    "role_case": ([U("q"), {"role": "Assistant", "content": "x"}], "role 'Assistant'"),
    "no_role": ([U("q"), {"content": "x"}], "message 1 has no role"),
    "user_no_content": ([{"role": "user"}, A("a")], "message 0 (user) has no string content"),
    "user_none_content": ([U(None), A("a")], "message 0 (user) has no string content"),
    "user_list_content": ([U([{"type": "text", "text": "hi"}])], "no string content"),
    "tool_none_content": (
        [U("q"), A(None, tool_calls=[call("calc", {})]), T(None)],
        "message 2 (tool) has no string content",
    ),
    "system_no_content": ([{"role": "system"}, U("q")], "message 0 (system)"),
    "assistant_no_content": ([U("q"), {"role": "assistant"}], "no content and no tool_calls"),
    "assistant_int_content": ([U("q"), A(5)], "(assistant) has content 5"),
    "reasoning_not_string": ([U("q"), A("a", reasoning_content=3)], "reasoning_content 3"),
    "tool_call_without_name": (
        [U("q"), A("", tool_calls=[{"function": {"arguments": {}}}])],
        "tool call 0 needs a name",
    ),
    "tool_calls_as_json_text": (
        [U("q"), A(None, tool_calls='[{"function": {"name": "f", "arguments": {}}}]')],
        "not a list; give a list of calls (JSON text read as its list)"),
    "one_tool_call_not_in_a_list": (
        [U("q"), A(None, tool_calls={"function": {"name": "f", "arguments": {}}})],
        "not a list; give a list of calls"),
    "message_not_a_dict": (["hi", "there"], "message 0 is 'hi', not a dict"),
    "messages_a_string": ("hello", "must be a list"),
    "messages_a_dict": ({"role": "user", "content": "q"}, "must be a list"),
}


@pytest.mark.parametrize("name", BAD_INPUT)
def test_bad_input_is_a_clear_error_in_the_template_and_in_python(tok, name):
    messages, says = BAD_INPUT[name]
    with pytest.raises(Exception, match=re.escape(says)):
        render(tok, copy.deepcopy(messages))
    with pytest.raises(ValueError, match=re.escape(says)):
        chat_template.check_messages(copy.deepcopy(messages))


def test_valid_edge_cases_pass_the_checks(tok):
    """What the official template renders on purpose stays valid: null content next to tool
    calls, reasoning_content None, empty and whitespace-only strings, arguments as a string."""
    for messages, _ in CONVERSATIONS.values():
        chat_template.check_messages(messages)
    msgs = [
        S(""),
        U("  "),
        A("", reasoning_content=None),
        U("\n"),
        A(None, tool_calls=[call("calc", '{"expr": "1"}')]),
        T(""),
        A("done"),
    ]
    chat_template.check_messages(msgs)
    assert render(tok, msgs) == render(tok, msgs, template=OFFICIAL_QWEN3_TEMPLATE)


@pytest.mark.parametrize(
    "messages",
    [
        [U([{"type": "text", "text": "long " * 2000}])],
        [U("q"), A(["part " * 2000])],
        [U("q"), A("a", reasoning_content=["thought " * 2000])],
        [U("q"), {"role": "x" * 5000, "content": "c"}],
        ["not a dict " * 1000],
    ],
)
def test_errors_quote_a_long_value_cut_short(tok, messages):
    """An error quotes the offending value shortened (it used to quote all of it: a 10,000
    character line for a long list of text parts)."""
    for check in (lambda: render(tok, messages), lambda: chat_template.check_messages(messages)):
        with pytest.raises(Exception) as e:
            check()
        assert len(str(e.value)) < 300, str(e.value)[:300]
