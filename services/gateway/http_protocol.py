"""uvicorn's HTTP/1.1 protocol, answering the requests its parser refuses in the JSON error shape.

A request the parser cannot read (a header value holding a control byte, a malformed request
line) never reaches the app: uvicorn answers it itself, with a plain-text ``400 Invalid HTTP
request received.``. Clients of an OpenAI-compatible API parse ``{"error": {...}}`` bodies, so
this protocol writes the same status and message in that shape (type ``invalid_request_error``,
code ``invalid_http_request``), then closes the connection as uvicorn does
(docs/ARCHITECTURE.md, "Request path"). Everything else is uvicorn's httptools protocol.
"""

from __future__ import annotations

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from shared.formats.base import openai_error

__all__ = ["CODE", "GatewayHttpProtocol", "refusal_bytes"]

CODE = "invalid_http_request"
"""The ``error.code`` of a request the HTTP parser refused."""


def refusal_bytes(message: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """The whole ``400`` response (status line, headers, JSON body) for a refused request.

    ``message``: the parser's reason (uvicorn's "Invalid HTTP request received."); the server's
    ``default_headers`` (``server``, ``date``) come first, as uvicorn writes them.
    """
    body = msgspec.json.encode(openai_error(message, "invalid_request_error", CODE))
    head = [b"HTTP/1.1 400 Bad Request\r\n"]
    for name, value in default_headers:
        head.append(name + b": " + value + b"\r\n")
    head.append(b"content-type: application/json\r\n")
    head.append(b"content-length: " + str(len(body)).encode("ascii") + b"\r\n")
    head.append(b"connection: close\r\n\r\n")
    return b"".join(head) + body


class GatewayHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with :func:`refusal_bytes` for the requests it refuses."""

    def send_400_response(self, msg: str) -> None:
        """Write the JSON ``400`` for a request the parser refused, then close."""
        self.transport.write(refusal_bytes(msg, list(self.server_state.default_headers)))
        self.transport.close()
