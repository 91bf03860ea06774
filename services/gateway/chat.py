"""``POST /v1/chat/completions``: authenticate → recall → inject → proxy → enqueue learning.

The request path never writes memories and never calls an LLM for extraction (DESIGN §1). If
recall fails or exceeds its time budget the request goes upstream unchanged and the response
carries ``x-mnemogate-memory-degraded``. Streaming responses are forwarded chunk by chunk; a
client disconnect cancels the upstream request.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator

import anyio
import msgspec
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Send

from services.gateway import proxy
from services.gateway.auth import authenticate_client
from services.gateway.body import parse_chat_request, read_body
from services.gateway.sse import (
    assistant_text_from_json,
    assistant_text_from_sse,
    sse_error_event,
)
from services.gateway.state import GatewayState
from shared.errors import MnemogateError
from shared.injection import ProviderCapabilities, all_user_texts
from shared.jobs.payloads import LEARN, LearnPayload, RecordAccessPayload
from shared.models import Scope
from shared.recall_assist import assist_for
from shared.recall_flow import MemoryPlan, plan_memory
from shared.settings import ProviderConfig
from shared.turn_context import BEFORE, assistant_replies

log = logging.getLogger("mnemogate.gateway")

NO_MEMORY_HEADERS = ("x-mnemogate-no-memory", "x-omniroute-no-memory")
NO_LEARN_HEADERS = ("x-mnemogate-no-learn",)
SESSION_HEADERS = ("x-mnemogate-session-id", "x-omniroute-session-id")
TRUTHY = frozenset({"1", "true", "yes", "on"})
SSE_CAPTURE_LIMIT = 1 << 20  # bytes of a stream kept to read the assistant text for learning
_encoder = msgspec.json.Encoder()


class ClosingStreamingResponse(StreamingResponse):
    """A StreamingResponse that always closes its body iterator, even when cancelled by a client
    disconnect, so the iterator's cleanup (closing the upstream request) runs deterministically."""

    async def stream_response(self, send: Send) -> None:
        """Stream the body; on any exit close the iterator under a shielded cancel scope."""
        try:
            await super().stream_response(send)
        finally:
            with anyio.CancelScope(shield=True):
                aclose = getattr(self.body_iterator, "aclose", None)
                if aclose is not None:
                    await aclose()


def _header(request: Request, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = request.headers.get(name)
        if value:
            return value.strip()
    return None


def header_flag(request: Request, names: tuple[str, ...]) -> bool:
    """True when one of the headers ``names`` is set to 1/true/yes/on (case-insensitive)."""
    value = _header(request, names)
    return value is not None and value.lower() in TRUTHY


async def chat_completions(request: Request) -> Response:
    """Handle one chat completion request (JSON or SSE)."""
    state: GatewayState = request.app.state.gateway
    settings = state.settings
    key = await authenticate_client(request, state.store)
    raw = await read_body(request, settings.max_body_bytes)
    body = parse_chat_request(raw)
    provider, upstream_model = proxy.select_provider(body["model"], state.providers)
    body["model"] = upstream_model

    end_user = request.headers.get("x-mnemogate-user") or body.get("user") or ""
    session_id = _header(request, SESSION_HEADERS)
    scope = Scope(owner_id=key.id, user_id=end_user[:256], session_id=session_id)
    use_memory = settings.memory_enabled and not header_flag(request, NO_MEMORY_HEADERS)
    # x-mnemogate-no-learn: recall but learn nothing (title generation, evaluation probes, ...)
    learn_enabled = use_memory and not header_flag(request, NO_LEARN_HEADERS)
    now = time.time()

    # learning reads the caller's own messages, never the injected copy
    user_turns = all_user_texts(body["messages"]) if learn_enabled else []
    # the replies around the turns a learn job can learn (its window, and the context of the
    # turns before it) are enough
    window = settings.learn_max_turns + BEFORE + 1
    replies = assistant_replies(body["messages"], keep_last=window) if learn_enabled else []
    headers = {"x-mnemogate-memory-injected": "0", "x-mnemogate-memory-tier": "none"}
    plan: MemoryPlan | None = None
    if use_memory:
        caps = ProviderCapabilities(
            rejects_system_role=provider.rejects_system_role,
            system_must_be_first=provider.system_must_be_first,
            top_level_system=provider.top_level_system,
        )
        plan = await plan_memory(
            state.store,
            state.jobs.detector,
            settings,
            scope,
            body,
            caps,
            now,
            state.jobs.engine,
            assist_for(settings, state.jobs.http, state.providers, state.jobs.detector),
        )
        body = plan.body
        headers["x-mnemogate-memory-injected"] = str(len(plan.memory_ids))
        headers["x-mnemogate-memory-tier"] = plan.tier
        if plan.degraded:
            headers["x-mnemogate-memory-degraded"] = plan.degraded

    upstream_body = _encoder.encode(body)
    learn = (
        LearnPayload(
            owner_id=key.id,
            user_id=scope.user_id,
            session_id=session_id,
            user_turns=user_turns,
            replies=replies,
            created_at=now,
            request_id=secrets.token_hex(8),
        )
        if user_turns and user_turns[-1].strip()
        else None
    )
    access = (
        RecordAccessPayload(
            memory_ids=plan.memory_ids, at=now, owner_id=key.id, user_id=scope.user_id
        )
        if plan is not None and plan.memory_ids
        else None
    )

    if body.get("stream") is True:
        return await _stream(state, provider, upstream_body, headers, learn, access)

    reply = await proxy.post_json(state.upstream, provider, "/chat/completions", upstream_body)
    headers.update(reply.headers)
    background = None
    if reply.status < 300:
        assistant = ""
        with contextlib.suppress(msgspec.DecodeError):
            assistant = assistant_text_from_json(msgspec.json.decode(reply.body))
        background = BackgroundTask(_after_success, state, learn, access, assistant)
    return Response(
        reply.body,
        status_code=reply.status,
        headers=headers,
        media_type=reply.media_type,
        background=background,
    )


async def _stream(
    state: GatewayState,
    provider: ProviderConfig,
    upstream_body: bytes,
    headers: dict[str, str],
    learn: LearnPayload | None,
    access: RecordAccessPayload | None,
) -> Response:
    upstream = await proxy.open_stream(state.upstream, provider, "/chat/completions", upstream_body)
    headers.update(proxy.response_headers(upstream.headers))
    media_type = upstream.headers.get("content-type", "text/event-stream")
    if upstream.status >= 300:
        # An error before the first byte: forward it whole, learn nothing (CASES S1).
        try:
            async with proxy.upstream_errors(provider):
                content = await upstream.read()
        finally:
            upstream.release()
        return Response(
            content, status_code=upstream.status, headers=headers, media_type=media_type
        )

    kept = bytearray()
    ended = False

    async def relay() -> AsyncIterator[bytes]:
        nonlocal ended
        try:
            async for chunk in proxy.iter_stream(upstream, provider):
                if len(kept) < SSE_CAPTURE_LIMIT:
                    kept.extend(chunk)
                yield chunk
            ended = True
        except MnemogateError as exc:
            # The status line is already sent: report the failure in-band, as an SSE error
            # event in the documented error shape, and end the stream.
            yield sse_error_event(exc.message, exc.type, exc.code)
        finally:
            # Runs on normal end and when the client disconnects (the task is cancelled):
            # closing the upstream response aborts the upstream request.
            if ended:
                upstream.release()
            else:
                upstream.close()

    async def after_stream() -> None:
        # The exchange counts as complete when the upstream sent [DONE] (clients may hang up
        # right after it) or ended the stream normally; a stream cut short learns nothing.
        text, done = assistant_text_from_sse(bytes(kept))
        if done or ended:
            await _after_success(state, learn, access, text)

    return ClosingStreamingResponse(
        relay(),
        status_code=upstream.status,
        headers=headers,
        media_type=media_type,
        background=BackgroundTask(after_stream),
    )


async def _after_success(
    state: GatewayState,
    learn: LearnPayload | None,
    access: RecordAccessPayload | None,
    assistant_text: str,
) -> None:
    """Enqueue learning and access recording after a successful upstream answer."""
    try:
        if access is not None and state.access is not None:
            state.access.add(access.owner_id, access.user_id, access.memory_ids)
        if learn is not None:
            payload = msgspec.structs.replace(learn, assistant_text=assistant_text[:4000])
            await state.queue.enqueue(LEARN, payload)
    except Exception:
        log.exception("could not enqueue background jobs")
