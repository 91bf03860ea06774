"""Anthropic Messages (``POST /v1/messages``): request reading, placement, stream, errors.

Request: ``messages`` alternate ``user`` / ``assistant``; ``content`` is a string or a list of
blocks (``text``, ``image``, ``tool_use``, ``tool_result``, ...; any block may carry
``cache_control``). The top-level ``system`` (string or text blocks, with ``cache_control``) is
the caller's and is written back byte for byte, as is everything else the gateway does not read.

Placement (Anthropic "Prompt caching": a cache entry covers ``tools``, ``system`` and
``messages`` up to and including the block marked with ``cache_control``): the memory block is
one ``{"type": "text", "text": block}`` content block inside the NEWEST user message, after its
last ``tool_result`` block (tool results must open the message) and after its last
``cache_control`` breakpoint, otherwise first. A string content becomes ``[block, {"type":
"text", "text": content}]``. Everything before the block - system, tools, earlier turns and
every breakpoint - is the caller's bytes, identical between turns, so cached prefixes keep
hitting. No extra message is added, so user/assistant alternation is kept.

Stream (Anthropic "Streaming Messages"): ``message_start``, ``content_block_start``,
``content_block_delta`` (``text_delta``), ``content_block_stop``, ``message_delta`` (usage),
``message_stop``; ``ping`` anywhere; a failure is ``event: error`` with
``{"type": "error", "error": {"type", "message"}}``, the same shape as an error body.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from shared.formats import raw as rawjson
from shared.formats.base import (
    ParsedRequest,
    Placement,
    StreamOutcome,
    StreamStatus,
    text_of_parts,
    text_turns,
)
from shared.formats.sse import event_bytes, event_type, iter_events, json_events
from shared.formats.stream_end import fold_events
from shared.injection import strip_memory_block

_decoder = msgspec.json.Decoder()
_TEXT = ("text",)

#: mnemogate error type → Anthropic error type (Anthropic "Errors": HTTP status → type).
_ANTHROPIC_TYPES = {
    "invalid_request_error": "invalid_request_error",
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "not_found_error": "not_found_error",
    "rate_limit_error": "rate_limit_error",
}
_ANTHROPIC_BY_CODE = {"payload_too_large": "request_too_large", "upstream_timeout": "api_error"}


class Message(msgspec.Struct, frozen=True):
    """What the gateway reads of one message: ``role`` and ``content``."""

    role: Literal["user", "assistant"]
    content: str | list[Any]


class Metadata(msgspec.Struct, frozen=True):
    """``metadata``: ``user_id`` names the end user."""

    user_id: str | None = None


class MessagesRequest(msgspec.Struct, frozen=True):
    """What the gateway reads of a Messages request (other fields pass through)."""

    model: Annotated[str, msgspec.Meta(min_length=1)]
    messages: Annotated[list[Message], msgspec.Meta(min_length=1)]
    system: str | list[Any] | None = None
    stream: bool | None = None
    metadata: Metadata | None = None


def _user_texts(messages: list[Message]) -> list[str]:
    texts = []
    for m in messages:
        if m.role == "user":
            text = strip_memory_block(text_of_parts(m.content, _TEXT))
            if text.strip():
                texts.append(text)
    return texts


def _newest_user_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.role == "user":
            text = strip_memory_block(text_of_parts(m.content, _TEXT))
            if text.strip():
                return text
    return ""


def block_position(content: list[Any]) -> int:
    """Where the block goes in a content list.

    After the last ``tool_result`` block and after the last block with ``cache_control``; 0 when
    there is neither.
    """
    at = 0
    for i, part in enumerate(content):
        if isinstance(part, dict) and (
            part.get("type") == "tool_result" or part.get("cache_control") is not None
        ):
            at = i + 1
    return at


def anthropic_error_type(type_: str, code: str | None) -> str:
    """Anthropic's error ``type`` for a mnemogate ``type``/``code`` (``api_error`` otherwise)."""
    return _ANTHROPIC_BY_CODE.get(code or "") or _ANTHROPIC_TYPES.get(type_, "api_error")


class MessagesFormat:
    """The Anthropic Messages format (see the module docstring)."""

    name: Literal["messages"] = "messages"
    path = "/messages"
    x_api_key = True

    def parse(self, raw: bytes) -> ParsedRequest:
        """Validate ``raw``.

        Checks: the model; non-empty messages with role user/assistant and string or list
        content; the types of system, stream and metadata.
        """
        req = rawjson.decode_typed(raw, MessagesRequest)
        return ParsedRequest(
            raw=raw,
            fields=rawjson.decode_fields(raw),
            model=req.model,
            stream=req.stream is True,
            end_user=(req.metadata.user_id or "") if req.metadata else "",
            query=_newest_user_text(req.messages),
            learning_turns=lambda: _user_texts(req.messages),
            conversation=lambda: text_turns(
                ((m.role, m.content) for m in req.messages), _TEXT, _TEXT
            ),
        )

    def place(
        self, fields: rawjson.Fields, block: str, placement: Placement
    ) -> rawjson.Fields | None:
        """Put the block into the newest user message (see the module docstring)."""
        raws = rawjson.raw_items(fields["messages"])
        at = None
        for i in range(len(raws) - 1, -1, -1):
            if rawjson.generic(raws[i]).get("role") == "user":
                at = i
                break
        if at is None:
            return None
        message = msgspec.json.decode(raws[at], type=dict[str, msgspec.Raw])
        part = {"type": "text", "text": block}
        content = rawjson.generic(message["content"])
        if isinstance(content, str):
            new_content: list[Any] = [part, {"type": "text", "text": message["content"]}]
        else:
            parts = rawjson.raw_items(message["content"])
            pos = block_position(content)
            new_content = [*parts[:pos], part, *parts[pos:]]
        new_messages: list[Any] = list(raws)
        new_messages[at] = {**message, "content": new_content}
        return {**fields, "messages": new_messages}

    def assistant_text(self, body: bytes) -> str:
        """The ``text`` blocks of the answer's ``content``, joined."""
        try:
            content = _decoder.decode(body).get("content")
        except (msgspec.DecodeError, AttributeError):
            return ""
        return text_of_parts(content, _TEXT) if isinstance(content, list) else ""

    def stream_outcome(self, data: bytes) -> StreamOutcome:
        """``text_delta`` texts joined; the status as :meth:`event_status` folds."""
        parts: list[str] = []
        for _, event in json_events(data):
            if isinstance(event, dict) and event.get("type") == "content_block_delta":
                delta = event.get("delta")
                if isinstance(delta, dict) and isinstance(delta.get("text"), str):
                    parts.append(delta["text"])
        return StreamOutcome("".join(parts), fold_events(iter_events(data), self.event_status))

    def event_status(self, event: str, payload: bytes) -> StreamStatus:
        """``ok`` for ``message_stop``, ``failed`` on ``error``, else ``open``.

        A ``data: [DONE]`` is not an end here: Anthropic streams end with ``message_stop``.
        """
        kind = event_type(event, payload)
        if kind == "message_stop":
            return "ok"
        return "failed" if kind == "error" else "open"

    def stream_error(self, message: str, type_: str, code: str | None, sent: bytes) -> bytes:
        """``event: error`` with Anthropic's error object."""
        return event_bytes(self.error_body(message, type_, code), "error")

    def error_body(self, message: str, type_: str, code: str | None) -> dict[str, Any]:
        """Anthropic's error shape ``{"type": "error", "error": {"type", "message"}}``."""
        kind = anthropic_error_type(type_, code)
        return {"type": "error", "error": {"type": kind, "message": message}}


MESSAGES = MessagesFormat()


class CountTokensFormat(MessagesFormat):
    """``POST /v1/messages/count_tokens``: a Messages request body, forwarded without memory."""

    path = "/messages/count_tokens"

    def place(
        self, fields: rawjson.Fields, block: str, placement: Placement
    ) -> rawjson.Fields | None:
        """Never places anything (token counting must see the caller's request as sent)."""
        return None


COUNT_TOKENS = CountTokensFormat()
