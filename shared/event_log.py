"""The events timeline of the management API (``GET /api/events``).

Access rules and paging over ``memory_events`` (learning, injections, captures, forgets, evictions,
dead letters, settings changes).

A client key reads only its own owner's events; the admin reads every owner's (``system`` holds
events of no owner: dead letters of unreadable payloads, settings changes) and may narrow to one.
Job payloads kept in a dead letter's detail (``payload_hex``: memory text) are never returned.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from shared.access_policy import Principal
from shared.errors import InvalidRequest, NotFound
from shared.store import Store
from shared.store.events import EventFilter, EventRow

MAX_EVENT_PAGE = 500
MAX_KINDS = 20
MAX_KIND_CHARS = 40
#: detail keys never returned (raw job payloads may hold memory text)
HIDDEN_DETAIL_KEYS = frozenset({"payload_hex", "payload"})

Offset = Annotated[int, msgspec.Meta(ge=0, le=10**12)]


class EventQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters and paging of ``GET /api/events``.

    ``kind`` (one kind or a comma-separated list), ``owner_id`` (admin; a client may name itself),
    ``user_id``, ``since``/``until`` (unix seconds); paging ``limit`` 1..500 (clamped),
    ``offset`` 0..10^12.
    """

    kind: str | None = None
    owner_id: str | None = None
    user_id: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int = 50
    offset: Offset = 0


class EventPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of events, newest first, with the ``total`` matching."""

    items: list[EventRow]
    total: int
    limit: int
    offset: int


def _owners(p: Principal, requested: str | None) -> list[str] | None:
    if p.admin:
        return None if requested is None else [requested]
    if requested is None or requested == p.key_id:
        return [p.key_id or ""]
    raise NotFound(f"owner '{requested}' not found")


def _kinds(kind: str | None) -> list[str] | None:
    if kind is None or not kind.strip():
        return None
    kinds = sorted({k.strip() for k in kind.split(",") if k.strip()})
    if len(kinds) > MAX_KINDS or any(len(k) > MAX_KIND_CHARS for k in kinds):
        raise InvalidRequest(
            f"kind: at most {MAX_KINDS} kinds of at most {MAX_KIND_CHARS} characters"
        )
    return kinds


def _public(row: EventRow) -> EventRow:
    if HIDDEN_DETAIL_KEYS.isdisjoint(row.detail):
        return row
    detail = {k: v for k, v in row.detail.items() if k not in HIDDEN_DETAIL_KEYS}
    return msgspec.structs.replace(row, detail=detail)


async def list_events(store: Store, p: Principal, query: EventQuery) -> EventPage:
    """A page of the events ``p`` may read matching ``query`` (see :class:`EventQuery`).

    Raises:
        InvalidRequest: a malformed ``kind`` list. (``since`` after ``until`` is an empty
            window: a valid query that matches nothing.)
        NotFound: a client naming another owner. StoreError: the database failed.
    """
    limit = max(1, min(query.limit, MAX_EVENT_PAGE))
    flt = EventFilter(
        owners=_owners(p, query.owner_id),
        kinds=_kinds(query.kind),
        user_id=query.user_id,
        since=query.since,
        until=query.until,
    )
    rows, total = await store.events.page(flt, limit=limit, offset=query.offset)
    return EventPage(
        items=[_public(r) for r in rows], total=total, limit=limit, offset=query.offset
    )
