"""The OpenAPI 3.1 document of the management API, served at ``GET /api/openapi.json``.

Schemas are generated from the msgspec structs the handlers decode and encode
(:func:`msgspec.json.schema_components`), so they cannot drift from the code; the operations
table :data:`OPERATIONS` lists every ``/api`` route, and a test checks it against the routes.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from services.gateway.api import control
from services.gateway.api.codec import json_response
from shared.event_log import EventPage, EventQuery
from shared.memory_api import (
    BulkDelete,
    ExportQuery,
    ImportQuery,
    JobAccepted,
    ListQuery,
    MemoryCreate,
    MemoryPage,
    MemoryView,
    PreviewResult,
    ReindexRequest,
    SearchPreview,
    SummarizeRequest,
)
from shared.models import MemoryChanges
from shared.store.memories.export_import import ImportRow

REF = "#/components/schemas/{name}"
STRUCTS: tuple[type[msgspec.Struct], ...] = (
    MemoryView,
    MemoryPage,
    MemoryCreate,
    MemoryChanges,
    BulkDelete,
    SearchPreview,
    PreviewResult,
    JobAccepted,
    ReindexRequest,
    SummarizeRequest,
    ImportRow,
    ListQuery,
    ExportQuery,
    ImportQuery,
    EventQuery,
    EventPage,
    *control.SCHEMA_STRUCTS,
)

_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
EXTRA_SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "code"],
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "code": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            }
        },
    },
    "Deleted": {
        "type": "object",
        "required": ["deleted"],
        "properties": {"deleted": {"$ref": REF.format(name="MemoryView")}},
    },
    "BulkDeleteResult": {
        "type": "object",
        "required": ["matched", "deleted", "dry_run"],
        "properties": {
            "matched": {"type": "integer"},
            "deleted": {"type": "integer"},
            "dry_run": {"type": "boolean"},
        },
    },
    "ImportResult": {
        "type": "object",
        "required": ["written", "skipped", "lines"],
        "properties": {
            "written": {"type": "integer"},
            "skipped": {"type": "integer"},
            "lines": {"type": "integer"},
        },
    },
    "Stats": {
        "type": "object",
        "required": ["by_type", "by_category", "total", "tokens_stored", "events"],
        "properties": {
            "owner_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "days": {"type": "integer"},
            "by_type": {"type": "object", "additionalProperties": {"type": "integer"}},
            "by_category": {"type": "object", "additionalProperties": {"type": "integer"}},
            "total": {"type": "integer"},
            "tokens_stored": {"type": "integer"},
            "pending_reindex": {"type": "integer"},
            "events": {"type": "object", "additionalProperties": {"type": "integer"}},
            "events_by_day": {"type": "array", "items": _OBJECT},
        },
    },
    "Engine": {
        "type": "object",
        "required": ["keyword", "embedding", "vector", "qdrant", "pending_reindex"],
        "properties": {
            "keyword": _OBJECT,
            "embedding": _OBJECT,
            "vector": _OBJECT,
            "qdrant": _OBJECT,
            "retrieval_strategy": {"type": "string"},
            "memories": {"type": "integer"},
            "pending_reindex": {"type": "integer"},
        },
    },
    "SettingsView": {
        "type": "object",
        "required": ["version", "settings", "overrides", "immutable", "secret", "refresh_s"],
        "properties": {
            "version": {"type": "integer"},
            "updated_at": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "settings": _OBJECT,
            "overrides": _OBJECT,
            "immutable": {"type": "array", "items": {"type": "string"}},
            "secret": {"type": "array", "items": {"type": "string"}},
            "refresh_s": {"type": "number"},
        },
    },
    "SettingsPatch": {
        "type": "object",
        "description": "Partial settings: field → value (null = back to the environment value).",
        "additionalProperties": True,
    },
}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF.format(name=name)}


def _json(name: str) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(name)}}


class Op(msgspec.Struct, frozen=True, kw_only=True):
    """One documented operation: path, method, summary, body schema, success status/schema."""

    path: str
    method: str
    summary: str
    body: str | None = None
    body_media: str = "application/json"
    status: int = 200
    response: str | None = None
    response_media: str = "application/json"
    query: str | None = None
    path_id: bool = False
    public: bool = False


OPERATIONS: tuple[Op, ...] = (
    Op(path="/api/openapi.json", method="get", summary="This document", public=True),
    Op(
        path="/api/memory",
        method="get",
        summary=(
            "List memories (filters, text query q, pagination with total; limit clamped to "
            "1..1000, offset 0..10^12 else 400)"
        ),
        response="MemoryPage",
        query="ListQuery",
    ),
    Op(
        path="/api/memory",
        method="post",
        summary="Create a memory (upsert on owner+user+key; 200 when it updated one)",
        body="MemoryCreate",
        status=201,
        response="MemoryView",
    ),
    Op(
        path="/api/memory/search-preview",
        method="post",
        summary="What recall would inject for a query: ranked memories, scores, tier, tokens",
        body="SearchPreview",
        response="PreviewResult",
    ),
    Op(
        path="/api/memory/stats",
        method="get",
        summary="Counts by type and category, tokens stored, event totals and per day",
        response="Stats",
        query="StatsQuery",
    ),
    Op(
        path="/api/memory/export",
        method="get",
        summary=(
            "Export every matching memory as JSON Lines (streamed; one ImportRow per line; "
            "limit and offset are refused with 400)"
        ),
        response="ImportRow",
        response_media="application/x-ndjson",
        query="ExportQuery",
    ),
    Op(
        path="/api/memory/import",
        method="post",
        summary=(
            "Import JSON Lines from an export (idempotent on id, keeps times); content is "
            "redacted like learned text unless verbatim=true"
        ),
        body="ImportRow",
        query="ImportQuery",
        body_media="application/x-ndjson",
        response="ImportResult",
    ),
    Op(
        path="/api/memory/bulk-delete",
        method="post",
        summary=(
            "Delete every memory matching filters (dry_run counts only); with no filter, "
            "400 unless all: true"
        ),
        body="BulkDelete",
        response="BulkDeleteResult",
    ),
    Op(
        path="/api/memory/{id}",
        method="get",
        summary="One memory",
        response="MemoryView",
        path_id=True,
    ),
    Op(
        path="/api/memory/{id}",
        method="patch",
        summary="Update content, type, category, key, metadata, expiry (re-embeds if needed)",
        body="MemoryChanges",
        response="MemoryView",
        path_id=True,
    ),
    Op(
        path="/api/memory/{id}",
        method="delete",
        summary="Delete one memory",
        response="Deleted",
        path_id=True,
    ),
    Op(
        path="/api/engine",
        method="get",
        summary="Engine status (tiers, pending reindex)",
        response="Engine",
    ),
    Op(
        path="/api/reindex",
        method="post",
        summary="Queue a vector reindex job",
        body="ReindexRequest",
        status=202,
        response="JobAccepted",
    ),
    Op(
        path="/api/summarize",
        method="post",
        summary="Queue a summarize job for one owner",
        body="SummarizeRequest",
        status=202,
        response="JobAccepted",
    ),
    Op(
        path="/api/settings",
        method="get",
        summary="Runtime settings (admin; secrets masked)",
        response="SettingsView",
    ),
    Op(
        path="/api/settings",
        method="put",
        summary="Change runtime settings (admin); other processes apply it within refresh_s",
        body="SettingsPatch",
        response="SettingsView",
    ),
    Op(
        path="/api/events",
        method="get",
        summary=(
            "Events timeline, newest first (learning, injections, forgets, evictions, dead "
            "letters, settings changes); a client key reads its own owner's only"
        ),
        response="EventPage",
        query="EventQuery",
    ),
    *(Op(**spec) for spec in control.OPERATIONS),
)

_ERRORS = {
    "400": ("Invalid request", "Error"),
    "401": ("Missing or invalid credentials", "Error"),
    "403": ("Not allowed (global memories are read-only for client keys)", "Error"),
    "404": ("Not found (other owners' ids are not found too)", "Error"),
}


def _query_parameters(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "query", "required": False, "schema": prop}
        for name, prop in schema.get("properties", {}).items()
    ]


def _operation(op: Op, schemas: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI operation object of ``op`` (``schemas``: the components, for query params)."""
    operation: dict[str, Any] = {
        "summary": op.summary,
        "operationId": f"{op.method}_{op.path.strip('/').replace('/', '_')}".replace("{", "")
        .replace("}", "")
        .replace("-", "_")
        .replace(".", "_"),
        "responses": {},
    }
    params: list[dict[str, Any]] = []
    if op.path_id:
        params.append({"name": "id", "in": "path", "required": True, "schema": {"type": "string"}})
    if op.query is not None:
        params.extend(_query_parameters(schemas[op.query]))
    if params:
        operation["parameters"] = params
    if op.body is not None:
        operation["requestBody"] = {
            "required": op.method != "post" or op.body not in {"ReindexRequest"},
            "content": {op.body_media: {"schema": _ref(op.body)}},
        }
    if op.response is not None:
        operation["responses"][str(op.status)] = {
            "description": "Success",
            "content": {op.response_media: {"schema": _ref(op.response)}},
        }
    else:
        operation["responses"][str(op.status)] = {
            "description": "Success",
            "content": {"application/json": {"schema": _OBJECT}},
        }
    if op.path == "/api/memory" and op.method == "post":
        operation["responses"]["200"] = {
            "description": "Updated the memory with the same key",
            "content": _json("MemoryView"),
        }
    if not op.public:
        operation["security"] = [{"bearerAuth": []}]
        for status, (text, schema) in _ERRORS.items():
            operation["responses"][status] = {"description": text, "content": _json(schema)}
    return operation


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The whole OpenAPI 3.1 document (built once per process)."""
    from services.gateway.api.memories import StatsQuery

    _, components = msgspec.json.schema_components((*STRUCTS, StatsQuery), ref_template=REF)
    schemas = {**components, **EXTRA_SCHEMAS}
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, schemas)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mnemogate management API",
            "version": "1",
            "description": (
                "Admin token (MNEMOGATE_ADMIN_TOKEN) sees and changes every owner; a client key "
                "sees its own memories and global ones (read-only). Errors use "
                '{"error": {"message", "type", "code"}}.'
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
    }


async def openapi_json(request: Request) -> Response:
    """``GET /api/openapi.json`` → the OpenAPI document (no authentication)."""
    return json_response(openapi_document())
