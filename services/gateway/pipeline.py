"""The one request flow of every memory route (chat completions, responses, messages).

authenticate → read and validate the body (the route's :class:`WireFormat`) → select the
provider (``provider/model``) and check it speaks the format → decide the end user, the memory
switches and a forget request (:mod:`services.gateway.memory_control`; a forget is queued as a
job) and the scope → recall one block for the newest user input (leaving out what a forget
names) and let the format place it → forward with the client's headers → relay JSON or SSE →
after a successful end, enqueue learning and access recording. The request path never writes
memories and never calls an LLM; a memory failure sends the request upstream unchanged with
``x-mnemogate-memory-degraded`` (docs/ARCHITECTURE.md). Embeddings use the same steps
without memory (:func:`serve_plain`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from services.gateway import proxy
from services.gateway.auth import authenticate_client
from services.gateway.body import read_body
from services.gateway.headers import (
    HeaderPolicy,
    header_map,
    header_policy,
    upstream_request_headers,
)
from services.gateway.memory_control import (
    MemoryControl,
    control_headers,
    enqueue_forget,
    reject_conflicting_identity,
    resolve_control,
)
from services.gateway.observe import current_request_id
from services.gateway.relay import AnswerText, OnSuccess, Upstream, relay
from services.gateway.state import GatewayState, state_of
from services.gateway.switches import request_scope
from shared.formats import raw as rawjson
from shared.formats.base import ParsedRequest, Placement, WireFormat
from shared.injection import ProviderCapabilities
from shared.jobs.payloads import LEARN
from shared.learn_payload import learn_payload
from shared.models import ApiKey, Scope
from shared.recall_assist import assist_for
from shared.recall_flow import recall_block
from shared.settings import ProviderConfig

log = logging.getLogger("mnemogate.gateway")


@dataclass
class Call:
    """One authenticated, validated request on its way upstream."""

    state: GatewayState
    fmt: WireFormat
    key: ApiKey
    parsed: ParsedRequest
    provider: ProviderConfig
    upstream_model: str


@dataclass
class MemoryOutcome:
    """The fields to send and the response headers describing what memory did."""

    fields: rawjson.Fields
    headers: dict[str, str]
    memory_ids: list[int]
    tokens: int = 0


async def begin(request: Request, fmt: WireFormat) -> Call:
    """Authenticate, read, validate and route one request.

    Raises:
        AuthenticationFailed, PayloadTooLarge, RequestTimeout, InvalidRequest: rendered in the
            route's shape.
    """
    state = state_of(request)
    key = await authenticate_client(request, state.store, x_api_key=fmt.x_api_key)
    settings = state.settings
    raw = await read_body(request, settings.max_body_bytes, settings.body_read_timeout_s)
    parsed = fmt.parse(raw)
    provider, upstream_model = proxy.select_provider(parsed.model, state.providers)
    proxy.require_format(provider, fmt.name)
    return Call(state, fmt, key, parsed, provider, upstream_model)


def placement_for(call: Call) -> Placement:
    """The injection strategy and the selected provider's capabilities."""
    p = call.provider
    caps = ProviderCapabilities(
        rejects_system_role=p.rejects_system_role,
        system_must_be_first=p.system_must_be_first,
        top_level_system=p.top_level_system,
        hoists_system=p.hoists_system,
    )
    return Placement(strategy=call.state.settings.injection_strategy, caps=caps)


async def remember(call: Call, scope: Scope, control: MemoryControl, now: float) -> MemoryOutcome:
    """Recall a block for the newest user input and place it (never raises for memory).

    Memories named by a forget request in this input are left out of the block.
    """
    headers = {"x-mnemogate-memory-injected": "0", "x-mnemogate-memory-tier": "none"}
    fields = call.parsed.fields
    if not control.switches.recall:
        return MemoryOutcome(fields, headers, [])
    state = call.state
    settings = state.settings
    detector = state.jobs.detector
    found = await recall_block(
        state.store,
        detector,
        settings,
        scope,
        call.parsed.query,
        now,
        state.jobs.engine,
        forget=control.forget_stems,
        assist=assist_for(settings, state.jobs.http, state.providers, detector),
        conversation=call.parsed.conversation,
    )
    if found.degraded:
        headers["x-mnemogate-memory-degraded"] = found.degraded
    placed = None
    if found.block:
        try:
            placed = call.fmt.place(fields, found.block, placement_for(call))
        except Exception:  # memory must never fail a request (docs/ARCHITECTURE.md)
            log.exception("memory placement failed; forwarding unchanged")
            headers["x-mnemogate-memory-degraded"] = "placement_error"
    if placed is None:  # the tier stays "none": a tier only for what is injected
        return MemoryOutcome(fields, headers, [])
    headers["x-mnemogate-memory-tier"] = found.tier
    headers["x-mnemogate-memory-injected"] = str(len(found.memory_ids))
    return MemoryOutcome(placed, headers, found.memory_ids, found.tokens)


def after_success(
    call: Call,
    scope: Scope,
    control: MemoryControl,
    memory: MemoryOutcome,
    now: float,
    request_id: str,
) -> OnSuccess | None:
    """The callback run after a successful exchange, None when it would have nothing to do.

    Record access (and the tokens injected), enqueue learning from the user's turns (the
    assistant replies in the request and the answer travel as context only: the search context
    of captured turns, :mod:`shared.turn_context`). Only the text of the turns a learn job can
    use is sent: those after the learning cursor in its ``learn_max_turns`` window and their
    context (:mod:`shared.learn_payload`). With learning off and no memory injected there is
    nothing to record, so no callback; with learning off the answer's text is never decoded.
    """
    if not control.switches.learn and not memory.memory_ids:
        return None
    state = call.state
    parsed = call.parsed

    async def done(answer_text: AnswerText) -> None:
        try:
            turns = parsed.user_turns if control.switches.learn else []
            if memory.memory_ids and state.access is not None:
                state.access.add(
                    scope.owner_id, scope.user_id, memory.memory_ids, tokens=memory.tokens
                )
            if turns and turns[-1].strip():
                payload = await learn_payload(
                    state.store.cursors,
                    scope,
                    turns,
                    parsed.conversation(),
                    answer_text(),
                    window=state.settings.learn_max_turns,
                    created_at=now,
                    request_id=request_id,
                )
                await state.queue.enqueue(LEARN, payload)
        except Exception:
            log.exception("could not enqueue background jobs")

    return done


def _upstream(
    call: Call, request: Request, fields: rawjson.Fields, policy: HeaderPolicy
) -> Upstream:
    """The upstream request.

    The caller's own bytes when nothing changed, else ``fields`` encoded (with the ``provider/``
    prefix stripped from ``model``).
    """
    if fields is call.parsed.fields and call.upstream_model == call.parsed.model:
        body = call.parsed.raw
    else:
        body = rawjson.encode_fields({**fields, "model": call.upstream_model})
    return Upstream(
        session=call.state.upstream,
        provider=call.provider,
        path=call.fmt.path,
        body=body,
        headers=upstream_request_headers(request.headers.items(), call.provider, policy),
    )


async def serve(request: Request, fmt: WireFormat) -> Response:
    """Handle one request of a memory route (JSON or SSE) in format ``fmt``."""
    call = await begin(request, fmt)
    now = time.time()
    reject_conflicting_identity(request.scope["headers"], call.state.settings)
    headers = header_map(request.scope["headers"])
    control = resolve_control(
        headers,
        call.parsed.end_user,
        call.key,
        call.provider,
        call.state.settings,
        call.parsed.query,
    )
    scope = request_scope(headers, call.key, control.user_id)
    request_id = current_request_id()
    await enqueue_forget(call.state.queue, control, call.key.id, now, request_id)
    memory = await remember(call, scope, control, now)
    memory.headers.update(control_headers(control, memory.tokens))
    policy = header_policy(call.state.settings.strip_headers)
    up = _upstream(call, request, memory.fields, policy)
    on_success = after_success(call, scope, control, memory, now, request_id)
    # embedded mode: learning is recorded before the response completes (docs/ARCHITECTURE.md)
    durable = call.state.settings.embedded
    stream = call.parsed.stream
    return await relay(up, memory.headers, policy, on_success, fmt, stream=stream, durable=durable)


async def serve_plain(request: Request, fmt: WireFormat) -> Response:
    """Handle one request of a route without memory (embeddings).

    Authenticated pass-through, the body forwarded byte for byte unless the ``provider/`` model
    prefix is stripped.
    """
    call = await begin(request, fmt)
    policy = header_policy(call.state.settings.strip_headers)
    up = _upstream(call, request, call.parsed.fields, policy)
    return await relay(up, {}, policy, None, fmt)
