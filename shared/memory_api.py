"""The request and response structs of memory management (REST ``/api`` and the MCP tools).

Every operation is HTTP-free: handlers and MCP tools decode their input into these structs, call
one function (:mod:`shared.memory_crud`, :mod:`shared.export_import`,
:mod:`shared.search_preview`, :mod:`shared.memory_stats`, :mod:`shared.job_requests`) and encode
the result. Edits use :class:`shared.models.MemoryChanges`; engine status is
:class:`shared.engine_status.EngineStatus`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from shared.models import (
    Content,
    EndUserId,
    Memory,
    MemoryCategory,
    MemoryFields,
    MemoryInput,
    MemoryType,
    Relevance,
    SessionId,
    UnixTime,
    UpsertKey,
)
from shared.settings import RetrievalStrategy

#: Largest page of a listing (``limit`` is clamped to 1..MAX_PAGE).
MAX_PAGE = 1000
#: Largest listing ``offset`` accepted (rows skipped); larger values are a 400, never a 500.
MAX_OFFSET = 10**12
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)]
#: Largest search-preview ``budget``, in tokens.
MAX_PREVIEW_BUDGET = 8000


class MemoryView(MemoryFields, frozen=True, kw_only=True):
    """A memory as the API shows it: ``id`` is the public id (the rowid is not shown)."""

    id: str


def view_of(m: Memory) -> MemoryView:
    """The API view of a stored memory (rowid hidden, public id as ``id``)."""
    fields = msgspec.structs.asdict(m)
    del fields["id"], fields["public_id"]
    return MemoryView(id=m.public_id, **fields)


class MemoryPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of a listing: ``items``, the ``total`` matching, and the page bounds."""

    items: list[MemoryView]
    total: int
    limit: int
    offset: int


class ExportQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Export filters: ``owner_id`` narrows (admin: any owner; client: itself or ``global``).

    ``q`` is free text matched with FTS5.

    An export streams every matching memory in rowid order: it takes no ``limit`` or ``offset``
    (page with ``GET /api/memory``).
    """

    owner_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    type: MemoryType | None = None
    category: MemoryCategory | None = None
    q: str | None = None


class ImportQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Import options.

    ``verbatim``: store each row's ``content`` exactly as given; by default (false) it goes
    through the same sensitive-content redaction as learning and the API write paths (when
    ``sensitive_filter`` is on), so an export from another system cannot plant secrets or
    personal data at rest.
    """

    verbatim: bool = False


class ListQuery(ExportQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Listing filters: those of :class:`ExportQuery` (``q`` ranked by BM25 here) plus paging.

    ``limit``: an integer, clamped to 1..1000; ``offset``: rows skipped, an integer 0..10^12
    (else 400).
    """

    limit: int = 50
    offset: Offset = 0


class MemoryCreate(MemoryInput, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A new memory.

    ``owner_id``: the admin must give it (may be ``global``); a client may omit it or give its
    own key id. A ``key`` equal to an existing one of the same owner+user updates that memory.
    """

    content: Content
    owner_id: str | None = None
    user_id: EndUserId = ""
    session_id: SessionId | None = None
    key: UpsertKey | None = None
    expires_at: UnixTime | None = None
    relevance: Relevance = 1.0


class BulkDelete(ExportQuery, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Delete every memory matching the filters of :class:`ExportQuery` (``dry_run``: only count).

    With no filter (none of ``user_id``, ``session_id``, ``type``, ``category``, a non-blank
    ``q``; and, for the admin, ``owner_id``: a client's own key id narrows nothing) the request
    is refused with 400 unless it says ``all: true`` (every memory the caller may change); a dry
    run needs no ``all``.
    """

    dry_run: bool = False
    all: bool = False


class SearchPreview(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What recall would inject for ``query``.

    ``strategy``: exact|semantic|hybrid (default the setting); ``budget``: tokens 0..8000
    (default ``recall_max_tokens``). The admin must name ``owner_id``; ``user_id``/``session_id``
    scope it like the request headers do.
    """

    query: str
    owner_id: str | None = None
    user_id: str = ""
    session_id: str | None = None
    strategy: RetrievalStrategy | None = None
    budget: Annotated[int, msgspec.Meta(ge=0, le=8000)] | None = None
    #: also list the candidates recall dropped and why (floor, screened, duplicate, cap, budget)
    explain: bool = False


class DroppedMemory(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate recall did not inject.

    ``reason`` ∈ floor | screened | duplicate | cap | budget (see :mod:`shared.recall_explain`),
    its per-leg ranks and scores, tokens and the memory.
    """

    reason: str
    keyword_rank: int | None
    vector_rank: int | None
    keyword_score: float | None
    vector_score: float | None
    tokens: int
    memory: MemoryView


class PreviewItem(msgspec.Struct, frozen=True, kw_only=True):
    """One ranked memory.

    Final ``score``, ``tier`` that found it, estimated ``tokens``, and the per-leg scores (null when
    that leg did not run).
    """

    rank: int
    score: float | None
    tier: str
    tokens: int
    keyword_score: float | None
    vector_score: float | None
    memory: MemoryView
    keyword_rank: int | None = None
    vector_rank: int | None = None


class PreviewResult(msgspec.Struct, frozen=True, kw_only=True):
    """Search preview: ``items`` best first, ``tier`` used, ``degraded`` reason.

    Tokens used of ``budget``, ``strategy`` and the resolution (embedding source, vector tier).
    """

    items: list[PreviewItem]
    tier: str
    degraded: str | None
    strategy: str
    budget: int
    tokens_used: int
    embedding_source: str
    vector_tier: str
    #: the exact memory block that would be injected ("" when nothing would be)
    block: str = ""
    #: with ``explain``: the candidates recall dropped, best-ranked first, with the reason
    dropped: list[DroppedMemory] | None = None


class JobAccepted(msgspec.Struct, frozen=True, kw_only=True):
    """A background job was queued: its ``job`` name and idempotency ``job_id``."""

    job: str
    job_id: str
    owner_id: str | None


class ReindexRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Rebuild vectors of memories marked for reindexing (``force``: all).

    Admin: ``owner_id`` None = every owner; client: always its own.
    """

    owner_id: str | None = None
    force: bool = False


class SummarizeRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Summarize episodic memories older than ``older_than_days`` (> 0) of ONE owner.

    (the admin must name it; a client is itself).
    """

    owner_id: str | None = None
    user_id: str | None = None
    older_than_days: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    dry_run: bool = False
