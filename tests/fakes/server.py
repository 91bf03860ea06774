"""Run an ASGI app under a real uvicorn server on 127.0.0.1 in a daemon thread (own event loop),
so synchronous tests, async tests and subprocesses can all reach it."""

from __future__ import annotations

import threading
import time
from typing import Any, Literal

import uvicorn


class ThreadedUvicorn:
    """``start()`` serves ``app`` on ``port`` until ``stop()``; ``lifespan`` as in uvicorn."""

    def __init__(
        self, app: Any, port: int, *, lifespan: Literal["auto", "on", "off"] = "off"
    ) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, timeout_s: float = 10.0) -> None:
        """Start the thread; return once the server accepts connections.

        Raises:
            RuntimeError: it did not start within ``timeout_s`` (or its thread died).
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)

    def stop(self, timeout_s: float = 15.0) -> None:
        """Ask the server to exit and join its thread."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)
