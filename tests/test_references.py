"""Code and tests cite what a reader can open: ``docs/ARCHITECTURE.md``, papers, specs.

Never documents outside the repository (a team handbook's sections, an acceptance-case list,
tracker issue numbers).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"DESIGN §|DESIGN\.md|CASES\b|CASES\.md|\b[Ii]ssue \d+|\bissue \"")

#: Files being reshaped by parallel work (see ``tests/test_code_shape.py``): they drop their
#: outside references as that work lands, and the integrator removes the entry then.
IN_FLIGHT: set[str] = set()
THIS_FILE = Path(__file__).resolve()


def test_no_references_to_documents_outside_the_repository() -> None:
    found = []
    for top in ("services", "shared", "workers", "tests", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in IN_FLIGHT or path.resolve() == THIS_FILE:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE.search(line):
                    found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "cite docs/ARCHITECTURE.md instead:\n" + "\n".join(found)
