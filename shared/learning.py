"""The learning pipeline: from the user's new turns to stored memories (DESIGN §5).

One ``learn`` job handles one exchange (:class:`~shared.jobs.payloads.LearnPayload`):

1. **New turns.** User turns not yet learned in this conversation are found with the
   content-addressed cursor (:mod:`shared.store.cursors`), so replays and long chats never
   re-learn old turns (CASES E9). Only the newest ``learn_max_turns`` of them are learned (one
   request pasting thousands of user messages writes at most that many memories); the turns
   before that window are passed over for good. Control characters other than newline and tab
   (NUL, ESC, DEL, C1) become spaces in each turn. Within the window a text repeated verbatim is
   learned once (its newest occurrence), a turn with no letter or digit at all (``*``, ``-``,
   zero-width or control characters) is skipped, and so is a turn that asks not to be
   remembered (E5).
2. **Extract.** ``extraction=regex`` (default): :func:`~shared.extraction.extract_facts` on each
   new turn. ``extraction=llm``: once the conversation has ``llm_extractor_min_turns`` user
   turns, one call to the configured provider (:func:`~shared.extraction.extract_with_llm`) over
   every turn not yet seen by the LLM (the turns before the threshold included), with sensitive
   spans redacted before they leave the process and the assistant reply marked as context only.
   A failed LLM extraction (transport error, HTTP status, no parsable JSON) is never silent: it
   is reported in :attr:`LearnResult.llm_error`, counted (``llm_extraction_failures``), recorded
   as an ``extraction_failed`` event, and the regex extractor runs on those turns instead.
   Fewer turns than the threshold → no facts yet (captures still happen). ``off``: no facts.
3. **Sanitise** every fact (both extractors): control characters removed, whitespace collapsed,
   1..:data:`~shared.extraction.MAX_CONTENT_CHARS` characters, no questions, known category/type.
   LLM facts must also be *grounded*: share at least one search term (other than "user") with
   the user's own text, so nothing only the assistant said becomes a user fact (E7).
4. **Sensitive check**: a fact containing secrets or personal data is dropped (not stored).
5. **Dedupe**: same key → the upsert updates that row; otherwise the owner + end user's facts
   are searched with FTS5 (:func:`~shared.fts_query.build_match_query`) and a near-identical
   one (:func:`shared.dedupe.is_near_duplicate`) is updated under its key instead of a second
   row being inserted.
6. **Upsert**, then **turn capture** (``capture_turns``): each new turn stored as an episodic
   ``turn`` memory with sensitive spans replaced by typed placeholders (``[email]``, ...).
7. The cursor is written last; then ``extraction`` / ``capture`` events.

Idempotent: facts upsert on (owner, user, key), captured turns on the hash of the conversation
prefix ending at that turn, the cursor moves last, so a job re-run after a crash stores nothing
twice (events of a job killed between its first write and its cursor may be counted twice).
"""

from __future__ import annotations

import hashlib
import time
import unicodedata

import msgspec

from shared.control_chars import strip_control_chars
from shared.dedupe import fact_tokens, is_near_duplicate
from shared.extraction import (
    CATEGORIES,
    CATEGORY_TYPES,
    MAX_CONTENT_CHARS,
    TYPES,
    ExtractedFact,
    contradicted_keys,
    extract_facts,
    extract_with_llm,
    is_do_not_remember,
)
from shared.forget_guard import drop_forgotten, purge_forgotten
from shared.forget_intent import detect_forget
from shared.fts_query import build_match_query, query_terms
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.jobs.vector_sync import enqueue_vector_delete
from shared.models import Memory, NewMemory, Scope

#: Characters of one user turn considered (longer turns are cut; pastes beyond are not facts).
MAX_TURN_CHARS = 8000
#: Existing facts fetched by the FTS5 near-duplicate lookup, per new fact.
DEDUPE_CANDIDATES = 8
#: Terms that never ground an LLM fact in the user's text (every fact mentions the user).
_UNGROUNDING_TERMS = frozenset({"user", "users"})
#: Characters of assistant reply given to the LLM extractor as context.
MAX_CONTEXT_CHARS = 2000


class LearnResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one learn job did (the job's result; arq keeps it for an hour).

    Attributes:
        turns: user turns considered: the new ones since the cursor, at most
            ``learn_max_turns`` (the newest).
        facts: facts upserted (inserted or updated).
        captured: turns captured as episodic memories.
        sensitive_skipped: facts dropped because they held secrets or personal data.
        deduplicated: facts written onto an existing near-identical fact's row.
        ungrounded_skipped: LLM facts dropped for sharing no term with the user's text.
        extractor: ``regex``, ``llm``, ``regex-fallback`` (LLM failed), ``none`` (no extraction
            ran: ``off``, or fewer than ``llm_extractor_min_turns`` turns).
        llm_error: why the LLM extraction failed, else ``None``.
        memory_ids: rowids written whose content is new or changed (they need embedding).
    """

    turns: int = 0
    facts: int = 0
    captured: int = 0
    sensitive_skipped: int = 0
    deduplicated: int = 0
    ungrounded_skipped: int = 0
    extractor: str = "none"
    llm_error: str | None = None
    memory_ids: list[int] = msgspec.field(default_factory=list)


def prefix_ids(user_turns: list[str]) -> list[str]:
    """Chained hashes: element ``i`` identifies user turns ``0..i`` (24 hex chars of sha256)."""
    out: list[str] = []
    digest = b""
    for text in user_turns:
        digest = hashlib.sha256(digest + b"\x1f" + text.encode("utf-8", "replace")).digest()
        out.append(digest.hex()[:24])
    return out


def _clean_turn(text: str) -> str:
    """A user turn as learned and stored: :func:`strip_control_chars`, stripped, at most
    :data:`MAX_TURN_CHARS` characters."""
    return strip_control_chars(text).strip()[:MAX_TURN_CHARS]


def has_word_character(text: str) -> bool:
    """True when ``text`` holds at least one letter or digit of any script (``str.isalnum``).

    A turn without one (``"*"``, ``"-"``, ``"'"``, ``"\\u200b"``, ``"\\x00"``) carries nothing
    worth remembering. Pure; never raises.
    """
    return any(ch.isalnum() for ch in text)


def learnable_turns(user_turns: list[str], start: int, max_turns: int) -> list[tuple[int, str]]:
    """The turns of ``user_turns[start:]`` to learn, as ``(index, cleaned text)``, oldest first.

    Only the newest ``max_turns`` (>= 1) indices from ``start`` on are considered; of those, a
    turn is dropped when its cleaned text (:func:`_clean_turn`: control characters other than
    newline and tab become spaces, stripped, cut to :data:`MAX_TURN_CHARS`) is empty, has no
    letter or digit (:func:`has_word_character`), asks not to be remembered or to forget something
    (:func:`shared.forget_intent.detect_forget`), or repeats
    a newer turn of the window verbatim (the newest occurrence is kept). Pure; never raises.
    """
    first = max(start, len(user_turns) - max(1, max_turns), 0)
    seen: set[str] = set()
    kept: list[tuple[int, str]] = []
    for index in range(len(user_turns) - 1, first - 1, -1):
        text = _clean_turn(user_turns[index])
        if not text or text in seen or not has_word_character(text):
            continue
        seen.add(text)
        if not is_do_not_remember(text) and detect_forget(text) is None:
            kept.append((index, text))
    kept.reverse()
    return kept


def sanitise_fact(fact: ExtractedFact) -> ExtractedFact | None:
    """``fact`` with control characters removed and whitespace collapsed, or ``None``.

    ``None`` when the content is empty or longer than :data:`MAX_CONTENT_CHARS` characters, or
    is a question (ends in ``?``/``？``). An unknown category becomes ``fact``; an unknown type
    the category's default (:data:`~shared.extraction.CATEGORY_TYPES`). Pure; never raises.
    """
    text = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in fact.content
    )
    content = " ".join(text.split())
    if not content or len(content) > MAX_CONTENT_CHARS or content.endswith(("?", "？")):
        return None
    category = fact.category if fact.category in CATEGORIES else "fact"
    mtype = fact.type if fact.type in TYPES else CATEGORY_TYPES[category]
    if (content, category, mtype) == (fact.content, fact.category, fact.type):
        return fact
    return msgspec.structs.replace(fact, content=content, category=category, type=mtype)


def is_grounded(fact_content: str, user_text: str) -> bool:
    """True when ``fact_content`` shares a search term (other than "user") with ``user_text``.

    Terms are :func:`shared.fts_query.query_terms` (stop words dropped, CJK bigrams), so this
    works for any script. A fact with no terms of its own counts as grounded.
    """
    terms = set(query_terms(fact_content, max_terms=64)) - _UNGROUNDING_TERMS
    if not terms:
        return True
    return not terms.isdisjoint(query_terms(user_text, max_terms=100_000))


async def _llm_facts(
    jc: JobContext, turns: list[str], context: str
) -> tuple[list[ExtractedFact], str | None]:
    """Ask the configured LLM for facts in ``turns``; returns (facts, error or None)."""
    settings = jc.settings
    name = settings.llm_extractor_provider or "default"
    provider = jc.providers.get(name)
    if provider is None:
        return [], f"llm_extractor_provider {name!r} is not configured"
    if not settings.llm_extractor_model:
        return [], "llm_extractor_model is not set"
    if settings.sensitive_filter:
        turns = [jc.detector.redact(t) for t in turns]
        context = jc.detector.redact(context)
    result = await extract_with_llm(
        jc.http,
        base_url=provider.base_url,
        api_key=provider.api_key or None,
        model=settings.llm_extractor_model,
        user_text="\n\n".join(turns),
        context_text=context[:MAX_CONTEXT_CHARS] or None,
        timeout_s=settings.llm_extractor_timeout_s,
    )
    return result.facts, result.error


async def _near_duplicate_key(jc: JobContext, p: LearnPayload, fact: ExtractedFact) -> str | None:
    """Key of an existing fact of this owner + end user that ``fact`` restates, else None."""
    match = build_match_query(" ".join(sorted(fact_tokens(fact.content))))
    if match is None:
        return None
    scope = Scope(owner_id=p.owner_id, user_id=p.user_id, include_global=False)
    hits: list[tuple[Memory, float]] = await jc.store.memories.keyword_search(
        scope, match, limit=DEDUPE_CANDIDATES, now=p.created_at
    )
    for memory, _score in hits:
        if (
            memory.user_id == p.user_id
            and memory.category == fact.category
            and memory.key
            and memory.key != fact.key
            and is_near_duplicate(fact.content, fact.key, memory.content, memory.key)
        ):
            return memory.key
    return None


async def learn(jc: JobContext, p: LearnPayload) -> LearnResult:
    """Run the pipeline for one exchange (steps in the module docstring); returns what it did.

    Raises:
        StoreError: the store failed (the job is retried; nothing is half-learned twice because
            every write is an idempotent upsert and the cursor moves last).
    """
    settings = jc.settings
    store = jc.store
    window = max(1, settings.learn_max_turns)
    prefixes = prefix_ids(p.user_turns)
    total = len(p.user_turns)
    # Only turns of the newest `window` can be learned, so only a cursor at or after their start
    # matters: the lookup covers the prefixes ending there or later (bounded work for any
    # request). ``learned`` is exact when it is >= total - window, else 0 (the same outcome).
    first = max(0, total - window)
    learned = await store.cursors.learned_prefix(
        p.owner_id, p.user_id, prefixes[max(0, first - 1) :]
    )
    if learned >= total:  # a replay or a regenerated answer: nothing new, write nothing
        return LearnResult()
    new_turns = learnable_turns(p.user_turns, learned, window)

    # 1-2. extract
    candidates: list[ExtractedFact] = []
    extractor = "none"
    llm_error: str | None = None
    ungrounded = 0
    if settings.extraction == "llm" and total >= max(1, settings.llm_extractor_min_turns):
        # Turns before the threshold were never shown to the LLM: include them now.
        start = learned if learned >= settings.llm_extractor_min_turns else 0
        llm_turns = [text for _index, text in learnable_turns(p.user_turns, start, window)]
        if llm_turns:
            facts, llm_error = await _llm_facts(jc, llm_turns, p.assistant_text)
            if llm_error is None:
                extractor = "llm"
                user_text = "\n".join(llm_turns)
                for fact in facts:
                    if is_grounded(fact.content, user_text):
                        candidates.append(fact)
                    else:
                        ungrounded += 1
            else:
                extractor = "regex-fallback"
                jc.count("llm_extraction_failures")
                await store.events.record(
                    "extraction_failed",
                    p.owner_id,
                    user_id=p.user_id,
                    detail={"extractor": "llm", "error": llm_error, "request_id": p.request_id},
                )
                for text in llm_turns:
                    candidates.extend(extract_facts(text))
    elif settings.extraction == "regex":
        extractor = "regex"
        for _index, text in new_turns:
            candidates.extend(extract_facts(text))

    # 3-6. sanitise → sensitive check → dedupe → upsert (facts and captured turns are written
    # together in one transaction: all or nothing, one commit per job)
    facts_written = skipped = deduped = 0
    origin = {"session_id": p.session_id, "request_id": p.request_id}
    fact_origin = {**origin, "learn_prefix": prefixes[-1] if prefixes else ""}
    writes: list[NewMemory] = []
    for raw_fact in candidates:
        clean = sanitise_fact(raw_fact)
        if clean is None:
            continue
        fact = clean
        if settings.sensitive_filter and jc.detector.contains_sensitive(fact.content):
            skipped += 1
            continue
        key = await _near_duplicate_key(jc, p, fact)
        if key is not None:
            deduped += 1
        writes.append(
            NewMemory(
                owner_id=p.owner_id,
                user_id=p.user_id,
                type=fact.type,  # type: ignore[arg-type]
                category=fact.category,  # type: ignore[arg-type]
                key=key or fact.key,
                content=fact.content,
                metadata={**fact_origin, "confidence": fact.confidence, "extractor": extractor},
                source="extraction",
            )
        )
        facts_written += 1

    captured = 0
    if settings.capture_turns:
        for index, text in new_turns:
            content = jc.detector.redact(text) if settings.sensitive_filter else text
            writes.append(
                NewMemory(
                    owner_id=p.owner_id,
                    user_id=p.user_id,
                    type="episodic",
                    category="turn",
                    key="turn:" + prefixes[index],
                    content=content,
                    metadata={**origin, "turn_index": index},
                    source="capture",
                )
            )
            captured += 1
    # a newer statement replaces the one it contradicts ("I hate Java" after "I love Java")
    written_keys = {w.key for w in writes}
    superseded = sorted(
        {
            old
            for w in writes
            if w.source == "extraction" and w.key
            for old in contradicted_keys(w.key)
            if old not in written_keys
        }
    )
    if superseded:
        gone = await store.writes.delete_keys(p.owner_id, p.user_id, superseded)
        if gone:
            jc.count("superseded", len(gone))
            await enqueue_vector_delete(jc.queue, gone)
    # a forget made at or after this request wins over it (shared.forget_guard)
    writes, forgotten = await drop_forgotten(store, p.owner_id, p.user_id, p.created_at, writes)
    if forgotten:
        facts_written = sum(1 for w in writes if w.source == "extraction")
        captured = sum(1 for w in writes if w.source == "capture")
    written = await store.writes.upsert_many(writes, now=p.created_at)
    purged = await purge_forgotten(
        store, p.owner_id, p.user_id, p.created_at, [m for m, _ in written], time.time()
    )
    if purged:
        await enqueue_vector_delete(jc.queue, purged)
    jc.count("forget_blocked", forgotten + len(purged))
    ids = [memory.id for memory, _ in written if memory.needs_reindex and memory.id not in purged]

    # 7. cursor last, then events
    if total:
        await store.cursors.mark_learned(p.owner_id, p.user_id, prefixes[-1], total, time.time())
    if facts_written:
        await store.events.record("extraction", p.owner_id, user_id=p.user_id, count=facts_written)
    if captured:
        await store.events.record("capture", p.owner_id, user_id=p.user_id, count=captured)
    jc.count("facts", facts_written)
    jc.count("captured", captured)
    jc.count("sensitive_skipped", skipped)
    jc.count("deduplicated", deduped)
    jc.count("ungrounded_skipped", ungrounded)
    return LearnResult(
        turns=total - max(learned, first),
        facts=facts_written,
        captured=captured,
        sensitive_skipped=skipped,
        deduplicated=deduped,
        ungrounded_skipped=ungrounded,
        extractor=extractor,
        llm_error=llm_error,
        memory_ids=ids,
    )
