"""Fixtures of the shared-layer tests: the rerank fake (a real server on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.rerank import FakeReranker


@pytest.fixture(scope="module")
def reranker() -> Iterator[FakeReranker]:
    """A rerank server per test module; tests call ``reset()`` for a clean state."""
    server = FakeReranker().start()
    yield server
    server.stop()
