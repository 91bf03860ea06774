"""The learning pipeline: from the user's new turns to stored memories (docs/ARCHITECTURE.md).

One ``learn`` job handles one exchange (:class:`~shared.jobs.payloads.LearnPayload`), in steps:

1. **New turns** (:mod:`shared.new_turns`). User turns not yet learned in this conversation are
   found with the content-addressed cursor (:mod:`shared.store.cursors`), so replays and long
   chats never re-learn old turns. Only the newest ``learn_max_turns`` of them are learned (one
   request pasting thousands of user messages writes at most that many memories); the turns
   before that window are passed over for good. Control characters other than newline and tab
   become spaces; within the window a text repeated verbatim is learned once (its newest
   occurrence), a turn with no letter or digit is skipped, and so is a turn that asks not to be
   remembered.
2. **Context** (:mod:`shared.turn_context`). The request's user turns, the assistant replies
   between them and the upstream's answer form one conversation; each new turn's search context
   is its two previous and two next turns there, sensitive spans redacted. It is stored in
   ``memories.context`` (never injected).
3. **Extract** (:mod:`shared.fact_candidates`): regex or LLM facts, each tied to its turn.
4. **Write** (:mod:`shared.memory_writes`): sanitise → sensitive check → dedupe → upsert facts,
   capture each new turn as an episodic ``turn`` memory unless it only asks a question or makes a
   request (:func:`shared.question_form.is_question_or_request`), delete contradicted facts;
   facts and captured turns are written in one transaction (all or nothing). A forget made at or
   after this request wins over it (:mod:`shared.forget_guard`): what it names is not written, or is
   deleted again when the forget committed during the write.
5. **Previous turns' context.** The two turns before this request's first new one learned their
   context without the turns that followed them (those arrive now): their context is recomputed
   and updated where the memory exists (never re-created).
6. The cursor is written last; then ``extraction`` / ``capture`` events and counters.

Idempotent: facts upsert on (owner, user, key), captured turns on the hash of the conversation
prefix ending at that turn, the cursor moves last, so a job re-run after a crash stores nothing
twice (events of a job killed between its first write and its cursor may be counted twice).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import msgspec

from shared.fact_candidates import Extraction, extract_candidates, is_grounded
from shared.forget_guard import drop_forgotten, purge_forgotten
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.jobs.vector_sync import enqueue_vector_delete
from shared.memory_writes import capture_writes, fact_writes, sanitise_fact, supersede
from shared.models import NewMemory
from shared.new_turns import clean_turn, is_private_turn, learnable_turns, prefix_ids
from shared.turn_context import AFTER, REACH, chat_sequence, neighbour_context

__all__ = ["LearnResult", "is_grounded", "learn", "learnable_turns", "prefix_ids", "sanitise_fact"]


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


class _Turns(msgspec.Struct, frozen=True, kw_only=True):
    """Step 1's outcome: prefix hashes of every user turn, cursor position, turns to learn."""

    prefixes: list[str]
    learned: int
    first: int
    new: list[tuple[int, str]]

    @property
    def keys(self) -> list[str]:
        """Capture key of each user turn: ``turn:`` + its prefix hash."""
        return ["turn:" + h for h in self.prefixes]


async def _new_turns(jc: JobContext, p: LearnPayload) -> _Turns | None:
    """Step 1: the turns to learn, or ``None`` when every turn was learned already (a replay)."""
    window = max(1, jc.settings.learn_max_turns)
    prefixes = p.prefixes or prefix_ids(p.user_turns)
    total = len(p.user_turns)
    # Only turns of the newest `window` can be learned, so only a cursor at or after their start
    # matters: the lookup covers the prefixes ending there or later (bounded work for any
    # request). ``learned`` is exact when it is >= total - window, else 0 (the same outcome).
    first = max(0, total - window)
    learned = await jc.store.cursors.learned_prefix(
        p.owner_id, p.user_id, prefixes[max(0, first - 1) :]
    )
    if learned >= total:
        return None
    return _Turns(
        prefixes=prefixes,
        learned=learned,
        first=first,
        new=learnable_turns(p.user_turns, learned, window),
    )


def _redacted(jc: JobContext, text: str) -> str:
    """``text`` with sensitive spans replaced when the sensitive filter is on."""
    return jc.detector.redact(text) if jc.settings.sensitive_filter else text


def _contexts(jc: JobContext, p: LearnPayload, indices: Iterable[int]) -> dict[int, str]:
    """Step 2: redacted neighbour context of each user turn index in ``indices``.

    A turn asking not to be remembered (or to forget) is left out of every context, and so is
    the assistant's answer to it (it may repeat what was said).
    """
    private = {i for i, t in enumerate(p.user_turns) if is_private_turn(clean_turn(t))}
    users = ["" if i in private else t for i, t in enumerate(p.user_turns)]
    replies = ["" if i in private else r for i, r in enumerate(p.replies)]
    final = "" if len(p.user_turns) - 1 in private else p.assistant_text
    texts, positions = chat_sequence(users, replies, final)
    return {i: _redacted(jc, neighbour_context(texts, positions[i])) for i in indices}


def _fact_contexts(jc: JobContext, p: LearnPayload, ex: Extraction) -> dict[int, str]:
    """Search context of facts by source turn: the turn's own text, then its neighbours."""
    indices = sorted({s.turn_index for s in ex.facts})
    neighbours = _contexts(jc, p, indices)
    return {
        i: "\n".join(filter(None, [_redacted(jc, clean_turn(p.user_turns[i])), neighbours[i]]))
        for i in indices
    }


async def _update_previous_contexts(jc: JobContext, p: LearnPayload, turns: _Turns) -> None:
    """Step 5: recompute the context of the turns just before the first new one.

    These are the :data:`~shared.turn_context.AFTER` turns whose following turns arrived in this
    request; only those that were captured are updated.
    """
    if not jc.settings.capture_turns:
        return
    # only turns whose context lies within the text the payload carries (the rest are "")
    floor = p.kept_from + REACH if p.kept_from else 0
    previous = range(max(0, turns.learned - AFTER, floor), turns.learned)
    contexts = _contexts(jc, p, previous)
    keys = turns.keys
    pairs = [(keys[i], contexts[i]) for i in previous]
    updated = await jc.store.contexts.set_contexts(p.owner_id, p.user_id, pairs, p.created_at)
    jc.count("context_updated", len(updated))


async def _write(
    jc: JobContext, p: LearnPayload, writes: list[NewMemory]
) -> tuple[list[NewMemory], list[int]]:
    """Step 4's upsert, guarded by forgets (:mod:`shared.forget_guard`).

    A forget made at or after this request wins over it: the writes it names are dropped before
    the upsert, and what it names among the rows written (a forget that committed meanwhile) is
    deleted again (and from Qdrant).

    Returns:
        The writes kept, and the rowids written whose content is new or changed (to embed).

    Raises:
        StoreError: the store failed (the job is retried).
    """
    store = jc.store
    writes, forgotten = await drop_forgotten(store, p.owner_id, p.user_id, p.created_at, writes)
    written = await store.writes.upsert_many(writes, now=p.created_at)
    purged = await purge_forgotten(
        store, p.owner_id, p.user_id, p.created_at, [m for m, _ in written], time.time()
    )
    if purged:
        await enqueue_vector_delete(jc.queue, purged)
    jc.count("forget_blocked", forgotten + len(purged))
    return writes, [m.id for m, _ in written if m.needs_reindex and m.id not in purged]


_EVENTS = (("extraction", "facts"), ("capture", "captured"))
"""The events a learn job records: (event kind, counter name)."""


async def _finish(jc: JobContext, p: LearnPayload, turns: _Turns, counts: dict[str, int]) -> None:
    """Step 6: the cursor (last write), then events and counters.

    ``counts`` maps counter names to values; ``facts`` and ``captured`` are the writes kept
    after forgets.
    """
    if turns.prefixes:  # without user turns nothing was written: no cursor, no event
        events = [(kind, counts[name]) for kind, name in _EVENTS if counts[name]]
        await jc.store.cursors.mark_learned(  # the cursor and the events in one commit
            p.owner_id, p.user_id, turns.prefixes[-1], len(turns.prefixes), time.time(), events
        )
    for name, value in counts.items():
        jc.count(name, value)


async def learn(jc: JobContext, p: LearnPayload) -> LearnResult:
    """Run the pipeline for one exchange (steps in the module docstring); returns what it did.

    Raises:
        StoreError: the store failed (the job is retried; nothing is half-learned twice because
            every write is an idempotent upsert and the cursor moves last).
    """
    turns = await _new_turns(jc, p)
    if turns is None:  # a replay or a regenerated answer: nothing new, write nothing
        return LearnResult()
    keys = turns.keys
    extraction = await extract_candidates(jc, p, turns.new, turns.learned)
    facts = await fact_writes(jc, p, extraction, keys, _fact_contexts(jc, p, extraction))
    captures: list[NewMemory] = []
    if jc.settings.capture_turns:
        contexts = _contexts(jc, p, [i for i, _text in turns.new])
        captures = capture_writes(jc, p, turns.new, keys, contexts)
    writes = facts.writes + captures
    await supersede(jc, p, writes, facts.replaces, facts.rejects)
    writes, ids = await _write(jc, p, writes)
    await _update_previous_contexts(jc, p, turns)
    n_facts = sum(1 for w in writes if w.source == "extraction")
    counts = {
        "facts": n_facts,
        "captured": len(writes) - n_facts,
        "sensitive_skipped": facts.sensitive_skipped,
        "deduplicated": facts.deduplicated,
        "ungrounded_skipped": extraction.ungrounded,
    }
    await _finish(jc, p, turns, counts)
    return LearnResult(
        turns=len(p.user_turns) - max(turns.learned, turns.first),
        facts=counts["facts"],
        captured=counts["captured"],
        sensitive_skipped=facts.sensitive_skipped,
        deduplicated=facts.deduplicated,
        ungrounded_skipped=extraction.ungrounded,
        extractor=extraction.extractor,
        llm_error=extraction.llm_error,
        memory_ids=ids,
    )
