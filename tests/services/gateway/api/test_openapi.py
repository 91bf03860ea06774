"""The served OpenAPI document describes exactly the /api routes of the app, and vice versa."""

from __future__ import annotations

import httpx
from starlette.routing import Route

from services.gateway.api.openapi import OPERATIONS
from tests.harness import GatewayHarness


def _app_operations(gw: GatewayHarness) -> set[tuple[str, str]]:
    ops = set()
    for route in gw.app.routes:
        if isinstance(route, Route) and route.path.startswith("/api"):
            for method in route.methods or ():
                if method != "HEAD":
                    ops.add((route.path, method.lower()))
    return ops


def test_every_api_route_is_documented_and_vice_versa(gateway) -> None:
    doc = httpx.get(f"{gateway.base_url}/api/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    documented = {(path, method) for path, item in doc["paths"].items() for method in item}
    assert documented == _app_operations(gateway)
    assert documented == {(op.path, op.method) for op in OPERATIONS}


def test_every_schema_reference_resolves(gateway) -> None:
    doc = httpx.get(f"{gateway.base_url}/api/openapi.json").json()
    schemas = doc["components"]["schemas"]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.removeprefix("#/components/schemas/") in schemas, ref
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert op["responses"], (path, method)
            assert op.get("summary"), (path, method)
