"""End-user resolution: configured headers first, then body user / safety_identifier /
metadata.user_id; too long → 400, never cut."""

from __future__ import annotations

import pytest

from shared.end_user import body_candidates, header_names, resolve_end_user
from shared.errors import InvalidRequest
from shared.settings import load_settings

NAMES = header_names(load_settings({}))


def test_default_headers() -> None:
    assert NAMES == ("x-mnemogate-user", "x-openwebui-user-id")
    custom = load_settings({}, end_user_headers=" X-LibreChat-User-Id , ,x-mnemogate-user")
    assert header_names(custom) == ("x-librechat-user-id", "x-mnemogate-user")


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({}, {}, ""),
        ({"x-openwebui-user-id": "owui-1"}, {}, "owui-1"),
        ({"x-mnemogate-user": "a", "x-openwebui-user-id": "b"}, {"user": "c"}, "a"),
        ({"x-openwebui-user-id": " b "}, {"user": "c"}, "b"),
        ({}, {"user": "c", "safety_identifier": "d"}, "c"),
        ({}, {"safety_identifier": "d", "metadata": {"user_id": "e"}}, "d"),
        ({}, {"metadata": {"user_id": "e"}}, "e"),
        ({"x-mnemogate-user": "  "}, {"user": ""}, ""),
    ],
)
def test_first_source_set_wins(headers: dict[str, str], body: dict, expected: str) -> None:
    assert resolve_end_user(headers, body_candidates(body), NAMES, 256) == expected


def test_too_long_is_refused_never_cut() -> None:
    ok = "u" * 256
    assert resolve_end_user({"x-openwebui-user-id": ok}, [], NAMES, 256) == ok
    for headers, body in (({"x-openwebui-user-id": ok + "x"}, {}), ({}, {"user": ok + "y"})):
        with pytest.raises(InvalidRequest, match="limit is 256"):
            resolve_end_user(headers, body_candidates(body), NAMES, 256)


def test_non_string_body_field_is_refused() -> None:
    with pytest.raises(InvalidRequest):
        resolve_end_user({}, body_candidates({"metadata": {"user_id": 5}}), NAMES, 256)


@pytest.mark.parametrize("value", ["a\x00b", "a\tb", "ann\x1b[31m", "a\x7fb"])
def test_a_control_character_in_an_end_user_id_is_refused(value: str) -> None:
    for headers, body in (({"x-mnemogate-user": value}, {}), ({}, {"user": value})):
        with pytest.raises(InvalidRequest, match="control character"):
            resolve_end_user(headers, body_candidates(body), NAMES, 256)
    # what is printable stays an id, whatever its script
    assert resolve_end_user({}, [("user", "jürgen 李")], NAMES, 256) == "jürgen 李"
