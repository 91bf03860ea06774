"""A fake OpenAI-compatible provider: a real HTTP server on 127.0.0.1 for tests and benchmarks.

It runs uvicorn in a background thread with its own event loop, so synchronous tests, async tests
and subprocess gateways can all talk to it. Every chat request body it receives is recorded in
``requests`` (decoded JSON), so tests assert on exactly what the gateway forwarded.

Behaviour is programmable per test:
- ``reply_text``: the assistant content of every chat answer (default ``"OK"``);
- ``mirror`` / ``mirror_model``: answer with the received messages (all requests / only those
  for that model, non-streamed); with ``mirror`` a Responses or Messages answer is the JSON of
  that request's own ``instructions``/``input`` or ``system``/``messages``;
- ``responder``: optional ``callable(body) -> (status, json_body)`` overriding the answer;
- ``fail_status``: answer every chat request with this status and an OpenAI error body;
- ``delay_s``: sleep before answering (for timeout tests); ``stream_chunk_delay_s`` between chunks;
- ``delay_for``: optional ``callable(body) -> seconds`` to sleep before answering that request;
- ``embedding_dim`` / ``embeddings_status``: behaviour of ``POST /v1/embeddings``;
- ``extra_headers``: headers sent with every answer (rate limits, request ids...);
- ``stream_tail``: when not None, these bytes replace the final event of every stream
  (``b""`` ends the stream cleanly without its terminal event).

``POST /v1/responses`` (OpenAI Responses) and ``POST /v1/messages`` (Anthropic Messages) answer
in their own formats, JSON or SSE (see ``tests/fakes/formats.py``); every request to them and to
``/v1/embeddings`` is recorded in ``calls`` (path, raw bytes, decoded body, header pairs).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.formats import (
    ANTHROPIC_ERROR,
    OPENAI_ERROR,
    message_events,
    message_object,
    response_events,
    response_object,
    stored_input_items,
)
from tests.fakes.server import ServedFake

Responder = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


@dataclass
class Recorded:
    """One request the fake received: path, raw body, decoded body, header pairs (in order)."""

    path: str
    raw: bytes
    body: Any
    header_pairs: list[tuple[str, str]]
    method: str = "POST"
    query: str = ""

    @property
    def headers(self) -> dict[str, str]:
        """Headers by lower-case name (the last value wins)."""
        return {k.lower(): v for k, v in self.header_pairs}


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector for ``text`` (bag of hashed lower-case words), length ``dim``."""
    vec = [0.0] * dim
    for word in text.lower().split():
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


class FakeUpstream(ServedFake):
    """OpenAI-compatible fake provider listening on ``base_url`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.reply_text = "OK"
        self.mirror = False
        self.mirror_model: str | None = None  # mirror only requests for this model
        self.responder: Responder | None = None
        #: (status, body bytes, media type) answered to every chat request instead of a completion
        self.raw_reply: tuple[int, bytes, str] | None = None
        self.fail_status: int | None = None
        self.delay_s = 0.0
        self.delay_for: Callable[[dict[str, Any]], float] | None = None
        self.stream_chunk_delay_s = 0.0
        self.stream_chunks = 5
        self.embedding_dim = 16
        self.embeddings_status = 200
        self.embeddings_delay_s = 0.0
        self.zero_embeddings = False  # answer all-zero vectors (texts with no known token)
        self.stream_cancelled = threading.Event()
        self.calls: list[Recorded] = []
        self.extra_headers: dict[str, str] = {}
        self.stream_tail: bytes | None = None
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    # ---- app -------------------------------------------------------------------------------
    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/responses/{rid}", self._stored, methods=["GET", "DELETE"]),
                Route("/v1/responses/{rid}/cancel", self._stored, methods=["POST"]),
                Route("/v1/responses/{rid}/input_items", self._stored, methods=["GET"]),
            ]
        )

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "t"}]}
        )

    async def _record(self, request: Request) -> Any:
        raw = await request.body()
        body = json.loads(raw) if raw else None
        pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        query = request.url.query
        self.calls.append(Recorded(request.url.path, raw, body, pairs, request.method, query))
        return body

    async def _count_tokens(self, request: Request) -> Response:
        await self._record(request)
        if self.fail_status is not None:
            return JSONResponse(ANTHROPIC_ERROR, status_code=self.fail_status)
        return JSONResponse({"input_tokens": 42}, headers=self.extra_headers)

    async def _stored(self, request: Request) -> Response:
        """Retrieve, delete, cancel a stored response or list its input items (Responses API)."""
        await self._record(request)
        if self.fail_status is not None:
            return JSONResponse(OPENAI_ERROR, status_code=self.fail_status)
        rid = request.path_params["rid"]
        if request.method == "DELETE":
            payload: dict[str, Any] = {"id": rid, "object": "response.deleted", "deleted": True}
        elif request.url.path.endswith("/input_items"):
            payload = stored_input_items()
        else:
            cancelled = request.url.path.endswith("/cancel")
            payload = response_object("fake-model", self.reply_text)
            payload.update(id=rid, status="cancelled" if cancelled else "completed")
        return JSONResponse(payload, headers=self.extra_headers)

    async def _responses(self, request: Request) -> Response:
        return await self._format_answer(await self._record(request), "responses")

    async def _messages(self, request: Request) -> Response:
        return await self._format_answer(await self._record(request), "messages")

    async def _format_answer(self, body: Any, kind: str) -> Response:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_status is not None:
            error = ANTHROPIC_ERROR if kind == "messages" else OPENAI_ERROR
            return JSONResponse(error, status_code=self.fail_status, headers=self.extra_headers)
        model = body.get("model", "fake-model")
        text = self.reply_text
        if self.mirror:  # this request's own input: its instructions/system and turns
            fields = ("instructions", "input") if kind == "responses" else ("system", "messages")
            received = {f: body[f] for f in fields if f in body}
            text = json.dumps(received, ensure_ascii=False)
        if body.get("stream"):
            make = response_events if kind == "responses" else message_events
            return StreamingResponse(
                self._paced(make(model, text, self.stream_chunks)),
                media_type="text/event-stream",
                headers=self.extra_headers,
            )
        make_obj = response_object if kind == "responses" else message_object
        return JSONResponse(make_obj(model, text), headers=self.extra_headers)

    def _tailed(self, events: list[bytes]) -> list[bytes]:
        """``events`` with the final one replaced by ``stream_tail`` when that is set."""
        return events if self.stream_tail is None else [*events[:-1], self.stream_tail]

    async def _paced(self, events: Iterator[bytes]) -> AsyncIterator[bytes]:
        try:
            for event in self._tailed(list(events)):
                yield event
                if self.stream_chunk_delay_s:
                    await asyncio.sleep(self.stream_chunk_delay_s)
        except (asyncio.CancelledError, GeneratorExit):
            self.stream_cancelled.set()
            raise

    async def _embeddings(self, request: Request) -> Response:
        body = await self._record(request)
        self.embedding_requests.append(body)
        if self.embeddings_delay_s:
            await asyncio.sleep(self.embeddings_delay_s)
        if self.embeddings_status != 200:
            return JSONResponse(
                {"error": {"message": "fake failure", "type": "rate_limit", "code": None}},
                status_code=self.embeddings_status,
                headers=self.extra_headers,
            )
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [0.0] * self.embedding_dim
                if self.zero_embeddings
                else hashed_embedding(t, self.embedding_dim),
            }
            for i, t in enumerate(inputs)
        ]
        return JSONResponse(
            {"object": "list", "data": data, "model": body.get("model", "")},
            headers=self.extra_headers,
        )

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        self.raw_requests.append(raw)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.delay_for is not None and (pause := self.delay_for(body)):
            await asyncio.sleep(pause)
        if self.fail_status is not None:
            return JSONResponse(
                OPENAI_ERROR, status_code=self.fail_status, headers=self.extra_headers
            )
        if self.responder is not None:
            status, payload = self.responder(body)
            return JSONResponse(payload, status_code=status)
        if self.raw_reply is not None:  # a broken answer: a proxy's page, a body cut short
            status, raw_body, media_type = self.raw_reply
            return Response(raw_body, status_code=status, media_type=media_type)
        model = body.get("model", "fake-model")
        if self.mirror:  # answer with the messages received (benchmarks read the injection)
            self.reply_text = json.dumps(body.get("messages", []), ensure_ascii=False)
        if body.get("stream"):
            return StreamingResponse(
                self._stream(model), media_type="text/event-stream", headers=self.extra_headers
            )
        content = self.reply_text
        if self.mirror_model is not None and model == self.mirror_model:
            content = json.dumps(body.get("messages", []), ensure_ascii=False)
        return JSONResponse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
            headers=self.extra_headers,
        )

    async def _stream(self, model: str) -> AsyncIterator[bytes]:
        words = self.reply_text.split(" ")
        per = max(1, len(words) // max(1, self.stream_chunks))
        pieces = [" ".join(words[i : i + per]) for i in range(0, len(words), per)]
        try:
            for i, piece in enumerate(pieces):
                text = piece if i == 0 else " " + piece
                chunk = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()
                if self.stream_chunk_delay_s:
                    await asyncio.sleep(self.stream_chunk_delay_s)
            done = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
            yield f"data: {json.dumps(done)}\n\n".encode()
            yield b"data: [DONE]\n\n" if self.stream_tail is None else self.stream_tail
        except (asyncio.CancelledError, GeneratorExit):
            self.stream_cancelled.set()
            raise

    # ---- lifecycle -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget recorded requests and restore default behaviour."""
        self.requests.clear()
        self.raw_requests.clear()
        self.headers.clear()
        self.embedding_requests.clear()
        self.reply_text = "OK"
        self.mirror = False
        self.mirror_model = None
        self.responder = None
        self.raw_reply = None
        self.fail_status = None
        self.delay_s = 0.0
        self.delay_for = None
        self.stream_chunk_delay_s = 0.0
        self.embeddings_status = 200
        self.embeddings_delay_s = 0.0
        self.zero_embeddings = False
        self.stream_cancelled.clear()
        self.calls.clear()
        self.extra_headers = {}
        self.stream_tail = None
        self.stream_chunks = 5


def main() -> None:
    """Run the fake upstream in the foreground: ``python -m tests.fakes.upstream --port N``."""
    import argparse

    parser = argparse.ArgumentParser(description="fake OpenAI-compatible upstream")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reply", default="OK")
    parser.add_argument("--mirror", action="store_true", help="reply with the received messages")
    parser.add_argument(
        "--mirror-model", default=None, help="mirror only (non-streamed) requests for this model"
    )
    args = parser.parse_args()
    fake = FakeUpstream()
    if args.port:
        fake.port = args.port
        fake.base_url = f"http://127.0.0.1:{args.port}/v1"
    fake.reply_text = args.reply
    fake.mirror = args.mirror
    fake.mirror_model = args.mirror_model
    uvicorn.run(
        fake._app(), host="127.0.0.1", port=fake.port, log_level="warning", access_log=False
    )


if __name__ == "__main__":
    main()
