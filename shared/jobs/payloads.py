"""Job names and payloads, declared in one place.

Payloads are msgspec structs encoded as MessagePack (never pickle); every job takes exactly one
encoded payload.
"""

from __future__ import annotations

import hashlib

import msgspec


class Turn(msgspec.Struct, frozen=True):
    """One chat message reduced to its text: ``role`` (user/assistant/system/tool), ``text``."""

    role: str
    text: str


class LearnPayload(msgspec.Struct, frozen=True, kw_only=True):
    """Learn from one completed exchange.

    ``user_turns`` has one entry per user message of the request, oldest first; the learning
    cursor decides which are new. Entries before ``kept_from`` are ``""``: the gateway carries
    only the text a learn job can use (:mod:`shared.learn_payload`). ``prefixes`` holds the
    cursor's hash of every prefix (:func:`shared.new_turns.prefix_ids`); it is empty from older
    gateways, which sent every text, and is then computed from ``user_turns``. ``replies[i]`` is
    the assistant text between user turn ``i`` and ``i + 1`` in the request (``""`` if none or
    before ``kept_from``; empty list from older gateways), and ``assistant_text`` the upstream's
    answer to the last turn: both are context only (never stored as a user fact; they fill the
    search-only ``context`` of captured turns). ``created_at`` is the request time in unix
    seconds.
    """

    owner_id: str
    user_id: str
    session_id: str | None
    user_turns: list[str]
    prefixes: list[str] = msgspec.field(default_factory=list)
    kept_from: int = 0
    replies: list[str] = msgspec.field(default_factory=list)
    assistant_text: str = ""
    created_at: float
    request_id: str


class RecordAccessPayload(msgspec.Struct, frozen=True, kw_only=True):
    """Count one injection for each memory rowid in ``memory_ids`` at ``at`` (unix seconds).

    ``requests``: requests that injected memory in this batch; ``tokens``: their estimated
    injected tokens (both feed the usage statistics; 0 in payloads of older gateways).
    """

    memory_ids: list[int]
    at: float
    owner_id: str
    user_id: str = ""
    requests: int = 0
    tokens: int = 0


class EmbedPayload(msgspec.Struct, frozen=True, kw_only=True):
    """(Re-)embed the given memory rowids into the vector tier(s)."""

    memory_ids: list[int]


class ForgetPayload(msgspec.Struct, frozen=True, kw_only=True):
    """Forget what a chat message asked to forget (:func:`shared.forget.forget`).

    ``stems`` are the target's topic stems (:func:`shared.forget_terms.target_stems`);
    ``requested_at`` is the request time in unix seconds (the tombstone's time, so learn jobs of
    that request and earlier ones never write the content again). Job name :data:`FORGET`.
    """

    owner_id: str
    user_id: str
    stems: list[str]
    requested_at: float
    request_id: str


class VectorDeletePayload(msgspec.Struct, frozen=True, kw_only=True):
    """Remove the vectors of deleted memories (rowids ``memory_ids``) from the Qdrant tier.

    sqlite-vec rows go with the memory row (trigger), so this only concerns Qdrant; ids that
    belong to a live memory again when the job runs (SQLite reuses the largest rowid) are
    skipped. ``requested_at`` (unix seconds) makes each request a distinct job: job ids are
    payload hashes and arq skips an id it still remembers. Job name :data:`VECTOR_DELETE`.
    """

    memory_ids: list[int]
    requested_at: float


class ReindexPayload(msgspec.Struct, frozen=True, kw_only=True):
    """Rebuild the vector tier(s) for memories marked ``needs_reindex`` (``force``: every memory).

    ``owner_id`` None = every owner. ``requested_at`` (unix seconds) makes each request a distinct
    job (job ids are payload hashes). Job name :data:`REINDEX`; handler wired by the vector tier.
    """

    owner_id: str | None = None
    force: bool = False
    requested_at: float


class SummarizePayload(msgspec.Struct, frozen=True, kw_only=True):
    """Summarize one owner's episodic memories older than ``older_than_days`` into summaries.

    ``owner_id`` is required: a summary never merges several tenants (see "Lifecycle" in
    ``docs/ARCHITECTURE.md``). ``user_id`` None = every end user of the owner (each summarized
    separately). Job name :data:`SUMMARIZE`; handler wired by the lifecycle work.
    """

    owner_id: str
    user_id: str | None = None
    older_than_days: float = 30.0
    dry_run: bool = False
    requested_at: float


class SweepPayload(msgspec.Struct, frozen=True, kw_only=True):
    """One lifecycle sweep run (typed decay + capacity, :mod:`shared.lifecycle.sweep`).

    ``requested_at`` (unix seconds) makes each request a distinct job. Job name :data:`SWEEP`.
    """

    dry_run: bool = False
    requested_at: float


class DecayRelevancePayload(msgspec.Struct, frozen=True, kw_only=True):
    """Apply relevance decay up to now (:mod:`shared.lifecycle.relevance`); catch-up, idempotent.

    ``requested_at`` (unix seconds) makes each request a distinct job. Job name
    :data:`DECAY_RELEVANCE`.
    """

    requested_at: float


LEARN = "learn"
SWEEP = "sweep"
DECAY_RELEVANCE = "decay_relevance"
REINDEX = "reindex"
SUMMARIZE = "summarize"
RECORD_ACCESS = "record_access"
EMBED = "embed"
VECTOR_DELETE = "vector_delete"
FORGET = "forget"

PAYLOAD_TYPES: dict[str, type[msgspec.Struct]] = {
    LEARN: LearnPayload,
    RECORD_ACCESS: RecordAccessPayload,
    EMBED: EmbedPayload,
    VECTOR_DELETE: VectorDeletePayload,
    FORGET: ForgetPayload,
    REINDEX: ReindexPayload,
    SUMMARIZE: SummarizePayload,
    SWEEP: SweepPayload,
    DECAY_RELEVANCE: DecayRelevancePayload,
}

_encoder = msgspec.msgpack.Encoder()


def encode_payload(payload: msgspec.Struct) -> bytes:
    """MessagePack bytes of ``payload``."""
    return _encoder.encode(payload)


def decode_payload(job_name: str, data: bytes) -> msgspec.Struct:
    """Decode ``data`` as the payload type registered for ``job_name``.

    Raises:
        KeyError: unknown job name. msgspec.DecodeError / ValidationError: malformed payload.
    """
    return msgspec.msgpack.decode(data, type=PAYLOAD_TYPES[job_name])


def job_id_for(job_name: str, data: bytes) -> str:
    """Deterministic idempotency id: ``name:`` + sha256 of the payload (first 32 hex chars)."""
    return f"{job_name}:{hashlib.sha256(data).hexdigest()[:32]}"
