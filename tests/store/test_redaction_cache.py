"""detect-secrets' patterns kept in a cache (store/redaction_patterns.py): the same
patterns, the same redactions, and no import of detect-secrets once it is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlane.store.redaction_patterns import (
    CACHE_FILE,
    compile_patterns,
    pattern_set,
    read_detect_secrets,
)
from secret_fakes import SECRETS

TESTS = Path(__file__).resolve().parent.parent

#: Redacts the table's texts without a JWT first (saying whether detect-secrets
#: was imported by then: the JWT check imports it), then all of them.
SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from memlane.store.redaction import redact
from secret_fakes import SECRETS
plain = [redact(case.text).text for case in SECRETS if case.kind != "jwt"]
imported = "detect_secrets" in sys.modules
print(json.dumps({"imported": imported, "texts": [redact(case.text).text for case in SECRETS]}))
"""


def _describe(patterns: object) -> list[object]:
    tokens = [
        (p.kind, p.regex.pattern, p.regex.flags, p.tail, p.word_start, p.valid)
        for p in patterns.tokens  # type: ignore[attr-defined]
    ]
    headers = [(r.pattern, r.flags) for r in patterns.private_key_headers]  # type: ignore[attr-defined]
    keyword = [(r.pattern, r.flags, g) for r, g in patterns.keyword]  # type: ignore[attr-defined]
    return [tokens, headers, keyword]


def test_the_patterns_in_use_are_the_ones_detect_secrets_declares() -> None:
    assert _describe(pattern_set()) == _describe(compile_patterns(read_detect_secrets()))


def _redact_in_a_new_process(cache: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(TESTS)],
        env={**os.environ, "MEMLANE_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_second_process_redacts_alike_without_importing_detect_secrets(tmp_path: Path) -> None:
    first = _redact_in_a_new_process(tmp_path)
    assert first["imported"] is True  # it read the patterns out of detect-secrets
    assert first["texts"] == [case.redacted for case in SECRETS]
    assert (tmp_path / CACHE_FILE).is_file()
    second = _redact_in_a_new_process(tmp_path)
    assert second == {**first, "imported": False}


@pytest.mark.parametrize(
    "damage",
    [
        "not json at all",
        '{"key": [], "table": {}}',
        "truncated",
        "weakened",
        "wrong types",
    ],
)
def test_a_damaged_or_stale_cache_is_read_afresh_from_detect_secrets(
    tmp_path: Path, damage: str
) -> None:
    _redact_in_a_new_process(tmp_path)
    cache = tmp_path / CACHE_FILE
    good = cache.read_text(encoding="utf-8")
    data = json.loads(good)
    if damage == "truncated":
        cache.write_text(good[: len(good) // 2], encoding="utf-8")
    elif damage == "weakened":
        # Another version of a source file: its key no longer matches, whatever it holds.
        data["key"][1][2] += 1
        data["table"]["tokens"] = []
        cache.write_text(json.dumps(data), encoding="utf-8")
    elif damage == "wrong types":
        data["table"]["tokens"][0][2] = "not flags"
        cache.write_text(json.dumps(data), encoding="utf-8")
    else:
        cache.write_text(damage, encoding="utf-8")
    again = _redact_in_a_new_process(tmp_path)
    assert again["imported"] is True
    assert again["texts"] == [case.redacted for case in SECRETS]
    assert json.loads(cache.read_text(encoding="utf-8")) == json.loads(good)  # written anew


def test_a_cache_that_cannot_be_written_costs_only_the_import(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file-not-a-directory"
    blocked.write_text("", encoding="utf-8")
    for _ in range(2):
        result = _redact_in_a_new_process(blocked)
        assert result["imported"] is True
        assert result["texts"] == [case.redacted for case in SECRETS]
