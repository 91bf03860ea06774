"""A deleted turn's text does not live on in its neighbours' search context.

Live gateway (embedded mode, real SQLite, fake upstream). A captured turn is stored with the
turns around it as its ``context`` (a search-only field); the neighbour of a deleted turn must
lose the deleted turn's line, through ``DELETE /api/memory/{id}`` and through
``POST /api/memory/bulk-delete`` with a text filter alike, so the deleted words neither stay at
rest in the neighbour nor keep finding it. What the assistant said stays (not the deleted turn).
"""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.test_user_control import SLOW_OK
from tests.harness import GatewayHarness
from tests.lifecycle_seed import query

DOG = "My dog is called Rex"
HORSE = "My horse is called Blitz"


def _learned(gw: GatewayHarness, key: str, secret: str) -> None:
    resp = httpx.post(
        gw.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {secret}"},
        json={
            "model": "m",
            "messages": [
                {"role": "user", "content": DOG},
                {"role": "assistant", "content": "Nice name."},
                {"role": "user", "content": HORSE},
            ],
        },
        timeout=60,
    )
    assert resp.status_code == 200
    gw.wait_for_memories(lambda ms: any(m.content == HORSE for m in ms), owner_id=key)
    assert any("Rex" in context for context in _contexts(gw, key, HORSE))


def _contexts(gw: GatewayHarness, key: str, content: str) -> list[str]:
    """The stored ``context`` of ``key``'s memories holding ``content`` (read from SQLite)."""
    sql = "SELECT context FROM memories WHERE owner_id = ? AND content = ?"
    return [str(r[0]) for r in query(gw.settings.db_path, sql, (key, content))]


@pytest.mark.parametrize("how", ["one", "bulk"])
def test_deleting_a_turn_removes_it_from_its_neighbours_context(gateway_factory, how) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key(f"scrub-{how}")
    _learned(gw, key, secret)
    auth = {"authorization": f"Bearer {secret}"}
    if how == "one":
        for m in gw.memories(key):
            if m.content == DOG:
                resp = httpx.delete(f"{gw.base_url}/api/memory/{m.public_id}", headers=auth)
                assert resp.status_code == 200
    else:
        resp = httpx.post(
            f"{gw.base_url}/api/memory/bulk-delete", headers=auth, json={"q": "Rex"}, timeout=30
        )
        assert resp.status_code == 200 and resp.json()["deleted"] >= 1
    left = gw.memories(key)
    assert not any(m.content == DOG for m in left)
    horse = _contexts(gw, key, HORSE)
    assert horse, [m.content for m in left]
    for context in horse:
        assert "Rex" not in context, context
        assert "Nice name." in context  # the assistant's reply is not the deleted turn
