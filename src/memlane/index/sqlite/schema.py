"""The SQLite index schema: one file per collection.

FTS layout: ``chunks_fts`` is an *external content* FTS5 table over
``chunks(heading, content)`` kept in sync by triggers. Why:

- the text is stored once (in ``chunks``), not twice as with a regular FTS5
  table; content is most of the file's bytes;
- a contentless table (``content=''``) would need the old values supplied
  by hand on every delete, and ``contentless_delete`` needs SQLite >= 3.43
  (we run on 3.40); triggers get ``old.*`` for free;
- the triggers run inside the writing statement's transaction, so the FTS
  index can never drift from ``chunks`` under delete/replace, whoever writes.

Never use ``INSERT OR REPLACE`` on ``chunks``: its implicit delete does not
fire the delete trigger (recursive_triggers is off) and would desync FTS.

``vec_gen`` is the write generation at which a row's vector was stored (NULL
while the row has no vector). With the ``tombstones`` table (rowids of
deleted vector rows, by generation) it lets a process update its in-memory
vector matrix incrementally instead of reloading every BLOB after each write.
"""

from __future__ import annotations

SCHEMA_VERSION = 3
# What the last version changed (shown when an older index is emptied).
SCHEMA_CHANGE = "porter-stemmed BM25 that also matches the previous entry's text"
# BM25 column weights (heading, content, context): the previous entry's
# text (``context``, see core/types.context_of) counts, but less than the
# chunk's own words (BM25 turn recall_any@10 on LoCoMo 0.68 -> 0.77; with
# the evidence fusion it helps every quality set: docs/benchmarks.md).
FTS_COLUMN_WEIGHTS = (1.0, 1.0, 0.3)

# unicode61 folds case and (with 2) diacritics, including on CJK-adjacent
# Latin text; porter stems English words on top of it (BM25 turn
# recall_any@10 on LoCoMo 0.64 -> 0.68). Query words are read back through
# the same tokenizer without porter and sent unstemmed: FTS5 stems a query
# phrase itself (lexical.py).
FTS_BASE_TOKENIZER = "unicode61 remove_diacritics 2"
FTS_TOKENIZER = f"porter {FTS_BASE_TOKENIZER}"

# meta keys
META_SCHEMA_VERSION = "schema_version"
META_MODEL = "model"
META_DIMENSION = "dimension"
META_GENERATION = "generation"
META_EPOCH = "epoch"  # random id of this file's contents; changes on a wipe
META_TOMBSTONE_FLOOR = "tombstone_floor"  # tombstones at or below were pruned
# Deleted text was purged at this generation: a vector file of an older
# snapshot may hold its vectors, and is neither used nor kept.
META_PURGED_AT = "purged_at"

# Tables and indexes an index file must have (sqlite_master names).
REQUIRED_OBJECTS = frozenset(
    {"meta", "files", "chunks", "chunks_fts", "tombstones", "chunks_filter"}
)

TABLES_DDL = (
    """
    CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS files (
        source TEXT PRIMARY KEY,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        digest TEXT NOT NULL
    )
    """,
    # The vector BLOB is the last column so reading metadata never touches
    # its overflow pages.
    """
    CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY,
        chunk_hash TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        heading TEXT NOT NULL,
        heading_level INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        kind TEXT NOT NULL,
        date TEXT,
        session TEXT,
        content TEXT NOT NULL,
        context TEXT NOT NULL DEFAULT '',
        vec_gen INTEGER,
        vector BLOB
    )
    """,
    "CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source)",
    # Serves both "rows changed since generation G" and "rows without a
    # vector" (vec_gen IS NULL exactly when vector IS NULL).
    "CREATE INDEX IF NOT EXISTS chunks_vec_gen ON chunks(vec_gen)",
    # Covering index for filtered lexical search: the FTS join reads the
    # filter columns from here instead of from the wide chunk rows (content
    # and vector live inline, ~2 rows per page), 17 -> 7 ms at 100k chunks.
    # Queries name it with INDEXED BY; the planner would pick the rowid.
    "CREATE INDEX IF NOT EXISTS chunks_filter ON chunks(id, kind, date, session, source)",
    f"""
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
        heading, content, context,
        content='chunks', content_rowid='id',
        tokenize='{FTS_TOKENIZER}'
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS tombstones (
        id INTEGER NOT NULL,
        gen INTEGER NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS tombstones_gen ON tombstones(gen)",
    # FTS5's persistent rank function: every "ORDER BY rank" uses these weights.
    "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25("
    + ", ".join(str(w) for w in FTS_COLUMN_WEIGHTS)
    + ")')",
    """
    CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, heading, content, context)
        VALUES (new.id, new.heading, new.content, new.context);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, heading, content, context)
        VALUES ('delete', old.id, old.heading, old.content, old.context);
        INSERT INTO tombstones(id, gen)
        SELECT old.id, value FROM meta
        WHERE key = 'generation' AND old.vec_gen IS NOT NULL;
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE OF heading, content, context ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, heading, content, context)
        VALUES ('delete', old.id, old.heading, old.content, old.context);
        INSERT INTO chunks_fts(rowid, heading, content, context)
        VALUES (new.id, new.heading, new.content, new.context);
    END
    """,
)

# Dropped (in this order) when the embedding model changes: recreating the
# tables is far cheaper than deleting 100k rows through the FTS trigger.
DATA_TABLES_DROP = (
    "DROP TABLE IF EXISTS chunks_fts",
    "DROP TABLE IF EXISTS chunks",
    "DROP TABLE IF EXISTS tombstones",
    "DROP TABLE IF EXISTS files",
)
