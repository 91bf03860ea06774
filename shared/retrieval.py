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
from collections.abc import Sequence

import msgspec

from shared.echo import drop_echoes
from shared.engine import Engine
from shared.fts_query import query_terms, quote_term
from shared.fusion import combsum_fuse
from shared.keyword_rescore import rescore_keyword_hits
from shared.models import Memory, Scope
from shared.ranking import (
    Candidate,
    ScoredMemory,
    apply_relevance_floor,
    bm25_to_relevance,
    budget_walk,
    drop_duplicate_content,
    fuse_candidates,
    memory_tokens,
)
from shared.recall_assist import RecallAssist, injection_order, reranked_candidates
from shared.recall_index import KeywordIndex, bm25_params
from shared.settings import Settings
from shared.store.memories import KeywordSearch, MemoryStore, Retention
from shared.time_cues import asks_when, boost_time_cues
from shared.vector_leg import (
    VectorLeg,
    candidate_similarity,
    usable_vector_hits,
    vector_leg,
)

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


def keyword_search_of(scope: Scope, query: str, settings: Settings, now: float) -> KeywordSearch:
    """The keyword search of ``query`` in ``scope`` under ``settings``.

    ``recall_top_k`` results, the typed-decay retention (:func:`retention_of`) and the
    ``keyword_common_term_df`` cutoff; ``now`` in epoch seconds.
    """
    return KeywordSearch(
        scope=scope,
        query=query,
        limit=settings.recall_top_k,
        now=now,
        retention=retention_of(settings),
        common_df=settings.keyword_common_term_df,
    )


async def keyword_candidates(
    store: MemoryStore, request: KeywordSearch
) -> tuple[list[Candidate], dict[int, Memory]]:
    """FTS5 leg: candidates (score = −bm25, higher better) and their memories, best first.

    Terms matching at least ``common_df`` documents are dropped when rarer terms exist (a
    document-frequency stop list, computed per query with capped counts): ranking every match of
    a near-ubiquitous term costs time linear in the collection and adds little to BM25, whose IDF
    for such a term is low. When every term is that common, the terms are AND-ed instead of
    OR-ed, so only memories containing all of them are ranked. ``common_df`` 0 keeps every term.
    """
    common_df = request.common_df
    terms = [quote_term(t) for t in query_terms(request.query)]
    if not terms:
        return [], {}
    joiner = " OR "
    if common_df > 0 and len(terms) > 1:
        counts: Sequence[int] = await store.term_doc_counts(terms, common_df)
        rare = [t for t, n in zip(terms, counts, strict=True) if n < common_df]
        if rare:
            terms = rare
        else:
            joiner = " AND "
    match = joiner.join(terms)
    rows = await store.keyword_search(
        request.scope, match, limit=request.limit, now=request.now, retention=request.retention
    )
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
    max_memories: int = 0,
) -> list[Memory]:
    """The memories to inject for already-floored ``candidates``, best first. Pure.

    Steps: order by (score, relevance, recency) (:func:`order_candidates`); drop every memory
    whose text repeats a better-ranked one's, compared whitespace-collapsed and casefolded
    (:func:`drop_duplicate_content`: an owner-wide memory and the end user's copy of it are
    injected once); keep the best ``max_memories`` (0 = no cap); budget-walk the rest into
    ``max_tokens`` (:func:`budget_walk`). A dropped duplicate takes no slot of the cap and no
    budget. ``memories`` must hold every candidate's id (else ``KeyError``).
    """
    order = injection_order(candidates, memories)
    ranked = drop_duplicate_content([memories[i] for i in order], lambda m: m.content)
    if max_memories > 0:
        ranked = ranked[:max_memories]
    return budget_walk(ranked, lambda m: memory_tokens(m.content), max_tokens)


def _tier(vector_tier: str | None, keyword_used: bool) -> str:
    if vector_tier == "qdrant":
        return "qdrant"
    if vector_tier is not None:
        return "hybrid" if keyword_used else "vector"
    return "fts5"


async def index_candidates(
    index: KeywordIndex, request: KeywordSearch, settings: Settings
) -> tuple[list[Candidate], dict[int, Memory]]:
    """Keyword leg over the in-memory index, candidates best first.

    BM25 with the owner's own statistics and the ``bm25_k1``/``bm25_b``/``recall_context_weight``
    of ``settings``.
    """
    index.reconfigure(bm25_params(settings))
    rows = await index.search(request)
    candidates = [
        Candidate(memory_id=m.id, score=score, rank=i + 1) for i, (m, score) in enumerate(rows)
    ]
    return candidates, {m.id: m for m, _ in rows}


async def _keyword_leg(
    store: MemoryStore,
    engine: Engine | None,
    scope: Scope,
    query: str,
    settings: Settings,
    now: float,
    echo_of: str,
) -> tuple[list[Candidate], dict[int, Memory]]:
    request = keyword_search_of(scope, query, settings, now)
    index = engine.keywords if engine is not None else None
    if index is not None:
        found = await index_candidates(index, request, settings)
    else:
        found = await keyword_candidates(store, request)
    # an echo of the query (a stored copy of this question) never sets the floor; a memory that
    # asked about the query's words, or states a time for a when-query, is rescored first
    content = {i: m.content for i, m in found[1].items()}
    # features prepared when the memories were indexed (else analysed here)
    ready = index.prepared(scope, found[1].values()) if index is not None else {}
    kept = drop_echoes(echo_of, found[0], content, lambda c: c.memory_id, ready)
    kept = rescore_keyword_hits(index, scope, query, kept, content, settings, ready)
    floored = apply_relevance_floor(kept, relative_floor=settings.recall_relative_floor)
    return floored, found[1]


async def _both_legs(
    store: MemoryStore,
    engine: Engine,
    scope: Scope,
    query: str,
    settings: Settings,
    now: float,
    echo_of: str,
    vector_deadline: float | None = None,
) -> tuple[VectorLeg, list[Candidate], dict[int, Memory]]:
    """Vector and keyword legs concurrently (hybrid).

    Keyword only after a failed vector leg (semantic). A cancellation (the recall budget ran
    out) cancels both. A vector leg still running at ``vector_deadline`` (event-loop time) is
    cancelled and counts as failed (``vector_timeout``): recall answers from the keyword leg.
    """
    vector_task = asyncio.ensure_future(vector_leg(engine, scope, query, settings, now))
    if settings.retrieval_strategy == "semantic":
        vector = await _vector_by(vector_task, vector_deadline)
        if vector.tier is not None:
            return vector, [], {}
        return vector, *await _keyword_leg(store, engine, scope, query, settings, now, echo_of)
    try:
        keyword, memories = await _keyword_leg(store, engine, scope, query, settings, now, echo_of)
    except BaseException:
        vector_task.cancel()
        raise
    return await _vector_by(vector_task, vector_deadline), keyword, memories


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
    answers from the keyword leg, ``degraded`` = ``vector_timeout``.

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
        vector, keyword, memories = await _both_legs(
            store, engine, scope, query, settings, now, echo, vector_deadline
        )
    else:
        vector = VectorLeg([])
        keyword, memories = await _keyword_leg(store, engine, scope, query, settings, now, echo)
    if not vector.candidates and not keyword:
        return RecallResult(memories=[], tier="none", degraded=vector.degraded)
    legs = _Legs(keyword=keyword, vector=vector, memories=memories)
    return await _ranked(store, engine, scope, query, settings, legs, echo, assist)


def _fused(
    keyword: list[Candidate],
    vector: list[Candidate],
    settings: Settings,
    similarity: dict[int, float] | None = None,
) -> list[ScoredMemory]:
    """Both floored legs fused by ``settings.recall_fusion``: weighted RRF or CombSUM.

    ``similarity``: the query's cosine with candidates of either leg (CombSUM only).
    """
    if settings.recall_fusion == "combsum":
        return combsum_fuse(
            keyword,
            vector,
            keyword_share=settings.recall_fusion_keyword_share,
            similarity=similarity,
        )
    return fuse_candidates(
        keyword,
        vector,
        k=settings.rrf_k,
        keyword_weight=settings.rrf_keyword_weight,
        vector_weight=settings.rrf_vector_weight,
    )


class _Legs(msgspec.Struct):
    """The floored hits of both legs and the memory records known so far (by rowid)."""

    keyword: list[Candidate]
    vector: VectorLeg
    memories: dict[int, Memory]


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
        store, engine, scope, settings, legs.vector, legs.keyword, memories, echo
    )
    similarity = candidate_similarity(engine, scope, settings, legs.vector.query, keyword + vector)
    if vector or similarity:
        fused = _fused(keyword, vector, settings, similarity)
        ranked = [Candidate(memory_id=f.memory_id, score=f.score) for f in fused]
    else:
        ranked = keyword
    if settings.recall_when_factor != 1.0 and asks_when(query):
        content = {i: m.content for i, m in memories.items()}
        ranked = boost_time_cues(query, ranked, content, settings.recall_when_factor)
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
    )
