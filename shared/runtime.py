"""The composition root.

One :class:`Runtime` built from settings for the gateway, the worker and the CLI (see "Shape" in
``docs/ARCHITECTURE.md``).

Everything a process shares is built here, in dependency order, and is complete when built:
store → live settings (one immutable snapshot, replaced on refresh) → background HTTP client →
memory engine → job queue → job context. The job queue and the job context refer to each
other (an in-process queue runs jobs with the context; the context queues follow-up jobs): the
runner handed to the queue factory looks the context up when a job runs, after both exist.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from shared.engine import Engine, build_engine
from shared.errors import StoreError
from shared.http_client import background_client
from shared.jobs.context import JobContext
from shared.jobs.handlers import run_with_retries
from shared.jobs.queue import InProcessQueue, JobQueue, Runner
from shared.retrieval import retention_of
from shared.runtime_settings import RuntimeSettings
from shared.settings import ProviderConfig, Settings, load_providers
from shared.store import Store

log = logging.getLogger("mnemogate.runtime")

#: Builds the process's job queue for an open store; ``Runner`` runs one job in this process.
QueueFactory = Callable[[Store, Runner], Awaitable[JobQueue]]


@dataclass(frozen=True)
class Runtime:
    """The shared objects of one process; close with :meth:`close`."""

    live: RuntimeSettings
    store: Store
    http: httpx.AsyncClient
    engine: Engine
    queue: JobQueue
    jobs: JobContext

    @property
    def settings(self) -> Settings:
        """The effective settings of the current snapshot."""
        return self.live.current

    @property
    def providers(self) -> dict[str, ProviderConfig]:
        """Upstream providers by name (``default`` always present)."""
        return self.jobs.providers

    async def close(self) -> None:
        """Stop the queue (in-process: wait for running jobs), then close clients and store."""
        try:
            await self.queue.close()
        finally:
            try:
                await self.engine.close()  # the recall cache's background work
                qdrant_close = getattr(self.engine.qdrant, "close", None)
                if qdrant_close is not None:
                    await qdrant_close()
                await self.http.aclose()
            finally:
                await self.store.close()


async def in_process_queue(store: Store, run: Runner) -> JobQueue:
    """Queue factory of embedded mode and the CLI.

    Jobs run as tasks of this process, recorded in the SQLite outbox until they finish (recovered at
    the next start if interrupted).
    """
    return InProcessQueue(run, store.outbox)


async def _load_overrides(live: RuntimeSettings) -> None:
    """Apply the stored runtime overrides now.

    If the row cannot be read (e.g. a database not migrated yet), the environment settings serve
    until a later refresh succeeds.
    """
    try:
        await live.refresh(force=True)
    except StoreError:
        log.exception("runtime settings not loaded at start-up; using environment settings")


async def assemble_job_context(
    live: RuntimeSettings,
    store: Store,
    http: httpx.AsyncClient,
    engine: Engine,
    make_queue: QueueFactory,
) -> JobContext:
    """The job context over these parts, with the queue ``make_queue`` builds for it.

    Raises:
        ConfigurationError: an invalid providers file.
    """
    providers = load_providers(live.base)

    def run_job(name: str, data: bytes) -> Awaitable[Any]:
        return run_with_retries(jobs, name, data)  # ``jobs`` is bound below, before any run

    queue = await make_queue(store, run_job)
    jobs = JobContext(
        live=live, store=store, http=http, providers=providers, engine=engine, queue=queue
    )
    return jobs


async def open_runtime(settings: Settings, make_queue: QueueFactory) -> Runtime:
    """Open the store (migrating it), load runtime overrides and build every shared object.

    Raises:
        StoreError: the database cannot be opened or migrated.
        ConfigurationError: invalid custom sensitive patterns or providers file.
    """
    store = await Store.open(settings.db_path)
    http: httpx.AsyncClient | None = None
    try:
        live = RuntimeSettings(settings, store.settings)
        await _load_overrides(live)
        http = background_client(settings)
        engine = build_engine(settings, store, http, retention_of(live.current))
        jobs = await assemble_job_context(live, store, http, engine, make_queue)
    except BaseException:
        if http is not None:
            await http.aclose()
        await store.close()
        raise
    return Runtime(live=live, store=store, http=http, engine=engine, queue=jobs.queue, jobs=jobs)
