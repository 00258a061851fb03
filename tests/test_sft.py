"""sft.py and sft_data.py: chat template, loss mask, think tokens, RoPE rescaling, packing,
filters, training."""

import json
import math
import re

import pytest
import torch

import chat_template
import conversations
import data
import engines
import models
import runs
import sft
import sft_data
import sft_run
from data import DataError


@pytest.fixture(scope="module")
def tok(tokenizer):
    import copy

    return sft.set_chat_template(copy.deepcopy(tokenizer))


def render(tok, messages, **kw):
    return tok.apply_chat_template(messages, tokenize=False, **kw)


# ---- the Qwen3-style template: the four cases, exactly --------------------------------------
def test_template_thinking_mode(tok):
    msgs = [
        {"role": "user", "content": "What is 2+2? /think"},
        {"role": "assistant", "reasoning_content": "2+2=4.", "content": "\\boxed{4}"},
    ]
    expected = (
        "<|im_start|>user\nWhat is 2+2? /think<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n2+2=4.\n</think>\n\n\\boxed{4}<|im_end|>\n"
    )
    assert render(tok, msgs) == expected
    # reasoning inside content (Qwen3 parses it out) renders the same; no flag = thinking
    inline = [
        {"role": "user", "content": "What is 2+2? /think"},
        {"role": "assistant", "content": "<think>\n2+2=4.\n</think>\n\n\\boxed{4}"},
    ]
    assert render(tok, inline) == expected


def test_template_non_thinking_mode_renders_empty_think_block(tok):
    # a non-thinking sample (fuse_modes) has an empty reasoning: that gives the empty block
    msgs = [
        {"role": "user", "content": "What is 2+2? /no_think"},
        {"role": "assistant", "reasoning_content": "", "content": "\\boxed{4}"},
    ]
    assert render(tok, msgs) == (
        "<|im_start|>user\nWhat is 2+2? /no_think<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n\\boxed{4}<|im_end|>\n"
    )
    # the /no_think flag is plain text to the Qwen3 template: it does not hide a reasoning
    msgs[1]["reasoning_content"] = "2+2=4."
    assert render(tok, msgs) == (
        "<|im_start|>user\nWhat is 2+2? /no_think<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n2+2=4.\n</think>\n\n\\boxed{4}<|im_end|>\n"
    )


def test_template_enable_thinking_false_generation_prompt(tok):
    msgs = [{"role": "user", "content": "What is 2+2?"}]
    assert render(tok, msgs, add_generation_prompt=True, enable_thinking=False) == (
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert render(tok, msgs, add_generation_prompt=True) == (  # thinking: the model opens <think>
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    )


def test_template_multi_turn_drops_old_reasoning_and_flags_are_text(tok):
    msgs = [
        {"role": "system", "content": "Be brief. /no_think"},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\nr1\n</think>\n\na1"},
        {"role": "user", "content": "/no_think And 3+3? /think"},
        {"role": "assistant", "reasoning_content": "r2", "content": "6"},
    ]
    assert render(tok, msgs) == (
        "<|im_start|>system\nBe brief. /no_think<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\na1<|im_end|>\n"
        "<|im_start|>user\n/no_think And 3+3? /think<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nr2\n</think>\n\n6<|im_end|>\n"
    )
    msgs[3]["content"] = "/think And 3+3? /no_think"  # now the later flag is /no_think,
    assert render(tok, msgs).endswith(  # which the model obeys, not the template
        "<|im_start|>user\n/think And 3+3? /no_think<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nr2\n</think>\n\n6<|im_end|>\n"
    )


# ---- loss mask, token by token ----------------------------------------------------------------
def test_loss_mask_covers_exactly_the_assistant_turn(tok):
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2? /think"},
        {"role": "assistant", "reasoning_content": "2+2=4.", "content": "So $\\boxed{4}$."},
    ]
    ids, mask = sft.encode(tok, msgs)
    prompt = tok.apply_chat_template(msgs[:-1], tokenize=False, add_generation_prompt=True)
    prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    reply = "<think>\n2+2=4.\n</think>\n\nSo $\\boxed{4}$.<|im_end|>"
    reply_ids = tok(reply, add_special_tokens=False)["input_ids"]
    assert ids == prompt_ids + reply_ids and len(mask) == len(ids)
    for t, (i, m) in enumerate(zip(ids, mask)):  # token by token
        assert m == (1 if t >= len(prompt_ids) else 0), (t, tok.decode([i]))
    assert tok.decode(ids[: len(prompt_ids)]).endswith("<|im_start|>assistant\n")
    assert tok.decode([i for i, m in zip(ids, mask) if m]) == reply
    assert ids[-1] == tok.convert_tokens_to_ids("<|im_end|>") and mask[-1] == 1


# ---- think tokens -----------------------------------------------------------------------------
@pytest.mark.parametrize("tied", [True, False])
def test_add_think_tokens_mean_init_and_roundtrip(tokenizer, tied, tmp_path):
    import copy

    tok = copy.deepcopy(tokenizer)
    model = models.tiny_model(vocab_size=len(tok))
    if not tied:
        model.config.tie_word_embeddings = False
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone() * 2)
    old_emb = model.get_input_embeddings().weight.detach().clone()
    old_head = model.get_output_embeddings().weight.detach().clone()
    ids = sft.add_think_tokens(model, tok)
    V = old_emb.shape[0]
    assert ids == [V, V + 1] and len(tok) == V + 2 and model.config.vocab_size == V + 2
    emb, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    assert torch.equal(emb[:V], old_emb) and torch.allclose(emb[V], old_emb.mean(0))
    assert torch.allclose(head[V + 1], old_head.mean(0))
    assert (head is emb) == tied
    runs.save_checkpoint(model, sft.set_chat_template(tok), tmp_path / "ck")
    model2, tok2 = models.load_policy(str(tmp_path / "ck"))
    assert tok2("<think>\nx\n</think>", add_special_tokens=False)["input_ids"][0] == V
    assert tok2.convert_tokens_to_ids(["<think>", "</think>"]) == [V, V + 1]
    assert tok2.decode([V, V + 1], skip_special_tokens=True) == "<think></think>"  # kept
    assert torch.equal(model2.get_input_embeddings().weight, emb)
    assert torch.equal(model2.get_output_embeddings().weight, head)


def test_repurpose_think_tokens_keeps_vocabulary_and_roundtrips(tokenizer, tmp_path):
    assert [tokenizer.convert_ids_to_tokens(i) for i in sft.find_unused_tokens(tokenizer)] == [
        "<jupyter_script>",
        "<empty_output>",
    ]
    tok = sft.set_chat_template(sft.repurpose_think_tokens(tokenizer))
    assert len(tok) == len(tokenizer) and tok.convert_tokens_to_ids(["<think>", "</think>"]) == [
        15,
        16,
    ]
    model = models.tiny_model(vocab_size=len(tok))
    runs.save_checkpoint(model, tok, tmp_path / "ck")
    model2, tok2 = models.load_policy(str(tmp_path / "ck"))
    assert model2.config.vocab_size == len(tokenizer) == len(tok2)
    assert tok2("<think>\nx\n</think>", add_special_tokens=False)["input_ids"] == [15] + tok2(
        "\nx\n", add_special_tokens=False
    )["input_ids"] + [16]
    assert tok2.decode([15, 16]) == "<think></think>"
    assert len(tok2("<jupyter_script>", add_special_tokens=False)["input_ids"]) > 1  # name is gone
    assert tokenizer.convert_ids_to_tokens(15) == "<jupyter_script>"  # the original is untouched


def test_repurpose_renames_only_the_missing_think_token(tokenizer):
    """A tokenizer that has <think> already (a trained row) gets only </think> renamed: renaming
    two tokens used to make a second <think>, and the untrained renamed one won."""
    import copy

    from transformers import AddedToken

    half = copy.deepcopy(tokenizer)
    half.add_tokens([AddedToken("<think>", special=False, normalized=False)])
    think_id = half.convert_tokens_to_ids("<think>")
    tok = sft.repurpose_think_tokens(half)
    assert len(tok) == len(half)
    assert tok.convert_tokens_to_ids(["<think>", "</think>"]) == [think_id, 16]
    assert tok.convert_ids_to_tokens(15) == "<jupyter_script>"  # not renamed


def test_repurpose_without_unused_tokens_is_a_clear_error(tokenizer):
    with pytest.raises(ValueError, match="unused special tokens"):
        sft.find_unused_tokens(tokenizer, k=50)


# ---- RoPE base rescaling ----------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_rope_rescaling_changes_frequencies_and_roundtrips(arch, tokenizer, tmp_path):
    model = models.tiny_model(arch, vocab_size=len(tokenizer))
    theta = model.config.rope_parameters["rope_theta"]
    old = model.model.rotary_emb.inv_freq.clone()
    x = torch.tensor([[5, 6, 7, 8, 9, 10]])
    before = model(x).logits
    sft.rescale_rope(model, 2.0, 4096)
    assert model.config.rope_parameters["rope_theta"] == 2 * theta
    assert model.config.max_position_embeddings == 4096
    new = model.model.rotary_emb.inv_freq
    d = model.config.head_dim
    i = torch.arange(d // 2, dtype=torch.float64)
    # inv_freq_i = base^(-2i/d): doubling the base scales pair i by 2^(-2i/d)
    assert torch.allclose((new / old).double(), 2.0 ** (-2 * i / d), rtol=1e-5)
    assert torch.allclose(new.double(), (2 * theta) ** (-2 * i / d), rtol=1e-5)
    assert not torch.allclose(model(x).logits, before)  # positions > 0 rotate differently
    runs.save_checkpoint(model, tokenizer, tmp_path / "ck")
    model2, _ = models.load_policy(str(tmp_path / "ck"))
    assert model2.config.rope_parameters["rope_theta"] == 2 * theta
    assert model2.config.max_position_embeddings == 4096
    assert torch.allclose(model2.model.rotary_emb.inv_freq, new)
    sft.rescale_rope(model2, 1.0, 1024)  # never shrinks the window
    assert model2.config.max_position_embeddings == 4096


def test_a_max_length_past_the_context_is_said_with_the_rope_fix(tokenizer, capsys):
    # --max_length 100000 raised max_position_embeddings without a word: the checkpoint claimed
    # a context its RoPE was never trained for, and grpo.py's context check trusted it
    for factor, max_length, said in ((1.0, 4096, "but --rope_theta_factor 1 leaves RoPE as"),
                                     (2.0, 4096, "with the RoPE base x2, it attends that far"),
                                     (1.0, 1024, None)):
        model = models.tiny_model(vocab_size=len(tokenizer))
        sft.rescale_rope(model, factor, max_length)
        out = capsys.readouterr().out
        if said:
            assert ("[sft] note: --max_length 4096 is above the model's context: its "
                    "max_position_embeddings goes from 2048 to 4096, " + said) in out
            assert out.count("\n") == 1
        else:
            assert out == ""


# ---- packing ----------------------------------------------------------------------------------
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_loss_equals_unpacked_loss(tok, attn):
    tiny = models.tiny_model(vocab_size=len(tok))
    tiny.set_attn_implementation(attn)
    assert tiny.config._attn_implementation == attn
    encoded = [
        sft.encode(tok, ex["messages"])
        for ex in sft.fuse_modes(sft_data.synthetic_examples(4, 0), 0.5, 0)
    ]
    packed = sft.collate(encoded, [[0, 1, 2, 3]], tok.pad_token_id)
    assert packed["position_ids"][0, len(encoded[0][0])] == 0  # restarts per example
    unpacked = sft.collate(encoded, [[0], [1], [2], [3]], tok.pad_token_id)  # right-padded
    with torch.no_grad():
        lp, np_ = sft.sft_loss_sum(tiny, packed)
        lu, nu = sft.sft_loss_sum(tiny, unpacked)
        separate = sum(
            sft.sft_loss_sum(tiny, sft.collate(encoded, [[k]], tok.pad_token_id))[0]
            for k in range(4)
        )
        # without the block mask, examples would see each other: the loss changes
        leak = dict(packed, segments=torch.ones_like(packed["segments"]))
        leaked, _ = sft.sft_loss_sum(tiny, leak)
    assert np_ == nu == sum(sum(m[1:]) for _, m in encoded)
    assert torch.allclose(lp, lu, rtol=1e-5) and torch.allclose(lp, separate, rtol=1e-5)
    assert not torch.allclose(lp, leaked, rtol=1e-4)


def test_pack_and_block_mask():
    assert sft.pack([3, 3, 3, 5, 1], 6) == [[0, 1], [2], [3, 4]]
    m = sft.block_causal_mask(torch.tensor([[1, 1, 2, 2, 0]]))[0, 0]
    assert m.tolist() == [
        [True, False, False, False, False],
        [True, True, False, False, False],
        [False, False, True, False, False],
        [False, False, True, True, False],
        [False, False, False, False, True],
    ]


def test_cosine_lr_with_warmup():
    lr = [sft.cosine_lr(s, 1.0, 4, 14, 0.1) for s in range(14)]
    assert lr[:4] == [0.25, 0.5, 0.75, 1.0] and lr[4] == 1.0
    assert math.isclose(lr[9], 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert all(a >= b for a, b in zip(lr[4:], lr[5:])) and sft.cosine_lr(
        14, 1.0, 4, 14, 0.1
    ) == pytest.approx(0.1)


# ---- data, fusion, filters --------------------------------------------------------------------
def test_synthetic_traces_and_fusion():
    ex = sft_data.synthetic_examples(200, 0)
    reply = ex[0]["messages"][-1]
    assert (
        reply["reasoning_content"] == data.math_tasks(1, "train", 0)[0]["solution"]
    )  # the worked solution
    assert "\\boxed{" + ex[0]["reference"] + "}" in reply["content"]
    fused = sft.fuse_modes(ex, 0.3, 0)
    no_think = [e for e in fused if not e["think"]]
    assert 0.2 < len(no_think) / len(fused) < 0.4
    flagged = 0
    for e in fused:
        user = e["messages"][-2]["content"]
        # Qwen3 §4.3: thinking is the default mode, so a thinking sample carries /think or no flag
        assert user.endswith(" /no_think") if not e["think"] else not user.endswith("/no_think")
        flagged += e["think"] and user.endswith(" /think")
        assert bool(e["messages"][-1]["reasoning_content"]) == e["think"]
    thinking = len(fused) - len(no_think)
    assert 0.3 < flagged / thinking < 0.7  # both: flagged and unflagged
    assert sft.fuse_modes(ex, 0.0, 0) == ex  # cold start: no flags


def test_fusion_data_other_tasks_and_multi_turn(tokenizer):
    thinking = sft_data.synthetic_examples(60, 0)
    plain = sft_data.non_thinking_examples(40, 0)
    assert {"instruction", "math"} <= {"math" if e["reference"] else "instruction" for e in plain}
    fused = sft.fuse_modes(thinking, 0.4, 0, non_thinking=plain, multi_turn_ratio=0.3)
    assert len(fused) == 100 and sum(not e["think"] for e in fused) == 40
    multi = [e for e in fused if sum(m["role"] == "user" for m in e["messages"]) == 2]
    assert 15 < len(multi) < 45
    for e in multi:  # the earlier turn is in the other mode
        first, last = e["messages"][0]["content"], e["messages"][-2]["content"]
        assert first.endswith("/no_think") != last.endswith("/no_think")
    tok = sft.set_chat_template(models.load_tokenizer())
    e = next(e for e in multi if e["think"])
    ids, mask = sft.encode(tok, e["messages"])
    trained = tok.decode([t for t, m in zip(ids, mask) if m])
    assert (
        e["messages"][-1]["reasoning_content"].split("\n")[0] in trained
    )  # the last turn's reasoning
    context = tok.decode([t for t, m in zip(ids, mask) if not m])
    assert "/no_think" in context and "<think>" not in context.split("<|im_start|>assistant")[1]


def _call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _tool_loop(system="Use the calculator."):
    """A jsonl-style conversation: system turn, query, two tool steps with reasoning, answer."""
    return {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "What is 2*3+1?"},
            {"role": "assistant", "content": "", "reasoning_content": "step one",
             "tool_calls": [_call("calc", {"expr": "2*3"})]},
            {"role": "tool", "content": "6"},
            {"role": "assistant", "content": "<think>\nstep two\n</think>\n\n",
             "tool_calls": [_call("calc", '{"expr": "6+1"}')]},
            {"role": "tool", "content": "7"},
            {"role": "assistant", "content": "So $\\boxed{7}$.", "reasoning_content": "done"},
        ],
        "reference": "7",
    }  # fmt: skip


def _mode(messages):
    """The mode the latest soft switch of the user/system turns asks for (thinking by default)."""
    text = " ".join(m["content"] for m in messages if m["role"] in ("user", "system"))
    flags = conversations.SOFT_SWITCH.findall(text)
    return not flags or flags[-1] == "think"


@pytest.mark.parametrize("style", ["short", "default"])
def test_fusion_multi_turn_keeps_system_first_and_the_latest_flag_right(monkeypatch, style, tok):
    """The earlier exchange goes after the system turn (it used to be put in front of it, so the
    system prompt rendered mid-conversation), and a thinking sample after an earlier /no_think
    carries /think (the model obeys the latest flag)."""
    monkeypatch.setitem(data.CURRENT_STYLE, "name", style)
    thinking = sft_data.synthetic_examples(40, 0)
    plain = sft_data.non_thinking_examples(40, 0)
    fused = sft.fuse_modes(thinking, 0.5, 0, non_thinking=plain, multi_turn_ratio=1.0)
    assert sum(sum(m["role"] == "user" for m in e["messages"]) == 2 for e in fused) > 60
    for e in fused:
        roles = [m["role"] for m in e["messages"]]
        assert "system" not in roles[1:], roles
        assert roles.count("user") == 2 and roles[-1] == "assistant"
        assert _mode(e["messages"]) == e["think"], [m["content"] for m in e["messages"]]
        ids, mask = sft.encode(tok, e["messages"])
        trained = tok.decode([t for t, m in zip(ids, mask) if m])
        assert trained.startswith("<think>\n\n</think>\n\n") != e["think"]


def test_fusion_of_tool_loops_whole_exchanges_and_no_reasoning_when_not_thinking(tok):
    """A tool-loop conversation: a non-thinking sample has no reasoning in any step of its
    answer (not only the last), and an earlier exchange taken from it starts at its query (it
    used to be its last two messages: a tool result and the answer, with no question)."""
    loops = [_tool_loop() for _ in range(8)]
    fused = sft.fuse_modes(loops, 0.5, 3, multi_turn_ratio=1.0)
    assert {e["think"] for e in fused} == {True, False}
    for e in fused:
        msgs = e["messages"]
        roles = [m["role"] for m in msgs]
        assert roles[0] == "system" and roles.count("system") == 1
        assert roles[1] == "user" and roles.count("user") == 2, roles
        assert _mode(msgs) == e["think"]
        q = conversations.last_query(msgs)
        full = tok.apply_chat_template(msgs, tokenize=False)
        answer = full[full.index(msgs[q]["content"]) :]
        if e["think"]:
            assert "step one" in answer and "step two" in answer and "<think>\ndone" in answer
        else:
            assert "step" not in answer and "done" not in answer
            assert answer.count("<think>") == 1 and "<think>\n\n</think>\n\nSo" in answer
            assert all(
                m.get("reasoning_content") == "" for m in msgs[q + 1 :] if m["role"] == "assistant"
            )
    # a flag already in the data is not doubled, and a standing /no_think is overridden
    ex = _tool_loop("Be brief. /no_think")
    (t,) = sft.fuse_modes([ex], 0.5, 0, non_thinking=[])
    assert t["think"] and t["messages"][1]["content"].endswith("+1? /think")


def test_fusion_makes_an_answer_without_reasoning_a_non_thinking_sample(tok):
    """A thinking sample is one whose answer reasons: an example without reasoning (plain chat
    data, a teacher that skipped its think block) used to be drawn as thinking half the time,
    some with /think, and trained /think -> empty think block."""
    plain = [
        {"messages": [_u(f"hi {i}"), reply], "reference": None}
        for i in range(8)
        for reply in (_a("hello"), _a("hello", reasoning_content=""), _a("<think>\n\n</think>hi"))
    ]
    reasoned = sft_data.synthetic_examples(40, 0)
    for fused in (
        sft.fuse_modes(plain + reasoned, 0.5, 0),
        sft.fuse_modes(plain + reasoned, 0.5, 0, non_thinking=[], multi_turn_ratio=0.5),
    ):
        for e in fused:
            ids, mask = sft.encode(tok, e["messages"])
            trained = tok.decode([t for t, m in zip(ids, mask) if m])
            assert _mode(e["messages"]) == e["think"], [m["content"] for m in e["messages"]]
            assert e["think"] == (not trained.startswith("<think>\n\n</think>")), trained
        queries = [e["messages"][conversations.last_query(e["messages"])]["content"] for e in fused]
        plain_out = [e for e, q in zip(fused, queries) if q.startswith("hi ")]
        assert len(plain_out) == 24 and not any(e["think"] for e in plain_out)
        assert any(e["think"] for e in fused)


def test_a_path_or_url_ending_in_think_is_not_a_soft_switch():
    """`/think` at the end of a URL or path is text, not a flag: it used to count as the latest
    flag, so a thinking sample under a standing /no_think got no /think."""
    msgs = [_u("Be quick /no_think"), _a("ok", reasoning_content=""),
            _u("Summarise docs/no_think.md and https://example.org/think"),
            _a("It says ...", reasoning_content="Let me read it.")]  # fmt: skip
    assert conversations.latest_switch(msgs, 2) == "no_think"
    texts = ("/think", "a /no_think.", "x/think")
    switches = [conversations.latest_switch([_u(t)], 0) for t in texts]
    assert switches == ["think", "no_think", None]
    (e,) = sft.fuse_modes([{"messages": msgs, "reference": None}], 0.5, 0, non_thinking=[])
    assert e["think"] and e["messages"][2]["content"].endswith(" /think")


def test_fusion_ratios_are_fractions():
    """--multi_turn_ratio 1.5 used to pass (the bound was 2, the message said [0, 1))."""
    for flags, says in (
        (["--multi_turn_ratio", "1.5"], "--multi_turn_ratio 1.5: a fraction in [0, 1]"),
        (["--multi_turn_ratio", "-0.1"], "--multi_turn_ratio -0.1: a fraction in [0, 1]"),
        (["--no_think_ratio", "1"], "--no_think_ratio 1.0: a fraction in [0, 1)"),
    ):
        with pytest.raises(ValueError, match=re.escape(says)):
            sft.check_config(sft.parse(flags))
    sft.check_config(sft.parse(["--multi_turn_ratio", "1", "--no_think_ratio", "0"]))


def test_encode_and_jsonl_name_bad_conversations(tok, tmp_path):
    u, a = {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}
    for msgs, role in (([u, a, u], "user"), (_tool_loop()["messages"][:4], "tool")):
        with pytest.raises(ValueError, match=f"must end in the assistant turn.*'{role}'"):
            sft.encode(tok, msgs)
    with pytest.raises(ValueError, match="message 1 has role 'bot'"):
        sft.encode(tok, [u, {"role": "bot", "content": "x"}, a])
    path = tmp_path / "bad.jsonl"
    rows = [{"messages": [u, a]}, {"messages": [u, {"role": "narrator", "content": "a"}]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match="row 1: message 1 has role 'narrator'"):
        sft_data.jsonl_examples(str(path))


def test_a_tool_call_turn_trains_and_passes_the_filter(tok):
    """The last turn may only call a tool (content None): its think block and <tool_call> are
    the trained reply, and the response filter reads the None content as '' (it used to raise
    TypeError)."""
    msgs = [
        {"role": "user", "content": "2*3?"},
        {"role": "assistant", "content": None, "reasoning_content": "use it",
         "tool_calls": [_call("calc", {"expr": "2*3"})]},
    ]  # fmt: skip
    ids, mask = sft.encode(tok, msgs)
    assert tok.decode([t for t, m in zip(ids, mask) if m]) == (
        '<think>\nuse it\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": '
        '{"expr": "2*3"}}\n</tool_call><|im_end|>'
    )
    kept, counts = sft_data.filter_responses([{"messages": msgs, "reference": None}], 0.5)
    assert counts["kept"] == 1
    with pytest.raises(ValueError, match="merge consecutive assistant turns"):
        sft.encode(tok, [msgs[0], {"role": "assistant", "content": "a"}, msgs[1]])


def test_examples_past_max_length_are_dropped_whole_and_named(tok, capsys):
    """An example longer than --max_length is dropped, not cut (a cut reply would train a turn
    that never ends); the print says how many of how many, and when none fits the error gives
    the shortest length and the fix (it said only 'no example fits')."""
    short = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    long = {"messages": [{"role": "user", "content": "q " * 300},
                         {"role": "assistant", "content": "a " * 300}]}
    n_short = len(sft.encode(tok, short["messages"])[0])
    kept = sft.encode_examples(tok, [short, long], max_length=n_short + 10)
    assert kept == [sft.encode(tok, short["messages"])]
    assert "dropped 1 of 2 examples longer than max_length" in capsys.readouterr().out
    with pytest.raises(DataError, match=f"the shortest has {n_short} tokens.: raise --max_length"):
        sft.encode_examples(tok, [short, long], max_length=n_short - 1)


def test_response_filter_counts_each_rule():
    def ex(reasoning, answer, ref="12"):
        return {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "reasoning_content": reasoning, "content": answer},
            ],
            "reference": ref,
        }

    examples = [
        ex("3 * 4 = 12.\nSo the answer is 12.", "The answer is $\\boxed{12}$."),  # kept
        ex("3 * 4 = 12.", "The answer is $\\boxed{13}$."),  # wrong
        ex("loop " * 60, "$\\boxed{12}$"),  # repetition
        ex("3 * 4 = 13.\nSo the answer is 13.", "$\\boxed{12}$"),  # inconsistent
        ex("Half of 24 is \\boxed{12}", "$\\boxed{12}$", ref=None),  # kept
        ex("", "$\\boxed{12}$"),
    ]  # no claim: kept
    kept, counts = sft_data.filter_responses(examples, max_repetition=0.5)
    assert counts == {"wrong_answer": 1, "repetition": 1, "inconsistent": 1, "kept": 3, "total": 6}
    assert kept == [examples[0], examples[4], examples[5]]
    # a reference of several acceptable answers (Skywork-OR1's ground truth, JSON text or a list)
    # accepts any of them: its list was one value '["13", "12"]' that no answer equals
    for ref in ('["13", "12"]', ["13", "12"]):
        assert sft_data.filter_responses([ex("", "$\\boxed{12}$", ref)], 0.5)[1]["kept"] == 1
        assert sft_data.filter_responses([ex("", "$\\boxed{14}$", ref)], 0.5)[1]["kept"] == 0
    assert sft_data.reasoning_claim("x = 3/4, so the sum is \\frac{7}{4}") == "\\frac{7}{4}"
    assert sft_data.reasoning_claim("So the answer is \\frac{3}{4}.") == "\\frac{3}{4}"


def test_jsonl_rows_and_errors(tmp_path):
    path = tmp_path / "traces.jsonl"
    rows = [
        {"prompt": "2+2?", "reasoning": "2+2=4", "answer": "4"},
        {
            "messages": [
                {"role": "user", "content": "1+1?"},
                {"role": "assistant", "content": "<think>\n1+1=2\n</think>\n\n$\\boxed{2}$"},
            ]
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ex = sft_data.jsonl_examples(str(path))
    assert ex[0]["messages"][-1] == {
        "role": "assistant",
        "reasoning_content": "2+2=4",
        "content": "The final answer is $\\boxed{4}$.",
    }
    assert ex[0]["reference"] == "4" and ex[1]["reference"] is None
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"prompt": "x", "answer": "1"}) + "\n")
    with pytest.raises(DataError, match=r"row 1: 'answer' is '1', one line and no reasoning"):
        sft_data.jsonl_examples(str(path))
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "x"}]}) + "\n")
    with pytest.raises(DataError, match="row 0: an SFT conversation must end in the assistant"):
        sft_data.jsonl_examples(str(path))


@pytest.mark.parametrize("name", ["one.jsonl", "one.json"])
@pytest.mark.parametrize("turns", [
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}],
])
def test_a_file_of_one_conversation_as_a_bare_list_is_one_conversation(tmp_path, name, turns):
    """A .jsonl of one line that is a list of messages (or a .json file that is one) was read as
    a row per message ('no field prompt'); by its shape it is one conversation. A .jsonl of one
    message a line is named as such."""
    path = tmp_path / name
    path.write_text(json.dumps(turns) + "\n")
    ex = sft_data.jsonl_examples(str(path))
    assert [e["messages"] for e in ex] == [[{"role": "user", "content": "Hi"},
                                            {"role": "assistant", "content": "Hello"}]]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    with pytest.raises(DataError, match=r"row 0: the row is one message \('(role|from)'.*, not a "
                                        "conversation: write each conversation as one row"):
        sft_data.jsonl_examples(str(path))


def test_loading_says_once_that_chosen_is_trained_and_how_many_rows_repeat(tmp_path, capsys):
    """A file of preference rows trained their 'chosen' replies, and repeated rows as often as
    given, without a word; each is now said once (not a line per row)."""
    pref = {"prompt": "q", "chosen": "good", "rejected": "bad"}
    plain = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [pref, pref, plain, {**pref, "x": 1}]))
    assert len(sft_data.jsonl_examples(str(path))) == 4
    out = capsys.readouterr().out
    assert out.count("\n") == 2
    assert "3 preference row(s): SFT trains each one's 'chosen' reply; 'rejected' is not " in out
    assert "1 row(s) repeat an earlier one; each is trained as often as given" in out
    path.write_text(json.dumps(plain) + "\n")
    sft_data.jsonl_examples(str(path))
    assert capsys.readouterr().out == ""


def test_jsonl_prompt_completion_rows_and_every_row_checked_at_load(tok, tmp_path):
    """TRL's prompt-completion rows (strings or message lists) load as conversations; every row
    form is checked when the file is read, naming the row (a {prompt, reasoning, answer} row with
    a list or null prompt used to pass and fail later in `encode`, naming no row; a null answer
    was boxed as 'None')."""
    path = tmp_path / "pc.jsonl"
    rows = [
        {"prompt": "1+1?", "completion": "<think>\n1+1=2\n</think>\n\n$\\boxed{2}$"},
        {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "2+2?"}],
         "completion": [{"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
         "reference": "4", "id": 7},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ex = sft_data.jsonl_examples(str(path))
    assert ex[0]["messages"] == [
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": rows[0]["completion"]},
    ]
    assert ex[1]["messages"] == rows[1]["prompt"] + rows[1]["completion"]
    assert ex[1]["reference"] == "4" and ex[0]["reference"] is None
    ids, mask = sft.encode(tok, ex[0]["messages"])
    assert tok.decode([t for t, m in zip(ids, mask) if m]) == (
        "<think>\n1+1=2\n</think>\n\n$\\boxed{2}$<|im_end|>"
    )
    bad = {
        "row 0: message 0 (user) has no string content (got None)": {
            "prompt": None, "reasoning": "r", "answer": "1"},
        "row 0: 'answer' is None": {"prompt": "x", "reasoning": "r", "answer": None},
        "row 0: 'prompt' and 'completion' are each": {"prompt": "x", "completion": None},
        "row 0: an SFT conversation must end in the assistant turn": {
            "prompt": "x", "completion": [{"role": "user", "content": "y"}]},
    }  # fmt: skip
    for says, row in bad.items():
        path.write_text(json.dumps(row) + "\n")
        with pytest.raises(DataError, match=re.escape(says)):
            sft_data.jsonl_examples(str(path))



def test_jsonl_tools_reach_the_system_turn(tok, tmp_path):
    """A row's "tools" are rendered into the system turn of the prompt (as apply_chat_template
    does at inference), outside the loss; they were dropped at load, so the model learned to call
    functions it was never shown. A "tools" that is not a list of objects is refused, naming the
    row."""
    sig = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    row = {"messages": [{"role": "user", "content": "Weather in Oslo?"},
                        {"role": "assistant", "content": "<think>\nask\n</think>\n\nSunny."}],
           "tools": [sig]}
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(row) + "\n")
    ex = sft_data.jsonl_examples(str(path))
    assert ex[0]["tools"] == [sig]
    ids, mask = sft.encode_examples(tok, ex, 4096)[0]
    prompt = tok.decode([t for t, m in zip(ids, mask) if not m])
    assert "<tools>\n" + json.dumps(sig) + "\n</tools>" in prompt
    assert prompt == tok.apply_chat_template(row["messages"][:1], tools=[sig], tokenize=False,
                                             add_generation_prompt=True)
    assert tok.decode([t for t, m in zip(ids, mask) if m]).startswith("<think>")
    path.write_text(json.dumps({**row, "tools": "get_weather"}) + "\n")
    with pytest.raises(DataError, match="row 0: 'tools' is 'get_weather'; give a list"):
        sft_data.jsonl_examples(str(path))

# rows as datasets hold them -> (the conversation they load as, the tokens trained)
PARTS = [{"type": "text", "text": "What is"}, {"type": "text", "text": "2+2?"}]
TRACE = ("<|begin_of_thought|>\n\n2+2=4\n\n<|end_of_thought|>\n\n"
         "<|begin_of_solution|>\n\n\\boxed{4}\n\n<|end_of_solution|>")
ROW_FORMS = {
    "sharegpt": (
        {"conversations": [{"from": "system", "value": "Be brief."},
                           {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]},
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "llama_factory_function_call_and_tools_as_json_text": (
        {"tools": json.dumps([{"name": "w", "parameters": {}}]), "conversations": [
            {"from": "human", "value": "Oslo?"},
            {"from": "function_call", "value": '{"name": "w", "arguments": {"city": "Oslo"}}'},
            {"from": "observation", "value": "-3"}, {"from": "gpt", "value": "It is -3."}]},
        [{"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"type": "function", "function": {"name": "w", "arguments": {"city": "Oslo"}}}]},
         {"role": "tool", "content": "-3"}, {"role": "assistant", "content": "It is -3."}],
        "<think>\n\n</think>\n\nIt is -3.",
    ),
    "tool_calls_stored_as_json_text": (    # a column of a parquet or CSV file, say
        {"messages": [{"role": "user", "content": "Oslo?"},
                      {"role": "assistant", "content": "", "tool_calls": json.dumps(
                          [{"type": "function", "function": {"name": "w", "arguments": "{}"}}])},
                      {"role": "tool", "content": "-3"}, {"role": "assistant", "content": "-3."}]},
        [{"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": "", "tool_calls": [
             {"type": "function", "function": {"name": "w", "arguments": "{}"}}]},
         {"role": "tool", "content": "-3"}, {"role": "assistant", "content": "-3."}],
        "<think>\n\n</think>\n\n-3.",
    ),
    "hermes_function_calling_calls_as_text_and_wrapped_results": (   # NousResearch's rows
        {"conversations": [
            {"from": "system", "value": "You call functions: <tools>[{\"name\": \"w\"}]</tools>"},
            {"from": "human", "value": "Oslo?"},
            {"from": "gpt", "value": '<think>r</think>\n\nChecking.\n<tool_call>\n{"name": "w", '
                                     '"arguments": {"c": "Oslo"}}\n</tool_call>'},
            {"from": "tool", "value": '<tool_response>\n{"name": "w", "content": -3}\n'
                                      "</tool_response>"},
            {"from": "gpt", "value": "It is -3."}]},
        [{"role": "system", "content": 'You call functions: <tools>[{"name": "w"}]</tools>'},
         {"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": "<think>r</think>\n\nChecking.",
          "tool_calls": [_call("w", {"c": "Oslo"})]},
         {"role": "tool", "content": '{"name": "w", "content": -3}'},
         {"role": "assistant", "content": "It is -3."}],
        "<think>\n\n</think>\n\nIt is -3.",
    ),
    "a_tool_result_wrapped_as_the_template_wraps_it": (    # was wrapped twice
        {"messages": [{"role": "user", "content": "Oslo?"},
                      {"role": "assistant", "content": None, "tool_calls": [_call("w", {})]},
                      {"role": "tool", "content": "<tool_response>\n-3\n</tool_response>"},
                      {"role": "assistant", "content": "-3."}]},
        [{"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": None, "tool_calls": [_call("w", {})]},
         {"role": "tool", "content": "-3"}, {"role": "assistant", "content": "-3."}],
        "<think>\n\n</think>\n\n-3.",
    ),
    "cohere_fine_tuning_roles": (
        {"messages": [{"role": "System", "content": "Be brief."},
                      {"role": "User", "content": "Hi"}, {"role": "Chatbot", "content": "Hello"}]},
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "messages_stored_as_json_text": (
        {"messages": json.dumps([{"role": "user", "content": "Hi"},
                                 {"role": "assistant", "content": "Hello"}])},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "media_tag_named_in_a_question_is_text": (
        {"messages": [{"role": "user", "content": "What does <image> do in SVG?"},
                      {"role": "assistant", "content": "It embeds a picture."}], "images": []},
        [{"role": "user", "content": "What does <image> do in SVG?"},
         {"role": "assistant", "content": "It embeds a picture."}],
        "<think>\n\n</think>\n\nIt embeds a picture.",
    ),
    "role_and_text_under_other_keys": (     # speaker/author/role with text/value/content
        {"system": "s", "dialog": [{"speaker": "system", "text": "s"},
                                   {"author": "prompter", "content": "Hi"},
                                   {"role": "assistant", "value": "Hello"},
                                   {"from": "human", "text": "And?"},
                                   {"speaker": "assistant", "text": "Fine."}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "And?"},
         {"role": "assistant", "content": "Fine."}],
        "<think>\n\n</think>\n\nFine.",
    ),
    "dialog_key": (
        {"dialog": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "chat_key_as_json_text": (
        {"chat": json.dumps([{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello"}]), "id": 7},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "messages_key_in_other_case_with_sharegpt_turns": (
        {"Messages": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "ultrachat_data_of_texts_and_a_system_field": (     # the user's, then the assistant's
        {"id": "0", "system": "s", "data": ["Hi", "Hello", "How are you?", "Fine."]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "How are you?"},
         {"role": "assistant", "content": "Fine."}],
        "<think>\n\n</think>\n\nFine.",
    ),
    "capybara_input_output_exchanges": (
        {"source": "Know-Logic", "conversation": [{"input": "Hi", "output": "Hello"},
                                                  {"input": "And?", "output": "Fine."}]},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
         {"role": "user", "content": "And?"}, {"role": "assistant", "content": "Fine."}],
        "<think>\n\n</think>\n\nFine.",
    ),
    "magpie_sharegpt_next_to_instruction": (
        {"instruction": "Hi", "response": "Hello", "conversations": [
            {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "bespoke_stratos_system_and_thought_markers": (
        {"system": "Think first.", "conversations": [{"from": "user", "value": "2+2?"},
                                                     {"from": "assistant", "value": TRACE}]},
        [{"role": "system", "content": "Think first."}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "\\boxed{4}", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n\\boxed{4}",
    ),
    "sky_t1_system_prompt_asking_for_the_markers_is_dropped": (
        {"system": "Your role as an assistant involves ... <|begin_of_thought|> {thought} "
                   "<|end_of_thought|> ... <|begin_of_solution|> {solution} <|end_of_solution|>",
         "conversations": [{"from": "user", "value": "2+2?"},
                           {"from": "assistant", "value": TRACE}]},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "\\boxed{4}", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n\\boxed{4}",
    ),
    "sky_t1_markers_asked_for_in_a_system_message_kept_as_written": (   # no reply converted
        {"messages": [{"role": "system", "content": "Use <|begin_of_thought|> marks."},
                      {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]},
        [{"role": "system", "content": "Use <|begin_of_thought|> marks."},
         {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
        "<think>\n\n</think>\n\n4",
    ),
    "reasoning_under_other_tags": (     # the block a reply opens with is its reasoning
        {"messages": [{"role": "user", "content": "2+2?"},
                      {"role": "assistant", "content": "<reasoning>\n2+2=4\n</reasoning>\n"
                                                       "<answer>4</answer>"},
                      {"role": "user", "content": "3+3?"},
                      {"role": "assistant", "content": "\n<thought>3+3=6</thought>6"},
                      {"role": "user", "content": "What do <thinking> tags do?"},
                      {"role": "assistant", "content": "<thinking>a tag</thinking>\n\n"
                                                       "They hide text."}]},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "<answer>4</answer>", "reasoning_content": "2+2=4"},
         {"role": "user", "content": "3+3?"},
         {"role": "assistant", "content": "6", "reasoning_content": "3+3=6"},
         {"role": "user", "content": "What do <thinking> tags do?"},
         {"role": "assistant", "content": "They hide text.",
          "reasoning_content": "a tag"}],
        "<think>\na tag\n</think>\n\nThey hide text.",
    ),
    "openo1_thought_and_output_tags": (     # <Output> is the answer's own markup: kept
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<Thought>\nr\n</Thought>\n"
                                                       "<Output>\na\n</Output>"}]},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "<Output>\na\n</Output>", "reasoning_content": "r"}],
        "<think>\nr\n</think>\n\n<Output>\na\n</Output>",
    ),
    "a_reasoning_tag_inside_the_answer_is_text": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "Use <thinking>...</thinking> tags."}]},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "Use <thinking>...</thinking> tags."}],
        "<think>\n\n</think>\n\nUse <thinking>...</thinking> tags.",
    ),
    "think_block_of_spaces_is_the_empty_block": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<think> \t </think>\n\na"}]},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "\n\na", "reasoning_content": ""}],
        "<think>\n\n</think>\n\na",
    ),
    "reasoning_content_of_spaces_is_empty": (
        {"prompt": "q", "completion": "a", "reasoning_content": "  \n "},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "a", "reasoning_content": ""}],
        "<think>\n\n</think>\n\na",
    ),
    "openai_refusal": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": None, "refusal": "I can't help."}]},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "I can't help."}],
        "<think>\n\n</think>\n\nI can't help.",
    ),
    "kto_desirable_row": (
        {"prompt": "q", "completion": "a", "label": True},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "openai_text_parts": (
        {"messages": [{"role": "user", "content": PARTS},
                      {"role": "assistant", "content": [{"type": "text", "text": "4"}]}]},
        [{"role": "user", "content": "What is\n2+2?"}, {"role": "assistant", "content": "4"}],
        "<think>\n\n</think>\n\n4",
    ),
    "responses_api_and_anthropic_parts": (
        {"messages": [{"role": "user", "content": [{"type": "input_text", "text": "2+2?"}]},
                      {"role": "assistant", "content": [{"type": "thinking", "thinking": "2+2=4"},
                                                        {"type": "output_text", "text": "4"}]}]},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "text_parts_in_prompt_completion": (
        {"prompt": [{"role": "user", "content": PARTS}], "completion": "4"},
        [{"role": "user", "content": "What is\n2+2?"}, {"role": "assistant", "content": "4"}],
        "<think>\n\n</think>\n\n4",
    ),
    "reasoning_field": (
        {"messages": [{"role": "user", "content": "2+2?"},
                      {"role": "assistant", "content": "4", "reasoning": "2+2=4"}]},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "thinking_field": (
        {"messages": [{"role": "user", "content": "2+2?"},
                      {"role": "assistant", "content": "4", "thinking": "2+2=4"}]},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "alpaca": (
        {"instruction": "Add them.", "input": "2 and 2", "output": "4"},
        [{"role": "user", "content": "Add them.\n\n2 and 2"},
         {"role": "assistant", "content": "4"}],
        "<think>\n\n</think>\n\n4",
    ),
    "alpaca_empty_input_and_system": (
        {"system": "s", "instruction": "Say hi.", "input": "", "output": "hi"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "Say hi."},
         {"role": "assistant", "content": "hi"}],
        "<think>\n\n</think>\n\nhi",
    ),
    "empty_system_field_is_none": (
        {"system": "", "conversations": [{"from": "human", "value": "Hi"},
                                         {"from": "gpt", "value": "Hello"}]},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
        "<think>\n\n</think>\n\nHello",
    ),
    "alpaca_with_history": (
        {"instruction": "And 3+3?", "output": "6", "history": [["2+2?", "4"]]},
        [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"},
         {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6"}],
        "<think>\n\n</think>\n\n6",
    ),
    "system_field_next_to_messages": (
        {"system": "s", "messages": [{"role": "user", "content": "q"},
                                     {"role": "assistant", "content": "a"}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "system_field_next_to_prompt_completion": (
        {"system": "s", "prompt": "q", "completion": "a"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "system_field_repeating_the_system_message": (
        {"system": "s", "messages": [{"role": "system", "content": "s"},
                                     {"role": "user", "content": "q"},
                                     {"role": "assistant", "content": "a"}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "dolly": (
        {"instruction": "Sum?", "context": "2, 2", "response": "4"},
        [{"role": "user", "content": "Sum?\n\n2, 2"}, {"role": "assistant", "content": "4"}],
        "<think>\n\n</think>\n\n4",
    ),
    "roles_in_other_names_and_case": (     # OpenAI's developer, Gemini's model, any case
        {"messages": [{"role": "developer", "content": "s"}, {"role": "User", "content": "q"},
                      {"role": "model", "content": "a"}, {"role": "HUMAN", "content": "q2"},
                      {"role": "Bot", "content": "a2"}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
         {"role": "assistant", "content": "a2"}],
        "<think>\n\n</think>\n\na2",
    ),
    "system_field_repeating_a_developer_message": (
        {"system": "s", "messages": [{"role": "developer", "content": "s"},
                                     {"role": "user", "content": "q"},
                                     {"role": "ASSISTANT", "content": "a"}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "tool_result_given_as_json_data": (     # rendered as the template writes dict arguments
        {"messages": [{"role": "user", "content": "Zürich?"},
                      {"role": "assistant", "content": None,
                       "tool_calls": [{"type": "function", "function": {
                           "name": "w", "arguments": {"city": "Zürich"}}}, _call("t", {})]},
                      {"role": "tool", "content": {"city": "Zürich", "temp": -3}},
                      {"role": "function", "content": [{"temp": -3}]},
                      {"role": "assistant", "content": "-3"}]},
        [{"role": "user", "content": "Zürich?"},
         {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {
             "name": "w", "arguments": {"city": "Zürich"}}}, _call("t", {})]},
         {"role": "tool", "content": '{"city": "Zürich", "temp": -3}'},
         {"role": "tool", "content": '[{"temp": -3}]'}, {"role": "assistant", "content": "-3"}],
        "<think>\n\n</think>\n\n-3",
    ),
    "reasoning_next_to_prompt_and_completion": (
        {"prompt": "2+2?", "completion": "4", "reasoning_content": "2+2=4"},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "gemini_contents_and_system_instruction": (
        {"systemInstruction": {"parts": [{"text": "Be "}, {"text": "brief."}]}, "contents": [
            {"role": "user", "parts": [{"text": "2+2?"}]},
            {"role": "model", "parts": [{"text": "2+2=4", "thought": True},
                                        {"text": "4", "thoughtSignature": "c2ln"}]}]},
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "gemini_function_call_and_response_snake_case": (
        {"system_instruction": "s", "contents": [
            {"role": "user", "parts": [{"text": "Oslo?"}]},
            {"role": "model", "parts": [{"function_call": {"name": "w", "args": {"c": "Oslo"}}},
                                        {"function_call": {"name": "w", "args": {"c": "Rome"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {"t": -3}}},
                                       {"functionResponse": {"name": "w", "response": {"t": 1}}}]},
            {"role": "model", "parts": [{"text": "-3"}]}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"type": "function", "function": {"name": "w", "arguments": {"c": "Oslo"}}},
             {"type": "function", "function": {"name": "w", "arguments": {"c": "Rome"}}}]},
         {"role": "tool", "content": '{"t": -3}'}, {"role": "tool", "content": '{"t": 1}'},
         {"role": "assistant", "content": "-3"}],
        "<think>\n\n</think>\n\n-3",
    ),
    "preference_row_trains_its_chosen_reply": (
        {"prompt": "q", "chosen": "good", "rejected": "bad"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "good"}],
        "<think>\n\n</think>\n\ngood",
    ),
    "preference_row_with_the_prompt_in_chosen": (   # UltraFeedback: prompt repeated in chosen
        {"prompt": "q", "chosen": [{"role": "user", "content": "q"},
                                   {"role": "assistant", "content": "good"}],
         "rejected": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "bad"}]},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "good"}],
        "<think>\n\n</think>\n\ngood",
    ),
    "preference_row_of_messages_explicit_prompt": (
        {"prompt": [{"role": "user", "content": "q"}],
         "chosen": [{"role": "assistant", "content": "good"}],
         "rejected": [{"role": "assistant", "content": "bad"}]},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "good"}],
        "<think>\n\n</think>\n\ngood",
    ),
    "gsm8k_question_answer": (      # the value after '####' boxed, the reference
        {"question": "48 clips, then half as many. How many?",
         "answer": "Then 48/2 = <<48/2=24>>24.\nIn all 48+24 = <<48+24=72>>72.\n#### 1,072"},
        [{"role": "user", "content": "48 clips, then half as many. How many?"},
         {"role": "assistant", "content": "Then 48/2 = 24.\nIn all 48+24 = 72.\n"
                                          "The final answer is $\\boxed{1072}$."}],
        "<think>\n\n</think>\n\nThen 48/2 = 24.\nIn all 48+24 = 72.\n"
        "The final answer is $\\boxed{1072}$.",
    ),
    "orca_math_question_answer": (      # a reply of several sentences, as written
        {"question": "2+2?", "answer": "We add 2 and 2. That makes 4."},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "We add 2 and 2. That makes 4."}],
        "<think>\n\n</think>\n\nWe add 2 and 2. That makes 4.",
    ),
    "problem_thinking_answer": (        # {prompt, reasoning, answer} under other names
        {"problem": "2+2?", "thinking": "2+2=4", "answer": "4"},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "reasoning_content": "2+2=4",
          "content": "The final answer is $\\boxed{4}$."}],
        "<think>\n2+2=4\n</think>\n\nThe final answer is $\\boxed{4}$.",
    ),
    "chat_prompt_reasoning_answer": (       # the prompt as messages (verl's, OpenR1's)
        {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "2+2?"}],
         "reasoning": "2+2=4", "answer": "4"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "reasoning_content": "2+2=4",
          "content": "The final answer is $\\boxed{4}$."}],
        "<think>\n2+2=4\n</think>\n\nThe final answer is $\\boxed{4}$.",
    ),
    "metamath_query_response": (
        {"query": "q", "response": "a", "type": "GSM_Rephrased"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "numina_problem_solution": (
        {"problem": "2+2?", "solution": "So \\boxed{4}."},
        [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "So \\boxed{4}."}],
        "<think>\n\n</think>\n\nSo \\boxed{4}.",
    ),
    "question_response_with_row_reasoning": (
        {"question": "2+2?", "response": "4", "reasoning": "2+2=4"},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "lmsys_conversation": (
        {"conversation": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
         "model": "vicuna-13b", "language": "English"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "nemotron_reasoning_on": (      # "on"/"off" is a switch; the output holds its think block
        {"input": [{"role": "user", "content": "2+2?"}], "output": "<think>\n2+2=4\n</think>\n\n4",
         "reasoning": "on", "system_prompt": "detailed thinking on"},
        [{"role": "system", "content": "detailed thinking on"},
         {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "<think>\n2+2=4\n</think>\n\n4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "nemotron_reasoning_off": (
        {"input": [{"role": "user", "content": "2+2?"}], "output": "4", "reasoning": "off",
         "system_prompt": "detailed thinking off"},
        [{"role": "system", "content": "detailed thinking off"},
         {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
        "<think>\n\n</think>\n\n4",
    ),
    "anthropic_tool_use_and_tool_results": (
        {"messages": [
            {"role": "user", "content": "Oslo and Rome?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "ask both"}, {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t1", "name": "w", "input": {"c": "Oslo"}},
                {"type": "tool_use", "id": "t2", "name": "w", "input": {"c": "Rome"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "-3"},
                {"type": "tool_result", "tool_use_id": "t2",
                 "content": [{"type": "text", "text": "20"}]}]},
            {"role": "assistant", "content": [{"type": "text", "text": "-3 and 20."}]}]},
        [{"role": "user", "content": "Oslo and Rome?"},
         {"role": "assistant", "content": "Checking.", "reasoning_content": "ask both",
          "tool_calls": [{**_call("w", {"c": "Oslo"}), "id": "t1"},
                         {**_call("w", {"c": "Rome"}), "id": "t2"}]},
         {"role": "tool", "content": "-3", "tool_call_id": "t1"},
         {"role": "tool", "content": "20", "tool_call_id": "t2"},
         {"role": "assistant", "content": "-3 and 20."}],
        "<think>\n\n</think>\n\n-3 and 20.",
    ),
    "responses_api_items": (    # reasoning, function_call and its output: no role of their own
        {"input": [{"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "Oslo?"}]}],
         "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "sum"}],
                     "content": [{"type": "reasoning_text", "text": "call w"}]},
                    {"type": "function_call", "call_id": "c1", "name": "w",
                     "arguments": '{"c": "Oslo"}'},
                    {"type": "function_call_output", "call_id": "c1", "output": "-3"},
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "got"},
                                                      {"type": "summary_text", "text": "it"}]},
                    {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "It is -3."}]}]},
        [{"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": None, "reasoning_content": "call w", "tool_calls": [
             {"type": "function", "id": "c1",
              "function": {"name": "w", "arguments": '{"c": "Oslo"}'}}]},
         {"role": "tool", "content": "-3", "tool_call_id": "c1"},
         {"role": "assistant", "content": "It is -3.", "reasoning_content": "got\n\nit"}],
        "<think>\ngot\n\nit\n</think>\n\nIt is -3.",
    ),
    "openai_legacy_function_call": (
        {"messages": [{"role": "user", "content": "Oslo?"},
                      {"role": "assistant", "content": None,
                       "function_call": {"name": "w", "arguments": '{"c": "Oslo"}'}},
                      {"role": "function", "name": "w", "content": "-3"},
                      {"role": "assistant", "content": "-3."}]},
        [{"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"type": "function", "function": {"name": "w", "arguments": '{"c": "Oslo"}'}}]},
         {"role": "tool", "name": "w", "content": "-3"}, {"role": "assistant", "content": "-3."}],
        "<think>\n\n</think>\n\n-3.",
    ),
    "text_rendered_as_chatml": (
        {"text": "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
                 "<|im_start|>assistant\n<think>\nr\n</think>\n\na<|im_end|>\n"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "<think>\nr\n</think>\n\na"}],
        "<think>\nr\n</think>\n\na",
    ),
    "text_rendered_as_llama3": (
        {"text": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nq<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\na<|eot_id|>"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "text_rendered_as_llama2_inst_with_system": (
        {"text": "<s>[INST] <<SYS>>\ns\n<</SYS>>\n\nq1 [/INST] a1 </s><s>[INST] q2 [/INST] a2</s>"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q1"},
         {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"},
         {"role": "assistant", "content": "a2"}],
        "<think>\n\n</think>\n\na2",
    ),
    "prompt_rendered_as_chatml_and_its_completion": (
        {"prompt": "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
                   "<|im_start|>assistant\n",
         "completion": "<think>\nr\n</think>\n\na<|im_end|>\n"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "<think>\nr\n</think>\n\na"}],
        "<think>\nr\n</think>\n\na",
    ),
    # TRL's completions leave out the end of turn (its trainer appends it): they were refused
    "prompt_rendered_as_chatml_and_its_completion_without_the_end_of_turn": (
        {"prompt": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n", "completion": "a"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "prompt_rendered_as_llama3_and_its_completion_without_the_end_of_turn": (
        {"prompt": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nq<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n", "completion": "a"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "prompt_rendered_as_hh_and_its_completion": (
        {"prompt": "\n\nHuman: q\n\nAssistant:", "completion": " a"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "a_prompt_merely_starting_like_a_rendered_chat_is_text": (
        {"prompt": "Human: <s>old</s> or new?", "completion": "New."},
        [{"role": "user", "content": "Human: <s>old</s> or new?"},
         {"role": "assistant", "content": "New."}],
        "<think>\n\n</think>\n\nNew.",
    ),
    "gemma_rendered_text": (
        {"text": "<bos><start_of_turn>user\nq<end_of_turn>\n"
                 "<start_of_turn>model\na<end_of_turn>\n"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "gemma_rendered_prompt_and_its_completion": (    # TRL's: the prompt was read as user text
        {"prompt": "<bos><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\n",
         "completion": "a"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "phi3_rendered_prompt_and_its_completion": (
        {"prompt": "<s><|system|>\ns<|end|>\n<|user|>\nq<|end|>\n<|assistant|>\n",
         "completion": "a<|end|>\n"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "phi4_mini_rendered_text": (
        {"text": "<|user|>q<|end|><|assistant|>a<|end|>"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "phi4_reasoning_rendered_text": (    # ChatML with <|im_sep|>
        {"text": "<|im_start|>user<|im_sep|>q<|im_end|><|im_start|>assistant<|im_sep|>"
                 "<think>r</think>a<|im_end|>"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>r</think>a"}],
        "<think>\nr\n</think>\n\na",
    ),
    "llama2_rendered_text_with_a_space_after_s": (
        {"text": "<s> [INST] q [/INST] a </s>"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "hh_rlhf_chosen_text": (
        {"chosen": "\n\nHuman: q\n\nAssistant: good", "rejected": "\n\nHuman: q\n\nAssistant: bad"},
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "good"}],
        "<think>\n\n</think>\n\ngood",
    ),
    "keys_in_other_case_and_camel_case": (     # they were "message 0 has no role"
        {"conversations": [{"From": "human", "Value": "q"},
                           {"FROM": "gpt", "VALUE": "a", "reasoningContent": "r"},
                           {"Role": "User", "Content": "q2"},
                           {"Role": "assistant", "Content": None, "toolCalls": [_call("w", {})]},
                           {"Role": "tool", "toolCallId": "c", "Content": "1"},
                           {"Role": "assistant", "Content": "b", "Reasoning": "r2"}]},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "a", "reasoning_content": "r"},
         {"role": "user", "content": "q2"},
         {"role": "assistant", "content": None, "tool_calls": [_call("w", {})]},
         {"role": "tool", "tool_call_id": "c", "content": "1"},
         {"role": "assistant", "content": "b", "reasoning_content": "r2"}],
        "<think>\nr2\n</think>\n\nb",
    ),
    "a_rows_reasoning_in_camel_case": (     # it was dropped without a word
        {"prompt": "q", "completion": "a", "reasoningContent": "r"},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "a", "reasoning_content": "r"}],
        "<think>\nr\n</think>\n\na",
    ),
    "smoltalk2_chat_template_kwargs_of_the_reply_s_mode": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<think>\nr\n</think>\na"}],
         "chat_template_kwargs": {"enable_thinking": True, "xml_tools": [], "python_tools": [],
                                  "custom_instructions": ""}},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "<think>\nr\n</think>\na"}],
        "<think>\nr\n</think>\n\na",
    ),
    "mistral_tool_calls_as_a_json_list_with_ids": (    # they were refused as another format
        {"messages": [
            {"role": "user", "content": "2*3, 2*4?"},
            {"role": "assistant", "content": '<think>r</think>Computing.\n[TOOL_CALLS] [{"name": '
                                             '"calc", "arguments": {"e": "2*3"}, "id": "a1"}, '
                                             '{"name": "calc", "arguments": "{\\"e\\": 1}", '
                                             '"id": "b2"}]'},
            {"role": "tool", "content": "6", "tool_call_id": "a1"},
            {"role": "tool", "content": "8", "tool_call_id": "b2"},
            {"role": "assistant", "content": "6, 8"}]},
        [{"role": "user", "content": "2*3, 2*4?"},
         {"role": "assistant", "content": "<think>r</think>Computing.", "tool_calls": [
             {**_call("calc", {"e": "2*3"}), "id": "a1"},
             {**_call("calc", '{"e": 1}'), "id": "b2"}]},
         {"role": "tool", "content": "6", "tool_call_id": "a1"},
         {"role": "tool", "content": "8", "tool_call_id": "b2"},
         {"role": "assistant", "content": "6, 8"}],
        "<think>\n\n</think>\n\n6, 8",
    ),
    "mistral_tool_calls_one_a_marker_after_a_code_block": (     # tokenizer v11, v13's CALL_ID
        {"messages": [
            {"role": "user", "content": "2*3?"},
            {"role": "assistant", "content": '```\nx\n```\n[TOOL_CALLS]calc[ARGS]{"e": "2*3"}'
                                             '[TOOL_CALLS]now[CALL_ID]c9[ARGS]{}'},
            {"role": "tool", "content": "6"}, {"role": "tool", "content": "12:00"},
            {"role": "assistant", "content": "6"}]},
        [{"role": "user", "content": "2*3?"},
         {"role": "assistant", "content": "```\nx\n```", "tool_calls": [
             _call("calc", {"e": "2*3"}), {**_call("now", {}), "id": "c9"}]},
         {"role": "tool", "content": "6"}, {"role": "tool", "content": "12:00"},
         {"role": "assistant", "content": "6"}],
        "<think>\n\n</think>\n\n6",
    ),
    "openai_harmony_reply": (     # gpt-oss's: it was trained as text after an empty think block
        {"messages": [{"role": "user", "content": "2+2?"},
                      {"role": "assistant", "content": "<|channel|>analysis<|message|>2+2=4<|end|>"
                       "<|start|>assistant<|channel|>final<|message|>4<|return|>"},
                      {"role": "user", "content": "3+3?"},
                      {"role": "assistant", "content": "<|start|>assistant<|channel|>final"
                                                       "<|message|>6"}]},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"},
         {"role": "user", "content": "3+3?"}, {"role": "assistant", "content": "6"}],
        "<think>\n\n</think>\n\n6",
    ),
    "openai_harmony_final_next_to_a_thinking_field": (   # gpt-oss's reasoning kept apart
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<|channel|>final<|message|>a",
                       "thinking": "r"}]},
        [{"role": "user", "content": "q"},
         {"role": "assistant", "content": "a", "reasoning_content": "r"}],
        "<think>\nr\n</think>\n\na",
    ),
    "deepseek_rendered_text_with_a_system_text": (   # it was "not a chat rendered as ..."
        {"text": "<｜begin▁of▁sentence｜>Be brief.<｜User｜>q<｜Assistant｜>a<｜end▁of▁sentence｜>"
                 "<｜User｜>q2<｜Assistant｜><think>\nr\n</think>\n\nb<｜end▁of▁sentence｜>"},
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
         {"role": "assistant", "content": "<think>\nr\n</think>\n\nb"}],
        "<think>\nr\n</think>\n\nb",
    ),
    "deepseek_rendered_prompt_and_its_completion": (   # the prompt was a user turn of markers
        {"prompt": "<｜begin▁of▁sentence｜>s<｜User｜>q<｜Assistant｜>", "completion": "a"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}],
        "<think>\n\n</think>\n\na",
    ),
    "openai_harmony_text": (
        {"text": "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>developer<|message|>"
                 "# Instructions\n\nBe brief.<|end|><|start|>user<|message|>2+2?<|end|>"
                 "<|start|>assistant<|channel|>analysis<|message|>2+2=4<|end|>"
                 "<|start|>assistant<|channel|>final<|message|>4<|return|>"},
        [{"role": "system", "content": "You are ChatGPT."},
         {"role": "system", "content": "# Instructions\n\nBe brief."},
         {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "openai_harmony_prompt_and_its_completion": (
        {"prompt": "<|start|>user<|message|>2+2?<|end|><|start|>assistant",
         "completion": "<|channel|>analysis<|message|>2+2=4<|end|><|start|>assistant<|channel|>"
                       "final<|message|>4"},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "bedrock_converse_blocks_without_a_type": (    # they were "no string content"
        {"schemaVersion": "bedrock-conversation-2024", "system": [{"text": "s"}], "messages": [
            {"role": "user", "content": [{"text": "Oslo?"}, {"cachePoint": {"type": "default"}}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "ask", "signature": "c2"}}},
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "t1", "name": "w", "input": {"c": "Oslo"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "success",
                                                         "content": [{"json": {"t": -3}}]}}]},
            {"role": "assistant", "content": [{"text": "-3"}]}]},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "Oslo?"},
         {"role": "assistant", "content": "Checking.", "reasoning_content": "ask",
          "tool_calls": [{**_call("w", {"c": "Oslo"}), "id": "t1"}]},
         {"role": "tool", "content": '{"t": -3}', "tool_call_id": "t1"},
         {"role": "assistant", "content": "-3"}],
        "<think>\n\n</think>\n\n-3",
    ),
    "a_rows_fields_in_other_case": (     # a CSV's header "Question,Response": 'no field prompt'
        {"Question": "2+2?", "Response": "4", "ReasoningContent": "2+2=4", "System": "s"},
        [{"role": "system", "content": "s"}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
    "reasoning_next_to_alpaca_output": (
        {"instruction": "2+2?", "output": "4", "reasoning": "2+2=4"},
        [{"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4", "reasoning_content": "2+2=4"}],
        "<think>\n2+2=4\n</think>\n\n4",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", ROW_FORMS)
def test_rows_of_common_datasets_load_as_conversations(tok, tmp_path, name):
    """ShareGPT (FastChat, OpenThoughts, Bespoke-Stratos, Magpie), Alpaca / Dolly rows, OpenAI
    text parts and a reasoning named 'reasoning' or 'thinking' load as the conversation meant,
    rendered as the official template renders it; they were refused ('no field prompt', 'no
    string content'), or their reasoning silently dropped (the template reads only
    reasoning_content), or a Sky-T1 trace trained as an answer after an empty think block."""
    from test_chat_template import OFFICIAL_QWEN3_TEMPLATE

    row, messages, trained = ROW_FORMS[name]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    ex = sft_data.jsonl_examples(str(path))[-1]     # the last reply (earlier ones: their own)
    assert ex["messages"] == messages
    ids, mask = sft.encode(tok, ex["messages"], ex.get("tools"))
    assert tok.decode([t for t, m in zip(ids, mask) if m]) == trained + "<|im_end|>"
    official = tok.apply_chat_template(messages, tokenize=False, tools=ex.get("tools"),
                                       chat_template=OFFICIAL_QWEN3_TEMPLATE)
    if "tools" in row:      # JSON text read as the list it holds, listed in the system turn
        assert ex["tools"] == json.loads(row["tools"])
        assert "<tools>\n" + json.dumps(ex["tools"][0]) + "\n</tools>" in tok.decode(ids)
    assert tok.decode(ids) + "\n" == official


def test_question_answer_rows_check_the_final_value(tmp_path):
    """A GSM8K row's reference is the value after '####'; a row of a reply in sentences has none
    (nothing to check), one with reasoning its answer."""
    rows = [ROW_FORMS[k][0] for k in ("gsm8k_question_answer", "orca_math_question_answer",
                                      "problem_thinking_answer")]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [e["reference"] for e in sft_data.jsonl_examples(str(path))] == ["1072", None, "4"]


def test_a_rows_answer_beside_its_reply_is_the_reference(tmp_path):
    """OpenR1's {messages, answer} and NuminaMath's {problem, solution, answer}: the answer was
    ignored (reference None), so a reply concluding a wrong value was trained unchecked; now it
    is the reference, and the response filter drops the wrong reply. 'proof' is no answer."""
    wrong = {"messages": [_u("2+2?"), _a("<think>\n2+2=5\n</think>\n\n\\boxed{5}")],
             "answer": "4", "problem": "2+2?"}
    rows = [wrong, {"problem": "3+3?", "solution": "So \\boxed{6}.", "answer": 6},
            {"problem": "Show it.", "solution": "Indeed. QED", "answer": "proof"}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples = sft_data.jsonl_examples(str(path))
    assert [e["reference"] for e in examples] == ["4", "6", None]
    kept, counts = sft_data.filter_responses(examples, max_repetition=0.5)
    assert counts["wrong_answer"] == 1 and kept == examples[1:]


def test_gemini_tools_are_listed_as_functions(tok, tmp_path):
    """A Gemini row's tools ([{"functionDeclarations": [...]}]) were listed in the system turn as
    one signature holding the list; now each declaration is a function, as in OpenAI's rows."""
    decls = [{"name": "w", "parameters": {"type": "object"}}, {"name": "t", "parameters": {}}]
    row = {"tools": [{"functionDeclarations": decls}],
           "contents": [{"role": "user", "parts": [{"text": "q"}]},
                        {"role": "model", "parts": [{"text": "a"}]}]}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    ex = sft_data.jsonl_examples(str(path))[0]
    assert ex["tools"] == [{"type": "function", "function": d} for d in decls]
    ids, _ = sft.encode(tok, ex["messages"], ex["tools"])
    assert "<tools>\n" + "\n".join(json.dumps(t) for t in ex["tools"]) + "\n</tools>" in (
        tok.decode(ids))


def test_bedrock_tool_config_is_listed_as_functions(tok, tmp_path):
    """Bedrock's "toolConfig" (toolSpec, its inputSchema's json the parameters) was dropped
    without a word: the model learned to call functions it was never shown."""
    spec = {"name": "w", "description": "Weather", "inputSchema": {"json": {"type": "object"}}}
    row = {"toolConfig": {"tools": [{"toolSpec": spec}, {"cachePoint": {"type": "default"}}]},
           "messages": [{"role": "user", "content": [{"text": "Oslo?"}]},
                        {"role": "assistant", "content": [{"toolUse": {
                            "toolUseId": "t1", "name": "w", "input": {}}}]}]}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    ex = sft_data.jsonl_examples(str(path))[0]
    fn = {"name": "w", "description": "Weather", "parameters": {"type": "object"}}
    assert ex["tools"] == [{"type": "function", "function": fn}]
    assert _trained(tok, ex) == ('<think>\n\n</think>\n\n<tool_call>\n{"name": "w", '
                                 '"arguments": {}}\n</tool_call><|im_end|>', True)
    path.write_text(json.dumps({**row, "toolConfig": {"tools": ["w"]}}) + "\n")
    with pytest.raises(DataError, match=r"row 0: 'toolConfig' is .*; give \{'tools'"):
        sft_data.jsonl_examples(str(path))


def test_openai_legacy_functions_are_listed_as_tools(tok, tmp_path):
    """A row's "functions" (OpenAI's legacy name of tools) was dropped: the model learned to call
    a function whose signature it was never shown. Now each is a tool in the system turn."""
    fn = {"name": "w", "parameters": {"type": "object"}}
    row = {"functions": [fn], "messages": [
        _u("Oslo?"), _a(None, function_call={"name": "w", "arguments": "{}"}),
        {"role": "function", "name": "w", "content": "-3"}, _a("-3")]}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    ex = sft_data.jsonl_examples(str(path))[-1]
    assert ex["tools"] == [{"type": "function", "function": fn}]
    ids, _ = sft.encode(tok, ex["messages"], ex["tools"])
    assert "<tools>\n" + json.dumps(ex["tools"][0]) + "\n</tools>" in tok.decode(ids)
    other = [{"type": "function", "function": {"name": "v"}}]
    with pytest.raises(ValueError, match="message 1 .assistant. calls 'w', which 'tools' does not"):
        sft.encode(tok, ex["messages"], other)


def test_jsonl_rows_with_unicode_line_separators_in_their_text(tok, tmp_path):
    """A row written with ensure_ascii=False holds U+2028, U+2029 and U+0085 unescaped in its
    strings (web text has them); the file was split at them ('row 0 is not valid JSON'). The
    text reaches the prompt and the trained reply as written."""
    text = "a\u2028b\u2029c\u0085d"
    rows = [{"messages": [{"role": "user", "content": text},
                          {"role": "assistant", "content": "ok " + text}]}] * 2
    path = tmp_path / "web.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows),
                    encoding="utf-8")
    ex = sft_data.jsonl_examples(str(path))
    assert [e["messages"] for e in ex] == [r["messages"] for r in rows]
    ids, mask = sft.encode(tok, ex[0]["messages"])
    assert tok.decode([t for t, m in zip(ids, mask) if m]) == (
        "<think>\n\n</think>\n\nok " + text + "<|im_end|>")


BAD_ROWS = {
    "image_part": (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
                      {"role": "assistant", "content": "a cat"}]},
        "row 0: message 0 (user): part 0 is of type 'image_url'; this recipe trains text-only",
    ),
    "audio_part_next_to_text": (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "Transcribe:"},
                                                   {"type": "input_audio", "input_audio": {}}]},
                      {"role": "assistant", "content": "hello"}]},
        "row 0: message 0 (user): part 1 is of type 'input_audio'",
    ),
    "thinking_part_in_a_user_turn": (
        {"messages": [{"role": "user", "content": [{"type": "thinking", "thinking": "hm"}]},
                      {"role": "assistant", "content": "a"}]},
        "row 0: message 0 (user) has a thinking part",
    ),
    "lone_surrogate_in_tools": (
        {"tools": [{"name": "w", "description": "sun \ud83c"}],
         "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
        "row 0: 'tools' holds '\\ud83c' at character",
    ),
    "alpaca_history_not_pairs": (
        {"instruction": "q", "output": "a", "history": ["2+2?", "4"]},
        "row 0: 'history' is ['2+2?', '4']; give a list of [query, reply] pairs",
    ),
    "function_call_not_json": (
        {"conversations": [{"from": "human", "value": "q"},
                           {"from": "function_call", "value": "w(Oslo)"}]},
        "row 0: message 1 (function_call) is 'w(Oslo)'; give a JSON object",
    ),
    "tools_text_not_json": (
        {"tools": "[{oops", "conversations": [{"from": "human", "value": "q"},
                                              {"from": "gpt", "value": "a"}]},
        "row 0: 'tools' is '[{oops'..., not valid JSON; give a list",
    ),
    "sharegpt_unknown_from": (
        {"conversations": [{"from": "human", "value": "q"}, {"from": "narrator", "value": "a"}]},
        "row 0: message 1 is from 'narrator'; 'from' is one of system, developer, user",
    ),
    "speaker_of_no_role": (
        {"dialog": [{"speaker": "user", "text": "q"}, {"speaker": "narrator", "text": "a"}]},
        "row 0: message 1 is from 'narrator'; 'speaker' is one of system, developer, user"),
    "tool_call_of_a_function_not_listed": (
        {"tools": [{"type": "function", "function": {"name": "w"}}],
         "messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": None, "tool_calls": [_call("x", {})]}]},
        "row 0: message 1 (assistant) calls 'x', which 'tools' does not list (['w'])"),
    "tools_and_functions": (
        {"tools": [{"name": "w"}], "functions": [{"name": "w"}],
         "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
        "row 0: the row has 'tools' and 'functions' (OpenAI's legacy name): keep one"),
    "unknown_role": (
        {"messages": [{"role": "user", "content": "q"}, {"role": "narrator", "content": "a"}]},
        "row 0: message 1 has role 'narrator'; the roles are system, user, assistant and tool",
    ),
    "reasoning_next_to_messages": (
        {"reasoning": "r", "messages": [{"role": "user", "content": "q"},
                                        {"role": "assistant", "content": "a"}]},
        "row 0: the row has 'reasoning' next to a reply given as messages, which the template "
        "does not read: move it into the assistant message's reasoning_content",
    ),
    "reasoning_next_to_a_completion_of_messages": (
        {"prompt": "q", "completion": [{"role": "assistant", "content": "a"}],
         "reasoning_content": "r"},
        "row 0: the row has 'reasoning_content' next to a reply given as messages",
    ),
    "reasoning_given_twice": (
        {"prompt": "q", "completion": "a", "reasoning": "r", "thinking": "r"},
        "row 0: the row's reasoning is 'reasoning', 'thinking' = 'r'; give it once, as a string",
    ),
    "system_twice": (
        {"system": "s", "conversations": [{"from": "system", "value": "t"},
                                          {"from": "human", "value": "q"},
                                          {"from": "gpt", "value": "a"}]},
        "row 0: the row has a 'system' field and a system message that differ: keep one",
    ),
    "solution_not_closed": (
        {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value":
         "<|begin_of_thought|>t<|end_of_thought|><|begin_of_solution|>cut off"}]},
        "row 0: message 1 (assistant) has <|begin_of_thought|> but not one thought",
    ),
    "gemini_image_part": (
        {"contents": [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/png"}}]},
                      {"role": "model", "parts": [{"text": "a cat"}]}]},
        "row 0: 'contents' item 0: part 0 is {'inlineData': {'mimeType': 'image/pn...; this "
        "recipe trains text-only models",
    ),
    "gemini_thought_in_a_user_turn": (
        {"contents": [{"role": "user", "parts": [{"text": "hm", "thought": True}]},
                      {"role": "model", "parts": [{"text": "a"}]}]},
        "row 0: 'contents' item 0 (user) has a thought part; only a model turn may",
    ),
    "gemini_system_instruction_not_text": (
        {"systemInstruction": {"parts": [{"functionResponse": {"response": 1}}]},
         "contents": [{"role": "user", "parts": [{"text": "q"}]}]},
        "row 0: 'systemInstruction' is {'parts': [{'functionResponse': {'res...; give {'parts'",
    ),
    "gemini_tool_that_is_not_functions": (
        {"tools": [{"googleSearch": {}}],
         "contents": [{"role": "user", "parts": [{"text": "q"}]},
                      {"role": "model", "parts": [{"text": "a"}]}]},
        "row 0: Gemini tool {'googleSearch': {}} has no functionDeclarations",
    ),
    "gemini_user_turn_without_parts": (
        {"contents": [{"role": "user"}, {"role": "model", "parts": [{"text": "a"}]}]},
        "row 0: 'contents' item 0 (user) has no parts, an empty turn"),
    "gemini_user_turn_of_empty_parts": (
        {"contents": [{"role": "user", "parts": []}, {"role": "model", "parts": [{"text": "a"}]}]},
        "row 0: 'contents' item 0 (user) has no parts, an empty turn"),
    "redacted_thinking_part": (
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EmwK"}, {"type": "text", "text": "a"}]}]},
        "row 0: message 1 (assistant): part 0 is redacted_thinking, reasoning encrypted by its"),
    "responses_reasoning_only_encrypted": (
        {"messages": [{"role": "user", "content": "q"},
                      {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
                      {"role": "assistant", "content": "a"}]},
        "row 0: item 1 is a reasoning item with no text (only encrypted, or empty)"),
    "responses_reasoning_item_last": (
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "r"}]}]},
        "row 0: the last item is a reasoning item with no assistant turn after it"),
    "openassistant_message_without_its_tree_id": (   # was "'text' is 'Hi': not a chat"
        {"parent_id": "m0", "role": "assistant", "text": "Hi", "lang": "en"},
        "row 0: the row is one message of an OpenAssistant tree"),
    "a_key_in_two_spellings": (
        {"messages": [{"Role": "user", "role": "user", "content": "q"},
                      {"role": "assistant", "content": "a"}]},
        "row 0: message 0 has the key 'role' twice, as 'Role' and 'role': keep one"),
    "a_replys_reasoning_under_a_name_not_read": (   # these were dropped without a word
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "a", "thoughts": "r"}]},
        "row 0: message 1 has 'thoughts' ('r'), a reasoning under a name not read"),
    "a_replys_reasoning_text": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "a", "reasoning_text": "r"}]},
        "row 0: message 1 has 'reasoning_text' ('r'), a reasoning under a name not read"),
    "a_rows_rationale": (
        {"prompt": "q", "completion": "a", "Rationale": "r"},
        "row 0: the row has 'Rationale' ('r'), a reasoning under a name not read (the reply "
        "would train without it): name it reasoning_content"),
    "reasoning_in_a_row_marked_enable_thinking_false": (    # it was trained as thinking
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "a", "reasoning_content": "r"}],
         "enable_thinking": False},
        "row 0: the row is marked enable_thinking false, yet message 1 (assistant) has reasoning"),
    "no_reasoning_in_a_row_marked_enable_thinking_true": (
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
         "chat_template_kwargs": {"enable_thinking": True}},
        "row 0: the row is marked enable_thinking true, yet message 1 (assistant) has no reason"),
    "chat_template_kwargs_the_template_does_not_read": (    # SmolLM3's: the tools were lost
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
         "chat_template_kwargs": {"enable_thinking": False, "xml_tools": [{"name": "w"}]}},
        "row 0: the row's chat_template_kwargs set 'xml_tools' ([{'name': 'w'}]), which the "
        "Qwen3 template does not read"),
    "mistral_tool_calls_with_text_after_them": (     # not read as calls: named, with the fix
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content":
                       '[TOOL_CALLS] [{"name": "f", "arguments": {}}] and then?'}]},
        "row 0: message 1 (assistant) writes a tool call in another model's format ([TOOL_CALLS]"
        " ...): the model would learn calls the template's parser (<tool_call>) does not read; "
        "give them as tool_calls (Mistral's are read so where they end the answer"),
    "openai_harmony_tool_call": (
        {"messages": [{"role": "user", "content": "2*3?"}, {"role": "assistant", "content":
                       "<|channel|>commentary to=functions.calc <|constrain|>json<|message|>"
                       '{"e": "2*3"}<|call|>'}]},
        "row 0: message 1 (assistant) holds a tool call or a tool's result in OpenAI Harmony's "
        "format (<|start|>assistant<|channel|>commentary to=fu..<|message|>): give the calls as "
        "tool_calls"),
    "openai_harmony_analysis_without_a_final": (
        {"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content":
                       "<|channel|>analysis<|message|>2+2=4<|end|>"}]},
        "row 0: message 1 (assistant) is in OpenAI Harmony's format but not whole messages, each "
        "assistant's analysis then its final"),
    "openai_harmony_analysis_next_to_a_thinking_field": (    # was "holds 1 replies"
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "thinking": "r",
                       "content": "<|channel|>analysis<|message|>r<|end|><|start|>assistant"
                                  "<|channel|>final<|message|>a"}]},
        "row 0: message 1 (assistant) has its reasoning twice: given apart, and as the analysis "
        "of its OpenAI Harmony text"),
    "openai_harmony_two_replies_in_one_message": (
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content":
                       "<|channel|>final<|message|>a<|end|><|start|>assistant<|channel|>final"
                       "<|message|>b"}]},
        "row 0: message 1 (assistant) holds 2 replies in OpenAI Harmony's format"),
    "deepseek_rendered_tool_calls": (
        {"text": "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜><｜tool▁calls▁begin｜>"},
        "row 0: 'text' holds DeepSeek's tool calls or outputs"),
    "openai_harmony_text_cut_off": (
        {"text": "<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>final"
                 "<|message|>The answer is"},
        "row 0: 'text' is in OpenAI Harmony's format but not whole messages"),
    "preference_row_whose_prompt_is_not_the_one_in_chosen": (     # "q1" was dropped unsaid
        {"prompt": "q1", "chosen": [{"role": "user", "content": "q2"},
                                    {"role": "assistant", "content": "good"}],
         "rejected": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "bad"}]},
        "row 0: the row's 'prompt' ('q1') is not the query of its 'chosen' conversation, which "
        "holds its own (the one trained)"),
    "bedrock_image_block": (
        {"messages": [{"role": "user", "content": [{"image": {"format": "png"}}, {"text": "q"}]},
                      {"role": "assistant", "content": [{"text": "a"}]}]},
        "row 0: message 0 (user): part 0 is of type 'image'; this recipe trains text-only"),
    "bedrock_redacted_reasoning": (
        {"messages": [{"role": "user", "content": [{"text": "q"}]}, {"role": "assistant",
                       "content": [{"reasoningContent": {"redactedContent": "eyJ"}},
                                   {"text": "a"}]}]},
        "row 0: message 1 (assistant): part 0 is redacted_thinking, reasoning encrypted"),
    "openassistant_message_row": (
        {"message_tree_id": "t", "message_id": "m", "parent_id": None, "role": "prompter",
         "text": "Hi"}, "row 0: the row is one message of an OpenAssistant tree"),
    "llava_image_beside_the_conversation": (
        {"image": "coco/1.jpg", "conversations": [{"from": "human", "value": "<image>\nWhat?"},
                                                  {"from": "gpt", "value": "A cat."}]},
        "row 0: the row has 'image' ('coco/1.jpg') beside its text: this recipe trains text-only"),
    "images_beside_messages": (
        {"images": ["a.jpg"], "messages": [{"role": "user", "content": "<image>Who?"},
                                           {"role": "assistant", "content": "A cat."}]},
        "row 0: the row has 'images' (['a.jpg']) beside its text"),
    "gemini_contents_not_a_list": ({"contents": "hi"}, "row 0: 'contents' is 'hi'; give a list"),
    "reasoning_tag_never_closed": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<thinking>r ... and so"}]},
        "row 0: message 1 (assistant) opens with <thinking> but not with one "
        "<thinking>...</thinking> block before its answer",
    ),
    "reasoning_tag_closed_in_another_case": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<Thought>r</thought>a"}]},
        "row 0: message 1 (assistant) opens with <Thought> but not with one "
        "<Thought>...</Thought> block",
    ),
    "reasoning_tag_twice": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<thought>a</thought>b<thought>c"}]},
        "row 0: message 1 (assistant) opens with <thought> but not with one",
    ),
    "reasoning_tag_next_to_a_reasoning_field": (
        {"prompt": "q", "completion": "<reasoning>r</reasoning>a", "reasoning": "r"},
        "row 0: message 1 (assistant) has its reasoning twice: given apart, and as the "
        "<reasoning> block its content opens with; give it once",
    ),
    "query_and_reply_fields_ambiguous": (
        {"prompt": "q", "question": "q2", "response": "a"},
        "row 0: the row has the fields ['prompt', 'question', 'response']: which is the query",
    ),
    "system_and_system_prompt_differ": (
        {"system": "s", "system_prompt": "t", "prompt": "q", "completion": "a"},
        "row 0: the row has 'system' and 'system_prompt' fields that differ: keep one",
    ),
    "anthropic_tool_results_out_of_call_order": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": [
                          {"type": "tool_use", "id": "t1", "name": "w", "input": {}},
                          {"type": "tool_use", "id": "t2", "name": "w", "input": {"c": 1}}]},
                      {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": "t2", "content": "2"},
                          {"type": "tool_result", "tool_use_id": "t1", "content": "1"}]},
                      {"role": "assistant", "content": "a"}]},
        "row 0: the tool results of messages 2 to 3 (['t2', 't1']) are in another order"),
    "tool_results_mixed_with_text": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": [{"type": "tool_use", "name": "w"}]},
                      {"role": "user", "content": [{"type": "tool_result", "content": "1"},
                                                   {"type": "text", "text": "and?"}]},
                      {"role": "assistant", "content": "a"}]},
        "row 0: message 2 mixes tool_result parts with others; give the tool results a message",
    ),
    "function_call_and_tool_calls": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": None, "tool_calls": [_call("w", {})],
                       "function_call": {"name": "w", "arguments": "{}"}}]},
        "row 0: message 1 (assistant) has both function_call and tool_calls; keep tool_calls",
    ),
    "text_that_is_not_a_chat": (
        {"text": "The cat sat on the mat."},
        "row 0: 'text' is 'The cat sat on the mat.': not a chat rendered as whole turns of ChatML",
    ),
    "text_of_a_prompt_only": (
        {"text": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"},
        "(pretraining text? a prompt only?)",
    ),
    "think_block_and_a_reasoning_field": (
        {"messages": [{"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<think>r</think>a", "thinking": "r2"}]},
        "row 0: message 1 (assistant) has its reasoning twice: in 'thinking' and as a think "
        "block in its content; give it once",
    ),
    "think_block_and_a_row_reasoning": (
        {"question": "q", "response": "<think>r</think>a", "reasoning": "r2"},
        "row 0: the row's reply has its reasoning twice: in 'reasoning' and as a think block",
    ),
    "kto_undesirable_row": (
        {"prompt": "q", "completion": "bad", "label": False},
        "row 0: the row is marked undesirable ('label': false, a KTO row): SFT imitates",
    ),
    "classification_row_with_a_boolean_label": (    # not KTO's: no completion
        {"text": "Great film.", "label": False}, "row 0: 'text' is 'Great film.': not a chat"),
    "neither_form": ({"question": "q", "label": "a"}, "'conversations' (ShareGPT)"),
    "question_and_a_final_value_only": (    # no reply to train (it was 'no field prompt')
        {"question": "2+2?", "answer": "4"},
        "row 0: 'answer' is '4', one line and no reasoning: a final value, not a reply to train"),
    "question_and_a_one_line_answer": (
        {"problem": "Capital of France?", "answer": "The capital is Paris."},
        "(a reply of one line: name the field 'response')"),
    "a_row_whose_reply_was_cut_off": (
        {"prompt": "q", "completion": "So x =", "finish_reason": "length"},
        "row 0: the row is marked cut off by its generator (finish_reason 'length')"),
    "a_gemini_reply_cut_off": (
        {"contents": [{"role": "user", "parts": [{"text": "q"}]},
                      {"role": "model", "parts": [{"text": "So x ="}],
                       "finishReason": "MAX_TOKENS"}]},
        "message 1 (assistant) is marked cut off by its generator (finishReason 'MAX_TOKENS')"),
    "gsm8k_answer_without_its_value": (
        {"question": "q", "answer": "2+2 = <<2+2=4>>4.\n####"}, "ends in '####' with no value"),
}  # fmt: skip


@pytest.mark.parametrize("name", BAD_ROWS)
def test_rows_that_cannot_be_text_conversations_are_named(tmp_path, name):
    row, says = BAD_ROWS[name]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=re.escape(says)):
        sft_data.jsonl_examples(str(path))


def test_encode_refuses_reasoning_the_template_would_drop(tok):
    """`encode` on its own (no file loading) names a reasoning under another name: the template
    reads only reasoning_content and trained the reply with an empty think block."""
    for name in conversations.REASONING_NAMES:
        msgs = [{"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", name: "r"}]
        with pytest.raises(ValueError, match=f"message 1 .assistant. has '{name}'.*name it "
                                             "reasoning_content"):
            sft.encode(tok, msgs)


# conversations the template renders (as the official one does) but that cannot be trained on:
# what check_conversation says about each
def _u(c):
    return {"role": "user", "content": c}


def _a(c, **kw):
    return {"role": "assistant", "content": c, **kw}


_TC = _call("calc", {"expr": "2*3"})
UNTRAINABLE = {
    "two_think_blocks": (
        [_u("q"), _a("<think>\nr1\n</think>\n\nmid<think>\nr2\n</think>\n\nans")],
        "message 1 (assistant) has the think tags ['<think>', '</think>', '<think>', '</think>']",
    ),
    "two_closes": ([_u("q"), _a("r1</think>mid</think>ans")], "has the think tags"),
    "reopened_after_answer": ([_u("q"), _a("<think>r</think>ans<think>more")], "the think tags"),
    "unclosed_think": ([_u("q"), _a("<think>\nr1 and then 4")], "has an unclosed <think>"),
    "text_before_think": ([_u("q"), _a("Hi! <think>\nr\n</think>\n\na")], "text before <think>"),
    "reasoning_content_and_inline": (
        [_u("q"), _a("<think>\ni\n</think>\n\na", reasoning_content="r")],
        "has reasoning_content and think tags",
    ),
    "empty_reasoning_content_and_inline": (
        [_u("q"), _a("<think>\ni\n</think>\n\na", reasoning_content="")],
        "has reasoning_content and think tags",
    ),
    "tag_inside_reasoning_content": (
        [_u("q"), _a("a", reasoning_content="so </think> here")],
        "has reasoning_content and think tags",
    ),
    "im_end_in_reply": ([_u("q"), _a("first<|im_end|>\nsecond")], "message 1 (assistant) holds"),
    "im_start_in_user": (
        [_u("q<|im_start|>assistant\nfake"), _a("a")],
        "message 0 (user) holds <|im_start|>",
    ),
    "im_end_in_tool_result": (
        [_u("q"), _a(None, reasoning_content="r", tool_calls=[_call("calc", {})]),
         {"role": "tool", "content": "6<|im_end|>"}, _a("6")],
        "message 2 (tool) holds <|im_end|>",
    ),  # fmt: skip
    "im_end_in_dict_arguments": (   # written by the template's tojson, then read as a boundary
        [_u("q"), _a(None, tool_calls=[_call("echo", {"text": "<|im_end|>"})])],
        "message 1 (assistant) holds <|im_end|>",
    ),
    "im_end_in_history_reasoning": (
        [_u("q"), _a("a", reasoning_content="<|im_end|>"), _u("q2"), _a("b")],
        "message 1 (assistant) holds <|im_end|>",
    ),
    "arguments_not_json": (
        [_u("q"), _a(None, tool_calls=[_call("calc", "{expr: 2*3")])],
        "tool call 0 has arguments '{expr: 2*3', not a JSON object",
    ),
    "arguments_json_list": (
        [_u("q"), _a(None, tool_calls=[_call("calc", "[1, 2]")])],
        "not a JSON object",
    ),
    "empty_reply": ([_u("q"), _a("")], "message 1 (assistant), the reply to train, has no answer"),
    "whitespace_reply_empty_reasoning": (
        [_u("q"), _a(" \n", reasoning_content="")], "the reply to train, has no answer"),
    "empty_think_block_only": ([_u("q"), _a("<think>\n\n</think>\n\n")], "has no answer"),
    "reasoning_without_answer": ([_u("q"), _a("", reasoning_content="r")], "has no answer"),
    "inline_reasoning_without_answer": ([_u("q"), _a("<think>\nr\n</think>")], "has no answer"),
    "lone_surrogate_in_user_text": (
        [_u("hi \ud83d"), _a("ok")], "message 0 (user) holds '\\ud83d' at character 3"),
    "lone_surrogate_in_tool_arguments": (
        [_u("q"), _a(None, tool_calls=[_call("calc", {"expr": "\udc00"})])],
        "message 1 (assistant) holds '\\udc00'",
    ),
    "reasoning_under_a_system_no_think": (
        [{"role": "system", "content": "Be brief. /no_think"}, _u("2+2?"),
         _a("4", reasoning_content="2+2=4")],
        "the reply has reasoning, yet the latest soft switch before it (up to message 1) is "
        "/no_think",
    ),
    "reasoning_under_a_no_think_in_a_system_turn_after_the_query": (   # it was trained
        [_u("2+2?"), {"role": "system", "content": "Answer at once. /no_think"},
         _a("4", reasoning_content="2+2=4")],
        "the reply has reasoning, yet the latest soft switch before it (up to message 1) is "
        "/no_think",
    ),
    "empty_think_block_under_think": (
        [_u("2+2? /think"), _a("<think>\n\n</think>\n\n4")],
        "the reply has no reasoning, yet the latest soft switch before it (up to message 0) is "
        "/think",
    ),
    "tool_step_reasoning_under_no_think": (
        [_u("2*3? /no_think"),
         _a(None, reasoning_content="use calc", tool_calls=[_call("calc", {"expr": "2*3"})]),
         {"role": "tool", "content": "6"}, _a("6", reasoning_content="")],
        "is /no_think: the model would learn to ignore /no_think",
    ),
    "no_query": ([{"role": "system", "content": "s"}, _a("a")], "needs a user query"),
    "only_the_reply": ([_a("a")], "needs a user query"),
    "query_is_a_tool_response": (
        [_u("<tool_response>\n6\n</tool_response>"), _a("a")],
        "needs a user query",
    ),
    "llama3_end_of_turn_ending_a_reply": ([_u("q"), _a("4<|eot_id|>\n")], "ends with <|eot_id|>"),
    "llama2_eos_ending_a_completion": ([_u("q"), _a("4 </s>")], "ends with </s>, another chat"),
    "gemma_end_of_turn_ending_the_reasoning": (
        [_u("q"), _a("4", reasoning_content="2+2<end_of_turn>")], "ends with <end_of_turn>"),
    "gemma_turns_copied_into_a_reply": (
        [_u("q"), _a("4<end_of_turn>\n<start_of_turn>user\nand 3+3?")],
        "holds '<start_of_turn>user\\n', which opens another turn"),
    "inst_turn_copied_into_a_reply": ([_u("q"), _a("4</s><s>[INST] 3+3? [/INST] 6")], "'[INST]"),
    "phi3_turns_copied_into_a_reply": ([_u("q"), _a("4<|end|>\n<|user|>\n3+3?")], "'<|user|>"),
    "tool_loop_flattened_into_a_reply": (   # the model would learn to write tool results
        [_u("2*3?"), _a('<tool_call>\n{"name": "calc", "arguments": {"e": "2*3"}}\n</tool_call>'
                        "\n<tool_response>\n6\n</tool_response>\nSo 6.")],
        "holds '<tool_response>\\n', which opens another turn"),
    "llama3_header_in_a_reply": (
        [_u("q"), _a("4<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n3+3?")],
        "holds '<|start_header_id|>user<|end_header_"),
    "empty_query": ([_u(""), _a("a")], "message 0 (user) is an empty query"),
    "query_of_a_soft_switch_only": ([_u(" /no_think"), _a("a")], "message 0 (user) is an empty "
                                    "query (' /no_think')"),
    "query_of_spaces_in_history": (
        [_u("q"), _a("a"), _u(" \n"), _a("b")], "message 2 (user) is an empty query"),
    "tool_result_without_a_call": (
        [_u("q"), {"role": "tool", "content": "6"}, _a("6")], "message 1 (tool) is a tool result "
        "with no tool call before it"),
    "tool_call_id_of_no_call": (
        [_u("q"), _a(None, tool_calls=[{**_TC, "id": "c1"}]),
         {"role": "tool", "content": "6", "tool_call_id": "c2"}, _a("6")],
        "has tool_call_id 'c2', which no call of message 1 has (ids ['c1'])"),
    "tool_results_out_of_call_order": (
        [_u("q"), _a(None, tool_calls=[{**_TC, "id": "c1"}, {**_TC, "id": "c2"}]),
         {"role": "tool", "content": "6", "tool_call_id": "c2"},
         {"role": "tool", "content": "6", "tool_call_id": "c1"}, _a("6")],
        "are in another order than the calls of message 1 (['c1', 'c2'])"),
    "prefill_to_continue": ([_u("q"), _a("The answer is", prefix=True)],
                            "message 1 (assistant) is marked 'prefix', a start for the model"),
    "partial_reply_in_history": (
        [_u("q"), _a("Let me", partial=True), _u("go on"), _a("a")], "marked 'partial'"),
    "media_placeholder_on_a_line": (
        [_u("What is this?\n<image>"), _a("A cat.")],
        "message 0 (user) holds <image>, a placeholder for media"),
    "tool_call_written_as_text_not_json": (
        [_u("q"), _a('<tool_call>\n{"name": calc}\n</tool_call>')],
        "message 1 (assistant) writes a tool call as text whose JSON is '{\"name\": calc}'"),
    "tool_call_written_as_text_without_arguments": (
        [_u("q"), _a('Checking.\n<tool_call>\n{"name": "calc"}\n</tool_call>')],
        "writes a tool call as text"),
    "consecutive_assistant_turns": (
        [_u("q"), _a(None, tool_calls=[_call("calc", {})]), _a("a")],
        "messages 1 and 2 are consecutive assistant turns",
    ),
    "a_reply_starting_with_the_end_of_an_inst_query": (    # a rendered query's rest
        [_u("q"), _a(" [/INST] 4")], "message 1 (assistant) starts with [/INST], another chat"),
    "a_reply_ending_with_inst_close": ([_u("q"), _a("4 [/INST]")], "ends with [/INST]"),
    "a_reply_starting_with_an_end_of_turn": ([_u("q"), _a("<|eot_id|>4")], "starts with <|eot"),
    "deepseek_end_of_sentence_ending_a_reply": (    # R1 traces kept it: trained as text
        [_u("q"), _a("<think>r</think>4<｜end▁of▁sentence｜>")],
        "message 1 (assistant) ends with <｜end▁of▁sentence｜>, another chat format's end"),
    "gemma_eos_ending_a_reply": ([_u("q"), _a("4<eos>")], "ends with <eos>, another chat"),
    "cohere_turns_copied_into_a_reply": (
        [_u("q"), _a("4<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>and?")],
        "holds '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>', which opens another turn"),
    "deepseek_turns_copied_into_a_reply": (
        [_u("q"), _a("4<｜end▁of▁sentence｜><｜User｜>and?")], "holds '<｜User｜>', which opens"),
    "llama4_turns_copied_into_a_reply": (
        [_u("q"), _a("4<|eot|><|header_start|>user<|header_end|>\n\nand?")],
        "holds '<|header_start|>user<|header_end|>', which opens another turn"),
    "openai_harmony_messages_after_text": (
        [_u("2+2?"), _a("Sure.<|start|>assistant<|channel|>final<|message|>4<|return|>")],
        "message 1 (assistant) ends with <|return|>, another chat format's end of turn"),
    "openai_harmony_channel_in_a_reply": (
        [_u("2+2?"), _a("Sure. <|channel|>final<|message|>4")],
        "message 1 (assistant) holds '<|channel|>final', which opens another turn"),
    "mistral_tool_calls_not_json": (    # as JSON, they are read as the calls at load
        [_u("2*3?"), _a("[TOOL_CALLS] calc(2*3)")],
        "message 1 (assistant) writes a tool call in another model's format ([TOOL_CALLS] ...)"),
    "glaive_functioncall_as_text": (
        [_u("2*3?"), _a('Let me see.\n<functioncall> {"name": "calc", "arguments": \'{}\'}')],
        "in another model's format (<functioncall> ...)"),
    "llama_python_tag": (
        [_u("2*3?"), _a('<|python_tag|>{"name": "calc", "parameters": {}}')],
        "in another model's format (<|python_tag|> ...)"),
    "deepseek_tool_calls_as_text": (
        [_u("2*3?"), _a("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>calc")],
        "in another model's format (<｜tool▁calls▁begin｜> ...)"),
    "kimi_tool_calls_as_text": (
        [_u("2*3?"), _a("<|tool_calls_section_begin|><|tool_call_begin|>functions.calc:0")],
        "in another model's format (<|tool_calls_section_begin|> ...)"),
    "two_results_for_one_call": (
        [_u("2*3?"), _a(None, tool_calls=[_TC]), {"role": "tool", "content": "6"},
         {"role": "tool", "content": "7"}, _a("6")],
        "message 1 (assistant) makes 1 tool call(s) and 2 tool result(s) follow"),
    "one_result_for_two_calls": (
        [_u("2*3, 2*4?"), _a(None, tool_calls=[_TC, _call("calc", {"expr": "2*4"})]),
         {"role": "tool", "content": "6"}, _a("6 and 8")],
        "message 1 (assistant) makes 2 tool call(s) and 1 tool result(s) follow"),
    "one_result_for_two_calls_with_ids": (
        [_u("2*3, 2*4?"), _a(None, tool_calls=[{**_TC, "id": "a"}, {**_TC, "id": "b"}]),
         {"role": "tool", "content": "6", "tool_call_id": "a"}, _a("6 and 8")],
        "makes 2 tool call(s) and 1 tool result(s) follow"),
    "calls_no_result_answers": (
        [_u("2*3?"), _a(None, tool_calls=[_TC]), _u("well?"), _a("6")],
        "makes 1 tool call(s) and 0 tool result(s) follow"),
    "a_tool_response_user_turn_after_no_call": (
        [_u("q"), _a("a"), _u("<tool_response>\n6\n</tool_response>"), _a("6")],
        "message 2 (user) is wrapped in <tool_response></tool_response>, which the template"),
    "a_tool_name_with_a_quote": (     # written unescaped: {"name": "say"hi", ...}
        [_u("q"), _a(None, tool_calls=[_call('say"hi', {})])],
        "message 1 (assistant): tool call 0 is named 'say\"hi', which the template writes"),
    "a_tool_name_with_a_backslash_or_a_newline": (
        [_u("q"), _a(None, tool_calls=[_call("f", {}), _call("a\\b\n", {})])],
        "tool call 1 is named 'a\\\\b\\n', which the template writes into its JSON as it is"),
    "a_reply_cut_off_by_its_generator": (   # OpenAI's and vLLM's finish_reason
        [_u("q"), _a("So x =", finish_reason="length")],
        "message 1 (assistant) is marked cut off by its generator (finish_reason 'length')"),
    "an_earlier_reply_cut_off": (    # Anthropic's stop_reason
        [_u("q"), _a("So x =", stop_reason="max_tokens"), _u("go on"), _a("x = 2")],
        "message 1 (assistant) is marked cut off by its generator (stop_reason 'max_tokens')"),
    "a_call_written_as_text_before_more_text": (    # read as a call only at the end
        [_u("2*3?"), _a('<tool_call>\n{"name": "calc", "arguments": {}}\n</tool_call>\nThen.'),
         {"role": "tool", "content": "6"}, _a("6")],
        "message 2 (tool) is a tool result with no tool call before it (message 1 writes its "
        "call as text, read as a call only at the end of its answer: give it as tool_calls)"),
    "users_told_apart_only_by_name": (     # a group chat: the template drops "name"
        [{**_u("Lunch at 1?"), "name": "ann"}, {**_u("No, 2."), "name": "bo"}, _a("2 it is.")],
        "messages 0 and 1 (user) are from different speakers ('ann' and 'bo'), told apart only"),
    "a_named_user_and_an_unnamed_one": (
        [_u("q"), _a("a"), {**_u("and me?"), "name": "bo"}, _a("b")],
        "messages 0 and 2 (user) are from different speakers (None and 'bo')"),
    "few_shot_examples_as_named_system_turns": (   # OpenAI's cookbook's few-shot prompting
        [{"role": "system", "content": "Translate."},
         {"role": "system", "content": "hola", "name": "example_user"},
         {"role": "system", "content": "hello", "name": "example_assistant"}, _u("adios"),
         _a("bye")],
        "messages 0 and 1 (system) are from different speakers (None and 'example_user')"),
    "assistants_told_apart_only_by_name": (
        [_u("q"), {**_a("A says 1"), "name": "a"}, _u("and B?"), {**_a("B says 2"), "name": "b"}],
        "messages 1 and 3 (assistant) are from different speakers"),
    "hermes_text_next_to_the_same_tool_calls": (    # rendered twice: two calls
        [_u("2*3?"), _a('<think>r</think>\n<tool_call>\n{"name": "calc", "arguments": '
                        '{"expr": "2*3"}}\n</tool_call>', tool_calls=[_TC])],
        "message 1 (assistant) writes a tool call as text in its content and has tool_calls"),
}


@pytest.mark.parametrize("name", UNTRAINABLE)
def test_untrainable_conversations_are_named_in_encode_and_at_load(tok, tmp_path, name):
    """Each used to be trained on as the template renders it (text dropped, a second think block,
    a reply that ends mid-text, arguments the model learns to write wrong), or failed in encode
    without naming the row; the template itself still renders them, as the official one does."""
    messages, says = UNTRAINABLE[name]
    tok.apply_chat_template(messages, tokenize=False)  # renders: only training refuses
    with pytest.raises(ValueError, match=re.escape(says)):
        sft.encode(tok, messages)
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"messages": [_u("ok"), _a("fine")]}) + "\n"
                    + json.dumps({"messages": messages}) + "\n")  # fmt: skip
    with pytest.raises(DataError, match="rows.jsonl: row 1: .*" + re.escape(says)):
        sft_data.jsonl_examples(str(path))


SPECIAL_IN_TEXT = {    # the test tokenizer's (SmolLM2's) special tokens, in text
    "eos_in_a_reply": ([_u("q"), _a("4<|endoftext|>and more")], "message 1 (assistant)"),
    "code_metadata_in_a_user_turn": ([_u("cp <filename> /tmp"), _a("ok")], "message 0 (user)"),
    "in_reasoning": ([_u("q"), _a("a", reasoning_content="<|endoftext|>")], "message 1"),
    "in_dict_arguments": (
        [_u("q"), _a(None, tool_calls=[_call("f", {"x": "<|endoftext|>"})])], "message 1"),
}  # fmt: skip


@pytest.mark.parametrize("name", SPECIAL_IN_TEXT)
def test_special_tokens_in_text_are_named(tok, name):
    """A text holding a special token of the tokenizer was tokenized as that token: a reply
    holding <|endoftext|> trained the model to emit its end-of-text marker mid-answer. `encode`
    names the message and the token; in a training set, the example too."""
    messages, where = SPECIAL_IN_TEXT[name]
    token = re.search(r"<\|endoftext\|>|<filename>", json.dumps(messages))[0]
    says = f"{re.escape(where)}.* holds {re.escape(token)}, a special token of the tokenizer"
    with pytest.raises(ValueError, match=says):
        sft.encode(tok, messages)
    ok = {"messages": [_u("fine"), _a("yes")]}
    with pytest.raises(DataError, match="training example 1 .query 'q|training example 1 .query "
                                        "'cp"):
        sft.encode_examples(tok, [ok, {"messages": messages}], max_length=4096)
    ids, mask = sft.encode(tok, [_u("<think> is a token"), _a("</think> too")])   # not special
    assert tok.decode(ids).count("<think>") == 2


def _trained(tok, example):
    """(the tokens trained, decoded; whether the example renders as the official template)."""
    from test_chat_template import OFFICIAL_QWEN3_TEMPLATE

    ids, mask = sft.encode(tok, example["messages"], example.get("tools"))
    official = tok.apply_chat_template(example["messages"], tokenize=False,
                                       tools=example.get("tools"),
                                       chat_template=OFFICIAL_QWEN3_TEMPLATE)
    return tok.decode([t for t, m in zip(ids, mask) if m]), tok.decode(ids) + "\n" == official


# conversations of several replies -> the replies trained, one example each (as its last turn)
MULTI_REPLY = {
    "two_exchanges_each_with_its_reasoning": (
        [_u("2+2?"), _a("4", reasoning_content="r1"), _u("3+3?"), _a("<think>r2</think>6")],
        ["<think>\nr1\n</think>\n\n4", "<think>\nr2\n</think>\n\n6"],
    ),
    "tool_loop_trains_its_call": (
        [_u("2*3?"), _a(None, reasoning_content="use calc", tool_calls=[_TC]),
         {"role": "tool", "content": "6"}, _a("6", reasoning_content="done")],
        ['<think>\nuse calc\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": '
         '{"expr": "2*3"}}\n</tool_call>', "<think>\ndone\n</think>\n\n6"],
    ),
    "greeting_before_the_first_query_is_context": (
        [{"role": "system", "content": "s"}, _a("Hi, ask me."), _u("q"), _a("a")],
        ["<think>\n\n</think>\n\na"],
    ),
    "weight_0_is_context_only": (
        [_u("q1"), _a("bad", weight=0), _u("q2"), _a("good", weight=1)],
        ["<think>\n\n</think>\n\ngood"],
    ),
    "train_false_on_the_last_reply": (
        [_u("q1"), _a("good"), _u("q2"), _a("bad", train=False)],
        ["<think>\n\n</think>\n\ngood"],
    ),
    "training_false_and_no_marks_on_user_turns": (
        [_u("q1"), _a("bad", training=False), {**_u("q2"), "weight": 0.0}, _a("good")],
        ["<think>\n\n</think>\n\ngood"],
    ),
    "null_is_no_mark": (    # SlimOrca: "weight": null on system and user turns
        [{"role": "system", "content": "s", "weight": None}, {**_u("q"), "weight": None},
         _a("a", weight=1)],
        ["<think>\n\n</think>\n\na"],
    ),
    "one_name_on_every_user_turn_and_tool_results_named_by_function": (
        [{**_u("2*3?"), "name": "ann"}, _a(None, tool_calls=[_TC, _call("now", {})]),
         {"role": "tool", "content": "6", "name": "calc"},
         {"role": "tool", "content": "12:00", "name": "now"}, _a("6 at 12:00"),
         {**_u("thanks"), "name": "ann"}, _a("You are welcome.")],
        ['<think>\n\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2*3"}}'
         '\n</tool_call>\n<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>',
         "<think>\n\n</think>\n\n6 at 12:00", "<think>\n\n</think>\n\nYou are welcome."],
    ),
    "results_given_as_the_templates_own_user_turn": (
        [_u("2*3?"), _a(None, tool_calls=[_TC]), _u("<tool_response>\n6\n</tool_response>"),
         _a("6")],
        ['<think>\n\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2*3"}}'
         "\n</tool_call>", "<think>\n\n</think>\n\n6"],
    ),
    "null_on_a_reply_trains_it": (
        [_u("q1"), _a("good", train=None)],
        ["<think>\n\n</think>\n\ngood"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", MULTI_REPLY)
def test_every_reply_of_a_conversation_is_trained_with_its_own_reasoning(tok, tmp_path, name):
    """Only the last assistant turn was trained: earlier replies (and the tool calls of a tool
    loop) were context, and a turn marked "weight": 0 or "train": false (axolotl) was trained
    when last. Now each reply to train is the last turn of an example of its own, rendered as the
    official template renders it, its own reasoning in its think block."""
    messages, trained = MULTI_REPLY[name]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"messages": messages, "reference": "R"}) + "\n")
    examples = sft_data.jsonl_examples(str(path))
    assert [_trained(tok, ex) for ex in examples] == [(t + "<|im_end|>", True) for t in trained]
    for ex in examples:     # a prefix of the conversation; the row's reference on its end only
        n = len(ex["messages"])
        assert ex["messages"] == messages[:n]
        assert ex["reference"] == ("R" if n == len(messages) else None)


GLAIVE_FUNCTIONS = [
    {"name": "get_rate", "description": "Exchange rate", "parameters": {
        "type": "object", "properties": {"base": {"type": "string"}}, "required": ["base"]}},
    {"name": "now", "description": "The time", "parameters": {}}]
GLAIVE = {      # glaive-function-calling-v2's rows
    "no_functions": (
        {"system": "SYSTEM: You are a helpful assistant, with no access to external functions.\n",
         "chat": "USER: Hi, who are you?\n\n\nASSISTANT: An assistant. <|endoftext|>\n\n\n"},
        [{"role": "system", "content": "You are a helpful assistant, with no access to external "
                                       "functions."},
         _u("Hi, who are you?"), _a("An assistant.")],
        None, ["An assistant."]),
    "a_call_its_response_and_the_answer": (
        {"system": "SYSTEM: You are a helpful assistant with access to the following functions. "
                   "Use them if required -\n" + "\n\n".join(
                       json.dumps(f, indent=4) for f in GLAIVE_FUNCTIONS) + "\n",
         "chat": "USER: Rate of USD?\n\n\nASSISTANT: <functioncall> {\"name\": \"get_rate\", "
                 "\"arguments\": '{\"base\": \"USD\"}'} <|endoftext|>\n\n\nFUNCTION RESPONSE: "
                 "{\"rate\": 0.85}\n\n\nASSISTANT: It is 0.85. <|endoftext|>\n\n\n"},
        [{"role": "system", "content": "You are a helpful assistant with access to the following "
                                       "functions. Use them if required"},
         _u("Rate of USD?"), _a(None, tool_calls=[_call("get_rate", '{"base": "USD"}')]),
         {"role": "tool", "content": '{"rate": 0.85}'}, _a("It is 0.85.")],
        [{"type": "function", "function": f} for f in GLAIVE_FUNCTIONS],
        ['<tool_call>\n{"name": "get_rate", "arguments": {"base": "USD"}}\n</tool_call>',
         "It is 0.85."]),
}  # fmt: skip


@pytest.mark.parametrize("name", GLAIVE)
def test_glaive_function_calling_rows(tok, tmp_path, name):
    """Glaive's rows ({"system": "SYSTEM: ...", "chat": "USER: ...\\n\\n\\nASSISTANT: ..."}) were
    refused ('no field prompt'); now their turns are messages, a <functioncall> a tool call, a
    FUNCTION RESPONSE a tool result, the functions in the system text the tools, each reply
    trained without Glaive's <|endoftext|>, as the official template renders it."""
    row, messages, tools, replies = GLAIVE[name]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    examples = sft_data.jsonl_examples(str(path))
    assert examples[-1]["messages"] == messages and examples[-1].get("tools") == tools
    assert [_trained(tok, ex) for ex in examples] == [
        ("<think>\n\n</think>\n\n" + r + "<|im_end|>", True) for r in replies]
    bad = row["chat"].replace("<functioncall> {", "<functioncall> get_rate(").replace("'}", "')")
    path.write_text(json.dumps({**row, "chat": bad}) + "\n")
    if bad != row["chat"]:
        with pytest.raises(DataError, match=r"row 0: 'chat' turn 2 calls 'get_rate\(.*not "
                                            r"\{\"name\": ..., \"arguments\": '\{...\}'\} "):
            sft_data.jsonl_examples(str(path))


def test_a_long_conversation_is_checked_in_linear_time(monkeypatch):
    """Each reply's example is a prefix of the conversation, and every prefix was checked whole
    (each turn's texts, each soft switch read again): quadratic in its replies, 1 s for 200
    exchanges. Each turn's text is now read once, the soft switches in one pass."""
    reads = {"texts": 0, "switches": 0}

    class Counting:     # SOFT_SWITCH, counting the texts it reads for the latest switch
        def __getattr__(self, name):
            return getattr(switch, name)

        def findall(self, text):
            reads["switches"] += 1
            return switch.findall(text)

    switch, texts = conversations.SOFT_SWITCH, conversations.message_texts
    monkeypatch.setattr(conversations, "SOFT_SWITCH", Counting())
    monkeypatch.setattr(conversations, "message_texts",
                        lambda m: reads.__setitem__("texts", reads["texts"] + 1) or texts(m))
    n = 50
    messages = [m for k in range(n) for m in (_u(f"{k}+{k}? /think"), _a(f"{2 * k}",
                                                                        reasoning_content="r"))]
    examples = conversations.reply_examples({"messages": messages})
    assert [len(ex["messages"]) for ex in examples] == list(range(2, 2 * n + 1, 2))
    assert reads == {"texts": 2 * n, "switches": n}
    with pytest.raises(ValueError, match="message 99 .assistant. ends with <.eot_id.>"):
        conversations.reply_examples({"messages": messages[:-1] + [_a("4<|eot_id|>",
                                                                      reasoning_content="r")]})


def test_a_reply_of_many_openers_is_read_in_linear_time():
    """A reply of 10,000 '[INST] ' and none closed (12 s: TURN_HEADER's '[INST].*?[/INST]' went
    to the end from each), and one of 5,000 '<tool_call>\\n{' before no closing tag (9 s: the
    regex of trailing calls tried every split), are read in a blink."""
    import time

    t0 = time.perf_counter()
    conversations.check_conversation([_u("q"), _a("[INST] " * 10_000)])
    conversations.check_conversation([_u("q"), _a("`" * 20_000)])     # code fences, all of it
    reply = conversations.chat_message(_a("x" + "\n<tool_call>\n{" * 5_000), 1)
    assert time.perf_counter() - t0 < 2
    assert "tool_calls" not in reply


MARKS_REFUSED = {
    "every_reply_marked_not_to_train": (
        [_u("q"), _a("a", weight=0)], "message 1 (assistant), the reply to train, is marked not"),
    "a_weight_between": ([_u("q"), _a("a", weight=0.5)], "message 1 has the training mark(s)"),
    "marks_that_disagree": ([_u("q"), _a("a", weight=1, train=False)], "give one, 0/1"),
    "a_mark_that_is_text": ([_u("q"), _a("a", train="no")], "{'train': 'no'}"),
    "a_user_turn_marked_to_train": (
        [{**_u("q"), "train": True}, _a("a")],
        "message 0 (user) is marked to train ({'train': True}), but only assistant replies"),
}  # fmt: skip


@pytest.mark.parametrize("name", MARKS_REFUSED)
def test_training_marks_that_cannot_be_followed_are_named(tok, tmp_path, name):
    messages, says = MARKS_REFUSED[name]
    with pytest.raises(ValueError, match=re.escape(says)):
        sft.encode(tok, messages)
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"messages": messages}) + "\n")
    with pytest.raises(DataError, match="row 0: .*" + re.escape(says)):
        sft_data.jsonl_examples(str(path))


def test_trainable_think_shapes_pass_and_train_exactly_their_reply(tok):
    """What the template parses cleanly stays valid: the reasoning once, inline (with or without
    <think>, odd newlines) or in reasoning_content; tags in user text; tool-call arguments as a
    JSON object string. The trained tokens are the reply's think block, answer and <|im_end|>."""
    cases = [
        (_a("<think>\nr\n</think>\n\na"), "<think>\nr\n</think>\n\na"),
        (_a("r\n</think>\n\na"), "<think>\nr\n</think>\n\na"),
        (_a("\n<think>r</think>a"), "<think>\nr\n</think>\n\na"),
        (_a("<think>\n\n\nr\n\n</think>\n\n\na"), "<think>\nr\n</think>\n\na"),
        (_a("a", reasoning_content="r <b>"), "<think>\nr <b>\n</think>\n\na"),
        (_a(None, reasoning_content="r", tool_calls=[_call("calc", '{"expr": "1"}')]),
         '<think>\nr\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": {"expr": "1"}}'
         "\n</tool_call>"),
        (_a("\u200f\u05e9 👋\u200b"), "<think>\n\n</think>\n\n\u200f\u05e9 👋\u200b"),
        (_a("Llama 3 ends turns with <|eot_id|>; </s> is Llama 2's."),   # markers named, as text
         "<think>\n\n</think>\n\nLlama 3 ends turns with <|eot_id|>; </s> is Llama 2's."),
        (_a("Strike it: <s>old</s>"), "<think>\n\n</think>\n\nStrike it: <s>old</s>"),
        (_a('<tool_call>\n{"name": "calc", "arguments": {"e": "1"}}\n</tool_call>'),   # Hermes'
         '<think>\n\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": {"e": "1"}}\n'
         "</tool_call>"),
        (_a("Wrap calls in <tool_call></tool_call>."),
         "<think>\n\n</think>\n\nWrap calls in <tool_call></tool_call>."),
        (_a("A query ends in [/INST]; [TOOL_CALLS] opens calls."),   # markers named, as text
         "<think>\n\n</think>\n\nA query ends in [/INST]; [TOOL_CALLS] opens calls."),
        (_a("Mistral writes `[TOOL_CALLS]`; a query ends in [/INST]."),
         "<think>\n\n</think>\n\nMistral writes `[TOOL_CALLS]`; a query ends in [/INST]."),
        (_a('Mistral calls so:\n```\n[TOOL_CALLS] [{"name": "f"}]\n```\nin code, as text.'),
         '<think>\n\n</think>\n\nMistral calls so:\n```\n[TOOL_CALLS] [{"name": "f"}]\n```\n'
         "in code, as text."),
    ]  # fmt: skip
    for reply, trained in cases:
        messages = [_u("what do <think> and </think> mean?"), reply]
        ids, mask = sft.encode(tok, messages)
        assert tok.decode([t for t, m in zip(ids, mask) if m]) == trained + "<|im_end|>", reply
        assert not any(mask[: mask.index(1)]) and all(mask[mask.index(1) :])


def test_think_format_parser_and_split():
    assert sft_data.think_format("<think>\nhm\n</think>\n\nSo $\\boxed{3}$.") == {
        "closed": True,
        "empty": False,
        "boxed": True,
    }
    assert sft_data.think_format("<think>\n\n</think>\n\n\\boxed{3}") == {
        "closed": True,
        "empty": True,
        "boxed": True,
    }
    assert sft_data.think_format("<think>\nhm \\boxed{3}")["closed"] is False
    assert conversations.split_reasoning("a\nb\nSo \\boxed{1}.") == ("a\nb", "So \\boxed{1}.")


def test_format_check_samples_through_the_engine_interface(monkeypatch, tok, tiny, tmp_path):
    tasks = data.math_tasks(4, "test", 0)  # the check's held-out problems
    kinds, calls = [], []

    class Scripted:  # both modes in format; right on the first two problems
        def generate(self, prompts, params):
            calls.append(params)
            out = []
            for i, p in enumerate(prompts):
                reasoning = "" if "/no_think" in tok.decode(p) else "worked"
                ans = tasks[i]["answer"] if i < 2 else "-1"
                text = f"<think>\n{reasoning}\n</think>\n\nSo $\\boxed{{{ans}}}$."
                out.append(engines.Completion(i, p, [1], text, truncated=False))
            return out

    monkeypatch.setattr(
        engines, "make_engine", lambda kind, model, tok, **kw: kinds.append(kind) or Scripted()
    )
    cfg = sft.Config(engine="hf", eval_problems=4, eval_max_completion_length=16, seed=0)
    metrics, samples = sft_run.check_format(cfg, tiny, tok, tmp_path)
    assert kinds == ["hf"] and [(c.temperature, c.max_new_tokens) for c in calls] == [(0, 16)] * 2
    assert metrics == {
        "eval/think_format": 1.0,
        "eval/think_accuracy": 0.5,
        "eval/no_think_format": 1.0,
        "eval/no_think_accuracy": 0.5,
    }
    assert json.loads((tmp_path / "eval.json").read_text()) == metrics
    assert [s["mode"] for s in samples] == ["think"] * 4 + ["no_think"] * 4 and all(
        s["format_ok"] for s in samples
    )


def test_flags_parse_like_trl():
    cfg = sft.parse(
        [
            "--learning_rate",
            "3e-5",
            "--per-device-train-batch-size",
            "4",
            "--think_tokens",
            "repurpose",
            "--packing",
            "false",
            "--max_steps",
            "7",
        ]
    )
    assert (
        cfg.learning_rate,
        cfg.per_device_train_batch_size,
        cfg.think_tokens,
        cfg.packing,
        cfg.max_steps,
    ) == (3e-5, 4, "repurpose", False, 7)
    with pytest.raises(SystemExit):
        sft.parse(["--think_tokens", "maybe"])


# ---- training: loss falls; resume continues at the same data position -------------------------
def tiny_cfg(out, **kw):
    base = dict(
        model="tiny",
        output_dir=str(out),
        num_examples=16,
        max_length=384,
        max_steps=8,
        learning_rate=3e-3,
        embedding_learning_rate=0,
        warmup_steps=2,
        eval_problems=0,
        save_steps=100,
        seed=0,
    )
    return sft.Config(**{**base, **kw})


def test_tiny_sft_loss_falls(tmp_path):
    # 8 examples (2-3 packed rows), 12 steps = several epochs: the loss drops from ln V ~ 10.8
    ck = sft.train(
        tiny_cfg(
            tmp_path / "run",
            think_tokens="repurpose",
            rope_theta_factor=2.0,
            num_examples=8,
            max_steps=12,
            learning_rate=5e-3,
        )
    )
    rows = runs.RunDir(tmp_path / "run", resume=True).metrics()
    losses = [r["loss"] for r in rows]
    assert len(losses) == 12 and losses[-1] < losses[0] - 4.0, losses
    assert {"lr", "grad_norm", "tokens_per_s"} <= set(rows[0])
    assert (tmp_path / "run" / "curves.png").exists() and (
        tmp_path / "run" / "filter.json"
    ).exists()
    model, tok = models.load_policy(str(ck))
    assert model.config.rope_parameters["rope_theta"] == 2 * 10000.0
    assert (
        tok.convert_tokens_to_ids("<think>") == 15
        and tok.chat_template == chat_template.CHAT_TEMPLATE
    )


def test_resume_continues_at_the_same_data_position(tmp_path, monkeypatch):
    kw = dict(max_steps=4, save_steps=2, gradient_accumulation_steps=2, max_length=256)
    full = sft.train(tiny_cfg(tmp_path / "full", **kw))
    full_rows = runs.RunDir(tmp_path / "full", resume=True).metrics()

    class Killed(Exception):
        pass

    save = runs.RunDir.save

    def save_then_die(self, *a, **kwargs):
        save(self, *a, **kwargs)
        raise Killed  # killed right after the step-2 checkpoint

    monkeypatch.setattr(runs.RunDir, "save", save_then_die)
    cfg = tiny_cfg(tmp_path / "cut", **kw)
    with pytest.raises(Killed):
        sft.train(cfg)
    monkeypatch.setattr(runs.RunDir, "save", save)
    cfg.resume = True
    cut = sft.train(cfg)
    cut_rows = runs.RunDir(tmp_path / "cut", resume=True).metrics()
    assert [r["step"] for r in cut_rows] == [1, 2, 3, 4]
    for a, b in zip(full_rows, cut_rows):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5) and a["lr"] == b["lr"]
    wa = models.load_policy(str(full))[0].state_dict()
    wb = models.load_policy(str(cut))[0].state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)


# ---- the embedded model learns the format (the issue's done-when; ~4 min on 2 CPU cores) ------
# 60 steps, the demo's SFT length: since the SFT data has several wordings per template, 40 steps
# left thinking-mode answers that skip the reasoning (think format 0.72-0.76 at 40 steps)
@pytest.mark.slow
def test_default_model_answers_in_think_format_in_both_modes(tmp_path):
    cfg = sft.Config(
        output_dir=str(tmp_path / "run"),
        max_steps=60,
        max_length=512,
        learning_rate=2e-4,
        embedding_learning_rate=2e-3,
        warmup_steps=4,
        num_examples=256,
        save_steps=1000,
        eval_problems=50,
        eval_max_completion_length=200,
    )
    sft.train(cfg)
    metrics = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert metrics["eval/think_format"] >= 0.9 and metrics["eval/no_think_format"] >= 0.9, metrics


def test_teacher_rejection_sampling(monkeypatch, tiny, tokenizer):
    tasks = data.math_tasks(2, "train", 0)

    class FakeEngine:  # a teacher that is right once and wrong once per problem
        def generate(self, prompts, params):
            out = []
            for i, _ in enumerate(prompts):
                a = tasks[i]["answer"]
                for text in (
                    f"Let me see.\nSo it is {a}.\nThe answer is \\boxed{{{a}}}.",
                    "I think \\boxed{-999}",
                    # right, but two think blocks: the template would drop 'x': not a trace
                    f"<think>\nr</think>x</think>\n\nThe answer is \\boxed{{{a}}}.",
                ):
                    out.append(engines.Completion(i, [1], [2], text, truncated=False))
            out.append(engines.Completion(0, [1], [2], "I was cut off", truncated=True))
            return out

    monkeypatch.setattr(models, "load_policy", lambda *a, **k: (tiny, tokenizer))
    monkeypatch.setattr(engines, "make_engine", lambda *a, **k: FakeEngine())
    cfg = sft.Config(dataset="teacher", num_examples=2, teacher_samples=2, no_think_ratio=0)
    examples, counts = sft.build_dataset(cfg)
    # the truncated sample and the two with two think blocks are counted too, not lost silently
    assert counts == {"wrong_answer": 2, "repetition": 0, "inconsistent": 0, "unfinished": 1,
                      "malformed": 2, "kept": 2, "total": 7}
    reply = examples[0]["messages"][-1]
    assert reply["reasoning_content"] == f"Let me see.\nSo it is {tasks[0]['answer']}."
    assert reply["content"] == f"The answer is \\boxed{{{tasks[0]['answer']}}}."


def test_param_groups_give_embeddings_their_own_lr(tiny):
    groups = sft.param_groups(tiny, 2e-4, 2e-3)
    assert [len(g["params"]) for g in groups][1] == 1  # tied: one embedding matrix
    assert (
        groups[1]["params"][0] is tiny.get_input_embeddings().weight and groups[1]["lr_scale"] == 10
    )
    assert sum(len(g["params"]) for g in groups) == len(list(tiny.parameters()))
    assert sft.param_groups(tiny, 2e-4, 0)[1]["lr_scale"] == 1.0


def test_fusion_dataset_keeps_only_verified_samples_of_the_stage2_model(monkeypatch, tmp_path):
    # a scripted stage-2 model: right on even problems, wrong on odd ones, one sample truncated
    class Scripted:
        def __init__(self, tok):
            self.tok = tok

        def generate(self, prompts, params):
            out = []
            for i, _ in enumerate(prompts):
                task = tasks[i]
                for k in range(params.n):
                    ans = task["answer"] if i % 2 == 0 else "987654"
                    text = (
                        f"<think>\nworking on it\nSo the answer is {ans}.\n</think>\n\n"
                        f"The final answer is $\\boxed{{{ans}}}$."
                    )
                    out.append(engines.Completion(i, [1], [2], text, truncated=(i == 0 and k == 1)))
            return out

    cfg = sft.parse(
        [
            "--model",
            "tiny",
            "--dataset",
            "fusion",
            "--num_examples",
            "6",
            "--teacher_samples",
            "2",
            "--no_think_ratio",
            "0.5",
            "--multi_turn_ratio",
            "0",
            "--output_dir",
            str(tmp_path),
        ]
    )
    tasks = data.math_tasks(6, "train", cfg.seed)  # the cold start's queries (prefix-stable)
    monkeypatch.setattr(engines, "make_engine", lambda kind, model, tok, **kw: Scripted(tok))
    fused, counts = sft.build_dataset(cfg)
    thinking = [e for e in fused if e["think"]]
    assert counts["wrong_answer"] == 6 and len(thinking) == 5  # 3 right problems x 2, one truncated
    assert all(e["reference"] in {t["answer"] for t in tasks[::2]} for e in thinking)
    plain = [e for e in fused if not e["think"]]
    assert len(plain) == counts["non_thinking"] == 6
    assert all(
        e["messages"][-2]["content"].endswith("/no_think")
        and e["messages"][-1]["reasoning_content"] == ""
        for e in plain
    )
    assert any(
        "constraints" not in e and e["reference"] is None for e in plain
    )  # instruction following


@pytest.mark.parametrize("name,text", [
    ("TRAIN.JSONL", '{"prompt": "1 + 1?", "completion": "2"}\n'),
    ("train.csv", "prompt,completion\n1 + 1?,2\n"),
])
def test_sft_dataset_files_of_every_type_data_reads(tmp_path, name, text):
    # an upper-case suffix and .csv / .tsv were "--dataset ...: use math, teacher, ..." though
    # dataset_tasks.rows_from_file (and evaluate --task) read them
    import sft_data

    path = tmp_path / name
    path.write_text(text)
    cfg = sft.Config(dataset=str(path))
    examples, _, _ = sft_data.load_examples(cfg)
    assert [m["content"] for m in examples[0]["messages"]] == ["1 + 1?", "2"]


@pytest.mark.parametrize("name,text", [
    ("both.jsonl", '{"prompt": "1 + 1?", "completion": "2", "split": "train"}\n'
                   '{"prompt": "2 + 2?", "completion": "4", "split": "test"}\n'),
    ("both.json", '{"test": [{"prompt": "2 + 2?", "completion": "4"}], '
                  '"train": [{"prompt": "1 + 1?", "completion": "2"}]}'),
])
def test_sft_trains_on_the_train_rows_of_a_file_of_several_splits(tmp_path, name, text):
    # every row was trained on, the test rows too (a .json's first list, whichever split it is),
    # though --task reads the split asked for
    path = tmp_path / name
    path.write_text(text)
    examples = sft_data.jsonl_examples(str(path))
    assert [[m["content"] for m in e["messages"]] for e in examples] == [["1 + 1?", "2"]]
    path.write_text(text.replace('"train"', '"dev"'))
    with pytest.raises(data.DataError, match="training reads 'train'"):
        sft_data.jsonl_examples(str(path))


@pytest.mark.parametrize("name,says", [
    ("train.jsonl.zst", "train.jsonl.zst: a .zst archive or compressed file, which is not read "
     "as it is (gzip is); decompress it (zstd -d FILE)"),
    ("train.xlsx", "train.xlsx: a spreadsheet (.xlsx), which is not read; save its sheet as "
     ".csv"),
    ("shards", "shards: a folder, not a file; pass one data file (it holds 1, e.g. ")])
def test_an_sft_dataset_path_of_another_kind_is_named_with_its_fix(tmp_path, name, says):
    # each was "--dataset ...: use math, teacher, fusion, math_tools or a .jsonl ... file"
    import sft_data

    path = tmp_path / name
    if name == "shards":
        path.mkdir()
        (path / "train-00000-of-00001.jsonl").write_text('{"prompt": "1?", "completion": "1"}\n')
    else:
        path.write_bytes(b"PK\x03\x04")
    with pytest.raises(data.DataError, match=re.escape(says)):
        sft_data.load_examples(sft.Config(dataset=str(path)))


def test_sft_reads_a_gzipped_dataset_file_as_data_does(tmp_path):
    # dataset_tasks.rows_from_file reads .jsonl.gz; --dataset refused it ("use math, teacher, ...")
    import gzip

    import sft_data

    path = tmp_path / "train.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"prompt": "1 + 1?", "completion": "2"}\n'))
    examples, _, _ = sft_data.load_examples(sft.Config(dataset=str(path)))
    assert [m["content"] for m in examples[0]["messages"]] == ["1 + 1?", "2"]


def test_a_parquet_file_of_tool_calls_reads_each_call_as_written(tok, tmp_path):
    """Arrow stores a column of objects as one struct of every row's keys: a call's dict
    arguments and a tool's signature read back with the other rows' keys as nulls, rendered and
    trained ('{"city": "Oslo", "expr": null}'). They read back as written, rendered as the
    official template renders the rows as written."""
    import datasets
    from test_chat_template import OFFICIAL_QWEN3_TEMPLATE

    def row(q, name, args, params):
        return {"tools": [{"type": "function", "function": {"name": name, "parameters": {
                    "type": "object", "properties": params}}}],
                "messages": [_u(q), _a(None, tool_calls=[_call(name, args)]),
                             {"role": "tool", "content": "1"}, _a("1")]}

    rows = [row("Oslo?", "w", {"city": "Oslo"}, {"city": {"type": "string"}}),
            row("2*3?", "calc", {"expr": "2*3", "exact": True}, {"expr": {"type": "string"}})]
    path = tmp_path / "rows.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    examples = sft_data.jsonl_examples(str(path))
    assert len(examples) == 4
    for ex, r in zip(examples[::2], rows):
        assert ex["tools"] == r["tools"]
        assert ex["messages"][1]["tool_calls"] == r["messages"][1]["tool_calls"]
        ids, mask = sft.encode(tok, ex["messages"], ex["tools"])
        assert tok.decode(ids) + "\n" == tok.apply_chat_template(
            r["messages"][:2], tools=r["tools"], tokenize=False,
            chat_template=OFFICIAL_QWEN3_TEMPLATE)
