"""MCP server at ``/mcp`` (Streamable HTTP, the official ``mcp`` package, stateless JSON mode).

Tools: ``memory_search``, ``memory_add``, ``memory_list``, ``memory_delete``, ``memory_clear``,
``memory_forget``.
Tenant isolation is enforced by authentication, never by arguments (see "Tenancy and access" in
``docs/ARCHITECTURE.md``): every HTTP request to ``/mcp`` must carry ``Authorization: Bearer <client
key>``; :class:`McpGateway` authenticates it before the MCP transport sees the request and stores
the caller in the ASGI scope, and each tool reads its owner from the request that carried the call.
No tool takes an owner argument; ids of other owners' memories are "not found".

Stateless mode (a fresh transport per request, no session affinity) keeps gateways stateless, so
any gateway behind a load balancer can serve any MCP request.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, Literal

import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import HTTPConnection, Request
from starlette.types import Receive, Scope, Send

from services.gateway.auth import authenticate_client
from services.gateway.errors import error_response
from services.gateway.state import GatewayState, state_of
from shared import control_api, memory_crud
from shared import search_preview as preview
from shared.access_policy import Principal
from shared.control_api import ForgetQuery
from shared.errors import MnemogateError
from shared.jobs.vector_sync import enqueue_vector_delete
from shared.memory_api import (
    BulkDelete,
    ListQuery,
    MemoryCreate,
    SearchPreview,
)

PRINCIPAL_SCOPE_KEY = "mnemogate.principal"
MemoryTypeArg = Literal["factual", "episodic", "procedural", "semantic"]
MemoryCategoryArg = Literal[
    "preference", "decision", "pattern", "fact", "correction", "context", "turn", "summary"
]
INSTRUCTIONS = (
    "Long-term memory of this API key. memory_search recalls memories relevant to a query; "
    "memory_add stores one; memory_list pages through them; memory_delete removes one by id; "
    "memory_clear removes every memory matching filters (dry_run to count first; no filter "
    "needs all=true); memory_forget(query) forgets what a query names, as a forget said in chat."
)


def _caller(ctx: Context[Any, Any]) -> tuple[GatewayState, Principal]:
    """The gateway state and the authenticated principal of the HTTP request carrying a call."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict) or PRINCIPAL_SCOPE_KEY not in scope:
        raise ToolError("unauthenticated: send 'Authorization: Bearer <key>'")
    principal: Principal = scope[PRINCIPAL_SCOPE_KEY]
    return state_of(HTTPConnection(scope)), principal


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Raise a :class:`MnemogateError` of the block as the MCP ``ToolError`` the client sees."""
    try:
        yield
    except MnemogateError as exc:
        raise ToolError(f"{exc.code or exc.type}: {exc.message}") from exc


def _filters(
    query: str | None,
    user_id: str | None,
    session_id: str | None,
    type: MemoryTypeArg | None,
    category: MemoryCategoryArg | None,
) -> dict[str, Any]:
    """The filters ``memory_list`` and ``memory_clear`` share, as their structs' keywords."""
    return {
        "user_id": user_id,
        "session_id": session_id,
        "type": type,
        "category": category,
        "q": query,
    }


async def memory_search(
    ctx: Context[Any, Any],
    query: str,
    limit: int = 10,
    user_id: str = "",
    session_id: str | None = None,
) -> dict[str, Any]:
    """Recall the memories most relevant to `query` (what the gateway would inject), best first.

    Returns {"items": [{"id", "content", "type", "category", "score", "created_at", ...}],
    "tier"}. `limit` 1..100.
    """
    state, principal = _caller(ctx)
    with _tool_errors():
        result = await preview.search_preview(
            state.store,
            state.settings,
            principal,
            SearchPreview(query=query, user_id=user_id, session_id=session_id),
            time.time(),
        )
    items = [
        {**_plain(item.memory), "score": item.score, "tokens": item.tokens}
        for item in result.items[: max(1, min(limit, 100))]
    ]
    return {"items": items, "tier": result.tier, "degraded": result.degraded}


async def memory_add(
    ctx: Context[Any, Any],
    content: str,
    type: MemoryTypeArg = "semantic",
    category: MemoryCategoryArg = "fact",
    key: str | None = None,
    metadata: dict[str, Any] | None = None,
    user_id: str = "",
    session_id: str | None = None,
) -> dict[str, Any]:
    """Store a memory for this API key (a `key` equal to an existing one updates that memory).

    Returns the stored memory with "created" (false when it updated an existing key).
    """
    state, principal = _caller(ctx)
    body = MemoryCreate(
        content=content,
        type=type,
        category=category,
        key=key,
        metadata=metadata or {},
        user_id=user_id,
        session_id=session_id,
    )
    with _tool_errors():
        memory, created = await memory_crud.create_memory(
            state.store, state.queue, principal, body, time.time(), state.redactor()
        )
    return {**_plain(memory), "created": created}


async def memory_list(
    ctx: Context[Any, Any],
    query: str | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    type: MemoryTypeArg | None = None,
    category: MemoryCategoryArg | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """List this key's memories (and global ones), newest first, or by relevance to `query`.

    Returns {"items": [memory], "total", "limit", "offset"}; `limit` 1..1000, `offset`
    0..10^12.
    """
    state, principal = _caller(ctx)
    filters = _filters(query, user_id, session_id, type, category)
    list_query = ListQuery(**filters, limit=limit, offset=offset)
    with _tool_errors():
        page = await memory_crud.list_memories(state.store, principal, list_query)
    result: dict[str, Any] = _plain(page)
    return result


async def memory_delete(ctx: Context[Any, Any], id: str) -> dict[str, Any]:
    """Delete one of this key's memories by its id ("mem_..."). Returns {"deleted": memory}."""
    state, principal = _caller(ctx)
    with _tool_errors():
        memory = await memory_crud.delete_memory(state.store, principal, id, queue=state.queue)
    return {"deleted": _plain(memory)}


async def memory_clear(
    ctx: Context[Any, Any],
    query: str | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
    type: MemoryTypeArg | None = None,
    category: MemoryCategoryArg | None = None,
    dry_run: bool = False,
    all: bool = False,
) -> dict[str, Any]:
    """Delete every memory of this key matching the filters.

    With no filter at all, `all` must be true to delete every memory of this key (else the
    call fails with invalid_request; a dry_run needs no `all`).
    Returns {"matched", "deleted", "dry_run"}.
    """
    state, principal = _caller(ctx)
    filters = _filters(query, user_id, session_id, type, category)
    body = BulkDelete(**filters, dry_run=dry_run, all=all)
    with _tool_errors():
        result = await memory_crud.bulk_delete(state.store, principal, body, queue=state.queue)
    cleared: dict[str, Any] = _plain(result)
    return cleared


async def memory_forget(
    ctx: Context[Any, Any], query: str, user_id: str = "", dry_run: bool = False
) -> dict[str, Any]:
    """Forget what `query` names, with the same matcher as a forget said in chat.

    `query` is a target ("my phone number") or a request ("please forget where I work"); among
    this key's memories (of end user `user_id`) only those holding every topic word go, with a
    clear margin; their derived copies (captured turns, summaries) go too, from every tier.

    Returns {"reason": ok|no_target|no_match|too_broad|ambiguous, "deleted": [{"id", "key",
    "category", "via"}], "dry_run"}.
    """
    state, principal = _caller(ctx)

    async def on_deleted(ids: list[int]) -> None:
        await enqueue_vector_delete(state.queue, ids)

    with _tool_errors():
        owner = control_api.forget_owner(False, principal.key_id, None)
        result = await control_api.forget_by_query(
            state.store,
            owner,
            ForgetQuery(q=query, user_id=user_id, dry_run=dry_run),
            now=time.time(),
            source="mcp",
            max_matches=state.settings.forget_max_matches,
            on_deleted=on_deleted,
        )
    out: dict[str, Any] = _plain(result)
    return out


TOOLS = (memory_search, memory_add, memory_list, memory_delete, memory_clear, memory_forget)


class McpGateway:
    """The MCP server as an ASGI endpoint that authenticates every request first.

    Mount it with ``Route("/mcp", endpoint=McpGateway())`` and run :meth:`run` in the lifespan.
    """

    def __init__(self) -> None:
        self.server: MCPServer[Any] = MCPServer(
            "mnemogate", instructions=INSTRUCTIONS, log_level="WARNING"
        )
        for tool in TOOLS:
            self.server.add_tool(tool, name=tool.__name__)
        # Builds the session manager; the Starlette app it returns is not used (we route /mcp).
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            # Every request needs a bearer key, which a DNS-rebinding page cannot send.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    def run(self) -> AbstractAsyncContextManager[None]:
        """The session manager's run context (enter once, in the application lifespan)."""
        return self.server.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: 401 in the documented error shape unless a valid client key is sent."""
        request = Request(scope)
        state = state_of(request)
        try:
            key = await authenticate_client(request, state.store)
        except MnemogateError as exc:
            response = error_response(exc.status, exc.message, exc.type, exc.code)
            await response(scope, receive, send)
            return
        scope[PRINCIPAL_SCOPE_KEY] = Principal(admin=False, key_id=key.id)
        await self.server.session_manager.handle_request(scope, receive, send)
