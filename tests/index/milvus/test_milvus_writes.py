"""The Milvus notes index's writes and reads against real Milvus Lite:
replace_file, remove_files, chunk_hashes, files, pending chunks and their
vectors, get, vector_of, export, reset, drop, and rows memsearch wrote."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from _builders import DIM, MODEL, make_file, src, unit_vector, vectors_for
from _lite import open_index, raw_client

from memlane.index.milvus.notes import MilvusIndex
from memlane.index.protocol import FileRecord


def test_replace_file_inserts_replaces_and_deletes(
    milvus_index: MilvusIndex, tmp_path: Path
) -> None:
    source = src(tmp_path, "2026-01-01.md")
    record, chunks = make_file(source, ["alpha one", "beta two", "gamma three"], date="2026-01-01")
    assert milvus_index.replace_file(record, chunks, vectors_for(chunks)) == 3
    assert milvus_index.chunk_hashes(source) == {c.chunk.chunk_hash for c in chunks}
    assert milvus_index.files() == {source: record}
    assert milvus_index.count() == 3

    # The same content again inserts nothing; a changed file keeps what it shares.
    assert milvus_index.replace_file(record, chunks, vectors_for(chunks)) == 0
    record2, chunks2 = make_file(source, ["alpha one", "delta four"], date="2026-01-01")
    assert milvus_index.replace_file(record2, chunks2, vectors_for(chunks2)) == 1
    assert milvus_index.chunk_hashes(source) == {c.chunk.chunk_hash for c in chunks2}
    assert milvus_index.count() == 2
    assert milvus_index.get(chunks[1].chunk.chunk_hash) is None

    got = milvus_index.get_indexed(chunks2[1].chunk.chunk_hash)
    assert got is not None
    assert got.chunk == chunks2[1].chunk
    assert (got.kind, got.date, got.session) == ("journal", "2026-01-01", None)
    vector = milvus_index.vector_of(chunks2[1].chunk.chunk_hash)
    assert vector is not None
    assert np.allclose(vector, unit_vector("delta four"), atol=1e-6)

    assert milvus_index.remove_files([source]) == 2
    assert milvus_index.count() == 0
    assert milvus_index.files() == {}
    assert milvus_index.chunk_hashes(source) == set()


def test_chunks_without_vectors_wait_in_the_ledger(
    milvus_index: MilvusIndex, tmp_path: Path
) -> None:
    source = src(tmp_path, "2026-01-02.md")
    record, chunks = make_file(source, ["first note", "second note"])
    vectors = vectors_for(chunks)
    only_first = {chunks[0].chunk.chunk_hash: vectors[chunks[0].chunk.chunk_hash]}
    assert milvus_index.replace_file(record, chunks, only_first) == 2
    assert milvus_index.missing_vectors() == [(chunks[1].chunk.chunk_hash, "second note")]
    assert milvus_index.missing_vectors(limit=0) == []
    stats = milvus_index.stats()
    assert (stats["chunks"], stats["vectors"], stats["pending"]) == (2, 1, 1)
    # A pending chunk is known (not embedded again) and readable.
    assert chunks[1].chunk.chunk_hash in milvus_index.chunk_hashes(source)
    assert milvus_index.get(chunks[1].chunk.chunk_hash) == chunks[1].chunk
    assert milvus_index.vector_of(chunks[1].chunk.chunk_hash) is None

    milvus_index.set_vectors({**vectors, "unknown": unit_vector("x")})
    assert milvus_index.missing_vectors() == []
    assert milvus_index.stats()["vectors"] == 2
    assert milvus_index.vector_of(chunks[1].chunk.chunk_hash) is not None


def test_a_collection_is_created_on_the_first_write_with_vectors(
    lite_db: Path, collection: str, ledger_path: Path, tmp_path: Path
) -> None:
    index = open_index(lite_db, collection, ledger_path)
    assert index.ensure_model(MODEL, None) is False
    record, chunks = make_file(src(tmp_path, "a.md"), ["no vector yet"])
    index.replace_file(record, chunks, {})
    assert index.health()["exists"] is False
    index.set_vectors(vectors_for(chunks))
    health = index.health()
    assert (health["exists"], health["rows"], health["dimension"]) == (True, 1, DIM)
    assert index.stats()["model"] == MODEL
    index.close()


def test_export_yields_every_row_with_its_vector_then_pending(
    milvus_index: MilvusIndex, tmp_path: Path
) -> None:
    record, chunks = make_file(src(tmp_path, "b.md"), [f"note {i}" for i in range(7)])
    vectors = vectors_for(chunks[:5])
    milvus_index.replace_file(record, chunks, vectors)
    batches = list(milvus_index.export(batch=2))
    exported = [pair for batch in batches for pair in batch]
    assert all(len(batch) <= 2 for batch in batches)
    assert {item.chunk.chunk_hash for item, _ in exported} == {c.chunk.chunk_hash for c in chunks}
    for item, vector in exported:
        if item.chunk.chunk_hash in vectors:
            assert vector is not None
            assert np.allclose(vector, vectors[item.chunk.chunk_hash], atol=1e-6)
            assert item.chunk == next(
                c.chunk for c in chunks if c.chunk.chunk_hash == item.chunk.chunk_hash
            )
        else:
            assert vector is None


def test_reset_deletes_a_prefix_and_keeps_the_collection(
    milvus_index: MilvusIndex, tmp_path: Path
) -> None:
    mine_record, mine = make_file(str(tmp_path / "mine" / "a.md"), ["mine one", "mine two"])
    other_record, other = make_file(str(tmp_path / "other" / "a.md"), ["theirs"])
    milvus_index.replace_file(mine_record, mine, vectors_for(mine))
    milvus_index.replace_file(other_record, other, vectors_for(other))
    # memsearch's schema has no BM25 context column.
    assert milvus_index.chunk_contexts(mine_record.source) == dict.fromkeys(
        [c.chunk.chunk_hash for c in mine], ""
    )
    assert milvus_index.reset(str(tmp_path / "mine") + "/") == 2
    assert milvus_index.count() == 1
    assert milvus_index.purge_deleted() is None  # Milvus Lite compacts
    assert milvus_index.files() == {}  # the ledger is cleared: a reindex rescans
    assert milvus_index.health()["exists"] is True
    milvus_index.drop()
    assert milvus_index.health()["exists"] is False
    assert milvus_index.count() == 0


def test_rows_memsearch_wrote_get_memlanes_metadata_without_reembedding(
    milvus_index: MilvusIndex, lite_db: Path, collection: str, tmp_path: Path
) -> None:
    source = src(tmp_path, "2026-03-04.md")
    record, chunks = make_file(source, ["written by memsearch"], kind="topic", date="2026-03-04")
    memsearch_vector = unit_vector("memsearch's own embedding")
    seed_record, seed_chunks = make_file(src(tmp_path, "seed.md"), ["seed"])
    milvus_index.replace_file(seed_record, seed_chunks, vectors_for(seed_chunks))
    # memsearch's record: its fields only, no memlane_* metadata.
    c = chunks[0].chunk
    with raw_client(lite_db) as client:
        client.upsert(
            collection_name=collection,
            data=[
                {
                    "chunk_hash": c.chunk_hash,
                    "embedding": memsearch_vector.tolist(),
                    "content": c.content,
                    "source": c.source,
                    "heading": c.heading,
                    "heading_level": c.heading_level,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                }
            ],
        )
    before = milvus_index.get_indexed(c.chunk_hash)
    assert before is not None
    assert (before.kind, before.date) == ("journal", None)
    # The indexer asks what is stored before embedding: nothing to embed.
    assert milvus_index.chunk_hashes(source) == {c.chunk_hash}
    assert milvus_index.replace_file(record, chunks, {}) == 0
    after = milvus_index.get_indexed(c.chunk_hash)
    assert after is not None
    assert (after.kind, after.date) == ("topic", "2026-03-04")
    assert milvus_index.missing_vectors() == []
    kept = milvus_index.vector_of(c.chunk_hash)
    assert kept is not None
    assert np.allclose(kept, memsearch_vector, atol=1e-6)


def test_a_fresh_ledger_lists_the_collections_sources_for_a_rescan(
    lite_db: Path, collection: str, tmp_path: Path
) -> None:
    store = tmp_path / "memory"
    store.mkdir()
    here = store / "2026-01-05.md"
    here.write_text("x")
    elsewhere = str(tmp_path / "another-machine" / "2026-01-05.md")
    index = open_index(lite_db, collection, tmp_path / "ledger1.sqlite")
    index.ensure_model(MODEL, DIM)
    for source in (str(here), elsewhere):
        record, chunks = make_file(source, [f"a note in {source}"])
        index.replace_file(record, chunks, vectors_for(chunks))
    index.close()

    fresh = open_index(lite_db, collection, tmp_path / "ledger2.sqlite")
    assert fresh.ensure_model(MODEL, DIM) is False
    files = fresh.files()
    # Only sources that are files here: another machine's are left alone.
    assert list(files) == [str(here)]
    assert files[str(here)] != FileRecord(str(here), 0, 0, "")
    assert files[str(here)].mtime_ns != here.stat().st_mtime_ns
    fresh.close()


def test_threads_share_one_lite_server(lite_db: Path, collection: str, tmp_path: Path) -> None:
    """Threads of one process writing at once, each through its own index
    object: one server, refcounted, nothing lost."""
    first = open_index(lite_db, collection, tmp_path / "ledger-0.sqlite")
    first.ensure_model(MODEL, DIM)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        index = open_index(lite_db, collection, tmp_path / f"ledger-{n}.sqlite")
        try:
            index.ensure_model(MODEL, DIM)
            for f in range(3):
                record, chunks = make_file(src(tmp_path, f"t{n}-{f}.md"), [f"thread {n} file {f}"])
                index.replace_file(record, chunks, vectors_for(chunks))
                index.search(f"thread {n}", unit_vector("q"), 3)
        except BaseException as exc:
            errors.append(exc)
        finally:
            index.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert first.count() == 9
    first.close()
