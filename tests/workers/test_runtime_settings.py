"""Runtime settings across processes: a change made through ``PUT /api/settings`` is applied by a
separate, already running worker process without restart (within ``settings_refresh_s``), and the
holder's refresh is rate-limited to one version check per period."""

from __future__ import annotations

import asyncio
import time

import httpx
import openai

from shared.runtime_settings import RuntimeSettings
from shared.settings import load_settings
from shared.store import Store
from tests.harness import GatewayHarness

ADMIN = "admin-token-worker-test"


def _chat(gw: GatewayHarness, secret: str, text: str, session: str) -> None:
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=secret, max_retries=0)
    client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": text}],
        extra_headers={"x-mnemogate-session-id": session},
    )


async def _noop(store: Store) -> None:
    return None


def test_worker_applies_capture_turns_change_without_restart(
    gateway_factory, upstream, redis_url, worker_process, tmp_path
) -> None:
    db = str(tmp_path / "settings.db")
    gw: GatewayHarness = gateway_factory(db_path=db, redis_url=redis_url, admin_token=ADMIN)
    gw.with_store(_noop)  # migrate (the gateway does not migrate in worker mode)
    worker = worker_process(db, settings_refresh_s="0.2")
    key_id, secret = gw.create_key("app")

    # before: the worker captures user turns verbatim
    _chat(gw, secret, "My name is Alice and I live in Berlin", "s1")
    gw.wait_for_memories(
        lambda ms: (
            any(m.category == "turn" and "Berlin" in m.content for m in ms)
            and any(m.category != "turn" and "Berlin" in m.content for m in ms)
        ),
        owner_id=key_id,
    )

    r = httpx.put(
        gw.base_url + "/api/settings",
        json={"capture_turns": False},
        headers={"authorization": f"Bearer {ADMIN}"},
    )
    assert r.status_code == 200 and r.json()["settings"]["capture_turns"] is False
    time.sleep(0.5)  # > the worker's settings_refresh_s (0.2 s): the documented bound

    # after: same worker process (no restart), facts still learned, no turn captured
    _chat(gw, secret, "I live in Paris and I work at Acme", "s2")
    memories = gw.wait_for_memories(
        lambda ms: any(m.category != "turn" and "Paris" in m.content for m in ms),
        owner_id=key_id,
    )
    assert not any(m.category == "turn" and "Paris" in m.content for m in memories)
    assert worker.poll() is None  # still the same running process


async def _exercise_refresh(path: str) -> None:
    base = load_settings({}, db_path=path, settings_refresh_s=10.0)
    store = await Store.open(path)
    try:
        now = [0.0]
        writer = RuntimeSettings(base, store.settings)
        reader = RuntimeSettings(base, store.settings, clock=lambda: now[0])
        assert (await reader.refresh()).capture_turns is True
        await writer.update({"capture_turns": False})
        now[0] = 9.9  # inside the period: no version check, old value
        assert (await reader.refresh()).capture_turns is True
        now[0] = 10.0  # period elapsed: the version changed, the row is applied
        assert (await reader.refresh()).capture_turns is False
        assert reader.version == writer.version == 1
        await writer.update({"capture_turns": None})
        assert (await reader.refresh(force=True)).capture_turns is True
        assert reader.version == 2
    finally:
        await store.close()


def test_refresh_is_rate_limited_and_versioned(tmp_path) -> None:
    asyncio.run(_exercise_refresh(str(tmp_path / "rs.db")))


async def _concurrent_callers(path: str) -> None:
    base = load_settings({}, db_path=path, settings_refresh_s=0.0)
    store = await Store.open(path)
    try:
        writer = RuntimeSettings(base, store.settings)
        now = [100.0]
        slow = load_settings({}, db_path=path, settings_refresh_s=1.0)
        reader = RuntimeSettings(slow, store.settings, clock=lambda: now[0])
        await reader.refresh()
        await writer.update({"capture_turns": False})
        now[0] = 200.0
        # many jobs starting together: none may return the old settings while one refreshes
        results = await asyncio.gather(*(reader.refresh() for _ in range(20)))
        assert all(r.capture_turns is False for r in results)
    finally:
        await store.close()


def test_concurrent_refreshes_never_return_stale_settings(tmp_path) -> None:
    asyncio.run(_concurrent_callers(str(tmp_path / "cc.db")))
