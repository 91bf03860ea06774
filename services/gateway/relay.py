"""Relaying the upstream answer to the client: whole JSON answers and SSE streams.

Streams are relayed chunk by chunk as they arrive (usage events included: nothing is filtered).
An upstream failure after the status line ends the stream with an in-band error event in the
route's format, and so does a stream the upstream ends cleanly without its format's successful
terminal event (``shared/formats/stream_end.py``); a client disconnect closes the upstream
response, which aborts the upstream request. ``on_success(assistant_text)`` runs after the
response only when the exchange ended well: a 2xx JSON answer, or a stream that reached its
format's successful end.
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
from shared.errors import MnemogateError, UpstreamUnavailable
from shared.formats.base import WireFormat
from shared.formats.stream_end import StreamEnd
from shared.settings import ProviderConfig

SSE_CAPTURE_LIMIT = 1 << 20  # bytes of a stream kept to read the assistant text for learning
OnSuccess = Callable[[str], Awaitable[None]]
EARLY_END = "the upstream ended the stream before its final event: the answer is incomplete"


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


async def _whole_error(
    upstream: aiohttp.ClientResponse, up: Upstream, extra: dict[str, str], policy: HeaderPolicy
) -> Response:
    """An error status before the first byte: forwarded whole, nothing learned."""
    try:
        async with proxy.upstream_errors(up.provider):
            content = await upstream.read()
    finally:
        upstream.release()
    response = Response(content, status_code=upstream.status)
    return _with_headers(response, upstream.headers, extra, policy)


async def relay_stream(
    up: Upstream,
    extra: dict[str, str],
    policy: HeaderPolicy,
    on_success: OnSuccess | None,
    fmt: WireFormat,
) -> Response:
    """POST and relay the SSE answer as it arrives (an error status is relayed whole).

    An upstream that answers a streaming request with a whole JSON body (not
    ``text/event-stream``) is relayed as is, and learned from after it ended cleanly.
    """
    upstream = await proxy.open_stream(up.session, up.provider, up.path, up.body, up.headers)
    if upstream.status >= HTTPStatus.MULTIPLE_CHOICES:
        return await _whole_error(upstream, up, extra, policy)
    sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
    kept = bytearray()
    watch = StreamEnd(fmt.event_status)
    at_boundary = True  # the relayed bytes end between two events
    clean_end = False  # the upstream body ended without a transport failure

    async def relay() -> AsyncIterator[bytes]:
        nonlocal at_boundary, clean_end
        try:
            async for chunk in proxy.iter_stream(upstream, up.provider):
                if len(kept) < SSE_CAPTURE_LIMIT:
                    kept.extend(chunk)
                at_boundary = chunk.endswith((b"\n\n", b"\r\n\r\n"))
                watch.feed(chunk)
                yield chunk
            clean_end = True
            if sse and watch.finish() == "open":
                raise UpstreamUnavailable(EARLY_END, code="upstream_incomplete")
        except MnemogateError as exc:
            # The status line is already sent: report the failure in-band and end the stream
            # (after a blank line when the upstream was cut inside an event).
            event = fmt.stream_error(exc.message, exc.type, exc.code, bytes(kept))
            yield event if at_boundary else b"\n\n" + event
        finally:
            # Runs on normal end and when the client disconnects (the task is cancelled):
            # closing the upstream response aborts the upstream request.
            if clean_end:
                upstream.release()
            else:
                upstream.close()

    async def after_stream() -> None:
        # Learn only when the format's successful terminal event arrived (clients may hang up
        # right after it); an early end, a failure or a non-success end teaches nothing.
        if on_success is None:
            return
        if sse and watch.status == "ok":
            await on_success(fmt.stream_outcome(bytes(kept)).text)
        elif not sse and clean_end:
            await on_success(fmt.assistant_text(bytes(kept)))

    response = ClosingStreamingResponse(
        relay(), status_code=upstream.status, background=BackgroundTask(after_stream)
    )
    return _with_headers(response, upstream.headers, extra, policy)


async def relay_raw(
    up: Upstream, method: str, extra: dict[str, str], policy: HeaderPolicy, fmt: WireFormat
) -> Response:
    """Send ``method`` and relay the answer as it arrives, whatever it is (JSON or SSE).

    No capture, no success check: for pass-through routes that neither recall nor learn. A
    transport failure after the status line ends an SSE answer with ``fmt``'s in-band error
    event and simply ends any other answer.
    """
    upstream = await proxy.open_stream(
        up.session, up.provider, up.path, up.body, up.headers, method=method
    )
    sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
    clean_end = False

    async def relay() -> AsyncIterator[bytes]:
        nonlocal clean_end
        try:
            async for chunk in proxy.iter_stream(upstream, up.provider):
                yield chunk
            clean_end = True
        except MnemogateError as exc:
            if sse:
                yield b"\n\n" + fmt.stream_error(exc.message, exc.type, exc.code, b"")
        finally:
            if clean_end:
                upstream.release()
            else:
                upstream.close()

    response = ClosingStreamingResponse(relay(), status_code=upstream.status)
    return _with_headers(response, upstream.headers, extra, policy)
