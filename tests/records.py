"""Stored-memory records for pure tests (ranking, rendering, top-k) that need no store."""

from __future__ import annotations

from typing import Any

import msgspec

from shared.models import Memory


def memory_record(rowid: int = 1, content: str = "x", **fields: Any) -> Memory:
    """A :class:`Memory` as the store returns it: a captured turn of owner ``o`` by default.

    ``rowid`` also names the public id and key; ``fields`` replace any other field.
    """
    record = Memory(
        id=rowid,
        public_id=f"mem_{rowid}",
        owner_id="o",
        user_id="",
        session_id=None,
        type="episodic",
        category="turn",
        key=f"turn:{rowid}",
        content=content,
        metadata={},
        source="capture",
        created_at=1_700_000_000.0,
        updated_at=1_700_000_000.0,
        expires_at=None,
        last_accessed_at=None,
        access_count=0,
        relevance=1.0,
        needs_reindex=False,
    )
    return msgspec.structs.replace(record, **fields) if fields else record
