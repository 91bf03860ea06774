"""Who may see a memory, evaluated in memory: the rule of ``visibility_sql``, on arrays and rows.

:func:`shared.store.memories.visibility_sql` is the reference; the property test
``tests/shared/recall_index/test_visibility_property.py`` checks that both forms here select
exactly the rows it selects. A memory is visible to a scope at ``now`` when all hold:

* owner: it belongs to the caller's owner and is owner-wide (``user_id == ""``) or the caller's
  end user's; or it is a global memory (owner ``global``, any end user) and the scope includes
  global memories;
* session: it has no session, or the scope's session is its session;
* expiry: ``expires_at`` is unset or later than ``now``;
* retention (typed decay): not (its type has a TTL, it was accessed fewer than
  ``access_immunity`` times and ``COALESCE(last_accessed_at, created_at) + ttl <= now``).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from shared.models import MEMORY_TYPES, Memory, Scope
from shared.store.memories import Retention

__all__ = ["TYPE_CODE", "ColumnFacts", "ScopeCodes", "column_facts", "visible_mask", "visible_row"]

TYPE_CODE: dict[str, int] = {t: i for i, t in enumerate(MEMORY_TYPES)}
"""Memory type → small integer code stored per document."""

NO_CODE = -1
"""Code of an end user / session the partition has never seen (matches no document)."""


class ScopeCodes(msgspec.Struct, frozen=True):
    """A scope translated to one partition's integer codes. ``user``.

    A scope translated to one partition's integer codes. ``user``: the caller's end-user code
    (0 = owner-wide only); ``session``: the scope's session code (0 = no session in scope,
    :data:`NO_CODE` = a session no document has); ``any_user``: the partition is the global one
    (its memories are visible whatever their end user).
    """

    user: int
    session: int
    any_user: bool


class ColumnFacts(msgspec.Struct, frozen=True):
    """What a segment's fixed columns hold, so :func:`visible_mask` can skip always-true tests.

    ``users``/``sessions``: some document has an end-user / session code (else all are 0);
    ``expiring``: some ``expires`` is finite; ``types``: the type codes present. Valid as long as
    the ``user``, ``session``, ``expires`` and ``type`` columns are not written (a segment's never
    are: a changed memory is tombstoned and indexed again in the delta).
    """

    users: bool
    sessions: bool
    expiring: bool
    types: frozenset[int]


def column_facts(arrays: dict[str, npt.NDArray[Any]]) -> ColumnFacts:
    """The :class:`ColumnFacts` of per-document ``arrays`` (O(documents), once per segment)."""
    mtype = arrays["type"]
    return ColumnFacts(
        users=bool(arrays["user"].any()),
        sessions=bool(arrays["session"].any()),
        expiring=bool(np.isfinite(arrays["expires"]).any()),
        types=frozenset(c for c in TYPE_CODE.values() if (mtype == c).any()),
    )


def _ttl_rules(retention: Retention | None) -> list[tuple[int, float]]:
    if retention is None:
        return []
    return [
        (TYPE_CODE[t], ttl)
        for t, ttl in sorted(retention.ttl_s.items())
        if ttl > 0 and t in TYPE_CODE
    ]


def visible_mask(
    arrays: dict[str, npt.NDArray[Any]],
    idx: npt.NDArray[np.intp],
    codes: ScopeCodes,
    now: float,
    retention: Retention | None,
    facts: ColumnFacts | None = None,
) -> npt.NDArray[np.bool_]:
    """Boolean mask over the document positions ``idx``: True where the document is visible.

    ``arrays`` holds per-document columns: ``alive`` (bool), ``user``/``session`` (int32 codes,
    0 = none), ``expires`` (float64, +inf = never), ``type`` (int8, :data:`TYPE_CODE`),
    ``access`` (int32 access count), ``touched`` (float64, last access else creation).
    ``facts``: :func:`column_facts` of ``arrays`` (tests that hold for every document are then
    skipped; None: every test runs). Vectorised: O(len(idx)).
    """
    ok: npt.NDArray[np.bool_] = arrays["alive"].take(idx)
    if (facts is None or facts.users) and not codes.any_user:
        user = arrays["user"].take(idx)
        ok &= (user == 0) | (user == codes.user)
    if facts is None or facts.sessions:
        session = arrays["session"].take(idx)
        ok &= (session == 0) | ((session == codes.session) & (codes.session > 0))
    if facts is None or facts.expiring or not now < math.inf:
        ok &= arrays["expires"].take(idx) > now
    rules = _ttl_rules(retention)
    if facts is not None:
        rules = [(code, ttl) for code, ttl in rules if code in facts.types]
    if rules:
        assert retention is not None
        mtype = arrays["type"].take(idx)
        young = arrays["access"].take(idx) < retention.access_immunity
        touched = arrays["touched"].take(idx)
        for code, ttl in rules:
            ok &= ~((mtype == code) & young & (touched + ttl <= now))
    return ok


def visible_row(
    memory: Memory, scope: Scope, now: float, retention: Retention | None, *, any_user: bool
) -> bool:
    """The same rule for one :class:`Memory` of a partition (``any_user``: the global one)."""
    if not any_user and memory.user_id not in ("", scope.user_id):
        return False
    if memory.session_id is not None and memory.session_id != scope.session_id:
        return False
    if memory.expires_at is not None and not memory.expires_at > now:
        return False
    if retention is None:
        return True
    ttl = retention.ttl_s.get(memory.type, 0.0)
    if ttl <= 0 or memory.access_count >= retention.access_immunity:
        return True
    touched = memory.last_accessed_at if memory.last_accessed_at is not None else memory.created_at
    return not touched + ttl <= now


def expires_value(expires_at: float | None) -> float:
    """``expires_at`` as stored in the ``expires`` column: +inf when unset."""
    return math.inf if expires_at is None else float(expires_at)
