"""``GET /api/events`` (filters, paging, tenant isolation, no job payloads) and the search
preview's explanation (per-leg ranks, block text, dropped candidates with their reason)."""

from __future__ import annotations

import time

from shared.store import Store
from tests.services.gateway.api.conftest import Api


def record(api: Api, kind: str, owner: str, **fields: object) -> None:
    async def go(store: Store) -> None:
        await store.events.record(kind, owner, **fields)  # type: ignore[arg-type]

    api.gateway.with_store(go)


def test_events_filters_paging_and_isolation(api: Api) -> None:
    t0 = time.time()
    for i in range(5):
        record(api, "injection", api.a.key_id, user_id="u1", count=i + 1, now=t0 + i)
    record(api, "eviction", api.a.key_id, detail={"reason": "expired"}, now=t0 + 10)
    record(api, "injection", api.b.key_id, now=t0 + 11)
    record(
        api,
        "dead_letter",
        "system",
        detail={"job": "learn", "payload_hex": "6d656d6f7279", "error": "boom"},
        now=t0 + 12,
    )
    page = api.admin.get("/api/events").json()
    assert page["total"] == 8 and [e["kind"] for e in page["items"]][:2] == [
        "dead_letter",
        "injection",
    ]
    dead = page["items"][0]
    assert dead["detail"] == {"job": "learn", "error": "boom"}  # never the payload
    # a client key: its own owner's events only, another owner is 404
    mine = api.a.http.get("/api/events").json()
    assert mine["total"] == 6 and {e["owner_id"] for e in mine["items"]} == {api.a.key_id}
    assert api.a.http.get("/api/events", params={"owner_id": api.b.key_id}).status_code == 404
    assert api.b.http.get("/api/events").json()["total"] == 1
    # filters and paging
    r = api.a.http.get("/api/events", params={"kind": "injection", "limit": 2, "offset": 1})
    body = r.json()
    assert body["total"] == 5 and [e["count"] for e in body["items"]] == [4, 3]
    both = api.admin.get("/api/events", params={"kind": "eviction,dead_letter"}).json()
    assert both["total"] == 2
    since = api.admin.get("/api/events", params={"since": t0 + 10, "until": t0 + 12}).json()
    assert [e["kind"] for e in since["items"]] == ["injection", "eviction"]
    assert api.admin.get("/api/events", params={"user_id": "u1"}).json()["total"] == 5
    assert api.admin.get("/api/events", params={"limit": 10**6}).json()["limit"] == 500
    # an empty window (since after until) is a valid query that matches nothing
    empty = api.admin.get("/api/events", params={"since": t0 + 12, "until": t0 + 10}).json()
    assert empty["items"] == [] and empty["total"] == 0
    for bad in ({"offset": -1}, {"nope": 1}, {"limit": "x"}):
        r = api.admin.get("/api/events", params=bad)
        assert r.status_code == 400 and r.json()["error"]["type"], bad
    assert api.anonymous.get("/api/events").status_code == 401


def test_settings_change_is_an_event(api: Api) -> None:
    r = api.admin.put("/api/settings", json={"recall_top_k": 15})
    assert r.status_code == 200
    (event,) = api.admin.get("/api/events", params={"kind": "settings_change"}).json()["items"]
    assert event["owner_id"] == "system" and event["detail"] == {"fields": ["recall_top_k"]}


def test_preview_explains_drops(api: Api) -> None:
    def add(content: str) -> str:
        r = api.a.http.post("/api/memory", json={"content": content})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    tea = add("I drink green tea every morning with honey")
    dup = add("i drink GREEN tea every   morning with honey")
    add("Tea plantations in Sri Lanka are beautiful in spring and summer and autumn and winter")
    add("Morning")
    body = {"query": "green tea morning honey", "strategy": "exact", "explain": True}
    r = api.a.http.post("/api/memory/search-preview", json={**body, "budget": 2000})
    result = r.json()
    assert result["items"][0]["memory"]["id"] in (tea, dup)
    reasons = {d["memory"]["id"]: d["reason"] for d in result["dropped"]}
    assert reasons.get(dup if result["items"][0]["memory"]["id"] == tea else tea) == "duplicate"
    assert "floor" in reasons.values()  # the long, weakly matching one is under the floor
    assert not set(reasons) & {i["memory"]["id"] for i in result["items"]}
    assert len(result["items"]) + len(reasons) == 4
    for item in result["items"]:
        assert item["keyword_rank"] >= 1 and item["vector_rank"] is None
        assert " ".join(item["memory"]["content"].split()) in result["block"]
    assert result["block"].startswith("<recalled_memories>")
    # a budget smaller than every memory: none is taken, not even the best (the budget is a
    # limit), and each is dropped for it
    tight = api.a.http.post("/api/memory/search-preview", json={**body, "budget": 1}).json()
    assert tight["items"] == []
    assert "budget" in {d["reason"] for d in tight["dropped"]}
    # without explain: no dropped list
    plain = api.a.http.post("/api/memory/search-preview", json={"query": "green tea"}).json()
    assert plain["dropped"] is None


def test_preview_explains_a_hit_recall_screened_out(api: Api) -> None:
    r = api.a.http.post("/api/memory", json={"content": "My dog Rex sleeps on the sofa"})
    assert r.status_code == 201, r.text
    dog = str(r.json()["id"])
    # a query of several terms about something else, sharing one word with the only memory:
    # recall injects nothing, and the preview says why rather than blaming the budget
    body = {"query": "Is a hot dog a sandwich in culinary terms?", "explain": True}
    result = api.a.http.post("/api/memory/search-preview", json={**body, "strategy": "exact"})
    assert result.status_code == 200, result.text
    explained = result.json()
    assert explained["items"] == []
    assert {d["memory"]["id"]: d["reason"] for d in explained["dropped"]} == {dog: "screened"}
    # the same memory asked about by a query that speaks of the user is recalled
    mine = {"query": "What does my dog do on the sofa?", "strategy": "exact", "explain": True}
    found = api.a.http.post("/api/memory/search-preview", json=mine).json()
    assert [i["memory"]["id"] for i in found["items"]] == [dog]


def test_preview_explains_someone_elses_memory_as_screened(api: Api) -> None:
    r = api.a.http.post("/api/memory", json={"content": "My sister is called Anna"})
    assert r.status_code == 201, r.text
    sister = str(r.json()["id"])
    body = {"query": "What is my dog called?", "strategy": "exact", "explain": True}
    explained = api.a.http.post("/api/memory/search-preview", json=body).json()
    assert explained["items"] == []
    assert {d["memory"]["id"]: d["reason"] for d in explained["dropped"]} == {sister: "screened"}
    asked = {**body, "query": "What is my sister called?"}
    found = api.a.http.post("/api/memory/search-preview", json=asked).json()
    assert [i["memory"]["id"] for i in found["items"]] == [sister]
