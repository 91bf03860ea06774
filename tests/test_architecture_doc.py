"""``docs/ARCHITECTURE.md`` names only modules that exist, so a rename must update it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
#: A repository path in backticks: ``shared/engine.py``, ``shared/jobs/``, ``migrations/``.
PATH = re.compile(r"`((?:services|shared|workers|migrations|bench|tests|deploy|docs)/[\w./-]*)`")


def named_paths() -> list[str]:
    return sorted(set(PATH.findall(DOC.read_text(encoding="utf-8"))))


def test_the_document_names_modules() -> None:
    paths = named_paths()
    assert len(paths) > 50
    assert "shared/runtime.py" in paths


def test_every_named_module_exists() -> None:
    missing = [p for p in named_paths() if not (ROOT / p).exists()]
    assert missing == [], f"docs/ARCHITECTURE.md names modules that do not exist: {missing}"


def test_every_product_module_is_named() -> None:
    """Each module of shared/, services/ and workers/ is in the map, itself or by its package."""
    named = named_paths()
    unnamed = []
    for top in ("shared", "services", "workers"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.name == "__init__.py" and rel.count("/") == 1:
                continue  # the top-level packages themselves
            if not any(rel == n or (n.endswith("/") and rel.startswith(n)) for n in named):
                unnamed.append(rel)
    assert unnamed == [], f"modules missing from docs/ARCHITECTURE.md: {unnamed}"
