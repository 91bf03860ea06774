"""The request path's memory step: recall under a time budget, redact, format the block.

Pure orchestration over :mod:`shared.retrieval` and :mod:`shared.injection`; never raises for a
memory failure: the request then goes upstream unchanged with a ``degraded`` reason
(docs/ARCHITECTURE.md). Placing the block is each client format's job (``shared/formats``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ParamSpec

import msgspec

from shared.engine import Engine
from shared.errors import MnemogateError
from shared.forget import without_forgotten
from shared.memory_block import block_of_lines
from shared.memory_render import preparer_for, render_line
from shared.metrics import note_recall
from shared.models import Memory, Scope
from shared.query_bound import bound_query
from shared.ranking import estimate_tokens
from shared.recall_assist import RecallAssist, search_query
from shared.recall_index import KeywordIndex
from shared.recall_index.prepared import Prepared
from shared.retrieval import RecallResult, recall
from shared.sensitive import SensitiveDetector
from shared.settings import Settings
from shared.settings_checks import MAX_FRESHNESS_MS
from shared.store import Store

log = logging.getLogger("mnemogate.recall")
_P = ParamSpec("_P")


#: Block lines rendered on the fly, kept per process (an LRU keyed by the memory's text, date and
#: category, so an edited memory is a new entry): about 2 x the text size each, a few MB at most.
#: Only for memories the keyword cache has not prepared (:mod:`shared.recall_index.prepared`).
LINE_CACHE_SIZE = 16_384

#: :func:`shared.memory_render.render_line`, memoised.
_line = functools.lru_cache(maxsize=LINE_CACHE_SIZE)(render_line)


class RecalledBlock(msgspec.Struct, kw_only=True):
    """What recall produced for one query.

    The formatted block (``""`` when nothing is to be injected), the rowids it holds, the tier
    that answered and why a tier degraded (or None).
    """

    block: str
    memory_ids: list[int]
    tier: str
    degraded: str | None = None
    #: Estimated tokens of the block (:func:`shared.ranking.estimate_tokens`), 0 when empty.
    tokens: int = 0


#: How old the cache's last completed change-feed read may be when waiting for a newer one
#: exceeds the recall budget: the bound of ``recall_freshness_ms`` (another process's write or
#: delete is seen within a second).
STALE_OK_S = MAX_FRESHNESS_MS / 1000


VECTOR_BUDGET_SHARE = 0.9
"""Share of the recall budget the vector leg may take; past it recall answers from the keyword
leg (``vector_timeout``) rather than losing the whole recall when the budget runs out. Under
overload a local model's queue of query embeddings is what grows: with MiniLM at 50 requests in
flight on one core, 98 % of requests used to lose their memory (``bench/gateway.py``). What
follows the legs (fusion, the cap, the block's prepared lines) has no I/O and takes about a
millisecond, so the last 10 % (25 ms of the default budget) is ample."""


async def _feed_waited(keywords: KeywordIndex, budget_s: float) -> bool:
    """Wait (at most ``budget_s``) for the keyword cache to be fresh; False = answer without it.

    Waiting for the change feed (one indexed read, but its answer queues behind every request in
    flight on a busy loop) gets its own window: the recall budget measures recall work, not the
    event loop's queue (docs/ARCHITECTURE.md, "Recall engine"). When the window runs out, the
    cache still answers if it holds every commit of this process and its last feed read started
    less than :data:`STALE_OK_S` ago (:meth:`KeywordIndex.fresh_within`); else False.
    """
    if keywords.fresh_now():  # the common case: no feed read, so no timer either
        return True
    try:
        async with asyncio.timeout(budget_s):
            await keywords.fresh()
    except TimeoutError:
        return keywords.fresh_within(STALE_OK_S)
    return True


async def _bounded_recall(
    store: Store,
    scope: Scope,
    conversation: Callable[[], Sequence[Any]],
    query: str,
    settings: Settings,
    now: float,
    engine: Engine | None,
    assist: RecallAssist | None,
    prepared_fp: str | None = None,
) -> RecallResult | RecalledBlock:
    """Recall under the time budget: the result, or an empty block saying why (never raises).

    ``prepared_fp``: the caller's preparer fingerprint (the keyword leg's prepared features are
    looked up under it, :func:`shared.retrieval.recall`).
    """
    try:
        budget_s = settings.recall_timeout_ms / 1000
        keywords = engine.keywords if engine is not None else None
        if keywords is not None and not await _feed_waited(keywords, budget_s):
            return RecalledBlock(block="", memory_ids=[], tier="none", degraded="recall_timeout")
        # asyncio.timeout runs recall inline in this task: a warm in-memory recall with nothing
        # to await finishes without yielding to the loop (asyncio.wait_for would add a task and
        # two loop hops per request, each a full round of the requests in flight).
        async with asyncio.timeout(budget_s):
            # the (optionally rewritten) query; echoes compare with the original. The
            # conversation is read only when a helper is on (the query rewrite's history).
            messages = conversation() if assist is not None else ()
            search, rewrite_degraded = await search_query(assist, settings, messages, query)
            vector_deadline = asyncio.get_running_loop().time() + budget_s * VECTOR_BUDGET_SHARE
            result = await recall(
                store.memories,
                scope,
                search,
                settings,
                now,
                engine,
                assist=assist,
                echo_of=query,
                vector_deadline=vector_deadline,
                prepared_fp=prepared_fp,
            )
    except TimeoutError:
        return RecalledBlock(block="", memory_ids=[], tier="none", degraded="recall_timeout")
    except MnemogateError as exc:
        log.warning("recall failed: %s", exc)
        return RecalledBlock(
            block="", memory_ids=[], tier="none", degraded=exc.code or "recall_error"
        )
    except Exception as exc:  # memory must never fail a request (docs/ARCHITECTURE.md)
        log.exception("recall failed unexpectedly: %s", type(exc).__name__)
        return RecalledBlock(block="", memory_ids=[], tier="none", degraded="recall_error")
    if rewrite_degraded is None or result.degraded is not None:
        return result
    return msgspec.structs.replace(result, degraded=rewrite_degraded)


def _timed(
    recall_fn: Callable[_P, Awaitable[RecalledBlock]],
) -> Callable[_P, Awaitable[RecalledBlock]]:
    """``recall_fn``, timed and recorded in the metrics.

    :func:`shared.metrics.note_recall` gets the duration by tier, the memories and tokens in the
    block and the degradation reason (the one metrics hook of every client format's recall).
    """

    @functools.wraps(recall_fn)
    async def timed(*args: _P.args, **kwargs: _P.kwargs) -> RecalledBlock:
        started = time.perf_counter()
        recalled = await recall_fn(*args, **kwargs)
        note_recall(
            time.perf_counter() - started,
            recalled.tier,
            len(recalled.memory_ids),
            recalled.tokens,
            recalled.degraded,
        )
        return recalled

    return timed


def _block_prepared(
    keywords: KeywordIndex | None,
    scope: Scope,
    memories: Sequence[Memory],
    result: RecallResult,
    fingerprint: str,
) -> Mapping[int, Prepared]:
    """Prepared features (block lines) of ``memories`` under ``fingerprint``, by rowid.

    Those the keyword leg already looked up under it (``result.prepared``), the others (vector
    hits, a leg without the cache) looked up now.
    """
    if keywords is None:
        return {}
    ready = result.prepared if result.prepared_fp == fingerprint else {}
    missing = [m for m in memories if m.id not in ready]
    if not missing:
        return ready
    return {**ready, **keywords.prepared(scope, missing, fingerprint)}


@_timed
async def recall_block(
    store: Store,
    detector: SensitiveDetector,
    settings: Settings,
    scope: Scope,
    query: str,
    now: float,
    engine: Engine | None = None,
    forget: Sequence[str] | None = None,
    *,
    assist: RecallAssist | None = None,
    conversation: Callable[[], Sequence[Any]] = tuple,
) -> RecalledBlock:
    """Recall memories for ``query`` in ``scope`` and format them as the injected block.

    Format-neutral: every client format calls this with its newest user input and places the
    block itself (``shared/formats``). Memory content is redacted by ``detector`` before it
    goes into the block (secrets that reached the store some other way are never injected
    verbatim). Timeout = ``settings.recall_timeout_ms``. Never raises: a failure or timeout gives
    an empty block with ``degraded`` set. ``forget``: the target stems of a forget request in
    this message; recalled memories they name are left out
    (:func:`shared.forget.without_forgotten`). ``assist``: the optional query rewrite and
    rerank (:mod:`shared.recall_assist`), bounded by the same timeout; ``conversation``: the
    request's user and assistant messages as chat-like ``{"role", "content"}`` dicts, oldest
    first (the rewrite's history; read only when a helper is on). Timed and recorded in the
    metrics (:func:`shared.metrics.note_recall`).
    """
    # bounded before any per-token work: one huge message must not stall the event loop
    query = bound_query(query, settings.recall_query_max_bytes, settings.recall_query_max_terms)
    if not query.strip():
        return RecalledBlock(block="", memory_ids=[], tier="none")
    preparer = preparer_for(settings.sensitive_filter, detector)
    keywords = engine.keywords if engine is not None else None
    if keywords is not None:
        keywords.use_preparer(preparer)  # lines prepared under another configuration: dropped
    outcome = await _bounded_recall(
        store, scope, conversation, query, settings, now, engine, assist, preparer.fingerprint
    )
    if isinstance(outcome, RecalledBlock):
        return outcome
    result = outcome
    # a forget request's target, and the turns it was learned from, are left out
    memories = without_forgotten(forget, result.memories)
    ready = _block_prepared(keywords, scope, memories, result, preparer.fingerprint)
    block = block_of_lines(
        [
            p.line
            if (p := ready.get(m.id)) is not None
            else _line(preparer.detector, m.content, m.created_at, m.category)
            for m in memories
        ]
    )
    return RecalledBlock(
        block=block,
        memory_ids=[m.id for m in memories] if block else [],
        tier=result.tier if block or not result.memories else "none",
        degraded=result.degraded,
        tokens=estimate_tokens(block),
    )
