"""Qdrant as the vector tier through a live gateway (dual-write, fallback, deletes by any path).

Embedded-mode gateways (jobs run in the gateway process) with remote embeddings from the fake
upstream (``/v1/embeddings``: hashed bag-of-words vectors). Qdrant is either qdrant-client's local
mode (``MNEMOGATE_QDRANT_URL=:memory:``; it lives inside the gateway process, so the test reads it
through the gateway's own engine) or the fake Qdrant REST server (real HTTP on 127.0.0.1) that
fails or hangs on demand.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from services.gateway.state import state_of_app
from shared.models import NewMemory
from shared.vector_index.qdrant import QdrantVectorIndex
from tests.fakes.qdrant import FakeQdrant
from tests.harness import GatewayHarness, run_sync
from tests.lifecycle_seed import DAY, fts_rows, ids, query
from tests.waiting import READY_TIMEOUT_S

CHAT = "/v1/chat/completions"
COLLECTION = "mem_test"
NO_LEARN = {"x-mnemogate-no-learn": "1"}

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect:UserWarning",
    "ignore:Local mode performs exact:UserWarning",
)


def qdrant_settings(upstream: Any, url: str = ":memory:", **extra: Any) -> dict[str, Any]:
    return {
        "embedding_source": "remote",
        "embedding_base_url": upstream.base_url,
        "embedding_model": "fake-embed",
        "embedding_timeout_s": 30.0,  # generous: a loaded machine is slow, not failing
        "vector_min_similarity": 0.05,  # hashed bag-of-words vectors are noisy
        "vector_tier": "qdrant",
        "qdrant_url": url,
        "qdrant_collection": COLLECTION,
        **extra,
    }


def ask(gw: GatewayHarness, secret: str, text: str, **body: Any) -> httpx.Response:
    resp = httpx.post(
        gw.base_url + CHAT,
        headers={"authorization": f"Bearer {secret}", **NO_LEARN},
        json={"model": "m", "messages": [{"role": "user", "content": text}], **body},
        timeout=READY_TIMEOUT_S,
    )
    assert resp.status_code == 200, resp.text
    return resp


def injected(upstream: Any) -> str:
    return str([m for m in upstream.requests[-1]["messages"] if "recalled" in str(m)])


def api(gw: GatewayHarness, secret: str) -> httpx.Client:
    return httpx.Client(
        base_url=gw.base_url, headers={"authorization": f"Bearer {secret}"}, timeout=READY_TIMEOUT_S
    )


def wait_until(cond: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + max(timeout_s, READY_TIMEOUT_S)
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def local_qdrant(gw: GatewayHarness) -> QdrantVectorIndex:
    engine = state_of_app(gw.app).runtime.engine
    assert isinstance(engine.qdrant, QdrantVectorIndex)
    return engine.qdrant


def qdrant_ids(gw: GatewayHarness) -> set[int]:
    """Point ids in the gateway's local-mode Qdrant (plain in-memory data: readable from here)."""
    qdrant = local_qdrant(gw)

    async def go() -> set[int]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not await qdrant.client.collection_exists(COLLECTION):
                return set()
            points, _ = await qdrant.client.scroll(COLLECTION, limit=10_000, with_payload=False)
        return {int(p.id) for p in points}

    return run_sync(go())


def vec_rows(db: str, rowid: int) -> int:
    sql = "SELECT count(*) FROM vec_memories WHERE memory_id = ?"
    return int(query(db, sql, (rowid,))[0][0])


def seed(gw: GatewayHarness, owner: str, *items: dict[str, Any]) -> list[int]:
    """Insert memories straight into the store (``created`` = creation time, ``accessed`` = one
    access at that time); returns their rowids. They wait for embedding (needs_reindex)."""

    async def go(store: Any) -> list[int]:
        out = []
        for item in items:
            fields = dict(item)
            created = fields.pop("created", time.time())
            accessed = fields.pop("accessed", None)
            m, _ = await store.writes.upsert(NewMemory(owner_id=owner, **fields), now=created)
            if accessed is not None:
                await store.writes.record_access([m.id], accessed)
            out.append(m.id)
        return out

    return gw.with_store(go)


def embed_all(gw: GatewayHarness, secret: str, rowids: list[int]) -> None:
    """Run the reindex job (in the gateway) and wait until every rowid is in both tiers."""
    with api(gw, secret) as http:
        assert http.post("/api/reindex", json={}).status_code == 202
    db = gw.settings.db_path
    wait_until(lambda: set(rowids) <= qdrant_ids(gw), "points in qdrant")
    wait_until(lambda: all(vec_rows(db, i) == 1 for i in rowids), "rows in vec_memories")


def mcp_call(gw: GatewayHarness, secret: str, tool: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {secret}"}, timeout=30)
        async with Client(streamable_http_client(f"{gw.base_url}/mcp", http_client=http)) as c:
            result = await c.call_tool(tool, args)
            assert not result.is_error, result.content
            return result.structured_content

    return anyio.run(go)


DELETE_PATHS = ["rest_delete", "rest_bulk_delete", "mcp_delete", "mcp_clear", "summarize_job"]


@pytest.mark.parametrize("path", DELETE_PATHS)
def test_delete_path_leaves_nothing_in_fts_vec_or_qdrant(
    gateway_factory: Any, upstream: Any, path: str
) -> None:
    gw = gateway_factory(**qdrant_settings(upstream))
    key_id, secret = gw.create_key()
    now = time.time()
    # old enough to summarize, recently used (not decayed)
    episodic = {
        "type": "episodic",
        "category": "turn",
        "created": now - 40 * DAY,
        "accessed": now - 20 * DAY,
    }
    victim, other, keep = seed(
        gw,
        key_id,
        {"content": "quokkaword sits here. extra filler words for length.", **episodic},
        {"content": "another memory entirely. with more filler words here.", **episodic},
        {"content": "keeper fact about the lighthouse", "type": "factual", "category": "fact"},
    )
    embed_all(gw, secret, [victim, other, keep])
    public = {m.id: m.public_id for m in gw.memories(key_id)}

    with api(gw, secret) as http:
        if path == "rest_delete":
            assert http.delete(f"/api/memory/{public[victim]}").status_code == 200
        elif path == "rest_bulk_delete":
            resp = http.post("/api/memory/bulk-delete", json={"q": "quokkaword"})
            assert resp.json()["deleted"] == 1, resp.text
        elif path == "mcp_delete":
            mcp_call(gw, secret, "memory_delete", {"id": public[victim]})
        elif path == "mcp_clear":
            assert mcp_call(gw, secret, "memory_clear", {"query": "quokkaword"})["deleted"] == 1
        else:
            resp = http.post("/api/summarize", json={"older_than_days": 30})
            assert resp.status_code == 202, resp.text

    db = gw.settings.db_path
    wait_until(lambda: victim not in qdrant_ids(gw), "the victim's point to leave qdrant")
    assert victim not in ids(db)
    assert fts_rows(db, victim) == 0
    assert vec_rows(db, victim) == 0
    assert keep in qdrant_ids(gw) and vec_rows(db, keep) == 1
    if path == "summarize_job":
        # the originals went everywhere; the summary was embedded into both tiers
        assert other not in qdrant_ids(gw) and vec_rows(db, other) == 0
        summary = [m for m in gw.memories(key_id) if m.category == "summary"]
        assert len(summary) == 1
        wait_until(lambda: summary[0].id in qdrant_ids(gw), "the summary's point")
    else:
        assert other in qdrant_ids(gw)


def test_patch_resyncs_qdrant_payload(gateway_factory: Any, upstream: Any) -> None:
    """A content edit re-embeds; an expiry edit re-writes the payload Qdrant filters on."""
    gw = gateway_factory(**qdrant_settings(upstream))
    key_id, secret = gw.create_key()
    (rowid,) = seed(gw, key_id, {"content": "locker code box twelve"})
    embed_all(gw, secret, [rowid])
    public = gw.memories(key_id)[0].public_id
    qdrant = local_qdrant(gw)

    def payload() -> dict[str, Any]:
        async def go() -> dict[str, Any]:
            (point,) = await qdrant.client.retrieve(COLLECTION, [rowid], with_payload=True)
            return dict(point.payload or {})

        return run_sync(go())

    expires = time.time() + 3600
    with api(gw, secret) as http:
        assert http.patch(f"/api/memory/{public}", json={"expires_at": expires}).is_success
    wait_until(lambda: payload()["expires_at"] == pytest.approx(expires), "the new expiry")


def test_r5_isolation_on_the_qdrant_tier(gateway_factory: Any, upstream: Any) -> None:
    gw = gateway_factory(**qdrant_settings(upstream))
    a_id, a_secret = gw.create_key("a")
    _, b_secret = gw.create_key("b")
    rowids = seed(
        gw,
        a_id,
        {"content": "I prefer Neovim for editing"},
        {"content": "My name is Umberto", "user_id": "u1"},
    )
    embed_all(gw, a_secret, rowids)

    resp = ask(gw, a_secret, "which editor do I prefer for editing")
    assert resp.headers["x-mnemogate-memory-tier"] == "qdrant"
    assert "Neovim" in injected(upstream)
    # key B asks the same thing: key A's memories never reach it
    resp = ask(gw, b_secret, "which editor do I prefer for editing")
    assert resp.headers["x-mnemogate-memory-injected"] == "0"
    assert "recalled" not in str(upstream.requests[-1]["messages"])

    # two end users behind key A: u1's memory reaches u1 only
    resp = ask(gw, a_secret, "what is my name Umberto", user="u1")
    assert resp.headers["x-mnemogate-memory-tier"] == "qdrant"
    assert "Umberto" in injected(upstream)
    ask(gw, a_secret, "what is my name Umberto", user="u2")
    assert "name is Umberto" not in injected(upstream)


def test_r9_expired_memory_not_injected_on_the_qdrant_tier(
    gateway_factory: Any, upstream: Any
) -> None:
    gw = gateway_factory(**qdrant_settings(upstream))
    key_id, secret = gw.create_key()
    rowids = seed(
        gw,
        key_id,
        {"content": "locker code box twelve", "expires_at": time.time() - 60},
        {"content": "locker color box blue"},
    )
    embed_all(gw, secret, rowids)
    resp = ask(gw, secret, "locker box")
    assert resp.headers["x-mnemogate-memory-tier"] == "qdrant"
    assert "color box blue" in injected(upstream)
    assert "twelve" not in injected(upstream)


def test_readyz_reports_qdrant(gateway_factory: Any, upstream: Any) -> None:
    gw = gateway_factory(**qdrant_settings(upstream))
    key_id, secret = gw.create_key()
    embed_all(gw, secret, seed(gw, key_id, {"content": "anything at all"}))
    checks = httpx.get(gw.base_url + "/readyz", timeout=READY_TIMEOUT_S).json()["checks"]
    assert checks["qdrant"] == "ok"


# ---- a Qdrant server that fails or hangs --------------------------------------------------------


@pytest.fixture(scope="module")
def qdrant_server() -> Iterator[FakeQdrant]:
    fake = FakeQdrant().start()
    yield fake
    fake.stop()


@pytest.fixture
def fake_qdrant(qdrant_server: FakeQdrant) -> Iterator[FakeQdrant]:
    qdrant_server.reset()
    qdrant_server.collection_exists = False  # the first write creates it
    yield qdrant_server
    qdrant_server.reset()


def written_ids(fake: FakeQdrant, since: int, tail: str) -> set[int]:
    """Point ids the gateway sent to ``/collections/<c>/points<tail>`` in requests [since:]
    (``tail`` ``""`` = upsert, ``"/delete"`` = delete)."""
    out: set[int] = set()
    for method, path, _headers, body in list(fake.requests)[since:]:
        if path != f"/collections/{COLLECTION}/points{tail}" or not isinstance(body, dict):
            continue
        if tail == "" and method == "PUT":
            out |= {int(p["id"]) for p in body.get("points", [])}
        elif tail == "/delete" and method == "POST":
            out |= {int(i) for i in body.get("points", [])}
    return out


@pytest.mark.parametrize(
    ("setup", "reason"),
    [({"fail_status": 500}, "qdrant_unavailable"), ({"hang_s": 3.0}, "qdrant_timeout")],
)
# Load-proof bounds: a failing Qdrant answers at once, so its client timeout can be generous
# (a 0.3 s one fired first on a loaded machine); the recall budget never cuts the fallback.
def test_qdrant_down_falls_back_to_sqlite_vec(
    gateway_factory: Any,
    upstream: Any,
    fake_qdrant: FakeQdrant,
    setup: dict[str, Any],
    reason: str,
) -> None:
    gw = gateway_factory(
        **qdrant_settings(
            upstream,
            url=fake_qdrant.url,
            qdrant_timeout_s=0.3 if "hang_s" in setup else 30.0,
            recall_timeout_ms=60_000,
        )
    )
    key_id, secret = gw.create_key()
    (rowid,) = seed(gw, key_id, {"content": "I prefer Neovim for editing"})
    with api(gw, secret) as http:
        assert http.post("/api/reindex", json={}).status_code == 202
    wait_until(lambda: rowid in written_ids(fake_qdrant, 0, ""), "the dual-write")
    wait_until(lambda: vec_rows(gw.settings.db_path, rowid) == 1, "the sqlite-vec row")

    for name, value in setup.items():
        setattr(fake_qdrant, name, value)
    resp = ask(gw, secret, "which editor do I prefer for editing")
    assert resp.headers["x-mnemogate-memory-degraded"] == reason
    assert resp.headers["x-mnemogate-memory-tier"] in ("vector", "hybrid")
    assert "Neovim" in injected(upstream)
    checks = httpx.get(gw.base_url + "/readyz", timeout=READY_TIMEOUT_S).json()["checks"]
    assert checks["qdrant"].startswith(reason), checks


def test_worker_retries_qdrant_writes_until_it_recovers(
    gateway_factory: Any, upstream: Any, fake_qdrant: FakeQdrant
) -> None:
    gw = gateway_factory(**qdrant_settings(upstream, url=fake_qdrant.url, qdrant_timeout_s=0.3))
    key_id, secret = gw.create_key()
    fake_qdrant.fail_status = 503
    with api(gw, secret) as http:
        created = http.post("/api/memory", json={"content": "I prefer Neovim for editing"})
        assert created.status_code == 201, created.text
        wait_until(lambda: len(fake_qdrant.requests) > 0, "a first (failing) attempt")
        rowid = gw.memories(key_id)[0].id
        # sqlite-vec does not wait for Qdrant (which still fails): polled, not read once, since
        # the first Qdrant request may be a start-up check that precedes the embed job
        wait_until(lambda: vec_rows(gw.settings.db_path, rowid) == 1, "the sqlite-vec row")
        recovered = len(fake_qdrant.requests)
        fake_qdrant.fail_status = None
        wait_until(lambda: rowid in written_ids(fake_qdrant, recovered, ""), "the retried upsert")

        fake_qdrant.fail_status = 503
        assert http.delete(f"/api/memory/{created.json()['id']}").status_code == 200
        wait_until(lambda: len(fake_qdrant.requests) > recovered + 1, "a failing delete")
        recovered = len(fake_qdrant.requests)
        fake_qdrant.fail_status = None
        wait_until(
            lambda: rowid in written_ids(fake_qdrant, recovered, "/delete"), "the retried delete"
        )


def test_rest_delete_in_worker_mode_reaches_qdrant_through_the_worker(
    gateway_factory: Any,
    upstream: Any,
    fake_qdrant: FakeQdrant,
    redis_url: str,
    worker_process: Any,
) -> None:
    """Worker mode: the gateway enqueues ``vector_delete`` in Redis; an arq worker deletes the
    point (the worker process has its own Qdrant client, hence the fake server)."""
    settings = qdrant_settings(upstream, url=fake_qdrant.url, qdrant_timeout_s=1)
    gw = gateway_factory(redis_url=redis_url, **settings)
    key_id, secret = gw.create_key()
    (rowid,) = seed(gw, key_id, {"content": "I prefer Neovim for editing"})
    public = gw.memories(key_id)[0].public_id
    with api(gw, secret) as http:
        assert http.delete(f"/api/memory/{public}").status_code == 200
    env = {k: str(v) for k, v in settings.items()}
    proc = worker_process(gw.settings.db_path, "--burst", **env)
    assert proc.wait(timeout=60) == 0
    assert rowid in written_ids(fake_qdrant, 0, "/delete")
