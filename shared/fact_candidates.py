"""The extraction step of learning: candidate facts of the new turns, each tied to its turn.

``extraction=regex`` (default): :func:`~shared.extraction.extract_facts` on each new turn, read as
written (:func:`~shared.new_turns.turn_as_written`: a name cut by a control character is no name).
``extraction=llm``: once the conversation has ``llm_extractor_min_turns`` user turns, one call to
the configured provider (:func:`~shared.extraction.extract_with_llm`) over every turn not yet seen
by the LLM (the turns before the threshold included), with sensitive spans redacted before they
leave the process and the assistant reply marked as context only. A failed LLM extraction
(transport error, HTTP status, no parsable JSON) is never silent: it is counted
(``llm_extraction_failures``), recorded as an ``extraction_failed`` event, and the regex extractor
runs on those turns instead. LLM facts must be *grounded*: share at least one search term (other
than "user") with the user's own text, so nothing only the assistant said becomes a user fact.

Every candidate keeps the index of the user turn it came from (for an LLM fact: the turn sharing
the most search terms with it, the newest on a tie), stored as the fact's ``turn_key`` metadata.
"""

from __future__ import annotations

import msgspec

from shared.extraction import ExtractedFact, extract_facts, extract_with_llm
from shared.fts_query import query_terms
from shared.jobs.context import JobContext
from shared.jobs.payloads import LearnPayload
from shared.new_turns import learnable_turns, turn_as_written

#: Terms that never ground an LLM fact in the user's text (every fact mentions the user).
_UNGROUNDING_TERMS = frozenset({"user", "users"})
#: Characters of assistant reply given to the LLM extractor as context.
MAX_CONTEXT_CHARS = 2000
#: Search terms of a text compared when grounding or attributing a fact.
_MAX_TERMS = 100_000


class SourcedFact(msgspec.Struct, frozen=True):
    """An extracted fact and the index (in the request's user turns) of the turn it came from."""

    fact: ExtractedFact
    turn_index: int


class Extraction(msgspec.Struct, kw_only=True):
    """Result of the extraction step.

    Attributes:
        facts: candidates, not yet sanitised, deduplicated or checked for sensitive content.
        extractor: ``regex``, ``llm``, ``regex-fallback`` (LLM failed) or ``none``.
        llm_error: why the LLM extraction failed, else ``None``.
        ungrounded: LLM facts dropped for sharing no term with the user's text.
    """

    facts: list[SourcedFact] = msgspec.field(default_factory=list)
    extractor: str = "none"
    llm_error: str | None = None
    ungrounded: int = 0


def is_grounded(fact_content: str, user_text: str) -> bool:
    """True when ``fact_content`` shares a search term (other than "user") with ``user_text``.

    Terms are :func:`shared.fts_query.query_terms` (stop words dropped, CJK bigrams), so this
    works for any script. A fact with no terms of its own counts as grounded.
    """
    terms = set(query_terms(fact_content, max_terms=64)) - _UNGROUNDING_TERMS
    if not terms:
        return True
    return not terms.isdisjoint(query_terms(user_text, max_terms=_MAX_TERMS))


def source_turn(fact_content: str, turns: list[tuple[int, str]]) -> int:
    """Index of the turn that shares the most search terms with ``fact_content``.

    ``turns`` holds ``(index, text)`` pairs, oldest first, non-empty; the newest turn wins a tie.
    Pure.
    """
    terms = set(query_terms(fact_content, max_terms=64))
    best_index, best = turns[-1][0], -1
    for index, text in turns:
        shared = len(terms.intersection(query_terms(text, max_terms=_MAX_TERMS)))
        if shared >= best:
            best_index, best = index, shared
    return best_index


def regex_facts(turns: list[tuple[int, str]], user_turns: list[str]) -> list[SourcedFact]:
    """:func:`~shared.extraction.extract_facts` of each ``(index, cleaned text)`` turn.

    Each is read from ``user_turns[index]`` as written (:func:`~shared.new_turns.turn_as_written`):
    the extractor reads control characters as the spaces of the cleaned text, but refuses a name
    that holds one instead of reading a part of it. Pure.
    """
    return [
        SourcedFact(fact, index)
        for index, _text in turns
        for fact in extract_facts(turn_as_written(user_turns[index]))
    ]


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


async def _llm_extraction(
    jc: JobContext, p: LearnPayload, turns: list[tuple[int, str]]
) -> Extraction:
    """The LLM extractor over ``turns``, falling back to the regex extractor on failure."""
    facts, error = await _llm_facts(jc, [text for _i, text in turns], p.assistant_text)
    if error is not None:
        jc.count("llm_extraction_failures")
        await jc.store.events.record(
            "extraction_failed",
            p.owner_id,
            user_id=p.user_id,
            detail={"extractor": "llm", "error": error, "request_id": p.request_id},
        )
        return Extraction(
            facts=regex_facts(turns, p.user_turns), extractor="regex-fallback", llm_error=error
        )
    user_text = "\n".join(text for _i, text in turns)
    out = Extraction(extractor="llm")
    for fact in facts:
        if is_grounded(fact.content, user_text):
            out.facts.append(SourcedFact(fact, source_turn(fact.content, turns)))
        else:
            out.ungrounded += 1
    return out


async def extract_candidates(
    jc: JobContext, p: LearnPayload, new_turns: list[tuple[int, str]], learned: int
) -> Extraction:
    """Candidate facts of this exchange under the ``extraction`` setting (module docstring).

    ``new_turns`` are the turns to learn (:func:`~shared.new_turns.learnable_turns`), ``learned``
    the number of user turns the cursor had already learned.

    Raises:
        StoreError: recording the ``extraction_failed`` event failed.
    """
    settings = jc.settings
    if settings.extraction == "regex":
        return Extraction(facts=regex_facts(new_turns, p.user_turns), extractor="regex")
    min_turns = max(1, settings.llm_extractor_min_turns)
    if settings.extraction != "llm" or len(p.user_turns) < min_turns:
        return Extraction()
    # Turns before the threshold were never shown to the LLM: include them now.
    start = learned if learned >= settings.llm_extractor_min_turns else 0
    turns = learnable_turns(p.user_turns, start, max(1, settings.learn_max_turns))
    if not turns:
        return Extraction()
    return await _llm_extraction(jc, p, turns)
