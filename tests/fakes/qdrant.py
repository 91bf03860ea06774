"""A fake Qdrant REST server: a real HTTP server on 127.0.0.1 that answers, fails or hangs.

Like ``tests/fakes/upstream.py`` it runs uvicorn in a daemon thread with its own event loop, so
async tests, the gateway harness and worker subprocesses can all point ``MNEMOGATE_QDRANT_URL``
at ``fake.url``. It implements just enough of the Qdrant REST API for the adapter
(``shared/vectors/qdrant.py``) to run its happy path against canned answers, and is programmable:

- ``fail_status``: answer every request with this status and a Qdrant-style error body;
- ``hang_s``: sleep this long before answering (released early by ``stop``/``reset``);
- ``responses[(method, path)] = (status, json)``: override one endpoint's answer
  (``path`` without the query string, e.g. ``"/collections/mem/points/query"``);
- ``collection_exists`` / ``points`` / ``count``: the default answers of those endpoints
  (``points``: list of ``{"id": int, "score": float}``).

Every request is recorded in ``requests`` as ``(method, path, headers, json_body_or_None)``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.server import ServedFake
from tests.fakes.upstream import free_port

Recorded = tuple[str, str, dict[str, str], Any]


def _ok(result: Any) -> dict[str, Any]:
    return {"result": result, "status": "ok", "time": 0.0001}


class FakeQdrant(ServedFake):
    """Fake Qdrant REST server listening on ``url`` (``http://127.0.0.1:PORT``)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.fail_status: int | None = None
        self.hang_s = 0.0
        self.responses: dict[tuple[str, str], tuple[int, Any]] = {}
        self.collection_exists = True
        self.points: list[dict[str, Any]] = []
        self.count = 0
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._release = threading.Event()

    # ---- app -------------------------------------------------------------------------------
    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(
                    "/{path:path}",
                    self._handle,
                    methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                )
            ]
        )

    def _default(self, method: str, path: str) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if method == "GET" and parts == [""]:
            return 200, {"title": "qdrant - fake", "version": "1.16.3"}
        if method == "GET" and parts[-1] in ("healthz", "readyz", "livez"):
            return 200, "healthz check passed"
        if parts[0] != "collections" or len(parts) < 2:
            return 404, {"status": {"error": f"Not found: {path}"}, "time": 0.0}
        tail = parts[2:]
        if method == "GET" and tail == ["exists"]:
            return 200, _ok({"exists": self.collection_exists})
        if tail == ["points", "query"]:
            return 200, _ok({"points": self.points})
        if tail == ["points", "count"]:
            return 200, _ok({"count": self.count})
        if tail in (["points"], ["points", "delete"], ["index"]):
            return 200, _ok({"operation_id": 1, "status": "completed"})
        if tail == [] and method in ("PUT", "PATCH", "DELETE"):
            return 200, _ok(True)
        return 404, {"status": {"error": f"fake qdrant: no canned answer for {path}"}}

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        method, path = request.method, request.url.path
        self.requests.append((method, path, dict(request.headers), body))
        if self.hang_s:
            # a threading.Event: stop()/reset() run in the test's thread; reset() swaps it
            await asyncio.to_thread(self._release.wait, self.hang_s)
        if self.fail_status is not None:
            return JSONResponse(
                {"status": {"error": "fake qdrant failure"}, "time": 0.0},
                status_code=self.fail_status,
            )
        status, payload = self.responses.get((method, path)) or self._default(method, path)
        return JSONResponse(payload, status_code=status)

    # ---- lifecycle -------------------------------------------------------------------------
    def stop(self) -> None:
        """Release hanging requests, stop the server and join its thread."""
        self._release.set()
        super().stop()

    def reset(self) -> None:
        """Forget recorded requests and restore default behaviour (releases hanging requests)."""
        self._release.set()
        self.requests.clear()
        self.fail_status = None
        self.hang_s = 0.0
        self.responses.clear()
        self.collection_exists = True
        self.points = []
        self.count = 0
        self._release = threading.Event()

    def __enter__(self) -> FakeQdrant:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
