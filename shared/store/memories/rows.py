"""Memory rows: the column list, decoding a row, public ids, and the visibility rule.

Part of the ``shared.store.memories`` package (see its docstring): the pieces every read path of
the ``memories`` table shares. :func:`visibility_sql` is the one filter every tier applies: owner
and end-user scope, session scope, global memories, expiry and the retention window of typed
decay (see "Data model" in ``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import msgspec

from shared.models import GLOBAL_OWNER, Memory, Scope

COLUMNS = (
    "id, public_id, owner_id, user_id, session_id, type, category, key, content, metadata, "
    "source, created_at, updated_at, expires_at, last_accessed_at, access_count, relevance, "
    "needs_reindex"
)
_json_decoder = msgspec.json.Decoder(dict[str, Any])


class Retention(msgspec.Struct, frozen=True, kw_only=True):
    """Typed-decay retention applied at read time (memories past their deadline are invisible).

    ``ttl_s`` maps a memory type to its TTL in seconds (absent or <= 0 → immune). A memory
    accessed at least ``access_immunity`` times is immune. Deadline = (last access, else
    creation) + TTL (see "Data model" in ``docs/ARCHITECTURE.md``).
    """

    ttl_s: dict[str, float] = msgspec.field(default_factory=dict)
    access_immunity: int = 3


class KeywordSearch(msgspec.Struct, frozen=True, kw_only=True):
    """One keyword search: who asks, for what, how many, and the read-time rules.

    ``query`` is raw user text; ``limit`` ≥ 0 results; ``now`` in epoch seconds (expiry and
    retention are judged at it); ``retention`` None = no typed decay; ``common_df``: terms held by
    at least this many of the caller's documents are dropped when rarer ones exist (0 keeps every
    term). Read by both keyword backends (the in-memory index and FTS5).
    """

    scope: Scope
    query: str
    limit: int
    now: float
    retention: Retention | None = None
    common_df: int = 0


def new_public_id() -> str:
    """A fresh public memory id: ``mem_`` + 24 hex characters (96 random bits)."""
    return "mem_" + secrets.token_hex(12)


def row_to_memory(row: Sequence[Any]) -> Memory:
    """Decode a row selected with :data:`COLUMNS` (in that order) into a :class:`Memory`."""
    return Memory(
        id=row[0],
        public_id=row[1],
        owner_id=row[2],
        user_id=row[3],
        session_id=row[4],
        type=row[5],
        category=row[6],
        key=row[7],
        content=row[8],
        metadata=_json_decoder.decode(row[9]),
        source=row[10],
        created_at=row[11],
        updated_at=row[12],
        expires_at=row[13],
        last_accessed_at=row[14],
        access_count=row[15],
        relevance=row[16],
        needs_reindex=bool(row[17]),
    )


def visibility_sql(
    scope: Scope, now: float, retention: Retention | None, alias: str = "m"
) -> tuple[str, list[Any]]:
    """SQL condition (and its parameters) selecting the memories ``scope`` may see at ``now``.

    Returns ``(condition, params)``; the condition references the memories table as ``alias``.
    """
    a = alias
    owners = f"({a}.owner_id = ? AND ({a}.user_id = '' OR {a}.user_id = ?))"
    params: list[Any] = [scope.owner_id, scope.user_id]
    if scope.include_global and scope.owner_id != GLOBAL_OWNER:
        owners = f"({owners} OR {a}.owner_id = '{GLOBAL_OWNER}')"
    cond = [owners]
    if scope.session_id is None:
        cond.append(f"{a}.session_id IS NULL")
    else:
        cond.append(f"({a}.session_id IS NULL OR {a}.session_id = ?)")
        params.append(scope.session_id)
    cond.append(f"({a}.expires_at IS NULL OR {a}.expires_at > ?)")
    params.append(now)
    if retention is not None:
        for mtype, ttl in sorted(retention.ttl_s.items()):
            if ttl > 0:
                cond.append(
                    f"NOT ({a}.type = ? AND {a}.access_count < ? AND "
                    f"COALESCE({a}.last_accessed_at, {a}.created_at) + ? <= ?)"
                )
                params.extend([mtype, retention.access_immunity, ttl, now])
    return " AND ".join(cond), params


UPSERT_SQL = f"""
INSERT INTO memories (public_id, owner_id, user_id, session_id, type, category, key, content,
    search_text, metadata, source, created_at, updated_at, expires_at, relevance, context,
    needs_reindex)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)
ON CONFLICT (owner_id, user_id, key) DO UPDATE SET
    session_id = excluded.session_id,
    type = excluded.type,
    category = excluded.category,
    content = excluded.content,
    search_text = excluded.search_text,
    context = CASE WHEN excluded.context = '' THEN memories.context ELSE excluded.context END,
    metadata = json_patch(memories.metadata, excluded.metadata),
    source = excluded.source,
    updated_at = excluded.updated_at,
    expires_at = excluded.expires_at,
    needs_reindex = CASE WHEN memories.content = excluded.content
        THEN memories.needs_reindex ELSE 1 END
RETURNING {COLUMNS}
"""
"""Insert one memory or update the row with the same (owner, end user, key); returns the row."""
