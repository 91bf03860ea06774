"""Job handlers and the one dispatch function used by both the arq worker and in-process mode.

Every handler is idempotent: running a job twice stores nothing twice (upserts on stable keys,
per-conversation cursors). Transient failures (store, embedding or vector tier errors, and a run
longer than ``job_timeout_s``) raise :class:`TransientJobError`; the runner (in-process here, arq
in :mod:`workers.worker`) retries them with exponential backoff up to ``job_max_tries`` and then
records a dead letter. Permanent failures (unknown job, malformed payload, a bug) are dead-lettered
at once. A dead letter is visible three ways: an ERROR log line ``dead letter: job ...``, a
``dead_letter`` event in ``memory_events`` (detail: job, job_id, tries, redacted error, permanent,
and the payload's ids, counts and sha256 — never its text), and the ``dead_letters`` counter.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from shared.errors import EmbeddingError, StoreError, VectorIndexError
from shared.jobs.context import JobContext
from shared.jobs.forget_job import run_forget
from shared.jobs.payloads import (
    DECAY_RELEVANCE,
    EMBED,
    FORGET,
    LEARN,
    RECORD_ACCESS,
    REINDEX,
    SUMMARIZE,
    SWEEP,
    VECTOR_DELETE,
    DecayRelevancePayload,
    EmbedPayload,
    LearnPayload,
    RecordAccessPayload,
    ReindexPayload,
    SummarizePayload,
    SweepPayload,
    VectorDeletePayload,
    decode_payload,
    encode_payload,
    job_id_for,
)
from shared.jobs.reindex import embed_memories, reindex
from shared.jobs.vector_sync import delete_vectors, deletion_hook
from shared.learning import learn
from shared.lifecycle.key_cap import enforce_key_cap
from shared.lifecycle.relevance import decay_relevance
from shared.lifecycle.summarize import GroupSummary, summarize
from shared.lifecycle.sweep import sweep
from shared.metrics import note_job

log = logging.getLogger("mnemogate.jobs")

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (StoreError, EmbeddingError, VectorIndexError)
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 60.0


class TransientJobError(Exception):
    """A failure worth retrying (store busy, embedding endpoint down, vector tier down)."""


def backoff_s(job_try: int) -> float:
    """Delay in seconds before retry number ``job_try`` (1-based): 0.5 × 2^(try-1), capped at 60."""
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** max(0, job_try - 1))


async def _learn(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    assert isinstance(payload, LearnPayload)
    result = await learn(jc, payload)
    if result.facts or result.captured:  # the key's cap: evict, never fail (lifecycle.key_cap)
        evicted = await enforce_key_cap(
            jc.store, jc.settings, payload.owner_id, now(), deletion_hook(jc.engine, queue=jc.queue)
        )
        jc.count("evictions", len(evicted))
    if result.memory_ids and jc.engine is not None and jc.engine.enabled and jc.queue is not None:
        await jc.queue.enqueue(EMBED, EmbedPayload(memory_ids=sorted(set(result.memory_ids))))
    return msgspec.structs.asdict(result)


async def _embed(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    assert isinstance(payload, EmbedPayload)
    return await embed_memories(jc, payload)


async def _vector_delete(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    """Remove deleted memories' points from Qdrant (see ``vector_sync.delete_vectors``)."""
    assert isinstance(payload, VectorDeletePayload)
    return await delete_vectors(jc, payload)


async def _reindex(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    """Run the reindex, then record a ``reindex`` event unless it had nothing to do.

    The Studio follows its job by ``job_id`` in the event detail: the job's idempotency id, as the
    enqueue returned it.
    """
    assert isinstance(payload, ReindexPayload)
    result = await reindex(jc, payload)
    if not (payload.force or result.get("embedded") or result.get("remaining")):
        return result
    detail = {k: v for k, v in result.items() if k in ("embedded", "remaining", "skipped")}
    detail["job_id"] = job_id_for(REINDEX, encode_payload(payload))
    detail["force"] = payload.force
    await jc.store.events.record("reindex", payload.owner_id or "system", detail=detail)
    return result


async def _record_access(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    assert isinstance(payload, RecordAccessPayload)
    await jc.store.writes.record_access(payload.memory_ids, payload.at)
    await jc.store.events.record(
        "injection",
        payload.owner_id,
        user_id=payload.user_id,
        count=len(payload.memory_ids),
        detail={"requests": payload.requests, "tokens": payload.tokens},
        now=payload.at,
    )
    return {"recorded": len(payload.memory_ids)}


MAX_REPORTED_SUMMARIES = 100


async def _sweep(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    """Lifecycle sweep (typed decay + capacity); returns the :class:`SweepReport` as a dict."""
    assert isinstance(payload, SweepPayload)
    report = await sweep(
        jc.store,
        jc.settings,
        now(),
        dry_run=payload.dry_run,
        on_deleted=deletion_hook(jc.engine, queue=jc.queue),
    )
    jc.count("evictions", report.deleted)
    return msgspec.structs.asdict(report)


async def _decay_relevance(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    """Relevance decay catch-up; returns the :class:`DecayReport` as a dict."""
    assert isinstance(payload, DecayRelevancePayload)
    report = await decay_relevance(jc.store, jc.settings, now())
    return msgspec.structs.asdict(report)


async def _summarize(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    """Summarize one owner's old episodic memories.

    Returns the totals plus up to 100 summaries (``items``: owner_id, user_id, session_id,
    source_ids, content, tokens, summary_id).

    The originals' vectors leave Qdrant through :func:`~shared.jobs.vector_sync.deletion_hook`;
    the new summaries are queued for embedding (every vector tier).
    """
    assert isinstance(payload, SummarizePayload)
    items: list[dict[str, Any]] = []
    summary_ids: list[str] = []

    def keep(made: GroupSummary) -> None:
        if made.summary_id is not None:
            summary_ids.append(made.summary_id)
        if len(items) < MAX_REPORTED_SUMMARIES:
            items.append(msgspec.structs.asdict(made))

    report = await summarize(
        jc.store,
        jc.settings,
        now(),
        older_than_days=payload.older_than_days,
        owner_id=payload.owner_id,
        user_id=payload.user_id,
        dry_run=payload.dry_run,
        on_deleted=deletion_hook(jc.engine, queue=jc.queue),
        listener=keep,
    )
    if summary_ids and jc.engine is not None and jc.engine.enabled and jc.queue is not None:
        rowids = [m.id for m in [await jc.store.memories.get(i) for i in summary_ids] if m]
        if rowids:
            await jc.queue.enqueue(EMBED, EmbedPayload(memory_ids=sorted(rowids)))
    return {**msgspec.structs.asdict(report), "items": items}


Handler = Callable[[JobContext, msgspec.Struct], Awaitable[dict[str, Any]]]

HANDLERS: dict[str, Handler] = {
    LEARN: _learn,
    RECORD_ACCESS: _record_access,
    EMBED: _embed,
    VECTOR_DELETE: _vector_delete,
    REINDEX: _reindex,
    SWEEP: _sweep,
    DECAY_RELEVANCE: _decay_relevance,
    SUMMARIZE: _summarize,
    FORGET: run_forget,
}


async def execute(jc: JobContext, job_name: str, data: bytes) -> dict[str, Any]:
    """Decode ``data`` for ``job_name`` and run its handler once.

    The handler runs under ``job_timeout_s`` (seconds); running longer counts as transient.

    Raises:
        TransientJobError: a retryable failure (store, embedding or vector tier, timeout).
        KeyError / msgspec errors: unknown job or malformed payload (not retryable).
    """
    payload = decode_payload(job_name, data)
    await jc.refresh_settings()
    try:
        result = await asyncio.wait_for(HANDLERS[job_name](jc, payload), jc.settings.job_timeout_s)
    except TRANSIENT_ERRORS as exc:
        note_job(job_name, "transient_error")
        raise TransientJobError(f"{type(exc).__name__}: {exc}") from exc
    except TimeoutError as exc:
        note_job(job_name, "transient_error")
        raise TransientJobError(f"timed out after {jc.settings.job_timeout_s:g}s") from exc
    except Exception:
        note_job(job_name, "error")
        raise
    note_job(job_name, "ok")
    return result


DEAD_LETTER_RECORD_TRIES = 2
#: Characters of a failure's error message kept in a dead letter (after redaction).
DEAD_LETTER_ERROR_CHARS = 500


def payload_fingerprint(job_name: str, data: bytes) -> dict[str, Any]:
    """What a dead letter keeps of a payload: ids, counts and a hash — never its text.

    Returns ``payload_sha256`` (hex of the encoded payload), ``payload_bytes`` and, when the
    payload decodes, its identifying fields: ``owner_id``, ``user_id``, ``session_id``,
    ``request_id`` (strings), ``turns`` (number of user turns), ``memory_ids`` (at most 50).
    Never raises.
    """
    out: dict[str, Any] = {
        "payload_sha256": hashlib.sha256(data).hexdigest(),
        "payload_bytes": len(data),
    }
    try:
        payload = decode_payload(job_name, data)
    except Exception:  # malformed payload or unknown job: the hash is all there is
        return out
    for name in ("owner_id", "user_id", "session_id", "request_id"):
        value = getattr(payload, name, None)
        if isinstance(value, str):
            out[name] = value[:256]
    if isinstance(payload, LearnPayload):
        out["turns"] = len(payload.user_turns)
    ids = getattr(payload, "memory_ids", None)
    if isinstance(ids, list):
        out["memory_ids"] = ids[:50]
    return out


async def dead_letter(
    jc: JobContext,
    job_name: str,
    data: bytes,
    error: str,
    *,
    tries: int = 0,
    permanent: bool = False,
) -> None:
    """Make a failed job visible: ERROR log, ``dead_letter`` event, ``dead_letters`` counter.

    ``tries`` is the number of attempts made; ``permanent`` marks a failure that was not retried.
    The event belongs to the payload's ``owner_id`` when it has one, else to ``system``. Neither
    the event nor the log line holds the payload's text (user turns are personal data): they
    keep the job id and :func:`payload_fingerprint` (ids, counts, sha256), and the error
    message redacted by the sensitive-content detector and cut to
    :data:`DEAD_LETTER_ERROR_CHARS` characters. A lost learn job is made good by the next
    request of that conversation (the learning cursor did not move). If the store cannot take
    the event (two attempts, 0.5 s apart), the log line is the record. Never raises.
    """
    job_id = job_id_for(job_name, data)
    fingerprint = payload_fingerprint(job_name, data)
    reason = jc.detector.redact(error)[:DEAD_LETTER_ERROR_CHARS]
    log.error(
        "dead letter: job %s (%s) failed after %d tries%s: %s; payload_sha256=%s",
        job_name,
        job_id,
        tries,
        " (permanent)" if permanent else "",
        reason,
        fingerprint["payload_sha256"],
    )
    jc.count("dead_letters")
    note_job(job_name, "dead_letter")
    owner = str(fingerprint.get("owner_id") or "system")
    detail = {
        "job": job_name,
        "job_id": job_id,
        "tries": tries,
        "permanent": permanent,
        "error": reason,
        **fingerprint,
    }
    for attempt in range(DEAD_LETTER_RECORD_TRIES):
        try:
            await jc.store.events.record("dead_letter", owner, detail=detail)
            return
        except StoreError:
            if attempt + 1 == DEAD_LETTER_RECORD_TRIES:
                log.exception("could not record dead letter for %s (%s)", job_name, job_id)
            else:
                await asyncio.sleep(0.5)


async def run_with_retries(jc: JobContext, job_name: str, data: bytes) -> dict[str, Any] | None:
    """In-process runner.

    :func:`execute`, retrying transient failures after :func:`backoff_s` up to ``job_max_tries``
    attempts, then :func:`dead_letter`; a permanent failure is dead-lettered at once. Returns the
    handler's result, or ``None`` when dead-lettered. Counters: ``jobs_ok:<name>``,
    ``job_retries:<name>``, ``dead_letters``. Never raises.
    """
    tries = max(1, jc.settings.job_max_tries)
    for attempt in range(1, tries + 1):
        try:
            result = await execute(jc, job_name, data)
            jc.count(f"jobs_ok:{job_name}")
            return result
        except TransientJobError as exc:
            if attempt == tries:
                await dead_letter(jc, job_name, data, str(exc), tries=attempt)
                return None
            delay = backoff_s(attempt)
            log.warning(
                "job %s try %d failed, retrying in %.2fs: %s", job_name, attempt, delay, exc
            )
            jc.count(f"job_retries:{job_name}")
            await asyncio.sleep(delay)
        except Exception as exc:
            await dead_letter(
                jc, job_name, data, f"{type(exc).__name__}: {exc}", tries=attempt, permanent=True
            )
            return None
    return None


def now() -> float:
    """Current unix time in seconds (one place, so handlers agree)."""
    return time.time()
