"""Relaying the upstream answer to the client: whole JSON answers and SSE streams.

Streams are relayed chunk by chunk as they arrive (usage events included: nothing is filtered).
An upstream failure after the status line ends the stream with an in-band error event in the
route's format, and so does a stream the upstream ends cleanly without its format's successful
terminal event (``shared/formats/stream_end.py``); a client disconnect closes the upstream
response, which aborts the upstream request. ``on_success(answer_text)`` runs only when the
exchange ended well (``answer_text()`` decodes the assistant's text; a hook that does not call it
costs no decoding): a 2xx JSON answer, or a stream that reached its format's successful end. It
runs after the response, or — ``durable`` (embedded mode: it records the learning job in SQLite) —
before the response's last byte: before a JSON answer is sent, before a stream's successful end
event is relayed, and before the end of a non-SSE body, so a crash never loses an exchange the
client saw end (docs/ARCHITECTURE.md, "Embedded-mode durability").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus

import aiohttp
import anyio
import msgspec
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
AnswerText = Callable[[], str]
"""Decodes the assistant's text of the relayed answer when called (not before)."""
OnSuccess = Callable[[AnswerText], Awaitable[None]]
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


@dataclass(frozen=True)
class _Answer:
    """How the answer goes back: extra client headers, header policy, learning hook, format."""

    extra: dict[str, str]
    policy: HeaderPolicy
    on_success: OnSuccess | None
    fmt: WireFormat
    durable: bool


async def relay(
    up: Upstream,
    extra: dict[str, str],
    policy: HeaderPolicy,
    on_success: OnSuccess | None,
    fmt: WireFormat,
    *,
    stream: bool = False,
    durable: bool = False,
) -> Response:
    """POST ``up`` and relay the answer: as SSE when ``stream``, else whole JSON.

    ``extra``: headers added to the client response; ``on_success(answer_text)`` runs when the
    exchange ended well, before the last byte when ``durable`` (see the module docstring).
    """
    answer = _Answer(extra, policy, on_success, fmt, durable)
    if stream:
        return await _relay_stream(up, answer)
    return await _relay_json(up, answer)


async def _relay_json(up: Upstream, answer: _Answer) -> Response:
    """POST, read the whole answer and pass it back (status, headers, body unchanged)."""
    reply = await proxy.post(up.session, up.provider, up.path, up.body, up.headers)
    task = None
    on_success = answer.on_success
    if reply.status < HTTPStatus.MULTIPLE_CHOICES and on_success is not None:
        text = partial(answer.fmt.assistant_text, reply.body)
        if answer.durable:
            await _if_answer(reply.body, on_success, text)
        else:
            task = BackgroundTask(_if_answer, reply.body, on_success, text)
    response = Response(reply.body, status_code=reply.status, background=task)
    return _with_headers(response, reply.headers, answer.extra, answer.policy)


_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])


def is_answer(body: bytes) -> bool:
    """Whether a 2xx ``body`` is a whole JSON object without an ``error``, as answers are.

    A proxy's HTML page, a body cut short or an error object sent with a 2xx status
    (``{"error": {...}}``, Anthropic's ``{"type": "error", ...}``) is relayed as it came but
    teaches nothing: the exchange did not succeed.
    """
    try:
        fields = _OBJECT.decode(body)
    except msgspec.DecodeError:
        return False
    return "error" not in fields


async def _if_answer(body: bytes, on_success: OnSuccess, text: Callable[[], str]) -> None:
    """``on_success(text)`` when ``body`` :func:`is_answer`."""
    if is_answer(body):
        await on_success(text)


async def _whole_error(upstream: aiohttp.ClientResponse, up: Upstream, answer: _Answer) -> Response:
    """An error status before the first byte: forwarded whole, nothing learned."""
    try:
        async with proxy.upstream_errors(up.provider):
            content = await upstream.read()
    finally:
        upstream.release()
    response = Response(content, status_code=upstream.status)
    return _with_headers(response, upstream.headers, answer.extra, answer.policy)


class _StreamLearner:
    """Runs ``on_success`` at most once, when a relayed stream ended well.

    Well: an SSE stream whose format's successful terminal event arrived (``watch.status`` is
    ``ok``), or a non-SSE body (a whole JSON answer to a streaming request) that ended cleanly.
    """

    def __init__(self, on_success: OnSuccess | None, fmt: WireFormat, *, sse: bool) -> None:
        self.on_success = on_success
        self.fmt = fmt
        self.sse = sse
        self.watch = StreamEnd(fmt.event_status)
        self.kept = bytearray()
        self.clean_end = False  # the upstream body ended without a transport failure
        self.done = False

    def feed(self, chunk: bytes) -> None:
        """Keep ``chunk`` (up to :data:`SSE_CAPTURE_LIMIT` bytes) and follow its events."""
        if len(self.kept) < SSE_CAPTURE_LIMIT:
            self.kept.extend(chunk)
        self.watch.feed(chunk)

    async def learn(self) -> None:
        """Call ``on_success(answer_text)`` if the exchange ended well and it has not run."""
        if self.done or self.on_success is None:
            return
        if self.sse and self.watch.status == "ok":
            self.done = True
            await self.on_success(self._stream_text)
        elif not self.sse and self.clean_end:
            self.done = True
            await _if_answer(bytes(self.kept), self.on_success, self._body_text)

    def _stream_text(self) -> str:
        """The assistant's text of the kept stream events."""
        return self.fmt.stream_outcome(bytes(self.kept)).text

    def _body_text(self) -> str:
        """The assistant's text of the kept non-SSE body."""
        return self.fmt.assistant_text(bytes(self.kept))


async def _relay_stream(up: Upstream, answer: _Answer) -> Response:
    """POST and relay the SSE answer as it arrives (an error status is relayed whole).

    An upstream that answers a streaming request with a whole JSON body (not
    ``text/event-stream``) is relayed as is, and learned from after it ended cleanly. Learning
    happens only when the format's successful terminal event arrived (clients may hang up right
    after it); an early end, a failure or a non-success end teaches nothing.
    """
    upstream = await proxy.open_stream(up.session, up.provider, up.path, up.body, up.headers)
    if upstream.status >= HTTPStatus.MULTIPLE_CHOICES:
        return await _whole_error(upstream, up, answer)
    sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
    durable, fmt = answer.durable, answer.fmt
    learner = _StreamLearner(answer.on_success, fmt, sse=sse)
    at_boundary = True  # the relayed bytes end between two events

    async def relay() -> AsyncIterator[bytes]:
        nonlocal at_boundary
        try:
            async for chunk in proxy.iter_stream(upstream, up.provider):
                learner.feed(chunk)
                at_boundary = chunk.endswith((b"\n\n", b"\r\n\r\n"))
                if durable:
                    await learner.learn()  # before the end event: clients may stop there
                yield chunk
            learner.clean_end = True
            if sse and learner.watch.finish() == "open":
                raise UpstreamUnavailable(EARLY_END, code="upstream_incomplete")
            if durable:
                await learner.learn()  # before the end of the body is sent
        except MnemogateError as exc:
            # The status line is already sent: report the failure in-band and end the stream
            # (after a blank line when the upstream was cut inside an event).
            event = fmt.stream_error(exc.message, exc.type, exc.code, bytes(learner.kept))
            yield event if at_boundary else b"\n\n" + event
        finally:
            # Runs on normal end and when the client disconnects (the task is cancelled):
            # closing the upstream response aborts the upstream request.
            if learner.clean_end:
                upstream.release()
            else:
                upstream.close()

    response = ClosingStreamingResponse(
        relay(), status_code=upstream.status, background=BackgroundTask(learner.learn)
    )
    return _with_headers(response, upstream.headers, answer.extra, answer.policy)


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
