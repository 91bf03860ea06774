"""Runtime-settings parts of the gateway lifespan: the refresh loop and the MCP session manager.

:func:`management_lifespan` keeps the runtime settings fresh with a background loop (every
``settings_refresh_s`` seconds: one version read, the row only when it changed; a new version
replaces the one immutable snapshot that every handler reads) and runs the MCP server's
Streamable HTTP session manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from services.gateway.mcp_server import McpGateway
from shared.errors import StoreError
from shared.runtime_settings import RuntimeSettings

log = logging.getLogger("mnemogate.gateway")
MIN_REFRESH_SLEEP_S = 0.05


async def _refresh_loop(runtime: RuntimeSettings) -> None:
    while True:
        await asyncio.sleep(max(MIN_REFRESH_SLEEP_S, runtime.current.settings_refresh_s))
        try:
            await runtime.refresh()
        except StoreError:
            log.exception("runtime settings refresh failed; keeping version %d", runtime.version)


@contextlib.asynccontextmanager
async def management_lifespan(live: RuntimeSettings, mcp: McpGateway) -> AsyncIterator[None]:
    """The runtime settings refresh loop and the MCP session manager.

    For the duration of the application (the overrides were loaded when the runtime was built).
    """
    task = asyncio.create_task(_refresh_loop(live))
    try:
        async with mcp.run():
            yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
