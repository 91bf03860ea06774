"""Provider kinds: presets fill formats, auth and placement flags; the file's own keys win."""

from __future__ import annotations

import json

import pytest

from shared.errors import ConfigurationError
from shared.provider_kinds import KINDS, preset
from shared.settings import load_providers, load_settings


def providers_from(tmp_path, entries, **settings):
    path = tmp_path / "providers.json"
    path.write_text(json.dumps({"providers": entries}))
    return load_providers(load_settings({}, providers_file=str(path), **settings), {"K": "sk"})


@pytest.mark.parametrize(
    ("kind", "formats", "auth", "hoists"),
    [
        ("openai", ("chat", "responses", "embeddings"), "bearer", False),
        ("anthropic", ("messages",), "x-api-key", False),
        ("ollama", ("chat", "embeddings"), "bearer", True),
        ("vllm", ("chat", "responses", "embeddings"), "bearer", True),
        ("litellm", ("chat", "responses", "messages", "embeddings"), "bearer", True),
        ("generic", ("chat",), "bearer", False),
    ],
)
def test_each_kind_sets_formats_auth_and_flags(tmp_path, kind, formats, auth, hoists):
    entry = {"name": "p", "kind": kind, "base_url": "http://127.0.0.1:1/v1", "api_key_env": "K"}
    p = providers_from(tmp_path, [entry])["p"]
    assert (p.kind, p.formats, p.auth, p.hoists_system) == (kind, formats, auth, hoists)
    assert p.api_key == "sk"
    assert all(p.speaks(f) for f in formats)
    assert set(KINDS) >= {kind}


def test_entry_keys_override_the_preset_and_default_kind_is_openai(tmp_path):
    entries = [
        {
            "name": "o",
            "kind": "ollama",
            "base_url": "http://h/v1",
            "hoists_system": False,
            "formats": ["chat"],
        },
        {"name": "plain", "base_url": "http://h/v1"},
    ]
    providers = providers_from(tmp_path, entries)
    assert providers["o"].hoists_system is False
    assert providers["o"].formats == ("chat",)
    assert not providers["o"].speaks("embeddings")
    assert providers["plain"].kind == "openai"
    assert providers["default"].formats == ("chat", "responses", "embeddings")


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "x", "kind": "nope", "base_url": "http://h"},
        {"name": "x", "base_url": "http://h", "formats": ["telepathy"]},
        {"name": "x", "base_url": "http://h", "auth": "basic"},
    ],
)
def test_unknown_kind_format_or_auth_is_refused(tmp_path, entry):
    with pytest.raises(ConfigurationError):
        providers_from(tmp_path, [entry])


def test_default_provider_follows_upstream_kind():
    settings = load_settings({"MNEMOGATE_UPSTREAM_KIND": "anthropic"})
    default = load_providers(settings)["default"]
    assert default.formats == ("messages",) and default.auth == "x-api-key"
    with pytest.raises(ConfigurationError):
        load_providers(load_settings({}, upstream_kind="martian"))
    assert preset("litellm")["hoists_system"] is True
