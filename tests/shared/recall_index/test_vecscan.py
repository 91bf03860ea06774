"""The compiled two-stage vector kernel (shared/recall_index/_vecscan.c) against numpy.

The first stage is exact integer arithmetic, so its kept rows must equal a numpy reference
exactly; the exact stage must equal a numpy emulation of its fixed float32 summation order bit
for bit, and agree with the numpy fallback (``_vecscan`` None) up to float32 rounding.
"""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.recall_index import preselect
from shared.recall_index.preselect import LANES, QUANT, Preselect, best_rows, build_preselect

_vecscan = pytest.importorskip("shared.recall_index._vecscan")


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim))
    return (rows / np.linalg.norm(rows, axis=1)[:, None]).astype(np.float32)


def _reference_keep(head16: np.ndarray, q16: np.ndarray, keep: int) -> list[int]:
    """The ``keep`` rows of highest int score, ties to the smaller row, ascending."""
    scores = head16.astype(np.int64) @ q16.astype(np.int64)
    order = np.lexsort((np.arange(len(scores)), -scores))
    return sorted(order[:keep].tolist())


def _reference_dots(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float32 dot products summed as the kernel sums them: element j into sum j mod 8, in order
    of j, then ((s0+s4)+(s1+s5))+((s2+s6)+(s3+s7))."""
    n, dim = mat.shape
    width = -(-dim // 8) * 8
    prod = np.zeros((n, width), dtype=np.float32)
    prod[:, :dim] = mat * q  # float32 products
    s = np.zeros((n, 8), dtype=np.float32)
    for j in range(0, width, 8):
        s = s + prod[:, j : j + 8]
    return ((s[:, 0] + s[:, 4]) + (s[:, 1] + s[:, 5])) + ((s[:, 2] + s[:, 6]) + (s[:, 3] + s[:, 7]))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 3000),
    dims=st.integers(1, 40),
    keep_share=st.floats(0.0, 1.0),
    tied=st.booleans(),
)
def test_keep_rows_equals_the_integer_reference(
    seed: int, n: int, dims: int, keep_share: float, tied: bool
) -> None:
    rng = np.random.default_rng(seed)
    head = _unit_rows(rng, n, dims)
    if tied:  # few distinct rows: many equal scores at the cut
        head = head[rng.integers(0, min(3, n), n)]
    head16 = preselect._quantised(head, float(np.linalg.norm(head, axis=1).max()))
    q = _unit_rows(rng, 1, dims)[0]
    q16 = preselect._quantised_query(q, head16)
    assert head16.shape[1] % LANES == 0 and np.abs(head16).max() <= QUANT
    keep = max(1, min(n, round(keep_share * n)))
    out = np.empty(keep, dtype=np.int64)
    _vecscan.keep_rows(head16, q16, out)
    assert out.tolist() == _reference_keep(head16, q16, keep)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 600),
    dim=st.integers(1, 70),
    take=st.integers(1, 100),
    subset=st.booleans(),
    tied=st.booleans(),
)
def test_exact_top_equals_its_numpy_emulation_bit_for_bit(
    seed: int, n: int, dim: int, take: int, subset: bool, tied: bool
) -> None:
    rng = np.random.default_rng(seed)
    mat = _unit_rows(rng, n, dim)
    if tied:
        mat = np.ascontiguousarray(mat[rng.integers(0, min(4, n), n)])
    q = _unit_rows(rng, 1, dim)[0]
    rows = np.sort(rng.choice(n, rng.integers(1, n + 1), replace=False)) if subset else None
    considered = np.arange(n) if rows is None else rows
    got_rows = np.empty(min(take, len(considered)), dtype=np.int64)
    got_scores = np.empty(len(got_rows), dtype=np.float32)
    written = _vecscan.exact_top(mat, q, rows, got_rows, got_scores)
    assert written == len(got_rows)
    dots = _reference_dots(mat[considered], q)
    order = np.lexsort((considered, -dots))[: len(got_rows)]
    assert got_rows.tolist() == considered[order].tolist()
    assert got_scores.tobytes() == dots[order].tobytes()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(2, 12), take=st.integers(1, 50))
def test_kernel_and_numpy_fallback_agree(seed: int, rank: int, take: int) -> None:
    """Both paths of Preselect.rows + best_rows on one matrix: the same best rows and cosines,
    but for rows whose cosines are within float32 rounding of each other."""
    rng = np.random.default_rng(seed)
    n, dim = 2500, 32
    latent = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, dim))
    mat = (latent / np.linalg.norm(latent, axis=1)[:, None]).astype(np.float32)
    pre = build_preselect(mat, 16)
    assert pre is not None and pre.head16 is not None and pre.head is None
    q = mat[rng.integers(n)] + np.float32(0.1) * _unit_rows(rng, 1, dim)[0]
    q = (q / np.linalg.norm(q)).astype(np.float32)
    kernel = best_rows(mat, q, pre.rows(q, take), take)
    with patch.object(preselect, "_vecscan", None):
        plain = build_preselect(mat, 16)
        assert plain is not None and plain.head16 is None and plain.head is not None
        np.testing.assert_array_equal(plain.basis, pre.basis)
        numpy = best_rows(mat, q, plain.rows(q, take), take)
    assert len(kernel[0]) == len(numpy[0]) == take
    np.testing.assert_allclose(kernel[1], numpy[1], atol=2e-6)
    for a, b, s in zip(kernel[0].tolist(), numpy[0].tolist(), kernel[1].tolist(), strict=True):
        assert a == b or abs(float(mat[a] @ q) - float(mat[b] @ q)) < 2e-6, s


def test_preselect_without_the_kernel_holds_no_int16_head(monkeypatch) -> None:
    monkeypatch.setattr(preselect, "_vecscan", None)
    rng = np.random.default_rng(3)
    pre = Preselect(_unit_rows(rng, 16, 4), _unit_rows(rng, 100, 4))
    assert pre.head16 is None and pre.head is not None
    assert pre.nbytes == pre.basis.nbytes + pre.head.nbytes


def test_preselect_with_the_kernel_holds_the_int16_head_only() -> None:
    rng = np.random.default_rng(4)
    pre = Preselect(_unit_rows(rng, 16, 4), _unit_rows(rng, 100, 4))
    assert pre.head is None and pre.head16 is not None and pre.head16.shape == (100, LANES)
    assert pre.nbytes == pre.basis.nbytes + pre.head16.nbytes == 16 * 4 * 4 + 100 * LANES * 2


def test_a_nan_score_ranks_last_and_bad_buffers_raise() -> None:
    mat = np.array([[np.nan, 0.0], [0.5, 0.0], [1.0, 0.0]], dtype=np.float32)
    q = np.array([1.0, 0.0], dtype=np.float32)
    rows, scores = np.empty(3, np.int64), np.empty(3, np.float32)
    assert _vecscan.exact_top(mat, q, None, rows, scores) == 3
    assert rows.tolist() == [2, 1, 0] and np.isnan(scores[2])
    with pytest.raises(ValueError, match="out of range"):
        _vecscan.exact_top(mat, q, np.array([3], np.int64), rows, scores)
    with pytest.raises(ValueError, match="item size"):
        _vecscan.exact_top(mat.astype(np.float64), q, None, rows, scores)
    with pytest.raises(ValueError, match="differ"):
        _vecscan.exact_top(mat, q, None, rows, np.empty(2, np.float32))
    with pytest.raises(ValueError, match="whole rows"):
        _vecscan.exact_top(mat, np.ones(4, np.float32), None, rows, scores)
    head = np.zeros((4, 16), np.int16)
    with pytest.raises(ValueError, match=r"1\.\.rows"):
        _vecscan.keep_rows(head, np.zeros(16, np.int16), np.empty(5, np.int64))
    with pytest.raises(ValueError, match="whole rows"):
        _vecscan.keep_rows(head, np.zeros(5, np.int16), np.empty(2, np.int64))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), take=st.integers(0, 90))
def test_full_scans_of_kernel_and_numpy_agree(seed: int, n: int, take: int) -> None:
    rng = np.random.default_rng(seed)
    mat = _unit_rows(rng, n, 24)
    q = _unit_rows(rng, 1, 24)[0]
    kernel = best_rows(mat, q, None, take)
    with patch.object(preselect, "_vecscan", None):
        numpy = best_rows(mat, q, None, take)
        empty = best_rows(mat, q, np.empty(0, np.intp), take)
    assert len(kernel[0]) == len(numpy[0]) == min(take, n)
    np.testing.assert_allclose(kernel[1], numpy[1], atol=2e-6)
    np.testing.assert_allclose(mat[kernel[0]] @ q, kernel[1], atol=2e-6)
    assert len(empty[0]) == len(best_rows(mat, q, np.empty(0, np.intp), take)[0]) == 0
