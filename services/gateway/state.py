"""Typed application state built by the lifespan, and its one accessor :func:`state_of`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from starlette.applications import Starlette
from starlette.requests import HTTPConnection

from shared.jobs.access_recording import AccessBatcher
from shared.jobs.context import JobContext
from shared.jobs.queue import ArqQueue, JobQueue
from shared.runtime import Runtime
from shared.settings import ProviderConfig, Settings
from shared.store import Store
from shared.store.integrity import IntegrityProbe


@dataclass(frozen=True)
class GatewayState:
    """Everything a request handler needs.

    The process :class:`~shared.runtime.Runtime`, the upstream session of the proxy and the access
    batcher. Settings are read from the runtime's current snapshot (never copied here).
    """

    runtime: Runtime
    upstream: aiohttp.ClientSession
    access: AccessBatcher
    #: The cached index integrity check of /readyz (shared.store.integrity); None = not checked.
    integrity: IntegrityProbe | None = None

    @property
    def settings(self) -> Settings:
        """The effective settings of the current snapshot."""
        return self.runtime.settings

    @property
    def store(self) -> Store:
        """The store of record."""
        return self.runtime.store

    @property
    def queue(self) -> JobQueue:
        """The job queue (arq in worker mode, in-process in embedded mode)."""
        return self.runtime.queue

    @property
    def jobs(self) -> JobContext:
        """The job context (engine, detector, providers) shared with in-process jobs."""
        return self.runtime.jobs

    @property
    def providers(self) -> dict[str, ProviderConfig]:
        """Upstream providers by name."""
        return self.runtime.providers

    def redactor(self) -> Callable[[str], str] | None:
        """The sensitive-content redaction for memories written through the API/MCP.

        Or None when ``sensitive_filter`` is off.
        """
        snapshot = self.runtime.live.snapshot
        return snapshot.detector.redact if snapshot.settings.sensitive_filter else None

    @property
    def arq_queue(self) -> ArqQueue | None:
        """The arq queue in worker mode, else None."""
        queue = self.runtime.queue
        return queue if isinstance(queue, ArqQueue) else None


def install_state(app: Starlette, state: GatewayState) -> None:
    """Make ``state`` the application's state (done once, by the lifespan)."""
    app.state.gateway = state


def state_of(connection: HTTPConnection) -> GatewayState:
    """The typed gateway state of the application serving ``connection``.

    Raises:
        RuntimeError: the lifespan has not run (the app was served without it).
    """
    return state_of_app(connection.app)


def state_of_app(app: Starlette) -> GatewayState:
    """The typed gateway state of ``app`` (tests, tools holding the app itself).

    Raises:
        RuntimeError: the lifespan has not run (the app was served without it).
    """
    state = getattr(app.state, "gateway", None)
    if not isinstance(state, GatewayState):
        raise RuntimeError("the gateway lifespan has not run: no application state")
    return state
