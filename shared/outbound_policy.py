"""Outbound request policy: which URLs and addresses the server may call (SSRF defence).

Operators, and the admin through the settings API, configure URLs the server calls (embedding
endpoint, LLM providers, rerank endpoints), so every such URL is validated like any server-side
request target (OWASP "Server-Side Request Forgery Prevention Cheat Sheet"), in two places:

1. :func:`validate_outbound_url` when the URL is configured: http(s) only, no credentials,
   query or fragment, and a host that is not a blocked name or blocked literal address.
2. :func:`blocked_reason` on every address a host name resolves to, at connect time
   (:mod:`shared.outbound_guard`), so a name that resolves to a metadata or link-local
   address — or is re-pointed there later (DNS rebinding) — is refused too.

Blocked addresses (see ``docs/ARCHITECTURE.md``, "Outbound requests"):

- link-local: ``169.254.0.0/16`` (RFC 3927; the AWS, GCP, Azure, Oracle, DigitalOcean and
  OpenStack metadata service is ``169.254.169.254``), ``fe80::/10`` (RFC 4291);
- cloud metadata outside those ranges: ``168.63.129.16`` (Azure wire server), ``100.100.100.200``
  (Alibaba Cloud), ``192.0.0.192`` (Oracle Cloud classic), ``fd00:ec2::254`` (AWS IMDS, IPv6);
- every IPv6 form that embeds an IPv4 address, whatever that address is: IPv4-mapped
  ``::ffff:0:0/96`` and IPv4-translated ``::ffff:0:0:0/96`` (RFC 4291, RFC 2765),
  IPv4-compatible ``::/96`` (RFC 4291 §2.5.5.1, deprecated; ``::1`` stays loopback), NAT64
  ``64:ff9b::/96`` (RFC 6052) and ``64:ff9b:1::/48`` (RFC 8215), 6to4 ``2002::/16`` (RFC 3056),
  Teredo ``2001::/32`` (RFC 4380) and ISATAP interface ids ``…:0:5efe:a.b.c.d`` (RFC 5214):
  a server reaches IPv4 services through their IPv4 address;
- unspecified (``0.0.0.0``, ``::``), broadcast ``255.255.255.255`` and multicast addresses.

Blocked names: ``metadata.google.internal``, ``metadata.goog``, ``metadata``, ``instance-data``
and anything under ``.ec2.internal`` with that first label, ``metadata.tencentyun.com``,
``metadata.packet.net``; names are compared lower-cased without a trailing dot.

Allowed on purpose: loopback (``127.0.0.0/8``, ``::1``, ``localhost``) and private ranges
(``10/8``, ``172.16/12``, ``192.168/16``, ``fc00::/7`` other than the AWS address): self-hosted
embedding, rerank and LLM servers live there. Every function here is pure.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from shared.errors import ConfigurationError

__all__ = [
    "METADATA_HOSTS",
    "METADATA_IPS",
    "IpAddress",
    "blocked_host_reason",
    "blocked_reason",
    "check_outbound_settings",
    "literal_ip",
    "validate_outbound_url",
]

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Host names of cloud instance-metadata services (lower case, no trailing dot).
METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",  # GCP
        "metadata.goog",  # GCP
        "metadata",  # GCP, OpenStack, Azure Stack short name
        "instance-data",  # AWS
        "instance-data.ec2.internal",  # AWS
        "metadata.tencentyun.com",  # Tencent Cloud
        "metadata.packet.net",  # Equinix Metal
    }
)
#: Metadata addresses outside the link-local ranges.
METADATA_IPS: frozenset[IpAddress] = frozenset(
    {
        ipaddress.ip_address("168.63.129.16"),  # Azure wire server
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
        ipaddress.ip_address("192.0.0.192"),  # Oracle Cloud (classic)
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
    }
)
_LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
#: IPv6 prefixes whose addresses carry an IPv4 address, with the defining RFC.
_EMBEDS_IPV4: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), name)
    for net, name in (
        ("::ffff:0:0/96", "IPv4-mapped"),
        ("::ffff:0:0:0/96", "IPv4-translated"),
        ("::/96", "IPv4-compatible"),
        ("64:ff9b::/96", "NAT64"),
        ("64:ff9b:1::/48", "NAT64 local-use"),
        ("2002::/16", "6to4"),
        ("2001::/32", "Teredo"),
    )
)
_BROADCAST = ipaddress.IPv4Address("255.255.255.255")
#: Largest TCP port number (RFC 793).
MAX_PORT = 65535
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)  # RFC 5214 §6.1 interface identifier, high 32 bits


def literal_ip(host: str) -> IpAddress | None:
    """The IP address ``host`` spells, or None for a name.

    Also accepts the legacy IPv4 forms that resolvers accept (``2852039166``,
    ``0xA9.0xFE.0xA9.0xFE``, ``0251.0376.0251.0376``, via :func:`socket.inet_aton`) and an
    IPv6 zone id (``fe80::1%eth0``). Never raises.
    """
    host = host.split("%", 1)[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefx." for c in host.lower()) and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _ipv6_reason(ip: ipaddress.IPv6Address) -> str | None:
    if ip in (ipaddress.IPv6Address("::1"),):
        return None
    if ip == ipaddress.IPv6Address("::"):
        return "an unspecified address"
    for net, name in _EMBEDS_IPV4:
        if ip in net:
            return f"an IPv6 address embedding IPv4 ({name}, {net})"
    if (int(ip) >> 32) & 0xFFFFFFFF in _ISATAP_IDS:
        return "an IPv6 address embedding IPv4 (ISATAP)"
    return None


def blocked_reason(ip: IpAddress) -> str | None:
    """Why the server must not connect to ``ip`` (a short phrase), or None when allowed.

    See the module docstring for the list; loopback and private addresses are allowed.
    """
    if ip in METADATA_IPS:
        return "a cloud metadata address"
    if any(ip.version == net.version and ip in net for net in _LINK_LOCAL):
        return "a link-local address (cloud metadata lives there)"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, ipaddress.IPv6Address):
        return _ipv6_reason(ip)
    if ip.is_unspecified or ip == _BROADCAST:
        return "an unspecified or broadcast address"
    return None


def blocked_host_reason(host: str) -> str | None:
    """Why the host is refused before any resolution, or None.

    ``host`` is a name or a literal address, as in a URL, brackets removed. Names are not
    resolved here.
    """
    name = host.strip().rstrip(".").lower()
    if not name:
        return "no host"
    if name in METADATA_HOSTS:
        return "a cloud metadata host name"
    if name.startswith("instance-data.") and name.endswith(".internal"):
        return "a cloud metadata host name"
    ip = literal_ip(name)
    return blocked_reason(ip) if ip is not None else None


def validate_outbound_url(url: str) -> str:
    """Check a configured base URL and return it stripped, without a trailing ``/``.

    Allowed: ``http``/``https`` URLs with a host, optional port and path, e.g.
    ``http://127.0.0.1:8080/v1`` or ``https://api.openai.com/v1``.

    Raises:
        ConfigurationError: another scheme; userinfo (``user:pass@``) in the URL; a query string
            or fragment; no host; a bad port; a blocked host name or literal address (see
            :func:`blocked_host_reason`). Names are checked again when resolved, at connect
            time (:mod:`shared.outbound_guard`).
    """
    raw = url.strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"invalid endpoint URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigurationError("endpoint URL must use http or https")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise ConfigurationError("endpoint URL must not contain credentials; use the API key")
    if "?" in raw or "#" in raw:
        raise ConfigurationError("endpoint URL must not contain a query string or fragment")
    host = parts.hostname or ""
    if not host.strip().rstrip("."):
        raise ConfigurationError("endpoint URL has no host")
    if port is not None and not 0 < port <= MAX_PORT:
        raise ConfigurationError("endpoint URL has an invalid port")
    reason = blocked_host_reason(host)
    if reason is not None:
        raise ConfigurationError(f"endpoint URL points at {reason}")
    return raw.rstrip("/")


def check_outbound_settings(settings: object) -> None:
    """Validate the outbound URLs of a settings object.

    A runtime-settings check, so a refused URL is a 400 before it is stored, should a URL field
    become editable at run time.

    ``embedding_base_url`` gets the full :func:`validate_outbound_url`; every other non-empty
    ``*_url`` field except ``redis_url`` (upstream, Qdrant, rerank endpoints) gets the host
    check (:func:`blocked_host_reason`), their other URL rules being the operator's.

    Raises:
        ConfigurationError: a URL is refused.
    """
    fields: tuple[str, ...] = getattr(settings, "__struct_fields__", ())
    for name in fields:
        value = getattr(settings, name, None)
        if not name.endswith("_url") or name == "redis_url" or not isinstance(value, str):
            continue
        if not value:
            continue
        if name == "embedding_base_url":
            validate_outbound_url(value)
            continue
        reason = blocked_host_reason(urlsplit(value).hostname or "")
        if reason is not None and reason != "no host":
            raise ConfigurationError(f"{name} points at {reason}")
