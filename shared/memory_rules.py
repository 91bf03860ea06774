"""The field rules every write path applies: REST create and edit, MCP, and import.

A memory is never stored under an id no request can name (docs/ARCHITECTURE.md, "Controlling
memory"): an end user or session id holding a control character, or longer than the chat routes
read, could never be recalled, and a relevance or time outside its range would rank or render it
wrongly. The OpenAPI schema states the same rules where it can (:mod:`shared.memory_api`); these
checks also hold for callers that build the structs directly (MCP tools, import lines).
"""

from __future__ import annotations

import math

from shared.control_chars import has_control_char, strip_control_chars
from shared.errors import InvalidRequest
from shared.models import MAX_KEY_CHARS, MAX_MEMORY_CHARS, MAX_SESSION_CHARS, MAX_TIME_S

__all__ = [
    "checked_key",
    "checked_relevance",
    "checked_session",
    "checked_time",
    "clean_content",
]


def clean_content(content: str) -> str:
    """``content`` with control characters as spaces.

    Raises:
        InvalidRequest: nothing but white space is left, or more than
            :data:`shared.models.MAX_MEMORY_CHARS` characters.
    """
    if len(content) > MAX_MEMORY_CHARS:
        raise InvalidRequest(f"content is longer than {MAX_MEMORY_CHARS} characters")
    cleaned = strip_control_chars(content)
    if not cleaned.strip():
        raise InvalidRequest("content must not be empty")
    return cleaned


def checked_session(session_id: str | None) -> str | None:
    """``session_id`` as the chat routes would name it: stripped, blank → None.

    Raises:
        InvalidRequest: a control character in it, or longer than ``MAX_SESSION_CHARS``.
    """
    if session_id is None or not session_id.strip():
        return None
    return _nameable("session_id", session_id.strip(), MAX_SESSION_CHARS)


def checked_relevance(relevance: float) -> float:
    """``relevance`` when it is a number from 0 to 1.

    Raises:
        InvalidRequest: outside 0..1, or NaN.
    """
    if not 0.0 <= relevance <= 1.0:  # NaN too
        raise InvalidRequest("relevance must be a number from 0 to 1")
    return relevance


def checked_key(key: str) -> str:
    """``key`` when it holds no control character and at most :data:`MAX_KEY_CHARS` characters.

    Raises:
        InvalidRequest: otherwise.
    """
    return _nameable("key", key, MAX_KEY_CHARS)


def _nameable(field: str, text: str, limit: int) -> str:
    if len(text) > limit:
        raise InvalidRequest(f"{field} is {len(text)} characters long; the limit is {limit}")
    if has_control_char(text):
        raise InvalidRequest(f"{field} holds a control character")
    return text


def checked_time(name: str, value: float | None) -> float | None:
    """``value`` (unix seconds, None = unset) when it is finite and within 0..``MAX_TIME_S``.

    Raises:
        InvalidRequest: negative, past :data:`MAX_TIME_S`, or not finite (``name`` says which).
    """
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= MAX_TIME_S):
        raise InvalidRequest(f"{name} must be a time in unix seconds from 0 to {MAX_TIME_S:.0e}")
    return value
