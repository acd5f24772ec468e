"""The collection memlane creates is memsearch's; a collection that is not,
or holds another dimension, is refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _builders import DIM, MODEL, make_file, src, vectors_for
from _lite import open_index, raw_client

from memlane.index.milvus import schema
from memlane.index.protocol import (
    DimensionMismatchError,
    IndexSchemaError,
    IndexUnavailableError,
)


def shape(description: dict[str, Any]) -> dict[str, Any]:
    """What a schema is, without ids and names that differ per collection."""
    fields = [
        (
            f["name"],
            str(f["type"]),
            bool(f.get("is_primary")),
            bool(f.get("is_function_output")),
            tuple(sorted((k, str(v)) for k, v in (f.get("params") or {}).items())),
        )
        for f in description["fields"]
    ]
    functions = [
        (f["name"], str(f["type"]), tuple(f["input_field_names"]), tuple(f["output_field_names"]))
        for f in description["functions"]
    ]
    return {
        "fields": fields,
        "functions": functions,
        "dynamic": description["enable_dynamic_field"],
    }


@pytest.mark.parity
def test_the_schema_is_memsearchs(tmp_path: Path, lite_db: Path, collection: str) -> None:
    store_mod = pytest.importorskip("memsearch.store")
    theirs_db = tmp_path / "memsearch.db"
    store = store_mod.MilvusStore(
        uri=str(theirs_db), collection="ms_theirs", dimension=DIM, _create_if_missing=True
    )
    with raw_client(theirs_db) as client:
        theirs = shape(client.describe_collection(collection_name="ms_theirs"))
        their_indexes = {
            name: client.describe_index(collection_name="ms_theirs", index_name=name)
            for name in client.list_indexes(collection_name="ms_theirs")
        }
    store.close()

    index = open_index(lite_db, collection, tmp_path / "ledger.sqlite")
    index.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "a.md"), ["one note"])
    index.replace_file(record, chunks, vectors_for(chunks))
    with raw_client(lite_db) as client:
        ours = shape(client.describe_collection(collection_name=collection))
        our_indexes = {
            name: client.describe_index(collection_name=collection, index_name=name)
            for name in client.list_indexes(collection_name=collection)
        }
    index.close()
    assert ours == theirs
    assert set(our_indexes) == set(their_indexes)
    for name, described in our_indexes.items():
        for key in ("index_type", "metric_type", "field_name"):
            assert described.get(key) == their_indexes[name].get(key)


def foreign_collection(client: Any, name: str, dim: int) -> None:
    from pymilvus import DataType

    schema = client.create_schema(enable_dynamic_field=False)
    schema.add_field(field_name="id", datatype=DataType.INT64, is_primary=True)
    schema.add_field(field_name="vector", datatype=DataType.FLOAT_VECTOR, dim=dim)
    index_params = client.prepare_index_params()
    index_params.add_index(field_name="vector", index_type="FLAT", metric_type="COSINE")
    client.create_collection(collection_name=name, schema=schema, index_params=index_params)


def test_a_foreign_collection_is_refused(lite_db: Path, collection: str, ledger_path: Path) -> None:
    with raw_client(lite_db) as client:
        foreign_collection(client, collection, DIM)
    index = open_index(lite_db, collection, ledger_path)
    with pytest.raises(IndexSchemaError) as caught:
        index.ensure_model(MODEL, DIM)
    message = str(caught.value)
    assert f"collection {collection} at milvus-lite://" in message
    assert "no field chunk_hash" in message
    assert "set index.collection to another name" in message
    assert "\n" not in message
    assert isinstance(caught.value, IndexUnavailableError)
    with pytest.raises(IndexSchemaError):
        index.search("anything", None, 3)
    index.close()


def test_another_dimension_is_refused_never_dropped(
    lite_db: Path, collection: str, ledger_path: Path, tmp_path: Path
) -> None:
    index = open_index(lite_db, collection, ledger_path)
    index.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "a.md"), ["kept"])
    index.replace_file(record, chunks, vectors_for(chunks))
    index.close()

    other = open_index(lite_db, collection, tmp_path / "other-ledger.sqlite")
    with pytest.raises(DimensionMismatchError) as caught:
        other.ensure_model("another-model", DIM * 2)
    assert f"holds {DIM}-dimensional vectors, the embedding model gives {DIM * 2}" in str(
        caught.value
    )
    record2, chunks2 = make_file(src(tmp_path, "b.md"), ["wide"])
    with pytest.raises(DimensionMismatchError):
        other.replace_file(record2, chunks2, vectors_for(chunks2, dim=DIM * 2))
    assert other.health()["rows"] == 1
    other.close()


def test_a_new_model_clears_the_ledger_and_says_so(
    lite_db: Path, collection: str, ledger_path: Path, tmp_path: Path
) -> None:
    index = open_index(lite_db, collection, ledger_path)
    index.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "a.md"), ["some note"])
    index.replace_file(record, chunks, vectors_for(chunks))
    assert index.files() != {}
    assert index.ensure_model(MODEL, DIM) is False
    assert index.ensure_model("test-model-2", DIM) is True
    assert index.files() == {}
    assert index.stats()["model"] == "test-model-2"
    index.close()
    # The model is the collection's: another ledger sees it.
    again = open_index(lite_db, collection, tmp_path / "second.sqlite")
    assert again.ensure_model("test-model-2", DIM) is False
    again.close()


def test_a_collection_dropped_by_another_tool_is_rebuilt(
    lite_db: Path, collection: str, ledger_path: Path, tmp_path: Path
) -> None:
    index = open_index(lite_db, collection, ledger_path)
    index.ensure_model(MODEL, DIM)
    record, chunks = make_file(src(tmp_path, "a.md"), ["some note"])
    index.replace_file(record, chunks, vectors_for(chunks))
    with raw_client(lite_db) as client:
        client.drop_collection(collection_name=collection)
    assert index.ensure_model(MODEL, DIM) is True
    reason = index.pop_rebuilt_reason()
    assert reason is not None
    assert "dropped by another tool" in reason
    assert index.pop_rebuilt_reason() is None
    assert index.files() == {}

    # Written again, then dropped and created anew by another tool.
    index.replace_file(record, chunks, vectors_for(chunks))
    with raw_client(lite_db) as client:
        client.drop_collection(collection_name=collection)
        schema.create(client, collection, DIM)
    assert index.files() == {}
    reason = index.pop_rebuilt_reason()
    assert reason is not None
    assert "recreated by another tool" in reason
    assert index.count() == 0
    index.close()
