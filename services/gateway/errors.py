"""One renderer for every error: OpenAI's ``{"error": {"message", "type", "code"}}`` shape."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from shared.errors import MnemogateError

log = logging.getLogger("mnemogate.gateway")

_HTTP_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("not_found_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    413: ("invalid_request_error", "payload_too_large"),
}


def error_response(status: int, message: str, type_: str, code: str | None) -> JSONResponse:
    """A JSON error response in the documented shape."""
    return JSONResponse(
        {"error": {"message": message, "type": type_, "code": code}}, status_code=status
    )


async def mnemogate_error_handler(request: Request, exc: Exception) -> Response:
    """Render a :class:`MnemogateError` with its own status, type and code."""
    assert isinstance(exc, MnemogateError)
    return error_response(exc.status, exc.message, exc.type, exc.code)


async def http_error_handler(request: Request, exc: Exception) -> Response:
    """Render Starlette's HTTP errors (404 route, 405 method) in the same shape."""
    assert isinstance(exc, HTTPException)
    type_, code = _HTTP_TYPES.get(exc.status_code, ("server_error", None))
    return error_response(exc.status_code, str(exc.detail), type_, code)


async def unhandled_error_handler(request: Request, exc: Exception) -> Response:
    """Last resort: log and answer 500 in the documented shape (no internals leaked)."""
    log.exception("unhandled error on %s", request.url.path)
    return error_response(500, "internal error", "server_error", "internal_error")


EXCEPTION_HANDLERS = {
    MnemogateError: mnemogate_error_handler,
    HTTPException: http_error_handler,
    Exception: unhandled_error_handler,
}
