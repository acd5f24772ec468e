"""Every word of a stored entry is found by a lexical search for it.

Query words go to FTS5 unstemmed; FTS5's porter tokenizer stems them once,
as it stemmed the indexed text. Sending an already stemmed term made FTS5
stem it again ("agreed" -> "agre" -> "agr"), so ordinary words matched
nothing. Checked in the notes index and the sessions index alike.
"""

from __future__ import annotations

from pathlib import Path

from _builders import make_file, src
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.index.session_docs import BatchWrite, SessionDoc
from memlane.index.sqlite.notes import SqliteIndex
from memlane.index.sqlite.sessions import SessionStore

# Words whose porter stem stems again to something else, ordinary words of
# every length and shape, and words porter leaves alone.
TWICE_STEMMED = [
    "agreed",
    "employee",
    "oppose",
    "degree",
    "committee",
    "databases",
    "guarantee",
    "agree",
    "refugee",
    "coffee",
    "trustee",
    "decreed",
    "freed",
    "absentee",
]
ORDINARY = [
    "deploy",
    "deployment",
    "migrations",
    "running",
    "flaky",
    "tests",
    "caching",
    "cached",
    "approval",
    "managers",
    "release",
    "queues",
    "timeouts",
    "nightly",
    "exported",
    "happily",
    "generalization",
    "relational",
    "conditional",
    "hopefulness",
    "ponies",
    "caresses",
    "sky",
    "news",
    "analysis",
    "authenticating",
    "idempotency",
    "rate-limited",
    "on-call",
]
WORDS = TWICE_STEMMED + ORDINARY


def _notes_index(tmp_path: Path, text: str) -> SqliteIndex:
    index = SqliteIndex(tmp_path / "notes.sqlite")
    record, chunks = make_file(src(tmp_path, "2026-01-01.md"), [text])
    index.replace_file(record, chunks, {})
    return index


def test_every_word_of_a_note_is_found_lexically(tmp_path: Path) -> None:
    text = "- " + " ".join(WORDS)
    with _notes_index(tmp_path, text) as index:
        missed = [w for w in WORDS if not index.search(w, None, 1)[1]]
    assert missed == []


def test_the_reported_sentence_is_found_by_each_of_its_words(tmp_path: Path) -> None:
    with _notes_index(tmp_path, "- we agreed to oppose the employee guarantee") as index:
        for word in ("agreed", "oppose", "employee", "guarantee"):
            mode, hits = index.search(word, None, 3)
            assert mode == "lexical" and len(hits) == 1, word


def test_every_word_of_a_session_message_is_found_lexically(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.sessions.sqlite") as store:
        doc = SessionDoc(
            transcript=str(tmp_path / "t.jsonl"),
            entry_id="e1",
            session_id="s1",
            role="user",
            timestamp="2026-01-01T10:00:00Z",
            text=" ".join(WORDS),
            embed=False,
        )
        store.commit(BatchWrite(docs=[doc]))
        missed = [w for w in WORDS if not store.search(w, None, 1)[1]]
    assert missed == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=14),
        min_size=1,
        max_size=12,
    )
)
def test_any_word_of_an_entry_finds_it(tmp_path_factory: object, words: list[str]) -> None:
    from memlane.index.legs.query import STOPWORDS

    tmp = Path(str(tmp_path_factory.mktemp("stem")))  # type: ignore[attr-defined]
    with _notes_index(tmp, "- " + " ".join(words)) as index:
        for word in words:
            if word in STOPWORDS:
                continue  # dropped from queries with other words; alone it is kept
            assert index.search(word, None, 1)[1], word
