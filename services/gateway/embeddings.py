"""``POST /v1/embeddings``: authenticated pass-through to the selected provider, no memory."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.pipeline import serve_plain
from shared.formats.embeddings import EMBEDDINGS


async def create_embeddings(request: Request) -> Response:
    """Forward one embeddings request (status, headers and body passed back unchanged)."""
    return await serve_plain(request, EMBEDDINGS)
