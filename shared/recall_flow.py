"""The request path's memory step: recall under a time budget, redact, format, inject.

Pure orchestration over :mod:`shared.retrieval` and :mod:`shared.injection`; never raises for a
memory failure: the request then goes upstream unchanged with a ``degraded`` reason (DESIGN §1).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import msgspec

from shared.engine import Engine
from shared.errors import MnemogateError
from shared.injection import (
    ProviderCapabilities,
    RecalledMemory,
    format_memory_block,
    inject,
    newest_user_text,
)
from shared.metrics import note_recall
from shared.models import Scope
from shared.ranking import estimate_tokens
from shared.retrieval import recall
from shared.sensitive import SensitiveDetector
from shared.settings import Settings
from shared.store import Store

log = logging.getLogger("mnemogate.recall")


class MemoryPlan(msgspec.Struct, kw_only=True):
    """The body to send upstream and what memory did: injected rowids, tier, degradation."""

    body: dict[str, Any]
    memory_ids: list[int]
    tier: str
    degraded: str | None = None
    #: estimated tokens of the injected memory block (0 when nothing was injected)
    tokens: int = 0


async def plan_memory(
    store: Store,
    detector: SensitiveDetector,
    settings: Settings,
    scope: Scope,
    body: dict[str, Any],
    caps: ProviderCapabilities,
    now: float,
    engine: Engine | None = None,
) -> MemoryPlan:
    """:func:`plan_memory_untimed`, timed and recorded in the metrics
    (:func:`shared.metrics.note_recall`: duration by tier, injected count and tokens, degradation).
    """
    started = time.perf_counter()
    plan = await plan_memory_untimed(store, detector, settings, scope, body, caps, now, engine)
    note_recall(
        time.perf_counter() - started, plan.tier, len(plan.memory_ids), plan.tokens, plan.degraded
    )
    return plan


async def plan_memory_untimed(
    store: Store,
    detector: SensitiveDetector,
    settings: Settings,
    scope: Scope,
    body: dict[str, Any],
    caps: ProviderCapabilities,
    now: float,
    engine: Engine | None = None,
) -> MemoryPlan:
    """Recall memories for ``body``'s newest user message and inject them into a copy of ``body``.

    Memory content is redacted by ``detector`` before injection (secrets that reached the store
    some other way are never injected verbatim). Timeout = ``settings.recall_timeout_ms``.
    """
    messages = body.get("messages", [])
    query = newest_user_text(messages)
    if not query.strip():
        return MemoryPlan(body=body, memory_ids=[], tier="none")
    try:
        result = await asyncio.wait_for(
            recall(store.memories, scope, query, settings, now, engine),
            settings.recall_timeout_ms / 1000,
        )
    except TimeoutError:
        return MemoryPlan(body=body, memory_ids=[], tier="none", degraded="recall_timeout")
    except MnemogateError as exc:
        log.warning("recall failed: %s", exc)
        return MemoryPlan(
            body=body, memory_ids=[], tier="none", degraded=exc.code or "recall_error"
        )
    except Exception as exc:  # memory must never fail a chat request (DESIGN §1)
        log.exception("recall failed unexpectedly: %s", type(exc).__name__)
        return MemoryPlan(body=body, memory_ids=[], tier="none", degraded="recall_error")
    if not result.memories:
        return MemoryPlan(body=body, memory_ids=[], tier=result.tier, degraded=result.degraded)
    recalled = [
        RecalledMemory(
            content=detector.redact(m.content) if settings.sensitive_filter else m.content,
            created_at=m.created_at,
            category=m.category,
        )
        for m in result.memories
    ]
    block = format_memory_block(recalled)
    placed = inject(
        messages,
        block,
        settings.injection_strategy,
        caps,
        body.get("system"),
    )
    if not placed.injected:
        return MemoryPlan(body=body, memory_ids=[], tier="none", degraded=result.degraded)
    new_body = dict(body)
    new_body["messages"] = placed.messages
    if placed.system_changed:
        new_body["system"] = placed.system
    return MemoryPlan(
        body=new_body,
        memory_ids=[m.id for m in result.memories],
        tier=result.tier,
        degraded=result.degraded,
        tokens=estimate_tokens(block),
    )
