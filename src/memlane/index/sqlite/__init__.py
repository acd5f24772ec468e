"""The SQLite backends, by composition: each index holds one ``file.SqliteFile``
(open, busy retry, rebuild after damage, write transactions) made with a
``FileKind`` (``notes_file.NotesKind``, ``session_file.SessionKind``: the
schema and what a rebuild means), and its work is plain functions or small
collaborators over that file.

- the notes index (``notes.SqliteIndex``): ``notes_reads``, ``notes_writes``,
  ``notes_search``; a read-only view of a foreign project's (``readonly``);
- the sessions index (``sessions.SessionStore``): ``session_reads``,
  ``session_writes``, ``session_search``, ``session_browse``,
  ``session_redaction``;
- shared: ``connect`` (PRAGMAs, the connection hook), ``statements`` (read
  snapshots, the meta table), the schemas (``schema``, ``session_schema``),
  damaged-file handling (``recovery``), who holds a lock (``busy``).

Kept empty of imports: ``import memlane.index.sqlite.schema`` must not load
the backends (cold start)."""
