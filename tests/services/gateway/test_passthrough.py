"""Pass-through routes of the official SDKs' other calls, through the real clients against the
fake upstream: ``messages.count_tokens`` (Anthropic), ``responses.retrieve`` / ``cancel`` /
``delete`` / ``input_items.list`` (OpenAI). Authenticated, the provider's key replaces the
caller's, client headers forwarded and upstream headers passed back, nothing recalled."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from tests.services.gateway.conftest import anthropic_client, openai_client


def calls_to(upstream, path):
    return [c for c in upstream.calls if c.path == path]


def test_count_tokens_goes_to_the_messages_provider(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    upstream.extra_headers = {"request-id": "req_count"}
    client = anthropic_client(gw, secret, default_headers={"anthropic-beta": "tokens-1"})
    raw = client.messages.with_raw_response.count_tokens(
        model="claude/claude-test", messages=[{"role": "user", "content": "Hello there"}]
    )
    assert raw.parse().input_tokens == 42
    assert raw.headers["request-id"] == "req_count"
    (sent,) = calls_to(upstream, "/v1/messages/count_tokens")
    assert sent.body["model"] == "claude-test"  # provider prefix stripped
    assert sent.body["messages"] == [{"role": "user", "content": "Hello there"}]  # no memory
    assert sent.headers["x-api-key"] == "sk-ant-upstream-test"
    assert sent.headers["anthropic-beta"] == "tokens-1"
    assert "anthropic-version" in sent.headers
    with pytest.raises(anthropic.AuthenticationError):
        anthropic_client(gw, "mg-wrong").messages.count_tokens(
            model="claude/c", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(anthropic.BadRequestError) as info:  # the default provider: no messages
        client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "x"}])
    assert info.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_stored_responses_retrieve_cancel_delete_and_input_items(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    upstream.reply_text = "Stored answer"
    upstream.extra_headers = {"x-request-id": "req_stored"}
    client = openai_client(gw, secret)
    raw = client.responses.with_raw_response.retrieve(
        "resp_abc", include=["reasoning.encrypted_content"]
    )
    assert raw.parse().output_text == "Stored answer"
    assert raw.headers["x-request-id"] == "req_stored"
    assert client.responses.cancel("resp_abc").status == "cancelled"
    items = client.responses.input_items.list("resp_abc", limit=5)
    assert [i.id for i in items.data] == ["msg_in"]
    client.responses.delete("resp_abc")
    sent = [(c.method, c.path) for c in upstream.calls]
    assert sent == [
        ("GET", "/v1/responses/resp_abc"),
        ("POST", "/v1/responses/resp_abc/cancel"),
        ("GET", "/v1/responses/resp_abc/input_items"),
        ("DELETE", "/v1/responses/resp_abc"),
    ]
    assert "include" in upstream.calls[0].query and "limit=5" in upstream.calls[2].query
    for call in upstream.calls:
        assert call.headers["authorization"] == "Bearer sk-upstream-test"


def test_stored_responses_need_a_key_and_a_sane_id(formats_gateway, upstream):
    gw = formats_gateway()
    _, secret = gw.create_key()
    with pytest.raises(openai.AuthenticationError):
        openai_client(gw, "mg-wrong").responses.retrieve("resp_abc")
    for bad_id in ("%2E%2E", "resp%21x", "-x"):  # "..", "resp!x": never a path or a strange id
        bad = httpx.get(
            f"{gw.base_url}/v1/responses/{bad_id}", headers={"authorization": f"Bearer {secret}"}
        )
        assert bad.status_code == 400, bad_id
        assert bad.json()["error"]["code"] == "invalid_response_id"
    assert upstream.calls == []
    upstream.fail_status = 404
    with pytest.raises(openai.NotFoundError) as info:  # the upstream's answer, passed through
        openai_client(gw, secret).responses.retrieve("resp_gone")
    assert info.value.body["message"] == "upstream exploded"  # type: ignore[index]
    assert calls_to(upstream, "/v1/responses/resp_gone")
