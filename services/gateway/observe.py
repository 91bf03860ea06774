"""ASGI middleware of the gateway: request id, request metrics and the access log line.

One hook for every route. The request id is the client's ``x-request-id`` when it is sane
(1..128 characters of ``[A-Za-z0-9._:-]``), else 16 random hex digits. It is returned as
``x-mnemogate-request-id``, and as ``x-request-id`` unless a proxied response carries the
provider's own ``x-request-id`` (passed back unchanged), and it is on every log line logged while
the request runs. When the response headers go out the request is counted by route template and
status (:func:`shared.metrics.note_request`). When it ends, one ``mnemogate.access`` INFO line
with route, status, latency, tier and injected count (never content) is logged when
``access_log`` is on (``MNEMOGATE_LOG_FORMAT=json``; the text format keeps uvicorn's quiet
default).
"""

from __future__ import annotations

import logging
import random
import re
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.errors import ANTHROPIC_ROUTES
from shared.metrics import CURRENT, RequestTelemetry, note_request

log = logging.getLogger("mnemogate.access")

REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
UNMATCHED = "unmatched"


def fresh_id() -> str:
    """16 random hex digits identifying one request.

    Not a secret (it is sent back to the client and logged), only unique: drawn from the
    process's seeded Mersenne Twister (:mod:`random`, reseeded in a forked child), which costs no
    system call, unlike :mod:`secrets`.
    """
    return f"{random.getrandbits(64):016x}"


def current_request_id() -> str:
    """The id of the request being served (``x-mnemogate-request-id``), else a fresh one.

    What learning and forget jobs record (memory ``metadata.request_id``, events), so a memory
    and an event can be traced to the response and log lines of the request that caused them.
    """
    telemetry = CURRENT.get()
    return telemetry.request_id if telemetry is not None else fresh_id()


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's ``x-request-id`` if it matches :data:`REQUEST_ID_RE`, else a fresh one."""
    for name, value in headers:
        if name == b"x-request-id":
            text = value.decode("latin-1")
            if REQUEST_ID_RE.fullmatch(text):
                return text
            break
    return fresh_id()


def with_request_id(
    headers: list[tuple[bytes, bytes]], request_id: bytes, *, anthropic: bool = False
) -> list[tuple[bytes, bytes]]:
    """``headers`` plus the gateway's request id.

    Always as ``x-mnemogate-request-id``; also as ``x-request-id`` unless the response already
    has one (an upstream provider's id, which header fidelity passes back unchanged); with
    ``anthropic`` (the Messages routes) also as ``request-id``, the header Anthropic's API sends
    and its SDKs read into ``request_id``, unless the upstream's is there.
    """
    out = [h for h in headers if h[0] != b"x-mnemogate-request-id"]
    out.append((b"x-mnemogate-request-id", request_id))
    if not any(name == b"x-request-id" for name, _ in headers):
        out.append((b"x-request-id", request_id))
    if anthropic and not any(name == b"request-id" for name, _ in headers):
        out.append((b"request-id", request_id))
    return out


def route_of(scope: Scope) -> str:
    """The matched route's path template (``/api/memory/{id}``), or ``unmatched``.

    Bounded label values: never the raw path.
    """
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else UNMATCHED


class ObserveMiddleware:
    """Wraps the app (see the module docstring); WebSocket and lifespan scopes pass through."""

    def __init__(self, app: ASGIApp, access_log: bool = False) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request with telemetry."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        telemetry = RequestTelemetry(request_id_from(scope.get("headers", [])))
        token = CURRENT.set(telemetry)
        status = 500
        started_response = False
        header_id = telemetry.request_id.encode()
        path = scope.get("path", "")
        anthropic = isinstance(path, str) and path.rstrip("/") in ANTHROPIC_ROUTES

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                started_response = True
                status = int(message["status"])
                message["headers"] = with_request_id(
                    message.get("headers", []), header_id, anthropic=anthropic
                )
                note_request(
                    route_of(scope), status, time.perf_counter() - started, telemetry.upstream_s
                )
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            if not started_response:  # an exception before any byte: the server answers 500
                note_request(route_of(scope), 500, time.perf_counter() - started, None)
            if self.access_log:
                self._access_line(scope, status, started, telemetry)
            CURRENT.reset(token)

    @staticmethod
    def _access_line(
        scope: Scope, status: int, started: float, telemetry: RequestTelemetry
    ) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        fields: dict[str, object] = {
            "method": scope.get("method", ""),
            "route": route_of(scope),
            "status": status,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        if telemetry.tier is not None:
            fields["tier"] = telemetry.tier
            fields["injected"] = telemetry.injected
            if telemetry.degraded:
                fields["degraded"] = telemetry.degraded
        if telemetry.upstream_s is not None:
            fields["upstream_ms"] = round(telemetry.upstream_s * 1000, 3)
        log.info("%s %s %d", fields["method"], fields["route"], status, extra={"fields": fields})
