"""Header fidelity between the client and the upstream provider, both ways.

Client → upstream: every header is forwarded except hop-by-hop ones (RFC 9110 §7.6.1:
``Connection`` and the names it lists, ``Keep-Alive``, ``Proxy-*``, ``TE``, ``Trailer``,
``Transfer-Encoding``, ``Upgrade``), the client's credentials (``Authorization``, ``x-api-key``,
``api-key``: replaced by the provider's own key), cookies, ``Host``/``Content-Length`` (set for
the new connection and body), ``Expect``, ``Content-Encoding`` (bodies are read uncoded,
:mod:`services.gateway.body`), the gateway's own ``x-mnemogate-*``/``x-omniroute-*`` headers and
the names in ``Settings.strip_headers``. ``Accept-Encoding`` becomes ``identity`` so
the bytes the gateway reads (to learn from the answer) are the bytes it relays.

Upstream → client: every header is passed back (``retry-after``, ``x-ratelimit-*``,
``request-id``, ``openai-processing-ms``, ``anthropic-ratelimit-*``, ...) except hop-by-hop ones,
``Content-Length`` (recomputed), ``Date``/``Server`` (the gateway's HTTP server sets its own),
``Set-Cookie`` (a cookie of the provider's session with the gateway, not the client's),
``x-mnemogate-*``/``x-omniroute-*`` and ``Settings.strip_headers``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from multidict import CIMultiDict

from shared.settings import ProviderConfig

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
REQUEST_DROPPED = frozenset(
    {
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
        "expect",
        "authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "cookie2",
    }
)
RESPONSE_DROPPED = frozenset({"content-length", "date", "server", "set-cookie", "set-cookie2"})
PRIVATE_PREFIXES = ("x-mnemogate-", "x-omniroute-")


@dataclass(frozen=True)
class HeaderPolicy:
    """Extra names (lower case) and name prefixes to strip both ways.

    From ``Settings.strip_headers`` (comma-separated; ``x-foo-*`` is a prefix).
    """

    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, spec: str) -> HeaderPolicy:
        """Build from the setting's text (blank entries ignored)."""
        items = [item.strip().lower() for item in spec.split(",") if item.strip()]
        return cls(
            names=frozenset(i for i in items if not i.endswith("*")),
            prefixes=tuple(i[:-1] for i in items if i.endswith("*")),
        )

    def strips(self, name: str) -> bool:
        """True when ``name`` (lower case) is one of the configured extra names."""
        return name in self.names or name.startswith(self.prefixes or ("\0",))


@functools.lru_cache(maxsize=8)
def header_policy(spec: str) -> HeaderPolicy:
    """:meth:`HeaderPolicy.parse` of ``spec``, cached (the setting rarely changes)."""
    return HeaderPolicy.parse(spec)


def header_map(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers as ``{name: first value}``, both decoded as Latin-1.

    ``raw``: the ASGI scope's ``headers`` (lower-case names). The first value of a repeated name
    wins, as with Starlette's ``Headers.get``; built once per request so that the end-user,
    switch and session look-ups are dict hits instead of scans of the header list.
    """
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}


def _connection_tokens(pairs: Iterable[tuple[str, str]]) -> set[str]:
    tokens: set[str] = set()
    for name, value in pairs:
        if name.lower() == "connection":
            tokens.update(t.strip().lower() for t in value.split(",") if t.strip())
    return tokens


def _dropped(name: str, fixed: frozenset[str], listed: set[str], policy: HeaderPolicy) -> bool:
    return (
        name in HOP_BY_HOP
        or name in fixed
        or name in listed
        or name.startswith(PRIVATE_PREFIXES)
        or policy.strips(name)
    )


def credentials(provider: ProviderConfig) -> dict[str, str]:
    """The provider's own key in the header its ``auth`` style names (none without a key)."""
    if not provider.api_key:
        return {}
    if provider.auth == "x-api-key":
        return {"x-api-key": provider.api_key}
    return {"authorization": f"Bearer {provider.api_key}"}


def upstream_request_headers(
    client: Iterable[tuple[str, str]], provider: ProviderConfig, policy: HeaderPolicy
) -> CIMultiDict[str]:
    """Headers for the upstream request from the client's ``(name, value)`` pairs (duplicates kept).

    Plus ``accept-encoding: identity``, a JSON content type if the client sent none, and the
    provider's credentials. Values are the client's bytes decoded as Latin-1 (as Starlette gives
    them); the upstream gets those very bytes (:func:`_as_sent`), and a value whose bytes are not
    UTF-8 is left out (aiohttp writes header values as UTF-8, so it could not be sent unchanged).
    """
    pairs = list(client)
    listed = _connection_tokens(pairs)
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in pairs:
        if _dropped(name.lower(), REQUEST_DROPPED, listed, policy):
            continue
        if value.isascii():
            out.add(name, value)
        elif (sent := _as_sent(value)) is not None:
            out.add(name, sent)
    out["accept-encoding"] = "identity"
    out.setdefault("content-type", "application/json")
    out.update(credentials(provider))
    return out


def _as_sent(value: str) -> str | None:
    """The string aiohttp writes as the bytes of ``value`` (their Latin-1 decoding), or None.

    aiohttp encodes header values as UTF-8, so bytes ``c3 a9`` (``é``) held as the two Latin-1
    characters ``Ã©`` would leave as four bytes; the client's bytes decoded as UTF-8 leave as
    themselves. None when they are not UTF-8 (aiohttp would send an empty value for them).
    """
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return None


def client_response_headers(
    upstream: Mapping[str, str], policy: HeaderPolicy
) -> list[tuple[bytes, bytes]]:
    """The upstream response headers to pass back as byte pairs (duplicates kept).

    ``upstream``: as aiohttp decodes them (UTF-8, undecodable bytes as surrogate escapes), so
    encoding them back the same way gives the client the upstream's very bytes.
    """
    pairs = list(upstream.items())
    listed = _connection_tokens(pairs)
    return [
        (name.lower().encode("utf-8", "surrogateescape"), value.encode("utf-8", "surrogateescape"))
        for name, value in pairs
        if not _dropped(name.lower(), RESPONSE_DROPPED, listed, policy)
    ]
