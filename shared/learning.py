"""The learning pipeline: from the user's new turns to stored memories (DESIGN §5).

For each user turn not yet learned in this conversation (content-addressed cursor, see
:mod:`shared.store.cursors`):
skip it whole if it asks not to be remembered → extract facts (regex extractor) → drop facts
holding sensitive data → upsert facts on their stable keys → capture the turn itself as an
episodic memory with sensitive spans replaced by typed placeholders. The assistant's reply is
context only; nothing it says is stored as a user fact.

Idempotent: facts upsert on (owner, user, key), captured turns on the hash of the conversation
prefix ending at that turn, and the cursor is written last.
"""

from __future__ import annotations

import hashlib
import time

import msgspec

from shared.extraction import extract_facts, is_do_not_remember
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.models import NewMemory

MAX_TURN_CHARS = 8000


class LearnResult(msgspec.Struct, frozen=True, kw_only=True):
    """Counts from one learn job: turns considered, facts stored, turns captured, facts skipped as
    sensitive, and the rowids written (for follow-up embedding)."""

    turns: int = 0
    facts: int = 0
    captured: int = 0
    sensitive_skipped: int = 0
    memory_ids: list[int] = msgspec.field(default_factory=list)


def prefix_ids(user_turns: list[str]) -> list[str]:
    """Chained hashes: element ``i`` identifies user turns ``0..i`` (24 hex chars of sha256)."""
    out: list[str] = []
    digest = b""
    for text in user_turns:
        digest = hashlib.sha256(digest + b"\x1f" + text.encode("utf-8", "replace")).digest()
        out.append(digest.hex()[:24])
    return out


async def learn(jc: JobContext, p: LearnPayload) -> LearnResult:
    """Run the pipeline for one exchange; returns what was stored.

    Raises:
        StoreError: the store failed (the job is retried; nothing is half-learned twice because
            every write is an idempotent upsert and the cursor moves last).
    """
    settings = jc.settings
    store = jc.store
    prefixes = prefix_ids(p.user_turns)
    learned = await store.cursors.learned_prefix(p.owner_id, p.user_id, prefixes)
    total = len(p.user_turns)
    facts = captured = skipped = 0
    ids: list[int] = []
    origin = {"session_id": p.session_id, "request_id": p.request_id}
    for index in range(learned, total):
        text = p.user_turns[index].strip()[:MAX_TURN_CHARS]
        if not text or is_do_not_remember(text):
            continue
        if settings.extraction == "regex":
            for fact in extract_facts(text):
                if settings.sensitive_filter and jc.detector.contains_sensitive(fact.content):
                    skipped += 1
                    continue
                memory, _ = await store.writes.upsert(
                    NewMemory(
                        owner_id=p.owner_id,
                        user_id=p.user_id,
                        type=fact.type,  # type: ignore[arg-type]
                        category=fact.category,  # type: ignore[arg-type]
                        key=fact.key,
                        content=fact.content,
                        metadata={**origin, "confidence": fact.confidence},
                        source="extraction",
                    ),
                    now=p.created_at,
                )
                ids.append(memory.id)
                facts += 1
        if settings.capture_turns:
            content = jc.detector.redact(text) if settings.sensitive_filter else text
            memory, _ = await store.writes.upsert(
                NewMemory(
                    owner_id=p.owner_id,
                    user_id=p.user_id,
                    type="episodic",
                    category="turn",
                    key="turn:" + prefixes[index],
                    content=content,
                    metadata={**origin, "turn_index": index},
                    source="capture",
                ),
                now=p.created_at,
            )
            ids.append(memory.id)
            captured += 1
    if total:
        await store.cursors.mark_learned(p.owner_id, p.user_id, prefixes[-1], total, time.time())
    if facts:
        await store.events.record("extraction", p.owner_id, user_id=p.user_id, count=facts)
    if captured:
        await store.events.record("capture", p.owner_id, user_id=p.user_id, count=captured)
    jc.count("facts", facts)
    jc.count("captured", captured)
    return LearnResult(
        turns=total - learned,
        facts=facts,
        captured=captured,
        sensitive_skipped=skipped,
        memory_ids=ids,
    )
