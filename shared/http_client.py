"""The one factory of the background HTTP client (``httpx``).

Used by the LLM extractor and remote embeddings; the proxy's hot path uses
its own aiohttp session (``services.gateway.proxy.upstream_session``, measured faster for
pass-through, see "Request path" in ``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import httpx

from shared.outbound_guard import guarded_http_client
from shared.settings import Settings


def http_timeout(settings: Settings) -> httpx.Timeout:
    """``http_timeout_s`` total per request, ``http_connect_timeout_s`` to connect (seconds)."""
    return httpx.Timeout(settings.http_timeout_s, connect=settings.http_connect_timeout_s)


def background_client(settings: Settings) -> httpx.AsyncClient:
    """A new client with timeouts from ``settings``; the caller closes it (``aclose``).

    Connections are vetted by the outbound (SSRF) policy at connect time
    (:func:`shared.outbound_guard.guarded_http_client`).
    """
    return guarded_http_client(timeout=http_timeout(settings))
