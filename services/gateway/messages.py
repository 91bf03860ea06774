"""``POST /v1/messages``.

Anthropic Messages with memory (JSON or SSE), authenticated by ``x-api-key: <mnemogate key>`` or
``Authorization: Bearer``; errors on this route use Anthropic's error shape
(:mod:`services.gateway.errors`).

The flow is the one of every memory route (:mod:`services.gateway.pipeline`); what is specific
to this format lives in :mod:`shared.formats.messages`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.pipeline import serve
from shared.formats.messages import MESSAGES


async def create_message(request: Request) -> Response:
    """Handle one Anthropic Messages request."""
    return await serve(request, MESSAGES)
