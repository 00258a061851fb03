"""Rows of SFT data files (sft_data.jsonl_examples, read by conversations.py), round 10: shapes
that were trained as the wrong text without a word. Each either loads as the turns a reader
sees (rendered as the official Qwen3 template renders them) or is refused in one line naming the
row, the problem and the fix."""

import copy
import json
import re

import pytest
from test_sft import _trained  # tokens trained; renders as the official template

import sft
import sft_data
from data import DataError


@pytest.fixture(scope="module")
def tok(tokenizer):
    return sft.set_chat_template(copy.deepcopy(tokenizer))


def _load(tmp_path, *rows):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return sft_data.jsonl_examples(str(path))


def _refused(tmp_path, row, says):
    with pytest.raises(DataError, match=re.escape(says)):
        _load(tmp_path, row)


_Q = {"role": "user", "content": "2+2?"}


# ---- a reasoning under a name not read: by word, in any spelling ----------------------------
@pytest.mark.parametrize("where,key", [
    ("message", "think"), ("message", "scratchpad"), ("message", "inner_monologue"),
    ("message", "r1_reasoning"), ("message", "modelThinking"), ("message", "analysis"),
    ("row", "deepseek_thinking_trajectory"), ("row", "geminiThinkingTrajectory"),
    ("row", "deepseek_reasoning"), ("row", "Thought-Process")])
def test_a_reasoning_under_any_name_with_a_reasoning_word_is_named(tmp_path, where, key):
    """s1K-1.1's deepseek_thinking_trajectory, a message's "think" or "scratchpad": the reply
    was trained with an empty think block, its reasoning dropped without a word."""
    if where == "message":
        row = {"messages": [_Q, {"role": "assistant", "content": "4", key: "2+2=4"}]}
        says = f"row 0: message 1 has {key!r} ('2+2=4'), a reasoning under a name not read"
    else:
        row = {"question": "2+2?", "solution": "4", key: "2+2=4"}
        says = f"row 0: the row has {key!r} ('2+2=4'), a reasoning under a name not read"
    _refused(tmp_path, row, says)


def test_a_reasoning_given_as_a_list_is_named(tmp_path):
    """OpenRouter's reasoning_details (a list of parts), s1K's thinking_trajectories."""
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": "4", "reasoning_details":
                                          [{"type": "reasoning.text", "text": "2+2=4"}]}]},
             "row 0: message 1 has 'reasoning_details' ([{'type'")
    _refused(tmp_path, {"question": "2+2?", "solution": "4", "thinking_trajectories": ["2+2=4"]},
             "row 0: the row has 'thinking_trajectories' (['2+2=4'])")


def test_a_setting_about_reasoning_is_no_reasoning(tmp_path):
    """A field that sets or counts the reasoning (its effort, budget, type) is not one."""
    rows = [{"messages": [_Q, {"role": "assistant", "content": "4"}], "reasoning_effort": "high",
             "cot_type": "math", "thinking_budget": "1024", "numThinkingTokens": "0"}]
    assert _load(tmp_path, *rows)[0]["messages"][-1] == {"role": "assistant", "content": "4"}


# ---- a reply's reasoning under think in another spelling or bracket -------------------------
@pytest.mark.parametrize("open_,close", [
    ("<THINK>", "</THINK>"), ("<Think>", "</Think>"), ("<seed:think>", "</seed:think>"),
    ("[THINK]", "[/THINK]"), ("[think]", "[/think]"), ("◁think▷", "◁/think▷"),
    ("<scratchpad>", "</scratchpad>"), ("[REASONING]", "[/REASONING]")])
def test_a_reasoning_block_in_another_spelling_is_the_think_block(tok, tmp_path, open_, close):
    """Magistral's [THINK], Kimi's ◁think▷, Seed-OSS's <seed:think>, <THINK>: the block was
    trained as the answer after an empty think block (a non-thinking reply that writes tags)."""
    ex = _load(tmp_path, {"messages": [_Q, {"role": "assistant",
                                            "content": f"{open_}\n2+2=4\n{close}\n\n4"}]})[0]
    assert ex["messages"][-1] == {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}
    assert _trained(tok, ex) == ("<think>\n2+2=4\n</think>\n\n4<|im_end|>", True)


def test_a_reasoning_block_in_another_spelling_left_open_is_named(tmp_path):
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": "[THINK]2+2=4 so 4"}]},
             "row 0: message 1 (assistant) opens with [THINK] but not with one "
             "[THINK]...[/THINK] block before its answer")
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": "<THINK>r</think>4"}]},
             "opens with <THINK> but not with one <THINK>...</THINK> block")


# ---- a KTO row's label in any spelling --------------------------------------------------------
@pytest.mark.parametrize("label", [0, 0.0, "False", "false", "0", " no ", "BAD", "undesirable",
                                   -1, "negative"])
def test_a_kto_row_marked_undesirable_in_any_spelling_is_refused(tmp_path, label):
    """A CSV's "False", a column of 0/1, "bad": only `false` itself was refused; the others
    trained the model to imitate the completions marked bad."""
    _refused(tmp_path, {"prompt": "2+2?", "completion": "5", "label": label},
             f"row 0: the row is marked undesirable ('label': {label!r}, a KTO row)")


@pytest.mark.parametrize("label", [True, 1, 1.0, "True", "1", "yes", "good", "desirable"])
def test_a_kto_row_marked_desirable_in_any_spelling_is_trained(tmp_path, label):
    ex = _load(tmp_path, {"prompt": "2+2?", "completion": "4", "label": label})
    assert ex[0]["messages"] == [_Q, {"role": "assistant", "content": "4"}]


def test_a_kto_label_read_as_neither_is_named(tmp_path):
    _refused(tmp_path, {"prompt": "2+2?", "completion": "4", "label": "maybe"},
             "row 0: the row's 'label' is 'maybe', neither desirable (true, 1) nor undesirable "
             "(false, 0) as a KTO row's: give true or false, or drop it")


def test_a_kto_csv_file_of_both_labels_is_refused_at_its_undesirable_row(tmp_path):
    path = tmp_path / "kto.csv"
    path.write_text("prompt,completion,label\n2+2?,4,True\n2+2?,5,False\n")
    with pytest.raises(DataError, match=re.escape("row 1: the row is marked undesirable "
                                                  "('label': 'False'")):
        sft_data.jsonl_examples(str(path))


# ---- a row's system prompt under another name; prompt fields no turn holds -------------------
@pytest.mark.parametrize("key", ["system_message", "systemMessage", "SYSTEM_PROMPT", "sys_msg",
                                 "preamble", "System Instruction"])
def test_a_rows_system_prompt_under_another_name_is_its_system_turn(tok, tmp_path, key):
    """Cohere's preamble, a "system_message" column: the reply was trained without the system
    prompt its row gives."""
    for row in ({key: "Be brief.", "messages": [_Q, {"role": "assistant", "content": "4"}]},
                {key: "Be brief.", "prompt": "2+2?", "response": "4"}):
        ex = _load(tmp_path, row)[0]
        assert ex["messages"] == [{"role": "system", "content": "Be brief."}, _Q,
                                  {"role": "assistant", "content": "4"}]
        assert _trained(tok, ex) == ("<think>\n\n</think>\n\n4<|im_end|>", True)


def test_a_system_prompt_of_whitespace_is_none(tmp_path):
    """As "" is none (LLaMA-Factory's rows hold it); it rendered an empty system turn."""
    ex = _load(tmp_path, {"system": " \n", "messages": [_Q, {"role": "assistant", "content": "4"}]})
    assert ex[0]["messages"] == [_Q, {"role": "assistant", "content": "4"}]


@pytest.mark.parametrize("row,key", [
    ({"persona": "You are a pirate.", "conversations": [
        {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Arr"}]}, "persona"),
    ({"Instruction": "Answer in French.", "messages": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Salut"}]},
     "Instruction"),
    ({"context": "Paris is in France.", "question": "Where is Paris?",
      "answer": "Paris is in France. It is its capital."}, "context"),
    ({"scenario": "A tavern.", "prompt": "Hi", "completion": "Welcome!"}, "scenario"),
    ({"question": "2+2?", "messages": [{"role": "user", "content": "3+3?"},
                                       {"role": "assistant", "content": "6"}]}, "question")])
def test_a_prompt_field_no_turn_holds_is_named(tmp_path, row, key):
    """A persona or instruction beside ShareGPT's conversations, SQuAD's context beside its
    question and answer: trained on a prompt without them, without a word."""
    said = f"row 0: the row has {key.lower()!r} ({row[key]!r}), which no turn of its "
    _refused(tmp_path, row, said + "conversation holds: the reply would be trained without it")


def test_a_prompt_field_a_turn_holds_is_read(tmp_path):
    """UltraChat's "prompt" repeats its first user turn; Dolly's context is joined into it."""
    rows = [{"prompt": "Hi", "prompt_id": "7", "messages": [
                {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]},
            {"instruction": "Where is Paris?", "context": "Paris is in France.",
             "response": "In France."}]
    ex = _load(tmp_path, *rows)
    assert [e["messages"][0]["content"] for e in ex] == [
        "Hi", "Where is Paris?\n\nParis is in France."]


# ---- a turn of invisible characters is empty --------------------------------------------------
@pytest.mark.parametrize("text", ["\u200b", "\ufeff", "\u200d\u2060 ", "\u00ad", "\u2800",
                                  "\u3164", "\u200b /no_think"])
def test_a_query_or_reply_that_shows_nothing_is_empty(tmp_path, text):
    """A zero-width space, a byte order mark, the Braille blank: the query was trained as asked,
    the reply as given (strip() keeps them)."""
    _refused(tmp_path, {"messages": [{"role": "user", "content": text},
                                     {"role": "assistant", "content": "4"}]},
             f"row 0: message 0 (user) is an empty query ({text!r})")
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": text.replace(
        "/no_think", "")}]}, "row 0: message 1 (assistant), the reply to train, has no answer")


def test_a_query_of_a_visible_character_among_invisible_ones_is_read(tmp_path):
    ex = _load(tmp_path, {"messages": [{"role": "user", "content": "\u200b2+2?"},
                                       {"role": "assistant", "content": "4\u200b"}]})
    assert ex[0]["messages"][0]["content"] == "\u200b2+2?"


# ---- Alpaca's empty instruction is no part of the query --------------------------------------
@pytest.mark.parametrize("instruction", ["", "  ", "\n"])
def test_an_alpaca_row_of_an_empty_instruction_asks_its_input(tmp_path, instruction):
    """Its query was "\\n\\n" then the input: trained on a prompt that opens with blank lines."""
    for field in ("input", "context"):
        ex = _load(tmp_path, {"instruction": instruction, field: "2+2?", "output": "4"})
        assert ex[0]["messages"] == [_Q, {"role": "assistant", "content": "4"}]
    ex = _load(tmp_path, {"instruction": "Add.", "input": "2+2?", "output": "4"})
    assert ex[0]["messages"][0]["content"] == "Add.\n\n2+2?"


# ---- a list of candidate replies ---------------------------------------------------------------
@pytest.mark.parametrize("row,key,n", [
    ({"problem": "2+2?", "solution": "It is 4.", "answer": "4",
      "generations": ["<think>\n2+2=4\n</think>\n\n\\boxed{4}"]},
     "generations", "1 candidate reply"),
    ({"instruction": "2+2?", "completions": [{"response": "4"}, {"response": "5"}]},
     "completions", "2 candidate replies"),
    ({"prompt": "2+2?", "Responses": ["4", "5"]}, "Responses", "2 candidate replies"),
    ({"question": "2+2?", "answers": ["4", "four"]}, "answers", "2 candidate replies")])
def test_a_list_of_candidate_replies_is_named(tmp_path, row, key, n):
    """OpenR1-Math's row trained its 'solution' and dropped the traces in 'generations' without
    a word; UltraFeedback's and the others were 'no field prompt'."""
    _refused(tmp_path, row, f"row 0: the row has {key!r}, a list of {n} (OpenR1's generations, "
                            "UltraFeedback's completions): SFT trains one reply, and which is not "
                            "known")


# ---- a message's role or text given twice ----------------------------------------------------
@pytest.mark.parametrize("message,says", [
    ({"role": "user", "from": "gpt", "content": "2+2?"},
     "row 0: message 0 gives its role twice, as 'role' ('user') and 'from' ('gpt'), which differ"),
    ({"from": "human", "speaker": "Assistant", "value": "2+2?"},
     "row 0: message 0 gives its role twice, as 'from' ('human') and 'speaker' ('Assistant')"),
    ({"role": "user", "content": "2+2?", "text": "3+3?"},
     "row 0: message 0 gives its text twice, as 'content' ('2+2?') and 'text' ('3+3?'), which "
     "differ: keep one"),
    ({"from": "human", "value": "2+2?", "Content": "3+3?"},
     "row 0: message 0 gives its text twice, as 'content' ('3+3?') and 'value' ('2+2?')")])
def test_a_message_giving_its_role_or_text_twice_is_named(tmp_path, message, says):
    """One was read and the other dropped without a word (the ShareGPT "value" or "from" beside
    a "content" or "role")."""
    _refused(tmp_path, {"messages": [message, {"role": "assistant", "content": "4"}]}, says)


def test_a_message_giving_its_role_or_text_twice_alike_is_read(tmp_path):
    """The same role in two spellings, the same text, a person's name under "author"."""
    ex = _load(tmp_path, {"messages": [
        {"role": "user", "from": "human", "author": "Ann", "content": "2+2?", "text": " 2+2?"},
        {"role": "assistant", "content": "4"}]})
    assert [m["content"] for m in ex[0]["messages"]] == ["2+2?", "4"]


# ---- a preference row's chosen reply beside its conversation ---------------------------------
def test_a_chosen_reply_that_is_not_the_conversations_is_named(tmp_path):
    """The conversation was trained, the 'chosen' dropped, while the load said the chosen reply
    of each preference row is trained."""
    _refused(tmp_path, {"messages": [_Q, {"role": "assistant", "content": "4"}], "chosen": "four",
                        "rejected": "5"},
             "row 0: the row has 'messages' and a 'chosen' reply ('four') that is not its last "
             "reply: which one to train is not known; keep one")
    _refused(tmp_path, {"conversations": [{"from": "human", "value": "2+2?"},
                                          {"from": "gpt", "value": "4"}],
                        "chosen": [_Q, {"role": "assistant", "content": "four"}]},
             "row 0: the row has 'conversations' and a 'chosen' reply ([{'role'")


def test_a_chosen_reply_that_is_the_conversations_is_read(tmp_path):
    """UltraFeedback-binarized's "messages" repeat its "chosen"."""
    conversation = [_Q, {"role": "assistant", "content": "4"}]
    ex = _load(tmp_path, {"prompt": "2+2?", "messages": conversation, "chosen": conversation,
                          "rejected": [_Q, {"role": "assistant", "content": "5"}]},
               {"messages": conversation, "chosen": " 4"})
    assert [e["messages"] for e in ex] == [conversation, conversation]
