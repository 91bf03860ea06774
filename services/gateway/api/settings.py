"""``GET /api/settings`` and ``PUT /api/settings``: runtime settings (admin token only).

``PUT`` takes a partial JSON object ``{field: value}`` (``null`` = back to the environment value;
a secret sent back masked is unchanged), validated against :class:`shared.settings.Settings`.
Both return the view of :meth:`shared.runtime_settings.RuntimeSettings.view`. Other processes
apply a change within ``settings_refresh_s`` seconds (see :mod:`shared.runtime_settings`).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.api.authorization import require_admin
from services.gateway.api.codec import decode_body, json_response
from services.gateway.state import state_of
from shared.json_numbers import integral_floats_to_int
from shared.settings import Settings


async def get_settings(request: Request) -> Response:
    """``GET /api/settings`` → the runtime settings view (secrets masked).

    Keys: ``version``, ``updated_at``, ``settings``, ``overrides``, ``immutable``, ``secret``,
    ``refresh_s``.
    """
    await require_admin(request)
    runtime = state_of(request).runtime.live
    await runtime.refresh(force=True)
    return json_response(runtime.view())


async def put_settings(request: Request) -> Response:
    """``PUT /api/settings`` with ``{field: value | null}`` → the new view.

    (400 on an unknown, immutable, mistyped or out-of-range field).
    """
    await require_admin(request)
    patch = integral_floats_to_int(await decode_body(request, dict[str, Any]), Settings)
    runtime = state_of(request).runtime.live
    await runtime.update(patch)
    # the timeline shows which fields changed, never their values (some are secrets)
    await state_of(request).store.events.record(
        "settings_change", "system", detail={"fields": sorted(patch)}
    )
    return json_response(runtime.view())
