"""Exact BM25 top-k over a segment's postings, with MaxScore pruning.

A query's cost should not grow with how many documents hold one of its terms. MaxScore (Turtle &
Flood, "Query evaluation: strategies and optimizations", IP&M 31(6), 1995) splits the query terms
by their score upper bound ``ub_t = idf_t · max tf factor of t``: candidates are drawn only from
the postings of the "essential" terms (highest bounds first); every candidate is then scored
exactly over every term (a small term's postings looked up in a per-document slot array, a
large term's sorted postings binary-searched), and the ``limit``-th best visible candidate score
``θ`` is compared with the sum of the remaining terms' bounds. A
document holding none of the essential terms scores at most that sum, so once the sum is below
``θ`` the candidates' top is the exact top; otherwise the next term becomes essential. Common
terms (large postings, low IDF, hence low bounds) are then only probed, never scanned.

Scores are bit-identical to the exhaustive scorer (:func:`dense_top`): per document, the float32
products ``idf · w`` are added into a float64 accumulator in the same term order. Ties are broken
by document position (= rowid order), in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from shared.recall_index.segment import Segment

try:  # the compiled scan (shared/recall_index/_bm25scan.c), built at install
    from shared.recall_index import _bm25scan
except ImportError:  # not built (no C compiler at install): the numpy scorer alone
    _bm25scan = None  # type: ignore[assignment]

__all__ = [
    "BOUND_SLACK",
    "DENSE_DOCS",
    "DENSE_DOCS_COMPILED",
    "DENSE_SHARE",
    "PROBE",
    "SCAN_SHARE",
    "dense_top",
    "numpy_dense_top",
    "pruned_top",
    "select_top",
    "visible_top",
]

Visible = Callable[[npt.NDArray[np.intp]], npt.NDArray[np.bool_]]
"""Visibility of document positions (a boolean mask over them)."""
Hits = tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]
"""``(document positions, scores)``, best first."""
Postings = tuple[float, npt.NDArray[np.int32], npt.NDArray[np.float32]]
"""``(idf, ascending document positions, tf factors)`` of one query term."""

BOUND_SLACK = 1e-9
"""Relative margin on the summed bounds (float64 rounding of the sum never lets a doc slip)."""
DENSE_SHARE = 0.25
"""Scan every posting instead once the candidates exceed this share of the segment."""
DENSE_DOCS = 50_000
"""Segments up to this size are scanned by numpy: a scan of ~3,000 postings beats pruning's fixed
cost."""
DENSE_DOCS_COMPILED = 100_000
"""Segments up to this size are scanned by the compiled scan: at 100k LoCoMo turns, a whole
keyword recall (``recall_block``) took 0.47 ms per query scanned against 0.61 ms pruned (median
of 10 alternated rounds of 300 distinct LoCoMo questions, one process)."""
PROBE = 4
SCAN_SHARE = 8
""":func:`_score` scans a term's postings when they are at most this many times the candidates
(else it binary-searches each candidate in them: ~log2(postings) steps)."""
""":func:`visible_top` checks the visibility of this many times ``limit`` best documents first."""

_KERNEL_TERMS = 255
"""The compiled scan's term limit (its per-document match counter is one byte)."""
_TAG = 64
"""Term tag space of :func:`_promising` (more than ``shared.fts_query.DEFAULT_MAX_TERMS``)."""
_POSITIVE = 1e-30
"""A product ``idf · w`` above this in float64 is above 0 in float32 too (no underflow)."""
_EMPTY_IDX: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
_EMPTY_SCORES: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)


def select_top(idx: npt.NDArray[np.intp], scores: npt.NDArray[np.float64], limit: int) -> Hits:
    """The best ``limit`` of ``idx`` (distinct positions) by score, ties by smaller position.

    ``limit`` 0 keeps all. Returns them best first.
    """
    if 0 < limit < len(idx):
        cut = len(scores) - limit
        kth = np.partition(scores, cut)[cut]
        keep = np.flatnonzero(scores >= kth)
        if len(keep) > limit:  # ties at the limit: the smaller positions among them
            above = np.flatnonzero(scores > kth)
            ties = np.flatnonzero(scores == kth)
            ties = ties[np.argsort(idx[ties], kind="stable")][: limit - len(above)]
            keep = np.concatenate([above, ties])
        idx, scores = idx.take(keep), scores.take(keep)  # take(): faster than [] on small arrays
    order = np.lexsort((idx, -scores))
    return idx.take(order), scores.take(order)


def _score(
    cand: npt.NDArray[np.intp], terms: Sequence[Postings], slots: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int16]]:
    """Exact scores and matched-term counts of the distinct positions ``cand``.

    ``slots``: scratch of one int32 per document, all -1 (so again on return). A term with few
    postings (at most :data:`SCAN_SHARE` x the candidates) has its postings looked up in
    ``slots`` (which holds each candidate's row); the candidates are binary-searched in a larger
    one's. A term a candidate lacks adds nothing, which is what adding an exact ``0.0`` does to
    the float64 sum.
    """
    acc = np.zeros(len(cand), dtype=np.float64)
    matched = np.zeros(len(cand), dtype=np.int16)
    probe: npt.NDArray[np.int32] | None = None
    slots[cand] = np.arange(len(cand), dtype=np.int32)
    try:
        for idf, docs, w in terms:
            if len(docs) <= SCAN_SHARE * len(cand):
                at = slots.take(docs)
                hit = np.flatnonzero(at >= 0)
                rows = at.take(hit)
                acc[rows] += idf * w.take(hit)
                matched[rows] += 1
                continue
            if probe is None:  # the postings' dtype: a mixed-dtype search copies the postings
                probe = cand.astype(np.int32)
            pos = docs.searchsorted(probe)
            np.minimum(pos, len(docs) - 1, out=pos)
            found = docs.take(pos) == probe
            acc += np.where(found, idf * w.take(pos), 0.0)
            matched += found
    finally:
        slots[cand] = -1
    return acc, matched


def _postings_of(
    seg: Segment, weights: dict[str, float]
) -> tuple[list[npt.NDArray[np.int32]], list[npt.NDArray[np.float32]], list[float]]:
    """The postings and IDFs of the ``weights`` terms the segment holds, in query order."""
    docs_of: list[npt.NDArray[np.int32]] = []
    w_of: list[npt.NDArray[np.float32]] = []
    idfs: list[float] = []
    for term, idf in weights.items():
        docs, w = seg.postings(term)
        if len(docs):
            docs_of.append(docs)
            w_of.append(w)
            idfs.append(idf)
    return docs_of, w_of, idfs


def dense_top(
    seg: Segment, weights: dict[str, float], visible: Visible, limit: int, need: int = 1
) -> Hits:
    """The exhaustive scorer: every posting of every term, then :func:`visible_top`.

    ``need``: documents must hold at least this many of the terms. Runs the compiled scan
    (``_bm25scan.c``: one pass over the postings and a heap of the best) when it is built, else
    :func:`numpy_dense_top`; both give the same positions, order and bit-identical scores.
    """
    docs_of, w_of, idfs = _postings_of(seg, weights)
    if not docs_of or (need > len(docs_of)):
        return _EMPTY_IDX, _EMPTY_SCORES
    if _bm25scan is None or len(docs_of) > _KERNEL_TERMS:
        return _numpy_dense(seg, docs_of, w_of, idfs, visible, limit, need)
    scan = _Scan(seg, docs_of, w_of, idfs, need)
    return _visible_best(scan.top, len(seg), visible, limit)


class _Scan:
    """One query's arguments of the compiled scan over one segment."""

    __slots__ = ("docs", "idfs", "need", "seg", "weights")

    def __init__(
        self,
        seg: Segment,
        docs: list[npt.NDArray[np.int32]],
        weights: list[npt.NDArray[np.float32]],
        idfs: list[float],
        need: int,
    ) -> None:
        self.seg, self.docs, self.weights, self.need = seg, docs, weights, need
        self.idfs = np.array(idfs, dtype=np.float32)

    def top(self, k: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], int]:
        """The best ``k`` matching positions and scores, best first, and how many matched."""
        idx = np.empty(k, dtype=np.intp)
        scores = np.empty(k, dtype=np.float64)
        scratch = self.seg.borrow_scan()
        try:
            acc, count, touched = scratch
            got, matched = _bm25scan.scan(
                self.docs, self.weights, self.idfs, self.need, acc, count, touched, idx, scores
            )
        finally:
            self.seg.return_scan(scratch)  # the scan zeroes what it used, even on an error
        return idx[:got], scores[:got], int(matched)


def numpy_dense_top(
    seg: Segment, weights: dict[str, float], visible: Visible, limit: int, need: int = 1
) -> Hits:
    """:func:`dense_top` in numpy only (the fallback of the compiled scan, and its reference)."""
    docs_of, w_of, idfs = _postings_of(seg, weights)
    if not docs_of or (need > len(docs_of)):
        return _EMPTY_IDX, _EMPTY_SCORES
    return _numpy_dense(seg, docs_of, w_of, idfs, visible, limit, need)


def _numpy_dense(
    seg: Segment,
    docs_of: list[npt.NDArray[np.int32]],
    w_of: list[npt.NDArray[np.float32]],
    idfs: list[float],
    visible: Visible,
    limit: int,
    need: int,
) -> Hits:
    """The numpy scorer over the gathered postings.

    One ``bincount`` over the concatenated postings adds each document's products in term
    order, as a loop of ``acc[docs] += idf * w`` over the terms would.
    """
    if len(docs_of) == 1:  # one term: its postings are the matches, in position order
        idx = docs_of[0].astype(np.intp)
        return visible_top(idx, (idfs[0] * w_of[0]).astype(np.float64), visible, limit)
    every = np.concatenate(docs_of)
    lengths = [len(d) for d in docs_of]
    products = np.concatenate(w_of) * np.repeat(np.array(idfs, dtype=np.float32), lengths)
    acc = cast("npt.NDArray[np.float64]", np.bincount(every, products, minlength=len(seg)))
    if need > 1:
        idx = np.flatnonzero(np.bincount(every, minlength=len(seg)) >= need)
    elif min(idfs) * seg.min_w > _POSITIVE:  # every product > 0: matched = positive score
        idx = np.flatnonzero(acc > 0)  # a bool mask: nonzero() scans it several times faster
    else:
        idx = np.flatnonzero(np.bincount(every, minlength=len(seg)) > 0)
    return visible_top(idx, acc.take(idx), visible, limit)


def visible_top(
    idx: npt.NDArray[np.intp], scores: npt.NDArray[np.float64], visible: Visible, limit: int
) -> Hits:
    """:func:`select_top` of the visible documents among ``idx``, checking the best first.

    Identical to ``select_top(idx[vis], scores[vis], limit)`` with ``vis = visible(idx)``; the
    best are checked first (:func:`_visible_best`).
    """

    def top(k: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], int]:
        best, best_scores = select_top(idx, scores, k if k < len(idx) else 0)
        return best, best_scores, len(idx)

    return _visible_best(top, len(idx), visible, limit)


def _visible_best(
    top: Callable[[int], tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], int]],
    most: int,
    visible: Visible,
    limit: int,
) -> Hits:
    """The best ``limit`` visible matches (all of them for ``limit`` 0), best first.

    ``top(k)``: the best ``min(k, matched)`` matches by (score, position), best first, and how
    many matched; ``most``: no more than that many can match. The best :data:`PROBE` x ``limit``
    are checked first: when ``limit`` of them are visible, they are the answer (the visible ones
    among a prefix of the order are a prefix of the visible order); otherwise every match is
    checked. The one rule of the numpy and the compiled scans.
    """
    probe = min(most, PROBE * limit) if limit > 0 else most
    best, best_scores, matched = top(probe)
    if limit > 0 and matched > probe:
        vis = visible(best)
        if vis[:limit].all():
            return best[:limit], best_scores[:limit]
        if np.count_nonzero(vis) >= limit:
            return best[vis][:limit], best_scores[vis][:limit]
        best, best_scores, _ = top(matched)
    vis = visible(best)
    best, best_scores = best[vis], best_scores[vis]
    return (best[:limit], best_scores[:limit]) if limit > 0 else (best, best_scores)


def pruned_top(
    seg: Segment,
    weights: dict[str, float],
    visible: Visible,
    limit: int,
    need: int = 1,
    dense_docs: int | None = None,
) -> Hits:
    """Exactly :func:`dense_top`'s answer, touching only the postings MaxScore needs.

    With ``need`` > 1 every term is required, so the rarest term's postings are the candidates.
    Segments of at most ``dense_docs`` documents (default :data:`DENSE_DOCS_COMPILED` with the
    compiled scan, else :data:`DENSE_DOCS`) are scanned (:func:`dense_top`), which is cheaper
    there. Two rounds: the highest-bound term's documents, scored exactly, give ``θ``;
    then the next terms, until the bounds of those left sum below ``θ``, contribute the
    documents whose bound can still reach ``θ`` (:func:`_promising`), scored exactly too.
    """
    if dense_docs is None:
        dense_docs = DENSE_DOCS if _bm25scan is None else DENSE_DOCS_COMPILED
    if limit <= 0 or len(seg) <= dense_docs:
        return dense_top(seg, weights, visible, limit, need)
    terms: list[Postings] = []
    held: list[str] = []
    for term, idf in weights.items():
        docs, w = seg.postings(term)
        if len(docs):
            terms.append((idf, docs, w))
            held.append(term)
    if not terms:
        return _EMPTY_IDX, _EMPTY_SCORES
    # ub_t = idf_t · max w_t, multiplied in float32 like every product of the scorer
    idfs = np.array([t[0] for t in terms], dtype=np.float32)
    bounds: list[float] = (idfs * seg.term_maxes(held)).tolist()
    slots = seg.borrow_slots()
    try:
        if need > 1:
            rarest = min(terms, key=lambda t: len(t[1]))
            return _finish(rarest[1].astype(np.intp), terms, visible, limit, need, slots)
        found = _maxscore(len(seg), terms, bounds, visible, limit, slots)
    finally:
        seg.return_slots(slots)
    return dense_top(seg, weights, visible, limit, need) if found is None else found


def _maxscore(
    n: int,
    terms: Sequence[Postings],
    bounds: Sequence[float],
    visible: Visible,
    limit: int,
    slots: npt.NDArray[np.int32],
) -> Hits | None:
    """The two MaxScore rounds of :func:`pruned_top`; None when a scan is cheaper."""
    order = sorted(range(len(terms)), key=lambda i: -bounds[i])
    rest = [sum(bounds[i] for i in order[k:]) * (1 + BOUND_SLACK) for k in range(len(terms) + 1)]
    first = terms[order[0]][1]
    if len(first) > DENSE_SHARE * n:
        return None
    cand = first.astype(np.intp)
    acc, _ = _score(cand, terms, slots)
    vis = visible(cand)
    cand, acc = cand[vis], acc[vis]
    theta = -np.partition(-acc, limit - 1)[limit - 1] if len(cand) >= limit else -np.inf
    k = next(j for j in range(1, len(terms) + 1) if j == len(terms) or rest[j] < theta)
    if k == 1:
        return select_top(cand, acc, limit)
    more = _promising(first, [(terms[i][1], bounds[i]) for i in order[1:k]], rest[k], theta)
    if len(more) > DENSE_SHARE * n:
        return None
    more_acc, _ = _score(more, terms, slots)
    vis = visible(more)
    both = np.concatenate([cand, more[vis]])
    return select_top(both, np.concatenate([acc, more_acc[vis]]), limit)


def _promising(
    first: npt.NDArray[np.int32],
    others: Sequence[tuple[npt.NDArray[np.int32], float]],
    rest: float,
    theta: float,
) -> npt.NDArray[np.intp]:
    """Positions outside ``first`` that hold one of ``others`` and may still reach ``theta``.

    A document's score is at most the bounds of the ``others`` terms it holds plus ``rest`` (the
    bounds of the terms not listed); those below ``theta`` are left out. One sort of the
    ``others`` postings, tagged with their term, gives each document's terms.
    """
    keys = np.concatenate([docs.astype(np.int64) * _TAG + i for i, (docs, _) in enumerate(others)])
    keys.sort()
    doc = keys // _TAG
    starts = np.flatnonzero(np.concatenate([[True], doc[1:] != doc[:-1]]))
    tag_bound = np.array([b for _, b in others], dtype=np.float64)
    held = np.add.reduceat(tag_bound[keys % _TAG], starts)
    out = doc[starts][(held + rest) * (1 + BOUND_SLACK) >= theta].astype(np.intp)
    pos = np.minimum(first.searchsorted(out.astype(np.int32)), len(first) - 1)
    out_first: npt.NDArray[np.intp] = out[first[pos] != out]
    return out_first


def _finish(
    cand: npt.NDArray[np.intp],
    terms: Sequence[Postings],
    visible: Visible,
    limit: int,
    need: int,
    slots: npt.NDArray[np.int32],
) -> Hits:
    acc, matched = _score(cand, terms, slots)
    keep = matched >= need
    return visible_top(cand[keep], acc[keep], visible, limit)
