"""The immutable part of an owner's keyword index: numpy postings with precomputed BM25 weights.

Layout (built once per owner load, O(tokens) with vectorised numpy):

* ``vocab``: term → term id; ``term_start[t] : term_start[t + 1]`` is term ``t``'s slice of
* ``post_doc`` (int32 document positions, ascending) and ``post_w`` (float32): the document's
  BM25 term-frequency factor ``f·(k1 + 1) / (f + k1·(1 − b + b·|D| / avgdl))``, where ``f`` is the
  field-weighted frequency ``tf_text + w_context · tf_context`` and ``|D|`` the document's total
  token count over both fields (how SQLite FTS5's ``bm25()`` combines column weights, see
  ``fts5_aux.c``; Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
  Beyond", 2009).

A query then costs one fancy-indexed ``+=`` per query term over that term's postings, plus a
visibility check and a partial sort over the matched documents only (no per-match Python). IDF is
applied at query time, so the statistics can span several partitions (the owner's and the
global one). Deleted or replaced documents are tombstoned in ``alive``; their postings stay until
the owner is rebuilt.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from shared.models import Memory
from shared.recall_index.prepared import Prepared, prepared_bytes
from shared.recall_index.visibility import column_facts

__all__ = [
    "COLUMNS",
    "Bm25Params",
    "Memories",
    "PreparedSeq",
    "Segment",
    "SegmentData",
    "segment_from",
    "tf_factor",
    "touched_at",
]


class Bm25Params(msgspec.Struct, frozen=True):
    """BM25 parameters.

    BM25 parameters: ``k1`` ≥ 0 (term-frequency saturation), ``b`` ∈ [0, 1] (length
    normalisation) and ``context_weight`` ≥ 0 (weight of a ``context`` occurrence relative to
    one in the memory's own text).
    """

    k1: float
    b: float
    context_weight: float


def tf_factor(
    f: npt.NDArray[np.float64], dl: npt.NDArray[np.float64], avgdl: float, p: Bm25Params
) -> npt.NDArray[np.float64]:
    """BM25's term-frequency factor for weighted frequencies ``f`` in documents of length ``dl``."""
    norm = p.k1 * (1.0 - p.b + p.b * dl / max(avgdl, 1e-9))
    out: npt.NDArray[np.float64] = f * (p.k1 + 1.0) / (f + norm)
    return out


class Memories(Protocol):
    """The records of a segment's documents by position (a list, or decoded on first access)."""

    def __len__(self) -> int: ...
    def __getitem__(self, pos: int, /) -> Memory: ...
    def __setitem__(self, pos: int, memory: Memory, /) -> None: ...


class PreparedSeq(Protocol):
    """Prepared features of a segment's documents by position (a list, or decoded lazily).

    None at a position not prepared yet (a rebuild's carried-over list, filled in later).
    """

    def __len__(self) -> int: ...
    def __getitem__(self, pos: int, /) -> Prepared | None: ...


COLUMNS = {
    "ids": np.int64,
    "user": np.int32,
    "session": np.int32,
    "expires": np.float64,
    "type": np.int8,
    "access": np.int32,
    "touched": np.float64,
}
"""Per-document columns (besides ``alive``) and their dtypes; see :func:`visible_mask`."""


class Segment:
    """Postings and per-document columns of ``n`` documents (see module docstring)."""

    def __init__(
        self,
        memories: Memories,
        vocab: dict[str, int],
        postings: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]],
        avgdl: float,
        cols: dict[str, npt.NDArray[Any]],
        users: list[str],
        sessions: list[str],
        prepared: tuple[PreparedSeq | None, str] = (None, ""),
    ) -> None:
        self.memories = memories
        #: Prepared features by position (:mod:`shared.recall_index.prepared`) and the
        #: fingerprint of the preparer that made them; None when not prepared.
        self.prepared, self.prepared_fp = prepared
        self.vocab = vocab
        self.term_start, self.post_doc, self.post_w = postings
        self.avgdl = avgdl
        self.users = {u: i + 1 for i, u in enumerate(users)}
        self.sessions = {u: i + 1 for i, u in enumerate(sessions)}
        ids = cols["ids"]
        self.pos_of = dict(zip(ids.tolist(), range(len(ids)), strict=True))
        self.max_w = (
            np.maximum.reduceat(self.post_w, self.term_start[:-1])
            if len(vocab)
            else np.zeros(0, np.float32)
        )
        self.cols = {"alive": np.ones(len(ids), dtype=np.bool_), **cols}
        self.dead = 0
        #: What the fixed columns hold (lets the visibility check skip always-true tests).
        self.facts = column_facts(self.cols)
        #: Whether positions are in ascending rowid order (then ties by position are by rowid).
        self.ids_ascending = bool((ids[1:] > ids[:-1]).all())
        #: The smallest tf factor (> 0: every posting adds a positive score).
        self.min_w = float(self.post_w.min()) if len(self.post_w) else 0.0
        self._postings: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]] = {}
        self._slots: list[npt.NDArray[np.int32]] = []  # see borrow_slots
        self._scans: list[ScanScratch] = []  # see borrow_scan

    def __len__(self) -> int:
        return len(self.cols["ids"])

    def df(self, term: str) -> int:
        """Documents of this segment holding ``term`` (tombstoned ones included)."""
        t = self.vocab.get(term)
        return 0 if t is None else int(self.term_start[t + 1] - self.term_start[t])

    def postings(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """``(positions, tf factors)`` of ``term`` (empty arrays for an unknown term).

        Memoised per term (views into the postings, which never change; at most
        :data:`POSTINGS_MEMO` terms).
        """
        got = self._postings.get(term)
        if got is not None:
            return got
        t = self.vocab.get(term)
        if t is None:
            got = _EMPTY_I, _EMPTY_F
        else:
            s, e = int(self.term_start[t]), int(self.term_start[t + 1])
            got = self.post_doc[s:e], self.post_w[s:e]
        if len(self._postings) >= POSTINGS_MEMO:
            self._postings.clear()
        self._postings[term] = got
        return got

    def borrow_slots(self) -> npt.NDArray[np.int32]:
        """Scratch of one int32 per document, all -1; give it back with :meth:`return_slots`.

        Kept between searches (a fresh one costs a pass over the documents); a search running
        while another holds it gets a fresh one.
        """
        try:
            return self._slots.pop()
        except IndexError:
            return np.full(len(self), -1, dtype=np.int32)

    def return_slots(self, slots: npt.NDArray[np.int32]) -> None:
        """Give back scratch from :meth:`borrow_slots`, all -1 again."""
        if not self._slots:
            self._slots.append(slots)

    def borrow_scan(self) -> ScanScratch:
        """Scratch of the compiled scan: ``(acc, count, touched)``, one of each per document.

        ``acc`` float64 and ``count`` uint8 all 0, ``touched`` int32 (13 bytes per document);
        give it back with :meth:`return_scan`. Kept like :meth:`borrow_slots`.
        """
        try:
            return self._scans.pop()
        except IndexError:
            n = len(self)
            return (
                np.zeros(n, dtype=np.float64),
                np.zeros(n, dtype=np.uint8),
                np.empty(n, dtype=np.int32),
            )

    def return_scan(self, scratch: ScanScratch) -> None:
        """Give back scratch from :meth:`borrow_scan`, ``acc`` and ``count`` all 0 again."""
        if not self._scans:
            self._scans.append(scratch)

    def term_maxes(self, terms: list[str]) -> npt.NDArray[np.float32]:
        """The largest tf factor of each of ``terms`` (all present), in one gather."""
        return self.max_w.take([self.vocab[t] for t in terms])

    def term_max(self, term: str) -> npt.NDArray[np.float32]:
        """The largest tf factor of ``term`` (a 1-element array; the term must be present)."""
        t = self.vocab[term]
        return self.max_w[t : t + 1]

    def kill(self, memory_id: int) -> bool:
        """Tombstone ``memory_id``; True when it was a live document of this segment."""
        pos = self.pos_of.get(memory_id)
        if pos is None or not self.cols["alive"][pos]:
            return False
        self.cols["alive"][pos] = False
        self.dead += 1
        return True

    def touch(self, memory_id: int, access_count: int, last_accessed_at: float | None) -> None:
        """Record new access counters of a live document (the retention filter reads them)."""
        pos = self.pos_of.get(memory_id)
        if pos is None:
            return
        m = msgspec.structs.replace(
            self.memories[pos], access_count=access_count, last_accessed_at=last_accessed_at
        )
        self.memories[pos] = m
        self.cols["access"][pos] = access_count
        self.cols["touched"][pos] = touched_at(m)

    def nbytes(self) -> int:
        """Approximate memory held: arrays plus the texts and records."""
        n = len(self)
        arrays = self.term_start.nbytes + self.post_doc.nbytes + self.post_w.nbytes
        arrays += sum(a.nbytes for a in self.cols.values())
        held = getattr(self.memories, "nbytes", None)
        if held is None:
            held = sum(len(self.memories[i].content) + len(self.memories[i].key) for i in range(n))
        prepared = self.prepared
        if isinstance(prepared, list):  # None where not prepared yet (a rebuild's carry-over)
            held += sum(prepared_bytes(p) for p in prepared if p is not None)
        elif prepared is not None:  # decoded from the snapshot blob counted with the records
            held += 120 * n
        slots = 17 * n  # the scratch of searches (borrow_slots, borrow_scan), once they ran
        return arrays + held + slots + 90 * len(self.vocab) + 460 * n


ScanScratch = tuple[npt.NDArray[np.float64], npt.NDArray[np.uint8], npt.NDArray[np.int32]]
"""``(acc, count, touched)`` of :meth:`Segment.borrow_scan`."""

POSTINGS_MEMO = 4096
"""Terms whose postings views a segment keeps (a few hundred bytes each)."""
_EMPTY_I: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
_EMPTY_F: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)


def touched_at(m: Memory) -> float:
    """The ``touched`` column of ``m``: last access, else creation (unix seconds)."""
    return float(m.last_accessed_at if m.last_accessed_at is not None else m.created_at)


class SegmentData(msgspec.Struct):
    """What a segment is built from, independent of the BM25 parameters.

    Per (term, document) pair, in term-id then position order: ``post_doc`` (int32 position),
    ``tf_own``/``tf_ctx`` (float32 occurrences in the memory's text / its context); per term
    (ids by first occurrence) ``terms`` and ``term_start`` (int64, ``len(terms) + 1``); per
    document ``own_len``/``ctx_len`` (int32 token counts) and :data:`COLUMNS` (user and session
    ids as codes: code ``i + 1`` is ``users[i]``, 0 = none), built by
    :class:`shared.recall_index.builder.SegmentBuilder`; per document its ``prepared`` features
    (None when not prepared) made by the preparer whose fingerprint is ``prepared_fp``. This is
    what an owner snapshot stores (:mod:`shared.recall_index.snapshot`): a load skips the
    analysis and the preparation.
    """

    memories: Memories
    cols: dict[str, npt.NDArray[Any]]
    users: list[str]
    sessions: list[str]
    terms: list[str]
    term_start: npt.NDArray[np.int64]
    post_doc: npt.NDArray[np.int32]
    tf_own: npt.NDArray[np.float32]
    tf_ctx: npt.NDArray[np.float32]
    own_len: npt.NDArray[np.int32]
    ctx_len: npt.NDArray[np.int32]
    prepared: PreparedSeq | None = None
    prepared_fp: str = ""


WEIGHT_STEP = 1 << 18
"""Postings weighed per numpy step in :func:`segment_from` (temporaries of a few MB that stay in
cache, instead of several arrays as large as all postings: at 1M memories, 45M postings, the
one-shot version spent 29 s wall / 6 s CPU mostly faulting in fresh 360 MB temporaries)."""


def segment_from(data: SegmentData, p: Bm25Params) -> Segment:
    """The searchable segment of analysed rows with parameters ``p`` (vectorised, O(postings))."""
    lengths = data.own_len.astype(np.float64) + data.ctx_len
    avgdl = float(lengths.mean()) if len(lengths) else 1.0
    w = np.empty(len(data.post_doc), dtype=np.float32)
    for s in range(0, len(w), WEIGHT_STEP):
        e = s + WEIGHT_STEP
        f = data.tf_own[s:e].astype(np.float64)
        f += p.context_weight * data.tf_ctx[s:e].astype(np.float64)
        w[s:e] = tf_factor(f, lengths[data.post_doc[s:e]], avgdl, p)
    return Segment(
        data.memories,
        dict(zip(data.terms, range(len(data.terms)), strict=True)),
        (data.term_start, data.post_doc, w),
        avgdl,
        data.cols,
        data.users,
        data.sessions,
        (data.prepared, data.prepared_fp),
    )
