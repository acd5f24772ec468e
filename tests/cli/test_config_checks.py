"""Settings are checked (issue 28): ``config set`` refuses a bad value in one
line and writes nothing; a bad value in a file is not used, every command that
opens the memory says so, search keeps finding what is stored and ``status``
lists it under missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import Cli

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}


@pytest.mark.parametrize(
    ("name", "raw", "allowed"),
    [
        ("search.top_k", "0", "a whole number from 1 to 100"),
        ("search.min_score", "7", "a number from 0 to 1"),
    ],
)
def test_config_set_refuses_a_value_out_of_range(
    cli: Cli, isolated_home: Path, name: str, raw: str, allowed: str
) -> None:
    out = cli("config", "set", name, raw)
    assert out.returncode != 0
    first = out.stderr.splitlines()[0]
    assert first == f"memlane: error: {name} = {raw!r} is not allowed: it must be {allowed}"
    assert not (isolated_home / "config.toml").exists()


def test_a_bad_value_in_the_file_is_said_and_search_still_finds(
    cli: Cli, isolated_home: Path
) -> None:
    config = isolated_home / "config.toml"
    config.write_text("[search]\ntop_k = 0\nmin_score = 7\n", encoding="utf-8")
    written = cli("write", "the nightly export now runs at 02:00 UTC", env=LEXICAL)
    assert written.returncode == 0, written.stderr

    found = cli("search", "nightly export", "--json", env=LEXICAL)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"]
    said = [line for line in found.stderr.splitlines() if "is not allowed" in line]
    assert said == [
        f"memlane: {config}: search.top_k = 0 is not allowed: it must be a whole number from "
        "1 to 100; search.top_k stays 5 (default) until that is fixed",
        f"memlane: {config}: search.min_score = 7 is not allowed: it must be a number from "
        "0 to 1; search.min_score stays 0.01 (default) until that is fixed",
    ]

    status = cli("status", "--no-probe", env=LEXICAL)
    assert status.returncode == 0, status.stderr
    assert f"missing: config: {config}: search.top_k = 0 is not allowed" in status.stdout
    assert f"missing: config: {config}: search.min_score = 7 is not allowed" in status.stdout
    assert "note: " + str(config) not in status.stdout  # said once, as missing

    listed = cli("config", "list", "--resolved")
    assert "search.top_k = 5  [default]" in listed.stdout
    assert f"problem: {config}: search.top_k = 0 is not allowed" in listed.stdout


def test_a_file_that_is_not_toml_does_not_take_memory_down(cli: Cli, isolated_home: Path) -> None:
    config = isolated_home / "config.toml"
    config.write_text("[search\ntop_k = 3\n", encoding="utf-8")
    written = cli("write", "the nightly export now runs at 02:00 UTC", env=LEXICAL)
    assert written.returncode == 0, written.stderr
    status = cli("status", "--no-probe", env=LEXICAL)
    assert status.returncode == 0, status.stderr
    assert f"missing: config: {config} is not valid TOML" in status.stdout
    assert "none of its settings are used" in status.stdout


def test_config_reference_prints_the_committed_reference(cli: Cli) -> None:
    out = cli("config", "reference")
    assert out.returncode == 0, out.stderr
    committed = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
    assert out.stdout == committed.read_text(encoding="utf-8")
