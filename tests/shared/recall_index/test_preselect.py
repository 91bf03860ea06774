"""The two-stage vector search of large matrices (shared/recall_index/preselect.py).

On rows that lie in a low-dimensional subspace the first stage loses nothing, so the two-stage
search must return exactly the brute-force answer; on rows spread over every direction it would
miss, which is why ``vector_preselect_dims`` 0 must scan every full row.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shared.models import Scope
from shared.recall_index.preselect import KEEP_FACTOR, MIN_ROWS, build_preselect
from shared.recall_index.vectors import OVERSAMPLE, VectorMatrices
from tests.shared.recall_index.test_vector_matrices import with_vectors

WIDE = 48
ROWS = MIN_ROWS + 952  # large enough for two stages with k = 10 (4 x 10 x 40 rows kept)


def _rows(rng: np.random.Generator, n: int, rank: int) -> np.ndarray:
    """``n`` unit rows of width :data:`WIDE` spanning ``rank`` directions (plus a tiny noise)."""
    latent = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, WIDE))
    rows = latent + 1e-4 * rng.standard_normal((n, WIDE))
    return (rows / np.linalg.norm(rows, axis=1)[:, None]).astype(np.float32)


def test_small_matrices_and_zero_dims_are_scanned_whole() -> None:
    rng = np.random.default_rng(0)
    assert build_preselect(_rows(rng, MIN_ROWS - 1, 4), 8) is None
    mat = _rows(rng, MIN_ROWS, 4)
    assert build_preselect(mat, 0) is None
    assert build_preselect(mat, WIDE) is None
    pre = build_preselect(mat, 8)
    assert pre is not None and pre.basis.shape == (WIDE, 8) and pre.count == MIN_ROWS
    held = pre.head16 if pre.head16 is not None else pre.head  # int16 with the kernel
    assert held is not None and held.shape[0] == MIN_ROWS and held.flags.c_contiguous
    # keeping over a quarter of the rows is no cheaper than a full scan: None (scan whole)
    assert pre.rows(mat[0], MIN_ROWS // (4 * KEEP_FACTOR) + 1) is None


def test_first_stage_keeps_the_true_best_rows_of_a_low_rank_matrix() -> None:
    rng = np.random.default_rng(1)
    mat = _rows(rng, ROWS, 6)
    pre = build_preselect(mat, 8)
    assert pre is not None
    for q in _rows(rng, 20, 6):
        rows = pre.rows(q, 40)
        assert rows is not None and len(rows) == KEEP_FACTOR * 40
        assert np.all(np.diff(rows) > 0)  # ascending, distinct
        best = np.argsort(-(mat @ q), kind="stable")[:40]
        assert set(best.tolist()) <= set(rows.tolist())


@pytest.mark.parametrize("dims", [0, 8])
async def test_search_equals_brute_force(stored, dims: int) -> None:
    store, keywords = stored
    rng = np.random.default_rng(2)
    # a low-rank matrix (two stages are exact on it), and with 0 dims an isotropic one, on which a
    # first stage of 8 directions would miss: only the full scan answers it exactly
    vectors = _rows(rng, ROWS, 6) if dims else _rows(rng, ROWS, WIDE)
    written, index = await with_vectors(store, [""] * ROWS, list(vectors), dim=WIDE)
    matrices = VectorMatrices(index, keywords, preselect_dims=dims)
    scope = Scope(owner_id="o")
    for q in _rows(rng, 5, 6) if dims else _rows(rng, 5, WIDE):
        hits = await matrices.search(q, scope, 10, time.time())
        assert hits is not None
        sims = vectors @ q
        want = np.argsort(-sims, kind="stable")[:10]
        assert [h.memory_id for h in hits] == [written[i].id for i in want]
        assert [h.score for h in hits] == pytest.approx(sims[want].tolist(), abs=1e-6)
    assert (matrices._mats["o"].preselect is None) == (dims == 0)
    assert OVERSAMPLE * 10 * KEEP_FACTOR * 4 <= ROWS  # the two-stage path really ran
