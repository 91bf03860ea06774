"""The write steps of learning: facts and captured turns as upserts, and what they supersede.

Facts are sanitised, dropped when they hold secrets or personal data, and written onto an existing
near-identical fact's key (:func:`shared.dedupe.is_near_duplicate` over an FTS5 lookup) instead of
a second row. Each fact keeps a link to the user turn it came from (``turn_key``,
``turn_index`` metadata) and that turn's text plus its neighbours as search context. Captured
turns are episodic ``turn`` memories with sensitive spans replaced by typed placeholders
(``[email]``, ...) and their conversation context (:mod:`shared.turn_context`), except turns that
only ask a question, make a request or exchange pleasantries
(:func:`shared.question_form.states_nothing`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import msgspec

from shared.dedupe import fact_tokens, is_near_duplicate
from shared.extraction import (
    CATEGORIES,
    CATEGORY_TYPES,
    MAX_CONTENT_CHARS,
    TYPES,
    ExtractedFact,
    contradicted_keys,
)
from shared.fact_candidates import Extraction
from shared.fts_query import build_match_query
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.jobs.vector_sync import enqueue_vector_delete
from shared.models import Memory, NewMemory, Scope
from shared.question_form import says_one_thing, states_nothing
from shared.slot_terms import with_slot_terms

#: Existing facts fetched by the FTS5 near-duplicate lookup, per new fact.
DEDUPE_CANDIDATES = 8


class FactWrites(msgspec.Struct, kw_only=True):
    """Facts ready to upsert and what was dropped on the way."""

    writes: list[NewMemory] = msgspec.field(default_factory=list)
    sensitive_skipped: int = 0
    deduplicated: int = 0
    #: key prefixes whose other facts the written ones replace (:attr:`ExtractedFact.replaces`)
    replaces: list[str] = msgspec.field(default_factory=list)
    #: keys of facts the written ones reject (:attr:`ExtractedFact.rejects`)
    rejects: list[str] = msgspec.field(default_factory=list)


def _fact_char(ch: str) -> str:
    """What a stored fact keeps of ``ch`` (see :func:`sanitise_fact`)."""
    category = unicodedata.category(ch)
    if category == "Cf":
        return ""
    return " " if category in ("Cc", "Zl", "Zp") else ch


def sanitise_fact(fact: ExtractedFact) -> ExtractedFact | None:
    """``fact`` with control characters removed and whitespace collapsed, or ``None``.

    Control characters and line/paragraph separators (``Cc``, ``Zl``, ``Zp``) become a space;
    format characters (``Cf``: zero-width space and joiners, bidi marks, soft hyphen, BOM) are
    deleted, as the injected block deletes them (:func:`shared.injection.sanitize_memory_text`),
    so ``"na\u200bme"`` stays one word. ``None`` when the content is empty or longer than
    :data:`MAX_CONTENT_CHARS` characters, or is a question (ends in ``?``/``？``). An unknown
    category becomes ``fact``; an unknown type the category's default
    (:data:`~shared.extraction.CATEGORY_TYPES`). Pure; never raises.
    """
    text = "".join(_fact_char(ch) for ch in fact.content)
    content = " ".join(text.split())
    if not content or len(content) > MAX_CONTENT_CHARS or content.endswith(("?", "？")):
        return None
    category = fact.category if fact.category in CATEGORIES else "fact"
    mtype = fact.type if fact.type in TYPES else CATEGORY_TYPES[category]
    if (content, category, mtype) == (fact.content, fact.category, fact.type):
        return fact
    return msgspec.structs.replace(fact, content=content, category=category, type=mtype)


#: Fewest ``:``-ended parts of a replaced key prefix: ``pet:dog:``, never a bare ``pet:``.
SLOT_PARTS = 2


def _replaces_siblings(fact: ExtractedFact) -> bool:
    """Whether ``fact.replaces`` names a slot of at least two key parts that holds its key.

    ``pet:dog:`` for ``pet:dog:max``; never a bare category (``pet:``) or a foreign prefix.
    """
    prefix = fact.replaces
    return prefix.endswith(":") and prefix.count(":") >= SLOT_PARTS and fact.key.startswith(prefix)


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


def _redacted(jc: JobContext, text: str) -> str:
    """``text`` with sensitive spans replaced when the sensitive filter is on."""
    return jc.detector.redact(text) if jc.settings.sensitive_filter else text


async def fact_writes(
    jc: JobContext,
    p: LearnPayload,
    extraction: Extraction,
    turn_keys: Sequence[str],
    contexts: dict[int, str],
) -> FactWrites:
    """Sanitise → sensitive check → dedupe every candidate of ``extraction`` into upserts.

    ``turn_keys[i]`` is the capture key of user turn ``i``; ``contexts`` maps a source turn's
    index to the search context of its facts (the turn's text and its neighbours, redacted).

    Raises:
        StoreError: the near-duplicate lookup failed.
    """
    out = FactWrites()
    # the prefix id of the whole request: a forget releases it so the turns can be learned again
    prefix = turn_keys[-1].removeprefix("turn:") if turn_keys else ""
    origin = {"session_id": p.session_id, "request_id": p.request_id, "learn_prefix": prefix}
    for sourced in extraction.facts:
        fact = sanitise_fact(sourced.fact)
        if fact is None:
            continue
        if jc.settings.sensitive_filter and jc.detector.contains_sensitive(fact.content):
            out.sensitive_skipped += 1
            continue
        key = await _near_duplicate_key(jc, p, fact)
        out.deduplicated += key is not None
        if _replaces_siblings(fact) and fact.replaces not in out.replaces:
            out.replaces.append(fact.replaces)
        slot = fact.key[: fact.key.rfind(":") + 1]
        out.rejects.extend(k for k in fact.rejects if slot and k.startswith(slot))
        index = sourced.turn_index
        out.writes.append(
            NewMemory(
                owner_id=p.owner_id,
                user_id=p.user_id,
                type=fact.type,  # type: ignore[arg-type]
                category=fact.category,  # type: ignore[arg-type]
                key=key or fact.key,
                content=fact.content,
                metadata={
                    **origin,
                    "confidence": fact.confidence,
                    "extractor": extraction.extractor,
                    "turn_key": turn_keys[index],
                    "turn_index": index,
                },
                source="extraction",
                # the slot's own words ("job" for "User works at ..."): search-only, like the rest
                context=with_slot_terms(fact.key, contexts.get(index, "")),
            )
        )
    return out


def capture_writes(
    jc: JobContext,
    p: LearnPayload,
    new_turns: list[tuple[int, str]],
    turn_keys: Sequence[str],
    contexts: dict[int, str],
) -> list[NewMemory]:
    """Each new turn as an episodic ``turn`` memory, except question-or-request turns.

    Pure apart from the detector; ``contexts`` maps a turn index to its redacted neighbour text.
    """
    origin = {"session_id": p.session_id, "request_id": p.request_id}
    return [
        NewMemory(
            owner_id=p.owner_id,
            user_id=p.user_id,
            type="episodic",
            category="turn",
            key=turn_keys[index],
            content=_redacted(jc, text),
            metadata={**origin, "turn_index": index},
            source="capture",
            context=contexts.get(index, ""),
        )
        for index, text in new_turns
        if not states_nothing(text)
    ]


async def supersede(
    jc: JobContext,
    p: LearnPayload,
    writes: list[NewMemory],
    prefixes: Sequence[str] = (),
    rejected: Sequence[str] = (),
) -> None:
    """Delete the facts a written fact contradicts ("I hate Java" replaces "I love Java").

    Also every fact of a key starting with one of ``prefixes`` but the written ones ("Actually
    my dog is called Max" replaces ``pet:dog:rex``: :attr:`ExtractedFact.replaces`), and those
    of the ``rejected`` keys ("I prefer Vim, not Emacs": :attr:`ExtractedFact.rejects`). The
    captured turn a deleted fact came from goes too when it says nothing else (one sentence, no
    other fact from it): else the model would still read "My dog is called Rex". So does the
    turn of a fact whose value a written fact of the same key replaces ("I live in Berlin" when
    "I moved to Munich" rewrites ``identity:location``).

    Raises:
        StoreError: the delete failed.
    """
    written_keys = {w.key for w in writes}
    superseded = sorted(
        {
            old
            for w in writes
            if w.source == "extraction" and w.key
            for old in contradicted_keys(w.key)
            if old not in written_keys
        }
        | {k for k in rejected if k not in written_keys}
    )
    # a fact whose value changes ("I moved to Munich" after "I live in Berlin"): its old turn
    replaced = {w.key: w.content for w in writes if w.source == "extraction" and w.key}
    gone = await jc.store.writes.delete_keys(
        p.owner_id,
        p.user_id,
        superseded,
        prefixes,
        keep=sorted(k for k in written_keys if k),
        drop_turn=says_one_thing,  # a one-sentence turn says only what was corrected
        replaced=replaced,
    )
    if gone:
        jc.count("superseded", len(gone))
        await enqueue_vector_delete(jc.queue, gone)
