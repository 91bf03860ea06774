"""Relaying the upstream answer to the client: whole JSON answers and SSE streams.

Streams are relayed chunk by chunk as they arrive (usage events included: nothing is filtered).
An upstream failure after the status line ends the stream with an in-band error event in the
route's format; a client disconnect closes the upstream response, which aborts the upstream
request. ``on_success(assistant_text)`` runs after the response only when the exchange ended
well: a 2xx JSON answer, or a stream that reached its format's successful end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

import aiohttp
import anyio
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse
from starlette.types import Send

from services.gateway import proxy
from services.gateway.headers import HeaderPolicy, client_response_headers
from shared.errors import MnemogateError
from shared.formats.base import WireFormat
from shared.settings import ProviderConfig

SSE_CAPTURE_LIMIT = 1 << 20  # bytes of a stream kept to read the assistant text for learning
OnSuccess = Callable[[str], Awaitable[None]]


class ClosingStreamingResponse(StreamingResponse):
    """A StreamingResponse that always closes its body iterator.

    Even when cancelled by a client disconnect, so the iterator's cleanup (closing the upstream
    request) runs deterministically.
    """

    async def stream_response(self, send: Send) -> None:
        """Stream the body; on any exit close the iterator under a shielded cancel scope."""
        try:
            await super().stream_response(send)
        finally:
            with anyio.CancelScope(shield=True):
                aclose = getattr(self.body_iterator, "aclose", None)
                if aclose is not None:
                    await aclose()


@dataclass
class Upstream:
    """Where and what to send: session, provider, path, body bytes and request headers."""

    session: aiohttp.ClientSession
    provider: ProviderConfig
    path: str
    body: bytes
    headers: Mapping[str, str]


def _with_headers(
    response: Response, upstream: Mapping[str, str], extra: dict[str, str], policy: HeaderPolicy
) -> Response:
    response.raw_headers.extend(client_response_headers(upstream, policy))
    response.raw_headers.extend(
        (k.encode(), v.encode("latin-1", "replace")) for k, v in extra.items()
    )
    return response


async def relay_json(
    up: Upstream,
    extra: dict[str, str],
    policy: HeaderPolicy,
    on_success: OnSuccess | None,
    fmt: WireFormat,
) -> Response:
    """POST, read the whole answer and pass it back (status, headers, body unchanged)."""
    reply = await proxy.post(up.session, up.provider, up.path, up.body, up.headers)
    task = None
    if reply.status < HTTPStatus.MULTIPLE_CHOICES and on_success is not None:
        task = BackgroundTask(on_success, fmt.assistant_text(reply.body))
    response = Response(reply.body, status_code=reply.status, background=task)
    return _with_headers(response, reply.headers, extra, policy)


async def relay_stream(
    up: Upstream,
    extra: dict[str, str],
    policy: HeaderPolicy,
    on_success: OnSuccess | None,
    fmt: WireFormat,
) -> Response:
    """POST and relay the SSE answer as it arrives (an error status is relayed whole)."""
    upstream = await proxy.open_stream(up.session, up.provider, up.path, up.body, up.headers)
    if upstream.status >= HTTPStatus.MULTIPLE_CHOICES:
        # An error before the first byte: forward it whole, learn nothing.
        try:
            async with proxy.upstream_errors(up.provider):
                content = await upstream.read()
        finally:
            upstream.release()
        response = Response(content, status_code=upstream.status)
        return _with_headers(response, upstream.headers, extra, policy)

    kept = bytearray()
    ended = False
    at_boundary = True  # the relayed bytes end between two events

    async def relay() -> AsyncIterator[bytes]:
        nonlocal ended, at_boundary
        try:
            async for chunk in proxy.iter_stream(upstream, up.provider):
                if len(kept) < SSE_CAPTURE_LIMIT:
                    kept.extend(chunk)
                at_boundary = chunk.endswith((b"\n\n", b"\r\n\r\n"))
                yield chunk
            ended = True
        except MnemogateError as exc:
            # The status line is already sent: report the failure in-band and end the stream
            # (after a blank line when the upstream was cut inside an event).
            event = fmt.stream_error(exc.message, exc.type, exc.code, bytes(kept))
            yield event if at_boundary else b"\n\n" + event
        finally:
            # Runs on normal end and when the client disconnects (the task is cancelled):
            # closing the upstream response aborts the upstream request.
            if ended:
                upstream.release()
            else:
                upstream.close()

    async def after_stream() -> None:
        # Complete when the format's successful end event arrived (clients may hang up right
        # after it) or the upstream ended the stream normally without reporting a failure.
        outcome = fmt.stream_outcome(bytes(kept))
        if on_success is not None and (
            outcome.status == "ok" or (ended and outcome.status == "open")
        ):
            await on_success(outcome.text)

    response = ClosingStreamingResponse(
        relay(), status_code=upstream.status, background=BackgroundTask(after_stream)
    )
    return _with_headers(response, upstream.headers, extra, policy)
