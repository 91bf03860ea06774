"""Runtime-editable settings: validated overrides stored in SQLite, picked up by every process.

The effective settings of a process are its environment :class:`~shared.settings.Settings`
(``base``) with the overrides of the ``settings`` row applied on top. ``PUT /api/settings``
validates a patch against the schema (:func:`validate_patch`) and writes the overrides with an
incremented version; :class:`RuntimeSettings` in every gateway and worker compares that version
with the one it applied, at most once every ``settings_refresh_s`` seconds, and re-reads the row
only when it changed.

Propagation bound: a change written at time T is in effect in every gateway by
``T + settings_refresh_s`` (+ one SQLite read), and in every job a worker starts after
``T + settings_refresh_s`` (workers refresh before each job, rate-limited the same way). The bound
uses the ``settings_refresh_s`` in effect before the change.

Fields that only take effect at start-up or that identify the deployment (:data:`IMMUTABLE_FIELDS`)
cannot be overridden; secrets (:data:`SECRET_FIELDS`) are masked on read (:func:`masked_view`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from shared.errors import ConfigurationError, StoreError
from shared.outbound_policy import check_outbound_settings
from shared.sensitive import SensitiveDetector
from shared.sensitive_patterns import build_detector
from shared.settings import Settings, settings_fields
from shared.settings_checks import check_bounds
from shared.store.settings_row import SettingsRow, SettingsStore

log = logging.getLogger("mnemogate.settings")

#: Read once at start-up (clients, pools, engine and providers are built from them) or part of
#: the deployment's identity: a runtime change would be accepted but not take effect, so it is
#: refused; change them in the environment and restart.
IMMUTABLE_FIELDS: frozenset[str] = frozenset(
    {
        "db_path",
        "redis_url",
        "queue_name",
        "host",
        "port",
        "admin_token",
        "metrics_access",
        "log_format",
        "max_body_bytes",
        "upstream_base_url",
        "upstream_api_key",
        "upstream_timeout_s",
        "upstream_connect_timeout_s",
        "upstream_rejects_system_role",
        "upstream_system_must_be_first",
        "upstream_top_level_system",
        "upstream_kind",
        "providers_file",
        "embedding_source",
        "embedding_base_url",
        "embedding_api_key",
        "embedding_model",
        "embedding_dim",
        "embedding_timeout_s",
        "embedding_cache_size",
        "embedding_cache_ttl_s",
        "static_model_path",
        "static_table_autobuild",
        "rerank_url",
        "rerank_api_key",
        "vector_quantization",
        "vector_preselect_dims",
        "vector_tier",
        "qdrant_url",
        "qdrant_api_key",
        "qdrant_collection",
        "qdrant_timeout_s",
        "job_timeout_s",
        "integrity_check_interval_s",
        "recall_cache_mb",
        "recall_freshness_ms",
        "http_timeout_s",
        "http_connect_timeout_s",
    }
)
SECRET_FIELDS: frozenset[str] = frozenset(
    {"admin_token", "upstream_api_key", "embedding_api_key", "qdrant_api_key", "rerank_api_key"}
)
MASK = "********"
CAS_RETRIES = 5


def apply_overrides(base: Settings, overrides: Mapping[str, Any]) -> Settings:
    """``base`` with ``overrides`` applied, type-checked and range-checked.

    Raises:
        ConfigurationError: a value has the wrong type or is out of range.
    """
    for name, value in overrides.items():
        check_bounds(name, value)
    merged = {**msgspec.structs.asdict(base), **overrides}
    try:
        return msgspec.convert(merged, Settings)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid setting: {exc}") from exc


def validate_patch(
    base: Settings, current: Mapping[str, Any], patch: Mapping[str, Any]
) -> tuple[dict[str, Any], Settings]:
    """New overrides (and the settings they produce) from ``current`` overrides and a ``patch``.

    ``patch`` maps field names to values; ``null`` removes an override (back to the environment
    value); a secret field sent back as :data:`MASK` is left unchanged.

    Raises:
        ConfigurationError (HTTP 400): an unknown field, a field in :data:`IMMUTABLE_FIELDS`, a
            value of the wrong type or out of range.
    """
    known = set(settings_fields())
    overrides = dict(current)
    for name, value in patch.items():
        if name not in known:
            raise ConfigurationError(f"unknown setting '{name}'", code="unknown_setting")
        if name in IMMUTABLE_FIELDS:
            raise ConfigurationError(
                f"setting '{name}' cannot be changed at run time: set "
                f"MNEMOGATE_{name.upper()} and restart",
                code="immutable_setting",
            )
        if name in SECRET_FIELDS and value == MASK:
            continue
        if value is None:
            overrides.pop(name, None)
        else:
            overrides[name] = value
    return overrides, apply_overrides(base, overrides)


def masked_view(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every non-empty secret replaced by :data:`MASK`."""
    return {
        k: (MASK if k in SECRET_FIELDS and v not in ("", None) else v) for k, v in values.items()
    }


@dataclass(frozen=True)
class SettingsSnapshot:
    """One version of a process's effective settings and what is derived from them.

    ``version`` is the ``settings`` row version applied (0: environment only); ``overrides`` the
    fields it overrides; ``updated_at`` when it was written (unix seconds); ``detector`` the
    sensitive-content detector for its ``sensitive_custom_patterns``.
    """

    settings: Settings
    detector: SensitiveDetector
    version: int = 0
    overrides: Mapping[str, Any] = field(default_factory=dict)
    updated_at: float | None = None


def snapshot_of(
    settings: Settings,
    *,
    version: int = 0,
    overrides: Mapping[str, Any] | None = None,
    updated_at: float | None = None,
    previous: SettingsSnapshot | None = None,
) -> SettingsSnapshot:
    """A snapshot of ``settings``.

    The detector of ``previous`` is reused when the patterns did not change.

    Raises:
        ConfigurationError: invalid ``sensitive_custom_patterns``.
    """
    patterns = settings.sensitive_custom_patterns
    if previous is not None and previous.settings.sensitive_custom_patterns == patterns:
        detector = previous.detector
    else:
        detector = build_detector(patterns)
    return SettingsSnapshot(
        settings=settings,
        detector=detector,
        version=version,
        overrides=dict(overrides or {}),
        updated_at=updated_at,
    )


class RuntimeSettings:
    """The effective settings of one process, refreshed from the ``settings`` row.

    :attr:`snapshot` is the one mutable reference: a refresh that finds a new version replaces
    it with a new immutable :class:`SettingsSnapshot`, so a reader holding one sees a consistent
    version. :meth:`refresh` checks the stored version at most every ``settings_refresh_s``
    seconds (monotonic clock). A row that no longer validates (e.g. written by a newer release)
    keeps the previous settings and is logged.
    """

    def __init__(
        self,
        base: Settings,
        store: SettingsStore,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Start from the environment settings ``base`` (version 0).

        Raises:
            ConfigurationError: invalid ``sensitive_custom_patterns`` in ``base``.
        """
        self.base = base
        self.store = store
        self.clock = clock
        self.snapshot = snapshot_of(base)
        self._checked_at = -math.inf
        self._lock = asyncio.Lock()

    @property
    def current(self) -> Settings:
        """The effective settings now."""
        return self.snapshot.settings

    @property
    def version(self) -> int:
        """The ``settings`` row version applied (0: environment only)."""
        return self.snapshot.version

    def _apply(self, row: SettingsRow) -> None:
        usable = {
            k: v
            for k, v in row.data.items()
            if k in Settings.__struct_fields__ and k not in IMMUTABLE_FIELDS
        }
        try:
            self.snapshot = snapshot_of(
                apply_overrides(self.base, usable),
                version=row.version,
                overrides=usable,
                updated_at=row.updated_at,
                previous=self.snapshot,
            )
        except ConfigurationError as exc:
            log.error("settings version %d ignored: %s", row.version, exc.message)
            self.snapshot = dataclasses.replace(self.snapshot, version=row.version)

    async def refresh(self, *, force: bool = False) -> Settings:
        """The effective settings, re-read if the stored version changed.

        Without ``force`` the version is checked at most every ``settings_refresh_s`` seconds.

        Raises:
            StoreError: the database failed (the caller may keep using :attr:`current`).
        """
        if not force and self.clock() - self._checked_at < self.current.settings_refresh_s:
            return self.current
        async with self._lock:
            # Re-check under the lock: a concurrent caller may have just refreshed. The check time
            # is taken before the read and recorded after it, so a caller never returns early
            # while a refresh that would change the settings is still in flight.
            now = self.clock()
            if not force and now - self._checked_at < self.current.settings_refresh_s:
                return self.current
            if await self.store.version() != self.version:
                self._apply(await self.store.read())
            self._checked_at = now
        return self.current

    async def update(self, patch: Mapping[str, Any]) -> Settings:
        """Validate ``patch`` (see :func:`validate_patch`), store it, apply it here at once.

        Other processes see it within ``settings_refresh_s``.

        Raises:
            ConfigurationError: the patch is invalid (HTTP 400).
            StoreError: the database failed, or kept changing under :data:`CAS_RETRIES` tries.
        """
        for _ in range(CAS_RETRIES):
            row = await self.store.read()
            current = {k: v for k, v in row.data.items() if k in Settings.__struct_fields__}
            overrides, settings = validate_patch(self.base, current, patch)
            snapshot_of(settings, previous=self.snapshot)  # invalid patterns: 400, not stored
            check_outbound_settings(settings)  # a blocked outbound URL: 400, not stored
            written = await self.store.write(overrides, expected_version=row.version)
            if written is not None:
                async with self._lock:
                    self._checked_at = self.clock()
                    self._apply(written)
                return self.current
        raise StoreError("settings changed concurrently; retry the update")

    def view(self) -> dict[str, Any]:
        """JSON-ready view: ``version``, ``updated_at``, masked ``settings`` and ``overrides``.

        The ``immutable`` and ``secret`` field names, and ``refresh_s`` (the propagation bound).
        """
        snapshot = self.snapshot
        return {
            "version": snapshot.version,
            "updated_at": snapshot.updated_at,
            "settings": masked_view(msgspec.structs.asdict(snapshot.settings)),
            "overrides": masked_view(snapshot.overrides),
            "immutable": sorted(IMMUTABLE_FIELDS),
            "secret": sorted(SECRET_FIELDS),
            "refresh_s": snapshot.settings.settings_refresh_s,
        }
