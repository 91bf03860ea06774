"""What a job handler needs, built once per process (gateway in embedded mode, or arq worker)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from shared.errors import ConfigurationError, StoreError
from shared.runtime_settings import RuntimeSettings
from shared.sensitive import SensitiveDetector
from shared.settings import ProviderConfig, Settings, load_providers
from shared.store import Store

if TYPE_CHECKING:
    from shared.engine import Engine
    from shared.jobs.queue import JobQueue


@dataclass
class JobContext:
    """Shared clients for job handlers: settings, store, HTTP client, sensitive detector, and the
    queue for follow-up jobs (set after construction, since the queue needs the runner)."""

    settings: Settings
    store: Store
    http: httpx.AsyncClient
    detector: SensitiveDetector
    providers: dict[str, ProviderConfig]
    queue: JobQueue | None = None
    stats: dict[str, int] = field(default_factory=dict)
    runtime: RuntimeSettings | None = None
    engine: Engine | None = None

    async def refresh_settings(self) -> None:
        """Apply runtime settings changes (``PUT /api/settings``) before a job.

        Rate-limited by ``settings_refresh_s`` (one version read per period, the row only when
        it changed); a store failure keeps the current settings.
        """
        if self.runtime is None:
            return
        try:
            settings = await self.runtime.refresh()
        except StoreError:
            logging.getLogger("mnemogate.jobs").exception("settings refresh failed")
            return
        if settings.sensitive_custom_patterns != self.settings.sensitive_custom_patterns:
            try:
                self.detector = build_detector(settings.sensitive_custom_patterns)
            except ConfigurationError:
                logging.getLogger("mnemogate.jobs").exception("invalid custom patterns ignored")
        self.settings = settings

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the in-process counter ``name`` (for metrics and tests)."""
        self.stats[name] = self.stats.get(name, 0) + n


def build_detector(custom_patterns: str) -> SensitiveDetector:
    """The sensitive-content detector for ``sensitive_custom_patterns``.

    The setting is either empty, a JSON array of regular expressions, or one regular expression
    (any text that is not a JSON array of strings, so ``[a-z]+`` is a regex).

    Raises:
        ConfigurationError: an invalid regex.
    """
    text = custom_patterns.strip()
    if not text:
        return SensitiveDetector()
    if text.startswith("["):
        try:
            patterns = json.loads(text)
        except ValueError:
            patterns = None
        if isinstance(patterns, list) and all(isinstance(p, str) for p in patterns):
            return SensitiveDetector(custom_patterns=tuple(patterns))
    return SensitiveDetector(custom_patterns=(text,))


def build_job_context(settings: Settings, store: Store, http: httpx.AsyncClient) -> JobContext:
    """The job context every process builds the same way: sensitive detector and providers from
    ``settings``, and the semantic engine (embedding source + vector tiers). The queue is set by
    the caller, which owns it.

    Raises:
        ConfigurationError: invalid custom sensitive patterns or providers file.
    """
    from shared.engine import build_engine  # engine imports the store, not the jobs package
    from shared.retrieval import retention_of

    jc = JobContext(
        settings=settings,
        store=store,
        http=http,
        detector=build_detector(settings.sensitive_custom_patterns),
        providers=load_providers(settings),
    )
    jc.engine = build_engine(settings, store, http, retention_of(settings))
    return jc
