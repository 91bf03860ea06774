"""Settings: one frozen, typed struct loaded from ``MNEMOGATE_*`` environment variables.

Every field is documented with its unit and default in ``deploy/mnemogate.env.example``; a test
checks that the example and this struct agree. Entry points (CLI, worker) call
:func:`load_settings` once and pass the result down; nothing reads the environment elsewhere.

Upstream providers beyond the default one come from an optional JSON or TOML file
(``MNEMOGATE_PROVIDERS_FILE``) holding a list of :class:`ProviderConfig` under ``providers``.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import msgspec

from shared.errors import ConfigurationError
from shared.outbound_policy import blocked_host_reason
from shared.provider_kinds import AuthStyle, FormatName, ProviderKind, apply_preset, preset
from shared.settings_checks import check_numbers as _check_numbers

ENV_PREFIX = "MNEMOGATE_"
InjectionStrategy = Literal["before_last_user", "leading_system", "system_prompt_prefix"]
RetrievalStrategy = Literal["exact", "semantic", "hybrid"]
FusionMethod = Literal["rrf", "combsum"]
ExtractionMode = Literal["regex", "llm", "off"]
EmbeddingSourceKind = Literal["auto", "remote", "transformers", "static", "none"]
VectorTier = Literal["sqlite-vec", "qdrant"]
MetricsAccess = Literal["open", "admin", "off"]
LogFormat = Literal["text", "json"]
Quantization = Literal["float32", "int8"]
#: A provider's memory switch (providers file ``memory = ...``): what memory does for requests
#: routed to it. Absent = inherit the global settings (docs/ARCHITECTURE.md, "Controlling memory").
ProviderMemory = Literal["off", "recall", "learn", "both"]


class ProviderConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One OpenAI-compatible upstream provider.

    ``name`` is the prefix a request's model selects it with (``name/model``); ``api_key_env``
    names the environment variable holding its API key (keys never live in the file).
    Capability flags describe provider quirks (docs/ARCHITECTURE.md). ``kind`` names a preset
    (:mod:`shared.provider_kinds`) that fills ``formats`` (the client formats it speaks),
    ``auth`` (how its key is sent) and ``hoists_system`` unless the entry sets them.
    """

    name: str
    base_url: str
    api_key_env: str = ""
    rejects_system_role: bool = False
    system_must_be_first: bool = False
    top_level_system: bool = False
    api_key: str = ""
    kind: ProviderKind = "openai"
    formats: tuple[FormatName, ...] = ("chat", "responses", "embeddings")
    hoists_system: bool = False
    auth: AuthStyle = "bearer"
    memory: ProviderMemory | None = None

    def speaks(self, fmt: str) -> bool:
        """True when this provider accepts the client format ``fmt`` (``chat``, ...)."""
        return fmt in self.formats


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """All process settings. Units are in the field names (``_s`` seconds, ``_ms`` ms, ...)."""

    # storage and queue
    db_path: str = "data/mnemogate.db"
    redis_url: str = ""
    queue_name: str = ""
    # HTTP server
    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 4 * 1024 * 1024
    #: longest wait for a whole request body (seconds; /v1 and /api routes); then 408
    body_read_timeout_s: float = 30.0
    admin_token: str = ""
    # default upstream provider
    upstream_base_url: str = "https://api.openai.com/v1"
    upstream_api_key: str = ""
    upstream_timeout_s: float = 300.0
    upstream_connect_timeout_s: float = 10.0
    upstream_rejects_system_role: bool = False
    upstream_system_must_be_first: bool = False
    upstream_top_level_system: bool = False
    upstream_kind: ProviderKind = "openai"
    providers_file: str = ""
    #: extra header names (comma-separated; ``prefix*`` matches a prefix) never forwarded to the
    #: upstream nor passed back to the client, on top of hop-by-hop headers and credentials
    strip_headers: str = ""
    # recall and injection
    memory_enabled: bool = True
    #: Global recall / learning switches (both also need ``memory_enabled``); API keys, providers
    #: and request headers override them (docs/ARCHITECTURE.md, "Controlling memory").
    recall_enabled: bool = True
    learn_enabled: bool = True
    #: Recognise "forget ..." requests in chat messages and delete what they name.
    forget_detection: bool = True
    #: A forget naming more memories than this is refused as too broad (deletes nothing). 1..1000.
    forget_max_matches: int = 10
    #: Request headers naming the end user behind a key, comma-separated, first one set wins.
    end_user_headers: str = "x-mnemogate-user,x-openwebui-user-id"
    #: Longest end-user id accepted (characters); longer ids are refused with a 400. 1..4096.
    end_user_max_chars: int = 256
    recall_max_tokens: int = 2000
    recall_top_k: int = 20
    recall_max_memories: int = 10
    recall_timeout_ms: int = 250
    #: The recall query (newest user message) is cut to this many UTF-8 bytes and words before
    #: any per-token work (shared.query_bound); the request itself goes upstream unchanged.
    recall_query_max_bytes: int = 4096
    recall_query_max_terms: int = 256
    recall_relative_floor: float = 0.3
    #: A query of at least this many terms injects no keyword hit unless one holds this many
    #: of them (0 = off; in-memory index; chosen on LoCoMo, see the README).
    recall_min_shared_terms: int = 2
    keyword_common_term_df: int = 1000
    #: BM25 parameters of the in-memory keyword index (chosen on LoCoMo, see the README).
    bm25_k1: float = 0.9
    bm25_b: float = 0.3
    #: Weight of an occurrence in a memory's ``context`` field relative to its own text.
    recall_context_weight: float = 0.3
    #: A keyword hit whose query words are all in its question sentences counts this share of its
    #: score, one with part of them there (IDF-weighted) proportionally less (0..1; 1 = off),
    #: before the relative floor (shared.echo.demote_questions).
    recall_question_factor: float = 0.5
    #: For a query asking when (English), a recalled memory stating a relative time ("last
    #: week") counts this multiple of its fused score (1..10; 1 = off; shared.time_cues).
    recall_when_factor: float = 1.5
    #: Byte budget of the per-process recall cache (least recently used owners are evicted; an
    #: owner above the whole budget is still answered, evicting the others; ~1.5 KB per memory).
    recall_cache_mb: int = 512
    #: A recall probes the change feed first when it was last read longer ago than this (ms;
    #: sooner whenever another process committed); access counters may lag by up to 1 s.
    recall_freshness_ms: int = 200
    injection_strategy: InjectionStrategy = "before_last_user"
    retrieval_strategy: RetrievalStrategy = "hybrid"
    #: How the keyword and vector legs are fused: ``rrf`` (rank) or ``combsum`` (normalised score).
    recall_fusion: FusionMethod = "combsum"
    #: Keyword share of a CombSUM score, 0..1 (the vector leg gets the rest).
    recall_fusion_keyword_share: float = 0.65
    #: Hybrid CombSUM scores every candidate of either leg on both signals (a keyword hit the
    #: vector leg did not return counts its own cosine, read from the in-memory matrix); off: a
    #: leg's missing hit counts 0 on that leg (shared.fusion, README "Recall quality").
    recall_fusion_score_all: bool = True
    rrf_k: float = 2.0
    rrf_keyword_weight: float = 3.0
    rrf_vector_weight: float = 1.0
    vector_min_similarity: float = 0.0
    #: The in-memory vector search of a matrix of 2,048+ rows first scores every row on this
    #: many principal directions, then gives the best 10 x wanted rows their exact cosine
    #: (shared.recall_index.preselect); 0 = scan every full row (exact, reads the whole matrix).
    vector_preselect_dims: int = 96
    #: In hybrid recall, a vector hit the keyword leg did not find must clear the vector floor
    #: by this much more cosine (0 = no extra evidence asked); chosen on LoCoMo (README).
    recall_vector_only_margin: float = 0.2
    # optional recall helpers (shared/rerank.py, shared/query_rewrite.py), off by default
    rerank_url: str = ""
    rerank_api_key: str = ""
    rerank_model: str = ""
    rerank_candidates: int = 20
    rerank_timeout_ms: int = 120
    query_rewrite_provider: str = ""
    query_rewrite_model: str = ""
    query_rewrite_timeout_ms: int = 100
    # learning
    capture_turns: bool = True
    #: At most this many of the newest not-yet-learned user turns of one request are learned
    #: (facts extracted, turns captured); older new turns of that request are skipped. 1..100.
    learn_max_turns: int = 8
    extraction: ExtractionMode = "regex"
    llm_extractor_provider: str = ""
    llm_extractor_model: str = ""
    llm_extractor_min_turns: int = 2
    llm_extractor_timeout_s: float = 30.0
    sensitive_filter: bool = True
    sensitive_custom_patterns: str = ""
    # embeddings and vector tiers
    embedding_source: EmbeddingSourceKind = "auto"
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    embedding_model: str = "text-embedding-3-small"
    embedding_dim: int = 0
    embedding_timeout_s: float = 5.0
    embedding_cache_size: int = 4096
    embedding_cache_ttl_s: float = 3600.0
    static_model_path: str = ""
    #: Embedded mode, source auto, no table yet: build it in the background (keyword recall
    #: meanwhile) instead of embedding with the slow transformer (shared.embedding.autobuild).
    static_table_autobuild: bool = True
    vector_quantization: Quantization = "float32"
    vector_tier: VectorTier = "sqlite-vec"
    qdrant_url: str = ""
    qdrant_api_key: str = ""
    qdrant_collection: str = "mnemogate"
    qdrant_timeout_s: float = 2.0
    # lifecycle
    episodic_ttl_days: float = 30.0
    factual_ttl_days: float = 0.0
    procedural_ttl_days: float = 0.0
    semantic_ttl_days: float = 0.0
    access_immunity: int = 3
    max_memories_per_owner: int = 0
    sweep_batch_size: int = 1000
    lifecycle_schedule: bool = True
    sweep_max_scan: int = 100_000
    relevance_half_life_days: float = 30.0
    # jobs
    job_max_tries: int = 5
    job_timeout_s: float = 120.0
    http_timeout_s: float = 30.0
    http_connect_timeout_s: float = 5.0
    outbox_relay_interval_s: float = 5.0
    settings_refresh_s: float = 5.0
    # health
    #: /readyz checks the FTS and vector indexes at most this often (0 = off); see
    #: shared.store.integrity for the cost bound.
    integrity_check_interval_s: float = 30.0

    # observability
    metrics_access: MetricsAccess = "admin"
    log_format: LogFormat = "text"

    def __post_init__(self) -> None:
        _check_numbers(self)  # types are msgspec's; ranges: settings_checks.BOUNDS
        check_recall_helpers(self)

    @property
    def embedded(self) -> bool:
        """True when no Redis URL is configured: jobs run in-process (embedded mode)."""
        return not self.redis_url


def check_recall_helpers(settings: Settings) -> None:
    """Validate the optional reranker and query rewrite settings.

    Both run inside the recall time budget, so the time of those that are enabled must leave
    part of ``recall_timeout_ms`` for the search itself (else a slow helper would cost the
    request all of its memories instead of only the helper's improvement).

    Raises:
        ConfigurationError: a timeout is not positive, or the enabled helpers' timeouts
            add up to ``recall_timeout_ms`` or more.
    """
    s = settings
    if s.rerank_timeout_ms <= 0 or s.query_rewrite_timeout_ms <= 0:
        raise ConfigurationError("rerank_timeout_ms and query_rewrite_timeout_ms must be > 0")
    used = (s.rerank_timeout_ms if s.rerank_url else 0) + (
        s.query_rewrite_timeout_ms if s.query_rewrite_provider else 0
    )
    if used and used >= s.recall_timeout_ms:
        raise ConfigurationError(
            "rerank_timeout_ms + query_rewrite_timeout_ms (of the enabled helpers) must be below "
            "recall_timeout_ms"
        )
    if s.query_rewrite_provider and not s.query_rewrite_model:
        raise ConfigurationError("query_rewrite_provider needs query_rewrite_model")


def settings_fields() -> tuple[str, ...]:
    """Names of every :class:`Settings` field, in declaration order."""
    return Settings.__struct_fields__


def load_settings(environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Build :class:`Settings` from ``MNEMOGATE_*`` variables, then apply ``overrides``.

    Strings are converted to the field types (``"1"``/``"true"`` → True, ``"8080"`` → 8080).

    Raises:
        ConfigurationError: a value has the wrong type or is out of range.
    """
    env = os.environ if environ is None else environ
    raw: dict[str, object] = {}
    for name in settings_fields():
        value = env.get(ENV_PREFIX + name.upper())
        if value is not None:
            raw[name] = value
    raw.update(overrides)
    try:
        return msgspec.convert(raw, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(_invalid_setting(exc, raw, overrides)) from exc
    except ConfigurationError as exc:  # a range check: name the variable the value came from
        field = exc.setting
        if field is None or field not in raw or field in overrides:
            raise
        variable = f"setting {ENV_PREFIX}{field.upper()}"
        message = exc.message.replace(f"setting '{field}'", variable)
        raise ConfigurationError(message, setting=field) from exc


def _invalid_setting(
    exc: msgspec.ValidationError, raw: Mapping[str, object], overrides: Mapping[str, object]
) -> str:
    """The message of a refused setting: the variable (or field) named, with its value.

    ``Expected `int`, got `str` - at `$.recall_top_k``` becomes ``invalid setting
    MNEMOGATE_RECALL_TOP_K='ten': Expected `int`, got `str``` (every environment value is a
    string, so the bare message did not say which one was wrong).
    """
    text = str(exc)
    reason, _, where = text.rpartition(" - at `$.")
    name = where.rstrip("`").split(".", 1)[0].split("[", 1)[0]
    if not reason or name not in raw:
        return f"invalid setting: {text}"
    label = name if name in overrides else ENV_PREFIX + name.upper()
    return f"invalid setting {label}={raw[name]!r}: {reason}"


def default_provider(settings: Settings) -> ProviderConfig:
    """The provider built from the ``upstream_*`` settings (name ``default``).

    The preset of ``upstream_kind`` (``openai``: chat, responses and embeddings), flags OR-ed with
    it.

    Raises:
        ConfigurationError: unknown ``upstream_kind``.
    """
    base = preset(settings.upstream_kind)
    try:
        return msgspec.convert(
            {
                **base,
                "name": "default",
                "base_url": settings.upstream_base_url.rstrip("/"),
                "api_key": settings.upstream_api_key,
                "rejects_system_role": settings.upstream_rejects_system_role,
                "system_must_be_first": settings.upstream_system_must_be_first,
                "top_level_system": settings.upstream_top_level_system,
                "hoists_system": bool(base.get("hoists_system")),
            },
            ProviderConfig,
        )
    except msgspec.ValidationError as exc:  # pragma: no cover - presets are valid
        raise ConfigurationError(f"invalid default provider: {exc}") from exc


def load_providers(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> dict[str, ProviderConfig]:
    """All providers by name: ``default`` plus those in ``providers_file`` (JSON or TOML).

    Each file entry's API key is read from the environment variable named by ``api_key_env``;
    its ``kind`` preset fills the keys it does not set (:mod:`shared.provider_kinds`).

    Raises:
        ConfigurationError: the file is missing, unparsable, has unknown fields or kinds; a base
            URL is not http(s) with a host; or its host is refused by the outbound policy
            (cloud metadata, link-local, ...: :func:`shared.outbound_policy.blocked_host_reason`).
    """
    env = os.environ if environ is None else environ
    providers = {"default": default_provider(settings)}
    if settings.providers_file:
        providers.update(_file_providers(Path(settings.providers_file), env))
    for provider in providers.values():
        named = "MNEMOGATE_UPSTREAM_BASE_URL" if provider.name == "default" else "base URL"
        where = f"provider {provider.name!r}: {named}"
        parts = urlsplit(provider.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"{where} must be an http:// or https:// URL with a host, got {provider.base_url!r}"
            )
        reason = blocked_host_reason(parts.hostname)
        if reason is not None:
            raise ConfigurationError(f"{where} points at {reason}")
    return providers


def _file_providers(path: Path, env: Mapping[str, str]) -> dict[str, ProviderConfig]:
    """The providers listed in the JSON or TOML file at ``path`` (see :func:`load_providers`).

    Raises:
        ConfigurationError: the file is missing, unparsable, has unknown fields or kinds.
    """
    providers: dict[str, ProviderConfig] = {}
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        entries = data.get("providers", [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError("'providers' must be a list of tables/objects")
        items = msgspec.convert([apply_preset(e) for e in entries], list[ProviderConfig])
    except (OSError, ValueError, tomllib.TOMLDecodeError, msgspec.ValidationError) as exc:
        raise ConfigurationError(f"cannot load providers file {path}: {exc}") from exc
    for item in items:
        key = env.get(item.api_key_env, "") if item.api_key_env else item.api_key
        providers[item.name] = msgspec.structs.replace(
            item, base_url=item.base_url.rstrip("/"), api_key=key
        )
    return providers
