"""Start-up refusals as a user meets them: a clear ``error: ...`` naming what is wrong (no
traceback, no server started), and a warning for a variable that names no setting."""

from __future__ import annotations

from tests.services.test_cli_lifecycle import cli


def test_a_port_out_of_range_is_refused(tmp_path) -> None:
    db = str(tmp_path / "p.db")
    flag = cli(db, "serve", "--port", "99999")
    assert flag.returncode == 2
    assert "within 1..65535, got 99999" in flag.stderr
    env = cli(db, "serve", port="99999")
    assert env.returncode == 1
    assert "MNEMOGATE_PORT must be within 1..65535, got 99999" in env.stderr


def test_an_upstream_that_is_not_http_is_refused(tmp_path) -> None:
    made = cli(str(tmp_path / "u.db"), "serve", upstream_base_url="ftp://example.com/v1")
    assert made.returncode == 1
    assert "MNEMOGATE_UPSTREAM_BASE_URL must be an http:// or https:// URL" in made.stderr
    assert "Traceback" not in made.stderr


def test_a_database_path_that_cannot_exist_is_an_error_not_a_traceback(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    made = cli(str(blocker / "x.db"), "serve")
    assert made.returncode == 1
    assert made.stderr.startswith("error:") or "\nerror:" in made.stderr
    assert str(blocker / "x.db") in made.stderr
    assert "Traceback" not in made.stderr


def test_a_misspelt_variable_is_reported_with_the_setting_it_resembles(tmp_path) -> None:
    # serve warns before it starts (here it then stops at the refused upstream)
    made = cli(
        str(tmp_path / "m.db"),
        "serve",
        upstream_base_url="ftp://example.com/v1",
        recal_top_k="5",
        totally_unknown="1",
        foo="1",
    )
    assert made.returncode == 1, made.stderr
    assert (
        "MNEMOGATE_RECAL_TOP_K is not a setting and is ignored "
        "(did you mean MNEMOGATE_RECALL_TOP_K?)" in made.stderr
    )
    assert "MNEMOGATE_TOTALLY_UNKNOWN is not a setting and is ignored\n" in made.stderr + "\n"
    # the shared prefix does not make a name close: no MNEMOGATE_PORT suggested
    assert "MNEMOGATE_FOO is not a setting and is ignored\n" in made.stderr + "\n"
    assert made.stderr.count("MNEMOGATE_RECAL_TOP_K") == 1


def test_one_shot_commands_do_not_repeat_the_warning(tmp_path) -> None:
    # scripts/serve runs migrate and keys before serve: only serve (and worker) warn
    made = cli(str(tmp_path / "o.db"), "migrate", recal_top_k="5")
    assert made.returncode == 0, made.stderr
    assert "MNEMOGATE_RECAL_TOP_K" not in made.stderr


def test_summarize_refuses_an_age_the_api_refuses(tmp_path) -> None:
    for age in ("0", "-1", "nan", "inf", "soon"):
        made = cli(str(tmp_path / "s.db"), "summarize", "--older-than-days", age, "--dry-run")
        assert made.returncode == 2, (age, made.stderr)
        assert "--older-than-days" in made.stderr
