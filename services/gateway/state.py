"""Typed application state built by the lifespan: one store, one HTTP client, one job queue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from shared.jobs.access import AccessBatcher
from shared.jobs.context import JobContext
from shared.jobs.queue import ArqQueue, JobQueue
from shared.runtime_settings import RuntimeSettings
from shared.settings import ProviderConfig, Settings
from shared.store import Store
from shared.store.integrity import IntegrityProbe


@dataclass
class GatewayState:
    """Everything a request handler needs; read through :func:`services.gateway.app.state_of`."""

    settings: Settings
    store: Store
    upstream: aiohttp.ClientSession
    providers: dict[str, ProviderConfig]
    queue: JobQueue
    jobs: JobContext
    runtime: RuntimeSettings | None = None
    access: AccessBatcher | None = None
    integrity: IntegrityProbe | None = None

    def redactor(self) -> Callable[[str], str] | None:
        """The sensitive-content redaction for memories written through the API/MCP, or None
        when ``sensitive_filter`` is off."""
        return self.jobs.detector.redact if self.settings.sensitive_filter else None

    @property
    def arq_queue(self) -> ArqQueue | None:
        """The arq queue in worker mode, else None."""
        return self.queue if isinstance(self.queue, ArqQueue) else None
