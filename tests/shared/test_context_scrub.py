"""scrub_contexts on a real migrated SQLite store: both of its ways of finding the neighbours.

A few deleted turns are looked for by substring in SQL; many (a bulk delete) by one pass over the
end user's contexts. Either way every surviving neighbour loses exactly the deleted turns' lines,
other owners and end users are untouched, and a second scrub changes nothing.
"""

from __future__ import annotations

import pytest

from shared.context_scrub import NEEDLE_TURNS, scrub_contexts
from shared.models import NewMemory
from shared.store import Store


@pytest.mark.parametrize("deleted_count", [1, NEEDLE_TURNS + 4])
async def test_deleted_turns_leave_their_neighbours_context(tmp_path, deleted_count) -> None:
    store = await Store.open(str(tmp_path / "m.db"))
    try:
        turns = [f"Turn number {i} about topic{i}" for i in range(deleted_count + 2)]

        def turn(i: int, owner: str = "o1", user: str = "u1") -> NewMemory:
            around = [t for j, t in enumerate(turns) if j != i and abs(j - i) <= deleted_count + 1]
            return NewMemory(
                owner_id=owner,
                user_id=user,
                content=turns[i],
                category="turn",
                type="episodic",
                context="\n".join([*around, "An assistant reply."]),
            )

        await store.writes.upsert_many([turn(i) for i in range(len(turns))])
        await store.writes.upsert_many([turn(1, user="u2"), turn(1, owner="o2")])
        stored, _ = await store.memories.list(owner_id="o1", limit=1000)
        doomed = [m for m in stored if m.user_id == "u1" and m.content in turns[:deleted_count]]
        for m in doomed:
            await store.writes.delete(m.public_id)
        changed = await scrub_contexts(store, doomed)
        assert changed == 2  # the two surviving turns of o1/u1
        rows = await store.reader.execute_fetchall(
            "SELECT owner_id, user_id, content, context FROM memories"
        )
        for owner, user, content, context in rows:
            lines = context.split("\n")
            assert "An assistant reply." in lines
            gone = [t for t in turns[:deleted_count] if t in lines]
            if (owner, user) == ("o1", "u1"):
                assert gone == [], (content, context)
            else:  # another end user and another owner keep their own contexts
                assert gone, (owner, user, context)
        assert await scrub_contexts(store, doomed) == 0
    finally:
        await store.close()
