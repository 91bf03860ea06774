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
#: Longest search context an import may carry (characters). What learning stores is at most
#: four neighbouring turns of 1,000 characters and a line of slot words
#: (:mod:`shared.turn_context`, :mod:`shared.slot_terms`), so an export always fits.
MAX_CONTEXT_CHARS = 8000
SearchContext = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_CONTEXT_CHARS,
        description=(
            "The text of the conversation turns around the one the memory came from, one per "
            "line: searched (a lower-weighted field), never injected; empty when unknown."
        ),
    ),
]
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


#: An id or key as a request can name it: no control character (Unicode ``Cc``).
NO_CONTROL_CHARS = "^[^\\x00-\\x1f\\x7f-\\x9f]*$"
#: Longest end-user id the REST API and MCP accept: the top of ``end_user_max_chars``'s range
#: (the setting can change at run time, the API's schema cannot).
MAX_END_USER_CHARS = 4096
#: An end-user id as a request can name one: no control character (Unicode ``Cc``), at most
#: :data:`MAX_END_USER_CHARS` characters.
EndUserId = Annotated[str, msgspec.Meta(max_length=MAX_END_USER_CHARS, pattern=NO_CONTROL_CHARS)]
#: A session id as a request can name one: no control character, at most
#: :data:`MAX_SESSION_CHARS` characters (the chat routes' header cut).
SessionId = Annotated[str, msgspec.Meta(max_length=MAX_SESSION_CHARS, pattern=NO_CONTROL_CHARS)]
#: A memory's relevance: 0..1 (1 = fresh; decay lowers it).
Relevance = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
#: Longest upsert key written through the API, MCP or an import (characters; learned keys are
#: under 80: a prefix and a 48-character slug with its hash, shared.extraction.facts).
MAX_KEY_CHARS = 512
#: An upsert key as the API takes one: no control character, at most :data:`MAX_KEY_CHARS`.
UpsertKey = Annotated[str, msgspec.Meta(max_length=MAX_KEY_CHARS, pattern=NO_CONTROL_CHARS)]
#: Latest time a memory may carry (unix seconds, about the year 5138).
MAX_TIME_S = 1e11
#: A memory's time as the API takes one: unix seconds from 0 to :data:`MAX_TIME_S`.
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_TIME_S)]


class MemoryChanges(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Fields an edit may set.

    (``PATCH /api/memory/{id}``, the MCP ``update`` tool, the store's update): absent (``UNSET``) =
    unchanged; ``expires_at`` null = never expires; ``metadata`` replaces the whole object.
    """

    content: Content | msgspec.UnsetType = msgspec.UNSET
    type: MemoryType | msgspec.UnsetType = msgspec.UNSET
    category: MemoryCategory | msgspec.UnsetType = msgspec.UNSET
    key: UpsertKey | msgspec.UnsetType = msgspec.UNSET
    metadata: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    expires_at: UnixTime | msgspec.UnsetType | None = msgspec.UNSET
    relevance: Relevance | msgspec.UnsetType = msgspec.UNSET


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
