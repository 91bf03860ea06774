"""The vector-index interface shared by the sqlite-vec and Qdrant tiers.

Every implementation filters by owner INSIDE the index query (partition key in vec0, payload filter
in Qdrant), never after a global top-k (a global top-k starves or leaks tenants; see "Tenancy and
access" in ``docs/ARCHITECTURE.md``), and applies end-user, session and expiry filters the same way
the keyword tier does. Retention (typed decay) is re-checked by the caller against the store
(:meth:`shared.store.memories.MemoryStore.filter_visible`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from shared.models import Scope


class VectorRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One memory's vector and the payload every tier filters on.

    ``vector``: float32 values, length = the index dimension, L2-normalised.
    Times are unix seconds; ``user_id`` ``""`` = owner-wide; ``session_id`` None = not
    session-scoped.
    """

    memory_id: int
    owner_id: str
    user_id: str
    session_id: str | None
    type: str
    created_at: float
    expires_at: float | None
    vector: list[float]


class VectorHit(msgspec.Struct, frozen=True):
    """A KNN result: memory rowid and cosine similarity in [-1, 1] (higher = nearer)."""

    memory_id: int
    score: float


class VectorIndex(Protocol):
    """A vector tier. All methods raise ``shared.errors.VectorIndexError`` on failure."""

    name: str  # "sqlite-vec" or "qdrant": reported in x-mnemogate-memory-tier

    async def ensure(self, dim: int, signature: str) -> bool:
        """Create the index for ``dim``-dimensional vectors if missing.

        Returns True when the index was (re)created because it was missing or its signature
        (``source:model:dim[:int8]``) changed: every memory then needs re-embedding.
        """
        ...

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace the vectors of ``records`` (idempotent)."""
        ...

    async def delete(self, memory_ids: Sequence[int]) -> None:
        """Remove the vectors of ``memory_ids`` (missing ids are ignored)."""
        ...

    async def search(
        self, vector: npt.NDArray[np.float32], scope: Scope, k: int, now: float
    ) -> list[VectorHit]:
        """Top-``k`` nearest memories visible to ``scope`` at ``now``, nearest first."""
        ...

    async def count(self) -> int:
        """Number of stored vectors."""
        ...

    async def health(self) -> str:
        """``"ok"`` or a short reason why the tier is unusable."""
        ...
