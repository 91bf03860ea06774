"""Fixtures for the management API tests: a live gateway with an admin token and two keys."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.harness import GatewayHarness

ADMIN_TOKEN = "admin-token-for-tests"


@dataclass
class Tenant:
    """A client key: its id (the owner id) and an HTTP client sending it as bearer."""

    key_id: str
    secret: str
    http: httpx.Client


@dataclass
class Api:
    gateway: GatewayHarness
    admin: httpx.Client
    a: Tenant
    b: Tenant
    anonymous: httpx.Client


def client(base_url: str, token: str | None) -> httpx.Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=60)


@pytest.fixture
def api(gateway_factory) -> Iterator[Api]:
    gw: GatewayHarness = gateway_factory(admin_token=ADMIN_TOKEN)
    tenants = []
    for name in ("a", "b"):
        key_id, secret = gw.create_key(name)
        tenants.append(Tenant(key_id, secret, client(gw.base_url, secret)))
    result = Api(
        gateway=gw,
        admin=client(gw.base_url, ADMIN_TOKEN),
        a=tenants[0],
        b=tenants[1],
        anonymous=client(gw.base_url, None),
    )
    yield result
    for http in (result.admin, result.a.http, result.b.http, result.anonymous):
        http.close()
