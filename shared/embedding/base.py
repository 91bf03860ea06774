"""The one interface every embedding source implements, and the helpers they share.

A source turns texts into L2-normalised float32 rows. Its :attr:`EmbeddingSource.signature`
(``"source:model:dim"``) names the vector space: vectors with different signatures are never
compared, cached together or stored in the same index.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

#: A float32 matrix of shape ``(n, dim)``; rows are embeddings.
Vectors: TypeAlias = npt.NDArray[np.float32]

#: The kinds of source, in :attr:`EmbeddingSource.source`.
SOURCE_KINDS = ("remote", "transformers", "static")


class EmbeddingSource(ABC):
    """Something that embeds texts.

    Attributes:
        source: ``"remote"``, ``"transformers"`` or ``"static"``.
        model: model name within the source (e.g. ``"text-embedding-3-small"``).
        dim: vector length; ``0`` only for a remote source whose dimension is not known yet
            (it becomes the first dimension the endpoint returns).
    """

    source: str
    model: str
    dim: int
    #: Cosine similarity below which a neighbour is treated as unrelated, calibrated per source
    #: (unrelated pairs scored about 0.1-0.25 with MiniLM; see ``vector_min_similarity``).
    min_similarity: float = 0.3

    @property
    def signature(self) -> str:
        """``f"{source}:{model}:{dim}"``: the identity of the vector space these vectors live in."""
        return f"{self.source}:{self.model}:{self.dim}"

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``.

        Returns:
            float32 array of shape ``(len(texts), dim)``, row ``i`` for ``texts[i]``, each row
            L2-normalised (norm 1 ± 1e-5; a text with no usable token gives a zero row).

        Raises:
            EmbeddingError: the source failed (``.code`` says why).
        """

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.signature}>"


def l2_normalize(mat: npt.NDArray[np.floating]) -> Vectors:
    """Return ``mat`` (shape ``(n, d)``) as float32 with every row scaled to unit L2 norm.

    Rows whose norm is 0 (or not finite-positive) are returned as zeros rather than NaN.
    """
    out = np.asarray(mat, dtype=np.float32)
    if out.ndim > 1 and len(out) == 1:  # one row (a query): the same arithmetic, ~2x faster
        norm = np.sqrt(np.add.reduce(out * out, axis=1, keepdims=True))
        if norm[0, 0] > 0.0:
            one: Vectors = (out / norm).astype(np.float32, copy=False)
            return one
        return np.zeros_like(out)
    # np.linalg.norm's own formula for real input: sqrt(add.reduce(x * x)), as above
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    safe = np.where(norms > 0.0, norms, np.float32(1.0))
    result: Vectors = (out / safe).astype(np.float32, copy=False)
    result[(norms <= 0.0).ravel()] = 0.0
    return result


def empty_vectors(dim: int) -> Vectors:
    """A ``(0, dim)`` float32 array: the answer to embedding no texts."""
    return np.zeros((0, dim), dtype=np.float32)
