"""Rows of SFT data files (sft_data.jsonl_examples, read by conversations.py), round 11: shapes
that were trained as the wrong text without a word, or refused with an error that named another
problem. Each either loads as the turns a reader sees (rendered as the official Qwen3 template
renders them) or is refused in one line naming the row, the problem and the fix."""

import copy
import json

import pytest
from test_conversations_round10 import _Q, _load, _refused
from test_sft import _trained  # tokens trained; renders as the official template

import sft
import sft_data


@pytest.fixture(scope="module")
def tok(tokenizer):
    return sft.set_chat_template(copy.deepcopy(tokenizer))


_A = {"role": "assistant", "content": "4"}


# ---- text of a turn under a name the template does not read ----------------------------------
_UNREAD = "text of a turn under a name the template does not read (the turn would train without it)"


@pytest.mark.parametrize("key", ["explanation", "reflection", "plan", "justification",
                                 "selfCritique", "solution_steps", "working", "Draft",
                                 "explanation_1"])
def test_a_reply_part_under_a_name_not_read_is_named(tmp_path, key):
    """A reply's "explanation", "reflection" or "plan" (Orca's, Reflection's, e-SNLI's
    explanation_1), on the message or on the row: dropped without a word, the reply trained
    without it."""
    _refused(tmp_path, {"messages": [_Q, {**_A, key: "2+2=4, so 4."}]},
             f"row 0: message 1 has {key!r} ('2+2=4, so 4.'), {_UNREAD}: put it in the turn's "
             "content (reasoning as reasoning_content), or drop it")
    _refused(tmp_path, {"question": "2+2?", "response": "4", key: ["2+2=4", "so 4"]},
             f"row 0: the row has {key!r} (['2+2=4', 'so 4']), {_UNREAD}")


@pytest.mark.parametrize("key", ["context", "Document", "input", "instruction"])
def test_a_user_turns_prompt_text_beside_its_content_is_named(tmp_path, key):
    """{"role": "user", "content": "Where is Paris?", "context": "..."}: the query was trained
    without the passage it asks about."""
    _refused(tmp_path, {"messages": [{"role": "user", "content": "Where is it?",
                                      key: "Paris is in France."}, _A]},
             f"row 0: message 0 has {key!r} ('Paris is in France.'), {_UNREAD}")


def test_a_reply_part_the_turn_holds_or_a_setting_is_read(tok, tmp_path):
    """The explanation repeated in the reply, a count of steps, a plan's type, a critique's
    version, a "reasoning_steps" of "3" in a CSV: no text dropped."""
    ex = _load(tmp_path, {"messages": [
        {**_Q, "context": "2+2"}, {"role": "assistant", "content": "2+2=4, so 4.",
                                   "explanation": "2+2=4", "num_steps": 2, "steps": "3"}],
        "plan_type": "direct", "critique_version": "2", "reasoning_steps": "3",
        "explanation_score": 0.5})
    assert ex[0]["messages"][-1]["content"] == "2+2=4, so 4."
    assert [m["content"] for m in ex[0]["messages"]] == ["2+2?", "2+2=4, so 4."]
    assert _trained(tok, ex[0]) == ("<think>\n\n</think>\n\n2+2=4, so 4.<|im_end|>", True)


# ---- reasoning and reflection blocks under other tags --------------------------------------
@pytest.mark.parametrize("tag", ["analysis", "Analysis", "inner_monologue", "thought_process",
                                 "cot", "rationale", "thinking-process", "antThinking"])
def test_a_reply_opening_with_a_block_named_for_reasoning_is_its_think_block(tok, tmp_path, tag):
    """<analysis>, <inner_monologue>, <thought_process>, <cot>: the rule of a reasoning field's
    name (a word of REASONING_WORDS) for a tag; the block was trained as the answer after an
    empty think block."""
    ex = _load(tmp_path, {"messages": [_Q, {"role": "assistant",
                                            "content": f"<{tag}>\n2+2=4\n</{tag}>\n\n4"}]})[0]
    assert ex["messages"][-1] == {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}
    assert _trained(tok, ex) == ("<think>\n2+2=4\n</think>\n\n4<|im_end|>", True)


@pytest.mark.parametrize("content,tag", [
    ("<reflection>\n2+2=4\n</reflection>\n\n4", "<reflection>"),
    ("<thinking>\n2+2\n</thinking>\n<REFLECTION>\nchecked\n</REFLECTION>\n<output>4</output>",
     "<REFLECTION>"),
    ("<plan>\nadd\n</plan>\n4", "<plan>"),
    ("4\n\n[Self-Critique]\nfine\n[/Self-Critique]", "[Self-Critique]"),
    ("<think>\n2+2\n</think>\n\n<analysis>\nsum\n</analysis>\n4", "<analysis>"),
    ("<reasoning>\na\n</reasoning>\n4\n<draft>\n5\n</draft>", "<draft>")])
def test_a_block_of_reasoning_or_reflection_in_the_answer_is_named(tmp_path, content, tag):
    """Reflection-70B's <reflection> (after its <thinking> became the think block), a <plan>,
    an <analysis> after the think block: trained as answer text, the model learning to write
    its reflections into its answers."""
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": content}]},
             f"row 0: message 1 (assistant) has a {tag} block in its answer, which the template "
             "trains as answer text: make it the reasoning (reasoning_content, or one <think> "
             "block before the answer), or drop it")


@pytest.mark.parametrize("content", [
    "Wrap notes in <reflection>...</reflection> tags.",      # named in prose
    "Like this:\n```\n<plan>\nstep\n</plan>\n```\nDone.",     # in a code block
    "[Analysis] The sum is 4.",                                # a heading, no block
    "<reason>\nsum\n</reason>\n4"])                             # no word of a reasoning
def test_a_tag_named_in_prose_or_code_or_of_no_such_word_is_answer_text(tmp_path, content):
    ex = _load(tmp_path, {"messages": [_Q, {"role": "assistant", "content": content}]})
    assert ex[0]["messages"][-1] == {"role": "assistant", "content": content}


# ---- training marks under other names, the other way round, and as text ----------------------
@pytest.mark.parametrize("mark", [{"masked": True}, {"mask": True}, {"MASK": "true"},
                                  {"no_loss": True}, {"loss": False}, {"trainable": False},
                                  {"isTrain": 0}, {"weight": "0"}, {"train": "False"},
                                  {"learn": "0"}])
def test_a_reply_marked_context_only_in_any_spelling_is_not_trained(tok, tmp_path, mark):
    """torchtune's "masked": true, a "mask", a "loss": false, a CSV's "weight": "0": the mark
    was not read and the bad reply trained (or the text "0" refused as not 0)."""
    ex = _load(tmp_path, {"messages": [_Q, {"role": "assistant", "content": "5", **mark},
                                       {"role": "user", "content": "3+3?"},
                                       {"role": "assistant", "content": "6"}]})
    assert len(ex) == 1 and ex[0]["messages"][1]["content"] == "5"
    assert _trained(tok, ex[0]) == ("<think>\n\n</think>\n\n6<|im_end|>", True)


@pytest.mark.parametrize("mark", [{"masked": False}, {"mask": "FALSE"}, {"trainable": True},
                                  {"weight": "1"}])
def test_a_reply_marked_to_train_in_any_spelling_is_trained(tmp_path, mark):
    ex = _load(tmp_path, {"messages": [{**_Q, "masked": True}, {**_A, **mark}]})
    assert [e["messages"][-1]["content"] for e in ex] == ["4"]


@pytest.mark.parametrize("mark", [{"loss_mask": 0}, {"ignore": True}, {"skip": True},
                                  {"excluded": "true"}])
def test_a_training_mark_that_reads_either_way_is_named(tmp_path, mark):
    """Megatron's loss_mask 0 is masked, a "mask" 0 is not: which way an unknown one reads is
    not known; it was dropped and the reply trained."""
    (k, v), = mark.items()
    _refused(tmp_path, {"messages": [_Q, {**_A, **mark}]},
             f"row 0: message 1 has {{{k!r}: {v!r}}}, a training mark not read (which way it "
             "reads is not known): give 'weight': 0 (context only, not trained) or 1 instead")


@pytest.mark.parametrize("mark", [{"weight": 0}, {"train": False}, {"Masked": "true"},
                                  {"loss": 0}])
def test_a_row_marked_not_to_train_is_named(tmp_path, mark):
    """OpenAI's per-example "weight": 0 on the row: its reply was trained."""
    for row in ({"messages": [_Q, _A], **mark}, {"prompt": "2+2?", "completion": "4", **mark}):
        _refused(tmp_path, row, f"row 0: the row is marked not to train ({mark!r}): drop the row")
    _refused(tmp_path, {"messages": [_Q, _A], "weight": 2.5},
             "row 0: the row has the training weight 2.5, which is not applied (each row is "
             "trained once): give 0 or 1, or repeat the row to weigh it more")
    ex = _load(tmp_path, {"messages": [_Q, _A], "weight": 1, "mask": "User"})   # NeMo's mask
    assert ex[0]["messages"] == [_Q, _A]


# ---- a reply cut off by its generator, as other generators and exporters say it ---------------
@pytest.mark.parametrize("mark", [
    {"finish_reason": "max_tokens"}, {"stop_reason": "length"}, {"done_reason": "length"},
    {"finishReason": "MAX_TOKENS"}, {"finish_details": {"type": "max_tokens"}},
    {"incomplete_details": {"reason": "max_output_tokens"}}, {"status": "incomplete"},
    {"truncated": True}, {"isTruncated": "true"}, {"is_complete": False}, {"finished": "false"}])
def test_a_reply_marked_cut_off_in_any_vendors_words_is_named(tmp_path, mark):
    """Ollama's done_reason, ChatGPT's finish_details, the Responses API's status, a "truncated"
    flag, Anthropic's value under OpenAI's key: only three exact spellings were read, and the
    cut reply trained as whole."""
    (k, v), = mark.items()
    says = (f"is marked cut off by its generator ({k} {v!r}): the reply's end is lost, and "
            "trained as whole it would teach the model to stop mid-answer")
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": "So it is", **mark}]},
             "row 0: message 1 (assistant) " + says)
    _refused(tmp_path, {"prompt": "2+2?", "completion": "So it is", **mark},
             "row 0: the row " + says)


@pytest.mark.parametrize("mark", [{"finish_reason": "stop"}, {"stop_reason": "end_turn"},
                                  {"truncated": False}, {"is_complete": True},
                                  {"status": "completed"}, {"finish_details": {"type": "stop"}}])
def test_a_reply_marked_finished_is_trained(tmp_path, mark):
    ex = _load(tmp_path, {"messages": [_Q, {**_A, **mark}]})
    assert ex[0]["messages"][-1]["content"] == "4"


# ---- a conversation in a container; several told apart by a mark; given as columns -----------
@pytest.mark.parametrize("row", [
    {"data": {"messages": [_Q, _A]}},
    {"id": 7, "record": {"conversations": [{"from": "human", "value": "2+2?"},
                                           {"from": "gpt", "value": "4"}]}},
    {"custom_id": "r-1", "method": "POST", "body": {"model": "m", "messages": [_Q, _A]}},
    {"conversation": {"messages": [_Q, _A]}},
    {"example": json.dumps({"prompt": "2+2?", "completion": "4"})},
    {"messages": json.dumps({"messages": [_Q, _A]})},
    {"chosen": {"messages": [_Q, _A]}, "rejected": {"messages": [_Q, {**_A, "content": "5"}]}},
    {"messages": {"role": ["user", "assistant"], "content": ["2+2?", "4"]}},
    {"conversations": {"from": ["human", "gpt"], "value": ["2+2?", "4"]}}])
def test_a_conversation_in_a_container_or_as_columns_is_read(tok, tmp_path, row):
    """{"data": {"messages"}}, OpenAI's batch file, a preference row's chosen as {"messages"},
    a datasets Sequence read back as columns: refused as "no field 'prompt'" or "messages must
    be a list ... wrap a single message in a list"."""
    ex = _load(tmp_path, row)
    assert [e["messages"] for e in ex] == [[_Q, _A]]
    assert _trained(tok, ex[0]) == ("<think>\n\n</think>\n\n4<|im_end|>", True)


@pytest.mark.parametrize("row,keys", [
    ({"question_id": "q", "model_a": "x", "model_b": "y", "winner": "model_a",
      "conversation_a": [_Q, _A], "conversation_b": [_Q, {**_A, "content": "5"}]},
     "['conversation_a', 'conversation_b']"),
    ({"prompt": "2+2?", "response_a": "4", "response_b": "5", "winner": "model_a"},
     "['response_a', 'response_b']"),
    ({"prompt": "2+2?", "chosen_response": "4", "rejected_response": "5"},
     "['chosen_response', 'rejected_response']"),
    ({"question": "2+2?", "Response-Chosen": "4"}, "['Response-Chosen']")])
def test_several_conversations_or_replies_told_apart_by_a_mark_are_named(tmp_path, row, keys):
    """Chatbot Arena's conversation_a and conversation_b, a response_a and response_b: refused
    as "no field 'prompt'" (or 'reasoning'), which named no problem of the row."""
    _refused(tmp_path, row, f"row 0: the row has {keys}: conversations or replies told apart by "
                            "a mark (Chatbot Arena's conversation_a and _b, a response_a, a "
                            "chosen_response), of which SFT trains one, and which is not known")


def test_a_container_that_disagrees_with_its_row_or_columns_of_other_lengths_are_named(tmp_path):
    _refused(tmp_path, {"system": "Be brief.", "data": {"system": "Be long.",
                                                        "messages": [_Q, _A]}},
             "row 0: the row has 'system' beside 'data', which holds another 'system': keep one")
    _refused(tmp_path, {"messages": {"role": ["user", "assistant"], "content": ["2+2?"]}},
             "row 0: 'messages' gives its messages as columns of different lengths")
    ex = _load(tmp_path, {"system": "Be brief.", "data": {"messages": [_Q, _A]}})
    assert ex[0]["messages"] == [{"role": "system", "content": "Be brief."}, _Q, _A]


# ---- a system turn that shows nothing; a turn given twice -------------------------------------
@pytest.mark.parametrize("system", ["", " \n", "\u200b", None, [{"type": "text", "text": ""}]])
def test_a_system_turn_that_shows_nothing_is_no_system_prompt(tok, tmp_path, system):
    """ShareGPT's {"from": "system", "value": ""}: it rendered an empty system turn, a prompt
    the model never sees at inference (none is rendered there); null was refused."""
    for first in ({"role": "system", "content": system}, {"from": "system", "value": system}):
        ex = _load(tmp_path, {"messages": [first, _Q, _A]})
        assert ex[0]["messages"] == [_Q, _A]
        assert _trained(tok, ex[0]) == ("<think>\n\n</think>\n\n4<|im_end|>", True)


@pytest.mark.parametrize("turns,says", [
    ([_Q, _Q, _A], "messages 0 and 1 are the same user turn twice ('2+2?'"),
    ([_Q, {**_Q, "content": "2+2? \n"}, _A], "messages 0 and 1 are the same user turn twice"),
    ([{"role": "system", "content": "Be brief."}, {"role": "system", "content": "Be brief."}, _Q,
      _A], "messages 0 and 1 are the same system turn twice"),
    ([_Q, {**_A, "reasoning_content": "2+2=4"}, {**_A, "reasoning_content": "2+2=4"}],
     "messages 1 and 2 are the same assistant turn twice")])
def test_a_turn_given_twice_in_a_row_is_named(tmp_path, turns, says):
    """A scraped chat with a line copied (or a retry exported twice): trained as a conversation
    no one had."""
    _refused(tmp_path, {"messages": turns}, f"row 0: {says}")


def test_a_tool_result_repeated_or_an_exchange_asked_again_is_read(tmp_path):
    call = {"type": "function", "function": {"name": "calc", "arguments": {"x": "2+2"}}}
    ex = _load(tmp_path, {"messages": [
        _Q, {"role": "assistant", "content": None, "tool_calls": [call, call]},
        {"role": "tool", "content": "4"}, {"role": "tool", "content": "4"}, _A]})
    assert [m["role"] for m in ex[-1]["messages"]] == ["user", "assistant", "tool", "tool",
                                                       "assistant"]


# ---- a missing cell written out as text -------------------------------------------------------
_WRITTEN = "a missing cell written out as text (pandas' 'nan', Excel's '#N/A', SQL's 'NULL')"


@pytest.mark.parametrize("mark", ["nan", "NaN", "#N/A", "NULL", "<NA>"])
def test_an_optional_field_that_is_a_missing_cell_written_out_is_none(tok, tmp_path, mark):
    """A CSV's empty system, reasoning or input column read back as 'nan': the system prompt
    'nan' was trained, a reasoning 'nan' was the think block, 'nan' joined to the query."""
    path = tmp_path / "rows.csv"
    path.write_text(f"system,prompt,reasoning,completion\n{mark},2+2?,{mark},4\n"
                    f"Be brief.,3+3?,3+3=6,6\n")
    ex = sft_data.jsonl_examples(str(path))
    assert [e["messages"] for e in ex] == [
        [_Q, _A], [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "3+3?"},
                   {"role": "assistant", "content": "6", "reasoning_content": "3+3=6"}]]
    assert _trained(tok, ex[0]) == ("<think>\n\n</think>\n\n4<|im_end|>", True)
    ex = _load(tmp_path, {"instruction": "2+2?", "input": mark, "output": "4"},
               {"messages": [{"role": "system", "content": mark}, _Q, _A]})
    assert [e["messages"] for e in ex] == [[_Q, _A], [_Q, _A]]


@pytest.mark.parametrize("row,where", [
    ({"prompt": "2+2?", "completion": "nan"}, "message 1 (assistant)"),
    ({"prompt": "#N/A", "completion": "4"}, "message 0 (user)"),
    ({"messages": [_Q, {**_A, "reasoning_content": "NaN"}]}, "message 1 (assistant)"),
    ({"conversations": [{"from": "human", "value": "NULL"}, {"from": "gpt", "value": "4"}]},
     "message 0 (user)")])
def test_a_turn_that_is_a_missing_cell_written_out_is_named(tmp_path, row, where):
    """A reply 'nan' was trained: the model learned to answer 'nan'."""
    _refused(tmp_path, row, f"row 0: {where} has ")
    _refused(tmp_path, row, _WRITTEN + ": the model would learn it as the text; fill it in, or "
                                       "drop the row")


def test_a_tool_answering_null_is_its_result(tmp_path):
    call = {"type": "function", "function": {"name": "sql", "arguments": {"q": "x"}}}
    ex = _load(tmp_path, {"messages": [_Q, {"role": "assistant", "content": None,
                                            "tool_calls": [call]},
                                       {"role": "tool", "content": "NULL"}, _A]})
    assert ex[-1]["messages"][2] == {"role": "tool", "content": "NULL"}
