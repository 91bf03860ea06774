"""The switch precedence table: request > key > provider > global, for recall and learning
separately, and the request headers that set the request level."""

from __future__ import annotations

import itertools

import pytest

from shared.errors import InvalidRequest
from shared.memory_switches import (
    LEVELS,
    Switch,
    global_switch,
    provider_switch,
    request_switch,
    resolve_switches,
    switch_headers,
)
from shared.settings import load_settings

VALUES = (None, True, False)


def _expected(levels: list[bool | None]) -> tuple[bool, str]:
    """Reference rule: the first level (most specific first) that is set; default on/global."""
    for name, value in zip(LEVELS, levels, strict=True):
        if value is not None:
            return value, name
    return True, "global"


SWITCH_COMBINATIONS = [
    (recall, learn)
    for recall in itertools.product(VALUES, repeat=4)
    for learn in [(None, None, None, True), (False, None, True, False)]
] + [
    (recall, learn)
    for learn in itertools.product(VALUES, repeat=4)
    for recall in [(None, None, None, True)]
]


@pytest.mark.parametrize(("recall", "learn"), SWITCH_COMBINATIONS)
def test_most_specific_level_wins_for_each_switch(
    recall: tuple[bool | None, ...], learn: tuple[bool | None, ...]
) -> None:
    switches = [Switch(recall=r, learn=lv) for r, lv in zip(recall, learn, strict=True)]
    got = resolve_switches(*switches)
    assert (got.recall, got.recall_by) == _expected(list(recall))
    assert (got.learn, got.learn_by) == _expected(list(learn))


@pytest.mark.parametrize(
    ("level", "recall", "learn"),
    [(lvl, r, ln) for lvl in range(4) for r in (True, False) for ln in (True, False)],
)
def test_every_level_decides_alone(level: int, recall: bool, learn: bool) -> None:
    """Every level × recall/learn: set only at ``level`` above an opposite global."""
    switches = [Switch() for _ in LEVELS]
    switches[3] = Switch(recall=not recall, learn=not learn)
    switches[level] = Switch(recall=recall, learn=learn)
    got = resolve_switches(*switches)
    assert (got.recall, got.learn) == (recall, learn)
    assert got.recall_by == got.learn_by == LEVELS[level]


@pytest.mark.parametrize(
    ("headers", "recall", "learn"),
    [
        ({}, None, None),
        ({"x-mnemogate-no-memory": "1"}, False, False),
        ({"x-omniroute-no-memory": "true"}, False, False),
        ({"x-mnemogate-no-recall": "yes"}, False, None),
        ({"x-mnemogate-no-learn": "on"}, None, False),
        ({"x-mnemogate-no-memory": "1", "x-mnemogate-no-learn": "0"}, False, True),
        ({"x-mnemogate-no-memory": "0"}, True, True),
        ({"x-mnemogate-no-recall": "  "}, None, None),  # empty: absent
        ({"x-mnemogate-no-memory": " TRUE "}, False, False),
    ],
)
def test_request_headers(headers: dict[str, str], recall: bool | None, learn: bool | None) -> None:
    assert request_switch(headers) == Switch(recall=recall, learn=learn)


@pytest.mark.parametrize(
    "name", ["x-mnemogate-no-memory", "x-omniroute-no-memory", "x-mnemogate-no-recall"]
)
def test_an_unknown_switch_value_is_refused(name: str) -> None:
    # a privacy control must not fail open on a typo
    with pytest.raises(InvalidRequest, match=name) as refused:
        request_switch({name: "maybe"})
    assert refused.value.code == "invalid_header"


@pytest.mark.parametrize(
    ("memory", "recall", "learn"),
    [
        (None, None, None),
        ("off", False, False),
        ("recall", True, False),
        ("learn", False, True),
        ("both", True, True),
    ],
)
def test_provider_entry(memory, recall, learn) -> None:
    assert provider_switch(memory) == Switch(recall=recall, learn=learn)


def test_global_level_and_headers() -> None:
    assert global_switch(load_settings({}, memory_enabled=False)) == Switch(
        recall=False, learn=False
    )
    assert global_switch(load_settings({}, learn_enabled=False)) == Switch(recall=True, learn=False)
    got = resolve_switches(Switch(), Switch(learn=False), Switch(), Switch(recall=True, learn=True))
    assert switch_headers(got) == {
        "x-mnemogate-memory-recall": "on",
        "x-mnemogate-memory-recall-by": "global",
        "x-mnemogate-memory-learn": "off",
        "x-mnemogate-memory-learn-by": "key",
    }


def test_two_switch_headers_that_disagree_are_refused() -> None:
    # a proxy may add one the client also sent: taking either would be a guess
    headers = {"x-mnemogate-no-memory": "0", "x-omniroute-no-memory": "1"}
    with pytest.raises(InvalidRequest) as refused:
        request_switch(headers)
    assert refused.value.code == "duplicate_header"
    agree = {"x-mnemogate-no-memory": "yes", "x-omniroute-no-memory": "1"}
    assert request_switch(agree) == Switch(recall=False, learn=False)
