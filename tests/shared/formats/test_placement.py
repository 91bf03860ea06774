"""Placement of the memory block per format: byte-faithful bodies, positions, roles (pure)."""

from __future__ import annotations

import json

import pytest

from shared.errors import InvalidRequest
from shared.formats import raw as rawjson
from shared.formats.base import Placement
from shared.formats.chat import CHAT
from shared.formats.messages import MESSAGES, block_position
from shared.formats.responses import RESPONSES
from shared.injection import ProviderCapabilities, inject

BLOCK = "<recalled_memories>\nUser works at a bakery\n</recalled_memories>"


def placed(fmt, raw: bytes, placement: Placement | None = None) -> bytes:
    parsed = fmt.parse(raw)
    fields = fmt.place(parsed.fields, BLOCK, placement or Placement())
    assert fields is not None
    return rawjson.encode_fields(fields)


def block_at(raw: bytes) -> int:
    return raw.index(b"<recalled_memories>")


# ---- chat -----------------------------------------------------------------------------------


def test_chat_keeps_every_caller_byte_before_the_block():
    raw = (
        b'{"model": "m", "x-unknown": {"k": [1.50, "caf\\u00e9"]}, "messages": ['
        b'{"role": "system", "content": "Be  brief", "cache": {"a": 1e3}},'
        b'{"role": "user", "content": "caf\\u00e9 first"},'
        b'{"role": "assistant", "content": "ok"},'
        b'{"role": "user", "content": "Where do I work?"}]}'
    )
    out = placed(CHAT, raw)
    # caller values are written back verbatim (escapes, number spelling, unknown fields)
    assert b'"x-unknown":{"k": [1.50, "caf\\u00e9"]}' in out
    assert b'{"role": "system", "content": "Be  brief", "cache": {"a": 1e3}}' in out
    assert b'{"role": "assistant", "content": "ok"},{"role":"system"' in out
    body = json.loads(out)
    assert [m["role"] for m in body["messages"]] == [
        "system",
        "user",
        "assistant",
        "system",
        "user",
    ]
    assert body["messages"][3]["content"] == BLOCK


def test_chat_prefix_is_identical_between_turns():
    turn1 = b'{"model":"m","messages":[{"role":"user","content":"hi  there"}]}'
    turn2 = (
        b'{"model":"m","messages":[{"role":"user","content":"hi  there"},'
        b'{"role":"assistant","content":"hello"},{"role":"user","content":"Where do I work?"}]}'
    )
    out1, out2 = placed(CHAT, turn1), placed(CHAT, turn2)
    assert out2.startswith(out1[: block_at(out1) - len(b'{"role":"system","content":"')])


# ---- responses ------------------------------------------------------------------------------


def test_responses_string_input_becomes_block_then_user_item():
    raw = b'{"model":"m","instructions":"Be brief.","input":"Where do I work?","store":false}'
    body = json.loads(placed(RESPONSES, raw))
    assert body["instructions"] == "Be brief."
    assert body["store"] is False
    assert body["input"] == [
        {"role": "system", "content": BLOCK},
        {"role": "user", "content": "Where do I work?"},
    ]


def test_responses_block_goes_before_the_newest_user_item():
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "I bake bread"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Where?"}]},
    ]
    raw = json.dumps({"model": "m", "input": items, "previous_response_id": "resp_1"}).encode()
    parsed = RESPONSES.parse(raw)
    assert parsed.query == "Where?"
    assert parsed.user_turns == ["I bake bread", "Where?"]
    body = json.loads(placed(RESPONSES, raw))
    assert body["input"][:4] == items[:4]
    assert body["input"][4] == {"role": "system", "content": BLOCK}
    assert body["input"][5] == items[4]
    assert body["previous_response_id"] == "resp_1"


@pytest.mark.parametrize(
    "caps",
    [
        ProviderCapabilities(rejects_system_role=True),
        ProviderCapabilities(system_must_be_first=True),
        ProviderCapabilities(hoists_system=True),
    ],
)
def test_responses_block_is_a_user_item_for_picky_providers(caps):
    raw = b'{"model":"m","input":[{"role":"user","content":"Where do I work?"}]}'
    body = json.loads(placed(RESPONSES, raw, Placement(caps=caps)))
    assert body["input"][0] == {"role": "user", "content": BLOCK}


def test_responses_without_a_user_item_places_nothing():
    raw = b'{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"x"}]}'
    parsed = RESPONSES.parse(raw)
    assert parsed.query == ""
    assert RESPONSES.place(parsed.fields, BLOCK, Placement()) is None


# ---- messages -------------------------------------------------------------------------------


def test_messages_system_and_breakpoints_stay_byte_identical():
    system = b'[{"type": "text", "text": "You are kind.", "cache_control": {"type": "ephemeral"}}]'
    raw = (
        b'{"model":"claude","max_tokens":10,"system":' + system + b',"messages":['
        b'{"role":"user","content":[{"type":"text","text":"I bake","cache_control":'
        b'{"type":"ephemeral"}}]},{"role":"assistant","content":"ok"},'
        b'{"role":"user","content":"Where do I work?"}]}'
    )
    out = placed(MESSAGES, raw)
    assert b'"system":' + system in out
    body = json.loads(out)
    last = body["messages"][-1]
    assert last == {
        "role": "user",
        "content": [{"type": "text", "text": BLOCK}, {"type": "text", "text": "Where do I work?"}],
    }
    assert len(body["messages"]) == 3  # no extra message: alternation kept


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([{"type": "text", "text": "a"}], 0),
        ([{"type": "tool_result", "tool_use_id": "t", "content": "x"}, {"type": "text"}], 1),
        ([{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}], 1),
        (
            [
                {"type": "tool_result", "tool_use_id": "t"},
                {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "b"},
            ],
            2,
        ),
    ],
)
def test_messages_block_position_after_tool_results_and_breakpoints(content, expected):
    assert block_position(content) == expected


def test_messages_query_skips_tool_result_only_turns_and_learning_reads_user_text():
    messages = [
        {"role": "user", "content": "My name is Ada"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "4"}]},
    ]
    parsed = MESSAGES.parse(json.dumps({"model": "c", "messages": messages}).encode())
    assert parsed.query == "My name is Ada"
    assert parsed.user_turns == ["My name is Ada"]
    body = json.loads(placed(MESSAGES, json.dumps({"model": "c", "messages": messages}).encode()))
    assert body["messages"][2]["content"][0]["type"] == "tool_result"  # tool results stay first
    assert body["messages"][2]["content"][1] == {"type": "text", "text": BLOCK}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model":"c","messages":[{"role":"system","content":"x"}]}',
        b'{"model":"c","messages":[{"role":"user","content":5}]}',
        b'{"model":"c","messages":[]}',
        b'{"model":"c","messages":[{"role":"user","content":"x"}],"system":5}',
        b'{"messages":[{"role":"user","content":"x"}]}',
    ],
)
def test_messages_bad_input_is_invalid_request(raw):
    with pytest.raises(InvalidRequest):
        MESSAGES.parse(raw)


@pytest.mark.parametrize(
    ("caps", "role"),
    [
        (ProviderCapabilities(), "system"),
        (ProviderCapabilities(hoists_system=True), "user"),
        (ProviderCapabilities(rejects_system_role=True), "user"),
    ],
)
def test_chat_fast_path_matches_inject(caps, role):
    raw = (
        b'{"model":"m","messages":[{"role":"system","content":"s","name":"x"},'
        b'{"role":"user","content":"a"},{"role":"assistant","content":"b"},'
        b'{"role":"user","content":"c"}]}'
    )
    body = json.loads(placed(CHAT, raw, Placement(caps=caps)))
    expected = inject(json.loads(raw)["messages"], BLOCK, caps=caps).messages
    assert body["messages"] == expected
    assert body["messages"][3] == {"role": role, "content": BLOCK}


def test_chat_merge_paths_keep_unknown_message_fields():
    raw = (
        b'{"model":"m","messages":[{"role":"system","content":"Be kind","name":"boss"},'
        b'{"role":"user","content":"hi"}]}'
    )
    caps = ProviderCapabilities(system_must_be_first=True)
    body = json.loads(placed(CHAT, raw, Placement(caps=caps)))
    assert body["messages"][0] == {
        "role": "system",
        "content": "Be kind\n\n" + BLOCK,
        "name": "boss",
    }
    assert body["messages"][1] == {"role": "user", "content": "hi"}
