"""Summarization: condense old episodic memories into ``summary`` memories, one group at a time.

Run by ``mnemogate summarize --older-than-days N [--owner ID] [--dry-run]`` and the ``summarize``
job. Groups are one owner + one end user + one session scope (a session-scoped memory is visible
only in its session, so it is never merged into an owner-wide summary); a summary NEVER mixes
owners (a summarize call with no owner would merge every tenant's memories into one).
Without ``--owner`` every owner is processed, each separately.

Per group, live episodic memories created before ``now - N days`` (not expired, not past their
typed-decay deadline: those are invisible and left to the sweep) are taken oldest first in
chunks of :data:`SOURCES_PER_SUMMARY`; each chunk of at least two becomes one memory of type
``semantic``, category ``summary`` (key ``summary:<hash of source ids>``, so a re-run after a
crash upserts the same row). The originals are deleted (``eviction`` events, reason
``summarized``) only after the summary is committed. A chunk whose summary would not be smaller
(estimated tokens, :func:`shared.ranking.estimate_tokens`) is left alone.

Extractive method (no LLM, language-neutral), SumBasic (Nenkova & Vanderwende 2005, "The Impact
of Frequency on Summarization", MSR-TR-2005-101):

1. split each memory into sentences at ``. ! ?`` followed by whitespace, at ``。！？`` and at
   line breaks ("Next.js" stays whole); drop exact duplicates (case/space/punctuation-folded)
   and questions;
2. terms = case-folded letter/digit runs; CJK runs become character bigrams (the FTS index rule);
3. p(term) = term count / all term counts over the chunk;
4. repeatedly pick the sentence with the highest mean p over its distinct terms (ties: earlier
   sentence), skip near-duplicates of picked ones (term-set Jaccard >= 0.7), then square p of
   its terms so later picks cover other content;
5. keep ``ceil(sentences / 3)`` sentences, at most :data:`MAX_SUMMARY_SENTENCES`, and emit them
   in chronological order, each line prefixed with its memory's UTC date (``YYYY-MM-DD``). No
   words are added, so the output stays in the memories' own language.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime

import msgspec

from shared.errors import ConfigurationError
from shared.fts_query import cjk_bigrams
from shared.lifecycle.decay import DAY_S, LifecycleRow, eviction_reason
from shared.lifecycle.sweep import OnDeleted
from shared.models import NewMemory
from shared.question_form import is_question_sentence
from shared.ranking import estimate_tokens
from shared.retrieval import retention_of
from shared.settings import Settings
from shared.store import Retention, Store
from shared.store.memories.lifecycle import LifecycleStore

SOURCES_PER_SUMMARY = 50
MAX_SUMMARY_SENTENCES = 8
COMPRESSION_DIVISOR = 3
NEAR_DUPLICATE_JACCARD = 0.7
#: First code point of the CJK radicals block (U+2E80): runs from here on are scripts written
#: without spaces, indexed as character bigrams.
CJK_START = 0x2E80
#: Fewest memories worth condensing into one summary.
MIN_GROUP = 2
METHOD = "extractive-sumbasic"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\s*\n+\s*")
_TERM = re.compile(r"[^\W_]+")
_FOLD = re.compile(r"[\W_]+")


class GroupSummary(msgspec.Struct, kw_only=True):
    """One summary (made, or in a dry run proposed) for one owner/user/session chunk.

    ``source_ids`` are the public ids of the condensed memories; tokens are estimates
    (:func:`shared.ranking.estimate_tokens`); ``summary_id`` is None in a dry run.
    """

    owner_id: str
    user_id: str
    session_id: str | None
    source_ids: list[str]
    content: str
    tokens_before: int
    tokens_after: int
    summary_id: str | None = None

    @property
    def tokens_saved(self) -> int:
        """``tokens_before - tokens_after`` (positive: only saving chunks are summarized)."""
        return self.tokens_before - self.tokens_after


class SummarizeReport(msgspec.Struct, kw_only=True):
    """Totals of one summarize run.

    Groups (owner/user/session) visited, memories condensed, summaries written (or proposed), tokens
    before/after/saved (estimates).
    """

    dry_run: bool
    groups: int = 0
    summarized: int = 0
    summaries: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    tokens_saved: int = 0
    duration_s: float = 0.0


# --- pure extractive summarizer ------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (stripped, non-empty).

    Boundaries: ``. ! ?`` + whitespace, ``。！？``, line breaks. Language-neutral; never splits
    inside ``Next.js`` or ``3.14``.
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def terms(sentence: str) -> list[str]:
    """Case-folded terms of ``sentence``: letter/digit runs, CJK runs as character bigrams."""
    out: list[str] = []
    for run in _TERM.findall(sentence.casefold()):
        if any(ord(ch) >= CJK_START for ch in run):
            out.extend(cjk_bigrams(run))
        else:
            out.append(run)
    return out


def _fold(sentence: str) -> str:
    return _FOLD.sub(" ", sentence.casefold()).strip()


def extract_summary(sentences: Sequence[str], max_sentences: int) -> list[int]:
    """Indexes (ascending) of at most ``max_sentences`` sentences chosen by SumBasic.

    ``sentences`` in chronological order; duplicates (folded text) and near-duplicates (term-set
    Jaccard >= 0.7 with a picked sentence) are never picked twice. Sentences without terms
    (pure punctuation/emoji) and questions (:func:`shared.question_form.is_question_sentence`:
    they state nothing, and SumBasic favoured them, since a question repeats the words of its
    answer) are ignored. Pure and deterministic.
    """
    seen: set[str] = set()
    candidates: list[tuple[int, set[str]]] = []
    counts: Counter[str] = Counter()
    for i, s in enumerate(sentences):
        folded = _fold(s)
        ts = terms(s)
        if not folded or not ts or folded in seen or is_question_sentence(s):
            continue
        seen.add(folded)
        counts.update(ts)
        candidates.append((i, set(ts)))
    total = sum(counts.values())
    if total == 0:
        return []
    p = {t: c / total for t, c in counts.items()}
    picked: list[tuple[int, set[str]]] = []
    while len(picked) < max_sentences and candidates:
        best = max(candidates, key=lambda c: (sum(p[t] for t in c[1]) / len(c[1]), -c[0]))
        candidates.remove(best)
        if any(len(best[1] & q) / len(best[1] | q) >= NEAR_DUPLICATE_JACCARD for _, q in picked):
            continue
        picked.append(best)
        for t in best[1]:
            p[t] = p[t] ** 2
    return sorted(i for i, _ in picked)


def summary_sentence_budget(n_sentences: int) -> int:
    """Sentences to keep: ``ceil(n / 3)``, within ``1..MAX_SUMMARY_SENTENCES`` (0 if n is 0)."""
    if n_sentences <= 0:
        return 0
    return max(1, min(MAX_SUMMARY_SENTENCES, math.ceil(n_sentences / COMPRESSION_DIVISOR)))


def build_summary(rows: Sequence[LifecycleRow]) -> str:
    """Summary text of ``rows`` (oldest first).

    Chosen sentences, one per line, each prefixed with its memory's UTC date ``YYYY-MM-DD``. Empty
    if no row has a sentence with terms.
    """
    sentences: list[tuple[str, float]] = []
    for row in rows:
        sentences.extend((s, row.created_at) for s in split_sentences(row.content))
    chosen = extract_summary([s for s, _ in sentences], summary_sentence_budget(len(sentences)))
    lines = []
    for i in chosen:
        text, ts = sentences[i]
        day = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")
        lines.append(f"{day} {text}")
    return "\n".join(lines)


def summary_key(source_ids: Sequence[str]) -> str:
    """Upsert key of the summary of ``source_ids``: ``summary:`` + 32 hex of sha256."""
    digest = hashlib.sha256("\n".join(sorted(source_ids)).encode()).hexdigest()
    return f"summary:{digest[:32]}"


# --- the run -------------------------------------------------------------------------------------

SummaryListener = Callable[[GroupSummary], None]


async def summarize(
    store: Store,
    settings: Settings,
    now: float,
    *,
    older_than_days: float,
    owner_id: str | None = None,
    user_id: str | None = None,
    dry_run: bool = False,
    on_deleted: OnDeleted | None = None,
    listener: SummaryListener | None = None,
) -> SummarizeReport:
    """Summarize episodic memories older than ``older_than_days`` (per owner/user/session).

    ``owner_id`` given → only that owner; ``user_id`` given → only that end user (``''`` = the
    owner-wide memories). ``listener`` receives each :class:`GroupSummary`.
    ``on_deleted`` is awaited with the rowids of each deleted chunk (Qdrant hook).

    Raises:
        ConfigurationError: ``older_than_days`` is negative.
        StoreError: the database failed (a chunk is either fully summarized or untouched).
    """
    if older_than_days < 0:
        raise ConfigurationError("older_than_days must be >= 0")
    retention = retention_of(settings)
    started = time.perf_counter()
    cutoff = now - older_than_days * DAY_S
    report = SummarizeReport(dry_run=dry_run)
    lc = store.lifecycle
    for group in await lc.summary_groups(cutoff, now, owner_id, user_id):
        report.groups += 1
        async for live in _live_chunks(lc, group[:3], cutoff, now, retention):
            made = await _summarize_chunk(store, live, now, dry_run, on_deleted)
            if made is None:
                continue
            report.summaries += 1
            report.summarized += len(made.source_ids)
            report.tokens_before += made.tokens_before
            report.tokens_after += made.tokens_after
            if listener is not None:
                listener(made)
    report.tokens_saved = report.tokens_before - report.tokens_after
    report.duration_s = time.perf_counter() - started
    return report


def summary_memory(made: GroupSummary, rows: Sequence[LifecycleRow]) -> NewMemory:
    """The summary memory for ``made`` condensing ``rows`` (oldest first).

    Semantic, category ``summary``, keyed by its sources, as relevant as the most relevant source;
    the metadata records the method, sources, time span and token estimates.
    """
    return NewMemory(
        owner_id=made.owner_id,
        user_id=made.user_id,
        session_id=made.session_id,
        type="semantic",
        category="summary",
        key=summary_key(made.source_ids),
        content=made.content,
        source="summarize",
        relevance=max(r.relevance for r in rows),
        metadata={
            "summary": {
                "method": METHOD,
                "source_count": len(rows),
                "source_ids": made.source_ids,
                "from": rows[0].created_at,
                "to": rows[-1].created_at,
                "tokens_before": made.tokens_before,
                "tokens_after": made.tokens_after,
            }
        },
    )


async def _live_chunks(
    lc: LifecycleStore,
    group: tuple[str, str, str | None],
    cutoff: float,
    now: float,
    retention: Retention,
) -> AsyncIterator[list[LifecycleRow]]:
    """Chunks of old episodic memories of one ``(owner, user, session)`` group, oldest first.

    At most :data:`SOURCES_PER_SUMMARY` per chunk, without the ones already past their
    typed-decay deadline (invisible to recall and waiting for the sweep: summarizing them would
    bring them back); chunks with fewer than :data:`MIN_GROUP` live rows are skipped.
    """
    owner, user, session = group
    after = (-math.inf, 0)
    while True:
        rows = await lc.summary_chunk(
            owner, user, session, cutoff=cutoff, now=now, after=after, limit=SOURCES_PER_SUMMARY
        )
        if len(rows) < MIN_GROUP:
            return
        after = (rows[-1].created_at, rows[-1].id)
        live = [r for r in rows if eviction_reason(r, retention, now) is None]
        if len(live) >= MIN_GROUP:
            yield live


async def _summarize_chunk(
    store: Store,
    rows: Sequence[LifecycleRow],
    now: float,
    dry_run: bool,
    on_deleted: OnDeleted | None,
) -> GroupSummary | None:
    """Summarize one chunk (all rows share owner, user and session); None if not worth it."""
    first = rows[0]
    assert all(
        (r.owner_id, r.user_id, r.session_id) == (first.owner_id, first.user_id, first.session_id)
        for r in rows
    ), "a summary chunk must never mix owners, users or sessions"
    content = build_summary(rows)
    before = sum(estimate_tokens(r.content) for r in rows)
    after = estimate_tokens(content)
    if not content or after >= before:
        return None
    made = GroupSummary(
        owner_id=first.owner_id,
        user_id=first.user_id,
        session_id=first.session_id,
        source_ids=[r.public_id for r in rows],
        content=content,
        tokens_before=before,
        tokens_after=after,
    )
    if dry_run:
        return made
    memory, _created = await store.writes.upsert(summary_memory(made, rows), now=now)
    made.summary_id = memory.public_id
    # Only now that the summary is committed do the originals go.
    deleted = await store.lifecycle.evict([(r, "summarized") for r in rows], now)
    await store.events.record(
        "summarization",
        first.owner_id,
        user_id=first.user_id,
        memory_id=memory.id,
        count=len(deleted),
        detail={"summary_id": memory.public_id, "tokens_saved": made.tokens_saved},
        now=now,
    )
    if on_deleted is not None and deleted:
        await on_deleted(deleted)
    return made
