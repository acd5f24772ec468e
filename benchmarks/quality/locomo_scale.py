"""LoCoMo inside distractors: retrieval quality when the store is large (issue 32).

Per development conversation, memlane's default hybrid search (bundled
model; ``--systems`` adds locomo.py's others, e.g. bm25 and dense, to see
which leg loses) is measured on two stores, each in its own project and
MEMLANE_HOME:

- small: the conversation alone, exactly as ``locomo.py`` runs it (one
  anchored entry per turn, ``Memory.sync``, every question through
  ``Memory.search`` with k = 20);
- distractors: the same store, indexed the same way, and ``--distractors``
  short messages (``distractors.py``: coding-agent messages, chat about
  people's lives, meeting notes) in daily files of the same store, dated
  over the conversations' years on the days the conversation leaves free,
  so they share its index. Each distractor's anchor has a turn id of its own
  (``X<n>:1``), so a distractor hit takes a rank like any other hit.

The distractors never name the data's speakers (``--names other``, the
default: thousands of messages about another "Jon" would be rival facts
about him, not distractors); ``--names shared`` keeps the names.

The turns go through memlane's real indexing path (``Memory.sync``). The
distractors are embedded once by the same bundled model and kept on disk
(``~/.cache/memlane-bench/distractor-vectors/``, keyed by the embedding
input and the vector space); memlane's own ``Indexer`` writes them into the
index from those vectors, so a re-run costs only the index build.

    python benchmarks/quality/locomo_scale.py [--distractors 100000 | --quick]
        [--systems bm25,dense,default] [--names other|shared] [--embed-only]
        [--conversations conv-26] [--seed 32] [--out FILE]

``--quick``: 10,000 distractors. ``--embed-only`` fills the vector cache and
stops (start it early: the model embeds about 200 short texts per second on
2 cores). Writes benchmarks/results/quality-locomo-scale.json. Target
(issue 32): |Δ recall_any@10| <= 0.02 for the default system.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from distractors import SECOND_SENTENCE, VectorCache, distractors  # noqa: E402
from locomo import (  # noqa: E402
    CATEGORIES,
    DEFAULT_DATA,
    KS,
    TOP_K,
    System,
    ask,
    parse_system,
    prepare_conversation,
    run_conversation,
    summarise,
)

from _common import print_table  # noqa: E402

DEFAULT_OUT = REPO / "benchmarks" / "results" / "quality-locomo-scale.json"
DEFAULT_DISTRACTORS = 100_000
QUICK_DISTRACTORS = 10_000
TARGET_DELTA = 0.02
FIRST_DAY = date(2022, 1, 1)  # the dev conversations run from 2022-01 to 2024-01
LAST_DAY = date(2024, 1, 31)
SESSION_ENTRIES = 10
BIG_SUFFIX = " +distractors"
DISTRACTOR_TURN_PREFIX = "X"  # LoCoMo's turns are D<session>:<n>
EMBED_FLUSH = 2_000


# -- distractor files ---------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """Which distractors (``distractors.distractors``' arguments)."""

    n: int
    seed: int = 32
    avoid: tuple[str, ...] = ()
    second: float = SECOND_SENTENCE


def write_distractor_files(
    store: Path, recipe: Recipe, busy_days: set[str] | frozenset[str] = frozenset()
) -> list[Path]:
    """The recipe's distractors as daily files of ``store`` on the days not in ``busy_days``.

    Distractor i goes to the i-th share of the free days (so files stay in
    date order), sessions of ``SESSION_ENTRIES`` entries, its anchor's turn
    ``X<i>:1``. The entries' text (what is embedded) does not depend on the
    day, so one vector cache serves every conversation.
    """
    from memlane.core.types import Anchor
    from memlane.store.daily import format_entry

    span = (LAST_DAY - FIRST_DAY).days + 1
    days = [
        d for d in (FIRST_DAY + timedelta(i) for i in range(span)) if d.isoformat() not in busy_days
    ]
    by_day: dict[int, list[tuple[int, str, str]]] = {}
    for i, (hhmm, text) in enumerate(
        distractors(recipe.n, recipe.seed, recipe.avoid, recipe.second)
    ):
        by_day.setdefault(i * len(days) // recipe.n, []).append((i, hhmm, text))
    paths = []
    for slot, items in sorted(by_day.items()):
        day = days[slot].isoformat()
        items.sort(key=lambda item: (item[1], item[0]))
        parts = [f"# {day}\n"]
        for j, (i, hhmm, text) in enumerate(items):
            session = j // SESSION_ENTRIES
            heading = f"## Session {hhmm}\n" if j % SESSION_ENTRIES == 0 else ""
            turn = f"{DISTRACTOR_TURN_PREFIX}{i}:1"
            anchor = Anchor(session=f"x{day}-{session}", turn=turn, transcript="none")
            parts.append("\n" + heading + format_entry(hhmm, anchor, text))
        path = store / f"{day}.md"
        path.write_text("".join(parts), encoding="utf-8")
        paths.append(path)
    return paths


def embedding_texts(paths: Sequence[Path], store: Path, model: str) -> list[str]:
    """What memlane's indexer would give the embedder for these files."""
    from memlane.engine.journal.indexer import describe_chunks, embedding_inputs
    from memlane.store.chunker import chunk_markdown

    texts: list[str] = []
    for path in paths:
        chunks = chunk_markdown(path.read_text("utf-8"), str(path), model)
        texts.extend(embedding_inputs(describe_chunks(chunks, path, store)).values())
    return texts


class CachedVectors:
    """An embedder answering from the vector cache; a text it lacks is
    embedded by the real model (and cached)."""

    def __init__(self, cache: VectorCache, real: Any) -> None:
        self.cache = cache
        self.real = real
        self.name = real.name
        self.dimension = real.dimension
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        for text in self.cache.missing(texts):
            self.cache.put(text, np.asarray(self.real.embed([text])[0], dtype=np.float32))
            self.embedded += 1
        return np.stack([self.cache.vectors[self.cache.key(text)] for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.real.embed_query(text), dtype=np.float32)


def _commit() -> str:
    import subprocess

    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def speakers(data: Sequence[dict[str, Any]]) -> list[str]:
    """Every speaker's first name in the data file (the same for any subset run)."""
    names = set()
    for conv in data:
        for key in ("speaker_a", "speaker_b"):
            names.update(str(conv["conversation"].get(key, "")).split()[:1])
    return sorted(names)


# -- runs ---------------------------------------------------------------------------


def open_memory(project: Path, env: dict[str, str] | None = None) -> Any:
    from memlane.core.config import load_config
    from memlane.core.scope import resolve_scope
    from memlane.engine.project import Memory

    return Memory(resolve_scope(project), load_config(None, env=env or {}))


def _space(mem: Any) -> str:
    from memlane.embed.factory import vector_space

    return vector_space(mem.config.embedding)


def fill_cache(recipe: Recipe, root: Path) -> dict[str, Any]:
    """Embed the distractors the cache lacks, flushing as it goes."""
    home = root / "embed" / "home"
    home.mkdir(parents=True)
    os.environ["MEMLANE_HOME"] = str(home)
    project = root / "embed" / "project"
    (project / ".git").mkdir(parents=True)
    with open_memory(project) as mem:
        store = mem.scope.store
        store.mkdir(parents=True, exist_ok=True)
        texts = embedding_texts(write_distractor_files(store, recipe), store, mem.embedding.model)
        cache = VectorCache(_space(mem))
        todo = cache.missing(texts)
        print(f"{len(texts)} distractors, {len(todo)} to embed into {cache.dir}", file=sys.stderr)
        embedder = mem.embedding.embedder
        if todo and embedder is None:
            raise SystemExit(f"the bundled model did not load: {mem.embedding.problem}")
        started = time.perf_counter()
        for i, text in enumerate(todo, 1):
            cache.put(text, np.asarray(embedder.embed([text])[0], dtype=np.float32))
            if i % EMBED_FLUSH == 0 or i == len(todo):
                cache.flush()
                rate = i / (time.perf_counter() - started)
                print(f"  {i}/{len(todo)} embedded, {rate:.0f}/s", file=sys.stderr, flush=True)
    return {
        "distractors": len(texts),
        "embedded": len(todo),
        "embed_s": time.perf_counter() - started,
    }


def index_distractors(mem: Any, store: Path, paths: Sequence[Path]) -> tuple[Any, int]:
    """Distractor files into ``mem``'s index by memlane's ``Indexer``, their
    vectors from the cache; returns the index report and how many texts the
    cache lacked (embedded now by the real model)."""
    from memlane.engine.journal.indexer import Indexer

    real = mem.embedding.embedder
    if real is None:
        raise SystemExit(f"the bundled model did not load: {mem.embedding.problem}")
    embedder = CachedVectors(VectorCache(_space(mem)), real)
    indexer = Indexer(store, mem.index, mem.embedding.model, lambda: embedder)
    report = indexer.apply(indexer.plan_files(str(p) for p in paths))
    embedder.cache.flush()
    return report, embedder.embedded


def with_distractors(system: System) -> System:
    return System(f"{system.name}{BIG_SUFFIX}", system.mode, system.env)


def run_with_distractors(
    conv: dict[str, Any],
    systems: Sequence[System],
    root: Path,
    recipe: Recipe,
) -> dict[str, Any]:
    """The conversation synced as ``locomo.py`` syncs it, then the recipe's
    distractors written into the same store and indexed from the cache;
    every system's questions on that one index."""
    prepared = prepare_conversation(conv, root, notes=False)
    busy = {p.stem for p in prepared.store.glob("*.md")}
    out: dict[str, Any] = {"sample_id": prepared.sample, "questions": len(prepared.questions)}
    per_system: dict[str, Any] = {}
    for i, system in enumerate(systems):
        with open_memory(prepared.project, system.env) as mem:
            if i == 0:
                started = time.perf_counter()
                mem.sync()
                out["turns_index_s"] = round(time.perf_counter() - started, 1)
                paths = write_distractor_files(prepared.store, recipe, busy)
                started = time.perf_counter()
                report, embedded = index_distractors(mem, prepared.store, paths)
                out["distractors_index_s"] = round(time.perf_counter() - started, 1)
                out["chunks"] = report.total_chunks
                out["distractor_files"] = len(paths)
                out["embedded_during_build"] = embedded
            started = time.perf_counter()
            per_system[with_distractors(system).name] = ask(
                mem, prepared.questions, system.mode, prepared.stored
            )
            if i == 0:
                out["first_system_ask_s"] = round(time.perf_counter() - started, 1)
    out["systems"] = per_system
    return out


def attribution(runs: Sequence[dict[str, Any]], system: System) -> dict[str, Any]:
    """Why r@10 moved: questions lost (found alone, not with distractors) and
    gained; of the lost, how many had a distractor in their top 10 (the
    others lost to the conversation's own turns, reordered by the bigger
    store's statistics); distractors per top 10 on average."""
    lost = gained = lost_to_distractor = 0
    in_top: list[int] = []
    for run in runs:
        small = run["systems"][system.name]["rows"]
        big = run["systems"][with_distractors(system).name]
        for (_, s_row), (_, b_row), ranked in zip(small, big["rows"], big["ranked"], strict=True):
            distractors_in_top = sum(d.startswith(DISTRACTOR_TURN_PREFIX) for d in ranked[:10])
            in_top.append(distractors_in_top)
            if s_row["r@10"] and not b_row["r@10"]:
                lost += 1
                lost_to_distractor += distractors_in_top > 0
            elif b_row["r@10"] and not s_row["r@10"]:
                gained += 1
    return {
        "lost": lost,
        "gained": gained,
        "lost_with_a_distractor_in_top10": lost_to_distractor,
        "distractors_per_top10": round(sum(in_top) / max(len(in_top), 1), 2),
    }


# -- report -------------------------------------------------------------------------


def _delta(small: float, big: float) -> str:
    return f"{big - small:+.3f}"


def print_report(summary: dict[str, Any], systems: Sequence[System], n: int) -> None:
    keys = [f"r@{k}" for k in KS] + ["frac@10", "s@1"]
    cats = [CATEGORIES[c] for c in sorted(CATEGORIES)]
    rows, cat_rows = [], []
    for system in systems:
        small, big = summary[system.name], summary[with_distractors(system).name]
        for data, name in ((small, system.name), (big, with_distractors(system).name)):
            o, by = data["overall"], data["by_category"]
            rows.append(
                {"system": name, **{k: o[k] for k in keys}, "p50 ms": data["latency_ms"]["p50"]}
            )
            cat_rows.append({"system": name, **{c: by[c]["r@10"] for c in cats if c in by}})
        so, bo = small["overall"], big["overall"]
        rows.append({"system": "  Δ", **{k: _delta(so[k], bo[k]) for k in keys}, "p50 ms": ""})
        sb, bb = small["by_category"], big["by_category"]
        cat_rows.append(
            {"system": "  Δ", **{c: _delta(sb[c]["r@10"], bb[c]["r@10"]) for c in cats if c in sb}}
        )
    title = f"LoCoMo dev turns alone and inside {n:,} distractors ({BIG_SUFFIX.strip()})"
    print_table(title, rows)
    print_table("r@10 per category", cat_rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--distractors", type=int, default=DEFAULT_DISTRACTORS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_DISTRACTORS:,} distractors")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--conversations", default="", help="comma-separated sample ids")
    parser.add_argument(
        "--embed-only", action="store_true", help="fill the vector cache, then stop"
    )
    parser.add_argument(
        "--names",
        choices=("other", "shared"),
        default="other",
        help="other (default): distractors never name the conversations' speakers; "
        "shared: they do (thousands of rival facts about the same first names)",
    )
    parser.add_argument(
        "--systems",
        default="default",
        help="locomo.py's systems, comma-separated (default; bm25,dense,default shows the legs)",
    )
    parser.add_argument(
        "--second-sentence",
        type=float,
        default=SECOND_SENTENCE,
        help=f"share of distractors with a second sentence ({SECOND_SENTENCE}: 94 characters "
        "on average; 0.9: 132, LoCoMo's turns' length)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    systems = [parse_system(s.strip()) for s in args.systems.split(",") if s.strip()]
    if "default" not in [s.name for s in systems]:
        systems.append(parse_system("default"))  # the target is the default's
    n = QUICK_DISTRACTORS if args.quick else args.distractors
    if n < 1:
        raise SystemExit("--distractors must be at least 1")
    # Every store gets its own MEMLANE_HOME; the derived int8 model stays
    # in one shared cache (built once, then reused), as in locomo.py.
    from memlane.core.paths import CACHE_DIR_ENV, cache_dir

    os.environ.setdefault(CACHE_DIR_ENV, str(cache_dir()))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memlane-locomo-scale-") as tmp:
        if not args.data.is_file():
            raise SystemExit(f"no LoCoMo data at {args.data}; pass --data PATH")
        data = json.loads(args.data.read_text(encoding="utf-8"))
        avoid = speakers(data) if args.names == "other" else []
        recipe = Recipe(n, args.seed, tuple(avoid), args.second_sentence)
        filled = fill_cache(recipe, Path(tmp))
        if args.embed_only:
            print(json.dumps(filled))
            return 0
        wanted = {s for s in args.conversations.split(",") if s}
        convs = [c for c in data if not wanted or c["sample_id"] in wanted]
        runs = []
        for conv in convs:
            small = run_conversation(conv, systems, Path(tmp) / "small", notes=False)
            big = run_with_distractors(conv, systems, Path(tmp) / "big", recipe)
            print(
                f"{big['sample_id']}: {small['chunks']} turns; with distractors {big['chunks']} "
                f"chunks, turns synced in {big['turns_index_s']} s, distractors indexed in "
                f"{big['distractors_index_s']} s",
                file=sys.stderr,
            )
            runs.append({**big, "systems": {**small["systems"], **big["systems"]}})
    summary = summarise(runs, [*systems, *map(with_distractors, systems)])
    for name in summary:
        summary[name].pop("score_floor_calibration", None)
    print_report(summary, systems, n)
    why = {s.name: attribution(runs, s) for s in systems}
    print_table(
        "r@10 moves with distractors (lost: found alone, not inside them)",
        [{"system": name, **row} for name, row in why.items()],
    )
    default = parse_system("default")
    small_r10 = summary[default.name]["overall"]["r@10"]
    delta = summary[with_distractors(default).name]["overall"]["r@10"] - small_r10
    met = abs(delta) <= TARGET_DELTA
    print(
        f"\nΔ recall_any@10 = {delta:+.3f} (target |Δ| <= {TARGET_DELTA}): {'met' if met else 'NOT met'}"
    )
    payload = {
        "data": str(args.data),
        "distractors": n,
        "seed": args.seed,
        "names": args.names,
        "second_sentence": args.second_sentence,
        "avoided_names": avoid,
        "top_k": TOP_K,
        "systems": {s.name: {"mode": s.mode, "settings": s.env} for s in systems},
        "cache": filled,
        "conversations": [{k: v for k, v in run.items() if k != "systems"} for run in runs],
        "summary": summary,
        "attribution": why,
        "target": {"delta_r@10": round(delta, 4), "max_abs_delta": TARGET_DELTA, "met": met},
        "commit": _commit(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({payload['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
