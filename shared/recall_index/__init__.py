"""The in-memory keyword recall engine: per-owner BM25 indexes cached from the store of record.

Public surface (kept stable for the benchmarks and the ranking work built on it):

* :class:`KeywordIndex` — ``await index.search(KeywordSearch(scope=, query=, limit=, now=,
  retention=, common_df=))`` → ``[(Memory, score)]`` best first (score > 0, higher better),
  with exactly the visibility of :func:`shared.store.memories.visibility_sql`.
* :func:`build_keyword_index` — one per process and store, from :class:`Settings` (``bm25_k1``,
  ``bm25_b``, ``recall_context_weight``, ``recall_cache_mb``, ``recall_freshness_ms``) and the
  :class:`~shared.recall_index.prepared.Preparer` of block lines (the engine passes
  :func:`shared.memory_render.preparer_for` of the redaction settings).
* :meth:`KeywordIndex.prepared` — the block lines and echo features prepared when the returned
  memories were indexed (:mod:`shared.recall_index.prepared`).

Modules: ``analysis`` (FTS5-equivalent tokens), ``segment``/``delta``/``owner`` (index and
BM25 search), ``visibility`` (filters), ``feed`` (the change-feed interface and its SQLite
implementation), ``cache`` (LRU of owners kept fresh from the feed). See docs/ARCHITECTURE.md,
"Recall engine".
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from shared.models import GLOBAL_OWNER, Memory, Scope
from shared.recall_index.analysis import query_tokens
from shared.recall_index.cache import OwnerCache
from shared.recall_index.feed import RecallSource, SqliteSource
from shared.recall_index.owner import idf, search
from shared.recall_index.prepared import Prepared, Preparer
from shared.recall_index.segment import Bm25Params
from shared.settings import Settings
from shared.store import Store
from shared.store.connection import on_commit
from shared.store.memories import KeywordSearch

__all__ = [
    "Bm25Params",
    "KeywordIndex",
    "RecallSource",
    "bm25_params",
    "build_keyword_index",
]


class KeywordIndex:
    """Keyword (BM25) recall over cached owner indexes; see the package docstring."""

    def __init__(self, cache: OwnerCache) -> None:
        self.cache = cache
        #: Commits of this process so far (:meth:`note_commit`) and how many of them a completed
        #: :meth:`fresh` has seen.
        self.commits = 0
        self.seen_commits = 0

    def note_commit(self) -> None:
        """Count one commit of this process (a store commit hook)."""
        self.commits += 1

    def fresh_within(self, max_age_s: float) -> bool:
        """Whether the cache may answer without waiting for the change feed (no I/O).

        True when a completed :meth:`fresh` has seen every commit of this process and the last
        completed feed read started less than ``max_age_s`` seconds ago (so another process's
        change is missing for at most that long).
        """
        age = time.monotonic() - self.cache.polled_at
        return self.seen_commits == self.commits and age < max_age_s

    def fresh_now(self) -> bool:
        """Whether the cache is fresh without waiting (:meth:`OwnerCache.fresh_now`).

        When True, it is exactly as fresh as after :meth:`fresh` (which would return at once).
        """
        if not self.cache.fresh_now():
            return False
        self.seen_commits = max(self.seen_commits, self.commits)
        return True

    @property
    def params(self) -> Bm25Params:
        """The BM25 parameters the cached indexes were built with."""
        return self.cache.params

    async def search(self, request: KeywordSearch) -> list[tuple[Memory, float]]:
        """The ``request.limit`` best visible memories for ``request.query``, best first.

        Terms held by at least ``request.common_df`` of the caller's documents are dropped when
        rarer ones exist (every term that common: all must match); 0 keeps every term.

        Raises:
            StoreError: the change feed or a cold owner could not be read.
        """
        return [(m, score) for m, score, _ in await self.search_prepared(request)]

    async def search_prepared(
        self, request: KeywordSearch, fingerprint: str | None = None
    ) -> list[tuple[Memory, float, Prepared | None]]:
        """:meth:`search`, each hit with its features prepared under ``fingerprint``.

        ``(memory, score, features)``: the features (block line, echo and question features)
        that a preparer of ``fingerprint`` (None: the cache's current one) made for exactly this
        record when it was indexed, None when there are none (the caller prepares it). The
        answer :meth:`prepared` would give, read by the hit's position instead of a look-up per
        rowid.

        Raises:
            StoreError: the change feed or a cold owner could not be read.
        """
        terms = query_tokens(request.query)
        if not terms or request.limit <= 0:
            return []
        scope = request.scope
        await self.cache.fresh()
        parts = [await self.cache.owner(scope.owner_id)]
        if scope.include_global and scope.owner_id != GLOBAL_OWNER:
            parts.append(await self.cache.owner(GLOBAL_OWNER))
        return search(
            parts,
            scope,
            terms,
            now=request.now,
            retention=request.retention,
            limit=request.limit,
            common_df=request.common_df,
            fingerprint=self._fingerprint(fingerprint),
        )

    def _fingerprint(self, fingerprint: str | None) -> str | None:
        """``fingerprint``, or the cache's current preparer's when None (None without one)."""
        if fingerprint is not None:
            return fingerprint
        held = self.cache.prepare
        return None if held is None else held.fingerprint

    async def fresh(self) -> None:
        """Wait until the cache is fresh enough to answer (:meth:`OwnerCache.fresh`).

        Raises:
            StoreError: the change feed could not be read.
        """
        commits = self.commits
        await self.cache.fresh()
        self.seen_commits = max(self.seen_commits, commits)

    def cached(self, scope: Scope, ids: list[int]) -> dict[int, Memory]:
        """Live memories among ``ids`` that the cache already holds for ``scope``'s partitions.

        Live memories among ``ids`` that the cache already holds for ``scope``'s partitions
        (no I/O; callers read the rest from the store).
        """
        found: dict[int, Memory] = {}
        for owner_id in (scope.owner_id, GLOBAL_OWNER):
            index = self.cache.owners.get(owner_id)
            if index is not None:
                found.update(index.lookup(ids))
        return found

    def prepared(
        self, scope: Scope, memories: Iterable[Memory], fingerprint: str | None = None
    ) -> dict[int, Prepared]:
        """Prepared features of ``memories`` (as returned by :meth:`search`), by rowid.

        Only those prepared for the very record given, under ``fingerprint`` (the caller's
        preparer, :attr:`shared.recall_index.prepared.Preparer.fingerprint`; None: the cache's
        current one, enough for the echo features, which do not depend on redaction); the caller
        prepares the rest. No I/O.
        """
        wanted = self._fingerprint(fingerprint)
        if wanted is None or self.cache.prepare is None:
            return {}
        by_owner: dict[str, list[Memory]] = {}
        for m in memories:
            if m.owner_id in (scope.owner_id, GLOBAL_OWNER):
                by_owner.setdefault(m.owner_id, []).append(m)
        found: dict[int, Prepared] = {}
        for owner_id, listed in by_owner.items():
            index = self.cache.owners.get(owner_id)
            if index is not None:
                found.update(index.prepared_of(listed, wanted))
        return found

    def use_preparer(self, prepare: Preparer) -> None:
        """Prepare with ``prepare`` from now on (a redaction configuration change).

        Cached owners are dropped when its fingerprint differs: reloaded on their next use, their
        features prepared again in the background (until then lines are rendered on the fly).
        """
        held = self.cache.prepare
        if held is None or held.fingerprint != prepare.fingerprint:
            self.cache.prepare = prepare
            self.cache.owners.clear()

    def term_weights(self, scope: Scope, terms: Sequence[str]) -> dict[str, float]:
        """The BM25 IDF of each of ``terms`` under ``scope``'s statistics, from cached owners.

        The IDF the search weighs each term with (FTS5's, floored at 1e-6; ``N`` and ``df`` over
        the owner's partition plus the global one when ``scope`` includes it). No I/O: ``{}``
        when none of those partitions is cached (callers then weigh every term 1.0).
        """
        owners = [scope.owner_id]
        if scope.include_global and scope.owner_id != GLOBAL_OWNER:
            owners.append(GLOBAL_OWNER)
        parts = [p for p in (self.cache.owners.get(o) for o in owners) if p is not None]
        if not parts:
            return {}
        n = sum(p.stat_docs for p in parts)
        live = [p for p in parts if p.stat_docs]  # an empty partition adds nothing to df
        if len(live) == 1:
            df = live[0].df
            return {t: idf(n, df(t)) for t in terms}
        return {t: idf(n, sum(p.df(t) for p in live)) for t in terms}

    def shares_terms(
        self, scope: Scope, terms: Sequence[str], ids: Sequence[int], least: int
    ) -> bool:
        """Whether one of the memories ``ids`` holds at least ``least`` of the index ``terms``.

        Over the cached partitions ``scope`` searches (:meth:`OwnerIndex.shares_terms`); no
        I/O (after a search of ``scope`` they are cached). Own text and context both count.
        """
        owners = [scope.owner_id]
        if scope.include_global and scope.owner_id != GLOBAL_OWNER:
            owners.append(GLOBAL_OWNER)
        return any(
            part.shares_terms(terms, ids, least)
            for part in (self.cache.owners.get(o) for o in owners)
            if part is not None
        )

    def reconfigure(self, params: Bm25Params) -> None:
        """Use new BM25 parameters: cached owners are dropped and rebuilt on their next use."""
        if params != self.cache.params:
            self.cache.params = params
            self.cache.owners.clear()

    async def close(self) -> None:
        """Stop background work (feed pruning, loads in progress)."""
        await self.cache.close()


def bm25_params(settings: Settings) -> Bm25Params:
    """The index parameters from ``settings``."""
    return Bm25Params(
        k1=settings.bm25_k1, b=settings.bm25_b, context_weight=settings.recall_context_weight
    )


def build_keyword_index(
    settings: Settings, store: Store, prepare: Preparer | None = None
) -> KeywordIndex:
    """A keyword index over ``store`` that sees this process's commits at once.

    A keyword index over ``store`` that sees this process's commits at once (commit hook on
    the store's writer) and other processes' by the next recall that starts after they
    committed (see :class:`OwnerCache`). ``prepare``: prepares each indexed memory's block line
    and echo features (None: the request path renders them on the fly).
    """
    cache = OwnerCache(
        SqliteSource(store.reader, store.path, writer=store.writer),
        bm25_params(settings),
        budget_bytes=settings.recall_cache_mb * 1024 * 1024,
        freshness_s=settings.recall_freshness_ms / 1000,
        prepare=prepare,
    )
    on_commit(store.writer, cache.mark_stale)
    index = KeywordIndex(cache)
    on_commit(store.writer, index.note_commit)
    return index
