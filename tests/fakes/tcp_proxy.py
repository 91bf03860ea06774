"""A TCP proxy on 127.0.0.1 that can stop forwarding: a server that hangs mid-conversation.

Tests put it between a process and a real server (Redis) to see how the process behaves when
its peer stops answering without closing the connection, which a stopped server cannot show.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading

from tests.fakes.upstream import free_port


class PausableProxy:
    """Forward ``127.0.0.1:<port>`` to ``127.0.0.1:<target_port>`` until :meth:`pause`.

    While paused, bytes are neither read nor forwarded in either direction and new connections
    are accepted but not served: the client sees a peer that hangs. :meth:`close` stops the
    listener and drops every connection.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._running = threading.Event()
        self._running.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def pause(self) -> None:
        """Stop forwarding (connections stay open)."""
        self._running.clear()

    def close(self) -> None:
        """Stop listening and close every connection."""
        self._closed.set()
        self._running.set()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        while not self._closed.is_set():
            if not self._running.is_set():
                self._running.wait(0.1)
                continue
            try:
                ready, _, _ = select.select([a, b], [], [], 0.1)
                for sock in ready:
                    if not self._running.is_set():
                        break
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
            except OSError:
                return
