"""No raw user text at rest outside ``memories``: the real SQLite file and WAL bytes after an
embedded-mode learn job, the real Redis keys after a worker ran one, and admin imports.

Each test plants a secret (a format the detector knows) and a canary in a turn that asks not to
be remembered; neither may be found anywhere once the job has finished.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import cast

import httpx
import redis

from shared.jobs.payloads import LEARN, LearnPayload
from tests.fakes.upstream import FakeUpstream
from tests.harness import GatewayHarness, enqueue_to_redis

SECRET = "ghp_" + "Zq7" * 12  # a GitHub token: redacted before it is stored
CANARY = "QX7CANARY7XQ"
TURNS = [
    f"Don't remember this: my locker word is {CANARY}",
    f"I prefer Haskell and my token is {SECRET}",
]


def _at_rest(db: str) -> bytes:
    """Every byte SQLite keeps for ``db``: the file, its WAL and its shared-memory index."""
    out = b""
    for suffix in ("", "-wal", "-shm"):
        path = Path(db + suffix)
        if path.exists():
            out += path.read_bytes()
    return out


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _value(client: redis.Redis, key: bytes) -> bytes:
    """Every byte Redis holds under ``key`` (strings, sorted sets, hashes, lists, sets)."""
    kind = cast(bytes, client.type(key))
    if kind == b"string":
        return cast(bytes | None, client.get(key)) or b""
    if kind == b"zset":
        return b"".join(cast(list[bytes], client.zrange(key, 0, -1)))
    if kind == b"hash":
        items = cast(dict[bytes, bytes], client.hgetall(key.decode()))
        return b"".join(k + v for k, v in items.items())
    if kind == b"list":
        return b"".join(cast(list[bytes], client.lrange(key.decode(), 0, -1)))
    if kind == b"set":
        return b"".join(cast(set[bytes], client.smembers(key.decode())))
    return b""


def _chat(gw: GatewayHarness, secret: str, messages: list[dict[str, str]]) -> None:
    resp = httpx.post(
        gw.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "m", "messages": messages},
        timeout=60,
    )
    assert resp.status_code == 200


def _planted(blob: bytes) -> list[str]:
    return [t for t in (SECRET, CANARY) if t.encode() in blob]


def test_embedded_learn_job_leaves_no_text_in_the_file_or_wal(gateway_factory) -> None:
    gw: GatewayHarness = gateway_factory(embedding_source="none")
    _key_id, secret = gw.create_key("rest")
    _chat(gw, secret, [{"role": "user", "content": t} for t in TURNS])
    db = gw.settings.db_path
    _wait(lambda: any("Haskell" in m.content for m in gw.memories()), 60, "the learn job")
    _wait(lambda: not _planted(_at_rest(db)), 30, "the outbox payload to be scrubbed")
    assert not any(SECRET in m.content or CANARY in m.content for m in gw.memories())
    assert b"Haskell" in _at_rest(db)  # the memory itself is at rest, as it should be


def test_worker_mode_leaves_no_text_in_redis(
    tmp_path: Path, redis_url: str, worker_process, upstream: FakeUpstream
) -> None:
    db = str(tmp_path / "w.db")

    payload = LearnPayload(
        owner_id="k1",
        user_id="",
        session_id=None,
        user_turns=TURNS,
        assistant_text=f"noted {CANARY}",
        created_at=time.time(),
        request_id="r1",
    )
    enqueue_to_redis(db, redis_url, LEARN, payload)
    client = redis.Redis.from_url(redis_url)
    try:
        jobs = cast(list[bytes], client.keys("arq:job:*"))
        assert any(SECRET.encode() in _value(client, k) for k in jobs)
        proc = worker_process(db, "--burst", upstream_base_url=upstream.base_url)
        assert proc.wait(timeout=60) == 0
        assert client.keys("arq:result:*"), "the result record is kept (without its arguments)"
        for key in cast(list[bytes], client.keys("*")):
            assert not _planted(_value(client, key)), key
    finally:
        client.close()


def test_worker_mode_job_holds_no_turn_older_than_the_job_needs(
    gateway_factory, redis_url: str, worker_process, upstream: FakeUpstream
) -> None:
    gw: GatewayHarness = gateway_factory(redis_url=redis_url, embedding_source="none")
    _key_id, secret = gw.create_key("minimal")
    turns = [f"My note number {i} is about the garden plot MARK{i:02d}X" for i in range(12)]

    def chat(n: int) -> None:
        messages: list[dict[str, str]] = []
        for i in range(n):
            messages.append({"role": "user", "content": turns[i]})
            if i < n - 1:
                messages.append({"role": "assistant", "content": f"Noted {i}"})
        _chat(gw, secret, messages)

    client = redis.Redis.from_url(redis_url)
    try:
        chat(10)  # learned by a worker: the cursor is at 10 turns
        _wait(lambda: bool(client.keys("arq:job:*")), 30, "the first learn job")
        proc = worker_process(gw.settings.db_path, "--burst", upstream_base_url=upstream.base_url)
        assert proc.wait(timeout=60) == 0
        chat(12)  # its job waits in Redis: no worker runs
        _wait(lambda: bool(client.keys("arq:job:*")), 30, "the second learn job")
        blob = b"".join(_value(client, k) for k in cast(list[bytes], client.keys("arq:job:*")))
        held = {i for i in range(12) if f"MARK{i:02d}X".encode() in blob}
        # new turns 10 and 11, the two before them (their context is updated) and one more
        # (those turns' earlier neighbour): nothing older
        assert held == set(range(7, 12))
    finally:
        client.close()
