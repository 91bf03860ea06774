"""Deleting what a newer statement supersedes: facts by key or key prefix, turns of replaced values.

One transaction per call; the FTS5 and sqlite-vec rows go with the memory rows through the
triggers of migration 0001. The prefix range uses the ``UNIQUE (owner_id, user_id, key)`` index
(a range ``key >= prefix AND key < next``, never ``LIKE``, whose wildcards a key may hold).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import aiosqlite

from shared.ranking import content_key
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
    replaced: Mapping[str, str] | None = None,
) -> list[int]:
    """Delete (``owner_id``, ``user_id``)'s memories of ``keys`` or ``prefixes``; their rowids.

    A memory is deleted when its key is one of ``keys``, or when it is the only memory whose
    key starts with one of ``prefixes`` (each non-empty) and is not in ``keep``: a correction
    replaces the one name stored in its slot, and with two or more there (two dogs) it is
    ambiguous and deletes nothing. A key in ``keep`` is never deleted. With ``drop_turn``, the
    captured turn a deleted fact came from (its ``metadata.turn_key``) goes too when no fact
    that stays came from it and ``drop_turn(its text)`` is true ("My dog is called Rex" after
    "Actually my dog is called Max": the turn says only what was corrected). With ``replaced``
    too (upsert key → the text of a fact about to be written under it), the turn of a stored
    fact whose value that text replaces goes by the same rule ("I live in Berlin" when "User
    lives in Munich (moved there)" rewrites ``identity:location``), while the fact itself stays
    for its upsert.

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
        if drop_turn is not None:
            if wanted:
                wanted |= await _stale_turns(conn, owner_id, user_id, wanted, keep, drop_turn)
            if replaced:
                wanted |= await _replaced_turns(conn, owner_id, user_id, replaced, keep, drop_turn)
        if not wanted:
            return []
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
    """Keys of the captured turns of ``facts`` that no other fact cites and ``drop_turn`` takes.

    One read: the turns named by the ``metadata.turn_key`` of ``facts`` that no fact outside
    ``facts`` names (a scan of the owner and end user's rows, run only for a correction).
    """
    marks = ",".join("?" * len(facts))
    listed = sorted(facts)
    rows = await conn.execute_fetchall(
        "SELECT t.key, t.content FROM memories t WHERE t.owner_id = ? AND t.user_id = ? "
        "AND t.category = 'turn' AND t.key IN (SELECT json_extract(metadata, '$.turn_key') "
        f"FROM memories WHERE owner_id = ? AND user_id = ? AND key IN ({marks})) "
        "AND NOT EXISTS (SELECT 1 FROM memories f WHERE f.owner_id = t.owner_id "
        "AND f.user_id = t.user_id AND f.category <> 'turn' "
        f"AND json_extract(f.metadata, '$.turn_key') = t.key AND f.key NOT IN ({marks}))",
        [owner_id, user_id, owner_id, user_id, *listed, *listed],
    )
    return {str(key) for key, content in rows if key not in keep and drop_turn(str(content))}


async def _replaced_turns(
    conn: aiosqlite.Connection,
    owner_id: str,
    user_id: str,
    written: Mapping[str, str],
    keep: Sequence[str],
    drop_turn: Callable[[str], bool],
) -> set[str]:
    """Keys of the captured turns of the stored facts whose value ``written`` replaces.

    A stored fact (not a turn) of a key of ``written`` whose text differs from the new one
    (:func:`shared.ranking.content_key`: whitespace and case aside) has its value replaced; its
    turn is taken as :func:`_stale_turns` takes one. One read when no value changes.
    """
    keys = sorted(written)
    rows = await conn.execute_fetchall(
        "SELECT key, content FROM memories WHERE owner_id = ? AND user_id = ? "
        f"AND category <> 'turn' AND key IN ({','.join('?' * len(keys))})",
        [owner_id, user_id, *keys],
    )
    changed = {str(k) for k, text in rows if content_key(str(text)) != content_key(written[str(k)])}
    if not changed:
        return set()
    return await _stale_turns(conn, owner_id, user_id, changed, keep, drop_turn)
