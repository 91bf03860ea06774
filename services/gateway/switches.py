"""Per-request memory switches and the caller's scope, the same for every memory route.

Headers: ``x-mnemogate-no-memory`` / ``x-omniroute-no-memory`` (no recall, no learning),
``x-mnemogate-no-learn`` (recall, learn nothing: title generation, evaluation probes),
``x-mnemogate-session-id`` / ``x-omniroute-session-id`` (session scope),
``x-mnemogate-user`` (end user behind one key; the body's own end-user field means the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from shared.models import ApiKey, Scope
from shared.settings import ProviderConfig, Settings

NO_MEMORY_HEADERS = ("x-mnemogate-no-memory", "x-omniroute-no-memory")
NO_LEARN_HEADERS = ("x-mnemogate-no-learn",)
SESSION_HEADERS = ("x-mnemogate-session-id", "x-omniroute-session-id")
USER_HEADERS = ("x-mnemogate-user",)
TRUTHY = frozenset({"1", "true", "yes", "on"})
MAX_ID_CHARS = 256


@dataclass(frozen=True)
class Switches:
    """Whether this request recalls memories and whether it is learned from."""

    recall: bool
    learn: bool


def header_value(request: Request, names: tuple[str, ...]) -> str | None:
    """The first non-empty value among the headers ``names``, stripped, else None."""
    for name in names:
        value = request.headers.get(name)
        if value:
            return value.strip()
    return None


def header_flag(request: Request, names: tuple[str, ...]) -> bool:
    """True when one of the headers ``names`` is set to 1/true/yes/on (case-insensitive)."""
    value = header_value(request, names)
    return value is not None and value.lower() in TRUTHY


def memory_switches(
    request: Request, settings: Settings, provider: ProviderConfig, key: ApiKey
) -> Switches:
    """Recall and learning for this request: the global switch, then the request headers."""
    recall = settings.memory_enabled and not header_flag(request, NO_MEMORY_HEADERS)
    return Switches(recall=recall, learn=recall and not header_flag(request, NO_LEARN_HEADERS))


def request_scope(request: Request, key: ApiKey, body_end_user: str) -> Scope:
    """Owner = the key; end user from ``x-mnemogate-user`` or the body; session from headers.

    Ids are cut to 256 characters.
    """
    end_user = header_value(request, USER_HEADERS) or body_end_user or ""
    session = header_value(request, SESSION_HEADERS)
    return Scope(
        owner_id=key.id,
        user_id=end_user[:MAX_ID_CHARS],
        session_id=session[:MAX_ID_CHARS] if session else None,
    )
