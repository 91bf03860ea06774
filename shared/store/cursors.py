"""Learning cursors: which prefixes of a conversation's user turns were already learned.

A conversation is identified by content, not by id: the cursor row for a request whose user turns
are ``t0..t(n-1)`` is keyed by the hash of that prefix (``conversation_id`` column) with
``learned_turns = n``. A later request of the same chat contains that prefix, so its longest
already-learned prefix is found with one indexed lookup, and two chats that merely start alike
diverge at their first differing turn.
"""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from shared.store.connection import store_errors, transaction
from shared.store.events import INSERT_EVENT, event_row

_LOOKUP_CHUNK = 500


class CursorStore:
    """Async access to ``learn_cursors``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def learned_prefix(self, owner_id: str, user_id: str, prefix_ids: Sequence[str]) -> int:
        """The largest ``n`` such that ``prefix_ids[n-1]`` was recorded as learned, else 0.

        ``prefix_ids[i]`` identifies the prefix of the first ``i+1`` user turns.
        """
        best = 0
        with store_errors("reading learn cursors"):
            for start in range(0, len(prefix_ids), _LOOKUP_CHUNK):
                chunk = list(prefix_ids[start : start + _LOOKUP_CHUNK])
                marks = ",".join("?" * len(chunk))
                _rows = list(
                    await self.conn.execute_fetchall(
                        "SELECT MAX(learned_turns) FROM learn_cursors WHERE owner_id = ? AND "
                        f"user_id = ? AND conversation_id IN ({marks})",
                        [owner_id, user_id, *chunk],
                    )
                )
                row = _rows[0] if _rows else None
                if row and row[0] is not None:
                    best = max(best, int(row[0]))
        return best

    async def mark_learned(
        self,
        owner_id: str,
        user_id: str,
        prefix_id: str,
        learned_turns: int,
        now: float,
        events: Sequence[tuple[str, int]] = (),
    ) -> None:
        """Record that the prefix ``prefix_id`` (``learned_turns`` user turns) was learned.

        ``events``: ``(kind, count)`` events of what was learned (e.g. ``("capture", 2)``),
        appended to ``memory_events`` in the same transaction (one commit per learned exchange,
        not one per table). Neither table is read by recall, so the commit does not mark the
        recall cache stale.
        """
        rows = [event_row(kind, owner_id, user_id, count=n, now=now) for kind, n in events]
        with store_errors("writing a learn cursor"):
            async with transaction(self.conn, notify=False):
                await self.conn.execute(
                    "INSERT INTO learn_cursors VALUES (?,?,?,?,?) "
                    "ON CONFLICT (owner_id, user_id, conversation_id) DO UPDATE SET "
                    "updated_at = excluded.updated_at",
                    (owner_id, user_id, prefix_id, learned_turns, now),
                )
                if rows:
                    await self.conn.executemany(INSERT_EVENT, rows)

    async def release(self, owner_id: str, user_id: str, prefix_ids: Sequence[str]) -> None:
        """Forget that the prefixes ``prefix_ids`` were learned (their memories were deleted).

        A later request ending in the same turns is then learned again (docs/ARCHITECTURE.md,
        "Forget"). Unknown ids are ignored.
        """
        ids = sorted(set(prefix_ids))
        if not ids:
            return
        with store_errors("releasing learn cursors"):
            async with transaction(self.conn):
                for start in range(0, len(ids), _LOOKUP_CHUNK):
                    chunk = ids[start : start + _LOOKUP_CHUNK]
                    marks = ",".join("?" * len(chunk))
                    await self.conn.execute(
                        "DELETE FROM learn_cursors WHERE owner_id = ? AND user_id = ? "
                        f"AND conversation_id IN ({marks})",
                        [owner_id, user_id, *chunk],
                    )
