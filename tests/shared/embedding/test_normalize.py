"""l2_normalize: one row (a query's vector) takes a shorter path with the same arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from shared.embedding.base import l2_normalize


@pytest.mark.parametrize("seed", range(20))
def test_one_row_equals_its_row_in_a_batch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch = (rng.standard_normal((5, 256)) * rng.uniform(0.01, 100)).astype(np.float32)
    whole = l2_normalize(batch)
    for i in range(len(batch)):
        one = l2_normalize(batch[i : i + 1])
        assert one.dtype == np.float32 and one.shape == (1, 256)
        assert np.array_equal(one[0], whole[i])  # bit for bit


def test_zero_and_nan_rows_become_zeros() -> None:
    assert not l2_normalize(np.zeros((1, 8), dtype=np.float32)).any()
    assert not l2_normalize(np.full((1, 8), np.nan, dtype=np.float32)).any()
    batch = l2_normalize(np.array([[0.0, 0.0], [3.0, 4.0]], dtype=np.float32))
    assert batch.tolist() == [[0.0, 0.0], [pytest.approx(0.6), pytest.approx(0.8)]]
