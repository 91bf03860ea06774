"""Requests the HTTP parser refuses answer 400 in the JSON error shape, and the server goes on.

A real gateway under uvicorn (with the gateway's protocol, as ``mnemogate serve`` runs it);
the requests are written on raw sockets, since HTTP clients refuse to send these bytes.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from services.gateway.http_protocol import CODE
from tests.fakes.sockets import read_until
from tests.harness import GatewayHarness


def _exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw`` and return everything the server wrote before it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(raw)
        return read_until(sock, b"\x00never\x00")  # to the close


def _request(header: bytes, path: bytes = b"/v1/chat/completions") -> bytes:
    return (
        b"POST "
        + path
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + header
        + b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    )


@pytest.mark.parametrize(
    "raw",
    [
        _request(b"Authorization: Bearer mg-\x01x"),
        _request(b"X-Mnemogate-User-Id: al\x00ice"),
        _request(b"X-Odd: \x1b[31m"),
        _request(b"Bad Header Name: x"),
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \x7f\r\n\r\n",
        b"NOT A REQUEST LINE\r\n\r\n",
    ],
)
def test_a_refused_request_answers_400_in_the_json_shape(gateway_factory, raw: bytes) -> None:
    gw: GatewayHarness = gateway_factory()
    data = _exchange(gw.port, raw)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), data[:300]
    assert b"content-type: application/json" in head.lower()
    assert int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]) == len(body)
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == CODE
    assert error["message"]
    _assert_request_id(head)
    # the server answers the next request as before
    assert httpx.get(gw.base_url + "/healthz", timeout=30).status_code == 200


def _assert_request_id(head: bytes) -> None:
    fields = dict(line.split(b": ", 1) for line in head.lower().split(b"\r\n")[1:] if b": " in line)
    rid = fields[b"x-mnemogate-request-id"]
    assert len(rid) == 16 and int(rid, 16) >= 0 and fields[b"x-request-id"] == rid


@pytest.mark.parametrize(
    "raw",
    [
        _request(b"X-Api-Key: mg-\x01x", b"/v1/messages"),
        _request(b"Anthropic-Version: 2023-06-01\x00", b"/v1/messages?beta=true"),
        _request(b"X: \x1b[31m", b"/v1/messages/count_tokens"),
    ],
)
def test_a_refused_messages_request_answers_in_anthropics_shape(gateway_factory, raw) -> None:
    gw: GatewayHarness = gateway_factory()
    head, _, body = _exchange(gw.port, raw).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), head[:300]
    doc = json.loads(body)
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    assert doc["error"]["message"]
    _assert_request_id(head)
    assert b"request-id: " + head.lower().split(b"x-request-id: ")[1].split(b"\r\n")[0] in head
    assert httpx.get(gw.base_url + "/healthz", timeout=30).status_code == 200


def test_each_refusal_has_its_own_request_id(gateway_factory) -> None:
    gw: GatewayHarness = gateway_factory()
    ids = set()
    for _ in range(3):
        head = _exchange(gw.port, _request(b"X: \x01")).partition(b"\r\n\r\n")[0]
        ids.add(head.lower().split(b"x-mnemogate-request-id: ")[1].split(b"\r\n")[0])
    assert len(ids) == 3
