"""Optional reranking of the fused top candidates by a remote rerank endpoint.

Off by default (``rerank_url`` empty). When on, recall sends the query and the texts of its best
``rerank_candidates`` fused candidates to one endpoint speaking the common rerank API (Cohere
``/v2/rerank``, Jina ``/v1/rerank``, Voyage ``/v1/rerank``; request ``{model, query, documents,
top_n}``, answer ``{"results": [{"index", "relevance_score"}]}``; Voyage's ``data`` list and a bare
list of ``{"index", "score"}`` as Hugging Face TEI answers are read too) and orders those
candidates by the returned scores. Any failure (timeout, transport error, HTTP status, malformed
answer) keeps the fused order and reports a reason that the gateway puts in
``x-mnemogate-memory-degraded``. No bundled cross-encoder exists offline, hence remote only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import msgspec

#: Degradation reasons (``x-mnemogate-memory-degraded``).
RERANK_TIMEOUT = "rerank_timeout"
RERANK_ERROR = "rerank_error"


class RerankResult(msgspec.Struct, frozen=True):
    """Relevance score per document index (higher = better), or why there is none.

    ``scores`` maps a position in the documents sent to its score; ``error`` is
    :data:`RERANK_TIMEOUT` or :data:`RERANK_ERROR` (then ``scores`` is empty); ``detail`` says
    what went wrong, for the log.
    """

    scores: dict[int, float]
    error: str | None = None
    detail: str = ""


def _items(payload: Any) -> list[Any] | None:
    """The list of ranked items of a rerank answer (``results``, ``data`` or a bare list)."""
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict):
        for name in ("results", "data"):
            if isinstance(payload.get(name), list):
                return list(payload[name])
    return None


def parse_rerank(payload: Any, count: int) -> dict[int, float] | None:
    """Scores by document index from a decoded rerank answer, or ``None`` if malformed.

    Items need an integer ``index`` in ``0..count-1`` and a numeric ``relevance_score`` (or
    ``score``); other items are ignored. An answer naming no valid document is malformed. Pure.
    """
    items = _items(payload)
    if items is None:
        return None
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            continue
        if isinstance(score, int | float) and not isinstance(score, bool):
            scores[index] = float(score)
    return scores or None


async def rerank(
    http: httpx.AsyncClient,
    *,
    url: str,
    api_key: str,
    model: str,
    query: str,
    documents: Sequence[str],
    timeout_s: float,
) -> RerankResult:
    """Score ``documents`` against ``query`` with the rerank endpoint at ``url`` (full URL).

    Sends ``Authorization: Bearer <api_key>`` when a key is given; ``timeout_s`` (> 0) bounds
    the whole request. Never raises for transport problems: they come back as ``error``.
    """
    if not documents:
        return RerankResult(scores={})
    body = {"model": model, "query": query, "documents": list(documents), "top_n": len(documents)}
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = await http.post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        return RerankResult(scores={}, error=RERANK_TIMEOUT, detail=f"timeout after {timeout_s}s")
    except httpx.HTTPError as exc:
        return RerankResult(scores={}, error=RERANK_ERROR, detail=f"transport error: {exc!r}")
    if not response.is_success:
        return RerankResult(scores={}, error=RERANK_ERROR, detail=f"HTTP {response.status_code}")
    try:
        scores = parse_rerank(response.json(), len(documents))
    except ValueError:
        scores = None
    if scores is None:
        return RerankResult(scores={}, error=RERANK_ERROR, detail="malformed rerank answer")
    return RerankResult(scores=scores)


def reranked_order(ids: Sequence[int], scores: dict[int, float]) -> list[int]:
    """``ids`` reordered by the reranker's scores.

    The documents with a score by descending score (ties keep their fused order), then those
    without one in fused order. ``scores`` is keyed by position in ``ids``. Pure.
    """
    scored = sorted((i for i in range(len(ids)) if i in scores), key=lambda i: (-scores[i], i))
    rest = [i for i in range(len(ids)) if i not in scores]
    return [ids[i] for i in [*scored, *rest]]
