"""JSON edge cases on every client route: a lone surrogate escape is named as such (not
"truncated"), and a body naming ``model`` twice at the top level is refused, so the gateway can
never route on one value while the upstream answers with another."""

from __future__ import annotations

import httpx
import pytest

from tests.services.gateway.test_formats_input import ROUTES, assert_route_error

LONE = {
    "chat": b'{"model": "m", "messages": [{"role": "user", "content": "a \\ud800 b"}]}',
    "responses": b'{"model": "m", "input": "\\ud800"}',
    "messages": (
        b'{"model": "claude/c", "max_tokens": 5, '
        b'"messages": [{"role": "user", "content": "x\\udc00"}]}'
    ),
    "embeddings": b'{"model": "e", "input": "\\ud800"}',
}


def post(gw, route, content, secret):
    headers = {"content-type": "application/json", "authorization": f"Bearer {secret}"}
    return httpx.post(gw.base_url + ROUTES[route][0], content=content, headers=headers, timeout=20)


def message_of(resp):
    """The error message (the same place in OpenAI's and Anthropic's error shapes)."""
    return str(resp.json()["error"]["message"])


@pytest.mark.parametrize("route", list(ROUTES))
def test_lone_surrogate_is_a_clear_400(formats_gateway, upstream, route):
    gw = formats_gateway()
    _, secret = gw.create_key()
    resp = post(gw, route, LONE[route], secret)
    assert assert_route_error(route, resp, 400) == "invalid_request_error"
    message = message_of(resp)
    assert "lone surrogate" in message and "truncated" not in message
    # a proper pair and an escaped backslash followed by "ud800" are fine
    fine = LONE[route].replace(b"\\ud800", b"\\ud83d\\ude00").replace(b"\\udc00", b"\\\\udc00")
    assert post(gw, route, fine, secret).status_code == 200
    routed = [c for c in upstream.calls if c.path == ROUTES[route][0]]
    assert len(routed) + len(upstream.requests) == 1


@pytest.mark.parametrize("route", list(ROUTES))
def test_duplicate_model_keys_are_refused(formats_gateway, upstream, route):
    gw = formats_gateway()
    _, secret = gw.create_key()
    body = ROUTES[route][1]
    twice = body[:-1] + b', "model": "claude/other"}'
    resp = post(gw, route, twice, secret)
    assert assert_route_error(route, resp, 400) == "invalid_request_error"
    assert "duplicate key 'model'" in message_of(resp)
    # "model" elsewhere (a value, a nested key) is not a duplicate
    nested = body[:-1] + b', "metadata": {"model": "x"}, "tag": "model"}'
    if route == "messages":  # Anthropic metadata only takes user_id: nest it elsewhere
        nested = body[:-1] + b', "extra": {"model": "x"}, "tag": "model"}'
    assert post(gw, route, nested, secret).status_code == 200
    assert upstream.calls or upstream.requests
