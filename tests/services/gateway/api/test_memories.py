"""REST memory management against a live gateway: CRUD, filters, pagination, bulk delete,
search preview, stats, engine status, jobs, and the auth rules (admin token vs client keys)."""

from __future__ import annotations

import json

import pytest

from shared.models import MAX_MEMORY_CHARS
from tests.harness import GatewayHarness
from tests.services.gateway.api.conftest import ADMIN_TOKEN, Api, client
from tests.waiting import wait_until


def add(http, content: str, **fields: object) -> dict:
    r = http.post("/api/memory", json={"content": content, **fields})
    assert r.status_code in (200, 201), r.text
    return r.json()


def wait_embedded(http, *memories: dict) -> None:
    """Poll until every memory has its vector (the embedding job runs after the write)."""

    def embedded() -> bool:
        got = [http.get(f"/api/memory/{m['id']}").json() for m in memories]
        return not any(m["needs_reindex"] for m in got)

    wait_until(embedded, what="memories embedded")


def test_create_get_update_delete(api: Api) -> None:
    m = add(api.a.http, "I like green tea", category="preference", metadata={"src": "t"})
    assert m["owner_id"] == api.a.key_id and m["needs_reindex"] is True
    assert api.a.http.get(f"/api/memory/{m['id']}").json() == m
    r = api.a.http.patch(
        f"/api/memory/{m['id']}",
        json={"content": "I like black tea", "metadata": {"x": 1}, "expires_at": 4e9},
    )
    assert r.status_code == 200, r.text
    new = r.json()
    assert (new["content"], new["metadata"], new["expires_at"]) == (
        "I like black tea",
        {"x": 1},
        4e9,
    )
    assert new["created_at"] == m["created_at"] and new["updated_at"] >= m["updated_at"]
    assert new["needs_reindex"] is True
    hits = api.a.http.get("/api/memory", params={"q": "black tea"}).json()
    assert [x["id"] for x in hits["items"]] == [m["id"]]
    assert api.a.http.get("/api/memory", params={"q": "green"}).json()["total"] == 0
    r = api.a.http.delete(f"/api/memory/{m['id']}")
    assert r.status_code == 200 and r.json()["deleted"]["id"] == m["id"]
    assert api.a.http.get(f"/api/memory/{m['id']}").status_code == 404


def test_content_longer_than_the_limit_is_refused_everywhere(api: Api) -> None:
    http = api.a.http
    at_limit = "word " * (MAX_MEMORY_CHARS // 5)
    assert len(at_limit) == MAX_MEMORY_CHARS
    m = add(http, at_limit)
    too_long = at_limit + "x"
    r = http.post("/api/memory", json={"content": too_long})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "invalid_request_error"
    r = http.patch(f"/api/memory/{m['id']}", json={"content": too_long})
    assert r.status_code == 400, r.text
    row = {"id": "mem_long", "owner_id": api.a.key_id, "content": too_long, "key": "long"}
    line = json.dumps({**row, "created_at": 1.0, "updated_at": 1.0})
    r = http.post("/api/memory/import", content=line.encode() + b"\n")
    message = r.json()["error"]["message"]
    assert r.status_code == 400 and "length <= 8000" in message and "$.content" in message
    assert [x["id"] for x in http.get("/api/memory").json()["items"]] == [m["id"]]


def test_same_key_updates_and_duplicate_key_edit_is_409(api: Api) -> None:
    first = add(api.a.http, "editor: vim", key="editor")
    r = api.a.http.post("/api/memory", json={"content": "editor: helix", "key": "editor"})
    assert r.status_code == 200 and r.json()["id"] == first["id"]
    other = add(api.a.http, "shell: fish", key="shell")
    r = api.a.http.patch(f"/api/memory/{other['id']}", json={"key": "editor"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "duplicate_key"


def test_list_filters_and_pagination(api: Api) -> None:
    for i in range(7):
        add(api.a.http, f"fact number {i}", category="fact" if i % 2 else "decision", user_id="u1")
    add(api.a.http, "session note", session_id="s1", type="episodic", category="context")
    page = api.a.http.get("/api/memory", params={"limit": 3, "offset": 0}).json()
    assert page["total"] == 8 and len(page["items"]) == 3
    rest = api.a.http.get("/api/memory", params={"limit": 10, "offset": 3}).json()
    assert len(rest["items"]) == 5
    ids = [m["id"] for m in page["items"] + rest["items"]]
    assert len(set(ids)) == 8
    assert api.a.http.get("/api/memory", params={"category": "decision"}).json()["total"] == 4
    assert api.a.http.get("/api/memory", params={"session_id": "s1"}).json()["total"] == 1
    assert api.a.http.get("/api/memory", params={"type": "episodic"}).json()["total"] == 1
    assert api.a.http.get("/api/memory", params={"user_id": "u1"}).json()["total"] == 7
    # raw FTS5 syntax in q is plain text, never a 500
    for q in ['"', "NEAR(", "C++", "what's", "a AND OR", "*"]:
        assert api.a.http.get("/api/memory", params={"q": q}).status_code == 200
    assert api.a.http.get("/api/memory", params={"limit": "x"}).status_code == 400
    assert api.a.http.get("/api/memory", params={"bogus": "1"}).status_code == 400
    assert api.a.http.get("/api/memory", params={"type": "nope"}).status_code == 400


def test_bulk_delete_with_dry_run(api: Api) -> None:
    for i in range(3):
        add(api.a.http, f"pref {i}", category="preference")
    add(api.a.http, "a decision", category="decision")
    b_mem = add(api.b.http, "b pref", category="preference")
    r = api.a.http.post("/api/memory/bulk-delete", json={"category": "preference", "dry_run": True})
    assert r.json() == {"matched": 3, "deleted": 0, "dry_run": True}
    r = api.a.http.post("/api/memory/bulk-delete", json={"category": "preference"})
    assert r.json() == {"matched": 3, "deleted": 3, "dry_run": False}
    assert api.a.http.get("/api/memory").json()["total"] == 1
    assert api.b.http.get(f"/api/memory/{b_mem['id']}").status_code == 200
    # admin: an unfiltered bulk delete must be explicit
    assert api.admin.post("/api/memory/bulk-delete", json={}).status_code == 400
    r = api.admin.post("/api/memory/bulk-delete", json={"all": True, "dry_run": True})
    assert r.json()["matched"] == 2


def _is_error(r, status: int) -> bool:
    return r.status_code == status and set(r.json()["error"]) == {"message", "type", "code"}


def test_unfiltered_bulk_delete_needs_all_for_every_caller(api: Api) -> None:
    for i in range(3):
        add(api.a.http, f"a memory {i}")
    b_mem = add(api.b.http, "b memory")
    glob = add(api.admin, "a global memory", owner_id="global")
    # a client key: {} and naming its own owner id are both "no filter"
    for body in ({}, {"owner_id": api.a.key_id}, {"q": "  "}, {"all": False}):
        r = api.a.http.post("/api/memory/bulk-delete", json=body)
        assert _is_error(r, 400), (body, r.text)
        assert r.json()["error"]["type"] == "invalid_request_error"
        assert "'all': true" in r.json()["error"]["message"]
    assert api.a.http.get("/api/memory", params={"owner_id": api.a.key_id}).json()["total"] == 3
    # a dry run deletes nothing, so it needs no "all"
    r = api.a.http.post("/api/memory/bulk-delete", json={"dry_run": True})
    assert r.status_code == 200 and r.json() == {"matched": 3, "deleted": 0, "dry_run": True}
    r = api.a.http.post("/api/memory/bulk-delete", json={"all": True})
    assert r.json() == {"matched": 3, "deleted": 3, "dry_run": False}
    assert api.a.http.get("/api/memory", params={"owner_id": api.a.key_id}).json()["total"] == 0
    assert api.b.http.get(f"/api/memory/{b_mem['id']}").status_code == 200
    assert api.admin.get(f"/api/memory/{glob['id']}").status_code == 200
    # the admin: same rule (an owner_id is a filter for the admin)
    assert _is_error(api.admin.post("/api/memory/bulk-delete", json={}), 400)
    r = api.admin.post("/api/memory/bulk-delete", json={"owner_id": api.b.key_id})
    assert r.json()["deleted"] == 1


def test_offset_is_validated_and_export_refuses_paging(api: Api) -> None:
    add(api.a.http, "one memory")
    for offset in ("99999999999999999999999", "1000000000001", "-1", "x", "1.5"):
        r = api.a.http.get("/api/memory", params={"offset": offset})
        assert _is_error(r, 400), (offset, r.text)
    r = api.a.http.get("/api/memory", params={"offset": 10**12})
    assert r.status_code == 200 and r.json()["items"] == [] and r.json()["offset"] == 10**12
    assert api.a.http.get("/api/memory", params={"limit": 10**30}).json()["limit"] == 1000
    for params in ({"offset": 1}, {"limit": 1}, {"offset": "99999999999999999999999"}):
        r = api.a.http.get("/api/memory/export", params=params)
        assert _is_error(r, 400), (params, r.text)
        assert "not supported" in r.json()["error"]["message"]
    assert len(api.a.http.get("/api/memory/export").text.splitlines()) == 1
    doc = api.a.http.get("/api/openapi.json").json()
    export_params = {p["name"] for p in doc["paths"]["/api/memory/export"]["get"]["parameters"]}
    assert not export_params & {"limit", "offset"}
    (offset,) = [
        p for p in doc["paths"]["/api/memory"]["get"]["parameters"] if p["name"] == "offset"
    ]
    assert offset["schema"]["minimum"] == 0 and offset["schema"]["maximum"] == 10**12
    bulk = doc["components"]["schemas"]["BulkDelete"]["description"]
    assert "all: true" in bulk


def test_search_preview_uses_recall(api: Api) -> None:
    tea = add(api.a.http, "I like green tea in the morning", category="preference")
    deploy = add(api.a.http, "The deploy runs on Fridays", category="fact")
    wait_embedded(api.a.http, tea, deploy)  # else the vector leg has nothing yet: tier fts5
    r = api.a.http.post(
        "/api/memory/search-preview", json={"query": "what tea do I like?", "budget": 500}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    # the preview runs recall with the gateway's engine, as a chat request does
    assert body["tier"] == "hybrid" and body["budget"] == 500
    assert [i["memory"]["id"] for i in body["items"]] == [tea["id"]]
    item = body["items"][0]
    assert item["keyword_rank"] == 1 and item["vector_rank"] is not None
    assert "I like green tea in the morning" in body["block"] and body["dropped"] is None
    assert item["tokens"] > 0 and item["score"] is not None and item["rank"] == 1
    assert body["tokens_used"] == item["tokens"]
    r = api.a.http.post("/api/memory/search-preview", json={"query": "tea", "budget": 0})
    assert r.json()["items"] == []
    # admin must pick one tenant
    r = api.admin.post("/api/memory/search-preview", json={"query": "tea"})
    assert r.status_code == 400
    r = api.admin.post(
        "/api/memory/search-preview", json={"query": "tea", "owner_id": api.a.key_id}
    )
    assert len(r.json()["items"]) == 1
    assert api.a.http.post("/api/memory/search-preview", json={}).status_code == 400


def test_stats_and_engine(api: Api) -> None:
    add(api.a.http, "one", category="preference", type="factual")
    add(api.a.http, "two", category="decision")
    add(api.b.http, "three", category="fact")
    stats = api.a.http.get("/api/memory/stats").json()
    assert stats["total"] == 2 and stats["by_category"] == {"preference": 1, "decision": 1}
    assert stats["by_type"] == {"factual": 1, "semantic": 1} and stats["tokens_stored"] > 0
    assert isinstance(stats["events"], dict)
    assert api.admin.get("/api/memory/stats").json()["total"] == 3
    assert (
        api.admin.get("/api/memory/stats", params={"owner_id": api.b.key_id}).json()["total"] == 1
    )
    engine = api.admin.get("/api/engine").json()
    assert engine["keyword"]["engine"] == "fts5" and engine["keyword"]["indexed"] == 3
    assert 0 <= engine["pending_reindex"] <= 3  # the embed jobs may already have run
    assert set(engine) >= {"embedding", "vector", "qdrant"}
    # a client key sees the engine, not how many memories other tenants hold
    seen_by_client = api.a.http.get("/api/engine").json()
    assert seen_by_client["keyword"]["indexed"] is None and seen_by_client["memories"] is None
    assert seen_by_client["embedding"]["source"] == engine["embedding"]["source"]


def test_jobs_never_span_tenants(api: Api) -> None:
    # summarize needs exactly one owner: the admin must name it
    r = api.admin.post("/api/summarize", json={"older_than_days": 7})
    assert r.status_code == 400
    r = api.a.http.post("/api/summarize", json={"owner_id": api.b.key_id})
    assert r.status_code == 404
    r = api.a.http.post("/api/summarize", json={"older_than_days": 0})
    assert r.status_code == 400
    for path in ("/api/summarize", "/api/reindex"):
        r = api.a.http.post(path, json={})
        assert r.status_code in (202, 503), r.text
        if r.status_code == 202:
            assert r.json()["owner_id"] == api.a.key_id


def test_auth_rules(api: Api) -> None:
    assert api.anonymous.get("/api/memory").status_code == 401
    bad = client(api.gateway.base_url, "wrong")
    assert bad.get("/api/memory").status_code == 401
    assert bad.get("/api/memory").json()["error"]["type"] == "authentication_error"
    # admin creating needs an owner; may create global memories
    assert api.admin.post("/api/memory", json={"content": "x"}).status_code == 400
    g = add(api.admin, "Company holidays are listed on the wiki", owner_id="global")
    # clients read global memories...
    assert api.a.http.get(f"/api/memory/{g['id']}").status_code == 200
    assert api.a.http.get("/api/memory", params={"owner_id": "global"}).json()["total"] == 1
    # ...but cannot change them (403: visible, read-only)
    assert api.a.http.patch(f"/api/memory/{g['id']}", json={"content": "y"}).status_code == 403
    assert api.a.http.delete(f"/api/memory/{g['id']}").status_code == 403
    r = api.a.http.post("/api/memory", json={"content": "x", "owner_id": "global"})
    assert r.status_code == 403
    # settings are admin-only
    assert api.a.http.get("/api/settings").status_code == 403
    assert api.anonymous.get("/api/settings").status_code == 401


def test_no_admin_token_means_admin_off(gateway_factory) -> None:
    gw: GatewayHarness = gateway_factory()
    _, secret = gw.create_key("a")
    for token in ("", ADMIN_TOKEN):
        http = client(gw.base_url, token or None)
        assert http.get("/api/memory").status_code == 401
        assert http.get("/api/settings").status_code == 401
    mine = client(gw.base_url, secret)
    assert mine.post("/api/memory", json={"content": "still works"}).status_code == 201
    assert mine.get("/api/memory").json()["total"] == 1
    assert mine.get("/api/settings").status_code == 401


def test_secrets_in_api_writes_are_redacted(api: Api) -> None:
    r = api.a.http.post("/api/memory", json={"content": "My password is hunter4, mail a@b.io"})
    assert r.status_code == 201
    stored = r.json()
    assert stored["content"] == "My password is [secret], mail [email]"
    r = api.a.http.patch(
        f"/api/memory/{stored['id']}", json={"content": "card 4111 1111 1111 1111"}
    )
    assert r.json()["content"] == "card [card]"


def test_control_characters_become_spaces_on_create_and_update(api: Api) -> None:
    m = add(api.a.http, "manual\u0000nul\u0007fact")
    assert m["content"] == "manual nul fact"
    r = api.a.http.patch(f"/api/memory/{m['id']}", json={"content": "Nul\u0000Bob\x1b[31m"})
    assert r.status_code == 200 and r.json()["content"] == "Nul Bob [31m"
    r = api.a.http.post("/api/memory", json={"content": "\u0000\u0007 "})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("user_id", "a\nb", "$.user_id"),
        ("user_id", "al\u0000ice", "$.user_id"),
        ("user_id", "u" * 4097, "$.user_id"),
        ("session_id", "s\tx", "$.session_id"),
        ("session_id", "s\u0085x", "$.session_id"),
        ("session_id", "s" * 257, "$.session_id"),
        ("relevance", -5, "$.relevance"),
        ("relevance", 1e308, "$.relevance"),
    ],
)
def test_a_memory_no_request_could_recall_is_refused(
    api: Api, field: str, value: object, says: str
) -> None:
    # the chat routes refuse such end-user ids, so a memory stored under one is never recalled
    r = api.a.http.post("/api/memory", json={"content": "I like tea", field: value})
    assert r.status_code == 400 and says in r.json()["error"]["message"], r.text
    assert api.a.http.get("/api/memory").json()["total"] == 0
    ok = api.a.http.post("/api/memory", json={"content": "I like tea", "user_id": "  bob "})
    assert ok.status_code == 201 and ok.json()["user_id"] == "bob"  # as the chat routes read it


def test_a_session_id_is_stored_as_the_chat_routes_read_it(api: Api) -> None:
    r = api.a.http.post("/api/memory", json={"content": "I like tea", "session_id": "  s-1 "})
    assert r.status_code == 201 and r.json()["session_id"] == "s-1"
    r = api.a.http.post("/api/memory", json={"content": "I like coffee", "session_id": "   "})
    assert r.status_code == 201 and r.json()["session_id"] is None
    r = api.a.http.post("/api/memory", json={"content": "I like cocoa", "session_id": "s" * 256})
    assert r.status_code == 201 and r.json()["session_id"] == "s" * 256


@pytest.mark.parametrize(
    "raw",
    [
        b'{"content": "I like tea \\ud800 x"}',
        b'{"content": "I like tea \\udbff"}',
        b'{"content": "I like tea \\ud83d\\u0041"}',
    ],
)
def test_a_lone_surrogate_is_named_in_the_error(api: Api, raw: bytes) -> None:
    r = api.a.http.post("/api/memory", content=raw, headers={"content-type": "application/json"})
    error = r.json()["error"]
    assert r.status_code == 400 and error["code"] == "invalid_json", r.text
    assert "lone surrogate" in error["message"] and "truncated" not in error["message"]
    assert api.a.http.get("/api/memory").json()["total"] == 0
