"""End-user sources and forget lead-ins through a live gateway (embedded mode, fake upstream).

Chat completions honour ``safety_identifier`` and ``metadata.user_id`` like the other formats;
end-user and session headers are read as UTF-8 bytes; a forget after an interjection in a
multi-turn body leaves nothing of its target learned; a forget is honoured with memory off; a
gateway error on a memory route still reports ``x-mnemogate-memory-tokens: 0``.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.test_user_control import SLOW_OK, contents, say, teach, wait
from tests.harness import GatewayHarness
from tests.lifecycle_seed import query

CHAT = "/v1/chat/completions"


def _post(
    gw: GatewayHarness, secret: str, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> httpx.Response:
    return httpx.post(
        gw.base_url + CHAT,
        headers=[(b"authorization", f"Bearer {secret}".encode()), *headers],
        json={"model": "m", **body},
        timeout=20,
    )


def _users(gw: GatewayHarness, owner: str) -> set[str]:
    return {m.user_id for m in gw.memories(owner)}


def test_chat_reads_safety_identifier_and_metadata_user_id(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("eu-body")
    assert say(gw, secret, "I live in Berlin", safety_identifier="alice").status_code == 200
    wait(lambda: "alice" in _users(gw, key), "alice's memory")
    r = say(gw, secret, "I live in Paris", metadata={"user_id": "bob", "tag": "x"})
    assert r.status_code == 200
    wait(lambda: "bob" in _users(gw, key), "bob's memory")
    assert _users(gw, key) == {"alice", "bob"}
    long_id = "u" * 257
    for body in ({"safety_identifier": long_id}, {"metadata": {"user_id": long_id}}):
        r = say(gw, secret, "hi", **body)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
        assert r.headers["x-mnemogate-memory-tokens"] == "0"


def test_end_user_and_session_headers_are_utf8(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("eu-utf8")
    messages = [{"role": "user", "content": "I live in Berlin"}]
    user = [(b"x-mnemogate-user", "jürgen".encode())]
    assert _post(gw, secret, {"messages": messages}, user).status_code == 200
    wait(lambda: bool(gw.memories(key)), "the header user's memory")
    assert say(gw, secret, "I live in Paris", user="jürgen").status_code == 200
    wait(lambda: any("Paris" in c for c in contents(gw, key)), "the body user's memory")
    assert _users(gw, key) == {"jürgen"}
    session = [(b"x-mnemogate-session-id", "café-1".encode())]
    assert _post(gw, secret, {"messages": messages}, session).status_code == 200
    for name in (b"x-mnemogate-user", b"x-mnemogate-session-id"):
        r = _post(gw, secret, {"messages": messages}, [(name, b"j\xfcrgen")])
        assert r.status_code == 400, name
        assert "UTF-8" in r.json()["error"]["message"]


def test_interjection_forget_in_a_multi_turn_body_learns_nothing_of_it(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("eu-locker")
    messages = [
        {"role": "user", "content": "My locker number is 12"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "actually, forget my locker number"},
    ]
    r = _post(gw, secret, {"messages": messages}, [])
    assert r.status_code == 200 and r.headers["x-mnemogate-memory-forget"] == "queued"
    db = gw.settings.db_path
    sql = "SELECT count(*) FROM memory_events WHERE kind='forget'"
    wait(lambda: query(db, sql)[0][0] == 1, "the forget job")
    teach(gw, secret, key, "I prefer green tea")  # a later learn job proves learning ran
    assert not any("locker" in c.lower() for c in contents(gw, key))


def test_forget_is_honoured_with_memory_off(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("eu-off")
    teach(gw, secret, key, "I live in Berlin")
    r = say(gw, secret, "Please forget where I live", {"x-mnemogate-no-memory": "1"})
    assert r.status_code == 200 and r.headers["x-mnemogate-memory-forget"] == "queued"
    assert r.headers["x-mnemogate-memory-recall"] == "off"
    wait(lambda: not any("Berlin" in c for c in contents(gw, key)), "the forget job")


def test_an_end_user_or_session_named_twice_differently_is_refused(gateway_factory) -> None:
    gw = gateway_factory(**SLOW_OK)
    key, secret = gw.create_key("eu-twice")
    messages = {"messages": [{"role": "user", "content": "I live in Berlin"}]}
    for name in (b"x-mnemogate-user", b"x-openwebui-user-id", b"x-mnemogate-session-id"):
        r = _post(gw, secret, messages, [(name, b"alice"), (name, b"bob")])
        assert r.status_code == 400, (name, r.text)
        assert r.json()["error"]["code"] == "duplicate_header"
    same = _post(gw, secret, messages, [(b"x-mnemogate-user", b"alice")] * 2)
    assert same.status_code == 200  # the same value twice names one end user
    wait(lambda: _users(gw, key) == {"alice"}, "alice's memory")
    assert query(gw.settings.db_path, "SELECT count(*) FROM memories")[0][0] >= 1
