"""Vector and hybrid recall through the gateway, with a remote embedding endpoint that is a real
HTTP server (tests/fakes/upstream.py serves /v1/embeddings with hashed bag-of-words vectors)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

from shared.models import NewMemory
from tests.waiting import READY_TIMEOUT_S, wait_until

CHAT = "/v1/chat/completions"


def remote_settings(upstream, **extra):
    return {
        "embedding_source": "remote",
        "embedding_base_url": upstream.base_url,
        "embedding_model": "fake-embed",
        "embedding_timeout_s": 30.0,  # generous: a loaded machine is slow, not failing
        "vector_min_similarity": 0.05,  # hashed bag-of-words vectors are noisy
        **extra,
    }


def ask(gw, secret, text, **headers):
    resp = httpx.post(
        gw.base_url + CHAT,
        headers={"authorization": f"Bearer {secret}", **headers},
        json={"model": "m", "messages": [{"role": "user", "content": text}]},
        timeout=READY_TIMEOUT_S,
    )
    assert resp.status_code == 200, resp.text
    return resp


def ask_for_tier(gw, secret, text, tier):
    """The response to ``text`` (learning nothing) if recall used ``tier``, else None."""
    resp = ask(gw, secret, text, **{"x-mnemogate-no-learn": "1"})
    return resp if resp.headers["x-mnemogate-memory-tier"] == tier else None


def injected(upstream) -> str:
    return str([m for m in upstream.requests[-1]["messages"] if "recalled" in str(m)])


def reindex_cli(db: str, settings: dict) -> str:
    """Run ``mnemogate reindex`` as a subprocess; returns its stdout."""
    env = {
        **os.environ,
        "MNEMOGATE_DB_PATH": db,
        **{f"MNEMOGATE_{k.upper()}": str(v) for k, v in settings.items()},
    }
    out = subprocess.run(
        [sys.executable, "-m", "services.cli", "reindex"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def learn_and_wait(gw, secret, key_id, text, needle):
    ask(gw, secret, text)
    return gw.wait_for_memories(
        lambda ms: any(needle in m.content and not m.needs_reindex for m in ms), owner_id=key_id
    )


@pytest.mark.parametrize("fusion", ["rrf", "combsum"])
def test_hybrid_tier_after_embedding(gateway_factory, upstream, fusion):
    gw = gateway_factory(**remote_settings(upstream, recall_fusion=fusion))
    key_id, secret = gw.create_key()
    learn_and_wait(gw, secret, key_id, "I prefer Neovim for editing", "Neovim")
    resp = ask(gw, secret, "which editor do I prefer for editing", **{"x-mnemogate-no-learn": "1"})
    assert resp.headers["x-mnemogate-memory-tier"] == "hybrid"
    assert "Neovim" in injected(upstream)
    assert "x-mnemogate-memory-degraded" not in resp.headers


@pytest.mark.parametrize("strategy", ["semantic", "hybrid"])
def test_r9_expired_memory_not_injected_on_vector_tiers(gateway_factory, upstream, strategy):
    gw = gateway_factory(**remote_settings(upstream, retrieval_strategy=strategy))
    key_id, secret = gw.create_key()

    async def seed(store):
        ids = []
        for content, exp in (
            ("locker code box twelve", time.time() - 60),
            ("locker color box blue", None),
        ):
            m, _ = await store.writes.upsert(
                NewMemory(owner_id=key_id, content=content, expires_at=exp)
            )
            ids.append(m.id)
        return ids

    gw.with_store(seed)
    reindex_cli(gw.settings.db_path, remote_settings(upstream))
    # the gateway re-reads the vector table metadata at most every 2 s: ask until it has
    tier = "vector" if strategy == "semantic" else "hybrid"
    wait_until(lambda: ask_for_tier(gw, secret, "locker box", tier), what=tier)
    text = injected(upstream)
    assert "color box blue" in text
    assert "twelve" not in text


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"embeddings_status": 429}, "embedding_rate_limited"),
        ({"embeddings_status": 500}, "embedding_http_error"),
        ({"embeddings_delay_s": 2.0}, "embedding_timeout"),
        ({"embedding_dim": 24}, "embedding_dimension_mismatch"),
    ],
)
def test_embedding_endpoint_failures_degrade_to_keyword(gateway_factory, upstream, setup, reason):
    # only the slow-endpoint case needs a short embedding timeout (it must fire, not the budget)
    timeout_s = 0.5 if "embeddings_delay_s" in setup else 30.0
    gw = gateway_factory(
        **remote_settings(upstream, recall_timeout_ms=60_000, embedding_timeout_s=timeout_s)
    )
    key_id, secret = gw.create_key()
    learn_and_wait(gw, secret, key_id, "I prefer Neovim for editing", "Neovim")
    for name, value in setup.items():
        setattr(upstream, name, value)
    resp = ask(gw, secret, "do I prefer Neovim for editing?", **{"x-mnemogate-no-learn": "1"})
    assert resp.headers["x-mnemogate-memory-degraded"] == reason
    assert resp.headers["x-mnemogate-memory-tier"] == "fts5"
    assert "Neovim" in injected(upstream)


def test_model_change_marks_for_reindex_keyword_meanwhile_then_reindex_restores(
    gateway_factory, upstream, tmp_path, redis_url
):
    db = str(tmp_path / "model-change.db")
    gw = gateway_factory(db_path=db, **remote_settings(upstream))
    key_id, secret = gw.create_key()
    learn_and_wait(gw, secret, key_id, "I prefer Neovim for editing", "Neovim")
    gw.stop()

    # new model: a gateway in worker mode (no worker running) does not rebuild by itself
    new = remote_settings(upstream, embedding_model="fake-embed-v2")
    gw2 = gateway_factory(db_path=db, redis_url=redis_url, **new)
    resp = ask(gw2, secret, "do I prefer Neovim for editing?", **{"x-mnemogate-no-learn": "1"})
    assert resp.headers["x-mnemogate-memory-tier"] == "fts5"
    assert resp.headers["x-mnemogate-memory-degraded"] == "reindex_pending"
    assert "Neovim" in injected(upstream)

    assert " 0 still pending" in reindex_cli(db, new)
    assert all(not m.needs_reindex for m in gw2.memories(key_id))
    # the gateway re-reads the vector table metadata at most every 2 s: ask until it has
    resp = wait_until(
        lambda: ask_for_tier(gw2, secret, "do I prefer Neovim for editing?", "hybrid"),
        what="the hybrid tier",
    )
    assert "x-mnemogate-memory-degraded" not in resp.headers


def test_zero_embeddings_never_break_recall(gateway_factory, upstream):
    """A text with no known word piece embeds to a zero vector (no direction): such memories
    get no vector and such queries skip the vector leg; nothing answers 5xx."""
    gw = gateway_factory(**remote_settings(upstream))
    key_id, secret = gw.create_key()
    learn_and_wait(gw, secret, key_id, "I prefer Neovim for editing", "Neovim")
    upstream.zero_embeddings = True
    ask(gw, secret, "🙂🙂🙂 I prefer Helix for editing")
    gw.wait_for_memories(
        lambda ms: any("Helix" in m.content and not m.needs_reindex for m in ms), owner_id=key_id
    )
    for _ in range(2):
        resp = ask(gw, secret, "what do I use for editing?", **{"x-mnemogate-no-learn": "1"})
        assert "x-mnemogate-memory-degraded" not in resp.headers
        assert "Neovim" in injected(upstream)
    upstream.zero_embeddings = False  # a new query (the zero one is cached) uses vectors again
    resp = ask(gw, secret, "prefer Neovim for editing", **{"x-mnemogate-no-learn": "1"})
    assert resp.headers["x-mnemogate-memory-tier"] == "hybrid"


def test_fresh_worker_mode_store_is_not_degraded_until_it_holds_memories(
    gateway_factory, upstream, tmp_path, redis_url
):
    """Worker mode before any worker ran: no vector table yet. With no memory to find, recall
    lacks nothing (no degraded header); once memories without vectors exist, it is reported."""
    db = str(tmp_path / "fresh-worker-mode.db")
    gw = gateway_factory(db_path=db, redis_url=redis_url)
    key_id, secret = gw.create_key()
    checks = httpx.get(gw.base_url + "/readyz", timeout=READY_TIMEOUT_S).json()["checks"]
    assert checks["sqlite_vec"] == "no vector table yet" and checks["reindex_pending"] == "0"
    assert checks["embedding"] not in ("none", "warming_up")  # the vector leg is in use
    resp = ask(gw, secret, "Where do I live?", **{"x-mnemogate-no-learn": "1"})
    assert "x-mnemogate-memory-degraded" not in resp.headers
    assert resp.headers["x-mnemogate-memory-injected"] == "0"

    async def seed(store):
        await store.writes.upsert(NewMemory(owner_id=key_id, content="User lives in Lisbon"))

    gw.with_store(seed)
    resp = ask(gw, secret, "Do I live in Lisbon?", **{"x-mnemogate-no-learn": "1"})
    assert resp.headers["x-mnemogate-memory-degraded"] == "reindex_pending"
    assert resp.headers["x-mnemogate-memory-tier"] == "fts5"
    assert "Lisbon" in injected(upstream)


def test_memories_left_without_vectors_are_embedded_at_the_next_start(gateway_factory, upstream):
    """An embed job lost (e.g. a worker killed between a learn job's write and its enqueue)
    leaves memories marked for reindex with a valid vector table: the next start embeds them."""
    db_settings = remote_settings(upstream, lifecycle_schedule=False)
    first = gateway_factory(**db_settings)
    key_id, _secret = first.create_key("lost-embed")
    first.stop()  # the vector table exists now, for this embedding signature

    async def seed(store):  # written without any embed job, as after the lost enqueue
        await store.writes.upsert(NewMemory(owner_id=key_id, content="User lives in Lisbon"))
        await store.writes.upsert(NewMemory(owner_id=key_id, content="User owns a red bicycle"))

    first.with_store(seed)

    def pending() -> int:
        return first.with_store(lambda s: s.memories.count_pending_reindex())

    assert pending() == 2
    gateway_factory(**db_settings)  # same database: the start-up check finds them
    deadline = time.monotonic() + READY_TIMEOUT_S
    while pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pending() == 0
