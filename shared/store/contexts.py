"""The search context of memories: updates of ``memories.context`` after the row was written.

``context`` (migration 0006) holds the text of the conversation turns around the one a memory
came from; it is a search-only field, written with the row by :meth:`MemoryStore.upsert_many`
and completed here when later turns arrive (docs/ARCHITECTURE.md, ``turn_context.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from shared.store.connection import store_errors, transaction


class ContextStore:
    """Writes of ``memories.context`` over the writer connection."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def set_contexts(
        self, owner_id: str, user_id: str, contexts: Sequence[tuple[str, str]], now: float
    ) -> list[int]:
        """Replace the ``context`` of the memories (``owner_id``, ``user_id``, key) that exist.

        ``contexts`` holds ``(key, context)`` pairs; all are written in one transaction. Used
        when the turns after a captured one arrive in a later request. Never creates a row (a
        memory deleted meanwhile stays deleted); a row whose context is unchanged is not
        touched; ``updated_at`` of a changed row becomes ``now`` (unix seconds). Returns the
        rowids updated.

        Raises:
            StoreError: the database failed.
        """
        updated: list[int] = []
        if not contexts:
            return updated
        with store_errors("updating memory context"):
            async with transaction(self.conn):
                for key, context in contexts:
                    rows = list(
                        await self.conn.execute_fetchall(
                            "UPDATE memories SET context = ?, updated_at = ? WHERE owner_id = ? "
                            "AND user_id = ? AND key = ? AND context <> ? RETURNING id",
                            [context, now, owner_id, user_id, key, context],
                        )
                    )
                    updated.extend(int(r[0]) for r in rows)
        return updated
