"""Recall: find the memories worth injecting for one query, across tiers, with one set of filters.

Tiers (docs/ARCHITECTURE.md, "Recall engine"): keyword (BM25 over the in-memory index of
:mod:`shared.recall_index`, or FTS5 without one) always; vector (sqlite-vec or Qdrant) and
hybrid fusion (CombSUM or RRF) when an embedding source is configured. Every tier applies the
filters of :func:`shared.store.memories.visibility_sql` (owner, end user, session scope, expiry,
retention).
The result is ranked, cut by a relevance floor, then walked under the token budget.
"""

from __future__ import annotations

import asyncio

import msgspec

from shared.engine import Engine
from shared.fts_query import query_terms
from shared.fusion import combsum_candidates
from shared.keyword_leg import (
    DAY_S,
    KeywordLeg,
    index_candidates,
    keyword_candidates,
    keyword_leg,
    keyword_search_of,
    retention_of,
)
from shared.models import Memory, Scope
from shared.ranking import Candidate, content_key, fuse_candidates, memory_tokens
from shared.recall_assist import RecallAssist, injection_order, reranked_candidates
from shared.recall_index.prepared import Prepared
from shared.settings import Settings
from shared.store.memories import MemoryStore
from shared.time_cues import asks_when, boost_time_cues
from shared.vector_leg import (
    VectorLeg,
    candidate_similarity,
    usable_vector_hits,
    vector_leg,
)

__all__ = [
    "DAY_S",
    "RecallResult",
    "index_candidates",
    "keyword_candidates",
    "keyword_search_of",
    "recall",
    "retention_of",
    "select_within_budget",
]


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    """Memories to inject (best first), the tier that produced them, and any degradation reason.

    ``tier`` ∈ none | fts5 | vector | hybrid | qdrant; ``scores`` maps rowid → final score.
    ``prepared``: the keyword leg's prepared features (:class:`Prepared`) by rowid, looked up
    under the fingerprint ``prepared_fp`` (None: no look-up, or the cache's current preparer);
    a caller rendering the block under that fingerprint takes its lines from them.
    """

    memories: list[Memory]
    tier: str
    degraded: str | None = None
    scores: dict[int, float] = msgspec.field(default_factory=dict)
    prepared: dict[int, Prepared] = msgspec.field(default_factory=dict)
    prepared_fp: str | None = None


def select_within_budget(
    candidates: list[Candidate],
    memories: dict[int, Memory],
    *,
    max_tokens: int,
    max_memories: int = 0,
) -> list[Memory]:
    """The memories to inject for already-floored ``candidates``, best first. Pure.

    Steps: order by (score, relevance, recency) (:func:`order_candidates`); drop every memory
    whose text repeats a better-ranked one's, compared whitespace-collapsed and casefolded
    (:func:`drop_duplicate_content`: an owner-wide memory and the end user's copy of it are
    injected once); keep the best ``max_memories`` (0 = no cap); budget-walk the rest into
    ``max_tokens`` (:func:`budget_walk`). A dropped duplicate takes no slot of the cap and no
    budget. ``memories`` must hold every candidate's id (else ``KeyError``). The three steps
    run as one walk that stops at the cap.
    """
    chosen: list[Memory] = []
    seen: set[str] = set()
    total = 0
    for i in injection_order(candidates, memories):
        if 0 < max_memories <= len(seen):
            break
        m = memories[i]
        key = content_key(m.content)
        if key in seen:
            continue
        seen.add(key)
        cost = memory_tokens(m.content)
        if total + cost <= max_tokens:
            chosen.append(m)
            total += cost
    return chosen


def _tier(vector_tier: str | None, keyword_used: bool) -> str:
    if vector_tier == "qdrant":
        return "qdrant"
    if vector_tier is not None:
        return "hybrid" if keyword_used else "vector"
    return "fts5"


async def _both_legs(
    store: MemoryStore,
    engine: Engine,
    scope: Scope,
    query: str,
    settings: Settings,
    now: float,
    echo_of: str,
    vector_deadline: float | None = None,
    prepared_fp: str | None = None,
) -> tuple[VectorLeg, KeywordLeg]:
    """Vector and keyword legs concurrently (hybrid).

    Keyword only after a failed vector leg (semantic). A cancellation (the recall budget ran
    out) cancels both. A vector leg still running at ``vector_deadline`` (event-loop time) is
    cancelled and counts as failed (``vector_timeout``): recall answers from the keyword leg.
    """
    vector_task = asyncio.ensure_future(vector_leg(engine, scope, query, settings, now))
    if settings.retrieval_strategy == "semantic":
        vector = await _vector_by(vector_task, vector_deadline)
        if vector.tier is not None:
            return vector, KeywordLeg([], {}, {})
        return vector, await keyword_leg(
            store, engine, scope, query, settings, now, echo_of, prepared_fp
        )
    try:
        keyword = await keyword_leg(
            store, engine, scope, query, settings, now, echo_of, prepared_fp
        )
    except BaseException:
        vector_task.cancel()
        raise
    return await _vector_by(vector_task, vector_deadline), keyword


async def _vector_by(task: asyncio.Future[VectorLeg], deadline: float | None) -> VectorLeg:
    """``task``'s leg, or an empty one (``vector_timeout``) if it is not done by ``deadline``.

    The task is cancelled then (a local model's queued query is skipped, a remote request
    closed). Under overload the query embedding is what queues longest: the keyword leg's hits
    are then worth more than a whole recall lost to the budget.
    """
    if deadline is None or task.done():
        return await task
    try:
        return await asyncio.wait_for(task, deadline - asyncio.get_running_loop().time())
    except TimeoutError:
        return VectorLeg([], None, "vector_timeout")


async def recall(
    store: MemoryStore,
    scope: Scope,
    query: str,
    settings: Settings,
    now: float,
    engine: Engine | None = None,
    *,
    assist: RecallAssist | None = None,
    echo_of: str | None = None,
    vector_deadline: float | None = None,
    prepared_fp: str | None = None,
) -> RecallResult:
    """Recall for ``query`` (the newest user message's text) under ``scope`` at ``now``.

    ``retrieval_strategy``: ``exact`` = keyword leg only; ``semantic`` = vector leg only (keyword
    if the vector leg is unavailable); ``hybrid`` = both legs, run concurrently, fused by
    ``recall_fusion``: ``rrf`` = weighted RRF ``Σ w_i/(k+rank_i)`` (Cormack et al., SIGIR 2009)
    with ``rrf_k`` and per-leg weights, ``combsum`` = min-max normalised score sum with
    ``recall_fusion_keyword_share`` (:mod:`shared.fusion`). Each leg is floored first: keyword
    hits below ``recall_relative_floor`` × the best BM25, vector hits below
    ``vector_min_similarity`` cosine. A vector-leg failure degrades to
    keyword with the reason in ``degraded`` (Qdrant → sqlite-vec → keyword). The keyword leg uses
    the engine's in-memory index (:mod:`shared.recall_index`) when there is one, else FTS5.
    Memories echoing ``echo_of`` (default ``query``; :mod:`shared.echo`) are dropped before the
    floor; with ``assist`` the fused candidates may be reranked (:mod:`shared.recall_assist`).
    ``vector_deadline`` (event-loop time): a vector leg not done by then is cancelled and recall
    answers from the keyword leg, ``degraded`` = ``vector_timeout``. ``prepared_fp``: the
    fingerprint of the caller's preparer (:attr:`shared.recall_index.prepared.Preparer.
    fingerprint`; None: the cache's current one): the keyword leg looks up its hits' prepared
    features under it and the result carries them (``prepared``), for the block's lines.

    Raises:
        StoreError: the keyword store failed (the caller degrades to no memory).
    """
    if not query_terms(query):
        # nothing searchable ("*", "AND OR NOT", emoji only): no leg has anything to go on
        return RecallResult(memories=[], tier="none")
    echo = query if echo_of is None else echo_of
    want_vector = engine is not None and engine.enabled and settings.retrieval_strategy != "exact"
    if want_vector:
        assert engine is not None
        vector, keyword = await _both_legs(
            store, engine, scope, query, settings, now, echo, vector_deadline, prepared_fp
        )
    else:
        vector = VectorLeg([])
        keyword = await keyword_leg(store, engine, scope, query, settings, now, echo, prepared_fp)
    if not vector.candidates and not keyword.hits:
        return RecallResult(memories=[], tier="none", degraded=vector.degraded)
    legs = _Legs(keyword.hits, vector, keyword.memories, keyword.prepared, prepared_fp)
    return await _ranked(store, engine, scope, query, settings, legs, echo, assist)


def _fused(
    keyword: list[Candidate],
    vector: list[Candidate],
    settings: Settings,
    similarity: dict[int, float] | None = None,
) -> list[Candidate]:
    """Both floored legs fused by ``settings.recall_fusion`` (weighted RRF or CombSUM), best first.

    ``Candidate(memory_id, fused score)``; ``similarity``: the query's cosine with candidates of
    either leg (CombSUM only).
    """
    if settings.recall_fusion == "combsum":
        return combsum_candidates(
            keyword,
            vector,
            keyword_share=settings.recall_fusion_keyword_share,
            similarity=similarity,
        )
    fused = fuse_candidates(
        keyword,
        vector,
        k=settings.rrf_k,
        keyword_weight=settings.rrf_keyword_weight,
        vector_weight=settings.rrf_vector_weight,
    )
    return [Candidate(memory_id=f.memory_id, score=f.score) for f in fused]


class _Legs(msgspec.Struct):
    """The floored hits of both legs and what is known of their memories.

    The records known so far and the keyword leg's prepared features (under ``prepared_fp``),
    by rowid.
    """

    keyword: list[Candidate]
    vector: VectorLeg
    memories: dict[int, Memory]
    prepared: dict[int, Prepared] = msgspec.field(default_factory=dict)
    prepared_fp: str | None = None


async def _ranked(
    store: MemoryStore,
    engine: Engine | None,
    scope: Scope,
    query: str,
    settings: Settings,
    legs: _Legs,
    echo: str,
    assist: RecallAssist | None,
) -> RecallResult:
    """Fuse the legs and select what to inject.

    The vector hits without echoes of ``echo`` and with keyword support
    (:func:`shared.vector_leg.usable_vector_hits`), fused with the keyword leg by
    ``recall_fusion`` (CombSUM over one pool scores every candidate by its own cosine too),
    the time-cue factor of a when-query (:func:`shared.time_cues.boost_time_cues`, on the fused
    score), the optional rerank, then the cap and budget (:func:`select_within_budget`).
    """
    keyword, memories = legs.keyword, legs.memories
    vector = await usable_vector_hits(
        store,
        engine,
        scope,
        settings,
        legs.vector,
        legs.keyword,
        memories,
        echo,
        legs.prepared,
        legs.prepared_fp,
    )
    similarity = candidate_similarity(engine, scope, settings, legs.vector.query, keyword + vector)
    ranked = _fused(keyword, vector, settings, similarity) if vector or similarity else keyword
    if settings.recall_when_factor != 1.0 and asks_when(query):
        content = {i: m.content for i, m in memories.items()}
        ranked = boost_time_cues(query, ranked, content, settings.recall_when_factor, legs.prepared)
    ranked, reranked = await reranked_candidates(assist, settings, query, ranked, memories)
    chosen = select_within_budget(
        ranked,
        memories,
        max_tokens=settings.recall_max_tokens,
        max_memories=settings.recall_max_memories,
    )
    scores = {c.memory_id: c.score for c in ranked}
    return RecallResult(
        memories=chosen,
        tier=_tier(legs.vector.tier if vector else None, bool(keyword)),
        degraded=legs.vector.degraded or reranked,
        scores={m.id: scores[m.id] for m in chosen},
        prepared=legs.prepared,
        prepared_fp=legs.prepared_fp,
    )
