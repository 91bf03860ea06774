"""``GET /metrics``: Prometheus text format, guarded by ``metrics_access``.

``open``: anyone who can reach the port; ``admin``: only with the admin token as bearer (401
otherwise, and 404 when no admin token is configured); ``off``: 404. The metric list is in the
README ("Metrics").
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.auth import is_admin
from services.gateway.state import state_of
from shared.metrics import CONTENT_TYPE, check_metrics_access, render
from shared.metrics_snapshot import queue_depth_of, take_snapshot


async def metrics(request: Request) -> Response:
    """The gateway's metrics plus the shared-state gauges."""
    state = state_of(request)
    settings = state.settings
    check_metrics_access(
        settings.metrics_access,
        settings.admin_token,
        is_admin(request, settings.admin_token),
    )
    snapshot = await take_snapshot(state.store, queue_depth_of(state.queue))
    return Response(render(snapshot), media_type=CONTENT_TYPE)
