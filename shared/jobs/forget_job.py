"""The ``forget`` job: a chat message asked to forget something (docs/ARCHITECTURE.md, "Forget").

The gateway recognises the request (:func:`shared.forget_intent.detect_forget`) and enqueues this
job; the same code runs in an arq worker or in-process (embedded mode).
"""

from __future__ import annotations

from typing import Any

import msgspec

from shared.forget import forget
from shared.jobs.context import JobContext
from shared.jobs.payloads import ForgetPayload
from shared.jobs.vector_sync import deletion_hook


async def run_forget(jc: JobContext, payload: msgspec.Struct) -> dict[str, Any]:
    """Run one ``forget`` job.

    Delete what ``payload`` names from every tier; returns ``{"reason", "deleted": [{id, key,
    category, via}]}`` (ids and keys only).

    Qdrant points go through :func:`~shared.jobs.vector_sync.deletion_hook` (retried through a
    ``vector_delete`` job when Qdrant fails); sqlite-vec rows leave with the memory rows.

    Raises:
        StoreError: the database failed (retried by the runner).
    """
    assert isinstance(payload, ForgetPayload)
    outcome = await forget(
        jc.store,
        owner_id=payload.owner_id,
        user_id=payload.user_id,
        stems=payload.stems,
        now=payload.requested_at,
        source="chat",
        max_matches=jc.settings.forget_max_matches,
        on_deleted=deletion_hook(jc.engine, queue=jc.queue),
        request_id=payload.request_id,
    )
    jc.count("forgotten", len(outcome.deleted))
    return {"reason": outcome.reason, "deleted": msgspec.to_builtins(outcome.deleted)}
