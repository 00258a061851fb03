"""The Qwen3 chat template, and the ChatML and think tokens it writes (Qwen3 tech report §4.1,
§4.3).

`sft.set_chat_template` installs it; `tests/test_chat_template.py` checks it renders byte for byte
what the official template renders.
"""
THINK, END_THINK = "<think>", "</think>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"

# The official Qwen3 template (the `chat_template` of
# https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json), with Jinja comments
# added: `{#- ... #}` renders nothing, and every tag after it strips the whitespace in between,
# so the output is byte-identical to the official template's (tests/test_chat_template.py).
# Long tags are wrapped: a line break inside a tag is whitespace between tokens and renders
# nothing, and adjacent Jinja string literals ("a" "b") are one string, as in Python.
# It does not read `/think` or `/no_think`: they are plain text of a user or system turn, and
# the model learns to obey them from the thinking-mode fusion data (Qwen3 tech report §4.3).
CHAT_TEMPLATE = r"""
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
