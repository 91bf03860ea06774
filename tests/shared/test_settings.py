"""Settings: environment loading, validation, and the documented example file."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from shared.errors import ConfigurationError
from shared.settings import Settings, load_providers, load_settings, settings_fields

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "mnemogate.env.example"
_LINE = re.compile(r"^MNEMOGATE_([A-Z0-9_]+)=(.*)$")
_DOC = re.compile(r"^# .+ \[[^\]]+\] \(default: (.*)\)$")


def _documented() -> dict[str, tuple[str, str]]:
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    out: dict[str, tuple[str, str]] = {}
    for prev, line in itertools.pairwise(lines):
        match = _LINE.match(line)
        if match:
            doc = _DOC.match(prev)
            assert doc, f"MNEMOGATE_{match.group(1)} lacks a '# text [unit] (default: X)' comment"
            out[match.group(1).lower()] = (match.group(2), doc.group(1))
    return out


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def test_every_setting_is_documented_with_unit_and_default():
    documented = _documented()
    assert set(documented) == set(settings_fields())
    defaults = Settings()
    for name, (value, doc_default) in documented.items():
        expected = _render(getattr(defaults, name))
        assert value == expected, name
        assert doc_default == (expected or "empty"), name


def test_example_file_loads_as_settings():
    env = {f"MNEMOGATE_{k.upper()}": v for k, (v, _) in _documented().items()}
    assert load_settings(env) == Settings()


@pytest.mark.parametrize(
    ("env", "field", "expected"),
    [
        ({"MNEMOGATE_PORT": "9000"}, "port", 9000),
        ({"MNEMOGATE_MEMORY_ENABLED": "false"}, "memory_enabled", False),
        ({"MNEMOGATE_CAPTURE_TURNS": "0"}, "capture_turns", False),
        ({"MNEMOGATE_RRF_K": "60"}, "rrf_k", 60.0),
        (
            {"MNEMOGATE_INJECTION_STRATEGY": "leading_system"},
            "injection_strategy",
            "leading_system",
        ),
        ({"MNEMOGATE_REDIS_URL": ""}, "embedded", True),
        ({"MNEMOGATE_REDIS_URL": "redis://x"}, "embedded", False),
    ],
)
def test_environment_values_are_converted(env, field, expected):
    assert getattr(load_settings(env), field) == expected


@pytest.mark.parametrize(
    "env",
    [
        {"MNEMOGATE_PORT": "eighty"},
        {"MNEMOGATE_INJECTION_STRATEGY": "somewhere"},
        {"MNEMOGATE_RECALL_MAX_TOKENS": "9000"},
        {"MNEMOGATE_RECALL_RELATIVE_FLOOR": "2"},
        {"MNEMOGATE_MAX_BODY_BYTES": "0"},
        {"MNEMOGATE_LEARN_MAX_TURNS": "0"},
        {"MNEMOGATE_LEARN_MAX_TURNS": "101"},
    ],
)
def test_invalid_values_are_refused(env):
    with pytest.raises(ConfigurationError):
        load_settings(env)


@pytest.mark.parametrize("value", ["abc", "1.5", "", " 64", "0x10"])
def test_a_refused_value_is_named_with_its_variable(value):
    # every environment value is a string: the message must say which variable and what it held
    with pytest.raises(ConfigurationError) as exc:
        load_settings({"MNEMOGATE_VECTOR_PRESELECT_DIMS": value, "MNEMOGATE_PORT": "8080"})
    assert f"MNEMOGATE_VECTOR_PRESELECT_DIMS={value!r}" in str(exc.value)
    assert "int" in str(exc.value)
    with pytest.raises(ConfigurationError) as exc:
        load_settings({}, recall_top_k="ten")
    assert "recall_top_k='ten'" in str(exc.value)


def test_providers_file_adds_providers_with_keys_from_env(tmp_path):
    path = tmp_path / "providers.toml"
    path.write_text(
        '[[providers]]\nname = "glm"\nbase_url = "http://127.0.0.1:9/v1/"\n'
        'api_key_env = "GLM_KEY"\nrejects_system_role = true\n',
        encoding="utf-8",
    )
    settings = load_settings({}, providers_file=str(path))
    providers = load_providers(settings, {"GLM_KEY": "secret"})
    assert set(providers) == {"default", "glm"}
    assert providers["glm"].api_key == "secret"
    assert providers["glm"].base_url == "http://127.0.0.1:9/v1"
    assert providers["glm"].rejects_system_role


def test_providers_file_with_unknown_field_is_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"providers": [{"name": "x", "base_url": "http://a", "bogus": 1}]}')
    with pytest.raises(ConfigurationError):
        load_providers(load_settings({}, providers_file=str(path)))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MNEMOGATE_RECALL_FUSION_KEYWORD_SHARE", "1.5"),
        ("MNEMOGATE_RECALL_FUSION_KEYWORD_SHARE", "-0.1"),
        ("MNEMOGATE_RECALL_FUSION_KEYWORD_SHARE", "nan"),
        ("MNEMOGATE_RECALL_CONTEXT_WEIGHT", "nan"),
        ("MNEMOGATE_RECALL_CONTEXT_WEIGHT", "inf"),
        ("MNEMOGATE_RECALL_CONTEXT_WEIGHT", "1e308"),
        ("MNEMOGATE_BM25_K1", "inf"),
        ("MNEMOGATE_RECALL_QUESTION_FACTOR", "2"),
        ("MNEMOGATE_RECALL_WHEN_FACTOR", "0.5"),
        ("MNEMOGATE_VECTOR_MIN_SIMILARITY", "1.5"),
        ("MNEMOGATE_UPSTREAM_TIMEOUT_S", "nan"),
        # the runtime settings API's ranges hold at start too
        ("MNEMOGATE_RECALL_TOP_K", "0"),
        ("MNEMOGATE_RECALL_TOP_K", "-1"),
        ("MNEMOGATE_RECALL_TOP_K", "5000"),
        ("MNEMOGATE_RECALL_MAX_MEMORIES", "-1"),
        ("MNEMOGATE_RECALL_MAX_MEMORIES", "5000"),
        ("MNEMOGATE_KEYWORD_COMMON_TERM_DF", "-1"),
        ("MNEMOGATE_RRF_K", "1e308"),
        ("MNEMOGATE_EPISODIC_TTL_DAYS", "-3"),
    ],
)
def test_out_of_range_or_non_finite_numbers_are_refused_at_start(name, value):
    # a value every request would fail on (recall switched off with "invalid_settings") is
    # refused when the settings load, as the runtime settings API refuses it
    with pytest.raises(ConfigurationError) as exc:
        load_settings({name: value})
    assert name in exc.value.message  # the variable the value came from, not the field


def test_a_range_error_names_the_field_when_the_value_did_not_come_from_the_environment():
    with pytest.raises(ConfigurationError) as exc:
        load_settings({}, recall_top_k=0)
    assert exc.value.message.startswith("setting 'recall_top_k' must be within")
    assert exc.value.setting == "recall_top_k"


def test_range_errors_print_numbers_as_written():
    with pytest.raises(ConfigurationError) as exc:
        load_settings({"MNEMOGATE_RECALL_QUERY_MAX_BYTES": "8"})
    assert "must be within 16..1048576, got 8" in exc.value.message
    with pytest.raises(ConfigurationError) as exc:
        load_settings({"MNEMOGATE_RECALL_RELATIVE_FLOOR": "1.5"})
    assert "must be within 0..1, got 1.5" in exc.value.message
