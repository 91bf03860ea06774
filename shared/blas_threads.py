"""One OpenBLAS thread for the request path's matrix-vector products.

numpy hands a float32 matrix-vector product (``matrix @ vector``) to its BLAS, ``sgemv``. The
OpenBLAS that numpy ships splits any product of more than 2,304 × 4 elements across all its
threads (OpenBLAS ``interface/gemv.c``: one thread only while ``m * n < 2304 *
GEMM_MULTITHREAD_THRESHOLD``, the threshold being 4), and its threads spin while they wait for
work. For the recall index's per-owner matrices (10,000 × 256 floats: a few hundred
microseconds of work) that costs more than it saves: on the 2-core development machine
``matrix @ vector`` took 0.25-1.1 ms of CPU with the default threads against 0.12-0.14 ms on one
thread, and numpy's own ``einsum`` loop (no BLAS) 0.25 ms.

:func:`limit_blas_threads` sets the thread count of every OpenBLAS loaded in this process through
OpenBLAS's ``openblas_set_num_threads`` (the symbol carries a prefix and suffix in the
``scipy-openblas`` builds numpy's wheels link: ``scipy_openblas_set_num_threads64_``), found via
``/proc/self/maps`` as ``threadpoolctl`` does. Where that is impossible (no ``/proc``, another
BLAS), it returns False and callers keep their BLAS-free path.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import numpy as np

__all__ = ["blas_threads", "limit_blas_threads"]

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GETTERS = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def _openblas_libraries() -> list[ctypes.CDLL]:
    """The OpenBLAS libraries mapped into this process (after numpy loaded its own)."""
    _ = np.__version__  # numpy (imported above) has loaded its BLAS
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    libs = []
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


def _call(names: tuple[str, ...], *args: int) -> int | None:
    """Call the first of ``names`` found; its int result (0 for a setter), None if none is."""
    for lib in _openblas_libraries():
        for name in names:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int if not args else None
                return int(fn(*args) or 0)
    return None


def blas_threads() -> int | None:
    """The thread count of numpy's OpenBLAS, None when it cannot be read (see module doc)."""
    return _call(_GETTERS)


@functools.cache
def limit_blas_threads(threads: int = 1) -> bool:
    """Run OpenBLAS products of this process on ``threads`` threads; True when it took effect.

    Process-wide and done once per ``threads`` value (cached). Never raises: False when no
    OpenBLAS setter is found or the count did not change to ``threads``.
    """
    if _call(_SETTERS, threads) is None:
        return False
    return blas_threads() == threads
