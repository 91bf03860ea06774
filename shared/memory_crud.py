"""Create, read, update and delete memories on behalf of a :class:`~shared.access_policy.Principal`.

Each function applies the access rules of :mod:`shared.access_policy`, calls the store, and
queues the follow-up jobs a change needs: ``embed`` when content or key changed (the vectors
follow), ``vector_delete`` when rows were deleted (the Qdrant points follow). Control characters
in written content become spaces (:func:`~shared.control_chars.strip_control_chars`) before the
optional redaction (the sensitive-content filter) runs.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from shared.access_policy import (
    Principal,
    check_writable_id,
    readable_owners,
    writable_owner,
    writable_owners,
)
from shared.context_scrub import scrub_contexts
from shared.end_user import checked_end_user
from shared.errors import InvalidRequest, NotFound
from shared.forget_guard import release_learned
from shared.fts_query import build_match_query
from shared.jobs.payloads import EMBED, EmbedPayload
from shared.jobs.queue import JobQueue
from shared.jobs.vector_sync import enqueue_vector_delete
from shared.memory_api import (
    MAX_OFFSET,
    MAX_PAGE,
    BulkDelete,
    ExportQuery,
    ListQuery,
    MemoryCreate,
    MemoryPage,
    MemoryView,
    view_of,
)
from shared.memory_rules import (
    checked_key,
    checked_relevance,
    checked_session,
    checked_time,
    clean_content,
)
from shared.models import (
    GLOBAL_OWNER,
    MAX_END_USER_CHARS,
    MemoryChanges,
    NewMemory,
)
from shared.query_bound import DEFAULT_QUERY_MAX_BYTES, DEFAULT_QUERY_MAX_TERMS, bound_query
from shared.store import Store
from shared.store.memories.admin import MemoryFilter

Redact = Callable[[str], str]


class BulkDeleteResult(msgspec.Struct, frozen=True, kw_only=True):
    """Outcome of a bulk delete: rows ``matched``, rows ``deleted`` (0 on a ``dry_run``)."""

    matched: int
    deleted: int
    dry_run: bool


def match_query(q: str | None) -> str | None:
    """The FTS5 query for free text ``q`` (None: no text filter).

    A text with no searchable term matches nothing rather than everything.
    """
    if q is None or not q.strip():
        return None
    bounded = bound_query(q, DEFAULT_QUERY_MAX_BYTES, DEFAULT_QUERY_MAX_TERMS)  # CPU bound
    return build_match_query(bounded) or '""'


def memory_filter(owners: list[str] | None, query: ExportQuery) -> MemoryFilter:
    """The store filter for ``query`` restricted to ``owners`` (None = every owner)."""
    return MemoryFilter(
        owners=owners,
        user_id=query.user_id,
        session_id=query.session_id,
        type=query.type,
        category=query.category,
        match=match_query(query.q),
    )


async def enqueue_embed(queue: JobQueue, ids: list[int]) -> None:
    """Queue re-embedding of the memories ``ids`` (nothing when ``ids`` is empty)."""
    if ids:
        await queue.enqueue(EMBED, EmbedPayload(memory_ids=ids))


async def list_memories(store: Store, p: Principal, query: ListQuery) -> MemoryPage:
    """A page of the memories ``p`` may see matching ``query`` (see :class:`ListQuery`).

    ``limit`` is clamped to 1..:data:`~shared.memory_api.MAX_PAGE`.

    Raises:
        InvalidRequest: ``offset`` outside 0..:data:`~shared.memory_api.MAX_OFFSET`.
        NotFound: a client filtered by another owner. StoreError: the database failed.
    """
    if not 0 <= query.offset <= MAX_OFFSET:
        raise InvalidRequest(f"offset must be an integer within 0..{MAX_OFFSET}")
    limit = max(1, min(query.limit, MAX_PAGE))
    flt = memory_filter(readable_owners(p, query.owner_id), query)
    items, total = await store.admin.page(flt, limit=limit, offset=query.offset)
    return MemoryPage(
        items=[view_of(m) for m in items], total=total, limit=limit, offset=query.offset
    )


async def get_memory(store: Store, p: Principal, public_id: str) -> MemoryView:
    """The memory ``public_id`` if ``p`` may see it.

    Raises:
        NotFound: no such memory, or another owner's. StoreError: the database failed.
    """
    memory = await store.memories.get(public_id)
    if memory is None or (not p.admin and memory.owner_id not in (p.key_id, GLOBAL_OWNER)):
        raise NotFound(f"memory '{public_id}' not found")
    return view_of(memory)


async def create_memory(
    store: Store,
    queue: JobQueue,
    p: Principal,
    body: MemoryCreate,
    now: float,
    redact: Redact | None = None,
) -> tuple[MemoryView, bool]:
    """Store a memory (upsert on owner+user+key); returns (memory, created).

    ``user_id`` follows the chat routes' rule (:func:`shared.end_user.checked_end_user`: no
    control character, surrounding whitespace stripped) up to
    :data:`~shared.models.MAX_END_USER_CHARS` characters; ``session_id`` likewise, up to
    :data:`~shared.models.MAX_SESSION_CHARS` (blank: none); ``relevance``, ``key`` and
    ``expires_at`` by :mod:`shared.memory_rules`.

    Raises:
        InvalidRequest: empty content, an end user or session no request could name, a
            relevance, key or expiry outside :mod:`shared.memory_rules`, or admin without
            ``owner_id``. PermissionDenied / NotFound: see
            :func:`~shared.access_policy.writable_owner`. StoreError: the database failed.
    """
    content = clean_content(body.content)
    user_id = checked_end_user(body.user_id, MAX_END_USER_CHARS)
    session_id = checked_session(body.session_id)
    checked_relevance(body.relevance)
    checked_key(body.key or "")
    checked_time("expires_at", body.expires_at)
    owner = writable_owner(p, body.owner_id)
    memory, created = await store.writes.upsert(
        NewMemory(
            owner_id=owner,
            content=redact(content) if redact is not None else content,
            user_id=user_id,
            session_id=session_id,
            type=body.type,
            category=body.category,
            key=body.key or None,
            metadata=body.metadata,
            source="api",
            expires_at=body.expires_at,
            relevance=body.relevance,
        ),
        now=now,
    )
    if memory.needs_reindex:
        await enqueue_embed(queue, [memory.id])
    return view_of(memory), created


async def update_memory(
    store: Store,
    queue: JobQueue,
    p: Principal,
    public_id: str,
    changes: MemoryChanges,
    now: float,
    redact: Redact | None = None,
) -> MemoryView:
    """Change fields of ``public_id``.

    A new content or key marks it ``needs_reindex`` and queues re-embedding; a new ``type`` or
    ``expires_at`` (payload the Qdrant tier filters on) queues the same re-sync. Content,
    relevance, key and expiry follow :mod:`shared.memory_rules`.

    Raises:
        NotFound: no such memory visible to ``p``. PermissionDenied: a client editing a global
            memory. InvalidRequest: empty content, a field outside its rule, or a key already in
            use. StoreError.
    """
    if isinstance(changes.content, str):
        content = clean_content(changes.content)
        changes = msgspec.structs.replace(changes, content=content)
    if isinstance(changes.relevance, float):
        checked_relevance(changes.relevance)
    if isinstance(changes.key, str):
        checked_key(changes.key)
    if isinstance(changes.expires_at, float):
        checked_time("expires_at", changes.expires_at)
    await check_writable_id(store, p, public_id)
    if redact is not None and isinstance(changes.content, str):
        changes = msgspec.structs.replace(changes, content=redact(changes.content))
    memory = await store.admin.update(public_id, writable_owners(p), changes, now)
    if memory is None:
        raise NotFound(f"memory '{public_id}' not found")
    payload_changed = changes.type is not msgspec.UNSET or changes.expires_at is not msgspec.UNSET
    if memory.needs_reindex or payload_changed:
        await enqueue_embed(queue, [memory.id])
    return view_of(memory)


async def delete_memory(
    store: Store, p: Principal, public_id: str, *, queue: JobQueue | None = None
) -> MemoryView:
    """Delete ``public_id``; returns what was deleted.

    FTS and sqlite-vec rows follow by trigger; a ``vector_delete`` job on ``queue`` removes the
    Qdrant point (the job does nothing when Qdrant is not the vector tier).

    Raises:
        NotFound: no such memory visible to ``p``. PermissionDenied: a client deleting a global
            memory. StoreError: the database failed.
    """
    await check_writable_id(store, p, public_id)
    memory = await store.writes.delete(public_id, None if p.admin else p.key_id)
    if memory is None:
        raise NotFound(f"memory '{public_id}' not found")
    await release_learned(store, [memory])
    await scrub_contexts(store, [memory])  # its text must not live on in its neighbours
    await enqueue_vector_delete(queue, [memory.id])
    return view_of(memory)


def _is_unfiltered(p: Principal, body: BulkDelete) -> bool:
    """True if ``body`` narrows nothing (a client's ``owner_id`` can only be itself: no filter)."""
    filters = (body.owner_id if p.admin else None, body.user_id, body.session_id)
    no_text = not (body.q and body.q.strip())
    return all(v is None for v in (*filters, body.type, body.category)) and no_text


async def bulk_delete(
    store: Store, p: Principal, body: BulkDelete, *, queue: JobQueue | None = None
) -> BulkDeleteResult:
    """Delete (``dry_run``: count) every memory ``p`` may change that matches ``body``.

    The Qdrant points follow through ``vector_delete`` jobs on ``queue``.

    Raises:
        InvalidRequest: no filter (see :class:`~shared.memory_api.BulkDelete`), no
            ``all: true`` and not a dry run.
        PermissionDenied: a client targeting ``global``. NotFound: a client naming another
            owner. StoreError: the database failed.
    """
    if p.admin:
        owners = None if body.owner_id is None else [body.owner_id]
    else:
        owners = [writable_owner(p, body.owner_id)]
    if _is_unfiltered(p, body) and not body.all and not body.dry_run:
        raise InvalidRequest("refusing to delete every memory: add a filter or 'all': true")
    flt = memory_filter(owners, body)
    if body.dry_run:
        count = await store.admin.count(flt)
        return BulkDeleteResult(matched=count, deleted=0, dry_run=True)
    deleted = await store.admin.delete_matching(flt)
    ids = [m.id for m in deleted]
    await scrub_contexts(store, deleted)
    await enqueue_vector_delete(queue, ids)
    return BulkDeleteResult(matched=len(ids), deleted=len(ids), dry_run=False)
