"""Property-based API test (hypothesis): arbitrary bodies, query strings and ids sent to every
documented operation, by the admin, a client key and nobody, never produce a 5xx (other than
the documented 503 'job_unavailable' of reindex/summarize before their handlers exist)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.gateway.api.openapi import OPERATIONS, openapi_document
from tests.services.gateway.api.conftest import ADMIN_TOKEN

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELD_NAMES = sorted(
    {
        name
        for schema in openapi_document()["components"]["schemas"].values()
        for name in schema.get("properties", {})
    }
    | {"capture_turns", "rrf_k", "db_path", "recall_top_k", "upstream_api_key", "admin_token"}
)
# Mostly well-typed memory bodies, so creates, updates and searches also succeed (and hit the store)
MEMORY_BODIES = st.fixed_dictionaries(
    {"content": st.text(min_size=1, max_size=40)},
    optional={
        "query": st.text(max_size=30),
        "key": st.text(max_size=10),
        "type": st.sampled_from(["factual", "episodic", "procedural", "semantic", "bogus"]),
        "category": st.sampled_from(["preference", "fact", "turn", "summary", "bogus"]),
        "metadata": st.dictionaries(st.text(max_size=5), JSON_SCALARS, max_size=3),
        "user_id": st.text(max_size=5),
        "session_id": st.none() | st.text(max_size=5),
        "expires_at": st.none() | st.floats(min_value=0, max_value=5e9),
        "budget": st.integers(min_value=-10, max_value=9000),
        "strategy": st.sampled_from(["exact", "semantic", "hybrid", "x"]),
        "dry_run": st.booleans(),
        "owner_id": st.sampled_from(["global", "key_nope", ""]),
    },
)
BODIES = st.one_of(
    MEMORY_BODIES,
    st.dictionaries(st.sampled_from(FIELD_NAMES), JSON, max_size=6),
    JSON,
    st.binary(max_size=40),
)
QUERIES = st.dictionaries(
    st.sampled_from(FIELD_NAMES), st.text(max_size=12) | st.integers().map(str), max_size=4
)
IDS = st.text(max_size=20).filter(
    lambda s: "/" not in s and "?" not in s and "#" not in s
) | st.just("mem_000000000000000000000000")


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    op_index=st.integers(min_value=0, max_value=len(OPERATIONS) - 1),
    who=st.sampled_from(["admin", "a", "none"]),
    body=BODIES,
    query=QUERIES,
    mid=IDS,
    real_id=st.sampled_from([None, "a", "b", "global"]),
)
def test_no_server_errors(
    api, op_index: int, who: str, body: Any, query: dict[str, str], mid: str, real_id: str | None
) -> None:
    op = OPERATIONS[op_index]
    http = {"admin": api.admin, "a": api.a.http, "none": api.anonymous}[who]
    if real_id is not None:
        mid = _existing_id(api, real_id)
    path = op.path.replace("{id}", _quote(mid))
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    if op.path == "/api/memory/import" and not isinstance(body, bytes):
        content = b"\n".join(
            json.dumps(x).encode() for x in (body if isinstance(body, list) else [body])
        )
    r = http.request(op.method.upper(), path, params=query, content=content)
    if r.status_code >= 500:
        assert r.status_code == 503 and r.json()["error"]["code"] == "job_unavailable", (
            op,
            r.status_code,
            r.text,
        )
    if op.path != "/api/memory/export" or r.status_code != 200:
        assert r.headers["content-type"].startswith(("application/json", "application/x-ndjson"))
    if r.status_code >= 400:
        assert set(r.json()["error"]) == {"message", "type", "code"}


_IDS: dict[tuple[int, str], str] = {}


def _existing_id(api, owner: str) -> str:
    """A memory that exists now (re-created when a previous example deleted it)."""
    cached = _IDS.get((id(api), owner))
    if cached and api.admin.get(f"/api/memory/{cached}").status_code == 200:
        return cached
    owner_id = {"a": api.a.key_id, "b": api.b.key_id, "global": "global"}[owner]
    r = api.admin.post("/api/memory", json={"content": f"seed of {owner}", "owner_id": owner_id})
    _IDS[(id(api), owner)] = r.json()["id"]
    return _IDS[(id(api), owner)]


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text or "x", safe="")


def test_admin_token_constant_is_used() -> None:
    assert ADMIN_TOKEN
