"""Fixtures for the client-format tests: a gateway with the default (OpenAI-kind) provider and
an Anthropic-kind provider ``claude`` on the same fake upstream, and SDK clients for both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.harness import GatewayHarness
from tests.waiting import TEST_RECALL_TIMEOUT_MS

ANTHROPIC_KEY_ENV = "MNEMOGATE_TEST_ANTHROPIC_KEY"


@pytest.fixture
def formats_gateway(gateway_factory, upstream, tmp_path, monkeypatch) -> Iterator[Any]:
    """``formats_gateway(**overrides)``: a gateway whose providers file adds ``claude`` (kind
    anthropic, key from the environment) and ``local`` (kind ollama, no key). Recall gets a
    generous time budget: these tests check placement, not latency, on a loaded machine."""
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, "sk-ant-upstream-test")
    providers = tmp_path / "providers.toml"
    providers.write_text(
        "[[providers]]\n"
        'name = "claude"\n'
        'kind = "anthropic"\n'
        f'base_url = "{upstream.base_url}"\n'
        f'api_key_env = "{ANTHROPIC_KEY_ENV}"\n'
        "[[providers]]\n"
        'name = "local"\n'
        'kind = "ollama"\n'
        f'base_url = "{upstream.base_url}"\n'
    )

    def make(**overrides: Any) -> GatewayHarness:
        overrides.setdefault("providers_file", str(providers))
        overrides.setdefault("recall_timeout_ms", TEST_RECALL_TIMEOUT_MS)
        return gateway_factory(**overrides)

    yield make


def openai_client(gw: GatewayHarness, secret: str) -> openai.OpenAI:
    """The official OpenAI client pointed at the gateway (no retries)."""
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=secret, max_retries=0)


def anthropic_client(gw: GatewayHarness, secret: str, **kwargs: Any) -> anthropic.Anthropic:
    """The official Anthropic client pointed at the gateway (``x-api-key`` auth, no retries)."""
    return anthropic.Anthropic(base_url=gw.base_url, api_key=secret, max_retries=0, **kwargs)
