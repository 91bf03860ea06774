"""Any ``Authorization`` header value answers 401 (never 500) on every authenticated route.

A real gateway under uvicorn; requests are written on raw sockets so that header values can
hold any byte (HTTP clients refuse to send non-ASCII header values). The routes come from the
app itself, so routes added later are covered too. A property test over arbitrary header bytes,
plus a fixed table of the values that broke comparable systems.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Mount, Route

from tests.fakes.sockets import read_until
from tests.harness import GatewayHarness

ADMIN_TOKEN = "admin-tøken-for-auth-tests"
#: Routes that answer without a bearer token (health, the public schema, static pages, metrics).
PUBLIC = re.compile(r"^/(healthz|readyz|api/openapi\.json|metrics|ui)(/|$)")
#: Bytes RFC 9110 §5.5 forbids in a field value: the HTTP parser may refuse them with a 400.
FORBIDDEN_IN_FIELD = frozenset(range(0x00, 0x09)) | frozenset(range(0x0A, 0x20)) | {0x7F}
STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3}) ")


def _routes(gw: GatewayHarness) -> list[tuple[str, str]]:
    """(method, concrete path) for every route of the app; path parameters become ``x1``."""
    out: list[tuple[str, str]] = []
    for route in gw.app.routes:
        path = re.sub(r"\{[^}]+\}", "x1", getattr(route, "path", ""))
        if isinstance(route, Mount):
            out.append(("GET", path.rstrip("/") + "/"))
        elif isinstance(route, Route):
            for method in sorted(route.methods or {"POST"}):
                if method != "HEAD":
                    out.append((method, path))
    return out


def _status(
    port: int, method: str, path: str, header: bytes | None, name: bytes = b"Authorization"
) -> int:
    """Send one request with ``<name>: <header>`` (raw bytes) and return the status."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
    if header is not None:
        head += name + b": " + header + b"\r\n"
    head += (
        b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        b"Content-Length: 2\r\nConnection: close\r\n\r\n{}"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head)
        data = read_until(sock, b"\r\n")
    match = STATUS_LINE.match(data)
    assert match, f"no HTTP status line: {data[:200]!r}"
    return int(match.group(1))


def _check(gw: GatewayHarness, method: str, path: str, header: bytes) -> None:
    status = _status(gw.port, method, path, header)
    assert status != 500, (method, path, header)
    if PUBLIC.match(path):
        return
    if status == 400 and FORBIDDEN_IN_FIELD & set(header):
        return  # refused by the HTTP parser before the app saw it: not an auth outcome
    assert status == 401, (method, path, header, status)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, upstream_server) -> Iterator[GatewayHarness]:
    gw = GatewayHarness(
        {
            "db_path": str(tmp_path_factory.mktemp("auth") / "auth.db"),
            "upstream_base_url": upstream_server.base_url,
            "upstream_api_key": "sk-upstream-test",
            "admin_token": ADMIN_TOKEN,
            "embedding_source": "none",
        }
    ).start()
    yield gw
    gw.stop()


NASTY: list[bytes] = [
    b"Bearer \xff",  # C3: a non-ASCII byte after the scheme
    "Bearer é".encode(),
    "Bearer admin-tøken-for-auth-tests".encode("latin-1"),  # the admin token, wrong encoding
    "Bearer mg-ünïcødé".encode(),
    b"Bearer \x80\x81\xfe",
    b"bearer \xc3\x28",  # invalid UTF-8
    b"Bearer " + b"\xe2\x82\xac" * 300,
    b"Bearer",
    b"Bearer ",
    b"Basic \xff\xfe",
    b"\xff\xff \xff",
    b"Bearer a\tb",
    b"Bearer \x00",
    b"Bearer \x7f",
]


def test_every_route_answers_401_to_odd_bearer_bytes(live: GatewayHarness) -> None:
    routes = _routes(live)
    paths = {p for _m, p in routes}
    assert {"/v1/chat/completions", "/api/memory", "/mcp", "/api/settings"} <= paths
    for method, path in routes:
        for header in NASTY:
            _check(live, method, path, header)


def test_the_admin_token_in_utf8_bytes_is_accepted(live: GatewayHarness) -> None:
    good = b"Bearer " + ADMIN_TOKEN.encode("utf-8")
    assert _status(live.port, "GET", "/api/settings", good) == 200
    assert _status(live.port, "GET", "/api/settings", good[:-1] + b"\xff") == 401
    assert _status(live.port, "GET", "/api/settings", None) == 401


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    scheme=st.sampled_from([b"Bearer ", b"bearer ", b"BEARER  ", b"Basic ", b"", b"Bearer\t"]),
    token=st.binary(max_size=64).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    pick=st.integers(min_value=0, max_value=10_000),
)
def test_arbitrary_header_bytes_never_500(
    live: GatewayHarness, scheme: bytes, token: bytes, pick: int
) -> None:
    routes = _routes(live)
    method, path = routes[pick % len(routes)]
    _check(live, method, path, scheme + token)


def test_x_api_key_bytes_answer_401_on_every_route(live: GatewayHarness) -> None:
    for method, path in _routes(live):
        if PUBLIC.match(path):
            continue
        for value in (b"\xff", "mg-ünï".encode(), b"\xc3\x28", b"mg-" + b"\x80" * 40):
            assert _status(live.port, method, path, value, b"x-api-key") == 401, (path, value)
