"""Recall and learning switches at four levels; the most specific one that is set wins.

========  ==========================================================  =====================
level     where it is set                                             values
========  ==========================================================  =====================
request   headers ``x-mnemogate-no-memory`` (and the drop-in           truthy ``1/true/yes/on``
          ``x-omniroute-no-memory``) for both, ``x-mnemogate-no-      → off, falsy
          recall``, ``x-mnemogate-no-learn`` (each overrides           ``0/false/no/off`` → on,
          no-memory for its own switch)                                absent → not set,
                                                                       other → 400
key       the API key (``mnemogate keys update ID --recall off``,      on / off / inherit
          ``PATCH /api/keys/{id}``)
provider  providers file ``memory = "off" | "recall" | "learn" |      absent → not set
          "both"``
global    runtime settings ``memory_enabled`` and ``recall_enabled``  always set
          / ``learn_enabled``
========  ==========================================================  =====================

:func:`resolve_switches` is the one place the precedence lives (docs/ARCHITECTURE.md,
"Controlling memory"); the response headers report the outcome (:func:`switch_headers`).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from shared.errors import InvalidRequest
from shared.settings import ProviderMemory, Settings

TRUTHY = frozenset({"1", "true", "yes", "on"})
FALSY = frozenset({"0", "false", "no", "off"})
NO_MEMORY_HEADERS = ("x-mnemogate-no-memory", "x-omniroute-no-memory")
NO_RECALL_HEADERS = ("x-mnemogate-no-recall",)
NO_LEARN_HEADERS = ("x-mnemogate-no-learn",)
LEVELS = ("request", "key", "provider", "global")
#: Every request-level switch header (a repeated one with different values is refused).
SWITCH_HEADERS = (*NO_MEMORY_HEADERS, *NO_RECALL_HEADERS, *NO_LEARN_HEADERS)


class Switch(msgspec.Struct, frozen=True, kw_only=True):
    """One level's say: ``recall`` / ``learn`` True (on), False (off) or None (not set here)."""

    recall: bool | None = None
    learn: bool | None = None


class Switches(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome: each switch's value and the level (:data:`LEVELS`) that decided it."""

    recall: bool
    learn: bool
    recall_by: str
    learn_by: str


def _flag(headers: Mapping[str, str], names: tuple[str, ...]) -> bool | None:
    """Read no-… headers as a disable flag.

    The "no-…" header ``names`` read as a *disable* flag: True (set truthy), False (set falsy),
    None (absent or empty). A privacy control must not fail open on a typo, so any other value
    is refused, and so are two of ``names`` that disagree (``x-mnemogate-no-memory: 0`` with
    ``x-omniroute-no-memory: 1``).

    Raises:
        InvalidRequest: a value outside :data:`TRUTHY` and :data:`FALSY` (HTTP 400,
            ``code="invalid_header"``); two names that disagree (``code="duplicate_header"``).
    """
    found: bool | None = None
    for name in names:
        value = headers.get(name)
        if value is None or not value.strip():
            continue
        word = value.strip().lower()
        if word not in TRUTHY and word not in FALSY:
            raise InvalidRequest(
                f"header {name} must be one of {'/'.join(sorted(TRUTHY))} (memory off) or "
                f"{'/'.join(sorted(FALSY))} (memory on), got {value.strip()[:40]!r}",
                code="invalid_header",
            )
        flag = word in TRUTHY
        if found is not None and flag != found:
            raise InvalidRequest(
                f"headers {' and '.join(names)} disagree: send one of them",
                code="duplicate_header",
            )
        found = flag
    return found


def request_switch(headers: Mapping[str, str]) -> Switch:
    """The request level from ``headers`` (lower-case names, as Starlette gives them).

    Raises:
        InvalidRequest: a switch header with a value that is neither truthy nor falsy.
    """
    no_memory = _flag(headers, NO_MEMORY_HEADERS)
    no_recall = _flag(headers, NO_RECALL_HEADERS)
    no_learn = _flag(headers, NO_LEARN_HEADERS)
    no_recall = no_memory if no_recall is None else no_recall
    no_learn = no_memory if no_learn is None else no_learn
    return Switch(
        recall=None if no_recall is None else not no_recall,
        learn=None if no_learn is None else not no_learn,
    )


def provider_switch(memory: ProviderMemory | None) -> Switch:
    """The provider level from its ``memory`` entry (None: not set)."""
    if memory is None:
        return Switch()
    return Switch(recall=memory in ("recall", "both"), learn=memory in ("learn", "both"))


def global_switch(settings: Settings) -> Switch:
    """The global level: ``memory_enabled`` and ``recall_enabled`` / ``learn_enabled``."""
    return Switch(
        recall=settings.memory_enabled and settings.recall_enabled,
        learn=settings.memory_enabled and settings.learn_enabled,
    )


def resolve_switches(request: Switch, key: Switch, provider: Switch, global_: Switch) -> Switches:
    """Resolve both switches from the most specific level that sets them.

    Each switch from the most specific level that sets it (request > key > provider > global); a
    global level left unset counts as on. Pure.
    """
    recall, recall_by = True, "global"
    learn, learn_by = True, "global"
    for level, switch in reversed(
        list(zip(LEVELS, (request, key, provider, global_), strict=True))
    ):
        if switch.recall is not None:
            recall, recall_by = switch.recall, level
        if switch.learn is not None:
            learn, learn_by = switch.learn, level
    return Switches(recall=recall, learn=learn, recall_by=recall_by, learn_by=learn_by)


def switch_headers(switches: Switches) -> dict[str, str]:
    """Response headers saying which switches applied.

    Response headers saying what applied: ``x-mnemogate-memory-recall: on|off``,
    ``x-mnemogate-memory-learn: on|off`` and ``...-recall-by`` / ``...-learn-by`` naming the
    deciding level.
    """
    return {
        "x-mnemogate-memory-recall": "on" if switches.recall else "off",
        "x-mnemogate-memory-recall-by": switches.recall_by,
        "x-mnemogate-memory-learn": "on" if switches.learn else "off",
        "x-mnemogate-memory-learn-by": switches.learn_by,
    }
