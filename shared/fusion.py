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

__all__ = ["DEFAULT_KEYWORD_SHARE", "combsum_fuse"]

DEFAULT_KEYWORD_SHARE = 0.65
"""Keyword share of the fused score (0..1), chosen on LoCoMo (README, "Recall quality")."""


def _unit(values: Sequence[float], low: float) -> list[float]:
    """``(v − low) / (max − low)`` clipped to 0..1; all 0 when ``max <= low`` or not finite."""
    high = max(values, default=low)
    span = high - low
    if not (math.isfinite(span) and span > 0):
        return [0.0 for _ in values]
    return [min(1.0, max(0.0, (v - low) / span)) if math.isfinite(v) else 0.0 for v in values]


def _cosines(
    kw: Mapping[int, object],
    vec: Mapping[int, tuple[int, float]],
    similarity: Mapping[int, float] | None,
) -> dict[int, float]:
    """The vector side of each candidate of ``kw`` or ``vec``, by rowid.

    Its cosine in ``similarity``, else its vector-leg score; a candidate with neither is absent.
    """
    cosine = {i: s for i, (_, s) in vec.items()}
    if similarity is None:
        return cosine
    known = {i: similarity.get(i, cosine.get(i)) for i in {**kw, **vec}}
    return {i: s for i, s in known.items() if s is not None}


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
    if not (math.isfinite(keyword_share) and 0.0 <= keyword_share <= 1.0):
        raise ConfigurationError("keyword_share must be within 0..1")
    kw: dict[int, tuple[int, float]] = {}
    for pos, c in enumerate(keyword, start=1):
        kw.setdefault(c.memory_id, (pos, c.score))
    vec: dict[int, tuple[int, float]] = {}
    for pos, c in enumerate(vector, start=1):
        vec.setdefault(c.memory_id, (pos, c.score))
    kw_norm = dict(zip(kw, _unit([s for _, s in kw.values()], 0.0), strict=True))
    cosine = _cosines(kw, vec, similarity)
    low = min((s for s in cosine.values() if math.isfinite(s)), default=0.0)
    vec_norm = dict(zip(cosine, _unit(list(cosine.values()), low), strict=True))
    out: list[ScoredMemory] = []
    for memory_id in {**kw, **vec}:
        k, v = kw.get(memory_id), vec.get(memory_id)
        score = keyword_share * kw_norm.get(memory_id, 0.0)
        score += (1.0 - keyword_share) * vec_norm.get(memory_id, 0.0)
        out.append(
            ScoredMemory(
                memory_id=memory_id,
                score=score,
                keyword_rank=k[0] if k else None,
                vector_rank=v[0] if v else None,
                keyword_score=k[1] if k else None,
                vector_score=cosine.get(memory_id),
            )
        )
    return _best_first(out)


def _best_first(out: list[ScoredMemory]) -> list[ScoredMemory]:
    """``out`` by fused score, then keyword rank, then vector rank, then rowid."""
    never = math.inf
    out.sort(
        key=lambda m: (
            -m.score,
            m.keyword_rank if m.keyword_rank is not None else never,
            m.vector_rank if m.vector_rank is not None else never,
            m.memory_id,
        )
    )
    return out
