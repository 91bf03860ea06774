"""The forget flow shared by the forget job, REST and MCP.

The forget flow shared by the ``forget`` job, REST ``DELETE /api/memory?q=`` and MCP
``memory_forget``.

:func:`forget` takes a target's stems (:func:`shared.forget_terms.target_stems`) and, for one
owner and end user:

1. records a *tombstone* (hashed stems + request time) first, so a learn job queued before the
   forget cannot write the content again (:mod:`shared.forget_guard` checks it);
2. fetches candidates (:meth:`shared.store.forget.ForgetStore.candidates`) and decides with the
   pure margin rule (:func:`shared.forget_terms.clear_matches`); an unclear decision deletes
   nothing and withdraws the tombstone;
3. adds the *derived copies* of what it names: memories written by the same learn request that
   share at least half of the topic stems either way (the captured turn a fact came from, the
   facts of a captured turn), and summaries listing any of them as a source;
4. deletes them all through
   :meth:`shared.store.memories.lifecycle.LifecycleStore.evict` (FTS5 row by trigger,
   sqlite-vec row explicitly, one ``eviction`` event each with reason ``forget``), hands the
   rowids to ``on_deleted`` (Qdrant), and records one ``forget`` event whose detail holds public
   ids and keys, never text.

See docs/ARCHITECTURE.md, "Forget".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from shared.context_scrub import scrub_contexts
from shared.forget_guard import release_learned
from shared.forget_terms import (
    clear_matches,
    coverage,
    hash_stems,
    memory_stems,
    named_by,
    search_stems,
    slot_key_patterns,
    target_stems,
)
from shared.models import Memory
from shared.store import Store

log = logging.getLogger("mnemogate.forget")

#: Candidates fetched per forget (best BM25 first).
CANDIDATE_LIMIT = 500
#: Share of topic stems two memories of one learn request must share to be copies of each other.
DERIVED_OVERLAP = 0.5

OnDeleted = Callable[[list[int]], Awaitable[None]]


class ForgottenItem(msgspec.Struct, frozen=True, kw_only=True):
    """One deleted (or, in a dry run, matched) memory: public id, key, category, why."""

    id: str
    key: str
    category: str
    via: str  # "match" (named by the target) or "derived" (a copy of a named memory)


class ForgetOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a forget did.

    ``reason``: ``ok``, ``no_target``, ``no_match``, ``too_broad`` or ``ambiguous``
    (:func:`shared.forget_terms.clear_matches`). ``deleted``: the memories removed (matched in a
    dry run). ``rowids``: their integer ids (for vector tiers).
    """

    reason: str
    deleted: list[ForgottenItem]
    dry_run: bool = False
    rowids: list[int] = msgspec.field(default_factory=list)


def _related(a: Memory, b: Memory) -> bool:
    """True when two memories are copies of each other.

    True when ``a`` and ``b`` share at least :data:`DERIVED_OVERLAP` of either's topic stems (a fact
    and the turn it was extracted from).
    """
    for x, y in ((a, b), (b, a)):
        stems = target_stems(x.content)
        if stems and coverage(stems, memory_stems(y.content, y.key)) >= DERIVED_OVERLAP:
            return True
    return False


def is_copy(a: Memory, b: Memory) -> bool:
    """True when ``b`` was learned from the same request as ``a`` and copies it (:func:`_related`).

    Such a pair is one statement stored twice (a captured turn and the fact extracted from it):
    forgetting ``a`` deletes ``b`` too (:func:`derived_copies`).
    """
    request_id = a.metadata.get("request_id")
    return bool(request_id) and b.metadata.get("request_id") == request_id and _related(a, b)


def without_forgotten(target: Sequence[str] | None, memories: Sequence[Memory]) -> list[Memory]:
    """``memories`` minus those a forget target names and their copies among ``memories``.

    The request-path filter of a forget request's own recall: a named memory
    (:func:`shared.forget_terms.named_by`) is left out, and so is every memory that copies one
    (:func:`is_copy`: the captured turn a named fact was learned from, whose words may differ:
    "forget my bread preference" names the fact keyed ``preference`` but not the turn "I prefer
    walnut bread"). Leaving a memory out of one prompt is always safe, so no margin applies.
    Order kept; pure.
    """
    if not target:
        return list(memories)
    named = named_by(target, memories)
    if not named:
        return list(memories)
    gone = {n.id for n in named}
    return [m for m in memories if m.id not in gone and not any(is_copy(n, m) for n in named)]


async def derived_copies(store: Store, named: Sequence[Memory]) -> list[Memory]:
    """The derived copies of ``named`` (step 3 of the module docstring), ``named`` excluded."""
    if not named:
        return []
    owner, user = named[0].owner_id, named[0].user_id
    seen = {m.id for m in named}
    request_ids = sorted(
        {str(m.metadata["request_id"]) for m in named if m.metadata.get("request_id")}
    )
    rows = await store.forget.derived(owner, user, request_ids, [m.public_id for m in named])
    same_request = {m.metadata.get("request_id"): m for m in named}
    copies: list[Memory] = []
    for row in rows:
        if row.id in seen:
            continue
        source = same_request.get(row.metadata.get("request_id"))
        if row.category == "summary" or (source is not None and _related(source, row)):
            copies.append(row)
            seen.add(row.id)
    if copies:
        summaries = await store.forget.derived(owner, user, [], [m.public_id for m in copies])
        copies.extend(s for s in summaries if s.id not in seen)
    return copies


async def _evict(
    store: Store, ids: list[int], now: float, on_deleted: OnDeleted | None
) -> list[int]:
    """Delete rowids from every SQLite tier and hand them to the vector hook.

    Delete rowids ``ids`` from SQLite (FTS5, sqlite-vec, ``eviction`` events with reason ``forget``)
    and hand the deleted ones to ``on_deleted``; returns them.
    """
    if not ids:
        return []
    rows = await store.lifecycle.rows(ids)
    gone = await store.lifecycle.evict([(r, "forget") for r in rows], now)
    if gone and on_deleted is not None:
        try:
            await on_deleted(gone)
        except Exception:  # recall re-checks vector hits against SQLite; the hook retries
            log.exception("vector delete after a forget failed for %d memories", len(gone))
    return gone


async def _candidates(
    store: Store, owner_id: str, user_id: str, stems: Sequence[str]
) -> list[Memory]:
    """The memories ``stems`` may name: full-text matches, then facts named by their slot."""
    candidates = await store.forget.candidates(
        owner_id, user_id, search_stems(stems), CANDIDATE_LIMIT
    )
    # facts named by their slot's words only ("forget my job": the employer), not in their text
    known = {m.id for m in candidates}
    keyed = await store.forget.keyed_candidates(
        owner_id, user_id, slot_key_patterns(stems), CANDIDATE_LIMIT
    )
    return candidates + [m for m in keyed if m.id not in known]


async def forget(
    store: Store,
    *,
    owner_id: str,
    user_id: str,
    stems: Sequence[str],
    now: float,
    source: str,
    max_matches: int,
    dry_run: bool = False,
    on_deleted: OnDeleted | None = None,
    request_id: str = "",
) -> ForgetOutcome:
    """Forget what ``stems`` name among ``owner_id``/``user_id``'s memories (module docstring).

    ``now`` is the forget request's time (unix seconds; the tombstone's time). ``source`` is
    ``chat``, ``api`` or ``mcp`` (kept in the event). A dry run writes nothing.

    Raises:
        StoreError: the database failed (the job is retried; a tombstone may already be
            written, which only makes learning more careful).
    """
    hashes = hash_stems(stems)
    if not dry_run and hashes:
        await store.forget.add_tombstone(owner_id, user_id, hashes, now)
    candidates = await _candidates(store, owner_id, user_id, stems)
    named, reason = clear_matches(stems, candidates, max_matches, copy_of=is_copy)
    copies = await derived_copies(store, named)
    items = [
        ForgottenItem(id=m.public_id, key=m.key, category=m.category, via=via)
        for via, group in (("match", named), ("derived", copies))
        for m in group
    ]
    ids = [m.id for m in (*named, *copies)]
    if dry_run:
        return ForgetOutcome(reason=reason, deleted=items, dry_run=True, rowids=ids)
    if reason not in ("ok", "no_match") and hashes:
        await store.forget.remove_tombstone(owner_id, user_id, hashes, now)
    kept = set(await _evict(store, ids, now, on_deleted))
    removed = [m for m in (*named, *copies) if m.id in kept]
    await scrub_contexts(store, removed)  # then learn cursors released:
    await release_learned(store, removed)  # saying it again is learned again
    deleted = [item for item, rowid in zip(items, ids, strict=True) if rowid in kept]
    await store.events.record(
        "forget",
        owner_id,
        user_id=user_id,
        count=len(deleted),
        detail={
            "source": source,
            "reason": reason,
            "ids": [d.id for d in deleted],
            "keys": [d.key for d in deleted],
            "request_id": request_id,
        },
        now=now,
    )
    return ForgetOutcome(reason=reason, deleted=deleted, rowids=sorted(kept))
