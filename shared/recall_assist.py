"""The optional recall helpers wired together: query rewrite before the search, rerank after it.

Both are off by default and both fall back (original query / fused order) with a degradation
reason on any failure (:mod:`shared.query_rewrite`, :mod:`shared.rerank`). Text sent to a
helper leaves the process, so it is redacted of sensitive spans first when the sensitive filter
is on. Cost per request when enabled: one extra HTTP call each (README, "Recall quality").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from shared.injection import all_user_texts
from shared.models import Memory
from shared.query_rewrite import REWRITE_ERROR, rewrite_query, search_text
from shared.ranking import Candidate, order_candidates
from shared.rerank import rerank, reranked_order
from shared.sensitive import SensitiveDetector
from shared.settings import ProviderConfig, Settings
from shared.turn_context import assistant_replies

log = logging.getLogger("mnemogate.recall")
#: Fewest candidates worth a rerank call (one candidate has only one order).
MIN_TO_RERANK = 2


@dataclass(frozen=True)
class RecallAssist:
    """What the helpers need: an HTTP client, the configured providers, the redactor."""

    http: httpx.AsyncClient
    providers: Mapping[str, ProviderConfig]
    detector: SensitiveDetector


def assist_for(
    settings: Settings,
    http: httpx.AsyncClient,
    providers: Mapping[str, ProviderConfig],
    detector: SensitiveDetector,
) -> RecallAssist | None:
    """A :class:`RecallAssist` when a helper is enabled in ``settings``, else ``None``."""
    if not settings.rerank_url and not settings.query_rewrite_provider:
        return None
    return RecallAssist(http=http, providers=providers, detector=detector)


def _redacted(assist: RecallAssist, settings: Settings, text: str) -> str:
    """``text`` with sensitive spans replaced when the sensitive filter is on."""
    return assist.detector.redact(text) if settings.sensitive_filter else text


def history_of(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of the user and assistant turns before the newest user message. Pure."""
    users = all_user_texts(messages)
    replies = assistant_replies(messages)
    out: list[tuple[str, str]] = []
    for i, text in enumerate(users[:-1]):
        out.append(("user", text))
        if i < len(replies) and replies[i].strip():
            out.append(("assistant", replies[i]))
    return out


async def search_query(
    assist: RecallAssist | None, settings: Settings, messages: Sequence[Any], query: str
) -> tuple[str, str | None]:
    """The text to search with and a degradation reason (``None`` when fine or off).

    Off (``query_rewrite_provider`` empty or no ``assist``) → ``query`` unchanged. On →
    :func:`shared.query_rewrite.search_text` of ``query`` and the model's rewrite, bounded by
    ``query_rewrite_timeout_ms``; on failure ``query`` and the reason.
    """
    name = settings.query_rewrite_provider
    if assist is None or not name:
        return query, None
    provider = assist.providers.get(name)
    if provider is None:
        return query, REWRITE_ERROR
    history = [(role, _redacted(assist, settings, text)) for role, text in history_of(messages)]
    result = await rewrite_query(
        assist.http,
        base_url=provider.base_url,
        api_key=provider.api_key,
        model=settings.query_rewrite_model,
        history=history,
        newest=_redacted(assist, settings, query),
        timeout_s=settings.query_rewrite_timeout_ms / 1000,
    )
    if result.error is not None:
        log.warning("query rewrite failed (%s): %s", result.error, result.detail)
        return query, result.error
    return search_text(query, result.query), None


async def reranked_ids(
    assist: RecallAssist | None,
    settings: Settings,
    query: str,
    ids: Sequence[int],
    content_of: Mapping[int, str],
) -> tuple[list[int], str | None]:
    """``ids`` (fused order, best first) with the top ``rerank_candidates`` reranked.

    Off (``rerank_url`` empty, no ``assist``, fewer than 2 ids) → ``ids`` unchanged. On failure
    (bounded by ``rerank_timeout_ms``) the fused order and the reason.
    """
    if assist is None or not settings.rerank_url or len(ids) < MIN_TO_RERANK:
        return list(ids), None
    top = list(ids[: settings.rerank_candidates])
    result = await rerank(
        assist.http,
        url=settings.rerank_url,
        api_key=settings.rerank_api_key,
        model=settings.rerank_model,
        query=_redacted(assist, settings, query),
        documents=[_redacted(assist, settings, content_of.get(i, "")) for i in top],
        timeout_s=settings.rerank_timeout_ms / 1000,
    )
    if result.error is not None:
        log.warning("rerank failed (%s): %s", result.error, result.detail)
        return list(ids), result.error
    return [*reranked_order(top, result.scores), *ids[len(top) :]], None


def injection_order(candidates: Sequence[Candidate], memories: Mapping[int, Memory]) -> list[int]:
    """The ids of ``candidates`` in recall's order: score, then relevance, then recency.

    :func:`shared.ranking.order_candidates` over each candidate's score and its memory's
    ``relevance`` and ``updated_at``; ``memories`` must hold every candidate (else ``KeyError``).
    """
    return order_candidates(
        [
            (
                c.memory_id,
                c.score,
                memories[c.memory_id].relevance,
                memories[c.memory_id].updated_at,
            )
            for c in candidates
        ]
    )


async def reranked_candidates(
    assist: RecallAssist | None,
    settings: Settings,
    query: str,
    candidates: Sequence[Candidate],
    memories: Mapping[int, Memory],
) -> tuple[list[Candidate], str | None]:
    """``candidates`` (floored, fused) in reranked order, and a degradation reason or ``None``.

    The candidates are ordered as recall would inject them (:func:`order_candidates`), the top
    ``rerank_candidates`` are reranked (:func:`reranked_ids`), and each gets the score
    ``len - position`` so that the order survives the budget walk. Off or failed → unchanged.
    """
    if assist is None or not settings.rerank_url or len(candidates) < MIN_TO_RERANK:
        return list(candidates), None
    order = injection_order(candidates, memories)
    content = {i: memories[i].content for i in order}
    ids, degraded = await reranked_ids(assist, settings, query, order, content)
    if degraded is not None:
        return list(candidates), degraded
    return [Candidate(memory_id=i, score=float(len(ids) - n)) for n, i in enumerate(ids)], None
