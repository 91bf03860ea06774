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
from services.gateway.api.openapi_rules import (
    VARIANT_PARAMETER,
    VARIANTS,
    apply_principal,
    extra_errors,
    settings_patch_schema,
)
from services.gateway.api.openapi_schemas import EXTRA_SCHEMAS, REF
from services.gateway.api.openapi_schemas import OBJECT as _OBJECT
from shared.errors import InvalidRequest
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
    "503": ("The store (or the job queue) is unavailable; retry later", "Error"),
}


def _query_parameters(schema: dict[str, Any]) -> list[dict[str, Any]]:
    required = set(schema.get("required", ()))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": prop}
        for name, prop in schema.get("properties", {}).items()
    ]


_PATH_ID: dict[str, Any] = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "minLength": 1},
}


def _operation_id(op: Op) -> str:
    raw = f"{op.method}_{op.path.strip('/').replace('/', '_')}"
    return raw.replace("{", "").replace("}", "").replace("-", "_").replace(".", "_")


def _parameters(op: Op, schemas: dict[str, Any]) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [_PATH_ID] if op.path_id else []
    if op.query is not None:
        params.extend(_query_parameters(schemas[op.query]))
    if op.path == "/api/openapi.json":
        params.append(VARIANT_PARAMETER)
    return params


def _request_body(op: Op) -> dict[str, Any]:
    assert op.body is not None
    content = {op.body_media: {"schema": _ref(op.body)}}
    if op.body_media == "application/x-ndjson":  # one line of JSON Lines is JSON
        content["application/json"] = {"schema": _ref(op.body)}
    return {"required": op.body != "ReindexRequest", "content": content}


def _responses(op: Op) -> dict[str, Any]:
    schema = _ref(op.response) if op.response is not None else _OBJECT
    media = op.response_media if op.response is not None else "application/json"
    out: dict[str, Any] = {
        str(op.status): {"description": "Success", "content": {media: {"schema": schema}}}
    }
    if op.path == "/api/memory" and op.method == "post":
        out["200"] = {
            "description": "Updated the memory with the same key",
            "content": _json("MemoryView"),
        }
    if not op.public:
        errors = {**_ERRORS, **extra_errors(op.path, op.method, op.body is not None)}
        for status, (text, name) in errors.items():
            out[status] = {"description": text, "content": _json(name)}
    return out


def _operation(op: Op, schemas: dict[str, Any]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": op.summary,
        "operationId": _operation_id(op),
        "responses": _responses(op),
    }
    params = _parameters(op, schemas)
    if params:
        operation["parameters"] = params
    if op.body is not None:
        operation["requestBody"] = _request_body(op)
    if not op.public:
        operation["security"] = [{"bearerAuth": []}]
    return operation


@functools.cache
def openapi_document(variant: str = "client") -> dict[str, Any]:
    """The whole OpenAPI 3.1 document for the admin token (``variant="admin"``) or a client key.

    Built once per process and variant (``"client"`` is the default; see :mod:`.openapi_rules`).
    """
    from services.gateway.api.memories import StatsQuery

    _, components = msgspec.json.schema_components((*STRUCTS, StatsQuery), ref_template=REF)
    schemas = apply_principal(
        {**components, **EXTRA_SCHEMAS, "SettingsPatch": settings_patch_schema()},
        admin=variant == "admin",
    )
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
    """``GET /api/openapi.json[?for=admin|client]`` → the document for that principal.

    The default is ``client``; no authentication.

    Raises:
        InvalidRequest: an unknown parameter or ``for`` value.
    """
    params = dict(request.query_params)
    variant = params.pop("for", "client")
    if params or variant not in VARIANTS:
        raise InvalidRequest(f"the only parameter is 'for', one of {list(VARIANTS)}")
    return json_response(openapi_document(variant))
