"""One owner's keyword index.

One owner's keyword index (an immutable segment plus a small delta) and BM25 search over the
partitions a caller can see (its owner's, and the global one when the scope includes it).

Ranking statistics are those of the searched partitions only: ``N`` = documents of the caller's
owner (+ the global partition), ``df`` per term over the same documents, so another
tenant's data never changes a caller's ranking. Between rebuilds a replaced or deleted document
still counts in ``df`` (its postings stay in the segment, tombstoned); the owner is rebuilt once
:data:`REBUILD_SHARE` of it changed. IDF is FTS5's: ``ln((N − df + 0.5) / (df + 0.5))``,
clamped to 1e-6 (``fts5_aux.c``), so results stay comparable with the SQL tier.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from shared.models import GLOBAL_OWNER, Memory, Scope
from shared.recall_index.builder import records_at
from shared.recall_index.delta import Delta
from shared.recall_index.postings_check import any_holds, holds
from shared.recall_index.prepared import Prepared, Preparer
from shared.recall_index.segment import Bm25Params, Segment
from shared.recall_index.topk import pruned_top
from shared.recall_index.visibility import NO_CODE, ScopeCodes, visible_mask, visible_row
from shared.store.memories import Retention

__all__ = ["REBUILD_MIN", "REBUILD_SHARE", "OwnerIndex", "idf", "search"]

REBUILD_MIN = 256
"""A delta of at most this many memories never triggers a rebuild."""
REBUILD_SHARE = 0.05
"""Rebuild once more than this share of the owner's documents was replaced or added."""
WRITTEN_LOG = 1024
"""Generations whose written memories an index remembers (:meth:`OwnerIndex.written_since`). A
busy owner's feed moves it every few ms, so a cache derived from it (a vector matrix read whole
in ~0.5 s at 10k rows) must be able to look back that far, or it would read everything again."""
DF_MEMO = 16_384
"""Terms whose document frequency an owner index keeps between writes."""
IDF_FLOOR = 1e-6
"""FTS5's floor for a non-positive IDF (a term in at least half of the documents)."""


class OwnerIndex:
    """The keyword index of one owner: ``segment`` (as loaded at feed sequence ``seq``) + delta."""

    def __init__(self, owner_id: str, segment: Segment, seq: int, params: Bm25Params) -> None:
        self.owner_id = owner_id
        self.segment = segment
        self.delta = Delta()
        self.seq = seq
        self.params = params
        self.seg_bytes = segment.nbytes()
        self.build_cpu_ms = 0.0  # CPU time the segment took to build (set by the loader)
        self.from_snapshot = False  # built from a stored snapshot (set by the loader)
        self.generation = 0  # bumped by every applied write (caches derived from it re-read)
        self._written: deque[tuple[int, frozenset[int]]] = deque(maxlen=WRITTEN_LOG)
        #: Shared by the indexes that rebuilt one another (:meth:`continue_from`): caches derived
        #: from one of them (the vector matrix) stay valid for the next, patched by generation.
        self.lineage = object()
        #: What prepared the segment's features, and prepares delta memories (set by the loader)
        self.prepare: Preparer | None = None
        self._df: dict[str, int] = {}  # df by term, emptied by every upsert and remove

    def note_written(self, memory_ids: Iterable[int]) -> None:
        """Start a new generation for a write of ``memory_ids`` (upserts and deletes)."""
        self.generation += 1
        self._written.append((self.generation, frozenset(memory_ids)))

    def continue_from(self, old: OwnerIndex) -> None:
        """Take over ``old``'s lineage, generation and write log (this index rebuilds it).

        Call before applying the changes committed since this index was built: every memory
        written after a generation of ``old`` is then in :meth:`written_since` of this one.
        """
        self.lineage = old.lineage
        self.generation = old.generation
        self._written = deque(old._written, maxlen=WRITTEN_LOG)

    def written_since(self, generation: int) -> set[int] | None:
        """The memories written after ``generation``; None when no longer known.

        Known for the last :data:`WRITTEN_LOG` generations (a cache derived from an older one
        reads everything again).
        """
        if generation == self.generation:
            return set()
        if not self._written or self._written[0][0] > generation + 1:
            return None
        out: set[int] = set()
        for seen, ids in self._written:
            if seen > generation:
                out |= ids
        return out

    @property
    def size(self) -> int:
        """Live documents (segment minus tombstones, plus delta)."""
        return len(self.segment) - self.segment.dead + len(self.delta)

    @property
    def stat_docs(self) -> int:
        """``N`` of the BM25 statistics.

        ``N`` of the BM25 statistics: documents counted by :meth:`df` (tombstoned ones
        included, like their postings, until the next rebuild).
        """
        return len(self.segment) + len(self.delta)

    def nbytes(self) -> int:
        """Approximate bytes held (what the cache budget counts)."""
        return self.seg_bytes + self.delta.bytes

    def needs_rebuild(self) -> bool:
        """True when the delta outgrew :data:`REBUILD_MIN` and :data:`REBUILD_SHARE`."""
        churn = len(self.delta) + self.segment.dead
        return churn > max(REBUILD_MIN, REBUILD_SHARE * len(self.segment))

    def upsert(self, memory: Memory, text: str, context: str, *, prepare: bool = True) -> None:
        """Apply a new or changed memory of this owner.

        ``prepare``: also prepare its features now (~0.1 ms; else recall renders it on the fly).
        """
        self._df.clear()
        self.segment.kill(memory.id)
        self.delta.add(memory, text, context, self.params.context_weight)
        if prepare and self.prepare is not None:
            self.delta.keep_prepared(memory.id, self.prepare(memory))

    def remove(self, memory_id: int) -> bool:
        """Apply a delete; True when the memory was held."""
        self._df.clear()
        return self.segment.kill(memory_id) | self.delta.remove(memory_id)

    def touch(self, memory_id: int, access_count: int, last_accessed_at: float | None) -> None:
        """Apply new access counters."""
        self.segment.touch(memory_id, access_count, last_accessed_at)
        self.delta.touch(memory_id, access_count, last_accessed_at)

    def shares_terms(self, terms: Sequence[str], ids: Sequence[int], least: int) -> bool:
        """Whether one of ``ids`` (live memories of this partition) holds ``least`` of ``terms``.

        ``terms``: distinct index terms (own text or context counts); ids this partition does
        not hold count nothing. The first segment memory is checked alone (the best hit of a
        related query holds enough: a few binary searches), then the others at once, one
        vectorised look-up per term, stopping as soon as one memory holds enough.
        """
        if least <= 0:
            return True
        delta, seg = self.delta, self.segment
        postings = [d for d in (seg.postings(t)[0] for t in terms) if len(d)]
        positions: list[int] = []
        for memory_id in ids:
            held = delta.terms.get(memory_id)
            if held is not None:
                if len(set(terms).intersection(held)) >= least:
                    return True
                continue
            pos = seg.pos_of.get(memory_id)
            if pos is None:
                continue
            if not positions and holds(postings, pos, least):
                return True  # the first segment memory alone (the common case)
            positions.append(pos)
        return any_holds(postings, positions[1:], least)

    def lookup(self, ids: Sequence[int]) -> dict[int, Memory]:
        """The live memories among ``ids``."""
        seg = self.segment
        out: dict[int, Memory] = {}
        alive = seg.cols["alive"]
        for memory_id in ids:
            pos = seg.pos_of.get(memory_id)
            if pos is not None and alive[pos]:
                out[memory_id] = seg.memories[pos]
            elif memory_id in self.delta.memories:
                out[memory_id] = self.delta.memories[memory_id]
        return out

    def prepared_of(self, memories: Sequence[Memory], fingerprint: str) -> dict[int, Prepared]:
        """Prepared features of the live ``memories`` this index holds, by rowid.

        Only features made by a preparer of ``fingerprint`` (the caller's redaction
        configuration) for exactly the held record (same text, date and category) are returned;
        callers prepare the others themselves. No I/O.
        """
        if not self._prepared_by(fingerprint):
            return {}
        seg, delta = self.segment, self.delta
        ready = seg.prepared if seg.prepared_fp == fingerprint else None
        alive = seg.cols["alive"]
        out: dict[int, Prepared] = {}
        for m in memories:
            held, p = delta.memories.get(m.id), delta.prepared.get(m.id)
            if held is None:
                pos = seg.pos_of.get(m.id)
                if pos is None or ready is None or not alive[pos]:
                    continue
                held, p = seg.memories[pos], ready[pos]
            if p is not None and _same_shown(held, m):
                out[m.id] = p
        return out

    def df(self, term: str) -> int:
        """Documents holding ``term`` (see the module docstring for tombstones).

        Memoised per term until the next write (at most :data:`DF_MEMO` terms).
        """
        got = self._df.get(term)
        if got is None:
            got = self.segment.df(term) + self.delta.df(term)
            if len(self._df) >= DF_MEMO:
                self._df.clear()
            self._df[term] = got
        return got

    def codes(self, scope: Scope) -> ScopeCodes:
        """``scope`` in this segment's codes."""
        seg = self.segment
        user = seg.users.get(scope.user_id, NO_CODE) if scope.user_id else 0
        session = 0
        if scope.session_id is not None:
            session = seg.sessions.get(scope.session_id, NO_CODE)
        return ScopeCodes(user, session, self.owner_id == GLOBAL_OWNER != scope.owner_id)

    def hits(
        self,
        weights: dict[str, float],
        scope: Scope,
        now: float,
        retention: Retention | None,
        required: Sequence[str] = (),
        limit: int = 0,
        fingerprint: str | None = None,
    ) -> tuple[npt.NDArray[np.float64], list[Memory], list[Prepared | None]]:
        """Scores, memories and prepared features of the visible documents matching ``weights``.

        Scores and memories of the visible documents matching a term of ``weights`` (term →
        IDF): the best ``limit`` of the segment (all with 0) plus every delta hit. With
        ``required``, only documents holding all of those terms count. Only the kept documents
        are touched in Python; the segment's top is exact with MaxScore pruning
        (:mod:`shared.recall_index.topk`). The third list holds each hit's features prepared by
        a preparer of ``fingerprint`` (None where there are none, all None when ``fingerprint``
        is None or not this index's preparer's): read by position, so no look-up by rowid.
        """
        seg = self.segment
        codes = self.codes(scope)

        cols, facts = seg.cols, seg.facts

        def visible(idx: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
            return visible_mask(cols, idx, codes, now, retention, facts)

        idx, scores = pruned_top(seg, weights, visible, limit, max(1, len(required)))
        held = seg.memories
        positions = idx.tolist()
        memories: list[Memory] = records_at(held, positions)
        prepared = self._prepared_by(fingerprint)
        ready = seg.prepared if prepared and seg.prepared_fp == fingerprint else None
        features: list[Prepared | None] = (
            records_at(ready, positions) if ready is not None else [None] * len(positions)
        )
        delta = self.delta
        if not delta.memories:
            return scores, memories, features
        extra = self._delta_hits(weights, scope, now, retention, required, codes.any_user)
        if extra:
            scores = np.concatenate([scores, np.fromiter(extra.values(), dtype=np.float64)])
            memories.extend(delta.memories[i] for i in extra)
            features.extend(delta.prepared.get(i) if prepared else None for i in extra)
        return scores, memories, features

    def _prepared_by(self, fingerprint: str | None) -> bool:
        """Whether this index's features were made by a preparer of ``fingerprint``."""
        return fingerprint is not None and (
            self.prepare is not None and self.prepare.fingerprint == fingerprint
        )

    def _delta_hits(
        self,
        weights: dict[str, float],
        scope: Scope,
        now: float,
        retention: Retention | None,
        required: Sequence[str],
        any_user: bool,
    ) -> dict[int, float]:
        found: dict[int, float] = {}
        count: dict[int, int] = {}
        delta, seg = self.delta, self.segment
        # BM25's tf factor (segment.tf_factor) with the average length of segment and delta
        docs = len(seg) + len(delta)
        avgdl = (seg.avgdl * len(seg) + delta.length) / docs if docs else 1.0
        k1, b = self.params.k1, self.params.b
        for term, idf in weights.items():
            for memory_id, f in delta.postings.get(term, {}).items():
                norm = k1 * (1.0 - b + b * delta.lengths[memory_id] / max(avgdl, 1e-9))
                found[memory_id] = found.get(memory_id, 0.0) + idf * f * (k1 + 1.0) / (f + norm)
                if term in required:
                    count[memory_id] = count.get(memory_id, 0) + 1
        if required:
            found = {i: s for i, s in found.items() if count.get(i, 0) >= len(required)}
        return {
            i: s
            for i, s in found.items()
            if visible_row(self.delta.memories[i], scope, now, retention, any_user=any_user)
        }


def _same_shown(a: Memory, b: Memory) -> bool:
    """Whether two records of a memory show the same text, date and category."""
    return a.content == b.content and a.created_at == b.created_at and a.category == b.category


def idf(n: int, df: int) -> float:
    """FTS5's BM25 IDF: ``ln((n − df + 0.5) / (df + 0.5))``, floored at :data:`IDF_FLOOR`."""
    value = math.log(max(n - df + 0.5, 1e-9) / (df + 0.5))
    return value if value > 0 else IDF_FLOOR


def search(
    parts: Sequence[OwnerIndex],
    scope: Scope,
    terms: Sequence[str],
    *,
    now: float,
    retention: Retention | None,
    limit: int,
    common_df: int = 0,
    fingerprint: str | None = None,
) -> list[tuple[Memory, float, Prepared | None]]:
    """BM25 top ``limit`` over ``parts`` for the analysed query ``terms``, best first.

    Returns ``(memory, score, features)``, score > 0 (higher better), ties by smaller rowid;
    ``features``: the hit's features prepared under ``fingerprint`` (None when there are none;
    always None without ``fingerprint``), see :meth:`OwnerIndex.hits`. Terms held by at least
    ``common_df`` documents are dropped when rarer terms exist; when every term is that common,
    only documents holding all of them count (0 keeps every term, as the SQL tier did).
    """
    parts = [p for p in parts if p.stat_docs]  # an empty partition adds nothing to N or df
    n = sum(p.stat_docs for p in parts)
    if len(parts) == 1:
        df = {t: parts[0].df(t) for t in terms}
    else:
        df = {t: sum(p.df(t) for p in parts) for t in terms}
    present = [t for t in terms if df[t] > 0]
    if not present or limit <= 0:
        return []
    required: list[str] = []
    if common_df > 0 and len(present) > 1:
        rare = [t for t in present if df[t] < common_df]
        if rare:
            present = rare
        elif len(present) == len(terms):
            required = present
        else:
            return []
    weights = {t: idf(n, df[t]) for t in present}
    found = [
        (part, part.hits(weights, scope, now, retention, required, limit, fingerprint))
        for part in parts
        if part.size
    ]
    found = [(part, hit) for part, hit in found if hit[1]]
    if len(found) == 1:
        part, (scores, memories, features) = found[0]
        if len(memories) <= limit and not part.delta.memories and part.segment.ids_ascending:
            # the segment's top alone, best first with ties by position, i.e. by rowid
            return list(zip(memories, scores.tolist(), features, strict=True))
    all_scores = [hit[0] for _, hit in found]
    all_memories = [m for _, hit in found for m in hit[1]]
    if not all_memories:
        return []
    all_features = [p for _, hit in found for p in hit[2]]
    return _top(np.concatenate(all_scores), all_memories, all_features, limit)


def _top(
    scores: npt.NDArray[np.float64],
    memories: list[Memory],
    features: list[Prepared | None],
    limit: int,
) -> list[tuple[Memory, float, Prepared | None]]:
    if len(memories) == 0:
        return []
    ids = np.fromiter((m.id for m in memories), dtype=np.int64, count=len(memories))
    order = np.lexsort((ids, -scores))[:limit]
    return [(memories[i], float(scores[i]), features[i]) for i in order.tolist()]
