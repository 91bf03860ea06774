"""``/api`` handlers of user control: forget by query, key switches and caps, usage.

Each decodes, calls one :mod:`shared.control_api` function, encodes (docs/ARCHITECTURE.md,
"Controlling memory").
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.api.authorization import principal_of, require_admin
from services.gateway.api.codec import decode_body, decode_query, json_response
from services.gateway.state import state_of
from shared import control_api
from shared.control_api import (
    ForgetQuery,
    ForgetResult,
    KeyList,
    KeyUpdate,
    KeyView,
    UsageQuery,
    UsageResult,
)
from shared.errors import NotFound
from shared.jobs.vector_sync import enqueue_vector_delete

#: Request and response structs of these routes (their OpenAPI schemas are generated).
SCHEMA_STRUCTS = (ForgetQuery, ForgetResult, KeyList, KeyUpdate, KeyView, UsageQuery, UsageResult)
#: The OpenAPI operations of these routes (``services.gateway.api.openapi.Op`` fields).
OPERATIONS: tuple[dict[str, Any], ...] = (
    {
        "path": "/api/memory",
        "method": "delete",
        "summary": "Forget by query: delete what q names (the chat forget matcher, clear margin, "
        "at most forget_max_matches) and its derived copies from every tier; ids and keys",
        "response": "ForgetResult",
        "query": "ForgetQuery",
    },
    {
        "path": "/api/keys",
        "method": "get",
        "summary": "API keys with their memory switches and caps (admin)",
        "response": "KeyList",
    },
    {
        "path": "/api/keys/{id}",
        "method": "patch",
        "summary": "Set a key's recall/learn switches (on, off, inherit) and memory cap (admin)",
        "body": "KeyUpdate",
        "response": "KeyView",
        "path_id": True,
    },
    {
        "path": "/api/usage",
        "method": "get",
        "summary": "Memory usage per key and UTC day: requests with memory, memories and tokens "
        "injected, facts learned, forgets",
        "response": "UsageResult",
        "query": "UsageQuery",
    },
)


async def forget_memories(request: Request) -> Response:
    """Forget by query: ``DELETE /api/memory?q=...``.

    ``DELETE /api/memory?q=...`` → ``{"reason", "deleted": [{id, key, category, via}], "dry_run"}``:
    the chat forget matcher over one key's (and end user's) memories.
    """
    principal = await principal_of(request)
    query = decode_query(request, ForgetQuery)
    state = state_of(request)
    owner = control_api.forget_owner(principal.admin, principal.key_id, query.owner_id)

    async def on_deleted(ids: list[int]) -> None:
        await enqueue_vector_delete(state.queue, ids)

    result = await control_api.forget_by_query(
        state.store,
        owner,
        query,
        now=time.time(),
        source="api",
        max_matches=state.settings.forget_max_matches,
        on_deleted=on_deleted,
    )
    return json_response(result)


async def list_keys(request: Request) -> Response:
    """``GET /api/keys`` (admin) → ``{"items": [key]}`` with switches and caps."""
    await require_admin(request)
    keys = await state_of(request).store.keys.list()
    return json_response(KeyList(items=[control_api.key_view(k) for k in keys]))


async def update_key(request: Request) -> Response:
    """``PATCH /api/keys/{id}`` (admin) → the key with its switches and caps."""
    await require_admin(request)
    body = await decode_body(request, KeyUpdate)
    view = await control_api.update_key(state_of(request).store, request.path_params["id"], body)
    return json_response(view)


async def usage(request: Request) -> Response:
    """``GET /api/usage`` → memory usage per key and UTC day (a client key: its own only)."""
    principal = await principal_of(request)
    query = decode_query(request, UsageQuery)
    owner = query.key_id
    if not principal.admin:
        if owner not in (None, principal.key_id):
            raise NotFound(f"key '{owner}' not found")
        owner = principal.key_id
    result = await control_api.usage(state_of(request).store, owner, query.days, time.time())
    return json_response(result)
