"""Deleting the facts a newer statement supersedes: by upsert key, or by key prefix.

One transaction per call; the FTS5 and sqlite-vec rows go with the memory rows through the
triggers of migration 0001. The prefix range uses the ``UNIQUE (owner_id, user_id, key)`` index
(a range ``key >= prefix AND key < next``, never ``LIKE``, whose wildcards a key may hold).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import aiosqlite

from shared.store.connection import store_errors, transaction


def prefix_upper(prefix: str) -> str:
    """The smallest string above every string starting with ``prefix`` (non-empty).

    ``"pet:dog:"`` → ``"pet:dog;"``: its last character advanced by one code point.
    """
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


async def delete_superseded(
    conn: aiosqlite.Connection,
    owner_id: str,
    user_id: str,
    keys: Sequence[str],
    prefixes: Sequence[str] = (),
    keep: Sequence[str] = (),
    drop_turn: Callable[[str], bool] | None = None,
) -> list[int]:
    """Delete (``owner_id``, ``user_id``)'s memories of ``keys`` or ``prefixes``; their rowids.

    A memory is deleted when its key is one of ``keys``, or when it is the only memory whose
    key starts with one of ``prefixes`` (each non-empty) and is not in ``keep``: a correction
    replaces the one name stored in its slot, and with two or more there (two dogs) it is
    ambiguous and deletes nothing. A key in ``keep`` is never deleted. With ``drop_turn``, the
    captured turn a deleted fact came from (its ``metadata.turn_key``) goes too when no fact
    that stays came from it and ``drop_turn(its text)`` is true ("My dog is called Rex" after
    "Actually my dog is called Max": the turn says only what was corrected).

    Nothing is written when no such memory is stored (the common case), so no commit marks the
    recall cache stale.

    Raises:
        StoreError: the database failed.
    """
    owner = "owner_id = ? AND user_id = ?"
    kept = f" AND key NOT IN ({','.join('?' * len(keep))})" if keep else ""
    wanted = set(keys) - set(keep)
    with store_errors("deleting superseded memories"):
        for prefix in prefixes:
            found = list(
                await conn.execute_fetchall(
                    f"SELECT key FROM memories WHERE {owner} AND key >= ? AND key < ?{kept} "
                    "LIMIT 2",
                    [owner_id, user_id, prefix, prefix_upper(prefix), *keep],
                )
            )
            if len(found) == 1:
                wanted.add(str(found[0][0]))
        if not wanted:
            return []
        if drop_turn is not None:
            wanted |= await _stale_turns(conn, owner_id, user_id, wanted, keep, drop_turn)
        marks = ",".join("?" * len(wanted))
        where = f"FROM memories WHERE {owner} AND key IN ({marks})"
        args = [owner_id, user_id, *sorted(wanted)]
        if not await conn.execute_fetchall(f"SELECT 1 {where} LIMIT 1", args):
            return []
        async with transaction(conn):
            rows = await conn.execute_fetchall(f"DELETE {where} RETURNING id", args)
    return [int(r[0]) for r in rows]


async def _stale_turns(
    conn: aiosqlite.Connection,
    owner_id: str,
    user_id: str,
    facts: set[str],
    keep: Sequence[str],
    drop_turn: Callable[[str], bool],
) -> set[str]:
    """Keys of the captured turns of ``facts`` that no other fact cites and ``drop_turn`` takes."""
    marks = ",".join("?" * len(facts))
    cited = await conn.execute_fetchall(
        "SELECT DISTINCT json_extract(metadata, '$.turn_key') FROM memories "
        f"WHERE owner_id = ? AND user_id = ? AND key IN ({marks})",
        [owner_id, user_id, *sorted(facts)],
    )
    out: set[str] = set()
    for (turn_key,) in cited:
        if not isinstance(turn_key, str) or not turn_key or turn_key in keep:
            continue
        others = await conn.execute_fetchall(
            "SELECT 1 FROM memories WHERE owner_id = ? AND user_id = ? AND category <> 'turn' "
            f"AND json_extract(metadata, '$.turn_key') = ? AND key NOT IN ({marks}) LIMIT 1",
            [owner_id, user_id, turn_key, *sorted(facts)],
        )
        if others:
            continue
        turn = list(
            await conn.execute_fetchall(
                "SELECT content FROM memories WHERE owner_id = ? AND user_id = ? AND key = ? "
                "AND category = 'turn'",
                [owner_id, user_id, turn_key],
            )
        )
        if turn and drop_turn(str(turn[0][0])):
            out.add(turn_key)
    return out
