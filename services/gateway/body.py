"""Request bodies: size-limited reading (validation is each format's, ``shared/formats``)."""

from __future__ import annotations

from starlette.requests import Request

from shared.errors import PayloadTooLarge


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
