"""``/api/memory`` handlers.

List, create, get, update, delete, bulk delete, export, import, search preview and stats. Each
decodes, calls one function of the memory domain (:mod:`shared.memory_crud`,
:mod:`shared.export_import`, :mod:`shared.search_preview`, :mod:`shared.memory_stats`), encodes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Annotated

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from services.gateway.api.authorization import principal_of
from services.gateway.api.codec import decode_body, decode_query, json_response
from services.gateway.state import state_of
from shared import export_import, memory_crud
from shared import memory_stats as stats
from shared.errors import InvalidRequest, PayloadTooLarge
from shared.explained_preview import explained_preview
from shared.memory_api import (
    BulkDelete,
    ExportQuery,
    ImportQuery,
    ListQuery,
    MemoryCreate,
    SearchPreview,
)
from shared.models import MemoryChanges

IMPORT_MAX_LINE_BYTES = 1 << 20


class StatsQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``GET /api/memory/stats`` query: ``owner_id`` (admin: any; client: itself), ``days``."""

    owner_id: str | None = None
    days: Annotated[int, msgspec.Meta(ge=1, le=365)] = 30


async def list_memories(request: Request) -> Response:
    """``GET /api/memory`` → ``{"items": [memory], "total", "limit", "offset"}``."""
    principal = await principal_of(request)
    query = decode_query(request, ListQuery)
    page = await memory_crud.list_memories(state_of(request).store, principal, query)
    return json_response(page)


async def create_memory(request: Request) -> Response:
    """``POST /api/memory`` → 201 with the memory (200 when it updated the same key)."""
    principal = await principal_of(request)
    body = await decode_body(request, MemoryCreate)
    state = state_of(request)
    memory, created = await memory_crud.create_memory(
        state.store, state.queue, principal, body, time.time(), state.redactor()
    )
    return json_response(memory, 201 if created else 200)


async def get_memory(request: Request) -> Response:
    """``GET /api/memory/{id}`` → the memory, or 404."""
    principal = await principal_of(request)
    memory = await memory_crud.get_memory(
        state_of(request).store, principal, request.path_params["id"]
    )
    return json_response(memory)


async def update_memory(request: Request) -> Response:
    """``PATCH /api/memory/{id}`` → the updated memory."""
    principal = await principal_of(request)
    body = await decode_body(request, MemoryChanges)
    state = state_of(request)
    memory = await memory_crud.update_memory(
        state.store,
        state.queue,
        principal,
        request.path_params["id"],
        body,
        time.time(),
        state.redactor(),
    )
    return json_response(memory)


async def delete_memory(request: Request) -> Response:
    """``DELETE /api/memory/{id}`` → ``{"deleted": memory}``."""
    principal = await principal_of(request)
    state = state_of(request)
    memory = await memory_crud.delete_memory(
        state.store, principal, request.path_params["id"], queue=state.queue
    )
    return json_response({"deleted": memory})


async def bulk_delete(request: Request) -> Response:
    """``POST /api/memory/bulk-delete`` → ``{"matched", "deleted", "dry_run"}``."""
    principal = await principal_of(request)
    body = await decode_body(request, BulkDelete)
    state = state_of(request)
    result = await memory_crud.bulk_delete(state.store, principal, body, queue=state.queue)
    return json_response(result)


async def export_memories(request: Request) -> Response:
    """``GET /api/memory/export`` → streamed ``application/x-ndjson`` (one memory per line).

    Every matching memory is exported: ``limit`` and ``offset`` are refused (400), not ignored.
    """
    principal = await principal_of(request)
    paging = sorted({"limit", "offset"} & set(request.query_params))
    if paging:
        raise InvalidRequest(
            f"export streams every matching memory: {' and '.join(paging)} not supported "
            "(page with GET /api/memory)"
        )
    query = decode_query(request, ExportQuery)
    flt = export_import.export_filter(principal, query)
    return StreamingResponse(
        export_import.export_lines(state_of(request).store, flt),
        media_type="application/x-ndjson",
        headers={"content-disposition": 'attachment; filename="memories.jsonl"'},
    )


async def _lines(request: Request, limit: int) -> AsyncIterator[bytes]:
    r"""Lines of the streamed body (no ``\n``), refusing over ``limit`` bytes or no line.

    A body with no non-blank line is refused (an import of nothing is a client error: the body
    is required).
    """
    seen = False
    async for line in _raw_lines(request, limit):
        seen = seen or bool(line.strip())
        yield line
    if not seen:
        raise InvalidRequest("the import body is empty: send JSON Lines", code="missing_body")


async def _raw_lines(request: Request, limit: int) -> AsyncIterator[bytes]:
    buffer = b""
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"import body exceeds {limit} bytes")
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        if len(buffer) > IMPORT_MAX_LINE_BYTES:
            raise InvalidRequest(f"an import line exceeds {IMPORT_MAX_LINE_BYTES} bytes")
        for line in complete:
            yield line
    if buffer:
        yield buffer


async def import_memories(request: Request) -> Response:
    """``POST /api/memory/import`` (JSON Lines body) → ``{"written", "skipped", "lines"}``.

    The body limit is 256 × ``max_body_bytes`` (streamed, never held whole). Content is
    redacted like learned text unless ``?verbatim=true`` (:class:`ImportQuery`).
    """
    principal = await principal_of(request)
    state = state_of(request)
    options = decode_query(request, ImportQuery)
    redact = None if options.verbatim else state.redactor()
    lines = _lines(request, state.settings.max_body_bytes * 256)
    result = await export_import.import_lines(state.store, state.queue, principal, lines, redact)
    return json_response(result)


async def search_preview(request: Request) -> Response:
    """``POST /api/memory/search-preview`` → what recall would inject, explained.

    Ranked memories with score, tier, tokens and per-leg ranks, the block text and (``explain``)
    the dropped candidates.
    """
    principal = await principal_of(request)
    body = await decode_body(request, SearchPreview)
    state = state_of(request)
    result = await explained_preview(
        state.store,
        state.settings,
        principal,
        body,
        time.time(),
        state.jobs.engine,
        state.redactor(),
    )
    return json_response(result)


async def memory_stats(request: Request) -> Response:
    """``GET /api/memory/stats`` → counts by type/category, tokens stored, event totals."""
    principal = await principal_of(request)
    query = decode_query(request, StatsQuery)
    result = await stats.memory_stats(
        state_of(request).store, principal, query.owner_id, query.days, time.time()
    )
    return json_response(result)
