"""Provider presets: what each kind of upstream speaks and how it must be handled.

A provider's ``kind`` (providers file, or ``MNEMOGATE_UPSTREAM_KIND`` for the default provider)
fills the capability flags and the ``formats`` list it does not set itself:

==========  ======================================  ========================  ===============
kind        formats                                 auth header sent          placement flags
==========  ======================================  ========================  ===============
openai      chat, responses, embeddings             ``Authorization: Bearer``  none
anthropic   messages                                ``x-api-key``              none
ollama      chat, embeddings                        ``Authorization: Bearer``  hoists_system
vllm        chat, responses, embeddings             ``Authorization: Bearer``  hoists_system
litellm     chat, responses, messages, embeddings   ``Authorization: Bearer``  hoists_system
generic     chat                                    ``Authorization: Bearer``  none
==========  ======================================  ========================  ===============

``hoists_system``: the upstream moves every system message to the front of the prompt (Ollama's
chat templates; chat templates served by vLLM that accept a system message only first; LiteLLM
when it translates to Anthropic's top-level ``system``), so a memory block sent as a system
message would change the prompt prefix on every turn and miss the prompt cache: the block goes
in a user-role message instead (``shared/injection.py``).
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from shared.errors import ConfigurationError

FormatName = Literal["chat", "responses", "messages", "embeddings"]
ProviderKind = Literal["openai", "anthropic", "ollama", "vllm", "litellm", "generic"]
AuthStyle = Literal["bearer", "x-api-key"]

_PRESETS: Final[dict[str, dict[str, Any]]] = {
    "openai": {"formats": ("chat", "responses", "embeddings")},
    "anthropic": {"formats": ("messages",), "auth": "x-api-key"},
    "ollama": {"formats": ("chat", "embeddings"), "hoists_system": True},
    "vllm": {"formats": ("chat", "responses", "embeddings"), "hoists_system": True},
    "litellm": {
        "formats": ("chat", "responses", "messages", "embeddings"),
        "hoists_system": True,
    },
    "generic": {"formats": ("chat",)},
}
KINDS: Final[tuple[str, ...]] = get_args(ProviderKind)


def preset(kind: str) -> dict[str, Any]:
    """The provider fields ``kind`` sets (``formats``, ``auth``, capability flags); a copy.

    Raises:
        ConfigurationError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind not in _PRESETS:
        raise ConfigurationError(f"unknown provider kind {kind!r}; known: {', '.join(KINDS)}")
    return {"kind": kind, **_PRESETS[kind]}


def apply_preset(entry: dict[str, Any]) -> dict[str, Any]:
    """A providers-file entry completed by its kind's preset (the entry's own keys win).

    Raises:
        ConfigurationError: unknown ``kind``.
    """
    kind = entry.get("kind", "openai")
    return {**preset(kind if isinstance(kind, str) else ""), **entry}
