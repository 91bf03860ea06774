"""int8 quantization (shared/vectors/quantize.py): recall agreement with float KNN."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from shared.vector_index.quantize import (
    Int8Scales,
    dequantize_int8,
    fit_int8_scales,
    quantize_int8,
)

F32 = npt.NDArray[np.float32]


def structured(rng: np.random.Generator, n: int, dim: int = 384) -> F32:
    """Unit vectors with the shape of real embeddings: topic clusters in a low-dimensional
    (48-d) latent space, mapped into ``dim`` dimensions with unequal spreads per dimension,
    plus a little isotropic noise. Seeded, so the same data every run."""
    latent_rng = np.random.default_rng(1234)  # same topics and mapping for every call
    topics = latent_rng.normal(size=(40, 48))
    mapping = latent_rng.normal(size=(48, dim)) * np.exp(latent_rng.normal(scale=0.4, size=dim))
    z = topics[rng.integers(0, 40, size=n)] + rng.normal(scale=0.8, size=(n, 48))
    pts = z @ mapping + rng.normal(scale=0.5, size=(n, dim))
    out: F32 = (pts / np.linalg.norm(pts, axis=1, keepdims=True)).astype(np.float32)
    return out


def recall_at_10(queries: F32, docs: F32, q_approx: F32, d_approx: F32) -> float:
    """Mean overlap of the float cosine top-10 and the top-10 by L2 on the approximations."""
    truth = np.argsort(-(queries @ docs.T), axis=1)[:, :10]
    dist = (q_approx**2).sum(1)[:, None] + (d_approx**2).sum(1)[None, :] - 2 * q_approx @ d_approx.T
    got = np.argsort(dist, axis=1)[:, :10]
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, got, strict=True)]))


@pytest.fixture(scope="module")
def data() -> tuple[F32, F32, F32]:
    rng = np.random.default_rng(7)
    return structured(rng, 2000), structured(rng, 5000), structured(rng, 200)


def test_global_int8_keeps_recall_on_int8_values(data: tuple[F32, F32, F32]) -> None:
    calib, docs, queries = data
    scales = fit_int8_scales(calib)
    qd, qq = quantize_int8(docs, scales), quantize_int8(queries, scales)
    assert qd.dtype == np.int8 and qd.shape == docs.shape
    r = recall_at_10(queries, docs, qq.astype(np.float32), qd.astype(np.float32))
    assert r >= 0.97
    # The fixed [-1, 1] range ("unit", as vec_quantize_int8 does) wastes most int8 levels.
    unit = Int8Scales(np.ones(docs.shape[1], dtype=np.float32))
    r_unit = recall_at_10(
        queries,
        docs,
        quantize_int8(queries, unit).astype(np.float32),
        quantize_int8(docs, unit).astype(np.float32),
    )
    assert r > r_unit
    # Per-dimension scales change the metric when int8 values are compared directly.
    pd = fit_int8_scales(calib, per_dimension=True)
    r_pd = recall_at_10(
        queries,
        docs,
        quantize_int8(queries, pd).astype(np.float32),
        quantize_int8(docs, pd).astype(np.float32),
    )
    assert r > r_pd


def test_per_dimension_int8_keeps_recall_after_dequantizing(
    data: tuple[F32, F32, F32],
) -> None:
    calib, docs, queries = data
    scales = fit_int8_scales(calib, per_dimension=True)
    dd = dequantize_int8(quantize_int8(docs, scales), scales)
    dq = dequantize_int8(quantize_int8(queries, scales), scales)
    assert recall_at_10(queries, docs, dq, dd) >= 0.97
    # per-dimension reconstructs better than a global scale
    g = fit_int8_scales(calib)
    err_pd = np.abs(dd - docs).mean()
    err_g = np.abs(dequantize_int8(quantize_int8(docs, g), g) - docs).mean()
    assert err_pd < err_g


def test_scales_values_and_clipping() -> None:
    sample = np.array([[0.5, -0.1, 0.0], [-0.2, 0.05, 0.0]], dtype=np.float32)
    per_dim = fit_int8_scales(sample, per_dimension=True)
    np.testing.assert_allclose(per_dim.scale, [0.5, 0.1, 1e-6], rtol=1e-6)
    glob = fit_int8_scales(sample)
    np.testing.assert_allclose(glob.scale, [0.5, 0.5, 0.5])
    q = quantize_int8(np.array([[1.0, -0.1, 0.0], [0.25, 0.05, 0.0]]), per_dim)
    assert q.tolist() == [[127, -127, 0], [64, 64, 0]]  # 1.0 clipped; 63.5 rounds to even
    assert quantize_int8(np.array([0.5, 0.1, 0.0]), per_dim).shape == (3,)


def test_percentile_ignores_outliers() -> None:
    sample = np.full((1000, 2), 0.1, dtype=np.float32)
    sample[0, 0] = 10.0
    assert fit_int8_scales(sample, per_dimension=True).scale[0] == pytest.approx(10.0)
    assert fit_int8_scales(sample, 99.0, per_dimension=True).scale[0] == pytest.approx(0.1)


def test_scales_bytes_round_trip() -> None:
    scales = fit_int8_scales(np.random.default_rng(1).normal(size=(10, 8)), per_dimension=True)
    blob = scales.to_bytes()
    assert len(blob) == 32
    np.testing.assert_array_equal(Int8Scales.from_bytes(blob).scale, scales.scale)
    with pytest.raises(ValueError):
        Int8Scales.from_bytes(b"abc")
    with pytest.raises(ValueError):
        Int8Scales.from_bytes(np.zeros(4, dtype="<f4").tobytes())


@pytest.mark.parametrize(
    "bad",
    [np.zeros((0, 4)), np.zeros(4), np.array([[np.nan, 1.0]]), np.zeros((2, 0))],
)
def test_fit_rejects_bad_samples(bad: npt.NDArray[np.float64]) -> None:
    with pytest.raises(ValueError):
        fit_int8_scales(bad)


def test_fit_rejects_bad_percentile_and_quantize_wrong_dim() -> None:
    with pytest.raises(ValueError):
        fit_int8_scales(np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError):
        quantize_int8(np.ones((2, 3)), fit_int8_scales(np.ones((2, 2))))
