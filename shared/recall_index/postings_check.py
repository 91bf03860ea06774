"""Whether documents hold query terms, read from a segment's postings (pure, numpy).

A segment keeps, per term, the ascending positions of the documents holding it
(:meth:`shared.recall_index.segment.Segment.postings`); a binary search of a position in them
tells whether that document holds the term, own text or context alike. Used by the shared-terms
check of recall (:meth:`shared.recall_index.owner.OwnerIndex.shares_terms`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["any_holds", "holds"]


def holds(postings: list[npt.NDArray[np.int32]], pos: int, least: int) -> bool:
    """Whether segment position ``pos`` is in ``least`` of the ``postings`` arrays."""
    found = 0
    for docs in postings:
        i = int(docs.searchsorted(pos))
        if i < len(docs) and docs[i] == pos:
            found += 1
            if found >= least:
                return True
    return False


def any_holds(postings: list[npt.NDArray[np.int32]], positions: list[int], least: int) -> bool:
    """Whether a segment position of ``positions`` is in ``least`` of the ``postings`` arrays."""
    if not positions:
        return False
    at = np.array(positions, dtype=np.int32)
    count = np.zeros(len(at), dtype=np.int32)
    for docs in postings:
        i = docs.searchsorted(at)
        i[i == len(docs)] = 0
        count += docs[i] == at
        if int(count.max()) >= least:
            return True
    return False
