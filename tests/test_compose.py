"""``compose.yaml`` is valid for the docker compose in use.

Runs ``docker compose config`` (with and without the ``qdrant`` profile) when a docker compose
plugin is installed; skipped otherwise (these machines have no container runtime).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@pytest.mark.skipif(not _compose_available(), reason="no docker compose plugin on this machine")
@pytest.mark.parametrize("profile", [[], ["--profile", "qdrant"]])
def test_docker_compose_config_validates(profile: list[str]) -> None:
    out = subprocess.run(
        ["docker", "compose", *profile, "-f", str(ROOT / "compose.yaml"), "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
