"""GET/PUT /api/settings: schema validation (400 in the error shape), immutable fields, masked
secrets, versions, and the change taking effect in the serving gateway."""

from __future__ import annotations

import pytest

from shared.runtime_settings import MASK
from tests.services.gateway.api.conftest import Api


def test_get_masks_secrets(api: Api) -> None:
    view = api.admin.get("/api/settings").json()
    assert view["settings"]["admin_token"] == MASK
    assert view["settings"]["upstream_api_key"] == MASK  # set by the harness
    assert view["settings"]["embedding_api_key"] == ""  # empty stays empty
    assert "db_path" in view["immutable"] and view["refresh_s"] > 0
    assert view["version"] == 0 and view["overrides"] == {}


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ({"nope": 1}, "unknown_setting"),
        ({"db_path": "/tmp/x.db"}, "immutable_setting"),
        ({"redis_url": "redis://x"}, "immutable_setting"),
        ({"admin_token": "new"}, "immutable_setting"),
        ({"port": 1}, "immutable_setting"),
        ({"rrf_k": -1}, "invalid_settings"),
        ({"recall_max_tokens": 9000}, "invalid_settings"),
        ({"recall_relative_floor": 2}, "invalid_settings"),
        ({"recall_top_k": 0}, "invalid_settings"),
        ({"capture_turns": "no"}, "invalid_settings"),
        ({"injection_strategy": "sideways"}, "invalid_settings"),
        ({"sensitive_custom_patterns": "(unclosed"}, "invalid_settings"),
        ({"recall_context_weight": 1e308}, "invalid_settings"),
        ({"recall_context_weight": -1}, "invalid_settings"),
        ({"bm25_k1": 1e6}, "invalid_settings"),
    ],
)
def test_invalid_updates_are_400(api: Api, patch: dict, code: str) -> None:
    r = api.admin.put("/api/settings", json=patch)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == code
    assert r.json()["error"]["type"] == "invalid_request_error"
    assert api.admin.get("/api/settings").json()["version"] == 0  # nothing stored


def test_update_versions_masks_and_resets(api: Api) -> None:
    r = api.admin.put("/api/settings", json={"recall_max_tokens": 321})
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["version"] == 1 and view["settings"]["recall_max_tokens"] == 321
    assert view["overrides"] == {"recall_max_tokens": 321}
    assert view["settings"]["upstream_api_key"] == MASK  # secrets stay masked on read
    # settings read only at start-up are refused rather than silently ignored
    for name, value in (
        ("embedding_api_key", "sk-e"),
        ("upstream_base_url", "http://x"),
        ("upstream_timeout_s", 0.001),
    ):
        refused = api.admin.put("/api/settings", json={name: value})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "immutable_setting"
    # out-of-range values are refused (a huge one once disabled recall)
    for name, value in (("keyword_common_term_df", 10**30), ("recall_max_memories", 10**6)):
        assert api.admin.put("/api/settings", json={name: value}).status_code == 400
    # the serving gateway uses the new value at once (search preview default budget)
    api.a.http.post("/api/memory", json={"content": "tea"})
    preview = api.a.http.post("/api/memory/search-preview", json={"query": "tea"}).json()
    assert preview["budget"] == 321
    # null resets to the environment value
    view = api.admin.put("/api/settings", json={"recall_max_tokens": None}).json()
    assert (
        view["settings"]["recall_max_tokens"] == 2000
        and "recall_max_tokens" not in view["overrides"]
    )
    assert api.admin.put("/api/settings", content=b"[1]").status_code == 400
    deep = b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for r in (
        api.admin.put("/api/settings", content=deep),
        api.admin.post("/api/memory/import", content=deep + b"\n"),
    ):
        assert r.status_code == 400 and set(r.json()["error"]) == {"message", "type", "code"}
    assert api.admin.put("/api/settings", content=b"{").status_code == 400


def test_a_refused_context_weight_names_its_range(api: Api) -> None:
    r = api.admin.put("/api/settings", json={"recall_context_weight": -1})
    assert r.status_code == 400, r.text
    assert "'recall_context_weight' must be within 0..10, got -1" in r.json()["error"]["message"]
