"""Search preview with explanations (Memory Studio's Playground).

What recall would inject for a query, in order, with each memory's keyword and vector rank, the
exact block text and, on request, every dropped candidate with its reason
(:mod:`shared.recall_explain`).

Wraps :func:`shared.search_preview.search_preview` (the recall code path itself) and adds fields;
read-only: no access is recorded.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from shared.access_policy import Principal, readable_owners
from shared.engine import Engine
from shared.injection import RecalledMemory, format_memory_block
from shared.memory_api import (
    DroppedMemory,
    PreviewItem,
    PreviewResult,
    SearchPreview,
    view_of,
)
from shared.models import Scope
from shared.ranking import memory_tokens
from shared.recall_explain import LegHit, Legs, drop_reasons, legs_of
from shared.search_preview import effective_settings, search_preview
from shared.settings import Settings
from shared.store import Store


def _scope(p: Principal, body: SearchPreview) -> Scope:
    owner = body.owner_id if p.admin else (readable_owners(p, body.owner_id) or [""])[0]
    return Scope(owner_id=owner or "", user_id=body.user_id, session_id=body.session_id)


def _rank(hit: LegHit | None) -> int | None:
    return hit.rank if hit is not None else None


def _score(hit: LegHit | None, fallback: float | None) -> float | None:
    return hit.score if hit is not None else fallback


def _with_ranks(item: PreviewItem, legs: Legs, memory_id: int) -> PreviewItem:
    kw, vec = legs.keyword.get(memory_id), legs.vector.get(memory_id)
    return msgspec.structs.replace(
        item,
        keyword_rank=_rank(kw),
        vector_rank=_rank(vec),
        keyword_score=_score(kw, item.keyword_score),
        vector_score=_score(vec, item.vector_score),
    )


async def explained_preview(
    store: Store,
    settings: Settings,
    p: Principal,
    body: SearchPreview,
    now: float,
    engine: Engine | None,
    redact: Callable[[str], str] | None,
) -> PreviewResult:
    """The search preview of ``body`` with ranks, the block text and the dropped candidates.

    The block text is redacted by ``redact`` as on the request path; the dropped candidates are
    listed only when ``body.explain``.

    Raises:
        InvalidRequest, NotFound, StoreError: as :func:`shared.search_preview.search_preview`.

    """
    result = await search_preview(store, settings, p, body, now, engine)
    effective = effective_settings(settings, body)
    legs = await legs_of(store.memories, _scope(p, body), body.query, effective, now, engine)
    by_public = {m.public_id: m.id for m in legs.memories.values()}
    items = [
        _with_ranks(item, legs, by_public[item.memory.id]) if item.memory.id in by_public else item
        for item in result.items
    ]
    block = ""
    if items:
        block = format_memory_block(
            [
                RecalledMemory(
                    content=redact(i.memory.content) if redact else i.memory.content,
                    created_at=i.memory.created_at,
                    category=i.memory.category,
                )
                for i in items
            ]
        )
    dropped = None
    if body.explain:
        chosen = [legs.memories[by_public[i.memory.id]] for i in items if i.memory.id in by_public]
        dropped = [
            DroppedMemory(
                reason=reason,
                keyword_rank=_rank(legs.keyword.get(mid)),
                vector_rank=_rank(legs.vector.get(mid)),
                keyword_score=_score(legs.keyword.get(mid), None),
                vector_score=_score(legs.vector.get(mid), None),
                tokens=memory_tokens(legs.memories[mid].content),
                memory=view_of(legs.memories[mid]),
            )
            for mid, reason in drop_reasons(legs, chosen, effective.recall_max_memories)
        ]
    return msgspec.structs.replace(result, items=items, block=block, dropped=dropped)
