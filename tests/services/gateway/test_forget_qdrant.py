"""Forget (said in chat, REST by query, MCP) leaves nothing in FTS5, sqlite-vec or Qdrant, and
leaves unrelated memories in every tier. Qdrant is qdrant-client's local mode inside the
gateway process (helpers shared with the Qdrant tier tests)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.lifecycle_seed import fts_rows, ids
from tests.services.gateway.test_qdrant_tier import (
    api,
    embed_all,
    mcp_call,
    qdrant_ids,
    qdrant_settings,
    seed,
    vec_rows,
    wait_until,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect:UserWarning",
    "ignore:Local mode performs exact:UserWarning",
)


@pytest.mark.parametrize("path", ["chat", "rest", "mcp"])
def test_forget_leaves_nothing_in_any_tier(gateway_factory: Any, upstream: Any, path: str) -> None:
    gw = gateway_factory(**qdrant_settings(upstream))
    key_id, secret = gw.create_key()
    victim, keep = seed(
        gw,
        key_id,
        {"content": "User goes to the quokkagym on Elm Street", "category": "fact"},
        {"content": "User keeps a lighthouse journal", "category": "fact"},
    )
    embed_all(gw, secret, [victim, keep])
    if path == "chat":
        resp = httpx.post(
            gw.base_url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {secret}"},
            json={
                "model": "m",
                "messages": [{"role": "user", "content": "Please forget my quokkagym"}],
            },
            timeout=20,
        )
        assert resp.status_code == 200 and "Elm Street" not in str(upstream.requests[-1])
    elif path == "rest":
        with api(gw, secret) as http:
            out = http.delete("/api/memory", params={"q": "my quokkagym"}).json()
        assert out["reason"] == "ok" and len(out["deleted"]) == 1
    else:
        assert len(mcp_call(gw, secret, "memory_forget", {"query": "quokkagym"})["deleted"]) == 1
    db = gw.settings.db_path
    wait_until(lambda: victim not in qdrant_ids(gw), "the point to leave qdrant")
    assert victim not in ids(db) and fts_rows(db, victim) == 0 and vec_rows(db, victim) == 0
    assert keep in qdrant_ids(gw) and vec_rows(db, keep) == 1 and fts_rows(db, keep) == 1
