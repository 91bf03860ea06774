"""Every memory format exposes the request's user and assistant turns as text, aligned with its
learning turns, so learning gets the assistant replies around each user turn."""

from __future__ import annotations

import json

from shared.formats.chat import CHAT
from shared.formats.messages import MESSAGES
from shared.formats.responses import RESPONSES
from shared.turn_context import assistant_replies


def parse(fmt, body: dict) -> tuple[list[str], list[str]]:
    parsed = fmt.parse(json.dumps(body).encode())
    return parsed.user_turns, assistant_replies(parsed.conversation())


def test_chat_replies_follow_their_user_turns() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "I moved the launch to March"},
            {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            {"role": "user", "content": "What did I decide about it?"},
        ],
    }
    assert parse(CHAT, body) == (
        ["I moved the launch to March", "What did I decide about it?"],
        ["Noted.", ""],
    )


def test_responses_output_items_are_replies() -> None:
    body = {
        "model": "m",
        "input": [
            {"role": "developer", "content": "be brief"},
            {"type": "message", "role": "user", "content": "My dog is called Rex"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Nice name!"}],
            },
            {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
            {"role": "user", "content": [{"type": "input_text", "text": "And my cat?"}]},
        ],
    }
    assert parse(RESPONSES, body) == (["My dog is called Rex", "And my cat?"], ["Nice name!", ""])


def test_messages_assistant_turns_are_replies() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "I live in Lyon"}]},
            {"role": "assistant", "content": "Lovely city."},
            {"role": "user", "content": "Where do I live?"},
        ],
    }
    assert parse(MESSAGES, body) == (["I live in Lyon", "Where do I live?"], ["Lovely city.", ""])
