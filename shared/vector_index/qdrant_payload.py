"""What Qdrant stores with each point, and the filters that select points.

The filters mirror :func:`shared.store.memories.visibility_sql` (owner / end user / global /
session / expiry) and run inside Qdrant, never after a global top-k; retention is re-checked by
the caller against the store.
"""

from __future__ import annotations

from typing import Any

from qdrant_client import models as qm

from shared.models import GLOBAL_OWNER, Scope
from shared.vector_index.base import VectorRecord


def visibility_filter(scope: Scope, now: float) -> qm.Filter:
    """The Qdrant filter selecting the points ``scope`` may see at ``now`` (unix seconds).

    Mirrors :func:`shared.store.memories.visibility_sql` (owner / end user / global / session /
    expiry); retention is re-checked by the caller against the store.
    """
    users = [""] if scope.user_id == "" else ["", scope.user_id]
    own = qm.Filter(
        must=[
            qm.FieldCondition(key="owner_id", match=qm.MatchValue(value=scope.owner_id)),
            qm.FieldCondition(key="user_id", match=qm.MatchAny(any=users)),
        ]
    )
    owners: qm.Condition = own
    if scope.include_global and scope.owner_id != GLOBAL_OWNER:
        owners = qm.Filter(
            should=[
                own,
                qm.FieldCondition(key="owner_id", match=qm.MatchValue(value=GLOBAL_OWNER)),
            ]
        )
    no_session = qm.IsNullCondition(is_null=qm.PayloadField(key="session_id"))
    session: qm.Condition = no_session
    if scope.session_id is not None:
        session = qm.Filter(
            should=[
                no_session,
                qm.FieldCondition(key="session_id", match=qm.MatchValue(value=scope.session_id)),
            ]
        )
    not_expired = qm.Filter(
        should=[
            qm.IsNullCondition(is_null=qm.PayloadField(key="expires_at")),
            qm.FieldCondition(key="expires_at", range=qm.Range(gt=now)),
        ]
    )
    return qm.Filter(must=[owners, session, not_expired])


def expired_filter(now: float) -> qm.Filter:
    """Points whose ``expires_at`` is set and ``<= now`` (null never matches a range)."""
    return qm.Filter(must=[qm.FieldCondition(key="expires_at", range=qm.Range(lte=now))])


def record_payload(record: VectorRecord) -> dict[str, Any]:
    """The payload stored with ``record``'s point (see the module docstring)."""
    return {
        "memory_id": record.memory_id,
        "owner_id": record.owner_id,
        "user_id": record.user_id,
        "session_id": record.session_id,
        "type": record.type,
        "created_at": float(record.created_at),
        "expires_at": None if record.expires_at is None else float(record.expires_at),
    }
