"""Who the end user behind an API key is (docs/ARCHITECTURE.md, "Controlling memory").

Sources, first one set wins:

1. the request headers named by ``end_user_headers`` (default ``x-mnemogate-user``, then Open
   WebUI's ``X-OpenWebUI-User-Id``; LibreChat puts its user id in the body's ``user``, or a
   header such as ``x-librechat-user-id`` added here and set in its custom endpoint
   ``headers`` with the ``{{LIBRECHAT_USER_ID}}`` placeholder);
2. the body's ``user`` (OpenAI chat completions and responses);
3. the body's ``safety_identifier`` (OpenAI's successor of ``user``);
4. the body's ``metadata.user_id`` (Anthropic messages).

A value longer than ``end_user_max_chars`` is refused with a 400 (:class:`InvalidRequest`),
never cut: two ids equal in their first characters must never share memories. Header values
are read as UTF-8 (:func:`utf8_header`), so ``x-mnemogate-user: jürgen`` names the same end user
as the body's ``"user": "jürgen"``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from shared.control_chars import has_control_char
from shared.errors import InvalidRequest
from shared.settings import Settings


def header_names(settings: Settings) -> tuple[str, ...]:
    """``end_user_headers`` as lower-case names, in order, blanks dropped (parsed once)."""
    return _names(settings.end_user_headers)


@functools.lru_cache(maxsize=8)
def _names(spec: str) -> tuple[str, ...]:
    return tuple(n.strip().lower() for n in spec.split(",") if n.strip())


def utf8_header(name: str, value: str | None) -> str | None:
    """A header value re-read as UTF-8 (``None`` stays ``None``).

    ASGI servers hand header bytes over decoded as Latin-1 (RFC 9110 section 5.5 leaves
    non-ASCII bytes opaque); encoding back to Latin-1 restores the bytes exactly, which are then
    decoded as UTF-8, the encoding clients send.

    Raises:
        InvalidRequest: the bytes are not valid UTF-8 (HTTP 400).
    """
    if value is None or value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise InvalidRequest(f"the header {name} is not valid UTF-8") from None


def body_candidates(body: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The end-user fields of a decoded JSON body, in order, as ``(source, value)`` pairs.

    ``user``, ``safety_identifier``, ``metadata.user_id`` (absent ones as None).
    """
    metadata = body.get("metadata")
    return [
        ("user", body.get("user")),
        ("safety_identifier", body.get("safety_identifier")),
        ("metadata.user_id", metadata.get("user_id") if isinstance(metadata, dict) else None),
    ]


def resolve_end_user(
    headers: Mapping[str, str],
    body: Sequence[tuple[str, Any]],
    names: tuple[str, ...],
    max_chars: int,
) -> str:
    """The end-user id of a request (sources in the module docstring), ``""`` when none.

    Surrounding whitespace is stripped; ``headers`` is read with lower-case ``names``; ``body``
    holds the body's end-user fields as ``(source, value)`` pairs, in order (the client format
    knows which fields it has; :func:`body_candidates` reads them from a decoded JSON body).

    Raises:
        InvalidRequest: the chosen value is longer than ``max_chars`` characters or holds a
            control character (Unicode ``Cc``: NUL, tab, newline, ...), a body field is set to
            something other than a string, or a header is not valid UTF-8.
    """
    candidates: list[tuple[str, Any]] = [
        (f"header {n}", utf8_header(n, headers.get(n))) for n in names
    ]
    candidates += list(body)
    for source, value in candidates:
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidRequest(f"the end user ({source}) must be a string")
        text = value.strip()
        if not text:
            continue
        return checked_end_user(text, max_chars, source)
    return ""


def checked_end_user(user_id: str, max_chars: int, source: str = "user_id") -> str:
    """``user_id`` when a request may name that end user (surrounding whitespace stripped).

    The rule of every route (chat headers and fields, REST, MCP), so a memory is never stored
    under an id no request can recall it by.

    Raises:
        InvalidRequest: longer than ``max_chars`` characters, or a control character in it.
    """
    text = user_id.strip()
    if len(text) > max_chars:
        raise InvalidRequest(
            f"the end user ({source}) is {len(text)} characters long; the limit is "
            f"{max_chars} (MNEMOGATE_END_USER_MAX_CHARS)"
        )
    if has_control_char(text):
        # "a\x00b" and "a b" would be told apart here but not in logs or the Studio
        raise InvalidRequest(f"the end user ({source}) holds a control character")
    return text
