"""``POST /v1/responses``: the OpenAI Responses API with memory (JSON or SSE events).

The flow is the one of every memory route (:mod:`services.gateway.pipeline`); what is specific
to this format (input items, placement, the event stream) lives in
:mod:`shared.formats.responses`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.pipeline import serve
from shared.formats.responses import RESPONSES


async def create_response(request: Request) -> Response:
    """Handle one Responses API request."""
    return await serve(request, RESPONSES)
