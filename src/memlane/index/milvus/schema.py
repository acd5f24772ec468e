"""memsearch's collection schema, checked on open, and filters as Milvus
expressions.

The schema is memsearch's exactly (its ``store.py``), so a collection either
tool creates is one both can read and write. memlane's filter metadata rides
along as dynamic fields (``memlane_kind``, ``memlane_date``,
``memlane_session``), which memsearch neither reads nor removes; rows
memsearch wrote lack them until memlane re-indexes their file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memlane.index.protocol import DimensionMismatchError, IndexSchemaError, SearchFilters

PRIMARY = "chunk_hash"
VECTOR = "embedding"
SPARSE = "sparse_vector"
BM25_FUNCTION = "bm25_fn"
KIND = "memlane_kind"
DATE = "memlane_date"
SESSION = "memlane_session"
#: The collection property holding memlane's vector-space string.
MODEL_PROPERTY = "memlane.model"
#: Read-your-writes for the reads that decide what to write or delete (a
#: server's default, Bounded, may not yet show a row upserted a moment ago).
STRONG = "Strong"

#: Scalar fields a chunk row is read back from.
CHUNK_FIELDS = [
    PRIMARY,
    "content",
    "source",
    "heading",
    "heading_level",
    "start_line",
    "end_line",
    KIND,
    DATE,
    SESSION,
]


@dataclass(frozen=True)
class Field:
    name: str
    type_name: str  # pymilvus DataType name
    max_length: int | None = None


#: memsearch's fields, in its order (the embedding's dim is the model's).
FIELDS = (
    Field(PRIMARY, "VARCHAR", 64),
    Field(VECTOR, "FLOAT_VECTOR"),
    Field("content", "VARCHAR", 65535),
    Field(SPARSE, "SPARSE_FLOAT_VECTOR"),
    Field("source", "VARCHAR", 1024),
    Field("heading", "VARCHAR", 1024),
    Field("heading_level", "INT64"),
    Field("start_line", "INT64"),
    Field("end_line", "INT64"),
)


def create(client: Any, collection: str, dimension: int) -> None:
    """Create memsearch's collection (and its indexes) for ``dimension``."""
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(enable_dynamic_field=True, description="")
    for field in FIELDS:
        kwargs: dict[str, Any] = {}
        if field.max_length is not None:
            kwargs["max_length"] = field.max_length
        if field.name == PRIMARY:
            kwargs["is_primary"] = True
        if field.name == VECTOR:
            kwargs["dim"] = dimension
        if field.name == "content":
            kwargs["enable_analyzer"] = True
        schema.add_field(field_name=field.name, datatype=DataType[field.type_name], **kwargs)
    schema.add_function(
        Function(
            name=BM25_FUNCTION,
            function_type=FunctionType.BM25,
            input_field_names=["content"],
            output_field_names=[SPARSE],
        )
    )
    index_params = client.prepare_index_params()
    index_params.add_index(field_name=VECTOR, index_type="FLAT", metric_type="COSINE")
    index_params.add_index(
        field_name=SPARSE, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
    )
    client.create_collection(collection_name=collection, schema=schema, index_params=index_params)


def _type_name(value: Any) -> str:
    return str(getattr(value, "name", value))


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


def differences(description: Mapping[str, Any]) -> list[str]:
    """What an existing collection's ``describe_collection`` lacks of
    memsearch's schema (empty: memlane can use it)."""
    found = {f.get("name"): f for f in description.get("fields", [])}
    problems: list[str] = []
    for field in FIELDS:
        actual = found.get(field.name)
        if actual is None:
            problems.append(f"no field {field.name}")
            continue
        if _type_name(actual.get("type")) != field.type_name:
            problems.append(
                f"{field.name} is {_type_name(actual.get('type'))}, not {field.type_name}"
            )
            continue
        params = actual.get("params") or {}
        if field.max_length is not None and int(params.get("max_length", 0)) < field.max_length:
            problems.append(
                f"{field.name} holds {params.get('max_length')} characters, not {field.max_length}"
            )
    primary = [name for name, f in found.items() if f.get("is_primary")]
    if primary and primary != [PRIMARY]:
        problems.append(f"primary key {primary[0]}, not {PRIMARY}")
    content = found.get("content")
    if content is not None and not _truthy((content.get("params") or {}).get("enable_analyzer")):
        problems.append("content has no analyzer")
    functions = description.get("functions") or []
    bm25 = [
        f
        for f in functions
        if _type_name(f.get("type")) == "BM25"
        and list(f.get("input_field_names") or []) == ["content"]
        and list(f.get("output_field_names") or []) == [SPARSE]
    ]
    if not bm25:
        problems.append(f"no BM25 function from content to {SPARSE}")
    if not description.get("enable_dynamic_field", False):
        problems.append("dynamic fields are off")
    return problems


def dimension_of(description: Mapping[str, Any]) -> int | None:
    for field in description.get("fields", []):
        if field.get("name") == VECTOR:
            dim = (field.get("params") or {}).get("dim")
            return int(dim) if dim is not None else None
    return None


def check(description: Mapping[str, Any], collection: str, shown_uri: str) -> int | None:
    """Raise ``IndexSchemaError`` unless the collection is memsearch's; its dimension."""
    problems = differences(description)
    if problems:
        raise IndexSchemaError(
            f"collection {collection} at {shown_uri} has a schema memlane cannot use "
            f"({'; '.join(problems)})",
            hint="set index.collection to another name, or point index.uri elsewhere",
        )
    return dimension_of(description)


def check_dimension(stored: int | None, wanted: int, collection: str, shown_uri: str) -> None:
    if stored is not None and stored != wanted:
        raise DimensionMismatchError(
            f"collection {collection} at {shown_uri} holds {stored}-dimensional vectors, "
            f"the embedding model gives {wanted}",
            hint="use the model the collection was built with, or set index.collection "
            "to another name (memlane never drops a shared collection by itself)",
        )


# -- filter expressions ------------------------------------------------------------


def literal(value: str) -> str:
    """``value`` as a Milvus string literal (backslash and quote escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def like_prefix(prefix: str) -> str:
    """A ``like`` pattern matching strings that start with ``prefix`` literally:
    its own ``%``, ``_`` and ``\\`` are escaped for ``like`` first, then the
    whole for the string literal."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return literal(escaped + "%")


def expression(filters: SearchFilters | None) -> str:
    """The Milvus filter equal to the SQLite backend's (``lexical.filter_sql``):
    a row without a date fails any date bound."""
    if filters is None or filters.is_empty():
        return ""
    parts: list[str] = []
    if filters.kind:
        parts.append(f"{KIND} == {literal(filters.kind)}")
    if filters.source_prefix:
        parts.append(f"source like {like_prefix(filters.source_prefix)}")
    if filters.session:
        parts.append(f"{SESSION} == {literal(filters.session)}")
    if filters.after:
        parts.append(f"{DATE} >= {literal(filters.after)}")
    if filters.before:
        parts.append(f"{DATE} < {literal(filters.before)}")
    return " and ".join(f"({part})" for part in parts)
