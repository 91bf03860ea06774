"""``POST /v1/chat/completions``: OpenAI Chat Completions with memory (JSON or SSE).

The flow is the one of every memory route (:mod:`services.gateway.pipeline`); what is specific
to this format lives in :mod:`shared.formats.chat`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway.pipeline import serve
from shared.formats.chat import CHAT


async def chat_completions(request: Request) -> Response:
    """Handle one chat completion request."""
    return await serve(request, CHAT)
