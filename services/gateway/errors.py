"""One renderer for every error, in the shape of the route that failed.

OpenAI's ``{"error": {"message", "type", "code"}}`` everywhere, except on the Anthropic
Messages routes (``/v1/messages`` and its ``/count_tokens``), which answer Anthropic's
``{"type": "error", "error": {"type", "message"}}`` so Anthropic clients read their own errors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.gateway.memory_control import TOKENS_HEADER
from shared.errors import MnemogateError
from shared.formats.base import openai_error
from shared.formats.messages import MESSAGES

log = logging.getLogger("mnemogate.gateway")

_HTTP_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("not_found_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    408: ("invalid_request_error", "request_timeout"),
    413: ("invalid_request_error", "payload_too_large"),
}


ANTHROPIC_ROUTES = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
#: Routes that inject memory: every response of theirs says how many tokens memory added.
MEMORY_ROUTES = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/messages"})


def error_response(
    status: int,
    message: str,
    type_: str,
    code: str | None,
    path: str = "",
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A JSON error response in the shape of the route at ``path`` (OpenAI's by default).

    On a memory route it carries ``x-mnemogate-memory-tokens: 0`` (nothing was injected), as
    every response of those routes does.
    """
    route = path.rstrip("/")
    if route in ANTHROPIC_ROUTES:
        body = MESSAGES.error_body(message, type_, code)
    else:
        body = openai_error(message, type_, code)
    merged = {**(headers or {}), **({TOKENS_HEADER: "0"} if route in MEMORY_ROUTES else {})}
    return JSONResponse(body, status_code=status, headers=merged or None)


def allowed_methods(request: Request) -> str:
    """The ``Allow`` value for ``request``'s path (RFC 9110 §15.5.6 requires it on a 405).

    The methods of every route declared with the same path template as the first route matching
    the path. Routes here are one per method, so Starlette's own value (the first matching
    route's methods) is not enough; a static path such as ``/api/memory/bulk-delete`` does not
    pick up the methods of ``/api/memory/{id}``.
    """
    routes = [r for r in request.app.routes if isinstance(r, Route) and r.methods]
    path = request.scope["path"]
    first = next((r for r in routes if r.path_regex.match(path)), None)
    if first is None:
        return ""
    methods: set[str] = set()
    for route in routes:
        if route.path == first.path and route.methods:
            methods |= route.methods
    return ", ".join(sorted(methods))


#: nginx's status for "client closed the request"; nobody reads it, the client is gone.
CLIENT_CLOSED_REQUEST = 499


async def mnemogate_error_handler(request: Request, exc: Exception) -> Response:
    """Render a :class:`MnemogateError` with its own status, type and code.

    A 408 also closes the connection (RFC 9110 §15.5.9): the rest of the body may still come.
    """
    assert isinstance(exc, MnemogateError)
    response = error_response(exc.status, exc.message, exc.type, exc.code, request.url.path)
    if exc.status == HTTPStatus.REQUEST_TIMEOUT:
        response.headers["connection"] = "close"
    return response


async def client_disconnect_handler(request: Request, exc: Exception) -> Response:
    """A client that hung up while its body was read: log at debug level, answer nothing useful.

    Not an error of the gateway, so neither the unhandled-error log nor a 5xx.
    """
    log.debug("client disconnected while sending the body of %s", request.url.path)
    return Response(status_code=CLIENT_CLOSED_REQUEST)


async def http_error_handler(request: Request, exc: Exception) -> Response:
    """Render Starlette's HTTP errors (404 route, 405 method) in the same shape."""
    assert isinstance(exc, HTTPException)
    type_, code = _HTTP_TYPES.get(exc.status_code, ("server_error", None))
    headers = dict(exc.headers or {})
    if exc.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
        headers["Allow"] = allowed_methods(request) or headers.get("Allow", "")
    return error_response(exc.status_code, str(exc.detail), type_, code, request.url.path, headers)


async def unhandled_error_handler(request: Request, exc: Exception) -> Response:
    """Last resort: log and answer 500 in the documented shape (no internals leaked)."""
    log.exception("unhandled error on %s", request.url.path)
    return error_response(500, "internal error", "server_error", "internal_error", request.url.path)


EXCEPTION_HANDLERS = {
    MnemogateError: mnemogate_error_handler,
    ClientDisconnect: client_disconnect_handler,
    HTTPException: http_error_handler,
    Exception: unhandled_error_handler,
}
