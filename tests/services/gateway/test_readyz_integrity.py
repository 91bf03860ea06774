"""``/readyz`` checks the FTS5 and sqlite-vec indexes: a gateway whose index file is really
corrupted (index blocks overwritten, vector chunks removed) answers 503 and says which index is
damaged, and is ready again once the index is rebuilt. Real SQLite file, real gateway."""

from __future__ import annotations

import httpx
import sqlean

from shared.models import NewMemory
from shared.store.integrity import check_indexes
from tests.harness import GatewayHarness
from tests.waiting import READY_TIMEOUT_S, wait_until

INTERVAL = {"integrity_check_interval_s": 0.05}


def readyz(gw: GatewayHarness) -> httpx.Response:
    return httpx.get(gw.base_url + "/readyz", timeout=READY_TIMEOUT_S)


def seed(gw: GatewayHarness, count: int = 300) -> None:
    async def go(store):
        for i in range(count):
            await store.writes.upsert(
                NewMemory(owner_id="k", content=f"memory {i} about tea, coffee and cake {i % 7}")
            )

    gw.with_store(go)


def sql(db: str, *statements: str) -> None:
    conn = sqlean.connect(db, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def status_of(gw: GatewayHarness, name: str) -> str:
    return str(readyz(gw).json()["checks"].get(name))


def test_ready_when_the_indexes_are_sound(gateway_factory):
    gw = gateway_factory(**INTERVAL)
    seed(gw, 20)
    wait_until(lambda: status_of(gw, "fts") == "ok", what="a first integrity check")
    resp = readyz(gw)
    assert resp.status_code == 200, resp.text
    assert resp.json()["checks"]["vec"] in {"ok", "absent"}


def test_corrupted_fts_index_is_not_ready_until_rebuilt(gateway_factory):
    gw = gateway_factory(**INTERVAL)
    seed(gw)
    wait_until(lambda: status_of(gw, "fts") == "ok", what="a first integrity check")
    db = gw.settings.db_path
    # overwrite the largest index block with random bytes, as a torn write would leave it
    sql(
        db,
        "UPDATE memory_fts_data SET block = randomblob(length(block)) "
        "WHERE id = (SELECT MAX(id) FROM memory_fts_data)",
    )
    wait_until(lambda: status_of(gw, "fts").startswith("corrupt"), what="corruption reported")
    resp = readyz(gw)
    assert resp.status_code == 503
    assert resp.json()["status"] == "degraded"
    sql(db, "INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
    wait_until(lambda: readyz(gw).status_code == 200, what="ready after the rebuild")
    assert status_of(gw, "fts") == "ok"


def test_fts_index_out_of_step_with_its_content_is_corrupt(tmp_path):
    db = str(tmp_path / "m.db")
    gw = GatewayHarness({"db_path": db})  # only to migrate through the real store code
    seed(gw, 30)
    # a memory row deleted behind the index's back (the trigger skipped): the index lies
    sql(db, "DROP TRIGGER memories_fts_delete", "DELETE FROM memories WHERE id = 3")
    assert check_indexes(db)["fts"].startswith("corrupt")


def test_vector_chunks_removed_is_corrupt(gateway_factory, upstream):
    gw = gateway_factory(
        embedding_source="remote",
        embedding_base_url=upstream.base_url,
        embedding_model="fake-embed",
        **INTERVAL,
    )
    key_id, secret = gw.create_key()
    memory = httpx.post(
        gw.base_url + "/api/memory",
        headers={"authorization": f"Bearer {secret}"},
        json={"content": "User drinks green tea"},
        timeout=READY_TIMEOUT_S,
    )
    assert memory.status_code == 201, memory.text
    gw.wait_for_memories(lambda ms: bool(ms) and not ms[0].needs_reindex, owner_id=key_id)
    wait_until(lambda: status_of(gw, "vec") == "ok", what="the vector table checked")
    sql(gw.settings.db_path, "DELETE FROM vec_memories_vector_chunks00")
    wait_until(lambda: status_of(gw, "vec").startswith("corrupt"), what="corruption reported")
    assert readyz(gw).status_code == 503


def test_integrity_checks_can_be_switched_off(gateway_factory):
    gw = gateway_factory(integrity_check_interval_s=0)
    checks = readyz(gw).json()["checks"]
    assert (checks["fts"], checks["vec"]) == ("off", "off")
