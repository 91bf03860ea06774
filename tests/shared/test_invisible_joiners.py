"""Words cut by invisible format characters (soft hyphen, zero width space, ...): a memory
pasted with ``Ber\\u00adlin`` is found by ``Berlin`` and the other way round, on the FTS5 tier and
the in-memory index, against a real migrated store."""

from __future__ import annotations

import time

import pytest

from shared.fts_query import index_text, query_terms
from shared.invisible_joiners import INVISIBLE_JOINERS, joined_words
from shared.models import NewMemory, Scope
from shared.recall_index import build_keyword_index
from shared.retrieval import keyword_candidates
from shared.settings import load_settings
from shared.store import Store
from shared.store.memories import KeywordSearch

SCOPE = Scope(owner_id="o")


def test_joined_words_drop_the_invisible_characters_inside_words():
    assert joined_words("Ber\u00adlin and Mün\u200bchen") == ["Berlin", "München"]
    assert joined_words("Berlin") == [] and joined_words("plain ascii") == []
    assert joined_words("\u200bleading and trailing\u00ad") == []  # not inside a word
    assert joined_words("👨\u200d👩\u200d👧 family") == []  # emoji sequences are not words
    for ch in INVISIBLE_JOINERS:
        assert joined_words(f"x{ch}y") == ["xy"]


def test_the_index_text_holds_the_whole_word_and_the_query_asks_for_it_first():
    assert "Berlin" in index_text("I moved to Ber\u00adlin", None).split()
    assert index_text("I moved to Berlin", None) == "I moved to Berlin"  # unchanged without them
    # the whole word first, then the pieces memories stored before this version hold
    assert query_terms("trip to Ber\u00adlin") == ["berlin", "trip", "ber", "lin"]
    assert query_terms("trip to Berlin") == ["trip", "berlin"]


@pytest.fixture
async def store(tmp_path):
    s = await Store.open(str(tmp_path / "j.db"))
    await s.writes.upsert_many(
        [
            NewMemory(owner_id="o", content="I moved to Ber\u00adlin last spring"),
            NewMemory(owner_id="o", content="My sister lives in Hamburg"),
            NewMemory(owner_id="o", content="The meeting is in Mün\u200bchen"),
            NewMemory(owner_id="o", content="I work in Frankfurt"),
        ]
    )
    yield s
    await s.close()


def request(query: str) -> KeywordSearch:
    return KeywordSearch(scope=SCOPE, query=query, limit=10, now=time.time())


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("When did I move to Berlin?", "I moved to Ber\u00adlin last spring"),
        ("Where is the meeting, München?", "The meeting is in Mün\u200bchen"),
        ("Does my sister live in Ham\u00adburg?", "My sister lives in Hamburg"),
        ("Do I work in Frank\u200bfurt?", "I work in Frankfurt"),
    ],
)
async def test_both_tiers_find_the_word_with_or_without_the_invisible_character(
    store, tmp_path, query, found
):
    candidates, memories = await keyword_candidates(store.memories, request(query))
    assert memories[candidates[0].memory_id].content == found  # FTS5
    index = build_keyword_index(load_settings({}, db_path=str(tmp_path / "j.db")), store)
    try:
        hits = await index.search(request(query))
        assert hits and hits[0][0].content == found  # in-memory index
    finally:
        await index.close()
