"""Fixtures of the recall-index tests: a real migrated store file and its keyword index."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from shared.recall_index import KeywordIndex, build_keyword_index
from shared.settings import load_settings
from shared.store import Store


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[tuple[Store, KeywordIndex]]:
    """A store on a fresh file and a keyword index over it (default settings); both closed after."""
    path = str(tmp_path / "index.db")
    store = await Store.open(path)
    keywords = build_keyword_index(load_settings({}, db_path=path), store)
    yield store, keywords
    await keywords.close()
    await store.close()
