"""Why recall chose what it chose: per-leg ranks and the reason each other candidate was dropped.

Used by the search preview (Memory Studio's Playground) only, never on the request path. It
re-runs the two retrieval legs without their floors (the keyword leg with
:func:`shared.retrieval.keyword_candidates`, the vector leg with ``Engine.vector_search``) and
compares the pool with what :func:`shared.retrieval.recall` returned. A pooled memory that recall
did not return was dropped for one reason, checked in this order:

* ``floor``: below the relative floor of every leg it appeared in (keyword:
  ``recall_relative_floor`` × the best BM25; vector: the cosine floor);
* ``screened``: a keyword hit above the floor that recall's keyword leg set aside
  (:func:`shared.keyword_leg.keyword_leg`): an echo of the query, a question about its words
  demoted below the floor, a memory about another of the user's people or pets than the query
  names (:mod:`shared.personal_subjects`), or a hit of a query sharing too few of its terms with
  every hit (``recall_min_shared_terms``), and no vector hit above its floor;
* ``duplicate``: its text repeats a better-ranked memory's (:func:`shared.ranking.content_key`);
* ``cap``: ``recall_max_memories`` memories were already chosen;
* ``budget``: it did not fit the token budget left (:func:`shared.ranking.budget_walk`).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.engine import Engine
from shared.errors import EmbeddingError, VectorIndexError
from shared.keyword_leg import keyword_leg
from shared.models import Memory, Scope
from shared.ranking import Candidate, apply_relevance_floor, content_key
from shared.retrieval import keyword_candidates, keyword_search_of
from shared.settings import Settings
from shared.store.memories import MemoryStore
from shared.vector_leg import keyword_supported, vector_floor

DropReason = Literal["floor", "screened", "duplicate", "cap", "budget"]


class LegHit(msgspec.Struct, frozen=True):
    """A memory's 1-based ``rank`` and raw ``score`` in one leg, and whether it passed the floor."""

    rank: int
    score: float
    passed: bool


class Legs(msgspec.Struct, kw_only=True):
    """Both legs' hits by memory rowid, and every pooled memory."""

    keyword: dict[int, LegHit]
    vector: dict[int, LegHit]
    memories: dict[int, Memory]
    #: keyword hits above the floor that recall's keyword leg set aside (reason ``screened``)
    screened: frozenset[int] = frozenset()


async def _vector_leg(
    engine: Engine | None, scope: Scope, query: str, settings: Settings, now: float
) -> tuple[dict[int, LegHit], list[int]]:
    if engine is None or not engine.enabled or settings.retrieval_strategy == "exact":
        return {}, []
    floor = vector_floor(settings, engine)
    try:
        result = await engine.vector_search(
            query, scope, settings.recall_top_k, now, use_qdrant=settings.vector_tier == "qdrant"
        )
    except (EmbeddingError, VectorIndexError):
        return {}, []
    hits = {
        h.memory_id: LegHit(rank=i + 1, score=h.score, passed=h.score >= floor)
        for i, h in enumerate(result.hits)
    }
    return hits, [h.memory_id for h in result.hits]


async def legs_of(
    store: MemoryStore,
    scope: Scope,
    query: str,
    settings: Settings,
    now: float,
    engine: Engine | None,
) -> Legs:
    """Run both legs for ``query`` without cutting anything.

    Raises:
        StoreError: the keyword store failed.
    """
    keyword: dict[int, LegHit] = {}
    memories: dict[int, Memory] = {}
    screened: frozenset[int] = frozenset()
    if settings.retrieval_strategy != "semantic" or engine is None or not engine.enabled:
        cands, memories = await keyword_candidates(
            store, keyword_search_of(scope, query, settings, now)
        )
        kept = {
            c.memory_id
            for c in apply_relevance_floor(cands, relative_floor=settings.recall_relative_floor)
        }
        if engine is not None and engine.keywords is not None and kept:
            leg = await keyword_leg(store, engine, scope, query, settings, now, echo_of=query)
            screened = frozenset(kept - {c.memory_id for c in leg.hits})
            kept -= screened
        keyword = {
            c.memory_id: LegHit(rank=c.rank, score=c.score, passed=c.memory_id in kept)
            for c in cands
        }
    vector, vector_ids = await _vector_leg(engine, scope, query, settings, now)
    if settings.retrieval_strategy == "hybrid" and engine is not None and engine.embedder:
        # as recall: a vector hit without keyword support needs the raised floor
        floor = vector_floor(settings, engine)
        hits = [Candidate(memory_id=i, score=h.score, rank=h.rank) for i, h in vector.items()]
        found = [Candidate(memory_id=i, score=h.score) for i, h in keyword.items() if h.passed]
        supported = keyword_supported(hits, found, floor, settings.recall_vector_only_margin)
        ok = {c.memory_id for c in supported}
        vector = {
            i: h if i in ok else msgspec.structs.replace(h, passed=False) for i, h in vector.items()
        }
    missing = [i for i in vector_ids if i not in memories]
    if missing:
        memories.update(await store.get_many(missing))
    return Legs(keyword=keyword, vector=vector, memories=memories, screened=screened)


def _best_rank(legs: Legs, memory_id: int) -> tuple[int, int]:
    kw = legs.keyword.get(memory_id)
    vec = legs.vector.get(memory_id)
    return (
        min(h.rank for h in (kw, vec) if h is not None) if (kw or vec) else 10**9,
        memory_id,
    )


def drop_reasons(legs: Legs, chosen: list[Memory], max_memories: int) -> list[tuple[int, str]]:
    """``(rowid, reason)`` for every pooled memory not in ``chosen``, best-ranked first.

    See the module docstring for the reasons. Pure.
    """
    chosen_ids = {m.id for m in chosen}
    seen = {content_key(m.content) for m in chosen}
    out: list[tuple[int, str]] = []
    for memory_id in sorted(legs.memories, key=lambda i: _best_rank(legs, i)):
        if memory_id in chosen_ids:
            continue
        hits = [h for h in (legs.keyword.get(memory_id), legs.vector.get(memory_id)) if h]
        key = content_key(legs.memories[memory_id].content)
        if not any(h.passed for h in hits):
            out.append((memory_id, "screened" if memory_id in legs.screened else "floor"))
            continue
        if key in seen:
            reason = "duplicate"
        elif max_memories > 0 and len(chosen) >= max_memories:
            reason = "cap"
        else:
            reason = "budget"
        seen.add(key)
        out.append((memory_id, reason))
    return out
