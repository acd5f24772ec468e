"""Search through the CLI with the bundled model: ranking, the floor and
"nothing relevant", and the one-time re-embedding after an upgrade.

The shared ``cli`` fixture (not tests/cli's leak-checking one: onnxruntime
keeps a database of its own open once the model is loaded)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers import Cli

# Distilled entries of one session on unrelated subjects, as capture writes
# them: the CI-cache entry directly follows the Postgres upgrade.
ENTRIES = [
    "The Postgres 14 to 16 upgrade failed on the first try because the pg_trgm extension "
    "had to be updated before pg_upgrade; rerunning after ALTER EXTENSION worked.",
    "CI restores the Go module cache only when go.sum is unchanged, so dependency bumps "
    "cost about six extra minutes per pipeline.",
    "Production deploys need the release manager's approval in the #releases channel "
    "before the workflow is allowed to run.",
    "Aiko reviews mobile pull requests only with screen recordings from an iPhone and a "
    "small Android phone.",
]


def _store(cli: Cli) -> None:
    for text in ENTRIES:
        assert cli("write", text).returncode == 0


def _search(cli: Cli, *args: str) -> dict[str, object]:
    result = cli("search", *args, "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_an_entry_is_found_by_its_meaning_not_by_its_neighbours(cli: Cli) -> None:
    _store(cli)
    data = _search(cli, "problem during the database major version migration", "-k", "3")
    hits = data["hits"]
    assert isinstance(hits, list) and "Postgres" in hits[0]["content"]
    data = _search(cli, "who has to sign off before we ship to prod?", "-k", "3")
    assert "release manager" in data["hits"][0]["content"]  # type: ignore[index]


def test_nothing_relevant_is_an_answer_and_min_score_zero_shows_every_match(cli: Cli) -> None:
    _store(cli)
    floor = "0.01"  # the weak band's floor, asked for: no small-store allowance
    data = _search(cli, "xyzzy plugh", "--min-score", floor)
    assert data["hits"] == [] and data["nothing_relevant"] is True
    assert data["below_min_score"] == 4
    text = cli("search", "xyzzy plugh", "--min-score", floor)
    assert text.returncode == 0
    assert text.stdout.startswith("Nothing relevant to 'xyzzy plugh' in memory")
    assert "min_score 0" in text.stdout
    everything = _search(cli, "xyzzy plugh", "--min-score", "0")
    assert len(everything["hits"]) == 4  # type: ignore[arg-type]
    real = _search(cli, "how do we get approval to deploy to production?")
    assert real["hits"] and "nothing_relevant" not in real


def test_a_small_store_shows_its_best_few_as_weak_candidates(cli: Cli) -> None:
    # Four entries: fewer than a search reaches, so the best three are shown
    # however weak, each labelled so; none claims more than it has.
    _store(cli)
    data = _search(cli, "xyzzy plugh")
    hits = data["hits"]
    assert isinstance(hits, list) and len(hits) == 3
    assert {hit["band"] for hit in hits} == {"weak"}
    # A real question finds the right entry first, and scores it well above
    # the nonsense query's best guesses. (In a four-entry store a paraphrase
    # this loose calibrates just under the possible band's 0.3: 0.29 here.)
    real = _search(cli, "who has to sign off before we ship to prod?")
    top = real["hits"][0]  # type: ignore[index]
    assert "release manager" in top["content"], real
    assert top["score"] >= 3 * max(hit["score"] for hit in hits), (real, hits)


def test_min_score_out_of_range_is_a_clear_error(cli: Cli) -> None:
    _store(cli)
    result = cli("search", "deploy", "--min-score", "2")
    assert result.returncode != 0
    assert "--min-score" in result.stderr and "Traceback" not in result.stderr


def test_an_index_of_the_former_embedding_input_is_embedded_again_once(cli: Cli) -> None:
    _store(cli)
    assert cli("search", "release approval").returncode == 0
    status = json.loads(cli("status", "--json").stdout)
    index_path = Path(status["index_uri"].removeprefix("sqlite://"))
    assert index_path.exists(), status["index_uri"]
    # What an index written by the previous release looks like: the same
    # model under the former embedding-input rule.
    with sqlite3.connect(index_path) as conn:
        (model,) = conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
        assert "|input:3" in model
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'model'",
            (model.replace("|input:3", "|input:2"),),
        )
    first = _search(cli, "release approval")
    notices = " ".join(first.get("notices", []))  # type: ignore[arg-type]
    assert "every chunk was embedded again" in notices
    assert "release manager" in first["hits"][0]["content"]  # type: ignore[index]
    again = _search(cli, "release approval")
    assert "every chunk was embedded again" not in " ".join(again.get("notices", []))  # type: ignore[arg-type]
