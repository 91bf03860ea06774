"""Domain records shared by the store, retrieval, jobs and the HTTP layer (msgspec structs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

MemoryType = Literal["factual", "episodic", "procedural", "semantic"]
MemoryCategory = Literal[
    "preference", "decision", "pattern", "fact", "correction", "context", "turn", "summary"
]
MEMORY_TYPES: tuple[str, ...] = ("factual", "episodic", "procedural", "semantic")
MEMORY_CATEGORIES: tuple[str, ...] = (
    "preference",
    "decision",
    "pattern",
    "fact",
    "correction",
    "context",
    "turn",
    "summary",
)
GLOBAL_OWNER = "global"


class MemoryFields(msgspec.Struct, frozen=True, kw_only=True):
    """The fields every view of a stored memory shares.

    Times are unix seconds; ``user_id`` ``""`` means owner-wide; a non-null ``session_id`` makes the
    memory visible only inside that session.

    :class:`Memory` adds the store's identifiers; the API view
    (:class:`shared.memory_api.MemoryView`) adds only the public id.
    """

    owner_id: str
    user_id: str
    session_id: str | None
    type: MemoryType
    category: MemoryCategory
    key: str
    content: str
    metadata: dict[str, Any]
    source: str
    created_at: float
    updated_at: float
    expires_at: float | None
    last_accessed_at: float | None
    access_count: int
    relevance: float
    needs_reindex: bool


class Memory(MemoryFields, frozen=True, kw_only=True):
    """One stored memory: ``id`` is the integer rowid (FTS5 and vec0 join on it).

    ``public_id`` is what APIs expose.
    """

    id: int
    public_id: str


#: Longest session id (characters): the chat routes cut ``x-mnemogate-session-id`` to this, and
#: the REST API and MCP refuse a longer one, so a memory is never stored under a session id no
#: request can name.
MAX_SESSION_CHARS = 256
#: Memory content written through the API: at least one character that is neither whitespace
#: nor a control character (control characters become spaces and the content is stripped).
NON_BLANK = r"[^\s\x00-\x1f\x7f-\x9f]"
#: Longest memory content written through the API, MCP or an import (characters). A memory is
#: a note, not a document: 8,000 characters are about 2,000 tokens, the default recall budget
#: (``recall_max_tokens``), so a longer one could never be injected, and indexing megabytes of
#: one memory would stall the process that writes or loads it.
MAX_MEMORY_CHARS = 8000
Content = Annotated[
    str,
    msgspec.Meta(
        pattern=NON_BLANK,
        max_length=MAX_MEMORY_CHARS,
        description=(
            "Must contain a character that is neither whitespace nor a control character; at"
            " most 8,000 characters."
        ),
    ),
]


class MemoryChanges(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Fields an edit may set.

    (``PATCH /api/memory/{id}``, the MCP ``update`` tool, the store's update): absent (``UNSET``) =
    unchanged; ``expires_at`` null = never expires; ``metadata`` replaces the whole object.
    """

    content: Content | msgspec.UnsetType = msgspec.UNSET
    type: MemoryType | msgspec.UnsetType = msgspec.UNSET
    category: MemoryCategory | msgspec.UnsetType = msgspec.UNSET
    key: str | msgspec.UnsetType = msgspec.UNSET
    metadata: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    expires_at: float | msgspec.UnsetType | None = msgspec.UNSET
    relevance: float | msgspec.UnsetType = msgspec.UNSET


class MemoryInput(msgspec.Struct, frozen=True, kw_only=True):
    """The fields a writer gives a new memory.

    (times are unix seconds; ``expires_at`` None: never expires). :class:`NewMemory` adds the owner
    and the source; the API's :class:`shared.memory_api.MemoryCreate` adds an optional owner.
    """

    content: str
    user_id: str = ""
    session_id: str | None = None
    type: MemoryType = "semantic"
    category: MemoryCategory = "fact"
    key: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    expires_at: float | None = None
    relevance: float = 1.0


class NewMemory(MemoryInput, frozen=True, kw_only=True):
    """Input of an upsert. ``key`` None → a fresh key from the public id (plain insert).

    ``context`` is the text of the conversation turns around the one the memory came from: a
    search-only field, never injected (:mod:`shared.turn_context`); ``""`` = unknown.
    """

    owner_id: str
    source: str = "api"
    context: str = ""


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """Who is asking: the owner (api key id), the end user, the session.

    Visible memories: the owner's owner-wide ones (``user_id == ""``), the end user's own
    (``user_id == user_id``), the session's session-scoped ones, and global memories
    (``owner_id == "global"``) when ``include_global``.
    """

    owner_id: str
    user_id: str = ""
    session_id: str | None = None
    include_global: bool = True


class ApiKey(msgspec.Struct, frozen=True, kw_only=True):
    """A client API key record (the secret itself is never stored, only its sha256).

    ``recall_enabled`` / ``learn_enabled``: the key's memory switches (None = inherit from the
    provider, then the global settings). ``max_memories`` / ``max_bytes``: the key's memory cap
    (count; bytes of content), None = no cap.
    """

    id: str
    name: str
    prefix: str
    created_at: float
    revoked_at: float | None
    last_used_at: float | None
    recall_enabled: bool | None = None
    learn_enabled: bool | None = None
    max_memories: int | None = None
    max_bytes: int | None = None
