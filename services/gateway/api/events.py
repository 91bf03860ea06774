"""``GET /api/events``: the events timeline (see :mod:`shared.event_log`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.api.authorization import principal_of
from services.gateway.api.codec import decode_query, json_response
from services.gateway.state import state_of
from shared.event_log import EventQuery, list_events


async def events(request: Request) -> Response:
    """``GET /api/events`` → ``{"items": [event], "total", "limit", "offset"}``, newest first."""
    principal = await principal_of(request)
    query = decode_query(request, EventQuery)
    return json_response(await list_events(state_of(request).store, principal, query))
