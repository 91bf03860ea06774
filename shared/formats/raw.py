"""Byte-faithful JSON bodies: top-level fields and list items kept as :class:`msgspec.Raw`.

The gateway re-encodes a request only where it changes something (``model`` routing, the memory
block); every other value is written back as the exact bytes the caller sent, so fields the
gateway does not know pass through unchanged and the serialised prefix of a conversation stays
byte-identical between turns (prompt caches keep hitting). Whitespace between top-level tokens is
not kept (``{"a": 1}`` is forwarded as ``{"a":1}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from shared.errors import InvalidRequest

T = TypeVar("T")
Fields = dict[str, Any]
"""Top-level fields of a body: ``msgspec.Raw`` for values kept as sent, anything else re-encoded."""

_encoder = msgspec.json.Encoder()


#: A ``\uXXXX`` escape of a UTF-16 surrogate not part of a high+low pair (RFC 8259 §7), preceded by
#: an even number of backslashes (so it is an escape, not an escaped backslash and text).
_LONE_SURROGATE = re.compile(
    rb"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def invalid_json(exc: Exception, raw: bytes) -> InvalidRequest:
    """The 400 (``code="invalid_json"``) for ``raw`` that msgspec could not decode (``exc``).

    A lone surrogate escape is named as such (msgspec's own message for it, "Input data was
    truncated", misleads); nesting too deep (``RecursionError``) likewise. Pure.
    """
    if isinstance(exc, RecursionError):
        return InvalidRequest("request body is nested too deeply", code="invalid_json")
    lone = _LONE_SURROGATE.search(raw)
    if lone is not None:  # msgspec reports it as "Input data was truncated" or a bad pair
        escape = lone.group(1).decode("ascii")
        return InvalidRequest(
            f"invalid JSON: lone surrogate {escape} at byte {lone.start(1)} (a \\ud800-\\udbff "
            "escape must be followed by a \\udc00-\\udfff one; JSON text must be valid Unicode)",
            code="invalid_json",
        )
    return InvalidRequest(f"request body is not valid JSON: {exc}", code="invalid_json")


def reject_duplicate_key(raw: bytes, key: str) -> None:
    """Refuse a body whose top-level object names ``key`` more than once.

    JSON parsers disagree on duplicate names (RFC 8259 §4: "the names within an object SHOULD
    be unique"; most keep the last, some the first, some refuse), so a body with two ``model``
    keys could be routed on one value and answered with another. Only bodies where the quoted
    name occurs twice anywhere are parsed again (stdlib ``json``, values discarded).

    Raises:
        InvalidRequest: ``key`` occurs twice at the top level (``code="duplicate_key"``).
    """
    if raw.count(b'"' + key.encode() + b'"') <= 1:
        return
    last: list[list[tuple[str, Any]]] = [[]]

    def keep(pairs: list[tuple[str, Any]]) -> None:
        last[0] = pairs  # the top-level object is the last one completed

    try:
        json.loads(raw, object_pairs_hook=keep)
    except (ValueError, RecursionError) as exc:
        raise invalid_json(exc, raw) from exc
    if sum(1 for name, _ in last[0] if name == key) > 1:
        raise InvalidRequest(
            f"duplicate key '{key}' in the request body: send it once", code="duplicate_key"
        )


def decode_fields(raw: bytes) -> Fields:
    """The top-level object of ``raw`` as ``{name: msgspec.Raw}`` (order kept).

    Raises:
        InvalidRequest: malformed JSON (``code="invalid_json"``; a lone surrogate escape is named
            as such), not a JSON object, or two top-level ``model`` keys (``duplicate_key``).
    """
    try:
        fields = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError as exc:
        raise InvalidRequest("request body must be a JSON object") from exc
    except (msgspec.DecodeError, RecursionError) as exc:
        raise invalid_json(exc, raw) from exc
    reject_duplicate_key(raw, "model")
    return fields


def decode_typed(raw: bytes, type_: type[T]) -> T:
    """Decode ``raw`` as ``type_`` (unknown fields ignored), mapping errors to 400.

    Raises:
        InvalidRequest: malformed JSON (``invalid_json``) or a missing/wrong-typed field
            (``invalid_request``; the message names the field, e.g. ``at `$.model```).
    """
    try:
        return msgspec.json.decode(raw, type=type_)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(f"invalid request body: {exc}") from exc
    except (msgspec.DecodeError, RecursionError) as exc:
        raise invalid_json(exc, raw) from exc


def raw_items(value: msgspec.Raw) -> list[msgspec.Raw]:
    """The items of a JSON array held in ``value``, each kept as raw bytes (already validated)."""
    return msgspec.json.decode(value, type=list[msgspec.Raw])


def generic(value: msgspec.Raw) -> Any:
    """``value`` decoded to plain Python objects."""
    return msgspec.json.decode(value)


def keep_unchanged(
    new_items: Sequence[Any], old_items: Sequence[Any], old_raw: Sequence[msgspec.Raw]
) -> list[Any]:
    """``new_items`` with unchanged items written back as their original bytes.

    Every object that is one of ``old_items`` (same identity) is replaced by its raw bytes from
    ``old_raw`` (same index as in ``old_items``): unchanged items are written back byte for byte,
    new or changed ones are encoded.
    """
    position = {id(item): i for i, item in enumerate(old_items)}
    out: list[Any] = []
    for item in new_items:
        i = position.get(id(item))
        out.append(old_raw[i] if i is not None and old_items[i] is item else item)
    return out


def encode_fields(fields: Fields) -> bytes:
    """The JSON object of ``fields`` (``msgspec.Raw`` values written verbatim)."""
    return _encoder.encode(fields)


def encode_value(value: Any) -> msgspec.Raw:
    """``value`` encoded once and held as raw bytes."""
    return msgspec.Raw(_encoder.encode(value))
