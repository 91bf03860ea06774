"""User control on every memory route: the Anthropic Messages route and the Responses route
resolve the end user from their own body fields (too long → 400 in the route's error shape),
report the switches and the injected tokens, and honour a forget said in that format."""

from __future__ import annotations

import json

import httpx

MODEL = "claude/claude-test"


def messages(gw, secret, text, **body):
    return httpx.post(
        gw.base_url + "/v1/messages",
        headers={"x-api-key": secret, "anthropic-version": "2023-06-01"},
        json={
            "model": MODEL,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": text}],
            **body,
        },
        timeout=20,
    )


def test_messages_route_end_user_switch_headers_and_forget(formats_gateway, upstream) -> None:
    gw = formats_gateway()
    key, secret = gw.create_key()
    alice = {"metadata": {"user_id": "alice"}}
    assert messages(gw, secret, "I live in Berlin", **alice).status_code == 200
    gw.wait_for_memories(lambda ms: any("Berlin" in m.content for m in ms), owner_id=key)
    assert {m.user_id for m in gw.memories(key)} == {"alice"}

    r = messages(gw, secret, "Where do I live?", **alice)
    assert r.headers["x-mnemogate-memory-recall"] == "on"
    assert int(r.headers["x-mnemogate-memory-tokens"]) > 0
    assert "Berlin" in json.dumps([c.body for c in upstream.calls][-1])

    r = messages(gw, secret, "Please forget where I live", **alice)
    assert r.status_code == 200 and r.headers["x-mnemogate-memory-forget"] == "queued"
    assert "Berlin" not in json.dumps([c.body for c in upstream.calls][-1])
    gw.wait_for_memories(lambda ms: not any("Berlin" in m.content for m in ms), owner_id=key)

    too_long = messages(gw, secret, "hi", metadata={"user_id": "u" * 257})
    assert too_long.status_code == 400
    assert too_long.json()["type"] == "error"  # Anthropic's error shape on this route


def test_responses_route_reports_switches_and_tokens(formats_gateway, upstream) -> None:
    gw = formats_gateway()
    key, secret = gw.create_key()
    auth = {"authorization": f"Bearer {secret}"}
    chat = {"model": "m", "messages": [{"role": "user", "content": "I live in Berlin"}]}
    assert httpx.post(gw.base_url + "/v1/chat/completions", headers=auth, json=chat).is_success
    gw.wait_for_memories(lambda ms: any("Berlin" in m.content for m in ms), owner_id=key)
    r = httpx.post(
        gw.base_url + "/v1/responses",
        headers={**auth, "x-mnemogate-no-learn": "1"},
        json={"model": "m", "input": "Where do I live?"},
        timeout=20,
    )
    assert r.status_code == 200
    assert r.headers["x-mnemogate-memory-learn"] == "off"
    assert r.headers["x-mnemogate-memory-learn-by"] == "request"
    assert int(r.headers["x-mnemogate-memory-tokens"]) > 0
    r = httpx.post(
        gw.base_url + "/v1/responses",
        headers=auth,
        json={"model": "m", "input": "hi", "safety_identifier": "s" * 257},
        timeout=20,
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
