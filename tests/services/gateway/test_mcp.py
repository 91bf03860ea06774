"""MCP server at /mcp, driven by the ``mcp`` package's own client over HTTP against a live gateway.

The owner is the bearer key of the HTTP request: key B never sees, finds or deletes key A's
memories whatever arguments it passes, and no tool accepts an owner argument.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.harness import GatewayHarness


def _client(gw: GatewayHarness, secret: str) -> Client:
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {secret}"}, timeout=30)
    return Client(streamable_http_client(f"{gw.base_url}/mcp", http_client=http))


async def _call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(tool, args)
    return bool(result.is_error), result.structured_content or result.content


@pytest.fixture
def gw(gateway_factory) -> GatewayHarness:
    return gateway_factory()


def test_tools_listed_without_owner_arguments(gw: GatewayHarness) -> None:
    _, secret = gw.create_key("a")

    async def go() -> None:
        async with _client(gw, secret) as client:
            tools = (await client.list_tools()).tools
            names = {t.name for t in tools}
            assert names == {
                "memory_search",
                "memory_add",
                "memory_list",
                "memory_delete",
                "memory_clear",
                "memory_forget",
            }
            for tool in tools:
                props = set(tool.input_schema.get("properties", {}))
                assert not props & {"owner_id", "owner", "api_key", "apiKeyId", "key_id"}, tool

    anyio.run(go)


def test_add_search_list_delete(gw: GatewayHarness) -> None:
    key_id, secret = gw.create_key("a")

    async def go() -> None:
        async with _client(gw, secret) as client:
            err, added = await _call(
                client,
                "memory_add",
                {"content": "My favourite editor is Helix", "category": "preference"},
            )
            assert not err, added
            assert added["owner_id"] == key_id and added["created"] is True
            err, refused = await _call(client, "memory_add", {"content": "x" * 8001})
            assert err and "longer than 8000 characters" in str(refused), refused
            err, refused = await _call(client, "memory_add", {"content": "x", "user_id": "a\nb"})
            assert err and "control character" in str(refused), refused
            session = {"content": "x", "session_id": "s\u0000x"}
            err, refused = await _call(client, "memory_add", session)
            assert err and "session_id holds a control character" in str(refused), refused
            err, refused = await _call(
                client, "memory_add", {"content": "x", "session_id": "s" * 257}
            )
            assert err and "the limit is 256" in str(refused), refused
            err, found = await _call(client, "memory_search", {"query": "which editor do I use"})
            assert not err, found
            assert [m["id"] for m in found["items"]] == [added["id"]]
            err, listed = await _call(client, "memory_list", {})
            assert listed["total"] == 1
            err, deleted = await _call(client, "memory_delete", {"id": added["id"]})
            assert not err and deleted["deleted"]["id"] == added["id"]
            err, found = await _call(client, "memory_search", {"query": "editor Helix"})
            assert found["items"] == []

    anyio.run(go)
    assert gw.memories(key_id) == []


def test_clear_with_filters_and_dry_run(gw: GatewayHarness) -> None:
    key_id, secret = gw.create_key("a")

    async def go() -> None:
        async with _client(gw, secret) as client:
            for text, cat in (("I prefer tabs", "preference"), ("We chose Postgres", "decision")):
                await _call(client, "memory_add", {"content": text, "category": cat})
            _, counted = await _call(
                client, "memory_clear", {"category": "preference", "dry_run": True}
            )
            assert counted == {"matched": 1, "deleted": 0, "dry_run": True}
            _err, cleared = await _call(client, "memory_clear", {"category": "preference"})
            assert cleared["deleted"] == 1
            # no filter: refused unless all=true (a dry run may count everything)
            err, res = await _call(client, "memory_clear", {})
            assert err and "invalid_request" in str(res)
            _, counted = await _call(client, "memory_clear", {"dry_run": True})
            assert counted == {"matched": 1, "deleted": 0, "dry_run": True}
            # memory_list: an out-of-range offset is an error, never a crash
            err, res = await _call(client, "memory_list", {"offset": 10**13})
            assert err and "offset" in str(res)

    anyio.run(go)
    assert [m.content for m in gw.memories(key_id)] == ["We chose Postgres"]


def test_isolation_between_keys(gw: GatewayHarness) -> None:
    a_id, a_secret = gw.create_key("a")
    b_id, b_secret = gw.create_key("b")

    async def go() -> None:
        async with _client(gw, a_secret) as a:
            _, added = await _call(a, "memory_add", {"content": "Alice's secret project Zephyr"})
        async with _client(gw, b_secret) as b:
            _, found = await _call(b, "memory_search", {"query": "secret project Zephyr"})
            assert found["items"] == []
            _, listed = await _call(b, "memory_list", {"query": "Zephyr"})
            assert listed["total"] == 0
            err, res = await _call(b, "memory_delete", {"id": added["id"]})
            assert err and "not_found" in str(res)
            _, cleared = await _call(b, "memory_clear", {"all": True})
            assert cleared["deleted"] == 0
            # an owner argument is not part of any tool; extra arguments never choose the tenant
            err, res = await _call(b, "memory_list", {"owner_id": a_id})
            assert err or res["total"] == 0

    anyio.run(go)
    assert [m.content for m in gw.memories(a_id)] == ["Alice's secret project Zephyr"]
    assert gw.memories(b_id) == []


def test_unauthenticated_requests_are_401(gw: GatewayHarness) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream"}
    for auth in ({}, {"authorization": "Bearer not-a-key"}):
        r = httpx.post(f"{gw.base_url}/mcp", json=body, headers={**headers, **auth})
        assert r.status_code == 401
        assert r.json()["error"]["type"] == "authentication_error"
