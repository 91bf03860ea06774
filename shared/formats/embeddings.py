"""OpenAI Embeddings (``POST /v1/embeddings``): authenticated pass-through, no memory.

The gateway reads only ``model`` (for ``provider/model`` routing) and checks that ``input`` is
present; the body is forwarded byte for byte unless the model prefix had to be stripped.
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
    openai_error,
)


class EmbeddingsRequest(msgspec.Struct, frozen=True):
    """What the gateway reads of an embeddings request."""

    model: Annotated[str, msgspec.Meta(min_length=1)]
    input: str | list[Any]


class EmbeddingsFormat:
    """The embeddings format: nothing to recall, place or learn."""

    name: Literal["embeddings"] = "embeddings"
    path = "/embeddings"
    x_api_key = False

    def parse(self, raw: bytes) -> ParsedRequest:
        """Validate ``raw`` (model a non-empty string; input a string or an array)."""
        req = rawjson.decode_typed(raw, EmbeddingsRequest)
        return ParsedRequest(raw=raw, fields=rawjson.decode_fields(raw), model=req.model)

    def place(
        self, fields: rawjson.Fields, block: str, placement: Placement
    ) -> rawjson.Fields | None:
        """Never places anything."""
        return None

    def assistant_text(self, body: bytes) -> str:
        """Embeddings have no assistant text."""
        return ""

    def stream_outcome(self, data: bytes) -> StreamOutcome:
        """Embeddings do not stream."""
        return StreamOutcome("", "open")

    def event_status(self, event: str, payload: bytes) -> StreamStatus:
        """Embeddings do not stream: no event ends one."""
        return "open"

    def stream_error(self, message: str, type_: str, code: str | None, sent: bytes) -> bytes:
        """Embeddings do not stream; an OpenAI-style error event for completeness."""
        return b"data: " + msgspec.json.encode(openai_error(message, type_, code)) + b"\n\n"

    def error_body(self, message: str, type_: str, code: str | None) -> dict[str, Any]:
        """OpenAI's error shape."""
        return openai_error(message, type_, code)


EMBEDDINGS = EmbeddingsFormat()
