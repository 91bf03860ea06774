"""Streaming through a real uvicorn gateway: chunk-by-chunk relay and client disconnects.

httpx's ASGI transport buffers whole responses, so these use real sockets."""

from __future__ import annotations

import socket
import time

import httpx


def test_chunks_arrive_before_the_stream_ends(gateway, upstream):
    _, secret = gateway.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(10))
    upstream.stream_chunks = 10
    upstream.stream_chunk_delay_s = 0.3
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "count"}]}
    t0 = time.monotonic()
    with httpx.stream(
        "POST",
        gateway.base_url + "/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {secret}"},
        timeout=30,
    ) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        chunks = resp.iter_raw()
        first = next(chunks)
        first_at = time.monotonic() - t0
        rest = b"".join(chunks)
    total = time.monotonic() - t0
    assert b"data:" in first
    # the first chunk came long before the end: 9 more chunks were each delayed 0.3 s after it
    # (sleeps, so this holds however slow the machine is)
    assert total - first_at >= 2.0, (first_at, total)
    assert rest.rstrip().endswith(b"data: [DONE]")


def test_client_disconnect_cancels_upstream_and_gateway_keeps_serving(gateway, upstream):
    key_id, secret = gateway.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(50))
    upstream.stream_chunks = 50
    upstream.stream_chunk_delay_s = 0.2
    payload = (
        b'{"model": "m", "stream": true, "messages": '
        b'[{"role": "user", "content": "My name is Zoltan"}]}'
    )
    host, port = "127.0.0.1", gateway.port
    sock = socket.create_connection((host, port), timeout=10)
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {secret}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    received = b""
    while b"data:" not in received:
        received += sock.recv(4096)
    sock.close()  # hang up mid-stream
    assert upstream.stream_cancelled.wait(10), "upstream stream was not cancelled"
    # the gateway keeps serving
    upstream.reset()
    ok = httpx.post(
        gateway.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {secret}"},
        json={"model": "m", "messages": [{"role": "user", "content": "I prefer Rust"}]},
    )
    assert ok.status_code == 200
    items = gateway.wait_for_memories(lambda ms: any("Rust" in m.content for m in ms), key_id)
    # the cut-short exchange was not learned
    assert not any("Zoltan" in m.content for m in items)


def test_upstream_timeout_mid_stream_ends_with_an_error_event(gateway_factory, upstream):
    gw = gateway_factory(upstream_timeout_s=1.0)
    key_id, secret = gw.create_key()
    upstream.reply_text = " ".join(f"w{i}" for i in range(20))
    upstream.stream_chunks = 20
    upstream.stream_chunk_delay_s = 0.3  # the whole stream takes longer than the timeout
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "My name is Timothy"}],
    }
    with httpx.stream(
        "POST",
        gw.base_url + "/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {secret}"},
        timeout=30,
    ) as resp:
        assert resp.status_code == 200
        text = b"".join(resp.iter_raw()).decode()
    last = [line for line in text.splitlines() if line.startswith("data:")][-1]
    assert '"error"' in last and "upstream_timeout" in last
    assert "[DONE]" not in text
    time.sleep(0.5)
    assert not any("Timothy" in m.content for m in gw.memories(key_id))
