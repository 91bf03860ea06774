"""The install compiled the recall engine's C kernels.

Both are optional at build time (a failed compile leaves their numpy fallbacks, which give the
same results, slower), so their own tests skip or compare the fallback with itself when they are
missing; this test is what fails then.
"""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("name", ["_bm25scan", "_vecscan"])
def test_kernel_is_built(name: str) -> None:
    module = importlib.import_module(f"shared.recall_index.{name}")
    assert module.__file__ is not None and module.__file__.endswith(".so")
