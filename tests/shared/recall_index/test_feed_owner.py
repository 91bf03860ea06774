"""A cold owner's catch-up reads its own changes only (migration 0013).

It used to read every owner's changes since the snapshot (access counters included) and keep its
own: on a busy database an empty global partition took ~0.4 s to load, past the recall budget.
"""

from __future__ import annotations

from shared.models import NewMemory


async def test_changes_between_holds_exactly_the_owners_changes(stored) -> None:
    store, keywords = stored
    await store.writes.upsert_many(
        [NewMemory(owner_id="a", content=f"a fact {i}") for i in range(5)]
    )
    b = [
        m
        for m, _ in await store.writes.upsert_many(
            [NewMemory(owner_id="b", content=f"b fact {i}") for i in range(300)]
        )
    ]
    await store.writes.record_access([m.id for m in b], 1.0)  # 300 access-counter changes of b
    await store.writes.upsert(NewMemory(owner_id="a", content="a later fact"))
    cache = keywords.cache
    head = await cache.source.head()
    every = await cache.source.since(0, 10_000)
    for owner in ("a", "b", "global"):
        got = await cache.changes_between(0, head, owner)
        assert got == [c for c in every if c.owner_id == owner]
    # a range: only changes after ``after`` and up to ``upto``
    a_all = [c for c in every if c.owner_id == "a"]
    got = await cache.changes_between(a_all[1].seq, a_all[-2].seq, "a")
    assert got == a_all[2:-1]
