"""Request bodies: size-limited reading and validation of chat completion requests."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request

from shared.errors import InvalidRequest, PayloadTooLarge

_decoder = msgspec.json.Decoder()
VALID_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refusing more than ``limit`` bytes without reading past it.

    Raises:
        PayloadTooLarge: ``Content-Length`` or the bytes actually received exceed ``limit``.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_chat_request(raw: bytes) -> dict[str, Any]:
    """Decode and validate a ``/v1/chat/completions`` body; unknown fields are kept as they are.

    Checks: a JSON object; ``model`` a non-empty string; ``messages`` a non-empty list of objects
    each with a known string ``role``; ``stream`` a boolean if present; ``user`` a string if
    present.

    Raises:
        InvalidRequest: malformed JSON or a field of the wrong type (HTTP 400).
    """
    try:
        body = _decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise InvalidRequest("request body is nested too deeply", code="invalid_json") from exc
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("'model' is required and must be a non-empty string")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' is required and must be a non-empty array")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidRequest(f"messages[{i}] must be an object")
        role = message.get("role")
        if not isinstance(role, str) or role not in VALID_ROLES:
            raise InvalidRequest(f"messages[{i}].role must be one of {sorted(VALID_ROLES)}")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise InvalidRequest(f"messages[{i}].content must be a string, an array or null")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise InvalidRequest("'stream' must be a boolean")
    if "user" in body and body["user"] is not None and not isinstance(body["user"], str):
        raise InvalidRequest("'user' must be a string")
    return body
