"""The request path's memory controls, for every client route.

The request path's memory controls, for every client route (chat completions, responses, messages):
who the end user is, which switches apply, whether the message asks to forget, and the response
headers that say so. Each route calls :func:`resolve_control` once, passes
:attr:`MemoryControl.forget_stems` to the recall flow, and adds :func:`control_headers`.

See docs/ARCHITECTURE.md, "Controlling memory".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import msgspec

from services.gateway.switches import SESSION_HEADERS
from shared.end_user import header_names, resolve_end_user
from shared.errors import InvalidRequest
from shared.forget_intent import ForgetIntent, detect_forget
from shared.jobs.payloads import FORGET, ForgetPayload
from shared.jobs.queue import JobQueue
from shared.memory_switches import (
    SWITCH_HEADERS,
    Switch,
    Switches,
    global_switch,
    provider_switch,
    request_switch,
    resolve_switches,
    switch_headers,
)
from shared.models import ApiKey
from shared.settings import ProviderConfig, Settings

log = logging.getLogger("mnemogate.gateway")

TOKENS_HEADER = "x-mnemogate-memory-tokens"
FORGET_HEADER = "x-mnemogate-memory-forget"


class MemoryControl(msgspec.Struct, frozen=True, kw_only=True):
    """What memory may do for one request: end user, switches, and a forget request (if any)."""

    user_id: str
    switches: Switches
    forget: ForgetIntent | None = None

    @property
    def forget_stems(self) -> tuple[str, ...] | None:
        """The forget target's stems for the recall filter, None when nothing is forgotten."""
        return self.forget.stems if self.forget is not None else None


def reject_conflicting_identity(raw: Sequence[tuple[bytes, bytes]], settings: Settings) -> None:
    """Refuse a request naming its end user, session or a memory switch twice, differently.

    ``raw``: the ASGI scope's headers (lower-case names). A proxy in front of mnemogate may add
    an end-user header the client also sent: taking either would be a guess at whose memories
    to use, so, as for a ``model`` named twice, the request is refused (a repeated equal value
    is fine).

    Raises:
        InvalidRequest: code ``duplicate_header`` (HTTP 400).
    """
    names = (*header_names(settings), *SESSION_HEADERS, *SWITCH_HEADERS)
    wanted = {n.encode("latin-1") for n in names}
    seen: dict[bytes, bytes] = {}
    for name, value in raw:
        if name in wanted and seen.setdefault(name, value.strip()) != value.strip():
            raise InvalidRequest(
                f"header {name.decode('latin-1')} is given twice with different values",
                code="duplicate_header",
            )


def resolve_control(
    headers: Mapping[str, str],
    body_end_user: str,
    key: ApiKey,
    provider: ProviderConfig,
    settings: Settings,
    user_text: str,
) -> MemoryControl:
    """Resolve end user, switches and forget request of one request.

    ``body_end_user`` is the end-user id the body names (the client format reads its own
    fields: ``user``, ``safety_identifier``, ``metadata.user_id``), ``""`` when none.

    Resolve the end user (:func:`shared.end_user.resolve_end_user`), the switches
    (:func:`shared.memory_switches.resolve_switches`: request headers, key, provider, global) and a
    forget request in ``user_text`` (the newest user message; looked for when
    ``forget_detection`` is on, even with recall and learning off).

    Raises:
        InvalidRequest: the end-user id is too long or not a string (HTTP 400).
    """
    user_id = resolve_end_user(
        headers, [("body", body_end_user)], header_names(settings), settings.end_user_max_chars
    )
    switches = resolve_switches(
        request_switch(headers),
        Switch(recall=key.recall_enabled, learn=key.learn_enabled),
        provider_switch(provider.memory),
        global_switch(settings),
    )
    # A forget is the user's explicit request: honoured whatever the switches say.
    forget = detect_forget(user_text) if settings.forget_detection else None
    return MemoryControl(user_id=user_id, switches=switches, forget=forget)


def control_headers(control: MemoryControl, tokens: int) -> dict[str, str]:
    """Response headers of the memory controls.

    Response headers: the switches that applied (:func:`shared.memory_switches.switch_headers`),
    ``x-mnemogate-memory-tokens`` (estimated tokens injected, ``0`` when none) and, for a forget
    request, ``x-mnemogate-memory-forget: queued``.
    """
    headers = switch_headers(control.switches)
    headers[TOKENS_HEADER] = str(max(0, tokens))
    if control.forget is not None:
        headers[FORGET_HEADER] = "queued"
    return headers


async def enqueue_forget(
    queue: JobQueue, control: MemoryControl, owner_id: str, now: float, request_id: str
) -> None:
    """Queue the ``forget`` job of a forget request (nothing when there is none).

    Never raises: a queue failure is logged (the arq queue parks jobs in the outbox first).
    """
    if control.forget is None:
        return
    payload = ForgetPayload(
        owner_id=owner_id,
        user_id=control.user_id,
        stems=list(control.forget.stems),
        requested_at=now,
        request_id=request_id,
    )
    try:
        await queue.enqueue(FORGET, payload)
    except Exception:
        log.exception("could not enqueue a forget job")
