"""``mnemogate keys create`` as a subprocess: the database it wrote to, and refused names."""

from __future__ import annotations

import os

from tests.services.test_cli_lifecycle import cli


def test_create_names_the_database_and_prints_the_secret_last(tmp_path) -> None:
    db = str(tmp_path / "keys.db")
    made = cli(db, "keys", "create", "--name", "  laptop ")
    assert made.returncode == 0, made.stderr
    first, secret = made.stdout.strip().splitlines()[-2:]
    assert os.path.abspath(db) in first and "(laptop)" in first
    assert secret.startswith("mg-")
    listed = cli(db, "keys", "list")
    assert "\tlaptop\t" in listed.stdout


def test_a_blank_name_is_a_usage_error(tmp_path) -> None:
    db = str(tmp_path / "keys.db")
    made = cli(db, "keys", "create", "--name", "   ")
    assert made.returncode == 2
    assert "must not be blank" in made.stderr
    assert cli(db, "keys", "list").stdout.strip() == ""


def test_a_name_with_a_control_character_is_a_usage_error(tmp_path) -> None:
    db = str(tmp_path / "keys.db")
    for name in ("lap\ntop", "lap\ttop", "lap\x7ftop"):
        made = cli(db, "keys", "create", "--name", name)
        assert made.returncode == 2, name
        assert "must not hold control characters" in made.stderr
    assert cli(db, "keys", "list").stdout.strip() == ""
    assert cli(db, "keys", "create", "--name", "café ☕").returncode == 0
