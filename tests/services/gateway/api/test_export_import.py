"""Export of 10,000 memories as JSON Lines, import into an empty database: content, metadata,
times and search context are reproduced, every row is marked for the vector tier rebuild, and
import is idempotent."""

from __future__ import annotations

import json
from collections.abc import Awaitable

import httpx

from shared.models import Memory, NewMemory
from shared.store import Store
from shared.store.memories.admin import MemoryFilter
from shared.store.memories.export_import import ImportRow
from tests.harness import GatewayHarness
from tests.services.gateway.api.conftest import ADMIN_TOKEN, client
from tests.waiting import READY_TIMEOUT_S

N = 10_000


def _seed(store: Store, owners: list[str]) -> Awaitable[None]:
    async def go() -> None:
        for i in range(N):
            await store.writes.upsert(
                NewMemory(
                    owner_id=owners[i % len(owners)],
                    content=f"memory {i}: the user likes item {i} — ünïcode 绿茶",
                    user_id="" if i % 3 else f"user{i % 7}",
                    session_id=None if i % 5 else f"s{i}",
                    type=("factual", "episodic", "procedural", "semantic")[i % 4],
                    category=("preference", "fact", "turn")[i % 3],
                    key=f"k{i}",
                    metadata={"i": i, "tags": ["a", str(i)], "nested": {"x": i / 3}},
                    expires_at=None if i % 2 else 4e9 + i,
                    context="" if i % 4 else f"turn before {i}\nturn after {i} — ünïcode",
                ),
                now=1.7e9 + i,
            )

    return go()


def test_export_then_import_into_empty_database(gateway_factory, tmp_path) -> None:
    src: GatewayHarness = gateway_factory(
        admin_token=ADMIN_TOKEN, db_path=str(tmp_path / "a.db"), embedding_source="none"
    )
    owners = [src.create_key("a")[0], src.create_key("b")[0], "global"]
    src.with_store(lambda store: _seed(store, owners))
    original = {m.public_id: m for m in src.memories()}  # first 1000 by recency; check all below

    admin = client(src.base_url, ADMIN_TOKEN)
    with admin.stream("GET", "/api/memory/export") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/x-ndjson")
        assert "content-length" not in r.headers  # streamed
        body = b"".join(r.iter_bytes())
    lines = body.splitlines()
    assert len(lines) == N

    dst: GatewayHarness = gateway_factory(
        # no embedding source: the flags stay set for this assertion (the reindex job clears them)
        admin_token=ADMIN_TOKEN,
        db_path=str(tmp_path / "b.db"),
        embedding_source="none",
    )
    dst_admin = client(dst.base_url, ADMIN_TOKEN)
    r = dst_admin.post("/api/memory/import", content=body)
    assert r.status_code == 200, r.text
    assert r.json() == {"written": N, "skipped": 0, "lines": N}

    async def all_rows(store: Store) -> list[tuple[Memory, str]]:
        rows = []
        async for batch in store.exports.batches(MemoryFilter(owners=None)):
            rows.extend(batch)
        return rows

    before = {m.public_id: (m, c) for m, c in src.with_store(all_rows)}
    after = {m.public_id: (m, c) for m, c in dst.with_store(all_rows)}
    assert len(before) == len(after) == N
    fields = [f for f in ImportRow.__struct_fields__ if f not in ("id", "context")]
    for pid, (old, old_context) in before.items():
        new, new_context = after[pid]
        for f in fields:
            assert getattr(new, f) == getattr(old, f), (pid, f)
        assert new_context == old_context, pid  # the search context travels too
        assert new.needs_reindex  # the vector tier is rebuilt from these flags
    assert sum(1 for _, c in after.values() if c) == N // 4
    assert set(original) <= set(after)

    # imported rows are searchable (FTS index built on import)
    hits = dst_admin.get("/api/memory", params={"q": "item 4242"}).json()
    assert any(m["content"].startswith("memory 4242:") for m in hits["items"])
    assert dst_admin.get("/api/engine").json()["pending_reindex"] == N

    # idempotent: a second import writes the same rows again, nothing duplicated
    r = dst_admin.post("/api/memory/import", content=body)
    assert r.json()["written"] == N
    assert dst_admin.get("/api/memory/stats").json()["total"] == N
    again = json.loads(lines[123])
    assert dst_admin.get(f"/api/memory/{again['id']}").json()["content"] == again["content"]


def test_client_export_is_own_and_import_rejects_bad_lines(gateway_factory) -> None:
    gw: GatewayHarness = gateway_factory(admin_token=ADMIN_TOKEN)
    _, secret = gw.create_key("a")
    http = client(gw.base_url, secret)
    http.post("/api/memory", json={"content": "mine"})
    client(gw.base_url, ADMIN_TOKEN).post(
        "/api/memory", json={"content": "global one", "owner_id": "global"}
    )
    lines = http.get("/api/memory/export").text.splitlines()
    assert [json.loads(x)["content"] for x in lines] == ["mine"]
    r = http.post("/api/memory/import", content=b'{"id": "x"}\n')
    assert r.status_code == 400 and "line 1" in r.json()["error"]["message"]
    r = http.post("/api/memory/import", content=b"not json\n")
    assert r.status_code == 400
    global_line = json.dumps(
        {
            "id": "mem_g",
            "owner_id": "global",
            "content": "c",
            "key": "k",
            "created_at": 1.0,
            "updated_at": 1.0,
        }
    )
    assert http.post("/api/memory/import", content=global_line.encode()).status_code == 403


def test_import_is_embedded_by_a_real_worker(
    gateway_factory, upstream, redis_url, worker_process, tmp_path
) -> None:
    """The vector tier of imported memories is rebuilt by the worker (reindex job → embed)."""
    import time

    embed = {
        "embedding_source": "remote",
        "embedding_base_url": upstream.base_url,
        "embedding_model": "fake-embed",
    }
    src: GatewayHarness = gateway_factory(
        admin_token=ADMIN_TOKEN, db_path=str(tmp_path / "src.db"), embedding_source="none"
    )
    owner = src.create_key("a")[0]

    async def seed(store: Store) -> None:
        await store.writes.upsert_many(
            [NewMemory(owner_id=owner, content=f"imported fact number {i}") for i in range(300)]
        )

    src.with_store(seed)
    body = client(src.base_url, ADMIN_TOKEN).get("/api/memory/export").content

    db = str(tmp_path / "dst.db")
    dst: GatewayHarness = gateway_factory(
        admin_token=ADMIN_TOKEN, db_path=db, redis_url=redis_url, **embed
    )
    dst.with_store(lambda store: store.memories.count())  # migrated before the worker starts
    worker_process(db, **{k: str(v) for k, v in embed.items()})
    r = client(dst.base_url, ADMIN_TOKEN).post("/api/memory/import", content=body)
    assert r.json()["written"] == 300

    async def vec_state(store: Store) -> tuple[int, int]:
        rows = await store.reader.execute_fetchall("SELECT COUNT(*) FROM vec_memories")
        return await store.memories.count_pending_reindex(), int(next(iter(rows))[0])

    deadline = time.monotonic() + READY_TIMEOUT_S
    state = (-1, -1)
    while time.monotonic() < deadline:
        try:
            state = dst.with_store(vec_state)
        except Exception:  # the worker has not built the vector table yet
            state = (-1, -1)
        if state == (0, 300):
            break
        time.sleep(0.3)
    assert state == (0, 300), state


def test_an_import_line_follows_the_rules_of_every_write(gateway_factory) -> None:
    gw: GatewayHarness = gateway_factory(admin_token=ADMIN_TOKEN)
    key_id, secret = gw.create_key("a")
    http = client(gw.base_url, secret)
    base = {
        "id": "mem_rules",
        "owner_id": key_id,
        "content": "I like tea",
        "key": "k",
        "created_at": 1.7e9,
        "updated_at": 1.7e9,
    }
    for field, value in [
        ("content", ""),
        ("content", "\u0001 \u0007"),
        ("user_id", "u\u0000"),
        ("user_id", "u" * 4097),
        ("session_id", "s" * 400),
        ("session_id", "s\tx"),
        ("key", "k\u0000y"),
        ("key", "k" * 513),
        ("relevance", 1e308),
        ("relevance", -1.0),
        ("created_at", -1e308),
        ("expires_at", 1e300),
    ]:
        line = json.dumps({**base, field: value}).encode()
        r = http.post("/api/memory/import", content=line)
        error = r.json()["error"]
        assert r.status_code == 400 and error["code"] == "invalid_import_line", (field, r.text)
        assert "line 1" in error["message"] and field in error["message"], (field, error)
        assert "not valid JSON" not in error["message"], error
    assert http.get("/api/memory").json()["total"] == 0
    line = json.dumps({**base, "session_id": "  s1  ", "user_id": " bob "}).encode()
    assert http.post("/api/memory/import", content=line).status_code in (200, 201)
    [stored] = http.get("/api/memory", params={"user_id": "bob"}).json()["items"]
    assert stored["session_id"] == "s1" and stored["user_id"] == "bob"


def test_edit_and_create_refuse_what_no_request_could_use(gateway_factory) -> None:
    gw: GatewayHarness = gateway_factory()
    _, secret = gw.create_key("a")
    http = client(gw.base_url, secret)
    made = http.post("/api/memory", json={"content": "I like tea", "key": "tea"}).json()
    for change in (
        {"relevance": -1},
        {"relevance": 1e308},
        {"key": "k\u0000y"},
        {"key": "k" * 513},
        {"expires_at": -5},
    ):
        r = http.patch(f"/api/memory/{made['id']}", json=change)
        assert r.status_code == 400, (change, r.text)
        r = http.post("/api/memory", json={"content": "I like coffee", **change})
        assert r.status_code == 400, (change, r.text)
    assert http.get(f"/api/memory/{made['id']}").json()["relevance"] == 1.0
    assert http.get("/api/memory").json()["total"] == 1
    assert http.patch(f"/api/memory/{made['id']}", json={"relevance": 0.5}).status_code == 200


def test_a_turn_found_by_its_context_is_found_after_export_and_import(
    gateway_factory, upstream, tmp_path
) -> None:
    """The context of a learned turn (the turns around it) is exported and imported with it."""
    src: GatewayHarness = gateway_factory(db_path=str(tmp_path / "a.db"), embedding_source="none")
    key_id, secret = src.create_key("a")

    async def seed(store: Store) -> None:
        await store.writes.upsert(
            NewMemory(
                owner_id=key_id,
                content="It took me four hours but it was worth it",
                category="turn",
                source="learned",
                context="My grandmother taught me her lasagna recipe\nI tried it on Sunday",
            )
        )

    src.with_store(seed)
    body = client(src.base_url, secret).get("/api/memory/export").content
    assert b"lasagna" in body

    dst: GatewayHarness = gateway_factory(db_path=str(tmp_path / "b.db"), embedding_source="none")
    dst_key_id, dst_secret = dst.create_key("a")  # a new database: the rows move to a new key

    def ask(gw: GatewayHarness, token: str) -> str:
        question = "How long does the lasagna recipe take?"
        r = httpx.post(
            gw.base_url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {token}", "x-mnemogate-no-learn": "1"},
            json={"model": "m", "messages": [{"role": "user", "content": question}]},
            timeout=READY_TIMEOUT_S,
        )
        assert r.status_code == 200, r.text
        return str(upstream.requests[-1]["messages"])

    assert "four hours" in ask(src, secret)  # found only through its context
    rows = [json.loads(x) | {"owner_id": dst_key_id} for x in body.splitlines()]
    lines = b"\n".join(json.dumps(x).encode() for x in rows)
    r = client(dst.base_url, dst_secret).post("/api/memory/import", content=lines)
    assert r.status_code == 200 and r.json()["written"] == 1, r.text
    assert "four hours" in ask(dst, dst_secret)
