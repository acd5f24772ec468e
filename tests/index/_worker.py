"""A worker process for test_concurrency: replace, remove, embed and search
one shared collection until a deadline. Exits non-zero on any exception."""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from _builders import DIM, MODEL, make_file, unit_vector, vectors_for

from memlane.index.legs import dense_sync
from memlane.index.protocol import SearchFilters
from memlane.index.sqlite.notes import SqliteIndex

VARIANTS = 4
SHARED_FILES = 3
OWN_FILES = 4


def variant_texts(name: str, variant: int) -> list[str]:
    return [f"- {name} variant {variant} bullet {i} about redis cache" for i in range(2 + variant)]


def file_names(workers: int) -> list[str]:
    names = [f"shared_{j}.md" for j in range(SHARED_FILES)]
    names += [f"w{w}_{j}.md" for w in range(workers) for j in range(OWN_FILES)]
    return names


def main() -> None:
    index_path, root, worker, seconds = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        float(sys.argv[4]),
    )
    rng = random.Random(worker)
    mine = [f"shared_{j}.md" for j in range(SHARED_FILES)]
    mine += [f"w{worker}_{j}.md" for j in range(OWN_FILES)]
    counts = {"replace": 0, "remove": 0, "embed": 0, "search": 0}
    # Every few writes a searching process folds them into a new vector file,
    # replacing the one the other processes have mapped.
    dense_sync.REBASE_MIN_ROWS = 8
    idx = SqliteIndex(Path(index_path))
    idx.ensure_model(MODEL, DIM)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        op = rng.random()
        name = rng.choice(mine)
        source = str(Path(root) / "memory" / name)
        if op < 0.45:
            record, chunks = make_file(source, variant_texts(name, rng.randrange(VARIANTS)))
            vectors = vectors_for(chunks) if rng.random() < 0.7 else {}
            idx.replace_file(record, chunks, vectors)
            counts["replace"] += 1
        elif op < 0.55 and not name.startswith("shared"):
            idx.remove_files([source])
            counts["remove"] += 1
        elif op < 0.65:
            missing = idx.missing_vectors(limit=8)
            idx.set_vectors({h: unit_vector(text) for h, text in missing})
            counts["embed"] += 1
        else:
            vector = unit_vector(name) if rng.random() < 0.7 else None
            filters = SearchFilters(source_prefix=str(Path(root) / "memory" / "w"))
            _, hits = idx.search("redis variant", vector, 5, filters if op > 0.9 else None)
            assert all(0.0 <= h.score <= 1.0 for h in hits)
            counts["search"] += 1
    assert idx.rebuilt_reason is None, idx.rebuilt_reason
    idx.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
