"""Management parts of the gateway lifespan: runtime settings refresh and the MCP session manager.

:func:`management_lifespan` loads the runtime settings overrides, applies them to the gateway
state and its job context, keeps them fresh with a background loop (every
``settings_refresh_s`` seconds: one version read, the row only when it changed), and runs the MCP
server's Streamable HTTP session manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from services.gateway.mcp_server import McpGateway
from services.gateway.state import GatewayState
from shared.errors import StoreError
from shared.jobs.context import build_detector
from shared.outbound_policy import check_outbound_settings
from shared.runtime_settings import RuntimeSettings
from shared.settings import Settings

log = logging.getLogger("mnemogate.gateway")
MIN_REFRESH_SLEEP_S = 0.05


def _apply_to(state: GatewayState) -> None:
    def apply(settings: Settings) -> None:
        if settings.sensitive_custom_patterns != state.settings.sensitive_custom_patterns:
            state.jobs.detector = build_detector(settings.sensitive_custom_patterns)
        state.settings = settings
        state.jobs.settings = settings

    assert state.runtime is not None
    state.runtime.on_change.append(apply)


async def _refresh_loop(runtime: RuntimeSettings) -> None:
    while True:
        await asyncio.sleep(max(MIN_REFRESH_SLEEP_S, runtime.current.settings_refresh_s))
        try:
            await runtime.refresh()
        except StoreError:
            log.exception("runtime settings refresh failed; keeping version %d", runtime.version)


@contextlib.asynccontextmanager
async def management_lifespan(state: GatewayState, mcp: McpGateway) -> AsyncIterator[None]:
    """Runtime settings (loaded, applied, refreshed) and the MCP session manager, for the
    duration of the application.

    Never fails on the settings row: if it cannot be read at start-up, the environment settings
    are served until a later refresh succeeds.
    """
    runtime = RuntimeSettings(state.settings, state.store.settings)
    runtime.validators.append(lambda s: build_detector(s.sensitive_custom_patterns))
    runtime.validators.append(check_outbound_settings)  # SSRF: 400 before it is stored
    state.runtime = runtime
    state.jobs.runtime = runtime
    _apply_to(state)
    try:
        await runtime.refresh(force=True)
    except StoreError:
        # e.g. worker mode before `mnemogate migrate`: serve with the environment settings,
        # the refresh loop retries every period.
        log.exception("runtime settings not loaded at start-up; using environment settings")
    task = asyncio.create_task(_refresh_loop(runtime))
    try:
        async with mcp.run():
            yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
