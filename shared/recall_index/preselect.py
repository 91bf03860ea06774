"""The first stage of a large vector matrix's search: a few principal directions per row.

A brute-force cosine scan reads every full row of the owner's matrix for every query; at 10k
rows of 256 float32 that is 10 MB per query, which makes the scan memory-bound (~0.4 ms of CPU
on one core here, ~4 ms at 100k). Two stages read far less: every row's projection on the
owner's ``dims`` leading principal directions (the top eigenvectors of the rows' uncentred Gram
matrix, i.e. a truncated SVD of the matrix; Eckart & Young, Psychometrika 1(3), 1936) scores all
rows cheaply, then only the best of them (:data:`KEEP_FACTOR` x wanted, and at least one row in
:data:`KEEP_SHARE`) get their exact cosine from the full rows
(:meth:`shared.recall_index.vectors.VectorMatrices.search`).

The answer is approximate where the dropped directions would have lifted a row past the
preselected ones. Measured on LoCoMo turns with the bundled static table (256-d) and 500
distinct LoCoMo questions, against the exact scan (``python bench/vector_preselect.py --dims N``
prints these figures): at 10k, 800 rows kept for the 80 the vector leg takes, recall@20 0.998 at
64 directions (0.978 with 200 rows kept) at 0.62x the exact scan's CPU, 1.000 at 96 (the default
setting) at 0.73x, 1.000 at 128 at 0.84x; at 100k, one row in 50 kept (2,000), 0.992 at 64
(0.976 with 800 rows kept) at 0.28x, 0.999 at 96 at 0.28x, 1.000 at 128 at 0.39x. 64 directions
lost about 1 % of the exact top-10 hits at 20k memories in a semantic-only trial (short memories
dominated by rare names lie outside the leading directions), hence 96. Scores of the rows
returned are exact cosines (up to float32 rounding of a dot product computed over a different
row count). Matrices below :data:`MIN_ROWS` rows are always scanned whole.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["KEEP_FACTOR", "KEEP_SHARE", "MIN_ROWS", "SAMPLE_ROWS", "Preselect", "build_preselect"]

KEEP_FACTOR = 10
"""Rows given an exact cosine per row the search wants (it wants ``k`` x its oversampling)."""
KEEP_SHARE = 50
"""At least one row in this many gets its exact cosine: a larger matrix has more rows near the
wanted ones' first-stage scores (LoCoMo at 100k: recall@20 0.976 with 800 rows, 0.990 with
2,000)."""
MIN_ROWS = 2048
"""Smaller matrices are scanned whole (the full scan is then as cheap as two stages)."""
SAMPLE_ROWS = 8192
"""At most this many evenly spaced rows estimate the principal directions (a Gram matrix of
``dim`` x ``dim`` costs ``rows · dim²``: ~0.5 GFLOP at this sample and 256 dimensions)."""


class Preselect:
    """The first stage of one matrix: ``basis`` (dim x dims) and ``head`` (rows x dims)."""

    __slots__ = ("basis", "head")

    def __init__(self, basis: npt.NDArray[np.float32], head: npt.NDArray[np.float32]) -> None:
        self.basis = basis
        self.head = head

    @property
    def nbytes(self) -> int:
        """Bytes held (the head is ``dims / dim`` of the full matrix's size)."""
        return int(self.basis.nbytes + self.head.nbytes)

    def rows(self, query: npt.NDArray[np.float32], take: int) -> npt.NDArray[np.intp] | None:
        """Ascending row positions worth an exact cosine for the ``take`` best, or None.

        ``query``: the unit query (``dim``,), float32. The :data:`KEEP_FACTOR` x ``take`` (at
        least ``rows //`` :data:`KEEP_SHARE`) rows of highest first-stage score; None when that
        is over a quarter of the rows (scanning every full row is then about as cheap, and
        exact).
        """
        keep = max(KEEP_FACTOR * max(1, take), len(self.head) // KEEP_SHARE)
        if 4 * keep > len(self.head):
            return None
        scores = self.head @ (query @ self.basis)
        picked = np.argpartition(-scores, keep - 1)[:keep]
        picked.sort()
        return picked


def build_preselect(mat: npt.NDArray[np.float32], dims: int) -> Preselect | None:
    """The first stage of the row-normalised ``mat`` (rows x dim, float32), or None.

    None when ``dims`` is 0 (exact scans), not below ``dim``, or ``mat`` has fewer than
    :data:`MIN_ROWS` rows. CPU: a ``dim`` x ``dim`` Gram matrix of at most :data:`SAMPLE_ROWS`
    rows, its eigendecomposition, and one ``mat @ basis`` product; run it off the event loop.
    """
    n, dim = mat.shape
    if dims <= 0 or dims >= dim or n < MIN_ROWS:
        return None
    sample = mat[:: max(1, n // SAMPLE_ROWS)].astype(np.float64)
    _, vectors = np.linalg.eigh(sample.T @ sample)  # eigenvalues ascending
    basis = np.ascontiguousarray(vectors[:, ::-1][:, :dims], dtype=np.float32)
    return Preselect(basis, np.ascontiguousarray(mat @ basis))
