"""The ledger's mirror of a Milvus collection: every row's chunk hash,
source, memlane metadata and words, and each word's document frequency.

With it, a search knows the row count and every query word's document
frequency without asking Milvus (before it, each unknown word cost a BM25
probe returning up to 1,024 rows), and a file's write knows the rows of its
source without a ``source == …`` scan (Milvus Lite has no scalar index).

Words are split as ``search.analyzed`` splits them: exactly Milvus Lite's
standard analyzer (``\\w+`` on the lower-cased content), so a word's count
here is the number of rows Milvus's BM25 finds for it.

It is kept in step two ways:

- **memlane's writes**: each upsert and delete of this index updates the
  mirror right after Milvus took it (an error in between leaves the mirror
  untrusted until it is compared again);
- **anyone else's**: memsearch, another machine, another ledger. The mirror
  is compared with the collection (``Mirror.compare``: its primary keys
  listed in one pass, the rows it does not know fetched, the ones gone
  dropped) whenever one of them may have written: on Milvus Lite, when the
  database's server was started again or used by anything but a memlane
  index (another process can write only while this one does not hold the
  database: Lite locks it), or an index object of this process with
  another ledger wrote the collection (objects sharing a ledger keep it in
  step for each other); on a server, once per process, then its row count
  every ``CHECK_S`` and a full comparison every ``VERIFY_S``.

A search whose comparison would fetch more than ``SEARCH_FETCH_MAX`` rows
(a large collection memsearch filled) does not wait for it: it probes
Milvus for its words as before, and the next write (an index run) compares.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memlane.index.milvus import replica, schema
from memlane.index.milvus.ledger import Ledger
from memlane.index.milvus.search import analyzed, count
from memlane.index.protocol import SearchFilters

#: How often a server's row count is compared with the mirror's (seconds).
CHECK_S = 10.0
#: How often a server's whole collection is compared (seconds).
VERIFY_S = 600.0
#: A search fetches at most this many unknown rows to compare the mirror.
SEARCH_FETCH_MAX = 4096
LIST_BATCH = 4096
FETCH_BATCH = 512
META_MIRROR = "mirror"
_FIELDS = [schema.PRIMARY, "content", "source", schema.KIND, schema.DATE, schema.SESSION]

#: Writes by memlane's index objects of this process, per (uri, collection)
#: and ledger path.
_WRITES: dict[tuple[str, str], Counter[str]] = {}
_WRITES_LOCK = threading.Lock()


def terms_of(content: str) -> list[str]:
    """The distinct words of a row's content, as Milvus's BM25 counts them."""
    return sorted(set(analyzed(content)))


@dataclass(frozen=True)
class MirrorRow:
    chunk_hash: str
    source: str
    kind: str | None
    date: str | None
    session: str | None
    content: str
    #: On Milvus Lite: the row's vector (float32 bytes) and display fields
    #: (``replica.DISPLAY_FIELDS`` after ``content``), for the local copy.
    vector: bytes | None = None
    display: tuple[Any, ...] = ()

    @classmethod
    def of(cls, row: dict[str, Any]) -> MirrorRow:
        """A row as Milvus returns it (``_FIELDS``, with the vector and
        display fields when asked for) or as memlane writes it."""
        vector = row.get(schema.VECTOR)
        return cls(
            str(row[schema.PRIMARY]),
            str(row.get("source") or ""),
            row.get(schema.KIND),
            row.get(schema.DATE),
            row.get(schema.SESSION),
            str(row.get("content") or ""),
            None if vector is None else replica.blob_of(vector),
            tuple(row.get(f) for f in replica.DISPLAY_FIELDS[1:]),
        )


def _copy(conn: sqlite3.Connection, r: MirrorRow) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO replica(chunk_hash, vector, content, heading, heading_level, "
        "start_line, end_line) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (r.chunk_hash, r.vector, r.content, *r.display),
    )


def _bump(conn: sqlite3.Connection) -> tuple[str | None, str]:
    """The copy changed: a matrix held by any process is out of date.
    (the version before, the version now)."""
    found = conn.execute(
        "SELECT value FROM meta WHERE key = ?", (replica.META_REPLICA_VERSION,)
    ).fetchone()
    after = secrets.token_hex(8)
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
        (replica.META_REPLICA_VERSION, after),
    )
    return (None if found is None else str(found[0])), after


def _add(conn: sqlite3.Connection, rows: Iterable[MirrorRow], copy: bool) -> None:
    """Mirror ``rows``; ``copy``: keep their vectors and display fields too."""
    for r in rows:
        if copy and r.vector is not None:
            _copy(conn, r)
        meta = (r.source, r.kind, r.date, r.session, r.chunk_hash)
        known = conn.execute("SELECT 1 FROM rows WHERE chunk_hash = ?", (r.chunk_hash,))
        if known.fetchone() is not None:
            # The same chunk hash is the same content: only metadata moves.
            conn.execute(
                "UPDATE rows SET source = ?, kind = ?, date = ?, session = ? WHERE chunk_hash = ?",
                meta,
            )
            continue
        terms = terms_of(r.content)
        conn.execute(
            "INSERT INTO rows(source, kind, date, session, chunk_hash, terms) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (*meta, " ".join(terms)),
        )
        conn.executemany(
            "INSERT INTO terms(term, df) VALUES (?, 1) ON CONFLICT(term) DO UPDATE SET df = df + 1",
            [(t,) for t in terms],
        )


def _remove(conn: sqlite3.Connection, hashes: Iterable[str]) -> None:
    for h in hashes:
        conn.execute("DELETE FROM replica WHERE chunk_hash = ?", (h,))
        row = conn.execute("SELECT terms FROM rows WHERE chunk_hash = ?", (h,)).fetchone()
        if row is None:
            continue
        conn.execute("DELETE FROM rows WHERE chunk_hash = ?", (h,))
        terms = [(t,) for t in str(row[0] or "").split()]
        conn.executemany("UPDATE terms SET df = df - 1 WHERE term = ?", terms)
        conn.executemany("DELETE FROM terms WHERE term = ? AND df <= 0", terms)


class Mirror:
    """The mirror tables of one ledger, and this index object's view of
    whether they can be trusted now."""

    def __init__(self, ledger: Ledger, uri: str, collection: str, *, copy: bool = False) -> None:
        self._ledger = ledger
        #: Keep each row's vector and display fields (Milvus Lite: ``replica.py``).
        self.copy = copy
        self.local = replica.LocalDense(ledger) if copy else None
        self._key = (uri, collection)
        self._own = str(ledger.path)
        #: (Lite server generation, writes through other ledgers in this
        #: process) at the last comparison; None: compare before trusting.
        self._mark: tuple[Any, int] | None = None
        self._checked = -math.inf
        self._listed = -math.inf
        self._gave_up: tuple[Any, int] | None = None
        #: Comparisons made (each lists the collection): what tests and
        #: benchmarks read.
        self.comparisons = 0

    # -- reads (local) ---------------------------------------------------------

    def trusted(self) -> bool:
        return self._ledger.meta(META_MIRROR) is not None

    def rows(self) -> int:
        return int(self._ledger.read("SELECT count(*) FROM rows")[0][0])

    def doc_freq(self, terms: Sequence[str]) -> dict[str, int]:
        """Every word of ``terms`` with its document frequency (0: in no row)."""
        out = dict.fromkeys(terms, 0)
        wanted = list(out)
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" * len(part))
            found = self._ledger.read(f"SELECT term, df FROM terms WHERE term IN ({marks})", part)
            out.update({str(t): int(df) for t, df in found})
        return out

    def of_source(self, source: str) -> dict[str, tuple[Any, Any, Any]]:
        """chunk hash -> (kind, date, session) of the rows of ``source``."""
        found = self._ledger.read(
            "SELECT chunk_hash, kind, date, session FROM rows WHERE source = ?", (source,)
        )
        return {str(h): (k, d, s) for h, k, d, s in found}

    def matching(self, filters: SearchFilters) -> int:
        """The rows ``filters`` keep, as ``schema.expression(filters)`` keeps
        them in Milvus (a row without the field fails its condition)."""
        where, params = replica.rows_where(filters)
        return int(self._ledger.read("SELECT count(*) FROM rows" + where, params)[0][0])

    def known(self, hashes: Sequence[str]) -> set[str]:
        """Those of ``hashes`` the mirror holds."""
        out: set[str] = set()
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ", ".join("?" * len(part))
            found = self._ledger.read(
                f"SELECT chunk_hash FROM rows WHERE chunk_hash IN ({marks})", part
            )
            out.update(str(h) for (h,) in found)
        return out

    def hashes_of(self, sources: Sequence[str]) -> list[str]:
        out: list[str] = []
        for source in sources:
            found = self._ledger.read("SELECT chunk_hash FROM rows WHERE source = ?", (source,))
            out.extend(str(h) for (h,) in found)
        return out

    def below(self, prefix: str) -> list[tuple[str, str]]:
        """(chunk hash, source) of the rows whose source starts with ``prefix``."""
        found = self._ledger.read(
            "SELECT chunk_hash, source FROM rows WHERE substr(source, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return [(str(h), str(s)) for h, s in found]

    def sources(self) -> set[str]:
        return {str(s) for (s,) in self._ledger.read("SELECT DISTINCT source FROM rows")}

    # -- writes ----------------------------------------------------------------

    def update(self, added: Iterable[MirrorRow] = (), removed: Iterable[str] = ()) -> None:
        """This index wrote ``added`` and deleted ``removed`` (in Milvus)."""
        added, removed = list(added), list(removed)
        versions = None
        with self._ledger.transaction() as conn:
            _remove(conn, removed)
            _add(conn, added, self.copy)
            if self.copy and (added or removed):
                versions = _bump(conn)
        if self.local is not None and versions is not None:
            copied = [(r.chunk_hash, r.vector) for r in added if r.vector is not None]
            if len(copied) == len(added):
                self.local.applied(*versions, copied, set(removed))
            else:  # a row without its vector: the copy is read again
                self.local.drop()

    def wrote(self) -> None:
        """This index object wrote the collection: index objects with another
        ledger compare again."""
        with _WRITES_LOCK:
            _WRITES.setdefault(self._key, Counter())[self._own] += 1

    def _others(self) -> int:
        with _WRITES_LOCK:
            counts = _WRITES.get(self._key, Counter())
            return sum(n for ledger, n in counts.items() if ledger != self._own)

    def distrust(self) -> None:
        """An operation failed half way (Milvus may hold a write the mirror
        does not): every user of this ledger compares before trusting it."""
        self._mark = None
        with contextlib.suppress(Exception):
            self._ledger.set_meta(**{META_MIRROR: None})

    def empty(self) -> None:
        """The collection does not exist: the mirror is empty, and trusted."""
        with self._ledger.transaction() as conn:
            conn.execute("DELETE FROM rows")
            conn.execute("DELETE FROM terms")
            conn.execute("DELETE FROM replica")
            _bump(conn)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (META_MIRROR,))
        self._mark = None

    # -- against the collection --------------------------------------------------

    def fresh(
        self,
        client: Any,
        generation: Any,
        *,
        fetch_max: int | None = None,
        now: float | None = None,
    ) -> bool:
        """Whether the mirror is the collection's, comparing it first when
        someone else may have written; False: a comparison would fetch more
        than ``fetch_max`` rows and was left for later (nothing changed)."""
        mark = (generation, self._others())
        at = time.monotonic() if now is None else now
        if self.trusted() and self._mark == mark:
            if generation is not None or at - self._checked < CHECK_S:
                return True
            if at - self._listed < VERIFY_S and count(client, self._key[1]) == self.rows():
                self._checked = at
                return True
        if fetch_max is not None and self._gave_up == mark:
            return False
        if not self.compare(client, fetch_max=fetch_max):
            self._gave_up = mark
            return False
        self._mark, self._checked, self._listed = mark, at, at
        return True

    def compare(self, client: Any, *, fetch_max: int | None = None) -> bool:
        """Make the mirror the collection's: list its primary keys, fetch the
        rows the mirror does not know, drop the ones gone. False (nothing
        changed) when more than ``fetch_max`` rows would be fetched."""
        name = self._key[1]
        listed: set[str] = set()
        iterator = client.query_iterator(
            collection_name=name, batch_size=LIST_BATCH, filter="", output_fields=[schema.PRIMARY]
        )
        try:
            while batch := iterator.next():
                listed.update(str(row[schema.PRIMARY]) for row in batch)
        finally:
            iterator.close()
        self.comparisons += 1
        known = {str(h) for (h,) in self._ledger.read("SELECT chunk_hash FROM rows")}
        new = sorted(listed - known)
        if self.copy:
            # Rows mirrored before the copy was kept (an older ledger) are
            # fetched once more for their vectors.
            copied = {str(h) for (h,) in self._ledger.read("SELECT chunk_hash FROM replica")}
            new = sorted(listed - copied)
        if fetch_max is not None and len(new) > fetch_max:
            return False
        fields = [*_FIELDS, *replica.DISPLAY_FIELDS[1:], schema.VECTOR] if self.copy else _FIELDS
        fetched: list[MirrorRow] = []
        for start in range(0, len(new), FETCH_BATCH):
            got = client.get(
                collection_name=name, ids=new[start : start + FETCH_BATCH], output_fields=fields
            )
            fetched.extend(MirrorRow.of(dict(row)) for row in got)
        with self._ledger.transaction() as conn:
            gone = sorted(known - listed)
            _remove(conn, gone)
            _add(conn, fetched, self.copy)
            if self.copy and (gone or fetched):
                _bump(conn)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (META_MIRROR,))
        return True
