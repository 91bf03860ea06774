"""Authenticated pass-through routes without memory, for the official SDKs' other calls.

- ``POST /v1/messages/count_tokens`` (Anthropic "Count message tokens"): routed on ``model``
  like ``/v1/messages`` (``provider/model`` selects a provider that speaks ``messages``),
  ``x-api-key`` or Bearer auth, Anthropic's error shape.
- ``GET|DELETE /v1/responses/{id}``, ``POST /v1/responses/{id}/cancel``,
  ``GET /v1/responses/{id}/input_items`` (OpenAI Responses: retrieve, delete, cancel, list input
  items): these carry no model, so they go to the default provider when it speaks
  ``responses``, else to the first provider of the providers file that does. The query string
  (``include``, ``stream``, ``limit``, ``after``...) is forwarded; a streamed retrieve is
  relayed as it arrives.

Headers both ways follow :mod:`services.gateway.headers` (the caller's credentials replaced by
the provider's); bodies are forwarded byte for byte; nothing is recalled or learned.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from services.gateway import proxy
from services.gateway.auth import authenticate_client
from services.gateway.body import read_body
from services.gateway.headers import header_policy, upstream_request_headers
from services.gateway.pipeline import serve_plain
from services.gateway.relay import Upstream, relay_raw
from services.gateway.state import state_of
from shared.errors import InvalidRequest
from shared.formats.messages import COUNT_TOKENS
from shared.formats.responses import RESPONSES

#: A Responses object id as the API hands them out (``resp_...``); never a path segment like ``..``.
_RESPONSE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}")


async def count_tokens(request: Request) -> Response:
    """``POST /v1/messages/count_tokens``: forwarded to the provider the model selects."""
    return await serve_plain(request, COUNT_TOKENS)


async def stored_response(request: Request) -> Response:
    """``GET``/``DELETE /v1/responses/{response_id}``: retrieve or delete a stored response."""
    return await _forward_stored(request, "")


async def cancel_response(request: Request) -> Response:
    """``POST /v1/responses/{response_id}/cancel``: cancel a background response."""
    return await _forward_stored(request, "cancel")


async def response_input_items(request: Request) -> Response:
    """``GET /v1/responses/{response_id}/input_items``: list a stored response's input items."""
    return await _forward_stored(request, "input_items")


async def _forward_stored(request: Request, action: str) -> Response:
    """Forward a stored-response request to the provider serving ``responses``.

    Raises:
        AuthenticationFailed, PayloadTooLarge, RequestTimeout: rendered in OpenAI's shape.
        InvalidRequest: a malformed id, or no provider speaks ``responses`` (HTTP 400).
    """
    state = state_of(request)
    await authenticate_client(request, state.store)
    response_id = str(request.path_params["response_id"])
    if not _RESPONSE_ID.fullmatch(response_id):
        raise InvalidRequest("invalid response id", code="invalid_response_id")
    provider = proxy.provider_for_format(state.providers, RESPONSES.name)
    body = b""
    if request.method == "POST":
        settings = state.settings
        body = await read_body(request, settings.max_body_bytes, settings.body_read_timeout_s)
    path = f"{RESPONSES.path}/{quote(response_id, safe='')}" + (f"/{action}" if action else "")
    if request.url.query:
        path += "?" + request.url.query
    policy = header_policy(state.settings.strip_headers)
    up = Upstream(
        session=state.upstream,
        provider=provider,
        path=path,
        body=body,
        headers=upstream_request_headers(request.headers.items(), provider, policy),
    )
    return await relay_raw(up, request.method, {}, policy, RESPONSES)
