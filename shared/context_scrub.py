"""Removing deleted turns' text from the search context of the memories beside them.

A captured turn's words live on in its neighbours' ``context`` (the search-only field,
:mod:`shared.turn_context`). Left there after the turn is deleted, they would keep the deleted
text at rest and keep finding (so injecting) those neighbours for it. Every delete path runs
:func:`scrub_contexts`: a forget, a REST delete of one memory, a bulk delete. A context line
that quotes the deleted turn whole (an assistant reply repeating it, or echoing the memory
block that held it) goes too; what a reply said in its own words stays.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from shared.models import Memory
from shared.store import Store
from shared.turn_context import turn_lines, without_lines

__all__ = ["NEEDLE_TURNS", "scrub_contexts"]

NEEDLE_TURNS = 16
"""Up to this many deleted turns of one owner and end user, the contexts holding each are found
by a substring search in SQL; more (a bulk delete), every context of that end user is read once
and scrubbed in one pass (cheaper than one scan per turn)."""
_NEEDLE_CHARS = 40
"""Characters of a turn (whitespace collapsed) searched for in the contexts."""


async def scrub_contexts(store: Store, deleted: Sequence[Memory]) -> int:
    """Remove the text of the deleted turns among ``deleted`` from their neighbours' context.

    Only captured turns (category ``turn``) are context of other memories; neighbours are looked
    for under the same owner and end user. Returns how many memories' context changed (each a
    change of that memory for the change feed and the recall index).

    Raises:
        StoreError: the database failed (the deletes themselves stand).
    """
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in deleted:
        if m.category == "turn" and m.content.strip():
            groups[(m.owner_id, m.user_id)].append(m.content)
    changed = 0
    for (owner_id, user_id), turns in groups.items():
        held: dict[int, str] = {}
        if len(turns) <= NEEDLE_TURNS:
            for text in turns:
                needle = " ".join(text.split())[:_NEEDLE_CHARS]
                held.update(await store.forget.contexts_holding(owner_id, user_id, needle))
        else:
            held.update(await store.forget.contexts_of(owner_id, user_id))
        gone = turn_lines(turns)
        updates = []
        for rowid, context in sorted(held.items()):
            kept = without_lines(context, gone)
            if kept != context:
                updates.append((rowid, kept))
        await store.forget.set_contexts(updates)
        changed += len(updates)
    return changed
