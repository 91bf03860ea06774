"""Two deployments on one Redis database keep their jobs apart with the default queue name
(``mnemogate:<store id>``): a worker on another database never takes this gateway's jobs.
Real gateway, real ``mnemogate worker`` subprocesses, real Redis and SQLite."""

from __future__ import annotations

import time

import httpx

from tests.workers.test_learning_faults import migrate, sql, wait_until


def test_default_queue_names_keep_two_deployments_apart(
    tmp_path, gateway_factory, redis_url, worker_process
):
    db_a, db_b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    migrate(db_a)
    migrate(db_b)
    ids = [sql(db, "SELECT store_id FROM store_identity") for db in (db_a, db_b)]
    assert ids[0] != ids[1] and all(len(i) == 1 and len(str(i[0][0])) == 16 for i in ids)

    other = worker_process(db_b, queue_name="")  # deployment B's worker, started first
    log_b = tmp_path / "worker-0.log"
    wait_until(lambda: "Starting worker" in log_b.read_text(errors="replace"), 30, "worker B")
    gw = gateway_factory(db_path=db_a, redis_url=redis_url, queue_name="")
    owner, secret = gw.create_key("deployment-a")
    resp = httpx.post(
        gw.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "m", "messages": [{"role": "user", "content": "My name is Bob"}]},
        timeout=10,
    )
    assert resp.status_code == 200
    time.sleep(2)  # B's worker polls every 0.1 s: it would have taken the job by now
    assert sql(db_b, "SELECT COUNT(*) FROM memories") == [(0,)]
    assert gw.memories(owner) == []

    worker_process(db_a, queue_name="")  # A's own worker takes it
    items = gw.wait_for_memories(lambda ms: any(m.category != "turn" for m in ms), owner_id=owner)
    assert [m.content for m in items if m.category != "turn"] == ["User's name is Bob"]
    assert sql(db_b, "SELECT COUNT(*) FROM memories") == [(0,)]
    assert other.poll() is None
