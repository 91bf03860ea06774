"""A fake rerank endpoint speaking the common rerank API, a real HTTP server on 127.0.0.1.

``POST /v1/rerank`` with ``{model, query, documents, top_n}`` answers ``{"results": [{"index",
"relevance_score"}]}`` best first, as Cohere, Jina and Voyage do. The score of a document is the
share of the query's lower-case words it contains (a stand-in for a cross-encoder that tests can
predict), or ``score(query, document)`` when a test sets one. Programmable: ``delay_s`` before
answering, ``fail_status`` to answer an error, ``malformed`` to answer a body without results;
every request body is kept in ``requests``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.server import ServedFake
from tests.fakes.upstream import free_port


def overlap_score(query: str, document: str) -> float:
    """Share of the query's lower-case words (``\\w+``) found in ``document``."""
    words = set(re.findall(r"\w+", query.lower()))
    found = set(re.findall(r"\w+", document.lower()))
    return len(words & found) / len(words) if words else 0.0


class FakeReranker(ServedFake):
    """Rerank server at ``url`` (``http://127.0.0.1:PORT/v1/rerank``)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.delay_s = 0.0
        self.fail_status: int | None = None
        self.malformed = False
        self.score: Callable[[str, str], float] = overlap_score
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1/rerank"

    async def _rerank(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_status is not None:
            return JSONResponse({"message": "rerank failed"}, status_code=self.fail_status)
        if self.malformed:
            return JSONResponse({"id": "x", "meta": {}})
        scored = [
            {"index": i, "relevance_score": self.score(body["query"], doc)}
            for i, doc in enumerate(body["documents"])
        ]
        scored.sort(key=lambda r: -r["relevance_score"])
        return JSONResponse({"id": "rerank-fake", "results": scored[: body.get("top_n")]})

    def _app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/rerank", self._rerank, methods=["POST"])])

    def reset(self) -> None:
        """Forget requests and restore default behaviour."""
        self.requests.clear()
        self.headers.clear()
        self.delay_s = 0.0
        self.fail_status = None
        self.malformed = False
        self.score = overlap_score
