"""The SQLite backends: one file per collection (``file``: open, busy
retry, rebuild after damage, transactions), the notes index (``notes``), the
sessions index (``sessions``), a read-only view of a foreign project's notes
index (``readonly``), the schema (``schema``) and damaged-file handling
(``recovery``).

Kept empty of imports: ``import memlane.index.sqlite.schema`` must not load
the backends (cold start)."""
