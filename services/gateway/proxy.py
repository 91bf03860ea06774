"""Forwarding to the upstream provider: provider selection, request building, error mapping.

The hot path uses one shared ``aiohttp.ClientSession`` directly: a bare pass-through measured
~3,900 req/s with aiohttp against ~1,680 req/s for httpx over the aiohttp transport and ~690
req/s for plain httpx on one core, and ``bench/overhead.py`` confirmed the gap here.
Compressed upstream bodies are avoided with ``Accept-Encoding: identity`` (and the session does
not decompress), so what we read and what we forward are the same bytes. Upstream latency
(request sent → response headers, :func:`shared.metrics.note_upstream`) is timed around each call
here rather than with an ``aiohttp.TraceConfig``: a trace config makes aiohttp build a trace
context and signal every request phase and body chunk on every request of the session.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping

import aiohttp
from multidict import CIMultiDictProxy

from services.gateway.headers import credentials
from shared.errors import InvalidRequest, UpstreamTimeout, UpstreamUnavailable
from shared.metrics import note_upstream
from shared.outbound_guard import GuardedResolver
from shared.settings import ProviderConfig, Settings

MAX_CONNECTIONS = 512


def upstream_session(settings: Settings) -> aiohttp.ClientSession:
    """The shared upstream session.

    Pooled keep-alive connections, timeouts from settings (``upstream_timeout_s`` total per request,
    ``upstream_connect_timeout_s`` to connect), no automatic decompression, no proxy variables from
    the environment; host names are vetted by the outbound policy when resolved
    (:class:`shared.outbound_guard.GuardedResolver`).
    """
    timeout = aiohttp.ClientTimeout(
        total=settings.upstream_timeout_s, connect=settings.upstream_connect_timeout_s
    )
    connector = aiohttp.TCPConnector(
        limit=MAX_CONNECTIONS, keepalive_timeout=30, resolver=GuardedResolver()
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=False,
        trust_env=False,
    )


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


def provider_for_format(providers: Mapping[str, ProviderConfig], fmt: str) -> ProviderConfig:
    """The provider serving model-less requests of format ``fmt`` (stored Responses objects).

    The default provider when it speaks ``fmt``, else the first provider of the providers file
    that does.

    Raises:
        InvalidRequest: no provider speaks ``fmt`` (HTTP 400, ``code="unsupported_format"``).
    """
    default = providers["default"]
    if default.speaks(fmt):
        return default
    for provider in providers.values():
        if provider.speaks(fmt):
            return provider
    require_format(default, fmt)  # raises with the explanation
    return default


def require_format(provider: ProviderConfig, fmt: str) -> None:
    """Refuse a route the selected provider does not speak.

    Raises:
        InvalidRequest: ``fmt`` is not in ``provider.formats`` (HTTP 400,
            ``code="unsupported_format"``).
    """
    if not provider.speaks(fmt):
        raise InvalidRequest(
            f"provider '{provider.name}' does not accept the '{fmt}' format (it speaks: "
            f"{', '.join(provider.formats) or 'nothing'}); pick another provider with "
            "'model: \"<provider>/<model>\"' or set 'formats' in the providers file",
            code="unsupported_format",
        )


@contextlib.asynccontextmanager
async def upstream_errors(provider: ProviderConfig) -> AsyncIterator[None]:
    """Map transport failures.

    Timeouts → 504 :class:`UpstreamTimeout`, anything else → 502 :class:`UpstreamUnavailable`: a
    body that broke off after the status line says so, a failed connection says unreachable (HTTP
    error statuses are not errors here: they are forwarded).
    """
    try:
        yield
    except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
        raise UpstreamTimeout(f"upstream provider '{provider.name}' timed out") from exc
    except (aiohttp.ClientError, OSError) as exc:
        broken = isinstance(exc, aiohttp.ClientPayloadError)  # it answered, then the body broke
        what = "sent an incomplete or malformed response body" if broken else "is unreachable"
        raise UpstreamUnavailable(
            f"upstream provider '{provider.name}' {what}: {type(exc).__name__}"
        ) from exc


class UpstreamReply:
    """A fully read upstream answer: status, all response headers, body bytes."""

    def __init__(self, status: int, headers: CIMultiDictProxy[str], body: bytes):
        """Hold ``status``, ``headers`` and ``body`` as read."""
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def media_type(self) -> str:
        """The answer's content type (``application/json`` when absent)."""
        return self.headers.get("content-type", "application/json")


async def post(
    session: aiohttp.ClientSession,
    provider: ProviderConfig,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
) -> UpstreamReply:
    """POST ``body`` to ``{base_url}{path}`` with ``headers`` and read the whole response.

    Raises:
        UpstreamTimeout, UpstreamUnavailable: transport failure (HTTP errors are returned).
    """
    started = time.perf_counter()
    async with (
        upstream_errors(provider),
        session.post(provider.base_url + path, data=body, headers=headers) as resp,
    ):
        note_upstream(time.perf_counter() - started)
        return UpstreamReply(resp.status, resp.headers, await resp.read())


async def open_stream(
    session: aiohttp.ClientSession,
    provider: ProviderConfig,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    method: str = "POST",
) -> aiohttp.ClientResponse:
    """Send the request (POST unless ``method`` says otherwise); return it with its body unread.

    The caller must ``release()`` it (normal end) or ``close()`` it (abort, e.g. the client went
    away).

    Raises:
        UpstreamTimeout, UpstreamUnavailable: transport failure before the status line.
    """
    started = time.perf_counter()
    async with upstream_errors(provider):
        resp = await session.request(
            method, provider.base_url + path, data=body or None, headers=headers
        )
    note_upstream(time.perf_counter() - started)
    return resp


async def iter_stream(
    resp: aiohttp.ClientResponse, provider: ProviderConfig
) -> AsyncIterator[bytes]:
    """The body chunks of a streaming response as they arrive (transport errors mapped)."""
    async with upstream_errors(provider):
        async for chunk in resp.content.iter_any():
            yield chunk


async def get_json(
    session: aiohttp.ClientSession, provider: ProviderConfig, path: str
) -> UpstreamReply:
    """GET ``{base_url}{path}`` with the provider's key.

    Raises:
        UpstreamTimeout, UpstreamUnavailable: transport failure.
    """
    headers = {"accept-encoding": "identity", **credentials(provider)}
    started = time.perf_counter()
    async with (
        upstream_errors(provider),
        session.get(provider.base_url + path, headers=headers) as resp,
    ):
        note_upstream(time.perf_counter() - started)
        return UpstreamReply(resp.status, resp.headers, await resp.read())
