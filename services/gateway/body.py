"""Request bodies: size- and time-limited reading (validation is each format's, ``shared/formats``).

A client that hangs up during the upload raises Starlette's ``ClientDisconnect``, answered
quietly by :func:`services.gateway.errors.client_disconnect_handler`; a body that does not
arrive within ``Settings.body_read_timeout_s`` is a 408 (RFC 9110 §15.5.9 "408 Request
Timeout") in the route's error shape.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request

from shared.errors import PayloadTooLarge, RequestTimeout


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The whole body, refusing more than ``limit`` bytes without reading past it.

    Args:
        request: the incoming request.
        limit: the largest accepted body (bytes).
        timeout_s: the longest wait for the whole body (seconds).

    Raises:
        PayloadTooLarge: ``Content-Length`` or the bytes actually received exceed ``limit``.
        RequestTimeout: the body was not complete within ``timeout_s``.
        starlette.requests.ClientDisconnect: the client hung up before the body ended.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes")
    try:
        async with asyncio.timeout(timeout_s):
            return await _read(request, limit)
    except TimeoutError as exc:
        raise RequestTimeout(
            f"the request body did not arrive within {timeout_s:g} s "
            "(MNEMOGATE_BODY_READ_TIMEOUT_S)"
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
