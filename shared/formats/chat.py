"""OpenAI Chat Completions (``POST /v1/chat/completions``): request reading, placement, stream.

Placement is :func:`shared.injection.inject` (strategies and provider capabilities documented
there); messages the gateway does not change are written back byte for byte.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

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
from shared.formats.sse import event_bytes, iter_events
from shared.formats.stream_end import fold_events
from shared.injection import inject

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
_decoder = msgspec.json.Decoder()


class ChatMessage(msgspec.Struct, frozen=True):
    """What the gateway reads of one message: ``role`` and ``content`` (string, parts, null)."""

    role: Role
    content: str | list[Any] | None = None


class ChatRequest(OpenAIRequest, frozen=True, kw_only=True):
    """What the gateway reads of a chat completion request (other fields pass through)."""

    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1)]


class _Role(msgspec.Struct, frozen=True):
    role: str = ""


def _insert_before_last_user(
    fields: rawjson.Fields, block: str, placement: Placement
) -> rawjson.Fields:
    """The common case of :func:`shared.injection.inject` without decoding the messages.

    A new message at the last user message's index, every message kept as raw bytes.
    """
    raws = rawjson.raw_items(fields["messages"])
    roles = msgspec.json.decode(fields["messages"], type=list[_Role])
    at = next((i for i in range(len(roles) - 1, -1, -1) if roles[i].role == "user"), None)
    if at is None:
        return fields
    caps = placement.caps
    role = "user" if caps.rejects_system_role or caps.hoists_system else "system"
    return {**fields, "messages": [*raws[:at], {"role": role, "content": block}, *raws[at:]]}


class ChatFormat(OpenAIFormat[ChatRequest]):
    """The chat-completions format (see the module docstring).

    Parsing validates the model, non-empty ``messages`` with known roles and the stream/user
    types.
    """

    name: Literal["chat"] = "chat"
    path = "/chat/completions"
    request_type = ChatRequest

    def messages(self, req: ChatRequest) -> list[dict[str, Any]]:
        """``req.messages`` as ``{"role", "content"}`` dicts."""
        return [{"role": m.role, "content": m.content} for m in req.messages]

    def place(self, fields: rawjson.Fields, block: str, placement: Placement) -> rawjson.Fields:
        """Inject ``block`` into ``messages`` (and ``system`` for top-level-system providers)."""
        caps = placement.caps
        if placement.strategy == "before_last_user" and not (
            caps.top_level_system or caps.system_must_be_first
        ):
            return _insert_before_last_user(fields, block, placement)
        raws = rawjson.raw_items(fields["messages"])
        messages = [rawjson.generic(r) for r in raws]
        system = rawjson.generic(fields["system"]) if "system" in fields else None
        placed = inject(messages, block, placement.strategy, placement.caps, system)
        if not placed.injected:
            return fields
        out = dict(fields)
        out["messages"] = rawjson.keep_unchanged(placed.messages, messages, raws)
        if placed.system_changed:
            out["system"] = placed.system
        return out

    def assistant_text(self, body: bytes) -> str:
        """``choices[0].message.content`` of a completion, or ``""``."""
        try:
            content = _decoder.decode(body)["choices"][0]["message"]["content"]
        except (msgspec.DecodeError, KeyError, IndexError, TypeError):
            return ""
        return content if isinstance(content, str) else ""

    def stream_outcome(self, data: bytes) -> StreamOutcome:
        """Concatenated ``choices[0].delta.content``; the status as :meth:`event_status` folds."""
        parts: list[str] = []
        for _, payload in iter_events(data):
            try:
                event: Any = _decoder.decode(payload)
                content = event["choices"][0]["delta"].get("content")
            except (msgspec.DecodeError, KeyError, IndexError, TypeError, AttributeError):
                continue
            if isinstance(content, str):
                parts.append(content)
        return StreamOutcome("".join(parts), fold_events(iter_events(data), self.event_status))

    def event_status(self, event: str, payload: bytes) -> StreamStatus:
        """``ok`` for ``data: [DONE]``, ``failed`` for a chunk carrying an ``error`` object.

        (OpenAI "Streaming": the stream is terminated by ``data: [DONE]``; OpenAI-compatible
        servers report a failure mid-stream as ``data: {"error": {...}}``.)
        """
        if payload.strip() == b"[DONE]":
            return "ok"
        if b'"error"' not in payload:
            return "open"
        try:
            decoded = _decoder.decode(payload)
        except msgspec.DecodeError:
            return "open"
        return "failed" if isinstance(decoded, dict) and decoded.get("error") else "open"

    def stream_error(self, message: str, type_: str, code: str | None, sent: bytes) -> bytes:
        """``data: {"error": {...}}`` (what OpenAI sends for a failure mid-stream)."""
        return event_bytes(openai_error(message, type_, code))

    def error_body(self, message: str, type_: str, code: str | None) -> dict[str, Any]:
        """OpenAI's error shape."""
        return openai_error(message, type_, code)


CHAT = ChatFormat()
