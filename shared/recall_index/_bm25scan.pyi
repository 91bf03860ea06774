"""Type stub of the compiled BM25 scan (``_bm25scan.c``)."""

from collections.abc import Sequence
from typing import Any

from numpy.typing import NDArray

def scan(
    docs: Sequence[NDArray[Any]],
    weights: Sequence[NDArray[Any]],
    idfs: NDArray[Any],
    need: int,
    acc: NDArray[Any],
    count: NDArray[Any],
    touched: NDArray[Any],
    out_idx: NDArray[Any],
    out_scores: NDArray[Any],
) -> tuple[int, int]: ...
