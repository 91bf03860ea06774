"""Admin JSONL import runs the same sensitive-content redaction as learning; ``verbatim=true``
keeps the text exactly (an explicit, documented choice)."""

from __future__ import annotations

import json

SECRET = "ghp_" + "Zq7" * 12


def test_admin_import_redacts_unless_verbatim(api) -> None:
    row = {
        "id": "mem_imp1",
        "owner_id": api.a.key_id,
        "content": f"User's token is {SECRET} and mail jane.doe@example.com",
        "key": "imp1",
        "created_at": 1.0,
        "updated_at": 1.0,
    }
    resp = api.admin.post("/api/memory/import", content=json.dumps(row).encode())
    assert resp.status_code == 200 and resp.json()["written"] == 1
    (stored,) = [m for m in api.gateway.memories(api.a.key_id) if m.key == "imp1"]
    assert stored.content == "User's token is [api_key] and mail [email]"

    verbatim = {**row, "id": "mem_imp2", "key": "imp2"}
    resp = api.admin.post(
        "/api/memory/import", params={"verbatim": "true"}, content=json.dumps(verbatim).encode()
    )
    assert resp.status_code == 200 and resp.json()["written"] == 1
    (kept,) = [m for m in api.gateway.memories(api.a.key_id) if m.key == "imp2"]
    assert kept.content == verbatim["content"]
    bad = api.admin.post("/api/memory/import", params={"verbatim": "maybe"}, content=b"")
    assert bad.status_code == 400
