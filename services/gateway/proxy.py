"""Forwarding to the upstream provider: provider selection, request building, error mapping.

The upstream client is one shared ``httpx.AsyncClient`` over the ``httpx-aiohttp`` transport
(DESIGN §6: plain httpx 0.28 served ~690 req/s, over aiohttp ~1,680 req/s; see
``bench/overhead.py``). Compressed upstream bodies are avoided with ``Accept-Encoding: identity``
so that what we read and what we forward are the same bytes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import aiohttp
import httpx

from shared.errors import UpstreamTimeout, UpstreamUnavailable
from shared.settings import ProviderConfig

# Upstream response headers worth passing to the client (rate limits, request ids).
PASSTHROUGH_RESPONSE_HEADERS = ("x-request-id", "openai-processing-ms", "retry-after")
PASSTHROUGH_RESPONSE_PREFIXES = ("x-ratelimit-",)


def select_provider(
    model: str, providers: Mapping[str, ProviderConfig]
) -> tuple[ProviderConfig, str]:
    """Provider and upstream model name for a request's ``model``.

    ``name/model`` selects provider ``name`` (prefix stripped) when such a provider exists;
    otherwise the default provider gets ``model`` unchanged (so ``org/model`` names still work).
    """
    prefix, sep, rest = model.partition("/")
    if sep and rest and prefix in providers and prefix != "default":
        return providers[prefix], rest
    return providers["default"], model


def upstream_headers(provider: ProviderConfig) -> dict[str, str]:
    """Headers for an upstream chat request (provider key, JSON, no compression)."""
    headers = {"content-type": "application/json", "accept-encoding": "identity"}
    if provider.api_key:
        headers["authorization"] = f"Bearer {provider.api_key}"
    return headers


def response_headers(upstream: httpx.Response) -> dict[str, str]:
    """The upstream response headers that are passed through to the client."""
    out: dict[str, str] = {}
    for name, value in upstream.headers.items():
        lname = name.lower()
        if lname in PASSTHROUGH_RESPONSE_HEADERS or lname.startswith(PASSTHROUGH_RESPONSE_PREFIXES):
            out[lname] = value
    return out


@contextlib.contextmanager
def upstream_errors(provider: ProviderConfig) -> Iterator[None]:
    """Map httpx transport errors to 504 (timeout) and 502 (anything else)."""
    try:
        yield
    except httpx.TimeoutException as exc:
        if isinstance(exc.__cause__, aiohttp.ClientConnectorError):
            # httpx-aiohttp maps a refused connection to ConnectTimeout (its exception map picks
            # the ClientConnectionError entry); a refusal is unavailability, not a timeout.
            raise UpstreamUnavailable(
                f"upstream provider '{provider.name}' is unreachable: connection failed"
            ) from exc
        raise UpstreamTimeout(f"upstream provider '{provider.name}' timed out") from exc
    except httpx.HTTPError as exc:
        raise UpstreamUnavailable(
            f"upstream provider '{provider.name}' is unreachable: {type(exc).__name__}"
        ) from exc


async def post_json(
    client: httpx.AsyncClient, provider: ProviderConfig, path: str, body: bytes
) -> httpx.Response:
    """POST ``body`` to ``{base_url}{path}`` and read the whole response.

    Raises:
        UpstreamTimeout, UpstreamUnavailable: transport failure (HTTP errors are returned).
    """
    with upstream_errors(provider):
        return await client.post(
            provider.base_url + path, content=body, headers=upstream_headers(provider)
        )


async def open_stream(
    client: httpx.AsyncClient, provider: ProviderConfig, path: str, body: bytes
) -> httpx.Response:
    """POST and return the response with its body unread (caller must ``aclose`` it).

    Raises:
        UpstreamTimeout, UpstreamUnavailable: transport failure before the status line.
    """
    request = client.build_request(
        "POST", provider.base_url + path, content=body, headers=upstream_headers(provider)
    )
    with upstream_errors(provider):
        return await client.send(request, stream=True)


async def get_json(
    client: httpx.AsyncClient, provider: ProviderConfig, path: str
) -> httpx.Response:
    """GET ``{base_url}{path}`` with the provider's key.

    Raises:
        UpstreamTimeout, UpstreamUnavailable: transport failure.
    """
    headers = upstream_headers(provider)
    headers.pop("content-type")
    with upstream_errors(provider):
        return await client.get(provider.base_url + path, headers=headers)
