"""Management operations of user control: forget by query, key switches and caps, usage.

Used by the REST API (``DELETE /api/memory?q=``, ``GET/PATCH /api/keys``, ``GET /api/usage``),
the MCP tool ``memory_forget`` and the CLI (``mnemogate keys update``, ``mnemogate stats``).
See docs/ARCHITECTURE.md, "Controlling memory".
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from shared.errors import InvalidRequest, NotFound, PermissionDenied
from shared.forget import ForgetOutcome, OnDeleted, forget
from shared.forget_intent import detect_forget
from shared.forget_terms import target_stems
from shared.models import ApiKey
from shared.store import Store
from shared.store.usage import UsageDay

OnOff = Literal["on", "off", "inherit"]
MAX_QUERY_CHARS = 1000
#: Longest usage window (days; a leap year).
MAX_USAGE_DAYS = 366
#: A forget query: 1..MAX_QUERY_CHARS characters, not all blank (the schema states it).
ForgetText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S")]
#: A key's cap: 0 (none) up to SQLite's largest integer.
Cap = Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]


class ForgetQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Query of a forget by query (``DELETE /api/memory``).

    ``DELETE /api/memory`` query: ``q`` names what to forget ("my phone number", or a whole request
    such as "please forget where I work"); ``user_id`` the end user (``""`` = the key's own
    memories); ``owner_id`` the key (admin only, required for the admin); ``dry_run`` reports what
    would go.
    """

    q: ForgetText
    user_id: str = ""
    owner_id: str | None = None
    dry_run: bool = False


class ForgetResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a forget by query removed.

    What a forget by query removed: ``reason`` (``ok``, ``no_target``, ``no_match``, ``too_broad``,
    ``ambiguous``), ``deleted`` (``[{id, key, category, via}]``), ``dry_run``.
    """

    reason: str
    deleted: list[dict[str, Any]]
    dry_run: bool


class KeyUpdate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``PATCH /api/keys/{id}``: each field absent/null = unchanged.

    ``recall`` / ``learn``: ``on``, ``off`` or ``inherit`` (provider, then global). ``max_memories``
    / ``max_bytes``: the key's cap (0 = none).
    """

    recall: OnOff | None = None
    learn: OnOff | None = None
    max_memories: Cap | None = None
    max_bytes: Cap | None = None


class KeyView(msgspec.Struct, frozen=True, kw_only=True):
    """A key as the API shows it (never the secret)."""

    id: str
    name: str
    prefix: str
    created_at: float
    revoked_at: float | None
    recall: OnOff
    learn: OnOff
    max_memories: int
    max_bytes: int


class KeyList(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /api/keys``: every key, oldest first."""

    items: list[KeyView]


class UsageQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``GET /api/usage`` query: ``key_id`` (admin: any or all; client: itself), ``days``."""

    key_id: str | None = None
    days: Annotated[int, msgspec.Meta(ge=1, le=MAX_USAGE_DAYS)] = 30


class UsageResult(msgspec.Struct, frozen=True, kw_only=True):
    """Memory usage per key and UTC day.

    Per key and UTC day: requests with memory, memories and tokens injected, facts learned, forgets
    (and memories they deleted).
    """

    days: int
    items: list[UsageDay]


def _switch(value: bool | None) -> OnOff:
    return "inherit" if value is None else ("on" if value else "off")


def key_view(key: ApiKey) -> KeyView:
    """The API view of ``key``."""
    return KeyView(
        id=key.id,
        name=key.name,
        prefix=key.prefix,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
        recall=_switch(key.recall_enabled),
        learn=_switch(key.learn_enabled),
        max_memories=key.max_memories or 0,
        max_bytes=key.max_bytes or 0,
    )


def key_changes(body: KeyUpdate) -> dict[str, Any]:
    """The column changes of ``body`` (``inherit`` → NULL; a cap of 0 → NULL).

    Raises:
        InvalidRequest: a negative cap.
    """
    changes: dict[str, Any] = {}
    for name, value in (("recall_enabled", body.recall), ("learn_enabled", body.learn)):
        if value is not None:
            changes[name] = None if value == "inherit" else value == "on"
    for name, cap in (("max_memories", body.max_memories), ("max_bytes", body.max_bytes)):
        if cap is not None:
            if cap < 0:
                raise InvalidRequest(f"{name} must be >= 0 (0 = no cap)")
            changes[name] = cap or None
    return changes


async def update_key(store: Store, key_id: str, body: KeyUpdate) -> KeyView:
    """Apply ``body`` to ``key_id``.

    Raises:
        NotFound: no such key. InvalidRequest: a negative cap.
    """
    key = await store.keys.update(key_id, key_changes(body))
    if key is None:
        raise NotFound(f"api key '{key_id}' not found")
    return key_view(key)


def forget_stems(q: str) -> tuple[str, ...]:
    """The target stems a forget query names.

    The stems a forget query names: those of the request recognised in ``q``
    (:func:`shared.forget_intent.detect_forget`), else of ``q`` taken as the target itself.

    Raises:
        InvalidRequest: ``q`` is empty or longer than :data:`MAX_QUERY_CHARS`.
    """
    if not q.strip() or len(q) > MAX_QUERY_CHARS:
        raise InvalidRequest(f"q must hold 1..{MAX_QUERY_CHARS} characters")
    intent = detect_forget(q)
    return intent.stems if intent is not None else target_stems(q)


def forget_owner(admin: bool, key_id: str | None, requested: str | None) -> str:
    """The key whose memories a forget by query touches.

    Raises:
        InvalidRequest: the admin named no ``owner_id``. PermissionDenied: a client key naming
            ``global``. NotFound: a client key naming another key.
    """
    if admin:
        if not requested:
            raise InvalidRequest("owner_id is required with the admin token")
        return requested
    if requested == "global":
        raise PermissionDenied("global memories are read-only for client keys")
    if requested not in (None, key_id):
        raise NotFound(f"owner '{requested}' not found")
    assert key_id is not None
    return key_id


async def forget_by_query(
    store: Store,
    owner_id: str,
    query: ForgetQuery,
    *,
    now: float,
    source: str,
    max_matches: int,
    on_deleted: OnDeleted | None,
) -> ForgetResult:
    """Forget what a query names, with the chat matcher.

    Forget what ``query.q`` names among ``owner_id``/``query.user_id``'s memories with the chat
    matcher and margin rule (:func:`shared.forget.forget`); reports ids and keys.

    Raises:
        InvalidRequest: an empty or too long ``q``. StoreError: the database failed.
    """
    outcome: ForgetOutcome = await forget(
        store,
        owner_id=owner_id,
        user_id=query.user_id,
        stems=forget_stems(query.q),
        now=now,
        source=source,
        max_matches=max_matches,
        dry_run=query.dry_run,
        on_deleted=on_deleted,
    )
    return ForgetResult(
        reason=outcome.reason,
        deleted=[msgspec.to_builtins(d) for d in outcome.deleted],
        dry_run=outcome.dry_run,
    )


async def usage(store: Store, owner_id: str | None, days: int, now: float) -> UsageResult:
    """Usage per key and day (:meth:`shared.store.usage.UsageStore.daily`).

    Raises:
        InvalidRequest: ``days`` outside 1..366.
    """
    if not 1 <= days <= MAX_USAGE_DAYS:
        raise InvalidRequest(f"days must be within 1..{MAX_USAGE_DAYS}")
    return UsageResult(days=days, items=await store.usage.daily(owner_id, days, now))
