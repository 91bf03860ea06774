"""Reading and writing Server-Sent Events (WHATWG HTML Living Standard, "Server-sent events").

Only what the gateway needs: split a captured stream into ``(event, data)`` pairs, decode a
``data`` payload as JSON, and write one event. Malformed events are skipped, never raised: the
stream itself is always forwarded untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class _Typed(msgspec.Struct):
    type: str = ""


_typed = msgspec.json.Decoder(_Typed)


def iter_events(data: bytes) -> Iterator[tuple[str, bytes]]:
    r"""The events in ``data`` as ``(event name or "", data payload)``, in order.

    Events are separated by a blank line; several ``data:`` lines of one event are joined with
    ``"\n"``; ``event:`` names the event; comments (``:``) and other fields are ignored. A final
    event without its blank line is still returned (a stream cut short).
    """
    event, lines = "", list[bytes]()
    for line in data.replace(b"\r\n", b"\n").split(b"\n"):
        if not line:
            if lines:
                yield event, b"\n".join(lines)
            event, lines = "", []
        elif line.startswith(b"data:"):
            lines.append(line[5:].removeprefix(b" "))
        elif line.startswith(b"event:"):
            event = line[6:].strip().decode("utf-8", "replace")
    if lines:
        yield event, b"\n".join(lines)


def json_events(data: bytes) -> Iterator[tuple[str, Any]]:
    """:func:`iter_events` with each payload decoded as JSON; undecodable payloads skipped."""
    for event, payload in iter_events(data):
        try:
            yield event, _decoder.decode(payload)
        except msgspec.DecodeError:
            continue


def event_type(event: str, payload: bytes) -> str:
    """The kind of one event: its ``event:`` name, else its JSON payload's ``type``, else ``""``.

    (OpenAI Responses and Anthropic Messages streams name each event after its ``type``.)
    """
    if event:
        return event
    try:
        return _typed.decode(payload).type
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""


def event_bytes(payload: Any, event: str | None = None) -> bytes:
    """One SSE event: optional ``event: <name>`` line, one ``data:`` line of JSON, blank line."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + _encoder.encode(payload) + b"\n\n"
