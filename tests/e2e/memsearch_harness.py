"""memlane and the real memsearch on one store, one Milvus Lite database, one collection.

``Mesh`` is one project as both tools see it: ``<root>/proj/.memsearch/memory``
for the markdown, ``<root>/milvus.db`` for the Milvus Lite database, one
collection name, and one embedding endpoint (memlane's bundled model served
as OpenAI ``/v1/embeddings``, ``benchmarks/embed_server.py``) that both tools
call with the model name ``all-MiniLM-L6-v2``, so their chunk ids agree.

Each tool runs as its own process, one at a time (Milvus Lite lets one
process open a database): ``memlane`` is memlane's command from this
checkout (``helpers.run_memlane``), ``memsearch`` is the pinned memsearch in
its own venv (``benchmarks/memsearch_venv.py``). ``rows()`` and
``memsearch_state()`` read the collection and ``.index-state.json`` through
memsearch's interpreter, the way memsearch itself reads them.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import make_project, run_memlane, wait_for

MODEL = "all-MiniLM-L6-v2"
TIMEOUT_S = 180.0

# Read a collection the way memsearch's store does (a fresh client, the
# collection loaded, the Lite server released so the lock goes with it).
_ROWS = r"""
import json, sys
from pymilvus import MilvusClient
from milvus_lite.server_manager import server_manager_instance
uri, collection, fields = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
client = MilvusClient(uri=uri)
try:
    if not client.has_collection(collection):
        print(json.dumps(None))
    else:
        client.load_collection(collection)
        rows = client.query(collection, filter='chunk_hash != ""', output_fields=fields)
        print(json.dumps([{k: r.get(k) for k in ["chunk_hash", *fields]} for r in rows]))
finally:
    client.close()
    server_manager_instance.release_server(uri)
"""

# memsearch's own reader of the state file, on the path its writer would use.
_STATE = r"""
import json, sys
from memsearch.index_state import load_index_state, resolve_index_state_path
path = resolve_index_state_path([sys.argv[1]])
print(json.dumps({"path": str(path), "state": load_index_state(path)}))
"""


@dataclass
class Mesh:
    root: Path
    memsearch_python: Path
    base_url: str
    collection: str
    set_collection: bool = True  # MEMLANE_INDEX_COLLECTION, else memlane derives the name

    def __post_init__(self) -> None:
        self.project = make_project(self.root)
        self.store = self.project / ".memsearch" / "memory"
        self.store.mkdir(parents=True, exist_ok=True)
        self.uri = str(self.root / "milvus.db")
        self.memsearch_home = self.root / "memsearch-home"  # no ~/.memsearch config leaks in
        self.memsearch_home.mkdir(exist_ok=True)

    # ---- the store

    def write(self, name: str, text: str) -> Path:
        path = self.store / name
        path.write_text(text, encoding="utf-8")
        return path

    # ---- memlane

    def memlane_env(self) -> dict[str, str]:
        env = {
            "MEMLANE_EMBEDDING_PROVIDER": "openai",
            "MEMLANE_EMBEDDING_BASE_URL": self.base_url,
            "MEMLANE_EMBEDDING_MODEL": MODEL,
            "MEMLANE_INDEX_BACKEND": "milvus",
            "MEMLANE_INDEX_URI": self.uri,
        }
        if self.set_collection:
            env["MEMLANE_INDEX_COLLECTION"] = self.collection
        return env

    def memlane(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_memlane(
            "-C", str(self.project), *args, env=self.memlane_env(), timeout=TIMEOUT_S
        )

    def memlane_json(self, *args: str) -> Any:
        done = self.memlane(*args, "--json")
        assert done.returncode == 0, f"memlane {' '.join(args)} failed:\n{done.stderr}"
        return json.loads(done.stdout)

    def memlane_index(self) -> dict[str, Any]:
        report: dict[str, Any] = self.memlane_json("index")
        assert report["status"] == "ok", report
        return report

    def memlane_hits(self, query: str, k: int = 10) -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = self.memlane_json("search", query, "-k", str(k))["hits"]
        return hits

    # ---- memsearch

    def memsearch_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "MEMSEARCH_"))}
        env.update(HOME=str(self.memsearch_home), OPENAI_API_KEY="dummy")
        return env

    def memsearch_flags(self) -> list[str]:
        return [
            "--provider", "openai",
            "--model", MODEL,
            "--base-url", self.base_url,
            "--api-key", "dummy",
            "--milvus-uri", self.uri,
            "--collection", self.collection,
        ]  # fmt: skip

    def memsearch(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.memsearch_python), "-m", "memsearch", *args, *self.memsearch_flags()],
            cwd=self.project,
            env=self.memsearch_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )

    def memsearch_index(self) -> int:
        """``memsearch index <store>``; the number of chunks it embedded."""
        done = self.memsearch("index", str(self.store))
        assert done.returncode == 0, f"memsearch index failed:\n{done.stderr[-3000:]}"
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith("Indexed ") and last.endswith(" chunks."), done.stdout
        return int(last.split()[1])

    def memsearch_hits(self, query: str, k: int = 10) -> list[dict[str, Any]]:
        done = self.memsearch("search", query, "-k", str(k), "--json-output")
        assert done.returncode == 0, f"memsearch search failed:\n{done.stderr[-3000:]}"
        hits: list[dict[str, Any]] = json.loads(done.stdout)
        return hits

    @contextmanager
    def memsearch_watch(self) -> Iterator[subprocess.Popen[bytes]]:
        """``memsearch watch <store>`` running (it keeps the database open) for the block."""
        log = self.root / "memsearch-watch.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    str(self.memsearch_python),
                    *("-m", "memsearch", "watch", str(self.store)),
                    *self.memsearch_flags(),
                ],
                cwd=self.project,
                env={**self.memsearch_env(), "PYTHONUNBUFFERED": "1"},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for(
                lambda: proc.poll() is not None or b"Watching" in log.read_bytes(),
                timeout=TIMEOUT_S,
                what="memsearch watch started",
            )
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    def _memsearch_script(self, script: str, *args: str) -> Any:
        done = subprocess.run(
            [str(self.memsearch_python), "-c", script, *args],
            cwd=self.project,
            env=self.memsearch_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    def rows(self, *fields: str) -> list[dict[str, Any]] | None:
        """Every row of the collection (chunk_hash and *fields*), None if it does not exist."""
        wanted = list(fields or ("source", "start_line", "end_line"))
        rows: list[dict[str, Any]] | None = self._memsearch_script(
            _ROWS, self.uri, self.collection, json.dumps(wanted)
        )
        return rows

    def hashes(self) -> set[str]:
        return {row["chunk_hash"] for row in self.rows() or []}

    def memsearch_state(self) -> dict[str, Any]:
        """``{"path", "state"}``: the state file memsearch resolves for the store, as it reads it."""
        got: dict[str, Any] = self._memsearch_script(_STATE, str(self.store))
        return got
