"""The outbound (SSRF) policy: table-driven URL and address checks, and the connect-time guard
of the httpx and aiohttp clients against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import ipaddress

import aiohttp
import httpx
import pytest

from shared.errors import ConfigurationError
from shared.outbound_guard import (
    GuardedResolver,
    OutboundBlocked,
    guarded_http_client,
    vetted_addresses,
)
from shared.outbound_policy import blocked_reason, check_outbound_settings, validate_outbound_url
from shared.settings import load_providers, load_settings
from tests.fakes.upstream import FakeUpstream

REFUSED_URLS = [
    # link-local and the metadata services of AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack
    "http://169.254.169.254/latest/meta-data",
    "http://169.254.10.1/v1",
    "http://[fe80::1]/v1",
    "http://[fe80::1%25eth0]/v1",
    # every IPv6 form embedding IPv4
    "http://[::ffff:169.254.169.254]/v1",  # IPv4-mapped
    "http://[::ffff:127.0.0.1]/v1",  # mapped, even loopback: use 127.0.0.1
    "http://[::169.254.169.254]/v1",  # IPv4-compatible
    "http://[::a9fe:a9fe]/v1",  # the same, in hex
    "http://[::ffff:0:a9fe:a9fe]/v1",  # IPv4-translated (SIIT)
    "http://[64:ff9b::a9fe:a9fe]/v1",  # NAT64
    "http://[64:ff9b::169.254.169.254]/v1",
    "http://[64:ff9b:1::a9fe:a9fe]/v1",  # NAT64 local-use
    "http://[2002:a9fe:a9fe::1]/v1",  # 6to4
    "http://[2001:0:4136:e378:8000:63bf:5601:5601]/v1",  # Teredo
    "http://[2001:db8::5efe:a9fe:a9fe]/v1",  # ISATAP
    # legacy IPv4 spellings of the metadata address
    "http://2852039166/v1",
    "http://0xA9.0xFE.0xA9.0xFE/v1",
    "http://0251.0376.0251.0376/v1",
    "http://169.254.43518/v1",
    # metadata addresses outside link-local, and names
    "http://168.63.129.16/machine",  # Azure wire server
    "http://100.100.100.200/latest",  # Alibaba Cloud
    "http://192.0.0.192/latest",  # Oracle Cloud classic
    "http://[fd00:ec2::254]/latest",  # AWS IMDS over IPv6
    "http://metadata.google.internal/computeMetadata/v1",
    "http://METADATA.google.internal./v1",
    "http://metadata.goog/v1",
    "http://metadata/v1",
    "http://instance-data/latest",
    "http://instance-data.ec2.internal/latest",
    "http://metadata.tencentyun.com/latest",
    # unspecified, broadcast, multicast
    "http://0.0.0.0:8080/v1",
    "http://[::]:8080/v1",
    "http://255.255.255.255/v1",
    "http://224.0.0.1/v1",
    "http://[ff02::1]/v1",
    # malformed or unsafe URLs
    "http://user:pass@example.com/v1",
    "http://token@example.com/v1",
    "https://example.com/v1?api_key=x",
    "https://example.com/v1#frag",
    "ftp://example.com/v1",
    "file:///etc/passwd",
    "example.com/v1",
    "http:///v1",
    "http://example.com:99999/v1",
    "",
]

ALLOWED_URLS = [
    "http://127.0.0.1:8080/v1",  # loopback: self-hosted servers (documented policy)
    "http://127.5.5.5/v1",
    "http://localhost:11434/v1/",
    "http://[::1]:8080/v1",
    "http://10.0.0.5/v1",  # private ranges: self-hosted servers
    "http://172.16.3.4/v1",
    "http://192.168.1.20:8000",
    "http://100.64.1.1/v1",  # carrier-grade NAT (not Alibaba's metadata address)
    "http://[fd12:3456::1]/v1",  # unique local
    "https://api.openai.com/v1",
    "http://[2001:db8::1]/v1",  # documentation prefix, not Teredo
    "http://[2606:4700::1111]/v1",
    "HTTPS://Embeddings.Example.com/v1",
    "http://metadata-proxy.example.com/v1",  # only exact metadata names are refused
]


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_url_refused(url: str) -> None:
    with pytest.raises(ConfigurationError):
        validate_outbound_url(url)


@pytest.mark.parametrize("url", ALLOWED_URLS)
def test_url_allowed(url: str) -> None:
    assert validate_outbound_url(url) == url.strip().rstrip("/")


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("169.254.169.254", True),
        ("168.63.129.16", True),
        ("100.100.100.200", True),
        ("fe80::abcd", True),
        ("::ffff:10.0.0.1", True),
        ("2002::1", True),
        ("64:ff9b::1.2.3.4", True),
        ("::", True),
        ("0.0.0.0", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("10.1.2.3", False),
        ("8.8.8.8", False),
        ("2001:4860:4860::8888", False),
    ],
)
def test_address_table(address: str, blocked: bool) -> None:
    assert (blocked_reason(ipaddress.ip_address(address)) is not None) is blocked


def _resolver(table: dict[str, list[str]]):
    """A DNS stand-in: the guard's resolver is a parameter (this machine has no DNS)."""

    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


DNS = {
    "rebind.test": ["169.254.169.254"],
    "mixed.test": ["127.0.0.1", "169.254.169.254"],
    "mapped.test": ["::ffff:169.254.169.254"],
    "azure.test": ["168.63.129.16"],
    "nat64.test": ["64:ff9b::a9fe:a9fe"],
    "fake.test": ["127.0.0.1"],
}


@pytest.mark.parametrize(
    "host", ["rebind.test", "mixed.test", "mapped.test", "azure.test", "nat64.test"]
)
async def test_names_resolving_to_blocked_addresses_are_refused(host: str) -> None:
    with pytest.raises(OutboundBlocked):
        await vetted_addresses(host, 80, _resolver(DNS))


async def test_httpx_guard_connects_to_vetted_addresses_only(upstream: FakeUpstream) -> None:
    port = int(upstream.base_url.split(":")[2].split("/")[0])
    async with guarded_http_client(timeout=httpx.Timeout(10.0), resolve=_resolver(DNS)) as http:
        ok = await http.get(f"http://fake.test:{port}/v1/models")
        assert ok.status_code == 200  # the name resolved by the guard, connected to 127.0.0.1
        assert (await http.get(f"http://127.0.0.1:{port}/v1/models")).status_code == 200
        for host in ("rebind.test", "mixed.test", "169.254.169.254", "[::ffff:7f00:1]", "metadata"):
            with pytest.raises(httpx.ConnectError, match="refused"):
                await http.get(f"http://{host}:{port}/v1/models")


async def test_aiohttp_guard_refuses_blocked_resolutions(upstream: FakeUpstream) -> None:
    port = int(upstream.base_url.split(":")[2].split("/")[0])
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(_resolver(DNS)))
    async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:
        async with session.get(f"http://fake.test:{port}/v1/models") as resp:
            assert resp.status == 200
        for host in ("rebind.test", "mixed.test", "nat64.test", "instance-data"):
            with pytest.raises(aiohttp.ClientConnectorError):
                async with session.get(f"http://{host}:{port}/v1/models"):
                    pass


async def test_system_resolver_path_allows_localhost(upstream: FakeUpstream) -> None:
    port = int(upstream.base_url.split(":")[2].split("/")[0])
    async with guarded_http_client(timeout=httpx.Timeout(10.0)) as http:
        assert (await http.get(f"http://localhost:{port}/v1/models")).status_code == 200


def test_provider_base_urls_are_checked() -> None:
    settings = load_settings({}, upstream_base_url="http://[::ffff:169.254.169.254]/v1")
    with pytest.raises(ConfigurationError):
        load_providers(settings, {})
    assert load_providers(load_settings({}, upstream_base_url="http://127.0.0.1:9/v1"), {})


@pytest.mark.parametrize(
    "overrides",
    [
        {"embedding_base_url": "http://[64:ff9b::a9fe:a9fe]/v1"},
        {"embedding_base_url": "http://user:pw@example.com/v1"},
        {"upstream_base_url": "http://168.63.129.16/v1"},
        {"qdrant_url": "http://instance-data:6333"},
    ],
)
def test_settings_with_blocked_urls_are_refused(overrides: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        check_outbound_settings(load_settings({}, **overrides))


def test_settings_with_local_urls_pass() -> None:
    check_outbound_settings(
        load_settings(
            {},
            embedding_base_url="http://127.0.0.1:9/v1",
            upstream_base_url="http://localhost:8/v1",
            qdrant_url="http://10.0.0.7:6333",
            redis_url="redis://127.0.0.1:6379/0",
        )
    )
