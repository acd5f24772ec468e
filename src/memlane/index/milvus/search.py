r"""Search over a Milvus collection: both legs run in Milvus, memlane's fusion
and calibrated score are applied to what Milvus returns, so a hit's score
means what it means on the SQLite backend (``legs/relevance.py``).

- **dense leg**: ``embedding`` searched with COSINE, ``candidate_count(k)``
  deep, filters as a Milvus expression;
- **lexical leg**: BM25 on ``sparse_vector`` (Milvus's analyzer over
  ``content``) for the query's content words (stopwords dropped, as the
  SQLite leg drops them). Milvus Lite returns BM25 distances negated; the
  absolute value is the score;
- **evidence** (the default fusion): coverage is bm25 over the ideal
  bm25 of the query, the sum of Milvus's idf of its content words,
  ``log(1 + (N - df + 0.5) / (df + 0.5))`` (a document of average length
  holding a word once scores exactly its idf). The document frequencies come
  from one BM25 search with one text per word: each text's hits are exactly
  the rows holding that word (capped at ``DF_PROBE_LIMIT``; a word found that
  often is counted on a sixteenth of the rows and scaled), unless the
  caller knows them all: the ledger's mirror of the collection keeps every
  word's count exact (``mirror.py``), and then the leg is one BM25 search.
  The collection's mean cosine for the query is the query against the
  centroid of the collection's unit vectors (estimated from a sample by the
  caller).

Round trips: with every count known, a search is two calls, as memsearch's
(its hybrid search and a row count): the dense search and the BM25 search,
each returning the rows' fields (the BM25 hits with their vectors, whose
cosines a lexical-only candidate needs), so no ``get`` follows. Given a
local copy of the vectors (``LocalVectors``: Milvus Lite, ``replica.py``),
it is the BM25 search alone, returning chunk hashes.

``run_analyzer`` is not implemented by Milvus Lite, so words are split here
the way Milvus's standard analyzer does (Unicode words, lower-cased: Milvus
Lite 3.x's is exactly ``\w+`` on the lower-cased text); Milvus analyzes each
probe text itself, so a word split differently still probes the right rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memlane.core.settings import IndexSettings
from memlane.core.types import SearchMode
from memlane.index.legs import relevance
from memlane.index.legs.dense import DenseResult
from memlane.index.legs.fusion import EVIDENCE, Fused, FusionMethod
from memlane.index.legs.lexical import LexicalQuery, LexicalRanking
from memlane.index.legs.query import STOPWORDS, query_terms
from memlane.index.milvus import schema

#: Rows a document-frequency probe may return per word. Milvus Lite's cost
#: grows with the rows a search returns (at 10k chunks a common word costs
#: ~0.15 s at 1,024 and ~3 s at 16,384, Milvus's maximum): a word found this
#: often is counted again on a sixteenth of the collection (``SAMPLE_PREFIXES``).
DF_PROBE_LIMIT = 1024
#: A common word's frequency is measured on the rows whose chunk hash (a hex
#: sha256) starts with one of these, a uniform sixteenth, and scaled up.
SAMPLE_PREFIXES = ("0",)
SAMPLE_SHARE = 16
MAX_QUERY_CHARS = 8000
_WORD_RE = re.compile(r"\w+", re.UNICODE)

BM25_PARAMS = {"metric_type": "BM25"}
COSINE_PARAMS = {"metric_type": "COSINE"}


def analyzed(text: str) -> list[str]:
    """``text``'s words as Milvus's standard analyzer sees them (Lite: exactly)."""
    return _WORD_RE.findall(text.lower())


def words(text: str) -> list[str]:
    """The query's words (its first ``MAX_QUERY_CHARS``), analyzed."""
    return analyzed(text[:MAX_QUERY_CHARS])


def query_words(text: str) -> list[str]:
    """The words whose document frequency a lexical leg for ``text`` needs."""
    return query_terms(words(text), STOPWORDS)


def bm25_idf(docs_with_term: int, total_docs: int) -> float:
    """Milvus's BM25 idf."""
    return math.log(1.0 + (total_docs - docs_with_term + 0.5) / (docs_with_term + 0.5))


def unit(vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


@dataclass(frozen=True)
class Collection:
    """What a search needs to know about the collection it searches."""

    name: str
    rows: int  # every row (the N of BM25's idf)
    centroid: npt.NDArray[np.float32] | None  # mean of the unit vectors
    doc_freq: dict[str, int]  # the caller's cache for this row count; filled here
    exact: bool = False  # doc_freq holds every query word (absent: in no row)
    matching: int | None = None  # the rows the search's filter keeps, when known


#: Rows returned by a search (by chunk hash): what the caller would ``get``.
Rows = dict[str, dict[str, Any]]


class LocalVectors(Protocol):
    """The dense side of a search read from a local copy of the collection's
    vectors (``replica.py``), the search's filters already bound."""

    def leg(self, qvec: npt.NDArray[np.float32], n: int) -> list[tuple[str, float]]:
        """The ``n`` best (chunk hash, cosine), best first."""
        ...

    def cosines(self, qvec: npt.NDArray[np.float32], hashes: Iterable[str]) -> dict[str, float]:
        """The cosine of each of ``hashes`` the copy holds."""
        ...


def _hits(result: Any, rows: Rows | None = None) -> list[tuple[str, float]]:
    if not result:
        return []
    out = []
    for hit in result[0]:
        key = str(hit[schema.PRIMARY])
        if rows is not None:
            entity = hit.get("entity") or {}
            rows[key] = {schema.PRIMARY: key, **entity}
        out.append((key, float(hit["distance"])))
    return out


def _bm25(
    client: Any,
    coll: Collection,
    texts: list[str],
    limit: int,
    expr: str,
    fields: list[str] | None = None,
) -> Any:
    return client.search(
        collection_name=coll.name,
        data=texts,
        anns_field=schema.SPARSE,
        limit=limit,
        filter=expr,
        search_params=BM25_PARAMS,
        output_fields=fields or [schema.PRIMARY],
    )


def _best(result: Any, n: int, rows: Rows | None = None) -> list[tuple[str, float]]:
    hits = [(h, abs(d)) for h, d in _hits(result, rows)]
    hits.sort(key=lambda item: (-item[1], item[0]))
    return hits[:n]


def lexical_leg(
    client: Any, coll: Collection, query: str, n: int, expr: str, rows: Rows | None = None
) -> tuple[list[tuple[str, float]], LexicalQuery]:
    """BM25 candidates and the query's ideal bm25. Words whose document
    frequency is not known are probed in the same call when no filter
    applies (a filter would cut the probe's counts), else in a second.
    ``rows``: filled with the hits' fields and vectors (when nothing is probed)."""
    terms = query_words(query)
    if not terms or coll.rows == 0:
        return [], LexicalQuery((), 0.0)
    text = " ".join(terms)
    unknown = [] if coll.exact else [t for t in terms if t not in coll.doc_freq]
    probe_limit = min(coll.rows, DF_PROBE_LIMIT)
    hits: list[tuple[str, float]] | None = None
    if unknown:
        if expr:
            probed = _bm25(client, coll, unknown, probe_limit, "")
        else:
            result = _bm25(client, coll, [text, *unknown], max(n, probe_limit), "")
            hits, probed = _best(result, n), result[1:]
        common = []
        for term, found in zip(unknown, probed, strict=True):
            coll.doc_freq[term] = len(found)
            if len(found) >= probe_limit and probe_limit < coll.rows:
                common.append(term)
        if common:
            _sample_frequencies(client, coll, common, probe_limit)
    freq = {t: coll.doc_freq.get(t, 0) for t in terms}
    # A word no row holds counts as a word of one row (as on SQLite): an
    # absent telling word leaves the query weakly covered.
    ideal = sum(bm25_idf(max(freq[t], 1), coll.rows) for t in terms)
    present = tuple(t for t in terms if freq[t] > 0)
    if not present:
        return [], LexicalQuery(present, ideal)
    if hits is None:
        fields = [*schema.CHUNK_FIELDS, schema.VECTOR] if rows is not None else None
        hits = _best(_bm25(client, coll, [text], n, expr, fields), n, rows)
    return hits, LexicalQuery(present, ideal)


def _sample_frequencies(client: Any, coll: Collection, terms: list[str], limit: int) -> None:
    """The frequency of words the probe found at its cap, estimated on a
    uniform sixteenth of the rows (by chunk-hash prefix) and scaled up;
    never below what the probe already saw, never above the row count."""
    sample = " or ".join(f'{schema.PRIMARY} like "{p}%"' for p in SAMPLE_PREFIXES)
    result = _bm25(client, coll, terms, limit, sample)
    for term, found in zip(terms, result, strict=True):
        estimate = len(found) * SAMPLE_SHARE
        coll.doc_freq[term] = min(coll.rows, max(coll.doc_freq[term], estimate))


def dense_leg(
    client: Any,
    coll: Collection,
    qvec: npt.NDArray[np.float32],
    n: int,
    expr: str,
    rows: Rows | None = None,
) -> list[tuple[str, float]]:
    result = client.search(
        collection_name=coll.name,
        data=[qvec.tolist()],
        anns_field=schema.VECTOR,
        limit=n,
        filter=expr,
        search_params=COSINE_PARAMS,
        output_fields=schema.CHUNK_FIELDS if rows is not None else [schema.PRIMARY],
    )
    hits = _hits(result, rows)
    hits.sort(key=lambda item: (-item[1], item[0]))
    return hits


def cosines(
    client: Any, collection: str, qvec: npt.NDArray[np.float32], hashes: Iterable[str]
) -> dict[str, float]:
    """The cosine of each row among ``hashes`` with the query (their stored
    embeddings fetched): a lexical-only candidate's dense evidence."""
    wanted = list(hashes)
    if not wanted:
        return {}
    rows = client.get(collection_name=collection, ids=wanted, output_fields=[schema.VECTOR])
    query = unit(qvec)
    return {str(row[schema.PRIMARY]): float(unit(row[schema.VECTOR]) @ query) for row in rows}


def count(client: Any, collection: str, expr: str = "") -> int:
    rows = client.query(
        collection_name=collection,
        filter=expr,
        output_fields=["count(*)"],
        consistency_level=schema.STRONG,
    )
    return int(rows[0]["count(*)"]) if rows else 0


def centroid(client: Any, collection: str, sample: int) -> npt.NDArray[np.float32] | None:
    """The mean of up to ``sample`` rows' unit vectors (None: no rows)."""
    rows = client.query(
        collection_name=collection, filter="", output_fields=[schema.VECTOR], limit=sample
    )
    if not rows:
        return None
    matrix = np.asarray([row[schema.VECTOR] for row in rows], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray((matrix / norms).mean(axis=0), dtype=np.float32)


def run(
    client: Any,
    coll: Collection,
    query: str,
    qvec: npt.NDArray[np.float32] | None,
    mode: SearchMode,
    *,
    n: int,
    expr: str,
    settings: IndexSettings,
    method: FusionMethod | None,
    rows: Rows | None = None,
    lexical: tuple[list[tuple[str, float]], LexicalQuery] | None = None,
    local: LocalVectors | None = None,
) -> list[tuple[str, float]]:
    """The legs ``mode`` asks for, fused: (chunk hash, score), best first.
    ``rows``: filled with what the searches returned of each hit's row;
    ``lexical``: the lexical leg when the caller ran it already;
    ``local``: the dense leg and cosines read here, not asked of Milvus."""
    if mode != "semantic" and lexical is None:
        lexical = lexical_leg(client, coll, query, n, expr, rows)
    dense_hits = None
    if mode != "lexical" and qvec is not None:
        dense_hits = (
            local.leg(qvec, n)
            if local is not None
            else dense_leg(client, coll, qvec, n, expr, rows)
        )
    # The fusion functions rank integer row ids; a hash's id is its place
    # in sorted order, so ties fall the same way on every call.
    found = {h for h, _ in dense_hits or []} | {h for h, _ in (lexical[0] if lexical else [])}
    ids = {h: i for i, h in enumerate(sorted(found))}
    hashes = {i: h for h, i in ids.items()}

    def as_ids(hits: list[tuple[str, float]]) -> list[tuple[int, float]]:
        return [(ids[h], score) for h, score in hits]

    dense = None
    if dense_hits is not None and qvec is not None:
        matching = coll.matching
        if matching is None:
            matching = coll.rows if not expr else count(client, coll.name, expr)
        mean = float(unit(qvec) @ coll.centroid) if coll.centroid is not None else 0.0
        dense = DenseResult(as_ids(dense_hits), mean, matching)
    ranking = LexicalRanking(as_ids(lexical[0]), lexical[1]) if lexical is not None else None
    fused: Fused
    if settings.fusion == EVIDENCE or method is None:

        def cosines_of(rowids: Iterable[int]) -> dict[int, float]:
            if qvec is None:
                return {}
            wanted = [hashes[r] for r in rowids]
            if local is not None:
                return {ids[h]: value for h, value in local.cosines(qvec, wanted).items()}
            known = rows or {}
            query_unit = unit(qvec)
            got = {
                h: float(unit(known[h][schema.VECTOR]) @ query_unit)
                for h in wanted
                if known.get(h, {}).get(schema.VECTOR) is not None
            }
            got.update(cosines(client, coll.name, qvec, [h for h in wanted if h not in got]))
            return {ids[h]: value for h, value in got.items()}

        fused = relevance.evidence_ranking(
            relevance.gather(dense, ranking, cosines_of), mode, settings.cosine_scale
        )
    else:
        fused = relevance.rank_fusion(
            method, dense, ranking, alpha=settings.alpha, rrf_k=settings.rrf_k
        )
    return [(hashes[rowid], score) for rowid, score in fused]


def rows_by_hash(client: Any, collection: str, hashes: list[str]) -> Mapping[str, dict[str, Any]]:
    if not hashes:
        return {}
    rows = client.get(collection_name=collection, ids=hashes, output_fields=schema.CHUNK_FIELDS)
    return {str(row[schema.PRIMARY]): dict(row) for row in rows}
