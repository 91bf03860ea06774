"""Byte-faithful JSON bodies: top-level fields and list items kept as :class:`msgspec.Raw`.

The gateway re-encodes a request only where it changes something (``model`` routing, the memory
block); every other value is written back as the exact bytes the caller sent, so fields the
gateway does not know pass through unchanged and the serialised prefix of a conversation stays
byte-identical between turns (prompt caches keep hitting). Whitespace between top-level tokens is
not kept (``{"a": 1}`` is forwarded as ``{"a":1}``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from shared.errors import InvalidRequest

T = TypeVar("T")
Fields = dict[str, Any]
"""Top-level fields of a body: ``msgspec.Raw`` for values kept as sent, anything else re-encoded."""

_encoder = msgspec.json.Encoder()


def _invalid_json(exc: Exception) -> InvalidRequest:
    if isinstance(exc, RecursionError):
        return InvalidRequest("request body is nested too deeply", code="invalid_json")
    return InvalidRequest(f"request body is not valid JSON: {exc}", code="invalid_json")


def decode_fields(raw: bytes) -> Fields:
    """The top-level object of ``raw`` as ``{name: msgspec.Raw}`` (order kept).

    Raises:
        InvalidRequest: malformed JSON (``code="invalid_json"``) or not a JSON object.
    """
    try:
        return msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError as exc:
        raise InvalidRequest("request body must be a JSON object") from exc
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _invalid_json(exc) from exc


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
        raise _invalid_json(exc) from exc


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
