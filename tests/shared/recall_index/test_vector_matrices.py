"""The in-memory vector leg (shared/recall_index/vectors.py) against a brute-force reference.

The nearest rows of the matrix belong to another end user, so the visibility rule has to skip
past the first k rows (records are looked up k at a time) to find the caller's own.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shared.models import NewMemory, Scope
from shared.recall_index import build_keyword_index
from shared.recall_index.vectors import OVERSAMPLE, VectorMatrices
from shared.settings import load_settings
from shared.store import Store
from shared.store.sqlite_vec import SqliteVecIndex
from shared.vector_index.base import VectorRecord

DIM = 8


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


@pytest.mark.parametrize("other_first", [0, 3, 5, 12, 19, 20, 30])
async def test_knn_equals_brute_force_under_the_visibility_rule(tmp_path, other_first) -> None:
    path = str(tmp_path / "v.db")
    store = await Store.open(path)
    keywords = build_keyword_index(load_settings({}, db_path=path), store)
    try:
        rng = np.random.default_rng(other_first)
        query = _unit(np.eye(DIM, dtype=np.float32)[0])
        # the first `other_first` nearest rows are bob's, the rest owner-wide or alice's
        users = ["bob"] * other_first + [("", "alice")[i % 2] for i in range(40)]
        distances = np.sort(rng.uniform(0.01, 1.5, len(users)))
        news = [
            NewMemory(owner_id="o", user_id=u, content=f"memory {i}") for i, u in enumerate(users)
        ]
        written = [m for m, _ in await store.writes.upsert_many(news)]
        vectors = [_unit(query + d * _unit(rng.standard_normal(DIM))) for d in distances]
        index = SqliteVecIndex(store.writer, store.reader, store.memories)
        await index.ensure(DIM, "test")
        await index.upsert(
            [
                VectorRecord(
                    memory_id=m.id,
                    owner_id="o",
                    user_id=m.user_id,
                    session_id=None,
                    type=m.type,
                    created_at=m.created_at,
                    expires_at=None,
                    vector=v.tolist(),
                )
                for m, v in zip(written, vectors, strict=True)
            ]
        )
        matrices = VectorMatrices(index, keywords)
        scope = Scope(owner_id="o", user_id="alice")
        for k in (1, 2, 5, 10):
            hits = await matrices.search(query, scope, k, time.time())
            assert hits is not None
            sims = np.array([float(v @ query) for v in vectors], dtype=np.float32)
            window = np.argsort(-sims, kind="stable")[: k * OVERSAMPLE]
            want = [written[i].id for i in window if written[i].user_id in ("", "alice")][:k]
            assert [h.memory_id for h in hits] == want
            assert all(
                h.score == pytest.approx(float(sims[written_pos(written, h.memory_id)]), abs=1e-5)
                for h in hits
            )
    finally:
        await keywords.close()
        await store.close()


def written_pos(written, memory_id: int) -> int:
    return next(i for i, m in enumerate(written) if m.id == memory_id)
