"""Search preview: what recall would inject for a query.

With the ranking shown (``POST /api/memory/search-preview``, the MCP ``memory_search`` tool).
"""

from __future__ import annotations

from typing import Any

import msgspec

from shared.access_policy import Principal, readable_owners
from shared.engine import Engine
from shared.errors import InvalidRequest
from shared.memory_api import (
    MAX_PREVIEW_BUDGET,
    PreviewItem,
    PreviewResult,
    SearchPreview,
    view_of,
)
from shared.models import Scope
from shared.query_bound import bound_query
from shared.ranking import memory_tokens
from shared.retrieval import RecallResult, recall
from shared.settings import Settings
from shared.store import Store


def _preview_owner(p: Principal, body: SearchPreview) -> str:
    """The one owner a preview by ``p`` searches.

    Raises:
        InvalidRequest: the admin did not name ``owner_id``.
        NotFound: a client naming another owner.
    """
    if p.admin:
        if not body.owner_id:
            raise InvalidRequest("owner_id is required with the admin token")
        return body.owner_id
    return (readable_owners(p, body.owner_id) or [p.client_id])[0]


def effective_settings(settings: Settings, body: SearchPreview) -> Settings:
    """``settings`` with the preview's ``strategy`` and ``budget`` applied."""
    changed: dict[str, Any] = {}
    if body.strategy is not None:
        changed["retrieval_strategy"] = body.strategy
    if body.budget is not None:
        changed["recall_max_tokens"] = body.budget
    return msgspec.structs.replace(settings, **changed) if changed else settings


def preview_items(result: RecallResult) -> list[PreviewItem]:
    """The ranked items of ``result``, best first, with per-leg scores.

    Per-leg scores are shown when the recall provides them; a keyword-only recall's final score
    is its keyword score.
    """
    keyword_scores: dict[int, float] = dict(getattr(result, "keyword_scores", None) or {})
    vector_scores: dict[int, float] = dict(getattr(result, "vector_scores", None) or {})
    if result.tier == "fts5" and not keyword_scores:
        keyword_scores = dict(result.scores)
    return [
        PreviewItem(
            rank=i + 1,
            score=result.scores.get(m.id),
            tier=result.tier,
            tokens=memory_tokens(m.content),
            keyword_score=keyword_scores.get(m.id),
            vector_score=vector_scores.get(m.id),
            memory=view_of(m),
        )
        for i, m in enumerate(result.memories)
    ]


async def search_preview(
    store: Store,
    settings: Settings,
    p: Principal,
    body: SearchPreview,
    now: float,
    engine: Engine | None = None,
) -> PreviewResult:
    """Run the recall code path (:func:`shared.retrieval.recall`) for ``body``.

    Read-only (no access is recorded).

    Raises:
        InvalidRequest: admin without ``owner_id``, or ``budget`` outside 0..8000.
        NotFound: a client naming another owner. StoreError: the database failed.
    """
    if body.budget is not None and not 0 <= body.budget <= MAX_PREVIEW_BUDGET:
        raise InvalidRequest(f"budget must be within 0..{MAX_PREVIEW_BUDGET} tokens")
    owner = _preview_owner(p, body)
    effective = effective_settings(settings, body)
    scope = Scope(owner_id=owner, user_id=body.user_id, session_id=body.session_id)
    query = bound_query(
        body.query, settings.recall_query_max_bytes, settings.recall_query_max_terms
    )
    result = await recall(store.memories, scope, query, effective, now, engine)
    items = preview_items(result)
    return PreviewResult(
        items=items,
        tier=result.tier,
        degraded=result.degraded,
        strategy=effective.retrieval_strategy,
        budget=effective.recall_max_tokens,
        tokens_used=sum(item.tokens for item in items),
        embedding_source=effective.embedding_source,
        vector_tier=effective.vector_tier,
    )
