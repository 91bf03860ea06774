"""The caller's scope, the same for every memory route.

Owner = the API key; end user = the one :mod:`services.gateway.memory_control` resolved
(configured headers such as ``x-mnemogate-user`` and ``X-OpenWebUI-User-Id``, then the body);
session = ``x-mnemogate-session-id`` / ``x-omniroute-session-id``. The recall and learning
switches are resolved in :mod:`shared.memory_switches` (request headers, key, provider, global).
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.end_user import utf8_header
from shared.models import MAX_SESSION_CHARS, ApiKey, Scope

SESSION_HEADERS = ("x-mnemogate-session-id", "x-omniroute-session-id")


def header_value(headers: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The first non-empty value among the headers ``names`` (lower case), stripped, else None.

    Values are read as UTF-8 (:func:`shared.end_user.utf8_header`).

    Raises:
        InvalidRequest: the value is not valid UTF-8 (HTTP 400).
    """
    for name in names:
        value = utf8_header(name, headers.get(name))
        if value:
            return value.strip()
    return None


def request_scope(headers: Mapping[str, str], key: ApiKey, end_user: str) -> Scope:
    """The caller's scope (``headers``: the request's, lower-case names, first value of each).

    Owner = the key; ``end_user`` as resolved (already validated, never cut here); session from
    the headers (cut to 256 characters).
    """
    session = header_value(headers, SESSION_HEADERS)
    return Scope(
        owner_id=key.id,
        user_id=end_user,
        session_id=session[:MAX_SESSION_CHARS] if session else None,
    )
