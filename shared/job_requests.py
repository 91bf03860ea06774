"""Operator requests for background jobs.

``reindex`` and ``summarize`` (``POST /api/reindex``, ``POST /api/summarize``).
"""

from __future__ import annotations

from shared.access_policy import Principal, writable_owner
from shared.errors import InvalidRequest
from shared.jobs.payloads import REINDEX, SUMMARIZE, ReindexPayload, SummarizePayload
from shared.jobs.queue import JobQueue
from shared.memory_api import JobAccepted, ReindexRequest, SummarizeRequest


async def request_reindex(
    queue: JobQueue, p: Principal, body: ReindexRequest, now: float
) -> JobAccepted:
    """Queue a ``reindex`` job (admin: one owner or all; client: itself).

    Raises:
        NotFound: a client naming another owner.
    """
    owner = body.owner_id if p.admin else writable_owner(p, body.owner_id)
    payload = ReindexPayload(owner_id=owner, force=body.force, requested_at=now)
    job_id = await queue.enqueue(REINDEX, payload)
    return JobAccepted(job=REINDEX, job_id=job_id, owner_id=owner)


async def request_summarize(
    queue: JobQueue, p: Principal, body: SummarizeRequest, now: float
) -> JobAccepted:
    """Queue a ``summarize`` job for exactly one owner (never across tenants).

    Raises:
        InvalidRequest: admin without ``owner_id``, or ``older_than_days`` <= 0.
        PermissionDenied / NotFound: see :func:`~shared.access_policy.writable_owner`.
    """
    if not body.older_than_days > 0:
        raise InvalidRequest("older_than_days must be > 0")
    owner = writable_owner(p, body.owner_id)
    payload = SummarizePayload(
        owner_id=owner,
        user_id=body.user_id,
        older_than_days=body.older_than_days,
        dry_run=body.dry_run,
        requested_at=now,
    )
    job_id = await queue.enqueue(SUMMARIZE, payload)
    return JobAccepted(job=SUMMARIZE, job_id=job_id, owner_id=owner)
