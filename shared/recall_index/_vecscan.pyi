"""Type stub of the compiled kernel ``_vecscan.c`` (its comment documents the contract).

The buffers are C-contiguous numpy arrays (any object with the buffer protocol of the item size
the comment names).
"""

avx2: int

def keep_rows(head: object, query: object, out_rows: object, /) -> None:
    """Write the ``len(out_rows)`` rows of highest int16 score into ``out_rows``, ascending."""

def exact_top(
    mat: object, query: object, rows: object | None, out_rows: object, out_scores: object, /
) -> int:
    """Write the best float32 dot products, best first; returns how many were written."""
