"""The request path's memory step: recall under a time budget, redact, format, inject.

Pure orchestration over :mod:`shared.retrieval` and :mod:`shared.injection`; never raises for a
memory failure: the request then goes upstream unchanged with a ``degraded`` reason (DESIGN §1).
"""

from __future__ import annotations

import asyncio
import functools
import logging
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
from shared.models import Scope
from shared.recall_assist import RecallAssist, search_query
from shared.retrieval import RecallResult, recall
from shared.sensitive import SensitiveDetector
from shared.settings import Settings
from shared.store import Store

log = logging.getLogger("mnemogate.recall")


@functools.lru_cache(maxsize=16_384)
def _redacted(detector: SensitiveDetector, text: str) -> str:
    """``detector.redact(text)``, memoised per (detector, text): recalled texts repeat across
    requests, so redaction runs once per memory text rather than on every request."""
    return detector.redact(text)


async def _assisted_recall(
    store: Store,
    scope: Scope,
    messages: Any,
    query: str,
    settings: Settings,
    now: float,
    engine: Engine | None,
    assist: RecallAssist | None,
) -> RecallResult:
    """:func:`recall` of the (optionally rewritten) query; echoes compare with the original."""
    search, rewrite_degraded = await search_query(assist, settings, messages, query)
    result = await recall(
        store.memories, scope, search, settings, now, engine, assist=assist, echo_of=query
    )
    if rewrite_degraded is None or result.degraded is not None:
        return result
    return msgspec.structs.replace(result, degraded=rewrite_degraded)


class MemoryPlan(msgspec.Struct, kw_only=True):
    """The body to send upstream and what memory did: injected rowids, tier, degradation."""

    body: dict[str, Any]
    memory_ids: list[int]
    tier: str
    degraded: str | None = None


async def plan_memory(
    store: Store,
    detector: SensitiveDetector,
    settings: Settings,
    scope: Scope,
    body: dict[str, Any],
    caps: ProviderCapabilities,
    now: float,
    engine: Engine | None = None,
    assist: RecallAssist | None = None,
) -> MemoryPlan:
    """Recall memories for ``body``'s newest user message and inject them into a copy of ``body``.

    Memory content is redacted by ``detector`` before injection (secrets that reached the store
    some other way are never injected verbatim). Timeout = ``settings.recall_timeout_ms``, which
    also bounds the optional query rewrite and rerank of ``assist``
    (:mod:`shared.recall_assist`).
    """
    messages = body.get("messages", [])
    query = newest_user_text(messages)
    if not query.strip():
        return MemoryPlan(body=body, memory_ids=[], tier="none")
    try:
        result = await asyncio.wait_for(
            _assisted_recall(store, scope, messages, query, settings, now, engine, assist),
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
            content=_redacted(detector, m.content) if settings.sensitive_filter else m.content,
            created_at=m.created_at,
            category=m.category,
        )
        for m in result.memories
    ]
    placed = inject(
        messages,
        format_memory_block(recalled),
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
    )
