"""``/ui``: Memory Studio, static files shipped in the package (``services/gateway/static``).

Plain HTML, CSS and JavaScript modules: no build step, nothing loaded from other origins. The
pages call the management API with the bearer token the user signs in with, so a client key sees
exactly what the API shows it. Responses carry a strict Content-Security-Policy (same origin only,
no inline script or style) and are revalidated on every load (``no-cache``) so an upgrade is
picked up at once.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC_DIR = Path(__file__).resolve().parent / "static"

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
)


class _WithHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response of ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                headers = [h for h in message.get("headers", []) if h[0] not in names]
                message["headers"] = [*headers, *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_wrapper)


async def _to_index(_request: object) -> Response:
    return RedirectResponse("/ui/", status_code=308)


UI_ROUTES: list[BaseRoute] = [
    Route("/ui", _to_index, methods=["GET"]),
    Mount("/ui", app=_WithHeaders(StaticFiles(directory=STATIC_DIR, html=True)), name="ui"),
]
