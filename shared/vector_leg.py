"""The vector leg of recall: KNN hits above the source's floor, and the candidates' cosines.

:func:`vector_leg` asks the engine for the query's nearest memories (Qdrant or the in-memory
sqlite-vec matrices, falling back as :meth:`shared.engine.Engine.vector_search` describes) and
keeps the hits that clear :func:`vector_floor`; :func:`keyword_supported` asks more of a hit the
keyword leg did not find; :func:`candidate_similarity` gives every candidate of both legs its own
cosine for CombSUM over one pool (:mod:`shared.fusion`). docs/ARCHITECTURE.md, "Recall".
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from shared.echo import drop_echoes
from shared.engine import Engine
from shared.errors import EmbeddingError, VectorIndexError
from shared.models import Memory, Scope
from shared.personal_subjects import drop_other_subjects, features_of
from shared.ranking import Candidate
from shared.recall_index.prepared import Prepared
from shared.settings import Settings
from shared.store.memories import MemoryStore

__all__ = [
    "VectorLeg",
    "candidate_similarity",
    "keyword_supported",
    "usable_vector_hits",
    "vector_floor",
    "vector_leg",
]


class VectorLeg(msgspec.Struct):
    """The floored hits of the vector leg, the tier that answered and why one was skipped."""

    candidates: list[Candidate]
    tier: str | None = None
    degraded: str | None = None
    #: The query's embedding when one was made (for :func:`candidate_similarity`).
    query: npt.NDArray[np.float32] | None = None


def vector_floor(settings: Settings, engine: Engine) -> float:
    """The cosine a vector hit must reach: ``vector_min_similarity``, else the source's floor.

    0 in the setting means the embedding source's calibrated floor (0.5 static table, 0.3 MiniLM
    and remote). Requires ``engine.embedder`` (AssertionError otherwise).
    """
    assert engine.embedder is not None
    return settings.vector_min_similarity or engine.embedder.min_similarity


async def vector_leg(
    engine: Engine, scope: Scope, query: str, settings: Settings, now: float
) -> VectorLeg:
    """The query's ``recall_top_k`` nearest visible memories at or above :func:`vector_floor`.

    Never raises for an embedding or vector-tier failure: the leg is then empty with the reason
    in ``degraded`` (``vector_unavailable`` when the error names none).
    """
    min_similarity = vector_floor(settings, engine)
    try:
        result = await engine.vector_search(
            query, scope, settings.recall_top_k, now, use_qdrant=settings.vector_tier == "qdrant"
        )
    except (EmbeddingError, VectorIndexError) as exc:
        return VectorLeg([], None, exc.code or "vector_unavailable")
    hits = [
        Candidate(memory_id=h.memory_id, score=h.score, rank=i + 1)
        for i, h in enumerate(result.hits)
        if h.score >= min_similarity
    ]
    return VectorLeg(hits, result.tier, result.degraded, result.query)


def keyword_supported(
    vector: list[Candidate], keyword: list[Candidate], floor: float, margin: float
) -> list[Candidate]:
    """``vector`` hits (score = cosine); those without keyword support need ``floor + margin``.

    A hybrid recall's loose embedding match alone must not inject an unrelated memory: a hit with
    no keyword match needs ``margin`` more cosine than the vector floor ``floor``. ``margin`` ≤ 0
    keeps every hit. On LoCoMo margins 0-0.5 over the static table's 0.5 floor moved Hit@5 by at
    most 0.001 and MRR by at most 0.004 (README, "Recall quality"). Pure.
    """
    if margin <= 0:
        return vector
    found = {c.memory_id for c in keyword}
    return [c for c in vector if c.memory_id in found or c.score >= floor + margin]


def candidate_similarity(
    engine: Engine | None,
    scope: Scope,
    settings: Settings,
    query: npt.NDArray[np.float32] | None,
    candidates: Sequence[Candidate],
) -> dict[int, float] | None:
    """The cosine of ``query`` (the vector leg's embedding) with each of ``candidates``.

    For CombSUM over one pool (the candidates of both legs). None unless hybrid CombSUM with
    ``recall_fusion_score_all`` and a query embedding; the cosines come from the in-memory
    matrices (:meth:`Engine.similarities`), so a candidate whose row is not cached is simply
    absent.
    """
    if (
        engine is None
        or query is None
        or settings.retrieval_strategy != "hybrid"
        or settings.recall_fusion != "combsum"
        or not settings.recall_fusion_score_all
    ):
        return None
    return engine.similarities(query, scope, [c.memory_id for c in candidates]) or None


async def _memories_of(
    store: MemoryStore, engine: Engine | None, scope: Scope, ids: list[int]
) -> dict[int, Memory]:
    """Memory records of vector hits: from the keyword index's cache, else one SQL read."""
    found = engine.keywords.cached(scope, ids) if engine and engine.keywords else {}
    missing = [i for i in ids if i not in found]
    if missing:
        found.update(await store.get_many(missing))
    return found


async def usable_vector_hits(
    store: MemoryStore,
    engine: Engine | None,
    scope: Scope,
    settings: Settings,
    leg: VectorLeg,
    keyword: list[Candidate],
    memories: dict[int, Memory],
    echo: str,
    prepared: dict[int, Prepared] | None = None,
    prepared_fp: str | None = None,
) -> list[Candidate]:
    """The vector leg's hits whose memory is known, minus echoes of ``echo``.

    Also minus the memories about another of the user's people or pets than ``echo`` names
    (:func:`shared.personal_subjects.drop_other_subjects`).

    In hybrid recall a hit the ``keyword`` leg did not find needs the extra margin
    (:func:`keyword_supported`), tested first: a hit it drops is never looked up.
    Records of hits the keyword leg did not return are added to
    ``memories`` (rowid → record); the prepared features of those hits, looked up under
    ``prepared_fp`` (None: the cache's current preparer, like the keyword leg's), are added to
    ``prepared`` (rowid → features; the keyword leg's, already looked up, are reused) and used
    for the echo rules, so the block's lines need no second look-up.

    Raises:
        StoreError: reading the records of the vector hits failed.
    """
    vector = leg.candidates
    if settings.retrieval_strategy == "hybrid" and engine is not None and vector:
        # first: a per-hit test on scores alone, so the hits it drops are never looked up
        # (every filter here is per hit, so the order does not change the answer)
        floor = vector_floor(settings, engine)
        vector = keyword_supported(vector, keyword, floor, settings.recall_vector_only_margin)
    if not vector:
        return []
    missing = [c.memory_id for c in vector if c.memory_id not in memories]
    if missing:
        memories.update(await _memories_of(store, engine, scope, missing))
        vector = [c for c in vector if c.memory_id in memories]
    ready = {} if prepared is None else prepared
    keywords = engine.keywords if engine is not None else None
    if keywords is not None:
        new = [memories[c.memory_id] for c in vector if c.memory_id not in ready]
        if new:
            ready.update(keywords.prepared(scope, new, prepared_fp))
    content = {c.memory_id: memories[c.memory_id].content for c in vector}
    vector = drop_echoes(echo, vector, content, lambda c: c.memory_id, ready)
    vector = drop_other_subjects(
        echo, vector, lambda c: content[c.memory_id], lambda c: features_of(ready, c.memory_id)
    )
    return vector
