"""``GET /healthz`` (process up) and ``GET /readyz`` (store, Redis and vector tier status)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from services.gateway.state import GatewayState, state_of
from shared.store.integrity import is_corrupt

READY_CHECK_TIMEOUT_S = 1.0


async def healthz(request: Request) -> Response:
    """Always 200 while the process serves requests."""
    return JSONResponse({"status": "ok"})


async def _indexes(state: GatewayState, checks: dict[str, str]) -> bool:
    """Add the cached index integrity statuses (``fts``, ``vec``) to ``checks``.

    Returns False when an index is corrupt (see :mod:`shared.store.integrity`).
    """
    if state.integrity is None:
        return True
    found = await state.integrity.checks(READY_CHECK_TIMEOUT_S)
    checks.update(found)
    return not is_corrupt(found)


async def readyz(request: Request) -> Response:
    """200 when every configured dependency answers, else 503; body lists each check.

    Checks: ``db`` (a query on the memories table), ``redis`` (PING, or ``embedded``),
    ``fts`` and ``vec`` (cached index integrity: ``ok``, ``absent``, ``pending``, ``off``,
    ``unknown: ...`` or ``corrupt: ...``, the last failing readiness),
    ``outbox_pending`` (queue mode: jobs waiting for Redis; embedded mode: jobs not finished
    yet, re-run at the next start if the process dies); reported without failing readiness:
    ``embedding`` (signature, ``warming_up`` or ``none``), ``sqlite_vec`` and ``qdrant``
    health, ``reindex_pending``.
    """
    state = state_of(request)
    checks: dict[str, str] = {}
    ok = True
    try:
        await asyncio.wait_for(state.store.memories.count("__readyz__"), READY_CHECK_TIMEOUT_S)
        checks["db"] = "ok"
    except Exception as exc:
        ok = False
        checks["db"] = f"error: {type(exc).__name__}"
    arq = state.arq_queue
    if arq is None:
        checks["redis"] = "embedded"
    else:
        try:
            await asyncio.wait_for(arq.pool.ping(), READY_CHECK_TIMEOUT_S)
            checks["redis"] = "ok"
        except Exception as exc:
            ok = False
            checks["redis"] = f"error: {type(exc).__name__}"
    if not await _indexes(state, checks):
        ok = False
    try:
        checks["outbox_pending"] = str(await state.store.outbox.count())
    except Exception as exc:
        checks["outbox_pending"] = f"error: {type(exc).__name__}"
    engine = state.jobs.engine
    if engine is not None:
        # The vector tier degrades to keyword recall, so it is reported but never fails readiness.
        try:
            checks.update(await asyncio.wait_for(engine.health(), READY_CHECK_TIMEOUT_S * 2))
            checks["reindex_pending"] = str(await state.store.memories.count_pending_reindex())
        except Exception as exc:
            checks["vector"] = f"error: {type(exc).__name__}"
    return JSONResponse(
        {"status": "ready" if ok else "degraded", "checks": checks}, status_code=200 if ok else 503
    )
