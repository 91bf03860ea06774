"""OpenAI Responses API (``POST /v1/responses``): request reading, placement, stream reading.

Request: ``input`` is a string (one user message) or a list of items; message items carry a
``role`` and ``content`` (a string or parts of type ``input_text``, ``input_image``...). Other
items (``function_call``, ``function_call_output``, ``reasoning``, ``item_reference``...) and
every other field (``instructions``, ``previous_response_id``, ``store``, ``tools``,
``reasoning``, ``include``, unknown ones) pass through byte for byte.

Placement: the memory block is one input item ``{"role": "system", "content": block}`` (role
``user`` for providers that reject the system role, need it first, or hoist system messages)
inserted right before the newest user message item (strategy ``before_last_user``; the other
strategies put it first in ``input``). A string ``input`` becomes ``[block item, {"role": "user",
"content": input}]``. ``instructions`` is never touched, so the items before the block are the
caller's own bytes and identical between turns. A request carrying ``previous_response_id`` and
only the new user input gets its block the same way.

Stream (OpenAI "Streaming events" reference): ``response.created``, ``response.in_progress``,
``response.output_item.added``, ``response.content_part.added``, ``response.output_text.delta``
(``delta``), ..., and one terminal event: ``response.completed`` (the only success; nothing
is learned otherwise), ``response.incomplete`` (cut short, e.g. by ``max_output_tokens``),
``response.failed`` or ``error``. Every event carries ``sequence_number``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from shared.formats import raw as rawjson
from shared.formats.base import (
    OpenAIFormat,
    OpenAIRequest,
    Placement,
    StreamOutcome,
    StreamStatus,
    openai_error,
)
from shared.formats.sse import event_bytes, event_type, iter_events, json_events
from shared.formats.stream_end import fold_events

_decoder = msgspec.json.Decoder()
_OK_END = "response.completed"
_FAILED_END = frozenset({"response.failed", "response.incomplete", "error"})


class InputItem(msgspec.Struct, frozen=True):
    """What the gateway reads of one input item: ``type``, ``role``, ``content``."""

    type: str | None = None
    role: str | None = None
    content: Any = None


class ResponsesRequest(OpenAIRequest, frozen=True, kw_only=True):
    """What the gateway reads of a Responses request (other fields pass through)."""

    input: str | list[InputItem]


def _messages(items: str | list[InputItem]) -> list[dict[str, Any]]:
    """Message items as chat-like ``{"role", "content"}`` dicts (other items dropped)."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [
        {"role": item.role, "content": item.content}
        for item in items
        if item.role is not None and item.type in (None, "message")
    ]


def _last_user(items: list[Any]) -> int | None:
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        if (
            isinstance(item, dict)
            and item.get("role") == "user"
            and item.get("type", "message") == "message"
        ):
            return i
    return None


def block_role(placement: Placement) -> str:
    """``system``, or ``user`` for providers that must not get a mid-input system item."""
    caps = placement.caps
    if caps.rejects_system_role or caps.system_must_be_first or caps.hoists_system:
        return "user"
    return "system"


class ResponsesFormat(OpenAIFormat[ResponsesRequest]):
    """The Responses format (see the module docstring).

    Parsing validates the model, ``input`` (a string or a list of objects) and the stream/user
    types.
    """

    name: Literal["responses"] = "responses"
    path = "/responses"
    request_type = ResponsesRequest

    def messages(self, req: ResponsesRequest) -> list[dict[str, Any]]:
        """The message items of ``req.input`` (other items dropped)."""
        return _messages(req.input)

    def place(
        self, fields: rawjson.Fields, block: str, placement: Placement
    ) -> rawjson.Fields | None:
        """Insert the block item (see the module docstring); None without a user message."""
        item = {"role": block_role(placement), "content": block}
        value = rawjson.generic(fields["input"])
        if isinstance(value, str):
            new_input: list[Any] = [item, {"role": "user", "content": fields["input"]}]
        else:
            raws = rawjson.raw_items(fields["input"])
            at = _last_user(value)
            if at is None:
                return None
            if placement.strategy != "before_last_user":
                at = 0
            new_input = [*raws[:at], item, *raws[at:]]
        return {**fields, "input": new_input}

    def assistant_text(self, body: bytes) -> str:
        """The ``output_text`` parts of the answer's ``message`` output items, joined."""
        try:
            return _output_text(_decoder.decode(body))
        except msgspec.DecodeError:
            return ""

    def stream_outcome(self, data: bytes) -> StreamOutcome:
        """``response.output_text.delta`` deltas joined; the status :meth:`event_status` folds."""
        parts: list[str] = []
        for _, event in json_events(data):
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
                parts.append(event["delta"])
        return StreamOutcome("".join(parts), fold_events(iter_events(data), self.event_status))

    def event_status(self, event: str, payload: bytes) -> StreamStatus:
        """``ok`` for ``response.completed``, else ``failed`` for a terminal event, else ``open``.

        ``response.failed``, ``response.incomplete`` and ``error`` are not successes.
        """
        kind = event_type(event, payload)
        if kind == _OK_END:
            return "ok"
        return "failed" if kind in _FAILED_END else "open"

    def stream_error(self, message: str, type_: str, code: str | None, sent: bytes) -> bytes:
        """An ``error`` event.

        Fields: ``type``, ``code``, ``message``, ``param``, and ``sequence_number`` one past the
        last relayed event's.
        """
        last = -1
        for _, event in json_events(sent):
            number = event.get("sequence_number") if isinstance(event, dict) else None
            if isinstance(number, int):
                last = max(last, number)
        payload = {
            "type": "error",
            "code": code or type_,
            "message": message,
            "param": None,
            "sequence_number": last + 1,
        }
        return event_bytes(payload, "error")

    def error_body(self, message: str, type_: str, code: str | None) -> dict[str, Any]:
        """OpenAI's error shape."""
        return openai_error(message, type_, code)


def _output_text(body: Any) -> str:
    texts: list[str] = []
    output = body.get("output") if isinstance(body, dict) else None
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "output_text":
                text = part.get("text")
                texts.append(text if isinstance(text, str) else "")
    return "".join(texts)


RESPONSES = ResponsesFormat()
