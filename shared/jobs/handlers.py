"""Job handlers and the one dispatch function used by both the arq worker and in-process mode.

Every handler is idempotent: running a job twice stores nothing twice (upserts on stable keys,
per-conversation cursors). Transient failures raise :class:`TransientJobError`; the runner retries
them with exponential backoff up to ``job_max_tries`` and then records a dead letter.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from shared.errors import EmbeddingError, StoreError, VectorIndexError
from shared.jobs.context import JobContext
from shared.jobs.payloads import (
    LEARN,
    RECORD_ACCESS,
    LearnPayload,
    RecordAccessPayload,
    decode_payload,
)
from shared.learning import learn

log = logging.getLogger("mnemogate.jobs")

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (StoreError, EmbeddingError, VectorIndexError)
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 60.0


class TransientJobError(Exception):
    """A failure worth retrying (store busy, embedding endpoint down, vector tier down)."""


def backoff_s(job_try: int) -> float:
    """Delay before retry number ``job_try`` (1-based): 0.5 s × 2^(try-1), capped at 60 s."""
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** max(0, job_try - 1))


async def _learn(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    assert isinstance(payload, LearnPayload)
    result = await learn(jc, payload)
    return msgspec.structs.asdict(result)


async def _record_access(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    assert isinstance(payload, RecordAccessPayload)
    await jc.store.writes.record_access(payload.memory_ids, payload.at)
    await jc.store.events.record(
        "injection",
        payload.owner_id,
        user_id=payload.user_id,
        count=len(payload.memory_ids),
        now=payload.at,
    )
    return {"recorded": len(payload.memory_ids)}


Handler = Callable[[JobContext, msgspec.Struct], Awaitable[dict[str, Any]]]

HANDLERS: dict[str, Handler] = {
    LEARN: _learn,
    RECORD_ACCESS: _record_access,
}


async def execute(jc: JobContext, job_name: str, data: bytes) -> dict[str, Any]:
    """Decode ``data`` for ``job_name`` and run its handler once.

    Raises:
        TransientJobError: a retryable failure (store, embedding or vector tier).
        KeyError / msgspec errors: unknown job or malformed payload (not retryable).
    """
    payload = decode_payload(job_name, data)
    try:
        return await HANDLERS[job_name](jc, payload)
    except TRANSIENT_ERRORS as exc:
        raise TransientJobError(f"{type(exc).__name__}: {exc}") from exc


async def dead_letter(jc: JobContext, job_name: str, data: bytes, error: str) -> None:
    """Record a job that exhausted its retries as a ``dead_letter`` event (payload kept, hex)."""
    log.error("job %s exhausted retries: %s", job_name, error)
    jc.count("dead_letters")
    try:
        await jc.store.events.record(
            "dead_letter",
            "system",
            detail={"job": job_name, "error": error[:500], "payload_hex": data.hex()},
        )
    except StoreError:
        log.exception("could not record dead letter for %s", job_name)


async def run_with_retries(jc: JobContext, job_name: str, data: bytes) -> dict[str, Any] | None:
    """In-process runner: :func:`execute` with backoff retries, then a dead letter."""
    tries = max(1, jc.settings.job_max_tries)
    for attempt in range(1, tries + 1):
        try:
            result = await execute(jc, job_name, data)
            jc.count(f"jobs_ok:{job_name}")
            return result
        except TransientJobError as exc:
            if attempt == tries:
                await dead_letter(jc, job_name, data, str(exc))
                return None
            await asyncio.sleep(backoff_s(attempt))
    return None


def now() -> float:
    """Current unix time in seconds (one place, so handlers agree)."""
    return time.time()
