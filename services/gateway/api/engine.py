"""``GET /api/engine`` (what the memory engine runs now).

``POST /api/reindex`` and ``POST /api/summarize`` (queue background jobs, 202).
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.api.authorization import principal_of
from services.gateway.api.codec import decode_body, json_response
from services.gateway.state import state_of
from shared import engine_status as status
from shared import job_requests
from shared.memory_api import ReindexRequest, SummarizeRequest

HEALTH_TIMEOUT_S = 1.0


async def engine_status(request: Request) -> Response:
    """``GET /api/engine`` → keyword, embedding, vector, qdrant sections and pending reindex.

    Any authenticated caller; whole-database counts only for the admin (a client key must not
    learn how many memories other tenants hold).
    """
    principal = await principal_of(request)
    state = state_of(request)
    try:
        health = dict(await asyncio.wait_for(state.runtime.engine.health(), HEALTH_TIMEOUT_S))
    except Exception as exc:  # a status page reports failures, it does not fail
        health = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return json_response(
        await status.engine_status(state.store, state.settings, health, with_counts=principal.admin)
    )


async def reindex(request: Request) -> Response:
    """``POST /api/reindex`` → 202 ``{"job", "job_id", "owner_id"}``."""
    principal = await principal_of(request)
    body = await decode_body(request, ReindexRequest, required=False)
    accepted = await job_requests.request_reindex(
        state_of(request).queue, principal, body, time.time()
    )
    return json_response(accepted, 202)


async def summarize(request: Request) -> Response:
    """``POST /api/summarize`` → 202 ``{"job", "job_id", "owner_id"}`` (one owner only)."""
    principal = await principal_of(request)
    body = await decode_body(request, SummarizeRequest)
    accepted = await job_requests.request_summarize(
        state_of(request).queue, principal, body, time.time()
    )
    return json_response(accepted, 202)
