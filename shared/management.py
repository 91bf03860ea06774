"""Management of memories for the REST API and the MCP server: access rules and operations.

Access (issue "Management"): a :class:`Principal` is either the admin (``MNEMOGATE_ADMIN_TOKEN``;
sees and changes every owner) or one client key (sees its own memories and the ``global`` ones,
changes only its own). Another owner's id, or a memory of another owner, is reported as not found
(404, never 403) so that ids of other tenants cannot be probed; writing a global memory with a
client key is 403 (it is visible, but read-only). The owner of a client's data is always the
authenticated key, never a request field.

Every function here is HTTP-free: handlers and MCP tools decode their input into the structs
below, call one function, and encode the result.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import msgspec

from shared.control_chars import strip_control_chars
from shared.errors import InvalidRequest, JobError, NotFound, PermissionDenied
from shared.fts_query import build_match_query
from shared.jobs.handlers import HANDLERS
from shared.jobs.payloads import (
    EMBED,
    REINDEX,
    SUMMARIZE,
    VECTOR_DELETE,
    EmbedPayload,
    ReindexPayload,
    SummarizePayload,
)
from shared.jobs.queue import JobQueue
from shared.jobs.vector_sync import enqueue_vector_delete
from shared.models import GLOBAL_OWNER, Memory, MemoryCategory, MemoryType, NewMemory, Scope
from shared.ranking import memory_tokens
from shared.retrieval import recall
from shared.settings import RetrievalStrategy, Settings
from shared.store import Store
from shared.store.management import ImportRow, MemoryChanges, MemoryFilter

IMPORT_BATCH = 1000
EXPORT_BATCH = 500
MAX_PAGE = 1000
#: Largest listing ``offset`` accepted (rows skipped); larger values are a 400, never a 500.
MAX_OFFSET = 10**12
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)]


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling: ``admin`` True (``key_id`` None), or the client key ``key_id``."""

    admin: bool
    key_id: str | None = None


# ---- views and inputs ----------------------------------------------------------------------


class MemoryView(msgspec.Struct, frozen=True, kw_only=True):
    """A memory as the API shows it: ``id`` is the public id; times are unix seconds."""

    id: str
    owner_id: str
    user_id: str
    session_id: str | None
    type: MemoryType
    category: MemoryCategory
    key: str
    content: str
    metadata: dict[str, Any]
    source: str
    created_at: float
    updated_at: float
    expires_at: float | None
    last_accessed_at: float | None
    access_count: int
    relevance: float
    needs_reindex: bool


class MemoryPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of a listing: ``items``, the ``total`` matching, and the page bounds."""

    items: list[MemoryView]
    total: int
    limit: int
    offset: int


class ExportQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Export filters. ``owner_id`` narrows (admin: any owner; client: itself or ``global``);
    ``q`` is free text matched with FTS5. An export streams every matching memory in rowid
    order: it takes no ``limit`` or ``offset`` (page with ``GET /api/memory``)."""

    owner_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    type: MemoryType | None = None
    category: MemoryCategory | None = None
    q: str | None = None


class ImportQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Import options. ``verbatim``: store each row's ``content`` exactly as given; by default
    (false) it goes through the same sensitive-content redaction as learning and the API write
    paths (when ``sensitive_filter`` is on), so an export from another system cannot plant
    secrets or personal data at rest."""

    verbatim: bool = False


class ListQuery(ExportQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Listing filters: those of :class:`ExportQuery` (``q`` ranked by BM25 here) plus paging.
    ``limit``: an integer, clamped to 1..1000; ``offset``: rows skipped, an integer 0..10^12
    (else 400)."""

    limit: int = 50
    offset: Offset = 0


class MemoryCreate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A new memory. ``owner_id``: admin must give it (may be ``global``); a client may omit it or
    give its own key id. A ``key`` equal to an existing one of the same owner+user updates it."""

    content: str
    owner_id: str | None = None
    user_id: str = ""
    session_id: str | None = None
    type: MemoryType = "semantic"
    category: MemoryCategory = "fact"
    key: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    expires_at: float | None = None
    relevance: float = 1.0


class MemoryUpdate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Fields to change (absent = unchanged; ``expires_at`` null = never expires). ``metadata``
    replaces the whole object."""

    content: str | msgspec.UnsetType = msgspec.UNSET
    type: MemoryType | msgspec.UnsetType = msgspec.UNSET
    category: MemoryCategory | msgspec.UnsetType = msgspec.UNSET
    key: str | msgspec.UnsetType = msgspec.UNSET
    metadata: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    expires_at: float | msgspec.UnsetType | None = msgspec.UNSET
    relevance: float | msgspec.UnsetType = msgspec.UNSET


class BulkDelete(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Delete every memory matching the filters (``dry_run``: only count them). With no filter
    (none of ``user_id``, ``session_id``, ``type``, ``category``, a non-blank ``q``; and, for the
    admin, ``owner_id``: a client's own key id narrows nothing) the request is refused with 400
    unless it says ``all: true`` (every memory the caller may change); a dry run needs no
    ``all``."""

    owner_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    type: MemoryType | None = None
    category: MemoryCategory | None = None
    q: str | None = None
    dry_run: bool = False
    all: bool = False


class SearchPreview(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What recall would inject for ``query``: ``strategy`` (exact|semantic|hybrid, default the
    setting), ``budget`` tokens 0..8000 (default ``recall_max_tokens``). Admin must name
    ``owner_id``; ``user_id``/``session_id`` scope it like the request headers do."""

    query: str
    owner_id: str | None = None
    user_id: str = ""
    session_id: str | None = None
    strategy: RetrievalStrategy | None = None
    budget: int | None = None


class PreviewItem(msgspec.Struct, frozen=True, kw_only=True):
    """One ranked memory: final ``score``, ``tier`` that found it, estimated ``tokens``, and the
    per-leg scores (null when that leg did not run)."""

    rank: int
    score: float | None
    tier: str
    tokens: int
    keyword_score: float | None
    vector_score: float | None
    memory: MemoryView


class PreviewResult(msgspec.Struct, frozen=True, kw_only=True):
    """Search preview: ``items`` best first, ``tier`` used, ``degraded`` reason, tokens used of
    ``budget``, ``strategy`` and the resolution (embedding source, vector tier)."""

    items: list[PreviewItem]
    tier: str
    degraded: str | None
    strategy: str
    budget: int
    tokens_used: int
    embedding_source: str
    vector_tier: str


class JobAccepted(msgspec.Struct, frozen=True, kw_only=True):
    """A background job was queued: its ``job`` name and idempotency ``job_id``."""

    job: str
    job_id: str
    owner_id: str | None


class ReindexRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Rebuild vectors of memories marked for reindexing (``force``: all). Admin: ``owner_id``
    None = every owner; client: always its own."""

    owner_id: str | None = None
    force: bool = False


class SummarizeRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Summarize episodic memories older than ``older_than_days`` (> 0) of ONE owner (admin must
    name it; a client is itself)."""

    owner_id: str | None = None
    user_id: str | None = None
    older_than_days: float = 30.0
    dry_run: bool = False


def view_of(m: Memory) -> MemoryView:
    """The API view of a stored memory (rowid hidden, public id as ``id``)."""
    fields = msgspec.structs.asdict(m)
    del fields["id"], fields["public_id"]
    return MemoryView(id=m.public_id, **fields)


# ---- access rules --------------------------------------------------------------------------


def readable_owners(p: Principal, requested: str | None) -> list[str] | None:
    """Owners ``p`` may read, narrowed to ``requested``; None = every owner (admin only).

    Raises:
        NotFound: a client asked for an owner other than itself or ``global``.
    """
    if p.admin:
        return None if requested is None else [requested]
    assert p.key_id is not None
    if requested is None:
        return [p.key_id, GLOBAL_OWNER]
    if requested in (p.key_id, GLOBAL_OWNER):
        return [requested]
    raise NotFound(f"owner '{requested}' not found")


def writable_owner(p: Principal, requested: str | None) -> str:
    """The owner a write by ``p`` goes to.

    Raises:
        InvalidRequest: the admin did not name an owner.
        PermissionDenied: a client tried to write ``global`` memories (read-only for clients).
        NotFound: a client named another owner.
    """
    if p.admin:
        if not requested:
            raise InvalidRequest("owner_id is required with the admin token")
        return requested
    assert p.key_id is not None
    if requested is None or requested == p.key_id:
        return p.key_id
    if requested == GLOBAL_OWNER:
        raise PermissionDenied("global memories are read-only for client keys")
    raise NotFound(f"owner '{requested}' not found")


def _writable_owners(p: Principal) -> list[str] | None:
    return None if p.admin else [p.key_id or ""]


async def _check_writable_id(store: Store, p: Principal, public_id: str) -> None:
    """404 if ``p`` cannot see ``public_id``; 403 if it can see it but not change it (global)."""
    if p.admin:
        return
    owner = await store.management.public_id_owner(public_id)
    if owner == GLOBAL_OWNER:
        raise PermissionDenied("global memories are read-only for client keys")
    if owner != p.key_id:
        raise NotFound(f"memory '{public_id}' not found")


def _match(q: str | None) -> str | None:
    """The FTS5 query for ``q``; a text with no searchable term matches nothing (not everything)."""
    if q is None or not q.strip():
        return None
    return build_match_query(q) or '""'


def _filter(p: Principal, owner_id: str | None, query: ExportQuery | BulkDelete) -> MemoryFilter:
    return MemoryFilter(
        owners=readable_owners(p, owner_id),
        user_id=query.user_id,
        session_id=query.session_id,
        type=query.type,
        category=query.category,
        match=_match(query.q),
    )


async def _enqueue_embed(queue: JobQueue | None, ids: list[int]) -> None:
    """Queue re-embedding of ``ids`` when this build has an ``embed`` handler (else the rows stay
    marked ``needs_reindex`` for the reindex job)."""
    if queue is not None and ids and EMBED in HANDLERS:
        await queue.enqueue(EMBED, EmbedPayload(memory_ids=ids))


# ---- operations ----------------------------------------------------------------------------


async def list_memories(store: Store, p: Principal, query: ListQuery) -> MemoryPage:
    """A page of the memories ``p`` may see matching ``query`` (see :class:`ListQuery`):
    ``limit`` is clamped to 1..:data:`MAX_PAGE`, ``offset`` must be 0..:data:`MAX_OFFSET`.

    Raises:
        InvalidRequest: ``offset`` out of range. NotFound: a client filtered by another owner.
        StoreError: the database failed.
    """
    if not 0 <= query.offset <= MAX_OFFSET:
        raise InvalidRequest(f"offset must be an integer within 0..{MAX_OFFSET}")
    limit = max(1, min(query.limit, MAX_PAGE))
    offset = query.offset
    items, total = await store.management.page(
        _filter(p, query.owner_id, query), limit=limit, offset=offset
    )
    return MemoryPage(items=[view_of(m) for m in items], total=total, limit=limit, offset=offset)


async def get_memory(store: Store, p: Principal, public_id: str) -> MemoryView:
    """The memory ``public_id`` if ``p`` may see it.

    Raises:
        NotFound: no such memory, or another owner's. StoreError: the database failed.
    """
    memory = await store.memories.get(public_id)
    if memory is None:
        raise NotFound(f"memory '{public_id}' not found")
    if not p.admin and memory.owner_id not in (p.key_id, GLOBAL_OWNER):
        raise NotFound(f"memory '{public_id}' not found")
    return view_of(memory)


async def create_memory(
    store: Store,
    queue: JobQueue | None,
    p: Principal,
    body: MemoryCreate,
    now: float,
    redact: Callable[[str], str] | None = None,
) -> tuple[MemoryView, bool]:
    """Store a memory (upsert on owner+user+key); returns (memory, created). Control characters
    in the content become spaces (:func:`~shared.control_chars.strip_control_chars`), then
    ``redact`` (the sensitive-content filter when it is on) is applied, before it is stored.

    Raises:
        InvalidRequest: empty content, or admin without ``owner_id``. PermissionDenied / NotFound:
            see :func:`writable_owner`. StoreError: the database failed.
    """
    body = msgspec.structs.replace(body, content=strip_control_chars(body.content))
    if not body.content.strip():
        raise InvalidRequest("content must not be empty")
    owner = writable_owner(p, body.owner_id)
    memory, created = await store.writes.upsert(
        NewMemory(
            owner_id=owner,
            content=redact(body.content) if redact is not None else body.content,
            user_id=body.user_id,
            session_id=body.session_id,
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
        await _enqueue_embed(queue, [memory.id])
    return view_of(memory), created


async def update_memory(
    store: Store,
    queue: JobQueue | None,
    p: Principal,
    public_id: str,
    body: MemoryUpdate,
    now: float,
    redact: Callable[[str], str] | None = None,
) -> MemoryView:
    """Change fields of ``public_id``; a new content or key marks it ``needs_reindex`` and queues
    re-embedding; a new ``type`` or ``expires_at`` (payload the Qdrant tier filters on) queues
    the same re-sync.

    Raises:
        NotFound: no such memory visible to ``p``. PermissionDenied: a client editing a global
            memory. InvalidRequest: empty content, or a key already in use. StoreError.
    """
    if isinstance(body.content, str):
        content = strip_control_chars(body.content)
        if not content.strip():
            raise InvalidRequest("content must not be empty")
        body = msgspec.structs.replace(body, content=content)
    await _check_writable_id(store, p, public_id)
    if redact is not None and isinstance(body.content, str):
        body = msgspec.structs.replace(body, content=redact(body.content))
    changes = MemoryChanges(**msgspec.structs.asdict(body))
    memory = await store.management.update(public_id, _writable_owners(p), changes, now)
    if memory is None:
        raise NotFound(f"memory '{public_id}' not found")
    payload_changed = body.type is not msgspec.UNSET or body.expires_at is not msgspec.UNSET
    if memory.needs_reindex or payload_changed:
        await _enqueue_embed(queue, [memory.id])
    return view_of(memory)


async def delete_memory(
    store: Store, p: Principal, public_id: str, *, queue: JobQueue | None = None
) -> MemoryView:
    """Delete ``public_id`` (FTS and sqlite-vec rows follow by trigger; a ``vector_delete`` job
    on ``queue`` removes the Qdrant point); returns what was deleted.

    Raises:
        NotFound: no such memory visible to ``p``. PermissionDenied: a client deleting a global
            memory. StoreError: the database failed.
    """
    await _check_writable_id(store, p, public_id)
    memory = await store.writes.delete(public_id, None if p.admin else p.key_id)
    if memory is None:
        raise NotFound(f"memory '{public_id}' not found")
    await _enqueue_vector_delete(queue, [memory.id])
    return view_of(memory)


async def _enqueue_vector_delete(queue: JobQueue | None, ids: list[int]) -> None:
    """Queue the Qdrant side of a delete when this build has the ``vector_delete`` handler (the
    handler does nothing when Qdrant is not the vector tier)."""
    if VECTOR_DELETE in HANDLERS:
        await enqueue_vector_delete(queue, ids)


async def bulk_delete(
    store: Store, p: Principal, body: BulkDelete, *, queue: JobQueue | None = None
) -> dict[str, Any]:
    """Delete (``dry_run``: count) every memory ``p`` may change that matches ``body``; the
    Qdrant points follow through ``vector_delete`` jobs on ``queue``.

    Returns ``{"matched": n, "deleted": n or 0, "dry_run": bool}``.

    Raises:
        InvalidRequest: no filter (see :class:`BulkDelete`), no ``all: true`` and not a dry run.
        PermissionDenied: a client targeting ``global``. NotFound: a client naming another
        owner. StoreError: the database failed.
    """
    if p.admin:
        owners = None if body.owner_id is None else [body.owner_id]
    else:
        owners = [writable_owner(p, body.owner_id)]
    # a client's owner_id can only be itself: it narrows nothing, so it is not a filter
    filters = (body.owner_id if p.admin else None, body.user_id, body.session_id)
    unfiltered = all(v is None for v in (*filters, body.type, body.category)) and not (
        body.q and body.q.strip()
    )
    if unfiltered and not body.all and not body.dry_run:
        raise InvalidRequest("refusing to delete every memory: add a filter or 'all': true")
    flt = MemoryFilter(
        owners=owners,
        user_id=body.user_id,
        session_id=body.session_id,
        type=body.type,
        category=body.category,
        match=_match(body.q),
    )
    if body.dry_run:
        count = await store.management.delete_matching(flt, dry_run=True)
        return {"matched": count, "deleted": 0, "dry_run": True}
    ids = await store.management.delete_matching_ids(flt)
    await _enqueue_vector_delete(queue, ids)
    return {"matched": len(ids), "deleted": len(ids), "dry_run": False}


_line_encoder = msgspec.json.Encoder()


def export_filter(p: Principal, query: ExportQuery) -> MemoryFilter:
    """The filter an export by ``p`` uses (validated before the stream starts).

    Raises:
        NotFound: a client naming another owner.
    """
    if p.admin:
        return _filter(p, query.owner_id, query)
    return _filter(p, query.owner_id or p.key_id, query)


async def export_lines(store: Store, flt: MemoryFilter) -> AsyncIterator[bytes]:
    """JSON Lines of every memory matching ``flt`` in rowid order (one :class:`ImportRow`-shaped
    object per line; the rowid and ``needs_reindex`` are not exported)."""
    async for batch in store.management.batches(flt, EXPORT_BATCH):
        chunk = bytearray()
        for m in batch:
            fields = msgspec.structs.asdict(m)
            row = ImportRow(
                id=m.public_id, **{f: fields[f] for f in ImportRow.__struct_fields__ if f != "id"}
            )
            chunk += _line_encoder.encode(row)
            chunk += b"\n"
        yield bytes(chunk)


_row_decoder = msgspec.json.Decoder(ImportRow)


def _check_import_owner(p: Principal, row: ImportRow, line_no: int) -> ImportRow:
    if p.admin:
        return row
    if row.owner_id == p.key_id:
        return row
    if row.owner_id == GLOBAL_OWNER:
        raise PermissionDenied(f"line {line_no}: global memories are read-only for client keys")
    raise NotFound(f"line {line_no}: owner '{row.owner_id}' not found")


async def import_lines(
    store: Store,
    queue: JobQueue | None,
    p: Principal,
    lines: AsyncIterator[bytes],
    redact: Callable[[str], str] | None = None,
) -> dict[str, int]:
    """Import JSON Lines produced by :func:`export_lines`; idempotent on the public ``id``;
    times kept; imported rows are marked ``needs_reindex`` and a reindex job is queued.
    ``redact`` (the sensitive-content redaction, unless the caller asked for verbatim text) is
    applied to each row's ``content`` before it is stored.

    Rows already present under another owner, or clashing with another memory's owner+user+key,
    are skipped. Returns ``{"written": n, "skipped": n, "lines": n}``. A client may import only
    rows of its own key id.

    Raises:
        InvalidRequest: a line is not a valid memory object (nothing after it is imported;
            earlier batches stay). PermissionDenied / NotFound: a client row of another owner.
        StoreError: the database failed.
    """
    written = skipped = line_no = 0
    batch: list[ImportRow] = []
    async for line in lines:
        line_no += 1
        if not line.strip():
            continue
        try:
            row = _row_decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise InvalidRequest(f"line {line_no}: {exc}", code="invalid_import_line") from exc
        except RecursionError as exc:
            raise InvalidRequest(
                f"line {line_no}: nested too deeply", code="invalid_import_line"
            ) from exc
        if redact is not None:
            row = msgspec.structs.replace(row, content=redact(row.content))
        batch.append(_check_import_owner(p, row, line_no))
        if len(batch) >= IMPORT_BATCH:
            w, s = await store.management.import_rows(batch)
            written, skipped, batch = written + w, skipped + s, []
    if batch:
        w, s = await store.management.import_rows(batch)
        written, skipped = written + w, skipped + s
    if written:
        await _enqueue_if_handled(
            queue,
            REINDEX,
            ReindexPayload(owner_id=None if p.admin else p.key_id, requested_at=time.time()),
        )
    return {"written": written, "skipped": skipped, "lines": line_no}


async def search_preview(
    store: Store, settings: Settings, p: Principal, body: SearchPreview, now: float
) -> PreviewResult:
    """Run the recall code path (:func:`shared.retrieval.recall`) for ``body`` and show the
    ranking. Read-only: no access is recorded.

    Raises:
        InvalidRequest: admin without ``owner_id``, or ``budget`` outside 0..8000.
        NotFound: a client naming another owner. StoreError: the database failed.
    """
    if body.budget is not None and not 0 <= body.budget <= 8000:
        raise InvalidRequest("budget must be within 0..8000 tokens")
    if p.admin:
        if not body.owner_id:
            raise InvalidRequest("owner_id is required with the admin token")
        owner = body.owner_id
    else:
        owner = (readable_owners(p, body.owner_id) or [p.key_id or ""])[0]
    changed: dict[str, Any] = {}
    if body.strategy is not None:
        changed["retrieval_strategy"] = body.strategy
    if body.budget is not None:
        changed["recall_max_tokens"] = body.budget
    effective = msgspec.structs.replace(settings, **changed) if changed else settings
    scope = Scope(owner_id=owner, user_id=body.user_id, session_id=body.session_id)
    result = await recall(store.memories, scope, body.query, effective, now)
    # Per-leg scores: exposed by the hybrid recall when it provides them; a keyword-only recall's
    # final score is its keyword score.
    keyword_scores: dict[int, float] = dict(getattr(result, "keyword_scores", None) or {})
    vector_scores: dict[int, float] = dict(getattr(result, "vector_scores", None) or {})
    if result.tier == "fts5" and not keyword_scores:
        keyword_scores = dict(result.scores)
    items = [
        PreviewItem(
            rank=i + 1,
            score=result.scores.get(m.id),
            tier=result.tier,
            tokens=memory_tokens(m.content),
            keyword_score=keyword_scores.get(m.id),
            vector_score=vector_scores.get(m.id),
            memory=view_of(m),
        )
        for i, m in enumerate(result.memories)
    ]
    return PreviewResult(
        items=items,
        tier=result.tier,
        degraded=result.degraded,
        strategy=effective.retrieval_strategy,
        budget=effective.recall_max_tokens,
        tokens_used=sum(item.tokens for item in items),
        embedding_source=effective.embedding_source,
        vector_tier=effective.vector_tier,
    )


async def memory_stats(
    store: Store, p: Principal, owner_id: str | None, days: int, now: float
) -> dict[str, Any]:
    """Statistics over the memories ``p`` may see (client: its own only), see
    :meth:`shared.store.management.ManagementStore.stats`. ``days`` 1..365.

    Raises:
        InvalidRequest: ``days`` out of range. NotFound: a client naming another owner.
    """
    if not 1 <= days <= 365:
        raise InvalidRequest("days must be within 1..365")
    owners = readable_owners(p, owner_id) if p.admin else readable_owners(p, owner_id or p.key_id)
    stats = await store.management.stats(owners, days=days, now=now)
    return {"owner_id": owner_id if p.admin else (owner_id or p.key_id), "days": days, **stats}


async def engine_status(
    store: Store,
    settings: Settings,
    health: dict[str, str] | None = None,
    *,
    with_counts: bool = True,
) -> dict[str, Any]:
    """What the memory engine is running now: keyword tier (FTS5), embedding source, vector tier,
    Qdrant configuration, pending reindex count. ``health`` is the vector engine's own report
    (``embedding``, ``sqlite_vec``, ``qdrant`` statuses) or None without one; fields of tiers not
    built yet are null.

    Raises:
        StoreError: the database failed.
    """
    counts = await store.management.engine_counts()
    meta = counts["vector_meta"]
    # the embedding actually in use: "source:model:dim[:int8]" from the engine's health report,
    # else from the vector table metadata, else the configured values
    signature = (health or {}).get("embedding") or (meta["signature"] if meta else None)
    parts = signature.split(":") if signature and signature.count(":") >= 2 else None
    if not with_counts:
        counts = {**counts, "memories": None, "pending_reindex": None, "fts_rows": None}
    return {
        "keyword": {
            "engine": "fts5",
            "tokenizer": "porter unicode61 remove_diacritics 2",
            "indexed": counts["fts_rows"],
            "status": "ok",
        },
        "embedding": {
            "source": parts[0] if parts else settings.embedding_source,
            "model": parts[1] if parts else settings.embedding_model,
            "configured_source": settings.embedding_source,
            "dim": meta["dim"] if meta else (settings.embedding_dim or None),
            "signature": meta["signature"] if meta else None,
        },
        "vector": {
            "tier": settings.vector_tier,
            "quantization": settings.vector_quantization,
            "status": "ready" if meta else "not_built",
            "reset_at": meta["reset_at"] if meta else None,
        },
        "qdrant": {
            "configured": bool(settings.qdrant_url),
            "collection": settings.qdrant_collection if settings.qdrant_url else None,
            "healthy": (health["qdrant"] == "ok") if health and "qdrant" in health else None,
        },
        "health": health,
        "retrieval_strategy": settings.retrieval_strategy,
        "memories": counts["memories"],
        "pending_reindex": counts["pending_reindex"],
    }


async def _enqueue_if_handled(
    queue: JobQueue | None, name: str, payload: msgspec.Struct
) -> str | None:
    if queue is None or name not in HANDLERS:
        return None
    return await queue.enqueue(name, payload)


async def request_reindex(
    queue: JobQueue | None, p: Principal, body: ReindexRequest, now: float
) -> JobAccepted:
    """Queue a ``reindex`` job (admin: one owner or all; client: itself).

    Raises:
        NotFound: a client naming another owner. JobError (503): no reindex handler in this build.
    """
    owner = body.owner_id if p.admin else writable_owner(p, body.owner_id)
    job_id = await _enqueue_if_handled(
        queue, REINDEX, ReindexPayload(owner_id=owner, force=body.force, requested_at=now)
    )
    if job_id is None:
        raise JobError("the reindex job is not available in this build", code="job_unavailable")
    return JobAccepted(job=REINDEX, job_id=job_id, owner_id=owner)


async def request_summarize(
    queue: JobQueue | None, p: Principal, body: SummarizeRequest, now: float
) -> JobAccepted:
    """Queue a ``summarize`` job for exactly one owner (never across tenants, DESIGN §7).

    Raises:
        InvalidRequest: admin without ``owner_id``, or ``older_than_days`` <= 0.
        PermissionDenied / NotFound: see :func:`writable_owner`.
        JobError (503): no summarize handler in this build.
    """
    if not body.older_than_days > 0:
        raise InvalidRequest("older_than_days must be > 0")
    owner = writable_owner(p, body.owner_id)
    job_id = await _enqueue_if_handled(
        queue,
        SUMMARIZE,
        SummarizePayload(
            owner_id=owner,
            user_id=body.user_id,
            older_than_days=body.older_than_days,
            dry_run=body.dry_run,
            requested_at=now,
        ),
    )
    if job_id is None:
        raise JobError("the summarize job is not available in this build", code="job_unavailable")
    return JobAccepted(job=SUMMARIZE, job_id=job_id, owner_id=owner)
