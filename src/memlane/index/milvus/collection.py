"""One Milvus collection as the notes index sees it: opened and checked per
operation, created on the first write that carries vectors, bound to a
model, kept in step with the local ledger.

Each operation (``with self._session() as client``) checks that the
collection is still the one the ledger describes: a collection dropped or
recreated by another tool (its ``memlane.epoch`` property changed or gone)
clears the ledger and sets ``rebuilt_reason``, so the engine re-indexes from
markdown. The schema is validated (``schema.check``) before any use. The
check (three round trips) is skipped while nobody else can have touched the
collection: on Milvus Lite while the same server serves only memlane's
indexes (``Connection.generation``), on a server for ``mirror.CHECK_S``.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlane.core.settings import BACKOFF_DELAYS_MS
from memlane.index.milvus import schema
from memlane.index.milvus.connection import Connection
from memlane.index.milvus.ledger import (
    META_COLLECTION,
    META_EPOCH,
    META_MODEL,
    META_URI,
    Ledger,
)
from memlane.index.milvus.mirror import CHECK_S, Mirror
from memlane.index.protocol import DimensionMismatchError

#: The collection property naming who created it / which binding it is.
EPOCH_PROPERTY = "memlane.epoch"
# Threads of one process share one Lite server: two creating the same
# collection at once race inside Milvus Lite (its directory "exists" before
# the collection does). One creation at a time per process; another process
# is kept out by the Lite lock, a server's race by the recheck below.
_CREATE_LOCK = threading.Lock()


class CollectionAccess:
    """The connection, the ledger and the collection checks shared by the
    reads and writes of ``MilvusIndex``."""

    def __init__(
        self,
        uri: str,
        collection: str,
        ledger_path: Path,
        *,
        token: str | None = None,
        backoff_delays_ms: Sequence[int] = BACKOFF_DELAYS_MS,
    ) -> None:
        self.collection = collection
        self._conn = Connection(uri, token=token, backoff_delays_ms=backoff_delays_ms)
        self._ledger = Ledger(ledger_path)
        self._lock = threading.RLock()
        self.rebuilt_reason: str | None = None
        self._dimension: int | None = None  # the collection's, once seen
        self._exists = False  # as of the last operation
        self._seen: tuple[Any, float] | None = None  # (generation, time) of the last check
        # A ledger kept for another uri or collection describes nothing here.
        shown = self._conn.shown
        if (self._ledger.meta(META_URI), self._ledger.meta(META_COLLECTION)) != (shown, collection):
            self._ledger.clear(keep=())
            self._ledger.set_meta(**{META_URI: shown, META_COLLECTION: collection})
        self._mirror = Mirror(self._ledger, shown, collection, copy=self._conn.path is not None)

    @property
    def uri(self) -> str:
        return self._conn.shown

    # -- one operation ---------------------------------------------------------

    @contextlib.contextmanager
    def _session(self, create_dimension: int | None = None) -> Iterator[Any]:
        """A client for one operation with the collection checked (and created
        when ``create_dimension`` is given and it does not exist)."""
        with self._lock:
            path = self._conn.path
            if path is not None and create_dimension is None and not path.exists():
                # Nothing to read from a Lite database never written, and
                # a read must not create one (nor pay pymilvus's import).
                if self._ledger.meta(META_EPOCH) is not None:
                    self._lost(f"the Milvus Lite database {path} was removed")
                self._exists, self._dimension = False, None
                yield None
                return
            with self._conn.client() as client:
                generation = self._conn.generation()
                if not self._still_seen(generation):
                    self._seen = None
                    self._exists = self._check(client, create_dimension)
                    if self._exists:
                        self._seen = (generation, time.monotonic())
                try:
                    yield client
                except BaseException:
                    self._seen = None  # check again: the collection may be gone
                    self._mirror.distrust()
                    raise

    def _still_seen(self, generation: Any) -> bool:
        """Whether the collection checked last is surely still there."""
        if not self._exists or self._seen is None:
            return False
        if generation is not None:
            return bool(self._seen[0] == generation)
        return time.monotonic() - self._seen[1] < CHECK_S

    def _fresh(self, client: Any, fetch_max: int | None = None) -> bool:
        """Inside a session: whether the ledger's mirror is the collection's
        now (compared first if need be; see ``mirror.py``)."""
        if not self._exists:
            if not self._mirror.trusted() or self._mirror.rows():
                self._mirror.empty()
            return True
        return self._mirror.fresh(client, self._conn.generation(), fetch_max=fetch_max)

    def _check(self, client: Any, create_dimension: int | None) -> bool:
        name = self.collection
        if not client.has_collection(name):
            if self._ledger.meta(META_EPOCH) is not None:
                self._lost(f"the collection {name} was dropped by another tool")
            self._dimension = None
            if create_dimension is None:
                return False
            with _CREATE_LOCK:
                if client.has_collection(name):
                    # Another thread of this process created it meanwhile.
                    return self._check(client, None)
                try:
                    schema.create(client, name, create_dimension)
                except Exception:
                    if not client.has_collection(name):
                        raise
                    # Another writer created it a moment ago: check it as found.
                    return self._check(client, None)
            created = secrets.token_hex(8)
            properties = {EPOCH_PROPERTY: created}
            model = self._ledger.meta(META_MODEL)
            if model is not None:
                properties[schema.MODEL_PROPERTY] = model
            self._set_properties(client, properties)
            self._ledger.set_meta(**{META_EPOCH: created})
            self._conn.written(name)
            self._dimension = create_dimension
            client.load_collection(collection_name=name)
            return True
        description = client.describe_collection(collection_name=name)
        self._dimension = schema.check(description, name, self.uri)
        properties = description.get("properties") or {}
        stored_epoch = properties.get(EPOCH_PROPERTY)
        known = self._ledger.meta(META_EPOCH)
        epoch: str | None = str(stored_epoch) if stored_epoch is not None else None
        if epoch is None:
            # Created by another tool (memsearch): give it an epoch so a
            # later drop and recreate is noticed. A server that keeps no
            # properties gets no such check (the ledger is then trusted).
            epoch = secrets.token_hex(8)
            if not self._set_properties(client, {EPOCH_PROPERTY: epoch}):
                epoch = None
        if epoch is not None and known is not None and known != epoch:
            self._lost(f"the collection {name} was recreated by another tool")
        if epoch is not None and known != epoch:
            self._ledger.set_meta(**{META_EPOCH: epoch})
        client.load_collection(collection_name=name)
        return True

    def _lost(self, reason: str) -> None:
        """The collection the ledger described is gone: forget it all."""
        model = self._ledger.meta(META_MODEL)
        self._ledger.clear()
        if model is not None:
            self._ledger.set_meta(**{META_MODEL: model})
        self.rebuilt_reason = f"{reason}; it is rebuilt from the markdown"
        self._forget_caches()

    def _forget_caches(self) -> None:
        """Hook: the collection's contents changed (search caches go)."""

    def _written(self) -> None:
        """This object changed the collection (in or right after an operation)."""
        self._conn.written(self.collection)
        self._mirror.wrote()
        self._forget_caches()

    def _set_properties(self, client: Any, properties: Mapping[str, str]) -> bool:
        """Collection properties where the server keeps them (Lite 3.x does)."""
        try:
            client.alter_collection_properties(
                collection_name=self.collection, properties=dict(properties)
            )
        except Exception:
            return False
        return True

    def _stored_model(self, client: Any) -> str | None:
        if self._exists:
            properties = (
                client.describe_collection(collection_name=self.collection).get("properties") or {}
            )
            model = properties.get(schema.MODEL_PROPERTY)
            if model is not None:
                return str(model)
        return self._ledger.meta(META_MODEL)

    def _dimension_of(self, vectors: Mapping[str, npt.NDArray[np.float32]]) -> int | None:
        """The one dimension of ``vectors`` (None: no vectors; raises on a mix)."""
        sizes = sorted({array.size for array in vectors.values()})
        if len(sizes) > 1:
            raise DimensionMismatchError(
                f"vectors of {sizes[0]} and {sizes[1]} dimensions in one write",
                hint="the embedder changed; call ensure_model with the new model first",
            )
        return sizes[0] if sizes else None

    def _check_dimension(self, dimension: int | None) -> None:
        """Inside a session: ``dimension`` must be the collection's."""
        if dimension is not None:
            schema.check_dimension(self._dimension, dimension, self.collection, self.uri)

    @staticmethod
    def _as_vector(chunk_hash: str, vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.size == 0 or not bool(np.all(np.isfinite(array))):
            raise ValueError(f"vector for chunk {chunk_hash} is empty or not finite")
        return array

    def pop_rebuilt_reason(self) -> str | None:
        """Return and clear ``rebuilt_reason`` (so the notice is shown once)."""
        with self._lock:
            reason, self.rebuilt_reason = self.rebuilt_reason, None
            return reason

    def close(self) -> None:
        self._conn.close()
        self._ledger.close()
