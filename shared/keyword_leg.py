"""The keyword leg of recall: BM25 hits, minus echoes, rescored, floored (docs/ARCHITECTURE.md).

The in-memory index of :mod:`shared.recall_index` when the engine has one, else FTS5; either
way the hits are screened (:func:`shared.keyword_rescore.screen_keyword_hits`: echoes of the
query dropped, matches in question sentences demoted) before the relative floor. Used by
:mod:`shared.retrieval`, which re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from shared.context_riders import without_fact_riders, without_riders
from shared.engine import Engine
from shared.fts_query import query_terms, quote_term
from shared.keyword_rescore import screen_keyword_hits
from shared.models import Memory, Scope
from shared.personal_subjects import drop_other_subjects, features_of
from shared.question_form import asks_about_the_user
from shared.ranking import Candidate, apply_relevance_floor, bm25_to_relevance
from shared.recall_index import KeywordIndex, bm25_params
from shared.recall_index.analysis import query_tokens
from shared.recall_index.prepared import Prepared
from shared.settings import Settings
from shared.slot_terms import slot_terms
from shared.store.memories import KeywordSearch, MemoryStore, Retention

__all__ = [
    "DAY_S",
    "KeywordLeg",
    "index_candidates",
    "keyword_candidates",
    "keyword_leg",
    "keyword_search_of",
    "retention_of",
]

DAY_S = 86_400.0


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


async def index_candidates(
    index: KeywordIndex,
    request: KeywordSearch,
    settings: Settings,
    prepared_fp: str | None = None,
) -> tuple[list[Candidate], dict[int, Memory], dict[int, Prepared]]:
    """Keyword leg over the in-memory index: candidates best first, records and features.

    BM25 with the owner's own statistics and the ``bm25_k1``/``bm25_b``/``recall_context_weight``
    of ``settings``. The third map holds the hits' features prepared under ``prepared_fp``
    (None: the cache's current preparer), by rowid; hits without any are not in it.
    """
    index.reconfigure(bm25_params(settings))
    rows = await index.search_prepared(request, prepared_fp)
    candidates = [
        Candidate(memory_id=m.id, score=score, rank=i + 1) for i, (m, score, _) in enumerate(rows)
    ]
    memories = {m.id: m for m, _, _ in rows}
    return candidates, memories, {m.id: p for m, _, p in rows if p is not None}


def _shares_enough(
    index: KeywordIndex, scope: Scope, query: str, hits: list[Candidate], settings: Settings
) -> bool:
    """Whether the hits pass ``recall_min_shared_terms`` (``m``; 0 = off).

    A query of ``m`` or more terms that does not speak of the user
    (:func:`shared.question_form.asks_about_the_user`: "my parrot", "am I") is taken as
    unrelated to what is stored unless one hit holds ``m`` of them: in a small store a memory
    sharing one common word ("called" in "How do I call a function in Rust?", "dog" in "Is a
    hot dog a sandwich?") is the best hit, and the relative floor, set by that hit, cannot
    reject it; with two terms, a general question shares one ("live" in "Where do penguins
    live?" with "I live in Munich"). A request about the user ("Write a short poem about my
    parrot") often shares one word with what they told, so it is exempt. Elasticsearch's
    ``minimum_should_match`` applied to the best hit rather than to each (each: LoCoMo Hit@5
    −0.014; the best: −0.001, README "Recall quality").
    """
    least = settings.recall_min_shared_terms
    if least <= 0 or asks_about_the_user(query):
        return True
    terms = query_tokens(query, settings.recall_query_max_terms)
    if len(terms) < least:
        return True
    return index.shares_terms(scope, terms, [c.memory_id for c in hits], least)


def _own_words(memories: dict[int, Memory], hit: Candidate) -> str:
    """A hit's own text and its slot words (a fact's words, not its neighbours')."""
    memory = memories.get(hit.memory_id)
    return "" if memory is None else f"{memory.content}\n{slot_terms(memory.key)}"


def _is_fact(memories: dict[int, Memory], hit: Candidate) -> bool:
    """Whether a hit is a fact learned from a conversation (``source`` ``extraction``)."""
    memory = memories.get(hit.memory_id)
    return memory is not None and memory.source == "extraction"


def _content(memories: dict[int, Memory], hit: Candidate) -> str:
    memory = memories.get(hit.memory_id)
    return "" if memory is None else memory.content


class KeywordLeg(msgspec.Struct):
    """The floored keyword hits, their records and prepared features, by rowid."""

    hits: list[Candidate]
    memories: dict[int, Memory]
    prepared: dict[int, Prepared]


async def keyword_leg(
    store: MemoryStore,
    engine: Engine | None,
    scope: Scope,
    query: str,
    settings: Settings,
    now: float,
    echo_of: str,
    prepared_fp: str | None = None,
) -> KeywordLeg:
    """The keyword leg for ``query`` in ``scope``: hits floored, their records and features.

    BM25 hits (``recall_top_k``; the engine's in-memory index, else FTS5), then the echoes of
    ``echo_of`` dropped and matches in question sentences demoted
    (:func:`shared.keyword_rescore.screen_keyword_hits`), then the memories about another of
    the user's people or pets than the query names
    (:func:`shared.personal_subjects.drop_other_subjects`), then, on the in-memory index, none at
    all when no hit holds ``recall_min_shared_terms`` of a longer query's terms, then the relative
    floor (``recall_relative_floor``). Hits matching only through their context are dropped with
    the screened ones they rode on (:func:`shared.context_riders.without_riders`). The hits'
    prepared features are looked up under ``prepared_fp`` (None: the cache's current preparer)
    and returned with them.
    """
    request = keyword_search_of(scope, query, settings, now)
    index = engine.keywords if engine is not None else None
    ready: dict[int, Prepared] = {}
    if index is not None:
        hits, memories, ready = await index_candidates(index, request, settings, prepared_fp)
    else:
        hits, memories = await keyword_candidates(store, request)
    # an echo of the query (a stored copy of this question) never sets the floor; a memory that
    # asked about the query's words is rescored first, with features prepared when the
    # memories were indexed (else analysed here)
    kept = screen_keyword_hits(index, scope, query, echo_of, hits, memories, settings, ready)
    # "What is my dog called?" is not answered by "My sister is called Anna", nor by the turns
    # beside it that match only through their context (it is in it)
    screened = kept
    kept = drop_other_subjects(
        query, kept, lambda c: _content(memories, c), lambda c: features_of(ready, c.memory_id)
    )
    kept = without_riders(query, screened, kept, lambda c: _own_words(memories, c))
    # "Where do I live?" is answered by "User lives in Munich", not by the turns beside it
    kept = without_fact_riders(
        query, kept, lambda c: _own_words(memories, c), lambda c: _is_fact(memories, c)
    )
    if index is not None and kept and not _shares_enough(index, scope, query, kept, settings):
        kept = []
    floored = apply_relevance_floor(kept, relative_floor=settings.recall_relative_floor)
    return KeywordLeg(floored, memories, ready)
