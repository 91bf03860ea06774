"""Fake OpenAI Responses and Anthropic Messages endpoints (JSON and SSE) for the fake upstream.

The answers follow the public wire formats: a Responses object with one ``message`` output item
holding ``output_text``, and its event stream (``response.created`` ... ``response.completed``,
each with ``sequence_number``); an Anthropic ``message`` with ``text`` content, and its event
stream (``message_start``, ``content_block_*``, ``ping``, ``message_delta``, ``message_stop``).
Errors use each format's error shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

OPENAI_ERROR = {"error": {"message": "upstream exploded", "type": "server_error", "code": "boom"}}
ANTHROPIC_ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def pieces(text: str, chunks: int) -> list[str]:
    """``text`` cut into about ``chunks`` pieces on word boundaries (joined back exactly)."""
    words = text.split(" ")
    per = max(1, len(words) // max(1, chunks))
    return [(" " if i else "") + " ".join(words[i : i + per]) for i in range(0, len(words), per)]


def _sse(event: str, payload: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode()


# ---- Responses ------------------------------------------------------------------------------


def response_object(model: str, text: str, status: str = "completed") -> dict[str, Any]:
    """A Responses API ``response`` object with one assistant message."""
    output = [
        {
            "type": "message",
            "id": "msg_fake",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    ]
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": model,
        "output": output if text else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 3,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 5,
        },
    }


def response_events(model: str, text: str, chunks: int) -> Iterator[bytes]:
    """The Responses event stream for an answer ``text`` (with a usage-bearing completion).

    The events of one text message in OpenAI's order (https://platform.openai.com/docs/api-
    reference/responses-streaming): ``response.created``, ``response.in_progress``,
    ``response.output_item.added``, ``response.content_part.added``, the
    ``response.output_text.delta`` events, ``response.output_text.done``,
    ``response.content_part.done``, ``response.output_item.done``, ``response.completed``; the
    official client's stream helper (``client.responses.stream``) needs every one of them.
    """
    seq = iter(range(1_000_000))
    start = response_object(model, "", "in_progress")
    for kind in ("response.created", "response.in_progress"):
        yield _sse(kind, {"type": kind, "response": start, "sequence_number": next(seq)})
    item = {
        "type": "message",
        "id": "msg_fake",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    at = {"item_id": "msg_fake", "output_index": 0, "content_index": 0}
    yield _sse(
        "response.output_item.added",
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": item,
            "sequence_number": next(seq),
        },
    )
    empty_part = {"type": "output_text", "text": "", "annotations": []}
    yield _sse(
        "response.content_part.added",
        {
            "type": "response.content_part.added",
            **at,
            "part": empty_part,
            "sequence_number": next(seq),
        },
    )
    for piece in pieces(text, chunks):
        yield _sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                **at,
                "delta": piece,
                "logprobs": [],
                "sequence_number": next(seq),
            },
        )
    yield _sse(
        "response.output_text.done",
        {
            "type": "response.output_text.done",
            **at,
            "text": text,
            "logprobs": [],
            "sequence_number": next(seq),
        },
    )
    part = {"type": "output_text", "text": text, "annotations": []}
    yield _sse(
        "response.content_part.done",
        {"type": "response.content_part.done", **at, "part": part, "sequence_number": next(seq)},
    )
    done = {**item, "status": "completed", "content": [part]}
    yield _sse(
        "response.output_item.done",
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": done,
            "sequence_number": next(seq),
        },
    )
    yield _sse(
        "response.completed",
        {
            "type": "response.completed",
            "response": response_object(model, text),
            "sequence_number": next(seq),
        },
    )


def stored_input_items() -> dict[str, Any]:
    """A Responses API input item list (``GET /v1/responses/{id}/input_items``)."""
    item = {
        "id": "msg_in",
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_text", "text": "hello"}],
    }
    return {
        "object": "list",
        "data": [item],
        "first_id": "msg_in",
        "last_id": "msg_in",
        "has_more": False,
    }


# ---- Messages -------------------------------------------------------------------------------


def message_object(model: str, text: str) -> dict[str, Any]:
    """An Anthropic Messages ``message`` answer."""
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }


def message_events(model: str, text: str, chunks: int) -> Iterator[bytes]:
    """The Anthropic Messages event stream for an answer ``text``."""
    start = {**message_object(model, ""), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 3, "output_tokens": 1}
    yield _sse("message_start", {"type": "message_start", "message": start})
    yield _sse(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    yield _sse("ping", {"type": "ping"})
    for piece in pieces(text, chunks):
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            },
        )
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})
