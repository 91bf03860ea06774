"""Run an ASGI app under a real uvicorn server on 127.0.0.1 in a daemon thread (own event loop),
so synchronous tests, async tests and subprocesses can all reach it."""

from __future__ import annotations

import threading
import time
from typing import Any, Literal, Self

import uvicorn

from tests.waiting import READY_TIMEOUT_S

GRACE_S = 5.0  # seconds a stopping server may spend closing its connections gracefully


class ThreadedUvicorn:
    """``start()`` serves ``app`` on ``port`` until ``stop()``.

    ``lifespan`` and ``http`` (the HTTP protocol: a name or a class) as in uvicorn.
    """

    def __init__(
        self,
        app: Any,
        port: int,
        *,
        lifespan: Literal["auto", "on", "off"] = "off",
        http: Any = "auto",
    ) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan, http=http
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start the thread; return once the server accepts connections (polled, not slept).

        Raises:
            RuntimeError: it did not start within ``timeout_s`` (or its thread died).
        """
        self._thread.start()
        started = time.monotonic()
        interval = 0.005
        while not self.server.started:
            waited = time.monotonic() - started
            if not self._thread.is_alive():
                raise RuntimeError(f"server thread exited during start-up ({waited:.1f} s)")
            if waited > timeout_s:
                raise RuntimeError(f"server did not start within {waited:.1f} s")
            time.sleep(interval)
            interval = min(interval * 2, 0.1)

    def stop(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Ask the server to exit and join its thread (bounded by ``timeout_s``).

        A graceful exit waits for open connections (a test's hung stream, a subprocess's
        keep-alive); after a short grace the server is told to force its exit.
        """
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=min(GRACE_S, timeout_s))
        if self._thread.is_alive():
            self.server.force_exit = True
            self._thread.join(timeout=timeout_s)


class ServedFake:
    """Lifecycle shared by the fake servers: ``start()`` serves :meth:`_app` on ``self.port``.

    A subclass sets ``self.port`` and implements ``_app()``; ``stop()`` (and leaving a ``with``
    block) stops the server and joins its thread.
    """

    port: int
    _server: ThreadedUvicorn | None = None

    def _app(self) -> Any:
        raise TypeError(f"{type(self).__name__} must define _app()")

    def start(self) -> Self:
        """Start serving in a daemon thread; returns self once the port accepts connections."""
        self._server = ThreadedUvicorn(self._app(), self.port)
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop the server and join its thread."""
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
