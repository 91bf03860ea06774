"""MemoryStore against a real migrated SQLite: upsert semantics, FTS sync by rowid, access
recording that leaves the FTS index alone, and a property test of keyword search isolation."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.fts_query import build_match_query
from shared.models import NewMemory, Scope
from shared.store import Store


@pytest.fixture
async def store(tmp_path):
    s = await Store.open(str(tmp_path / "m.db"))
    yield s
    await s.close()


async def fts_pages(store: Store) -> list[tuple]:
    async with store.reader.execute("SELECT id, block FROM memory_fts_data ORDER BY id") as cur:
        return [tuple(r) for r in await cur.fetchall()]


async def test_upsert_keeps_created_at_and_merges_metadata(store):
    first, created = await store.writes.upsert(
        NewMemory(owner_id="o", key="k", content="User likes tea", metadata={"a": 1, "b": 1}),
        now=100.0,
    )
    assert created
    second, created = await store.writes.upsert(
        NewMemory(owner_id="o", key="k", content="User likes green tea", metadata={"b": 2, "c": 3}),
        now=200.0,
    )
    assert not created
    assert second.id == first.id and second.public_id == first.public_id
    assert second.created_at == 100.0 and second.updated_at == 200.0
    assert second.metadata == {"a": 1, "b": 2, "c": 3}
    assert second.content == "User likes green tea" and second.needs_reindex
    # the FTS row follows the rowid: the new text is found, the old one is not
    scope = Scope(owner_id="o")
    hits = await store.memories.keyword_search(
        scope, build_match_query("green"), limit=5, now=300.0
    )
    assert [m.id for m, _ in hits] == [first.id]
    assert await store.memories.keyword_search(
        scope, build_match_query("likes tea"), limit=5, now=300.0
    )


async def test_same_key_for_other_user_or_owner_is_a_different_memory(store):
    a, _ = await store.writes.upsert(NewMemory(owner_id="o", key="k", content="x"))
    b, _ = await store.writes.upsert(NewMemory(owner_id="o", user_id="u", key="k", content="y"))
    c, _ = await store.writes.upsert(NewMemory(owner_id="p", key="k", content="z"))
    assert len({a.id, b.id, c.id}) == 3


async def test_new_memory_is_searchable_and_delete_removes_it_from_fts(store):
    m, _ = await store.writes.upsert(
        NewMemory(owner_id="o", content="Kubernetes cluster on Hetzner")
    )
    scope = Scope(owner_id="o")
    q = build_match_query("hetzner")
    assert [
        x.id for x, _ in await store.memories.keyword_search(scope, q, limit=5, now=time.time())
    ] == [m.id]
    await store.writes.delete(m.public_id)
    assert await store.memories.keyword_search(scope, q, limit=5, now=time.time()) == []
    async with store.reader.execute("SELECT COUNT(*) FROM memory_fts_docsize") as cur:
        assert (await cur.fetchone())[0] == 0


async def test_access_recording_does_not_rewrite_the_fts_index(store):
    ids = []
    for i in range(50):
        m, _ = await store.writes.upsert(
            NewMemory(owner_id="o", content=f"memory number {i} about cats")
        )
        ids.append(m.id)
    before = await fts_pages(store)
    for _ in range(20):
        await store.writes.record_access(ids, time.time())
    assert await fts_pages(store) == before
    got = await store.memories.get_many(ids[:1])
    assert got[ids[0]].access_count == 20


async def test_access_recording_feeds_one_change_per_memory_counted(store):
    # the recall caches learn new counters from these rows (retention: TTL from the last access)
    a, _ = await store.writes.upsert(NewMemory(owner_id="o1", content="the red kite"))
    b, _ = await store.writes.upsert(NewMemory(owner_id="o2", content="the blue heron"))
    head = (await store.reader.execute_fetchall("SELECT MAX(seq) FROM memory_changes"))[0][0]
    at = time.time()
    await store.writes.record_access([b.id, a.id, a.id, 987_654], at)  # unknown id: no row
    rows = await store.reader.execute_fetchall(
        "SELECT memory_id, owner_id, op FROM memory_changes WHERE seq > ? ORDER BY seq", (head,)
    )
    assert [tuple(r) for r in rows] == [(a.id, "o1", "a"), (b.id, "o2", "a")]
    got = await store.memories.get_many([a.id, b.id])
    assert (got[a.id].access_count, got[b.id].access_count) == (2, 1)
    assert got[a.id].last_accessed_at == at
    await store.writes.record_access([], at)  # nothing counted, nothing fed
    assert (await store.reader.execute_fetchall("SELECT MAX(seq) FROM memory_changes"))[0][0] == (
        head + 2
    )


async def test_list_filters_and_pagination(store):
    for i in range(7):
        await store.writes.upsert(
            NewMemory(owner_id="o", content=f"c{i}", category="preference" if i % 2 else "fact")
        )
    await store.writes.upsert(NewMemory(owner_id="p", content="other"))
    page, total = await store.memories.list(owner_id="o", limit=3, offset=0)
    assert total == 7 and len(page) == 3
    prefs, total = await store.memories.list(owner_id="o", category="preference")
    assert total == 3 and all(m.category == "preference" for m in prefs)
    _, total = await store.memories.list(owner_id=None)
    assert total == 8


TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=TEXT, contents=st.lists(TEXT, min_size=1, max_size=4))
def test_keyword_search_never_raises_and_stays_in_scope(tmp_path_factory, query, contents):
    async def run() -> None:
        store = await Store.open(str(tmp_path_factory.mktemp("h") / "h.db"))
        try:
            for i, text in enumerate(contents):
                await store.writes.upsert(
                    NewMemory(owner_id="mine", content=text or "x", key=f"m{i}")
                )
                await store.writes.upsert(
                    NewMemory(owner_id="theirs", content=text or "x", key=f"t{i}")
                )
                await store.writes.upsert(
                    NewMemory(
                        owner_id="mine", user_id="other-user", content=text or "x", key=f"u{i}"
                    )
                )
            match = build_match_query(query)
            if match is None:
                return
            for user in ("", "me"):
                hits = await store.memories.keyword_search(
                    Scope(owner_id="mine", user_id=user, include_global=False),
                    match,
                    limit=50,
                    now=time.time(),
                )
                assert all(m.owner_id == "mine" and m.user_id in ("", user) for m, _ in hits)
            # the query built from a stored text finds that text
            own = build_match_query(contents[0] or "x")
            if own is not None:
                hits = await store.memories.keyword_search(
                    Scope(owner_id="mine", include_global=False), own, limit=50, now=time.time()
                )
                assert hits
        finally:
            await store.close()

    asyncio.run(run())
