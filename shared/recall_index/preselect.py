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

With the compiled kernel (``shared/recall_index/_vecscan.c``) the first stage scores an int16
head kept instead of the float32 one (:data:`QUANT`: every row and the query scaled to a norm of
at most 32,767, so the exact int32 dot products cannot overflow) and finds the cut with a
histogram of the scores; the exact stage scores the kept float32 rows in place and keeps the
best in the same call, without a gathered copy (:func:`best_rows`). Without it, numpy does both
(float32 head, ``argpartition``). Quantising moves a first-stage score by about 1e-5, which only
changes which rows near the keep-th are kept: the recall figures above are unchanged with it
(``bench/vector_preselect.py``, with and without ``--no-kernel``: 10k 1.0000 / 1.0000 / 100 %
identical top-20, 100k 0.9990 / 0.9989 / 99.0 % either way), and the kernel's top-20 list was the
numpy path's for all 500 questions at both sizes (its top 80 for 99.6 % and 99.2 %).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

try:
    from shared.recall_index import _vecscan
except ImportError:  # not compiled (an install without a C compiler): numpy does both stages
    _vecscan = None  # type: ignore[assignment]

__all__ = [
    "KEEP_FACTOR",
    "KEEP_SHARE",
    "MIN_ROWS",
    "QUANT",
    "SAMPLE_ROWS",
    "Preselect",
    "best_rows",
    "build_preselect",
]

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
QUANT = 32767
"""The int16 first stage scales every row and the query to a norm of at most this: a dot product
and each of its partial sums is then below 32,767² + rounding < 2³¹ (Cauchy-Schwarz), so the
kernel's int32 sums are exact."""
LANES = 16
"""Quantised rows are padded with zeros to a multiple of this many coordinates (the kernel's
AVX2 step: 16 int16)."""


def _quantised(values: npt.NDArray[np.float32], norm: float) -> npt.NDArray[np.int16]:
    """``values`` (rows x dims, or dims) x ``QUANT / norm``, rounded, zero-padded to LANES."""
    dims = values.shape[-1]
    out = np.zeros((*values.shape[:-1], -(-dims // LANES) * LANES), dtype=np.int16)
    if norm > 0:
        scaled = np.rint(values.astype(np.float64) * (QUANT / norm))
        out[..., :dims] = np.clip(scaled, -QUANT, QUANT)
    return out


def _quantised_query(
    projected: npt.NDArray[np.float32], head16: npt.NDArray[np.int16]
) -> npt.NDArray[np.int16]:
    """The query's int16 first-stage coordinates: ``projected`` x ``QUANT / its norm``, rounded.

    ``|projected[j]| ≤ norm``, so no coordinate exceeds :data:`QUANT` (float32 rounding of the
    scale moves the norm by ~1e-7 of it, far inside the overflow margin); zero-padded to the
    head's width, all zero for a zero ``projected``. Equal to :func:`_quantised` of it up to
    that rounding (the scale is a float32 here): the first stage is a preselection, any
    consistent scale of the query ranks the rows the same.
    """
    out = np.zeros(head16.shape[1], dtype=np.int16)
    norm = math.sqrt(float(projected @ projected))
    if norm > 0:
        out[: len(projected)] = np.rint(projected * np.float32(QUANT / norm))
    return out


class Preselect:
    """The first stage of one matrix: ``basis`` (dim x dims, float32) and the rows' coordinates.

    Built with the kernel, the coordinates are kept only as ``head16``: int16, scaled by
    :data:`QUANT` over the largest row norm, rows x dims rounded up to :data:`LANES` (half the
    bytes of the float32 ``head``, which is then None); without it, as ``head`` (rows x dims,
    float32) and ``head16`` is None. The path is chosen at construction.
    """

    __slots__ = ("basis", "count", "head", "head16")

    def __init__(self, basis: npt.NDArray[np.float32], head: npt.NDArray[np.float32]) -> None:
        self.basis = basis
        self.count = len(head)
        self.head: npt.NDArray[np.float32] | None = head
        self.head16: npt.NDArray[np.int16] | None = None
        if _vecscan is not None:
            norms = np.linalg.norm(head.astype(np.float64), axis=1)
            self.head16 = _quantised(head, float(norms.max(initial=0.0)))
            self.head = None

    @property
    def nbytes(self) -> int:
        """Bytes held (the head is ``dims / dim`` of the full matrix's size, half with int16)."""
        held = self.head16 if self.head16 is not None else self.head
        return int(self.basis.nbytes + (0 if held is None else held.nbytes))

    def rows(self, query: npt.NDArray[np.float32], take: int) -> npt.NDArray[np.intp] | None:
        """Ascending row positions worth an exact cosine for the ``take`` best, or None.

        ``query``: the unit query (``dim``,), float32. The :data:`KEEP_FACTOR` x ``take`` (at
        least ``rows //`` :data:`KEEP_SHARE`) rows of highest first-stage score; None when that
        is over a quarter of the rows (scanning every full row is then about as cheap, and
        exact). With ``head16`` the scores are exact int32 dot products (ties at the cut go to
        the smaller row); else float32 ones (``argpartition`` breaks ties).
        """
        keep = max(KEEP_FACTOR * max(1, take), self.count // KEEP_SHARE)
        if 4 * keep > self.count:
            return None
        projected = query @ self.basis
        if self.head16 is not None:
            assert _vecscan is not None  # head16 is only built with the kernel
            picked16 = np.empty(keep, dtype=np.intp)
            _vecscan.keep_rows(self.head16, _quantised_query(projected, self.head16), picked16)
            return picked16
        assert self.head is not None
        scores = self.head @ projected
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


def best_rows(
    mat: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    rows: npt.NDArray[np.intp] | None,
    take: int,
    *,
    blas: bool = True,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """The ``take`` rows of ``mat`` of highest cosine with ``query``, best first, and the cosines.

    ``mat``: row-normalised (n x dim) float32, C-contiguous; ``query``: unit (dim,) float32;
    ``rows``: the int64 row positions to consider (:meth:`Preselect.rows`), None for every row;
    ``take`` ≥ 0. Returns (positions in ``mat``, int64, and their float32 cosines), ``min(take,
    rows considered)`` long. With the kernel, ties go to the smaller row and each dot product
    sums in a fixed order (``_vecscan.c``); else numpy (``blas``: one BLAS call, else
    ``einsum``) and a stable sort of the ``argpartition`` of the scores.

    Raises:
        ValueError: a row outside ``mat``, or ``mat`` not float32 rows of ``query``'s length
            (kernel; numpy raises IndexError or ValueError).
    """
    if _vecscan is not None:
        count = len(mat) if rows is None else len(rows)
        out_rows = np.empty(min(take, count), dtype=np.intp)
        out_scores = np.empty(len(out_rows), dtype=np.float32)
        if len(out_rows):
            _vecscan.exact_top(
                mat, np.ascontiguousarray(query, np.float32), rows, out_rows, out_scores
            )
        return out_rows, out_scores
    if rows is None:
        sims = mat @ query if blas else np.einsum("ij,j->i", mat, query)
    else:
        sims = mat[rows] @ query  # exact cosines of the preselected rows only
    take = min(take, len(sims))
    if take <= 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float32)
    order = np.argpartition(-sims, take - 1)[:take]
    order = order[np.argsort(-sims[order], kind="stable")]
    return (order if rows is None else rows[order]), sims[order]
