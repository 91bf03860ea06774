"""``KeywordIndex.shares_terms``: whether a hit holds enough of the query's terms, for memories
of the loaded segment, of the delta (written after the load) and of the global partition, own
text and context alike, on a real migrated store."""

from __future__ import annotations

import time

from shared.models import GLOBAL_OWNER, NewMemory, Scope
from shared.recall_index import build_keyword_index
from shared.recall_index.analysis import query_tokens
from shared.settings import load_settings
from shared.store import Store
from shared.store.memories import KeywordSearch

SCOPE = Scope(owner_id="o", include_global=True)


async def ids_of(index, query: str) -> list[int]:
    hits = await index.search(KeywordSearch(scope=SCOPE, query=query, limit=20, now=time.time()))
    return [m.id for m, _ in hits]


async def test_segment_delta_global_and_context_memories_count_their_terms(tmp_path):
    db = str(tmp_path / "s.db")
    store = await Store.open(db)
    index = build_keyword_index(load_settings({}, db_path=db, recall_freshness_ms=0), store)
    try:
        dog, _ = await store.writes.upsert(NewMemory(owner_id="o", content="My dog is called Rex"))
        await store.writes.upsert(NewMemory(owner_id="o", content="I like tea"))
        await ids_of(index, "dog")  # loads the owner: both are in its segment
        terms = query_tokens("How do I call a function in Rust?")  # call, function, rust
        assert len(terms) == 3
        assert not index.shares_terms(SCOPE, terms, [dog.id], 2)  # only "call"
        assert index.shares_terms(SCOPE, terms, [dog.id], 1)
        assert index.shares_terms(SCOPE, query_tokens("what is my dog called"), [dog.id], 2)
        assert not index.shares_terms(SCOPE, terms, [987_654], 1)  # not held: counts nothing
        late, _ = await store.writes.upsert(
            NewMemory(owner_id="o", content="Rust functions are called with parentheses")
        )
        assert late.id in await ids_of(index, "rust")  # read from the feed: in the delta
        assert index.shares_terms(SCOPE, terms, [dog.id, late.id], 3)
        ctx, _ = await store.writes.upsert(
            NewMemory(owner_id="o", content="Sounds good", context="we talked about Rust")
        )
        shared_, _ = await store.writes.upsert(
            NewMemory(owner_id=GLOBAL_OWNER, content="Function names in Rust use snake case")
        )
        assert {ctx.id, shared_.id} <= set(await ids_of(index, "rust function"))
        assert not index.shares_terms(SCOPE, terms, [ctx.id], 2)  # "rust" in its context only
        assert index.shares_terms(SCOPE, terms, [ctx.id], 1)
        assert index.shares_terms(SCOPE, terms, [shared_.id], 2)  # the global partition
        alone = Scope(owner_id="o", include_global=False)
        assert not index.shares_terms(alone, terms, [shared_.id], 1)
        assert index.shares_terms(SCOPE, terms, [], 0)
    finally:
        await index.close()
        await store.close()
