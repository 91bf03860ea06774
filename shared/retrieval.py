"""Recall: find the memories worth injecting for one query, across tiers, with one set of filters.

Tiers (DESIGN §4): keyword (FTS5 + BM25) always; vector (sqlite-vec or Qdrant) and hybrid RRF when
an embedding source is configured. Every tier filters by owner, end user, session scope, expiry
and retention inside the store query (:func:`shared.store.memories.visibility_sql`). The result is
ranked, cut by a relevance floor, then walked under the token budget.
"""

from __future__ import annotations

import msgspec

from shared.fts_query import build_match_query
from shared.models import Memory, Scope
from shared.ranking import (
    Candidate,
    apply_relevance_floor,
    bm25_to_relevance,
    budget_walk,
    memory_tokens,
    order_candidates,
)
from shared.settings import Settings
from shared.store.memories import MemoryStore, Retention

DAY_S = 86_400.0


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    """Memories to inject (best first), the tier that produced them, and any degradation reason.

    ``tier`` ∈ none | fts5 | vector | hybrid | qdrant; ``scores`` maps rowid → final score.
    """

    memories: list[Memory]
    tier: str
    degraded: str | None = None
    scores: dict[int, float] = msgspec.field(default_factory=dict)


def retention_of(settings: Settings) -> Retention:
    """The read-time retention rule from the typed-decay settings (TTL days → seconds)."""
    ttl = {
        "episodic": settings.episodic_ttl_days,
        "factual": settings.factual_ttl_days,
        "procedural": settings.procedural_ttl_days,
        "semantic": settings.semantic_ttl_days,
    }
    return Retention(
        ttl_s={t: d * DAY_S for t, d in ttl.items() if d > 0},
        access_immunity=settings.access_immunity,
    )


async def keyword_candidates(
    store: MemoryStore,
    scope: Scope,
    query: str,
    *,
    limit: int,
    now: float,
    retention: Retention | None,
) -> tuple[list[Candidate], dict[int, Memory]]:
    """FTS5 leg: candidates (score = −bm25, higher better) and their memories, best first."""
    match = build_match_query(query)
    if match is None:
        return [], {}
    rows = await store.keyword_search(scope, match, limit=limit, now=now, retention=retention)
    candidates = [
        Candidate(memory_id=m.id, score=bm25_to_relevance(score), rank=i + 1)
        for i, (m, score) in enumerate(rows)
    ]
    return candidates, {m.id: m for m, _ in rows}


def select_within_budget(
    candidates: list[Candidate],
    memories: dict[int, Memory],
    *,
    max_tokens: int,
    relative_floor: float,
) -> list[Memory]:
    """Floor, order (score, relevance, recency) and budget-walk candidates into memories."""
    kept = apply_relevance_floor(candidates, relative_floor=relative_floor)
    order = order_candidates(
        [
            (c.memory_id, c.score, memories[c.memory_id].relevance, memories[c.memory_id].updated_at)
            for c in kept
        ]
    )
    ranked = [memories[i] for i in order]
    return budget_walk(ranked, lambda m: memory_tokens(m.content), max_tokens)


async def recall(
    store: MemoryStore, scope: Scope, query: str, settings: Settings, now: float
) -> RecallResult:
    """Recall for ``query`` (the newest user message's text) under ``scope`` at ``now``.

    Raises:
        StoreError: the store failed (the caller degrades to no memory).
    """
    retention = retention_of(settings)
    candidates, memories = await keyword_candidates(
        store, scope, query, limit=settings.recall_top_k, now=now, retention=retention
    )
    if not candidates:
        return RecallResult(memories=[], tier="none")
    chosen = select_within_budget(
        candidates,
        memories,
        max_tokens=settings.recall_max_tokens,
        relative_floor=settings.recall_relative_floor,
    )
    scores = {c.memory_id: c.score for c in candidates}
    return RecallResult(
        memories=chosen,
        tier="fts5" if chosen else "none",
        scores={m.id: scores[m.id] for m in chosen},
    )
