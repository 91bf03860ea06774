"""Prometheus metrics of the gateway and the worker, and the per-request telemetry record.

Metrics are ``prometheus-client`` counters and histograms created once at import. With
``PROMETHEUS_MULTIPROC_DIR`` set in the environment *before the process starts* (several uvicorn
workers), prometheus-client keeps every process's values in memory-mapped files in that folder and
:func:`render` aggregates them with its ``MultiProcessCollector`` (prometheus-client
"Multiprocess Mode" documentation); without it the values live in this process. Gauges that
describe the shared database or Redis (memories stored, outbox size, queue depth) are read at
scrape time by the caller and passed to :func:`render` as a :class:`Snapshot`, so they are right
whichever process answers.

Hot-path cost: one :class:`RequestTelemetry` (slots) per request, and label children cached in
plain dicts (a ``labels()`` call takes the metric's lock; the cache avoids it after the first
request of each label set). Label values are bounded: route templates, status codes, tier names,
degradation codes, job names and outcomes; never owner ids (see ``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from typing import Any

import msgspec
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from shared.errors import AuthenticationFailed, NotFound

#: Content type of :func:`render`'s output (Prometheus text exposition format 0.0.4).
CONTENT_TYPE = CONTENT_TYPE_LATEST
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Seconds; the request path's own work is expected in the low milliseconds.
FAST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
#: Seconds; an upstream LLM answers in 0.1 s .. minutes.
SLOW_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

REQUESTS = Counter(
    "mnemogate_http_requests",
    "HTTP requests answered, by route template and status",
    ["route", "status"],
)
UPSTREAM_SECONDS = Histogram(
    "mnemogate_upstream_seconds",
    "Time from sending a request upstream to its response headers",
    buckets=SLOW_BUCKETS,
)
ADDED_SECONDS = Histogram(
    "mnemogate_added_latency_seconds",
    "Time to the response headers minus the upstream time (gateway overhead on proxied calls)",
    buckets=FAST_BUCKETS,
)
RECALL_SECONDS = Histogram(
    "mnemogate_recall_seconds", "Recall + injection time by tier", ["tier"], buckets=FAST_BUCKETS
)
INJECTED_MEMORIES = Counter("mnemogate_injected_memories", "Memories injected into requests")
INJECTED_TOKENS = Counter("mnemogate_injected_tokens", "Estimated tokens of injected memory blocks")
DEGRADED = Counter("mnemogate_memory_degraded", "Requests whose memory step degraded", ["reason"])
JOBS = Counter("mnemogate_jobs", "Background job runs by job name and outcome", ["job", "outcome"])
EMBED_CACHE = Counter(
    "mnemogate_embedding_cache_lookups", "Embedding cache lookups by result", ["result"]
)
# Both results exported from the start (at 0), so a hit-rate query has its series in every
# process, embedded mode included, before the first embedding (Prometheus "Instrumentation"
# practices: initialise label values you know in advance).
for _result in ("hit", "miss"):
    EMBED_CACHE.labels(_result)

_LABEL_RE = re.compile(r"[^a-z0-9_.:-]")
_children: dict[tuple[Any, ...], Any] = {}


def safe_label(value: str, limit: int = 48) -> str:
    """``value`` as a safe label value: lower-cased, cut, restricted to ``[a-z0-9_.:-]``.

    Cut to ``limit`` characters, anything else replaced by ``_`` (label values come from code,
    this guards against surprises).
    """
    return _LABEL_RE.sub("_", value.lower()[:limit]) or "none"


def _child(metric: Any, *labels: str) -> Any:
    key = (id(metric), *labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*labels)
    return child


class RequestTelemetry:
    """What one HTTP request did, filled by the hooks while it runs (all times in seconds)."""

    __slots__ = ("degraded", "injected", "recall_s", "request_id", "tier", "tokens", "upstream_s")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.upstream_s: float | None = None
        self.recall_s: float | None = None
        self.tier: str | None = None
        self.injected = 0
        self.tokens = 0
        self.degraded: str | None = None


CURRENT: ContextVar[RequestTelemetry | None] = ContextVar("mnemogate_request", default=None)


def note_upstream(seconds: float) -> None:
    """Record one upstream round trip (request sent → response headers)."""
    UPSTREAM_SECONDS.observe(seconds)
    t = CURRENT.get()
    if t is not None:
        t.upstream_s = (t.upstream_s or 0.0) + seconds


def note_recall(
    seconds: float, tier: str, injected: int, tokens: int, degraded: str | None
) -> None:
    """Record the memory step of one request.

    Duration, tier, memories/tokens injected and the degradation reason (None when it did not
    degrade).
    """
    tier = safe_label(tier)
    _child(RECALL_SECONDS, tier).observe(seconds)
    if injected:
        INJECTED_MEMORIES.inc(injected)
        INJECTED_TOKENS.inc(tokens)
    if degraded:
        _child(DEGRADED, safe_label(degraded)).inc()
    t = CURRENT.get()
    if t is not None:
        t.recall_s, t.tier, t.injected, t.tokens, t.degraded = (
            seconds,
            tier,
            injected,
            tokens,
            degraded,
        )


def note_request(route: str, status: int, to_headers_s: float, upstream_s: float | None) -> None:
    """Count one answered request.

    For proxied ones also observe the added latency (``to_headers_s`` − ``upstream_s``, floored at
    0).
    """
    _child(REQUESTS, route, str(status)).inc()
    if upstream_s is not None:
        ADDED_SECONDS.observe(max(0.0, to_headers_s - upstream_s))


def note_job(job: str, outcome: str) -> None:
    """Count one background job run: ``outcome`` ∈ ok | retry | failed | dead_letter."""
    _child(JOBS, safe_label(job), outcome).inc()


def note_embedding_cache(hits: int, misses: int) -> None:
    """Count embedding cache lookups (hit rate = hits / (hits + misses))."""
    if hits:
        _child(EMBED_CACHE, "hit").inc(hits)
    if misses:
        _child(EMBED_CACHE, "miss").inc(misses)


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """Scrape-time gauges of the shared state; None = unknown (not exported)."""

    memories_stored: int | None = None
    outbox_jobs: int | None = None
    queue_depth: int | None = None


class _SnapshotCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Any:
        gauges = (
            ("mnemogate_memories_stored", "Memories in the store (all owners)", "memories_stored"),
            (
                "mnemogate_outbox_jobs",
                "Jobs parked in the outbox (not yet in Redis)",
                "outbox_jobs",
            ),
            ("mnemogate_job_queue_depth", "Jobs waiting in the Redis queue", "queue_depth"),
        )
        for name, doc, field in gauges:
            value = getattr(self.snapshot, field)
            if value is not None:
                yield GaugeMetricFamily(name, doc, value=value)


class _Delegate(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Any:
        return self.registry.collect()


def multiprocess_dir() -> str | None:
    """The multiprocess folder from ``PROMETHEUS_MULTIPROC_DIR``, or None (single process)."""
    return os.environ.get(MULTIPROC_ENV) or None


def render(snapshot: Snapshot) -> bytes:
    """Every metric in the Prometheus text format.

    This process's (or, in multiprocess mode, every process's aggregated) counters and histograms,
    plus ``snapshot``'s gauges.
    """
    registry = CollectorRegistry(auto_describe=False)
    folder = multiprocess_dir()
    if folder is not None:
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    else:
        registry.register(_Delegate(REGISTRY))
    registry.register(_SnapshotCollector(snapshot))
    return generate_latest(registry)


def check_metrics_access(access: str, admin_token: str, presented_admin: bool) -> None:
    """Raise unless the caller may read metrics under ``access`` (open | admin | off).

    ``presented_admin``: the request's bearer equals the admin token.

    Raises:
        NotFound (404): metrics are off, or admin-only without an admin token configured.
        AuthenticationFailed (401): admin-only and the bearer is not the admin token.

    """
    if access == "open":
        return
    if access == "off" or not admin_token:
        raise NotFound("metrics are disabled (MNEMOGATE_METRICS_ACCESS)")
    if not presented_admin:
        raise AuthenticationFailed("metrics need the admin token as bearer")
