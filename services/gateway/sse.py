"""Reading the assistant's text out of an OpenAI chat-completions SSE stream (pure)."""

from __future__ import annotations

from typing import Any

import msgspec

_decoder = msgspec.json.Decoder()


def assistant_text_from_sse(data: bytes) -> tuple[str, bool]:
    """Concatenate ``choices[0].delta.content`` over the ``data:`` events in ``data``.

    Returns ``(text, done)`` where ``done`` tells whether the ``[DONE]`` sentinel was seen.
    Malformed events are skipped (the stream itself is forwarded untouched regardless).
    """
    parts: list[str] = []
    done = False
    for line in data.splitlines():
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            done = True
            continue
        try:
            event: Any = _decoder.decode(payload)
            content = event["choices"][0]["delta"].get("content")
        except (msgspec.DecodeError, KeyError, IndexError, TypeError, AttributeError):
            continue
        if isinstance(content, str):
            parts.append(content)
    return "".join(parts), done


def assistant_text_from_json(body: Any) -> str:
    """``choices[0].message.content`` of a non-streamed completion, or ``""``."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return ""
    return content if isinstance(content, str) else ""


def sse_error_event(message: str, type_: str, code: str | None) -> bytes:
    """One SSE ``data:`` event carrying ``{"error": {"message", "type", "code"}}``."""
    payload = msgspec.json.encode({"error": {"message": message, "type": type_, "code": code}})
    return b"data: " + payload + b"\n\n"
