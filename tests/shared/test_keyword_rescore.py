"""Keyword rescoring through ``recall`` on a real store with the in-memory index: a memory that
asked about part of the query is demoted in proportion, and a when-query promotes a memory that
states a relative time (shared.keyword_rescore, shared.echo, shared.time_cues)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from shared.echo import drop_echoes
from shared.engine import Engine, build_engine
from shared.keyword_rescore import rescore_keyword_hits, screen_keyword_hits
from shared.memory_render import MemoryPreparer
from shared.models import NewMemory, Scope
from shared.retrieval import index_candidates, keyword_search_of, recall, retention_of
from shared.settings import Settings, load_settings
from shared.store import Store

FILLER = [
    "The weather in the mountains was cold and windy",
    "Lunch was a bowl of noodles with vegetables",
    "The train to the coast runs every hour",
    "A new bakery opened near the station",
    "The garden needs watering twice a day in summer heat",
    "Reading a novel about sailors and storms",
    "The printer at the office jammed again",
    "Painting the fence took the whole afternoon",
]
ASKED = "I have been feeling low on confidence. Any tips on how you stay confident in business?"
STATED = "I stay confident in my business by writing down every small win"
PLAIN = "I adopted a puppy"
DATED = "We finally adopted a puppy from the shelter near the old mill last week"


@pytest.fixture
async def world(tmp_path) -> AsyncIterator[tuple[Store, Engine, str]]:
    db = str(tmp_path / "k.db")
    store = await Store.open(db)
    texts = [*FILLER, ASKED, STATED, PLAIN, DATED]
    await store.writes.upsert_many([NewMemory(owner_id="o", content=t) for t in texts])
    http = httpx.AsyncClient()
    base = settings_for(db)
    engine = build_engine(base, store, http, retention_of(base))
    yield store, engine, db
    await engine.close()
    await http.aclose()
    await store.close()


def settings_for(db: str, **overrides: object) -> Settings:
    return load_settings(
        {}, db_path=db, retrieval_strategy="exact", embedding_source="none", **overrides
    )


async def ranked(world: tuple[Store, Engine, str], query: str, **overrides: object) -> list[str]:
    store, engine, db = world
    result = await recall(
        store.memories,
        Scope(owner_id="o"),
        query,
        settings_for(db, **overrides),
        time.time(),
        engine,
    )
    return [m.content for m in result.memories]


async def test_a_memory_that_asked_about_most_of_the_query_ranks_below_the_statement(world):
    query = "How does she stay confident in business?"
    # without the rescoring the memory that asked ("how you stay confident in business?") ranks
    # first: it holds every query word, "confidence" twice; but its statement sentence holds
    # only "confidence", so it is demoted by the IDF share of "stay" and "business"
    assert (await ranked(world, query, recall_question_factor=1.0))[:2] == [ASKED, STATED]
    assert (await ranked(world, query, recall_question_factor=0.5))[:2] == [STATED, ASKED]


async def test_a_when_query_promotes_the_memory_that_states_a_time(world):
    when = "When did I adopt a puppy?"
    assert (await ranked(world, when, recall_when_factor=1.0))[:2] == [PLAIN, DATED]
    assert (await ranked(world, when, recall_when_factor=1.5))[:2] == [DATED, PLAIN]
    # a query that does not ask when keeps the plain BM25 order
    assert (await ranked(world, "Did I adopt a puppy?", recall_when_factor=1.5))[:2] == [
        PLAIN,
        DATED,
    ]


@pytest.mark.parametrize("prepared", [True, False])
@pytest.mark.parametrize(
    "query",
    [
        "How does she stay confident in business?",
        "Any tips on how you stay confident?",
        "When did I adopt a puppy?",
        "What needs watering in the garden?",
    ],
)
async def test_screening_with_the_owner_idf_answers_like_drop_echoes_then_rescore(
    world, query, prepared
):
    _store, engine, db = world
    settings = settings_for(db)
    scope = Scope(owner_id="o")
    index = engine.keywords
    assert index is not None
    index.use_preparer(MemoryPreparer(None))
    hits, memories, _ = await index_candidates(
        index, keyword_search_of(scope, query, settings, time.time()), settings
    )
    await index.cache.settle()
    ready = index.prepared(scope, memories.values()) if prepared else {}
    assert bool(ready) == prepared
    content = {i: m.content for i, m in memories.items()}
    kept = drop_echoes("Tell me something", hits, content, lambda c: c.memory_id, ready)
    expected = rescore_keyword_hits(index, scope, query, kept, content, settings, ready)
    screened = screen_keyword_hits(
        index, scope, query, "Tell me something", hits, memories, settings, ready
    )
    assert screened == expected
