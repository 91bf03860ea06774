"""Raw socket reads shared by the tests that speak HTTP bytes themselves."""

from __future__ import annotations

import socket


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """Bytes received on ``sock`` until they hold ``marker`` or the peer closed (then fewer).

    The socket's own timeout bounds each ``recv`` (``TimeoutError`` past it).
    """
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data
