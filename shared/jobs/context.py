"""What a job handler needs, assembled once per process by :func:`shared.runtime.open_runtime`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from shared.errors import StoreError
from shared.runtime_settings import RuntimeSettings
from shared.sensitive import SensitiveDetector
from shared.settings import ProviderConfig, Settings
from shared.store import Store

if TYPE_CHECKING:
    from shared.engine import Engine
    from shared.jobs.queue import JobQueue

log = logging.getLogger("mnemogate.jobs")


@dataclass(frozen=True)
class JobContext:
    """Shared clients for job handlers, complete at construction.

    ``live`` holds the process's current settings snapshot (``settings`` and ``detector`` read
    it); ``queue`` takes follow-up jobs; ``stats`` are in-process counters (metrics, tests).
    """

    live: RuntimeSettings
    store: Store
    http: httpx.AsyncClient
    providers: dict[str, ProviderConfig]
    engine: Engine
    queue: JobQueue
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def settings(self) -> Settings:
        """The effective settings of the current snapshot."""
        return self.live.current

    @property
    def detector(self) -> SensitiveDetector:
        """The sensitive-content detector of the current snapshot."""
        return self.live.snapshot.detector

    async def refresh_settings(self) -> None:
        """Apply runtime settings changes (``PUT /api/settings``) before a job.

        Rate-limited by ``settings_refresh_s`` (one version read per period, the row only when
        it changed); a store failure keeps the current snapshot.
        """
        try:
            await self.live.refresh()
        except StoreError:
            log.exception("settings refresh failed")

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the in-process counter ``name`` (for metrics and tests)."""
        self.stats[name] = self.stats.get(name, 0) + n
