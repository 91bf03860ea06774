"""uvicorn's HTTP/1.1 protocol, answering the requests its parser refuses in the JSON error shape.

A request the parser cannot read (a header value holding a control byte, a malformed request
line) never reaches the app: uvicorn answers it itself, with a plain-text ``400 Invalid HTTP
request received.``. Clients of an OpenAI-compatible API parse ``{"error": {...}}`` bodies, so
this protocol writes the same status and message in the error shape of the route the request
line named, when the parser read that far (Anthropic's ``{"type": "error", ...}`` for
``/v1/messages``, else OpenAI's, type ``invalid_request_error``, code ``invalid_http_request``),
with a fresh ``x-mnemogate-request-id`` (and ``x-request-id``) like every other answer, then
closes the connection as uvicorn does (docs/ARCHITECTURE.md, "Request path"). Everything else is
uvicorn's httptools protocol.
"""

from __future__ import annotations

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.gateway.errors import ANTHROPIC_ROUTES
from services.gateway.observe import fresh_id
from shared.formats.base import openai_error
from shared.formats.messages import MESSAGES

__all__ = ["CODE", "MESSAGES_PATHS", "GatewayHttpProtocol", "refusal_bytes"]

CODE = "invalid_http_request"
"""The ``error.code`` of a request the HTTP parser refused."""


MESSAGES_PATHS = frozenset(route.encode("ascii") for route in ANTHROPIC_ROUTES)
"""Routes answering errors in Anthropic's shape (the app's Messages routes)."""


def refusal_bytes(
    message: str,
    default_headers: list[tuple[bytes, bytes]],
    url: bytes = b"",
) -> bytes:
    """The whole ``400`` response (status line, headers, JSON body) for a refused request.

    ``message``: the parser's reason (uvicorn's "Invalid HTTP request received."); the server's
    ``default_headers`` (``server``, ``date``) come first, as uvicorn writes them. ``url``: the
    request target as far as the parser read it (``b""`` when the request line itself was
    refused): one of :data:`MESSAGES_PATHS` (query string ignored) gives Anthropic's shape,
    anything else OpenAI's. A fresh request id is sent as ``x-mnemogate-request-id`` and
    ``x-request-id`` (and ``request-id`` on the Messages routes).
    """
    path = url.split(b"?", 1)[0].rstrip(b"/")
    if path in MESSAGES_PATHS:
        error = MESSAGES.error_body(message, "invalid_request_error", CODE)
    else:
        error = openai_error(message, "invalid_request_error", CODE)
    body = msgspec.json.encode(error)
    rid = fresh_id().encode("ascii")
    head = [b"HTTP/1.1 400 Bad Request\r\n"]
    for name, value in default_headers:
        head.append(name + b": " + value + b"\r\n")
    head.append(b"content-type: application/json\r\n")
    head.append(b"content-length: " + str(len(body)).encode("ascii") + b"\r\n")
    head.append(b"x-mnemogate-request-id: " + rid + b"\r\n")
    head.append(b"x-request-id: " + rid + b"\r\n")
    if path in MESSAGES_PATHS:  # the header Anthropic's SDKs read into request_id
        head.append(b"request-id: " + rid + b"\r\n")
    head.append(b"connection: close\r\n\r\n")
    return b"".join(head) + body


class GatewayHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with :func:`refusal_bytes` for the requests it refuses."""

    def send_400_response(self, msg: str) -> None:
        """Write the JSON ``400`` for a request the parser refused, then close."""
        url = self.url if isinstance(getattr(self, "url", None), bytes) else b""
        self.transport.write(refusal_bytes(msg, list(self.server_state.default_headers), url))
        self.transport.close()
