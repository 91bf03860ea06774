"""Connect-time enforcement of :mod:`shared.outbound_policy` for the HTTP clients.

Checking a URL's host when it is configured is not enough: a host name may resolve to a blocked
address, or be re-pointed there after the check (DNS rebinding). So the clients that call
configured URLs resolve each host themselves, check every resolved address with
:func:`~shared.outbound_policy.blocked_reason`, and connect to a vetted address — never to a
second, unchecked resolution of the name:

- httpx (embedding endpoint, LLM extractor, rerank): :class:`GuardedNetworkBackend`, an httpcore
  network backend, installed by :func:`guarded_transport` / :func:`guarded_http_client`. TLS
  still verifies the certificate against the host name (httpcore passes the origin host as SNI
  and for verification, independently of the address connected to).
- aiohttp (the upstream proxy session): :class:`GuardedResolver`, an aiohttp resolver; aiohttp
  connects to the address it returns.

A host is refused when ANY of its addresses is blocked (a name mixing allowed and blocked
addresses is not a real service). Refusals raise the client's own connection error
(``httpcore.ConnectError`` → ``httpx.ConnectError``; ``OSError`` → aiohttp's
``ClientConnectorError``), so callers map them like an unreachable endpoint.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpcore
import httpx
from aiohttp.abc import AbstractResolver, ResolveResult

from shared.outbound_policy import blocked_host_reason, blocked_reason, literal_ip

__all__ = [
    "GuardedNetworkBackend",
    "GuardedResolver",
    "OutboundBlocked",
    "Resolve",
    "guarded_http_client",
    "guarded_transport",
    "vetted_addresses",
]

#: ``(host, port) -> [ip, ...]``: the resolver used by the guard (``getaddrinfo`` by default).
Resolve = Callable[[str, int], Awaitable[list[str]]]


class OutboundBlocked(OSError):
    """A connection refused by the outbound policy; the message names the host and the reason."""


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address of ``host`` from the system resolver (``getaddrinfo``), in its order.

    Raises:
        OSError (``socket.gaierror``): the name does not resolve.
    """
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = str(sockaddr[0])
        if ip not in seen:
            seen.append(ip)
    return seen


async def vetted_addresses(host: str, port: int, resolve: Resolve = system_resolve) -> list[str]:
    """The addresses to connect to for ``host`` after the policy check, in resolver order.

    A literal address is checked as it is; a name is checked, then resolved, and every
    resolved address is checked.

    Raises:
        OutboundBlocked: the name, the literal, or any resolved address is blocked, or the name
            resolved to nothing.
        OSError: the name does not resolve.
    """
    reason = blocked_host_reason(host)
    if reason is not None:
        raise OutboundBlocked(f"outbound connection to {host!r} refused: {reason}")
    ip = literal_ip(host)
    if ip is not None:
        return [str(ip)]
    addresses = await resolve(host, port)
    if not addresses:
        raise OutboundBlocked(f"outbound connection to {host!r} refused: no address")
    for address in addresses:
        parsed = literal_ip(address)
        why = "not an IP address" if parsed is None else blocked_reason(parsed)
        if why is not None:
            raise OutboundBlocked(
                f"outbound connection to {host!r} refused: it resolves to {address} ({why})"
            )
    return addresses


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """An httpcore backend that connects only to vetted addresses (see module docstring).

    Args:
        inner: the backend that opens sockets (default: httpcore's ``AutoBackend``).
        resolve: the name resolver (default: the system's ``getaddrinfo``).
    """

    def __init__(
        self,
        inner: httpcore.AsyncNetworkBackend | None = None,
        resolve: Resolve = system_resolve,
    ) -> None:
        self._inner = inner or httpcore.AnyIOBackend()
        self._resolve = resolve

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve and vet ``host``, then connect to its first reachable address.

        Raises:
            httpcore.ConnectError: the policy refused the host, or no address answered.
        """
        try:
            addresses = await vetted_addresses(host, port, self._resolve)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are never an outbound target here.

        Raises:
            httpcore.ConnectError: always.
        """
        raise httpcore.ConnectError("outbound connections over unix sockets are refused")

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` (delegated to the inner backend)."""
        await self._inner.sleep(seconds)


def guarded_transport(resolve: Resolve = system_resolve, **kwargs: Any) -> httpx.AsyncHTTPTransport:
    """An ``httpx.AsyncHTTPTransport`` whose connections go through a guarded backend.

    ``kwargs`` as for the transport; the backend is a :class:`GuardedNetworkBackend`.

    httpx 0.28 does not take a network backend; it is set on the transport's httpcore pool,
    which passes it to every connection it creates (httpcore 1.x ``AsyncConnectionPool``).
    """
    transport = httpx.AsyncHTTPTransport(**kwargs)
    pool: Any = transport._pool
    pool._network_backend = GuardedNetworkBackend(pool._network_backend, resolve)
    return transport


def guarded_http_client(
    *, timeout: httpx.Timeout, resolve: Resolve = system_resolve
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for calls to configured URLs, guarded at connect time.

    Proxy environment variables are ignored (a proxy would do the resolving instead).
    """
    return httpx.AsyncClient(timeout=timeout, transport=guarded_transport(resolve), trust_env=False)


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that applies the outbound policy.

    ``resolve`` (the system resolver by default), then the policy check on every address
    (:func:`vetted_addresses`).

    aiohttp does not resolve literal addresses; those are checked when the URL is configured
    (:func:`~shared.outbound_policy.validate_outbound_url` or
    :func:`~shared.outbound_policy.blocked_host_reason`).
    """

    def __init__(self, resolve: Resolve = system_resolve) -> None:
        self._resolve = resolve

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The vetted addresses of ``host`` in aiohttp's shape.

        Restricted to ``family`` unless it is ``AF_UNSPEC``.

        Raises:
            OutboundBlocked: the name or a resolved address is blocked, or none is left.
            OSError: the name does not resolve.
        """
        results: list[ResolveResult] = []
        for address in await vetted_addresses(host, port, self._resolve):
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            fam = socket.AF_INET if isinstance(ip, ipaddress.IPv4Address) else socket.AF_INET6
            if family in (socket.AF_UNSPEC, fam):
                results.append(
                    ResolveResult(
                        hostname=host,
                        host=address,
                        port=port,
                        family=fam,
                        proto=0,
                        flags=socket.AI_NUMERICHOST,
                    )
                )
        if not results:
            raise OutboundBlocked(f"outbound connection to {host!r}: no address of its family")
        return results

    async def close(self) -> None:
        """Nothing to release."""
