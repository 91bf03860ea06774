"""Score fusion of the keyword and vector legs by normalised score (CombSUM), pure.

:func:`shared.ranking.fuse_candidates` fuses by rank (weighted RRF): a memory only the vector
leg found, however similar, is worth no more than a keyword hit several places down, and two hits
of one leg with nearly equal scores are as far apart as rank 1 and rank 2. CombSUM (Fox & Shaw,
"Combination of Multiple Searches", TREC-2, 1994) over min-max normalised scores keeps the size
of the gaps instead:

``score(d) = s · kw(d) / kw_best + (1 − s) · (vec(d) − vec_min) / (vec_best − vec_min)``

where ``s`` is the keyword share (0..1), ``kw`` the BM25 score (≥ 0, so its minimum is taken as
0: a memory the keyword leg did not return counts 0) and ``vec`` a cosine similarity.

With ``similarity`` (the query's cosine with every candidate, read from the in-memory vector
matrix), every candidate of either leg is scored on both signals: a keyword hit just outside the
vector leg's top k counts its own cosine instead of 0, and ``vec_min`` / ``vec_best`` are taken
over all candidates. This is the usual way of combining a lexical and a dense score over one
candidate pool (e.g. Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid
Retrieval", ACM TOIS 2023: a convex combination of normalised scores). Without it, ``vec`` is
normalised over the vector leg's returned hits and a memory the vector leg did not return counts
0. The share and its figures on LoCoMo are in the README, "Recall quality".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from shared.errors import ConfigurationError
from shared.ranking import Candidate, ScoredMemory

__all__ = ["DEFAULT_KEYWORD_SHARE", "combsum_candidates", "combsum_fuse"]

DEFAULT_KEYWORD_SHARE = 0.65
"""Keyword share of the fused score (0..1), chosen on LoCoMo (README, "Recall quality")."""


#: One fused candidate as :func:`_fused_rows` sorts it: (−score, keyword rank, vector rank,
#: rowid, keyword score, cosine); a rank is ``inf`` when the leg did not return it.
_Row = tuple[float, float, float, int, float | None, float | None]


def _unit(values: Mapping[int, float], low: float) -> dict[int, float]:
    """``(v − low) / (max − low)`` clipped to 0..1, by rowid.

    All 0 when ``max <= low`` or the span is not finite; a value that is not finite gives 0.
    """
    high = max(values.values(), default=low)
    span = high - low
    if not (math.isfinite(span) and span > 0):
        return dict.fromkeys(values, 0.0)
    out: dict[int, float] = {}
    isfinite = math.isfinite
    for i, v in values.items():
        if isfinite(v):
            x = (v - low) / span
            out[i] = (x if x < 1.0 else 1.0) if x > 0.0 else 0.0  # min(1, max(0, x))
        else:
            out[i] = 0.0
    return out


def _first_positions(leg: Sequence[Candidate]) -> dict[int, tuple[int, float]]:
    """``{rowid: (1-based position, score)}`` of each id's first hit in ``leg``."""
    out: dict[int, tuple[int, float]] = {}
    for pos, c in enumerate(leg, start=1):
        if c.memory_id not in out:
            out[c.memory_id] = (pos, c.score)
    return out


def _cosines(
    pool: Mapping[int, object],
    vec: Mapping[int, tuple[int, float]],
    similarity: Mapping[int, float] | None,
) -> dict[int, float]:
    """The vector side of each candidate of ``pool`` (the ids of both legs), by rowid.

    Its cosine in ``similarity``, else its vector-leg score; a candidate with neither is absent.
    """
    cosine = {i: s for i, (_, s) in vec.items()}
    if similarity is None:
        return cosine
    out: dict[int, float] = {}
    for i in pool:
        s = similarity.get(i)
        if s is None:
            s = cosine.get(i)
        if s is not None:
            out[i] = s
    return out


def _fused_rows(
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    keyword_share: float,
    similarity: Mapping[int, float] | None,
) -> list[_Row]:
    """The fused candidates best first (:func:`combsum_fuse` documents the score and order)."""
    if not (math.isfinite(keyword_share) and 0.0 <= keyword_share <= 1.0):
        raise ConfigurationError("keyword_share must be within 0..1")
    kw = _first_positions(keyword)
    vec = _first_positions(vector)
    pool = {**kw, **vec}
    kw_norm = _unit({i: s for i, (_, s) in kw.items()}, 0.0)
    cosine = _cosines(pool, vec, similarity)
    low = min((s for s in cosine.values() if math.isfinite(s)), default=0.0)
    vec_norm = _unit(cosine, low)
    vector_share = 1.0 - keyword_share
    never = math.inf
    rows: list[_Row] = []
    for memory_id in pool:
        k, v = kw.get(memory_id), vec.get(memory_id)
        score = keyword_share * kw_norm.get(memory_id, 0.0)
        score += vector_share * vec_norm.get(memory_id, 0.0)
        rows.append(
            (
                -score,
                k[0] if k else never,
                v[0] if v else never,
                memory_id,
                k[1] if k else None,
                cosine.get(memory_id),
            )
        )
    # the rowids are distinct: the sort never compares past them
    rows.sort()
    return rows


def combsum_fuse(
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    *,
    keyword_share: float = DEFAULT_KEYWORD_SHARE,
    similarity: Mapping[int, float] | None = None,
) -> list[ScoredMemory]:
    """Fuse a keyword and a vector leg (each best first) by min-max normalised score sum.

    Args:
        keyword: keyword hits, ``score`` = BM25 relevance (≥ 0), best first.
        vector: vector hits, ``score`` = cosine similarity (-1..1), best first.
        keyword_share: weight of the keyword leg in 0..1 (the vector leg gets the rest).
        similarity: cosine of the query with candidates of either leg (``{memory_id: -1..1}``);
            a candidate in it is scored by that cosine, min-max normalised over every
            candidate's cosine; one absent from it falls back to its vector-leg score, else 0.

    Returns:
        One :class:`ScoredMemory` per distinct id, fused ``score`` in 0..1, best first; ties go to
        the better keyword rank, then the better vector rank, then the smaller id. A repeated id
        within one leg counts at its first position. Either leg may be empty.

    Raises:
        ConfigurationError: ``keyword_share`` outside 0..1 or not finite.
    """
    return [
        ScoredMemory(
            memory_id=memory_id,
            score=-neg,
            keyword_rank=int(k) if k != math.inf else None,
            vector_rank=int(v) if v != math.inf else None,
            keyword_score=k_score,
            vector_score=cosine,
        )
        for neg, k, v, memory_id, k_score, cosine in _fused_rows(
            keyword, vector, keyword_share, similarity
        )
    ]


def combsum_candidates(
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    *,
    keyword_share: float = DEFAULT_KEYWORD_SHARE,
    similarity: Mapping[int, float] | None = None,
) -> list[Candidate]:
    """:func:`combsum_fuse` as recall ranks it: ``Candidate(memory_id, fused score)``, best first.

    Same arguments, order and errors; only the rowid and the fused score (0..1) of each
    candidate, without its per-leg ranks and scores.
    """
    return [
        Candidate(memory_id=memory_id, score=-neg)
        for neg, _, _, memory_id, _, _ in _fused_rows(keyword, vector, keyword_share, similarity)
    ]
