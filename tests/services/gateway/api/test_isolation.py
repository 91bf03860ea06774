"""Tenant isolation through REST: key B can never read, change, delete, export, import over or
search key A's memories, whatever ids or arguments it sends (other owners' ids are 404)."""

from __future__ import annotations

import json

from tests.services.gateway.api.conftest import Api


def test_key_b_cannot_touch_key_a(api: Api) -> None:
    a, b = api.a, api.b
    r = a.http.post(
        "/api/memory",
        json={"content": "Alice's launch code is Zephyr", "key": "launch", "user_id": "alice"},
    )
    mem = r.json()
    mid = mem["id"]
    # by id: read, update, delete → 404 (not 403)
    assert b.http.get(f"/api/memory/{mid}").status_code == 404
    assert b.http.patch(f"/api/memory/{mid}", json={"content": "pwned"}).status_code == 404
    assert b.http.delete(f"/api/memory/{mid}").status_code == 404
    # naming A as owner anywhere → 404
    owner = {"owner_id": a.key_id}
    assert b.http.get("/api/memory", params=owner).status_code == 404
    assert b.http.get("/api/memory/export", params=owner).status_code == 404
    assert b.http.get("/api/memory/stats", params=owner).status_code == 404
    assert b.http.post("/api/memory", json={"content": "x", **owner}).status_code == 404
    assert b.http.post("/api/memory/bulk-delete", json=owner).status_code == 404
    r = b.http.post("/api/memory/search-preview", json={"query": "launch code", **owner})
    assert r.status_code == 404
    assert b.http.post("/api/reindex", json=owner).status_code in (404,)
    assert b.http.post("/api/summarize", json=owner).status_code == 404
    # B's own views never contain A's rows
    assert b.http.get("/api/memory", params={"q": "Zephyr launch"}).json()["total"] == 0
    assert b.http.get("/api/memory", params={"user_id": "alice"}).json()["total"] == 0
    assert b.http.get("/api/memory/export").text == ""
    r = b.http.post("/api/memory/search-preview", json={"query": "launch code Zephyr"})
    assert r.json()["items"] == []
    r = b.http.post("/api/memory/search-preview", json={"query": "Zephyr", "user_id": "alice"})
    assert r.json()["items"] == []
    assert b.http.post("/api/memory/bulk-delete", json={"all": True}).json()["deleted"] == 0
    assert b.http.get("/api/memory/stats").json()["total"] == 0
    # import: rows of another owner are refused; reusing A's public id under B is skipped
    line = json.dumps({**_export_row(mem), "content": "overwritten"})
    r = b.http.post("/api/memory/import", content=line.encode())
    assert r.status_code == 404
    line = json.dumps({**_export_row(mem), "owner_id": b.key_id, "content": "overwritten"})
    r = b.http.post("/api/memory/import", content=line.encode())
    assert r.status_code == 200 and r.json()["written"] == 0 and r.json()["skipped"] == 1
    # A's memory is intact
    assert a.http.get(f"/api/memory/{mid}").json()["content"] == "Alice's launch code is Zephyr"
    assert api.admin.get(f"/api/memory/{mid}").json()["owner_id"] == a.key_id


def _export_row(mem: dict) -> dict:
    drop = {"needs_reindex"}
    return {k: v for k, v in mem.items() if k not in drop}
