"""Content terms of free text, by the notes index's own tokenizer.

The lexical match of a prompt against a topic card counts the words they
share. Those words are cut and stemmed exactly as the index cuts and stems
its text (FTS5's ``porter unicode61 remove_diacritics 2``): the texts go
through the index's scratch tokenizer table (``index/legs/lexical.py``,
``QUERY_TOKENIZER_DDL``) on a private in-memory SQLite connection, one per
thread (a connection is thread-bound). So "deploying" meets "deploys" in a
card exactly when it would in the index, and no second stemmer drifts from
the first (docs/adr/0014-surfacing-terms-by-the-index-tokenizer.md).
Stopwords are dropped in the stemmed form, as the index's query side does.

Texts are tokenized in batches inside one transaction that is rolled back:
FTS5 pays for a commit per statement, so a card cache refresh tokenizes all
its new cards at once, and the table is always empty.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Sequence

from memlane.core.words import FUNCTION_WORDS

# Prompt words that say nothing about a subject: a prompt of only these
# matches no card lexically.
STOPWORDS = FUNCTION_WORDS | {"new"}
#: Terms shorter than this are left out.
MIN_TERM_CHARS = 2
#: A text is fed to FTS5 in pieces of at most this many characters.
PIECE_CHARS = 8000

_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        # Imported here: the index's query code pulls numpy, which a session
        # start that never surfaces a topic need not load.
        from memlane.index.legs.lexical import QUERY_TOKENIZER_DDL

        conn = sqlite3.connect(":memory:", isolation_level=None)
        for ddl in QUERY_TOKENIZER_DDL:
            conn.execute(ddl)
        _local.conn = conn
    return conn


def _pieces(text: str) -> list[str]:
    """*text* in pieces of at most ``PIECE_CHARS``, cut at a space (a word is
    never split), so a long card loses no term."""
    out: list[str] = []
    while len(text) > PIECE_CHARS:
        cut = text.rfind(" ", 0, PIECE_CHARS)
        cut = PIECE_CHARS if cut <= 0 else cut
        out.append(text[:cut])
        text = text[cut:]
    out.append(text)
    return out


def _stems(texts: Sequence[str]) -> list[set[str]]:
    """Every stem of each text, as the index holds them."""
    conn = _tokenizer()
    owner: list[int] = []  # piece rowid -> index of its text
    conn.execute("BEGIN")
    try:
        for n, text in enumerate(texts):
            for piece in _pieces(text):
                conn.execute(
                    "INSERT INTO temp.memlane_qtok(rowid, q) VALUES (?, ?)", (len(owner), piece)
                )
                owner.append(n)
        rows = conn.execute("SELECT DISTINCT doc, term FROM temp.memlane_qtok_terms").fetchall()
    finally:
        conn.execute("ROLLBACK")
    out: list[set[str]] = [set() for _ in texts]
    for doc, term in rows:
        out[owner[doc]].add(term)
    return out


@functools.cache
def stemmed_stopwords() -> frozenset[str]:
    """``STOPWORDS`` in the tokenizer's form (once per process)."""
    return frozenset(_stems([" ".join(sorted(STOPWORDS))])[0])


def term_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """The content terms of each text: the index's stems of its words, without
    stopwords and terms shorter than ``MIN_TERM_CHARS``."""
    if not texts:
        return []
    stop = stemmed_stopwords()
    return [
        frozenset(s for s in stems if len(s) >= MIN_TERM_CHARS and s not in stop)
        for stems in _stems(texts)
    ]


def terms(text: str) -> frozenset[str]:
    """The content terms of one text (``term_sets``)."""
    return term_sets([text])[0]
