"""Decoding of management request bodies and query strings, and JSON encoding of results.

Malformed JSON, wrong types, unknown fields and out-of-range values become
:class:`shared.errors.InvalidRequest` (HTTP 400 in the one error shape).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from services.gateway.body import read_body
from services.gateway.state import state_of
from shared.errors import InvalidRequest
from shared.formats.raw import invalid_json
from shared.json_numbers import integral_floats_to_int

T = TypeVar("T")
_encoder = msgspec.json.Encoder()


async def decode_body(request: Request, type_: type[T], *, required: bool = True) -> T:
    """The JSON body of ``request`` (at most ``max_body_bytes``) decoded as ``type_``.

    An empty (or all-whitespace) body is refused when ``required`` (as the OpenAPI document
    states), else decodes as ``{}``.

    Raises:
        InvalidRequest: empty but required, not JSON, or not valid for ``type_``.
        PayloadTooLarge: body too big.
        RequestTimeout: the body did not arrive within ``body_read_timeout_s``.
    """
    settings = state_of(request).settings
    raw = await read_body(request, settings.max_body_bytes, settings.body_read_timeout_s)
    if not raw.strip():
        if required:
            raise InvalidRequest("a JSON request body is required", code="missing_body")
        raw = b"{}"
    try:
        value = msgspec.json.decode(raw)
        if (
            isinstance(value, dict)
            and isinstance(type_, type)
            and issubclass(type_, msgspec.Struct)
        ):
            value = integral_floats_to_int(value, type_)
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(f"invalid request body: {exc}") from exc
    except (msgspec.DecodeError, RecursionError) as exc:
        raise invalid_json(exc, raw) from exc


def decode_query(request: Request, type_: type[T]) -> T:
    """The query string of ``request`` converted to ``type_``.

    (strings → ints/bools; repeated parameters keep the last value).

    Raises:
        InvalidRequest: an unknown parameter or a value of the wrong type.
    """
    params: dict[str, Any] = dict(request.query_params)
    try:
        return msgspec.convert(params, type_, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(f"invalid query parameter: {exc}") from exc


def json_response(value: Any, status: int = 200) -> Response:
    """``value`` (msgspec structs, dicts, lists) as an ``application/json`` response."""
    return Response(_encoder.encode(value), status_code=status, media_type="application/json")
