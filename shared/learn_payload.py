"""The learn job's payload, minimised: only the turns a learn job can use leave the request.

A request carries its whole conversation, but a learn job only learns the user turns after the
learning cursor (at most the newest ``learn_max_turns``) and reads the neighbours that make up the
search context of those turns and of the turns just before them (:mod:`shared.turn_context`). The
payload carries the text of exactly those turns; every older user turn and assistant reply is
``""`` (its index is kept so the job's arithmetic is unchanged), and the cursor's content hashes
(:func:`shared.new_turns.prefix_ids`) of the prefixes the job looks up or marks travel instead of
the text they are computed from (older ones are ``""`` too). So a job payload at rest (Redis, the
embedded outbox row) never holds the user's older history (docs/ARCHITECTURE.md, "Job payloads
at rest").
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from shared.errors import StoreError
from shared.jobs.payloads import LearnPayload
from shared.models import Scope
from shared.new_turns import prefix_ids
from shared.store.cursors import CursorStore
from shared.turn_context import AFTER, REACH, assistant_replies

log = logging.getLogger("mnemogate.learning")

#: Characters of the upstream's answer carried as context of the last turn.
MAX_ANSWER_CHARS = 4000


def kept_from(total: int, learned: int, window: int) -> int:
    """The first user turn index whose text a learn job needs; ``total`` when it needs none.

    Args:
        total: user turns of the request (>= 0).
        learned: the learning cursor for this conversation (turns already learned, >= 0).
        window: ``learn_max_turns`` (only the newest ``window`` turns can be learned, >= 1).

    Returns:
        ``start - AFTER - REACH`` (at least 0), where ``start`` is the first turn the job may
        learn: the turns from there are the new ones, the :data:`AFTER` before them get their
        context recomputed, and :data:`REACH` more are those contexts' earlier neighbours. A
        replay (``learned >= total``) needs no text. Pure.
    """
    if learned >= total:
        return total
    start = max(learned, total - max(1, window))
    return max(0, start - AFTER - REACH)


async def learn_payload(
    cursors: CursorStore,
    scope: Scope,
    user_turns: list[str],
    conversation: Sequence[Any],
    assistant_text: str,
    *,
    window: int,
    created_at: float,
    request_id: str,
) -> LearnPayload:
    """The learn job of one exchange with only the text the job needs (:func:`kept_from`).

    Args:
        cursors: the learning cursors (one indexed read of the newest ``window + 1`` prefixes;
            when it fails, the cursor is taken as 0: the text of the whole window is sent).
        scope: owner, end user and session of the request.
        user_turns: every user input text of the request, oldest first.
        conversation: the request's user and assistant messages as ``{"role", "content"}``
            dicts, oldest first (the replies are read from it).
        assistant_text: the upstream's answer (cut to :data:`MAX_ANSWER_CHARS`).
        window: ``learn_max_turns``.
        created_at: request time, unix seconds.
        request_id: the request's id.
    """
    prefixes = prefix_ids(user_turns)
    total = len(user_turns)
    first = max(0, total - max(1, window))
    try:
        learned = await cursors.learned_prefix(
            scope.owner_id, scope.user_id, prefixes[max(0, first - 1) :]
        )
    except StoreError as exc:  # the job re-reads it; send the whole window rather than nothing
        log.warning("learn cursor unreadable, the payload keeps the window: %s", exc)
        learned = 0
    kept = kept_from(total, learned, window)
    hashed = min(kept, max(0, first - 1))  # the job's cursor lookup starts at first - 1
    return LearnPayload(
        owner_id=scope.owner_id,
        user_id=scope.user_id,
        session_id=scope.session_id,
        user_turns=[""] * kept + user_turns[kept:],
        prefixes=[""] * hashed + prefixes[hashed:],
        kept_from=kept,
        replies=assistant_replies(conversation, keep_last=total - kept),
        assistant_text=assistant_text[:MAX_ANSWER_CHARS] if kept < total else "",
        created_at=created_at,
        request_id=request_id,
    )
