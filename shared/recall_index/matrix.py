"""One owner's cached vectors: a read-only base matrix plus the rows written since it was read.

The base (ids ascending, row-normalised float32, optionally its first-stage
:class:`~shared.recall_index.preselect.Preselect`) is read once from the store. A write of a few
memories then patches the cache instead of re-reading every row: the changed memories' base rows are
masked out (``dead``) and their current vectors, if any, kept in a small ``extra`` matrix searched
exactly beside the base; once the patches outgrow :data:`PATCH_MAX` rows the two are merged into a
new base in memory (:meth:`OwnerMatrix.compacted`). Re-reading the whole owner (10k x 256 rows and
its principal directions: tens of ms) after every learned memory made a hybrid gateway with learning
on spend most of its CPU there and miss the recall budget on most requests under load. Every object
is immutable once built: a patch makes a new one, so a search never sees a half-applied write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from shared.recall_index.preselect import Preselect, best_rows, build_preselect

__all__ = ["PATCH_MAX", "OwnerMatrix", "normalised_rows"]

PATCH_MAX = 512
"""Most rows patched (masked in the base, or held in ``extra``) before the two are merged."""

_NO_IDS: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)


def normalised_rows(
    rows: Sequence[Any], dim: int, dtype: type[np.generic]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Ids (ascending) and row-normalised float32 matrix of ``(memory_id, embedding bytes)`` rows.

    ``dtype``: the stored element type (float32, or int8 for a quantised table); a zero row
    stays zero. Rows are ordered by id so a memory's row is found with a binary search.
    """
    ordered = sorted(rows, key=lambda r: int(r[0]))
    ids = np.fromiter((int(r[0]) for r in ordered), dtype=np.int64, count=len(ordered))
    raw = np.frombuffer(b"".join(bytes(r[1]) for r in ordered), dtype=dtype)
    mat = raw.astype(np.float32).reshape(len(ordered), dim)
    norms = np.linalg.norm(mat, axis=1)
    norms[norms == 0] = 1.0
    return ids, mat / norms[:, None]


class OwnerMatrix:
    """The vectors of one owner as of the recall index generation ``generation``.

    ``owner_id`` and ``lineage``: those of the keyword
    :class:`~shared.recall_index.owner.OwnerIndex` it was made for, whose ``generation`` it
    reflects (a rebuilt index continues the lineage and generations of the one it replaced; a
    reloaded one starts a new lineage, and a new matrix); ``ids``/``mat``/``preselect``: the base;
    ``dead``: base positions superseded by a later write (None: none); ``extra_ids`` (ascending)
    and ``extra``: the current vectors of memories written since the base was read; ``space``:
    what the rows' coordinates depend on (dimension, embedding signature, quantisation): a
    patch is only made from rows of the same space.
    """

    __slots__ = (
        "dead",
        "extra",
        "extra_ids",
        "generation",
        "ids",
        "lineage",
        "masked",
        "mat",
        "owner_id",
        "preselect",
        "space",
    )

    def __init__(
        self,
        owner_id: str,
        lineage: object,
        generation: int,
        ids: npt.NDArray[np.int64],
        mat: npt.NDArray[np.float32],
        preselect: Preselect | None = None,
        dead: npt.NDArray[np.bool_] | None = None,
        extra: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None = None,
        space: tuple[object, ...] = (),
    ) -> None:
        self.owner_id = owner_id
        self.lineage = lineage
        self.space = space
        self.generation = generation
        self.ids = ids
        self.mat = mat
        self.preselect = preselect
        self.dead = dead
        self.masked = 0 if dead is None else int(dead.sum())  # immutable: counted once
        self.extra_ids, self.extra = extra if extra is not None else (_NO_IDS, mat[:0])

    @property
    def patched(self) -> int:
        """Rows the patches account for (masked base rows plus extra rows)."""
        return self.masked + len(self.extra_ids)

    @property
    def rows(self) -> int:
        """Live rows (base rows not masked, plus extra rows)."""
        return len(self.ids) - self.masked + len(self.extra_ids)

    def patch(
        self,
        generation: int,
        changed: Iterable[int],
        fresh: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]],
    ) -> OwnerMatrix:
        """A new matrix where every id of ``changed`` has the vector of ``fresh``, or none.

        ``fresh``: ids (ascending) and normalised rows read for ``changed`` (a changed memory
        without a row, deleted or not embedded yet, is absent). ``self`` is left unchanged.
        """
        gone = np.fromiter(set(changed), dtype=np.int64)
        dead = np.zeros(len(self.ids), np.bool_) if self.dead is None else self.dead.copy()
        if len(self.ids) and len(gone):
            pos = np.minimum(np.searchsorted(self.ids, gone), len(self.ids) - 1)
            dead[pos[self.ids[pos] == gone]] = True
        keep = ~np.isin(self.extra_ids, gone)
        ids = np.concatenate([self.extra_ids[keep], fresh[0]])
        rows = np.concatenate([self.extra[keep], fresh[1].reshape(-1, self.mat.shape[1])])
        order = np.argsort(ids, kind="stable")
        return OwnerMatrix(
            self.owner_id,
            self.lineage,
            generation,
            self.ids,
            self.mat,
            self.preselect,
            dead if dead.any() else None,
            (ids[order], np.ascontiguousarray(rows[order], dtype=np.float32)),
            self.space,
        )

    def compacted(self, preselect_dims: int) -> OwnerMatrix:
        """The same rows as one base (live base rows and ``extra``, by id) and its first stage.

        CPU only (a copy of the rows and :func:`build_preselect`): run it off the event loop.
        What a patch that outgrew :data:`PATCH_MAX` becomes, instead of reading the owner's
        vectors again (a scan of every vec0 chunk: ~0.25-0.5 s at 10,000 rows, on the reader
        connection every feed read also waits for).
        """
        live = slice(None) if self.dead is None else ~self.dead
        ids = np.concatenate([self.ids[live], self.extra_ids])
        mat = np.concatenate([self.mat[live], self.extra])
        order = np.argsort(ids, kind="stable")
        ids, mat = ids[order], np.ascontiguousarray(mat[order], dtype=np.float32)
        return OwnerMatrix(
            self.owner_id,
            self.lineage,
            self.generation,
            ids,
            mat,
            build_preselect(mat, preselect_dims),
            space=self.space,
        )

    def best(
        self, query: npt.NDArray[np.float32], take: int, *, blas: bool = True
    ) -> tuple[list[int], list[float]]:
        """The ``take`` live rows of highest cosine with the unit ``query``: ids, cosines.

        Best first; ties by smaller id. The base goes through its first stage when it has one
        (:meth:`Preselect.rows`) and is asked for up to ``take`` more rows than wanted, then, only
        when masked rows still crowd the answer, for as many more as it has masked ones, so
        masking never shortens the answer; ``extra`` is scanned whole (exact).
        """
        if take <= 0 or self.rows == 0:
            return [], []
        masked = self.masked
        want = min(len(self.ids), take + min(masked, take))
        while True:
            rows = self.preselect.rows(query, want) if self.preselect is not None else None
            pos, sims = best_rows(self.mat, query, rows, want, blas=blas)
            if self.dead is not None:
                live = ~self.dead[pos]
                pos, sims = pos[live], sims[live]
            if len(pos) >= take or want >= len(self.ids):
                break
            want = min(len(self.ids), take + masked)  # masked rows crowded the best: all of them
        ids = self.ids[pos]
        if len(self.extra_ids):
            found, extra_sims = best_rows(self.extra, query, None, take, blas=blas)
            ids = np.concatenate([ids, self.extra_ids[found]])
            sims = np.concatenate([sims, extra_sims])
            order = np.lexsort((ids, -sims))[:take]
            ids, sims = ids[order], sims[order]
        return ids[:take].tolist(), sims[:take].tolist()

    def cosines(
        self, query: npt.NDArray[np.float32], wanted: npt.NDArray[np.int64]
    ) -> dict[int, float]:
        """``{memory_id: cosine}`` of the ``wanted`` ids that have a live row (CPU only).

        Computed as :meth:`best` computes it (:func:`best_rows`), so a memory has the same
        cosine in both.
        """
        out: dict[int, float] = {}
        for ids, mat, dead in ((self.ids, self.mat, self.dead), (self.extra_ids, self.extra, None)):
            if len(ids) == 0:
                continue
            pos = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
            held = ids[pos] == wanted
            if dead is not None:
                held &= ~dead[pos]
            if not held.any():
                continue
            found, sims = best_rows(mat, query, pos[held], int(held.sum()))
            out.update(zip(ids[found].tolist(), sims.tolist(), strict=True))
        return out
