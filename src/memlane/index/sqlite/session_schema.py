"""The sessions index's tables, upgrades and column lists.

The tables reuse the notes index's names and filter columns (``chunks``,
``chunks_fts``, ``tombstones``, ``meta`` with the same keys, the
``chunks_filter`` covering index) so the shared legs run on this file
unchanged (see ``sessions.py`` for the column mapping).
"""

from __future__ import annotations

from memlane.index.sqlite import schema

# 2: sources.tail_hash (the rewrite check's hash of the bytes before the
# offset). Version 1 files are upgraded in place (see MIGRATIONS).
SESSIONS_SCHEMA_VERSION = 2

TABLES_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value)",
    # One row per transcript file: how far it was read and what it looked
    # like then, to tell an append (read on from offset) from a rewrite
    # (size shrank, other inode, other first bytes, other bytes just before
    # the offset: read it whole again).
    """
    CREATE TABLE IF NOT EXISTS sources (
        path TEXT PRIMARY KEY,
        format TEXT NOT NULL,
        session_id TEXT,
        offset INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        head_len INTEGER NOT NULL,
        head_hash TEXT NOT NULL,
        garbage INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT,
        tail_hash TEXT NOT NULL DEFAULT ''
    )
    """,
    # The vector BLOB last: metadata reads never touch its overflow pages.
    """
    CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY,
        doc_key TEXT NOT NULL UNIQUE,
        transcript TEXT NOT NULL,
        entry_id TEXT NOT NULL,
        part TEXT NOT NULL DEFAULT '',
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        date TEXT,
        session TEXT,
        content_hash TEXT NOT NULL,
        content TEXT NOT NULL,
        embed INTEGER NOT NULL,
        vec_gen INTEGER,
        vector BLOB,
        UNIQUE (transcript, entry_id, part)
    )
    """,
    "CREATE INDEX IF NOT EXISTS chunks_vec_gen ON chunks(vec_gen)",
    # Rows still waiting for a vector (the backfill's resume point).
    "CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(id) WHERE embed = 1 AND vec_gen IS NULL",
    "CREATE INDEX IF NOT EXISTS chunks_session ON chunks(session, date)",
    # Browsing (session_browse.py): per-day counts and a day's sessions, the
    # sessions by recency (covering: no row is read to group them), a
    # session's first ask and summary, a transcript's messages in order.
    # Created on open when missing, so older files get them too.
    # (date and transcript ride along so the per-day queries read no row.)
    "CREATE INDEX IF NOT EXISTS chunks_day ON chunks(substr(date, 1, 10), session, date, transcript)",
    "CREATE INDEX IF NOT EXISTS chunks_session_span ON chunks(session, date, transcript)",
    "CREATE INDEX IF NOT EXISTS chunks_session_source ON chunks(session, source, date)",
    "CREATE INDEX IF NOT EXISTS chunks_transcript ON chunks(transcript, id)",
    # Same covering index as the main index: lexical.filter_sql names it.
    "CREATE INDEX IF NOT EXISTS chunks_filter ON chunks(id, kind, date, session, source)",
    f"""
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
        content, content='chunks', content_rowid='id', tokenize='{schema.FTS_TOKENIZER}'
    )
    """,
    "CREATE TABLE IF NOT EXISTS tombstones (id INTEGER NOT NULL, gen INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS tombstones_gen ON tombstones(gen)",
    """
    CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, content) VALUES (new.id, new.content);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO tombstones(id, gen)
        SELECT old.id, value FROM meta WHERE key = 'generation' AND old.vec_gen IS NOT NULL;
    END
    """,
)
DROP_DDL = (
    "DROP TABLE IF EXISTS chunks_fts",
    "DROP TABLE IF EXISTS chunks",
    "DROP TABLE IF EXISTS tombstones",
    "DROP TABLE IF EXISTS sources",
)

# Upgrades in place, by the version they start from: sessions data is
# expensive to rebuild (every vector re-embedded), so a new column must not
# cost a re-read. '' = "not recorded yet": the rewrite check then only looks
# for the line end, and the next read of that file records the hash.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE sources ADD COLUMN tail_hash TEXT NOT NULL DEFAULT ''",),
}

SOURCE_COLUMNS = (
    "path, format, session_id, offset, size, mtime_ns, inode, head_len, head_hash, "
    "garbage, unknown, tail_hash"
)

DOC_COLUMNS = "id, doc_key, transcript, entry_id, part, source, date, session, content"

# Which secret redaction the stored texts went through (meta key
# ``docs.redaction``): rows stored before it (or under an older number) are
# rescanned once and rewritten where a secret is found, and until then every
# text read out of the store is redacted on its way out. Bump it when the
# redaction rules learn a kind that old rows may hold.
META_REDACTION = "docs.redaction"
REDACTION_VERSION = 2
REDACT_BATCH = 200
REWRITE_COLUMNS = (
    "doc_key, transcript, entry_id, part, kind, source, date, session, content_hash, content, embed"
)
