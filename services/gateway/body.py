"""Request bodies: size- and time-limited reading (validation is each format's, ``shared/formats``).

A client that hangs up during the upload raises Starlette's ``ClientDisconnect``, answered
quietly by :func:`services.gateway.errors.client_disconnect_handler`; a body that does not
arrive within ``Settings.body_read_timeout_s`` is a 408 (RFC 9110 §15.5.9 "408 Request
Timeout") in the route's error shape. Bodies are JSON, so UTF-8 (RFC 8259 §8.1) and uncoded: a
``Content-Encoding`` other than ``identity`` is a 415 (the gateway would otherwise forward the
coding's name with a body it re-encoded), and invalid UTF-8 anywhere in the body (also in a
field the gateway passes through unread) a 400. A leading byte order mark is dropped (RFC 8259
§8.1: a parser MAY ignore it; some Windows tools write one), so it is neither refused nor
forwarded.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request

from shared.errors import InvalidRequest, PayloadTooLarge, RequestTimeout, UnsupportedMediaType

BOM = "\ufeff".encode()
"""UTF-8 byte order mark (EF BB BF)."""


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The whole body (without a leading byte order mark), refusing more than ``limit`` bytes.

    Never reads past ``limit``.

    Args:
        request: the incoming request.
        limit: the largest accepted body (bytes).
        timeout_s: the longest wait for the whole body (seconds).

    Raises:
        PayloadTooLarge: ``Content-Length`` or the bytes actually received exceed ``limit``.
        UnsupportedMediaType: a ``Content-Encoding`` other than ``identity``.
        InvalidRequest: the body is not valid UTF-8.
        RequestTimeout: the body was not complete within ``timeout_s``.
        starlette.requests.ClientDisconnect: the client hung up before the body ended.
    """
    coding = request.headers.get("content-encoding", "identity").strip().lower()
    if coding not in ("", "identity"):
        raise UnsupportedMediaType(
            f"request bodies are read as plain JSON: content-encoding {coding[:40]!r} is not "
            "supported (send the body uncompressed)"
        )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes")
    try:
        async with asyncio.timeout(timeout_s):
            raw = await _read(request, limit)
    except TimeoutError as exc:
        raise RequestTimeout(
            f"the request body did not arrive within {timeout_s:g} s "
            "(MNEMOGATE_BODY_READ_TIMEOUT_S)"
        ) from exc
    _require_utf8(raw)
    return raw.removeprefix(BOM)


def _require_utf8(raw: bytes) -> None:
    """Refuse a body that is not UTF-8 (an ASCII body, the common case, is one ``isascii``).

    Raises:
        InvalidRequest: invalid UTF-8 at some byte (``code="invalid_json"``).
    """
    if raw.isascii():
        return
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"request body is not valid UTF-8 (byte {exc.start}): JSON text must be UTF-8",
            code="invalid_json",
        ) from exc


async def _read(request: Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
