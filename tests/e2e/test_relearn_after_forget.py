"""A deleted memory can be taught again (live gateway, embedded mode, real SQLite, fake upstream).

The content-addressed learn cursor must not take a later request that repeats the same turns
for a replay once what those turns taught was deleted (by a forget said in chat, or by
``DELETE /api/memory/{id}``).
"""

from __future__ import annotations

import httpx

from tests.e2e.test_user_control import BERLIN, SLOW_OK, contents, say, wait
from tests.harness import GatewayHarness

PLUMBER = "My plumber is Mario"


def _plumber_learned(gw: GatewayHarness, owner: str) -> None:
    wait(lambda: any("Mario" in c for c in contents(gw, owner)), "the plumber memory")


def _no_plumber(gw: GatewayHarness, owner: str) -> None:
    wait(lambda: not any("Mario" in c for c in contents(gw, owner)), "the plumber gone")


def test_said_again_after_a_forget_is_learned_again(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("relearn-chat")
    assert say(gw, secret, PLUMBER).status_code == 200
    _plumber_learned(gw, key)
    resp = say(gw, secret, "forget my plumber")
    assert resp.headers["x-mnemogate-memory-forget"] == "queued"
    _no_plumber(gw, key)
    assert say(gw, secret, PLUMBER).status_code == 200
    _plumber_learned(gw, key)


def test_said_again_after_a_rest_delete_is_learned_again(gateway_factory) -> None:
    gw = gateway_factory(capture_turns=False, **SLOW_OK)  # an extracted fact only, no turn
    key, secret = gw.create_key("relearn-rest")
    assert say(gw, secret, BERLIN).status_code == 200
    wait(lambda: any("Berlin" in c for c in contents(gw, key)), "the Berlin fact")
    auth = {"authorization": f"Bearer {secret}"}
    for memory in gw.memories(key):
        resp = httpx.delete(f"{gw.base_url}/api/memory/{memory.public_id}", headers=auth)
        assert resp.status_code == 200
    assert contents(gw, key) == []
    assert say(gw, secret, BERLIN).status_code == 200
    wait(lambda: any("Berlin" in c for c in contents(gw, key)), "the Berlin fact again")
