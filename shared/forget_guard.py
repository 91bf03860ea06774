"""Forget wins over learning queued before it (docs/ARCHITECTURE.md, "Forget").

A learn job carries its request's time (``LearnPayload.created_at``). A forget of the same owner
and end user made at or after that time left a tombstone (hashed target stems,
:meth:`shared.store.forget.ForgetStore.add_tombstone`). The learn job therefore:

1. drops every memory it is about to write that holds all stems of such a tombstone
   (:func:`drop_forgotten`), and
2. after its upsert commits, looks again (:func:`purge_forgotten`) and deletes what it wrote that
   a tombstone committed meanwhile names.

Why both: the forget writes its tombstone *before* it searches. If the learn job's check (1) ran
before the tombstone existed, its rows were committed either before the forget's search (which
then finds and deletes them) or after its own post-commit check (2) — which, running after the
tombstone, sees it. Either way the forgotten content does not survive, with no lock shared
between the gateway, embedded jobs and arq workers.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.forget_terms import covers_hashed
from shared.models import Memory, NewMemory
from shared.store import Store


async def _tombstones(
    store: Store, owner_id: str, user_id: str, since: float
) -> list[tuple[str, ...]]:
    return await store.forget.tombstones_since(owner_id, user_id, since)


def _forgotten(tombs: Sequence[tuple[str, ...]], content: str, key: str) -> bool:
    return any(covers_hashed(t, content, key) for t in tombs)


async def drop_forgotten(
    store: Store, owner_id: str, user_id: str, since: float, writes: Sequence[NewMemory]
) -> tuple[list[NewMemory], int]:
    """Drop the writes a newer forget names.

    ``writes`` minus those a forget made at or after ``since`` (unix seconds) names, and how many
    were dropped. One indexed read when there is nothing to drop.

    Raises:
        StoreError: the tombstones could not be read (the learn job is retried).
    """
    if not writes:
        return [], 0
    tombs = await _tombstones(store, owner_id, user_id, since)
    if not tombs:
        return list(writes), 0
    kept = [w for w in writes if not _forgotten(tombs, w.content, w.key or "")]
    return kept, len(writes) - len(kept)


async def purge_forgotten(
    store: Store, owner_id: str, user_id: str, since: float, written: Sequence[Memory], now: float
) -> list[int]:
    """Delete what a learn job wrote that a newer forget names.

    Delete the ``written`` memories that a forget made at or after ``since`` names (a forget that
    committed while the learn job was writing); returns their rowids (for Qdrant).

    Raises:
        StoreError: the database failed (the learn job is retried; the upserts are idempotent).
    """
    if not written:
        return []
    tombs = await _tombstones(store, owner_id, user_id, since)
    doomed = [m.id for m in written if tombs and _forgotten(tombs, m.content, m.key)]
    if not doomed:
        return []
    rows = await store.lifecycle.rows(doomed)
    return await store.lifecycle.evict([(r, "forget") for r in rows], now)


def source_prefixes(memory: Memory) -> list[str]:
    """The learn-cursor prefix ids a memory was learned from (empty when unknown).

    A captured turn's key is ``turn:<prefix id>``; a fact keeps its request's last prefix id in
    ``metadata["learn_prefix"]`` (:func:`shared.learning.prefix_ids`). Pure.
    """
    out: list[str] = []
    if memory.key.startswith("turn:"):
        out.append(memory.key[len("turn:") :])
    prefix = memory.metadata.get("learn_prefix")
    if isinstance(prefix, str) and prefix:
        out.append(prefix)
    return out


async def release_learned(store: Store, deleted: Sequence[Memory]) -> None:
    """Let a later request teach again what the ``deleted`` memories said.

    The content-addressed learn cursor otherwise takes a later request that repeats the same
    turns for a replay and learns nothing from it. Tombstones still block learning from requests
    made at or before a forget (:func:`drop_forgotten`).

    Raises:
        StoreError: the database failed.
    """
    by_user: dict[tuple[str, str], list[str]] = {}
    for memory in deleted:
        prefixes = source_prefixes(memory)
        if prefixes:
            by_user.setdefault((memory.owner_id, memory.user_id), []).extend(prefixes)
    for (owner_id, user_id), prefixes in by_user.items():
        await store.cursors.release(owner_id, user_id, prefixes)
