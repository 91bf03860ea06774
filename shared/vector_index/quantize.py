"""int8 quantization of embeddings that keeps KNN recall, with scales fitted on sample vectors.

sqlite-vec's ``vec_quantize_int8(v, 'unit')`` maps the fixed range [-1, 1] onto [-128, 127] in
every dimension. Unit-norm embeddings use a small part of that range (for all-MiniLM-L6-v2 no
value exceeded 0.27 in our sample), so values land on few levels: recall@10 fell to 0.83 in one
test (see "Vector tiers" in ``docs/ARCHITECTURE.md``).

Two symmetric schemes, ``q = round(127 · clip(x / scale, -1, 1))``:

- **global** (default): one scale for all dimensions, ``max |x|`` over the calibration sample.
  Quantization is then a uniform rescaling, so L2/cosine/dot distances computed *on the int8
  values* (as vec0 does) rank like the float ones.
- **per-dimension** (``per_dimension=True``): ``scale_d = max |x_d|``. Each dimension uses its full
  int8 range, so :func:`dequantize_int8` reconstructs best, but distances computed on the raw int8
  values weight dimension ``d`` by ``1/scale_d²``, i.e. they are a different metric.

Measured here (recall@10 of int8 L2 KNN against float cosine, 200 queries over 1,800 stdlib
docstring sentences): all-MiniLM-L6-v2 384-d — unit 0.977, global 0.994, per-dimension 0.934;
static 256-d (PCA, very unequal dimension spreads) — unit 0.962, global 0.979, per-dimension
0.789. So use global scales for an index that compares int8 values directly, and per-dimension
scales only where vectors are dequantized before comparing (e.g. a float re-rank).

Store the scales with the index: queries and stored vectors must be quantized with the same
scales, and a new calibration means re-quantizing every stored vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Rank of a sample of vectors (rows × dimensions).
MATRIX_NDIM = 2
#: The percentile that is the maximum.
FULL_PERCENTILE = 100.0

#: Largest int8 magnitude used (symmetric range, -128 unused so that q and -q both exist).
INT8_MAX = 127
#: Floor on a dimension's scale, so a dimension that is constant zero in the sample does not
#: divide by zero (its values then quantize to 0 unless they exceed the floor).
MIN_SCALE = 1e-6


@dataclass(frozen=True)
class Int8Scales:
    """Scales for :func:`quantize_int8`, one per dimension.

    Attributes:
        scale: float32, shape ``(dim,)``, all > 0: the value that maps to ±127 in each dimension
            (all equal for global scales).
    """

    scale: npt.NDArray[np.float32]

    @property
    def dim(self) -> int:
        """Number of dimensions."""
        return int(self.scale.shape[0])

    def to_bytes(self) -> bytes:
        """Little-endian float32 bytes (``4 * dim``), e.g. to keep next to the index."""
        return self.scale.astype("<f4").tobytes()

    @classmethod
    def from_bytes(cls, blob: bytes) -> Int8Scales:
        """Inverse of :meth:`to_bytes`. Raises ``ValueError`` on a bad length or scale ≤ 0."""
        if len(blob) == 0 or len(blob) % 4:
            raise ValueError("int8 scales blob must be a non-empty multiple of 4 bytes")
        scale = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        if not (np.isfinite(scale).all() and (scale > 0).all()):
            raise ValueError("int8 scales must be finite and positive")
        return cls(scale)


def fit_int8_scales(
    sample: npt.ArrayLike, percentile: float = 100.0, *, per_dimension: bool = False
) -> Int8Scales:
    """Fit symmetric int8 scales from calibration vectors.

    Args:
        sample: shape ``(n, dim)``, n ≥ 1: vectors like the ones to be stored (a few thousand
            is plenty; float values, any norm).
        percentile: 100 → the maximum of ``|x|`` (nothing in the sample is clipped); e.g. 99.99
            ignores rare outliers, which are then clipped to ±127.
        per_dimension: ``False`` (default) → one scale, the percentile of ``|x|`` over all
            values, repeated ``dim`` times (keeps the geometry: see the module docstring);
            ``True`` → ``scale_d`` = the percentile of ``|x_d|`` per dimension.

    Returns:
        :class:`Int8Scales`, every scale at least :data:`MIN_SCALE`.

    Raises:
        ValueError: ``sample`` is not a non-empty 2-D finite array, or ``percentile`` is not in
            (0, 100].
    """
    arr = np.asarray(sample, dtype=np.float64)
    if arr.ndim != MATRIX_NDIM or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError("calibration sample must have shape (n, dim) with n, dim ≥ 1")
    if not np.isfinite(arr).all():
        raise ValueError("calibration sample contains non-finite values")
    if not 0.0 < percentile <= FULL_PERCENTILE:
        raise ValueError("percentile must be in (0, 100]")
    mags = np.abs(arr)
    axis = 0 if per_dimension else None
    scale = (
        mags.max(axis=axis)
        if percentile == FULL_PERCENTILE
        else np.percentile(mags, percentile, axis)
    )
    scale = np.broadcast_to(np.maximum(scale, MIN_SCALE), (arr.shape[1],))
    return Int8Scales(np.array(scale, dtype=np.float32))


def quantize_int8(vecs: npt.ArrayLike, scales: Int8Scales) -> npt.NDArray[np.int8]:
    """Quantize ``vecs`` (shape ``(n, dim)`` or ``(dim,)``) to int8 with ``scales``.

    ``q = round(127 · clip(x / scale, -1, 1))``, so values are in [-127, 127].

    Raises:
        ValueError: the last dimension differs from ``scales.dim``.
    """
    arr = np.asarray(vecs, dtype=np.float32)
    if arr.shape[-1] != scales.dim:
        raise ValueError(f"vectors have dimension {arr.shape[-1]}, scales {scales.dim}")
    scaled = np.clip(arr / scales.scale, -1.0, 1.0) * INT8_MAX
    out: npt.NDArray[np.int8] = np.rint(scaled).astype(np.int8)
    return out


def dequantize_int8(q: npt.ArrayLike, scales: Int8Scales) -> npt.NDArray[np.float32]:
    """Approximate inverse of :func:`quantize_int8`: ``x ≈ q / 127 · scale`` (same shape)."""
    arr = np.asarray(q, dtype=np.float32)
    out: npt.NDArray[np.float32] = (arr / INT8_MAX * scales.scale).astype(np.float32)
    return out
