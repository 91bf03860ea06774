"""The request's headers read once per request (services/gateway/headers.py header_map)."""

from __future__ import annotations

from starlette.datastructures import Headers

from services.gateway.headers import header_map

RAW = [
    (b"host", b"127.0.0.1"),
    (b"x-mnemogate-user", b"j\xc3\xbcrgen"),
    (b"x-mnemogate-no-memory", b"1"),
    (b"x-mnemogate-no-memory", b"0"),
    (b"x-mnemogate-session-id", b" s1 "),
    (b"authorization", b"Bearer mg-abc"),
]


def test_every_name_reads_as_starlettes_headers_get() -> None:
    starlette = Headers(raw=RAW)
    mapped = header_map(RAW)
    names = {name.decode() for name, _ in RAW} | {"x-absent"}
    for name in names:
        assert mapped.get(name) == starlette.get(name), name


def test_first_value_of_a_repeated_name_wins_and_bytes_stay_latin1() -> None:
    mapped = header_map(RAW)
    assert mapped["x-mnemogate-no-memory"] == "1"
    assert mapped["x-mnemogate-user"] == b"j\xc3\xbcrgen".decode("latin-1")
    assert mapped["x-mnemogate-session-id"] == " s1 "
