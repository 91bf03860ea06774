"""One OpenBLAS thread for the recall index's matrix products (shared/blas_threads.py)."""

from __future__ import annotations

import numpy as np

from shared.blas_threads import blas_threads, limit_blas_threads


def test_limit_takes_effect_on_numpys_openblas() -> None:
    # numpy's wheels link scipy-openblas; the setter must reach the library numpy uses
    assert blas_threads() is not None
    assert limit_blas_threads() is True
    assert blas_threads() == 1


def test_one_thread_product_ranks_as_einsum() -> None:
    assert limit_blas_threads()
    rng = np.random.default_rng(3)
    mat = rng.standard_normal((5000, 64)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1)[:, None]
    for _ in range(20):
        q = rng.standard_normal(64).astype(np.float32)
        q /= np.linalg.norm(q)
        blas, loop = mat @ q, np.einsum("ij,j->i", mat, q)
        np.testing.assert_allclose(blas, loop, atol=1e-5)
        top = 40
        assert set(np.argsort(-blas)[:top]) == set(np.argsort(-loop)[:top])
