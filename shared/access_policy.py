"""Who may read and change which memories: the access rules of the REST API and the MCP server.

A :class:`Principal` is either the admin (``MNEMOGATE_ADMIN_TOKEN``; sees and changes every
owner) or one client key (sees its own memories and the ``global`` ones, changes only its own).
Another owner's id, or a memory of another owner, is reported as not found (404, never 403) so
that ids of other tenants cannot be probed; writing a global memory with a client key is 403 (it
is visible, but read-only). The owner of a client's data is always the authenticated key, never
a request field. See "Tenancy and access" in ``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

import msgspec

from shared.errors import InvalidRequest, NotFound, PermissionDenied
from shared.models import GLOBAL_OWNER
from shared.store import Store

GLOBAL_READ_ONLY = "global memories are read-only for client keys"


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling: ``admin`` True (``key_id`` None), or the client key ``key_id``."""

    admin: bool
    key_id: str | None = None

    @property
    def client_id(self) -> str:
        """The client key id (``""`` for the admin, who has none)."""
        return self.key_id or ""


def readable_owners(p: Principal, requested: str | None) -> list[str] | None:
    """Owners ``p`` may read, narrowed to ``requested``; None = every owner (admin only).

    Raises:
        NotFound: a client asked for an owner other than itself or ``global``.
    """
    if p.admin:
        return None if requested is None else [requested]
    if requested is None:
        return [p.client_id, GLOBAL_OWNER]
    if requested in (p.key_id, GLOBAL_OWNER):
        return [requested]
    raise NotFound(f"owner '{requested}' not found")


def writable_owner(p: Principal, requested: str | None) -> str:
    """The owner a write by ``p`` goes to.

    Raises:
        InvalidRequest: the admin did not name an owner.
        PermissionDenied: a client tried to write ``global`` memories (read-only for clients).
        NotFound: a client named another owner.
    """
    if p.admin:
        if not requested:
            raise InvalidRequest("owner_id is required with the admin token")
        return requested
    if requested is None or requested == p.key_id:
        return p.client_id
    if requested == GLOBAL_OWNER:
        raise PermissionDenied(GLOBAL_READ_ONLY)
    raise NotFound(f"owner '{requested}' not found")


def writable_owners(p: Principal) -> list[str] | None:
    """Owners whose memories ``p`` may change: None = every owner (admin), else its own key."""
    return None if p.admin else [p.client_id]


async def check_writable_id(store: Store, p: Principal, public_id: str) -> None:
    """Check that ``p`` may change the memory ``public_id`` (the admin always may).

    Raises:
        NotFound: ``p`` cannot see ``public_id`` (or it does not exist).
        PermissionDenied: ``p`` can see it but not change it (a global memory).
        StoreError: the database failed.
    """
    if p.admin:
        return
    owner = await store.admin.public_id_owner(public_id)
    if owner == GLOBAL_OWNER:
        raise PermissionDenied(GLOBAL_READ_ONLY)
    if owner != p.key_id:
        raise NotFound(f"memory '{public_id}' not found")


def check_row_owner(p: Principal, owner_id: str, line_no: int) -> None:
    """Check that ``p`` may import a row of ``owner_id`` (line ``line_no`` of an import).

    Raises:
        PermissionDenied: a client importing a global row.
        NotFound: a client importing another owner's row.
    """
    if p.admin or owner_id == p.key_id:
        return
    if owner_id == GLOBAL_OWNER:
        raise PermissionDenied(f"line {line_no}: {GLOBAL_READ_ONLY}")
    raise NotFound(f"line {line_no}: owner '{owner_id}' not found")
