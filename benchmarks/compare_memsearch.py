"""memlane side by side with the real memsearch (PyPI, Milvus Lite), same corpus,
same embedding model.

memsearch runs from its own venv (created on first use under the cache dir with
``pip install memsearch==0.4.23``): its CLI for indexing and cold search, its
Python API (``MemSearch.search``) for warm search. Both tools embed with
memlane's bundled all-MiniLM-L6-v2 int8 model: this process serves it as an
OpenAI-compatible ``/v1/embeddings`` endpoint on 127.0.0.1, memsearch's
``openai`` provider points at it, and memlane is measured three ways: with its
default in-process model and SQLite index ("memlane"), through the same
endpoint ("memlane-http", the like-for-like indexing figure), and through the
endpoint on Milvus Lite, in memsearch's own database file (its own collection
beside memsearch's: "memlane-milvus").

Per corpus (a synthetic store of entry-sized chunks; each LoCoMo development
conversation when ``benchmarks/quality/locomo_store.py`` is present):

- index: wall time of ``memlane -C DIR index`` / ``memsearch index STORE``
  (process start, model or client setup and embedding included), chunks/s,
  peak RSS;
- warm search, interleaved query by query: one process per memlane variant
  holds that memlane (``Memory.search(sync=False)``) and memsearch
  (``MemSearch.search``, imported from its venv: the same pymilvus 3.0.2 and
  milvus-lite 3.2.2) and alternates them query by query (who goes first
  alternates too), so the machine's load falls on both alike. k = 10; p50/p95
  wall time, CPU time, and round trips to Milvus per search (every call of
  pymilvus's ``MilvusClient``, ``_roundtrips.py``);
- cold search: wall time of ``memlane -C DIR search Q`` / ``memsearch search
  Q``, a new process per query, the tools alternating query by query;
- LoCoMo quality: turn recall_any@10 and session hit@1 (hits mapped back to
  dia_ids through the ``turn:`` of their anchor).

Peak RSS is reported twice: ``os.wait4`` ru_maxrss of the child (the largest
single process) and the sampled peak of the sum of RSS over the child's whole
process tree. Milvus Lite 3.x is pure Python: its gRPC server is a thread of
the process that opens the database, not a process of its own, so both
figures hold it. The embedding server's memory is in neither (it is a
process of its own), so the "-http"/"-milvus" rows and memsearch leave the
model out, the in-process memlane rows carry it.

    python benchmarks/compare_memsearch.py [--quick] [--synthetic-chunks N]
        [--queries N] [--cold-queries N] [--locomo-convs N] [--no-locomo]
        [--tools memlane-milvus,memsearch]

Writes benchmarks/results/compare-memsearch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import median, percentile, print_table, write_json
from memsearch_venv import MEMSEARCH_VERSION, ensure_memsearch

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "memlane-bench"
LOCOMO_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
MODEL = "all-MiniLM-L6-v2"
TOP_K = 10
COLLECTION = "memsearch_bench"
TURN_RE = re.compile(r"turn:(\S+)")
EVIDENCE_RE = re.compile(r"^D:?(\d+):0*(\d+)$")

_SYN_ASKS = [
    "why did {s} {v} {t}",
    "when was {t} {v}",
    "{t} {d}",
    "what happened to {t}",
    "{v} {t}",
]

# ---------------------------------------------------------------------------
# child processes: wall time, ru_maxrss and sampled process-tree RSS


@dataclass
class Run:
    wall_s: float
    maxrss_mb: float
    tree_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _tree_rss_kb(root: int) -> int:
    kids = _children_map()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except OSError:
            pass
    return total


def run_child(
    args: Sequence[str], env: dict[str, str], timeout_s: float, cwd: Path | None = None
) -> Run:
    """Run one child to completion (killed after ``timeout_s``), measured."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(args), env=env, cwd=cwd, stdout=out, stderr=err, start_new_session=True
        )
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))

        def kill() -> None:
            with _suppress():
                os.killpg(proc.pid, signal.SIGKILL)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # SIGTERM/^C of this process: take the child down too
            timer.cancel()
            done.set()
            kill()
            proc.wait()
            raise
        wall = time.perf_counter() - t0
        timer.cancel()
        done.set()
        sampler.join()
        with _suppress():  # a server the child left behind (Milvus Lite)
            os.killpg(proc.pid, signal.SIGTERM)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        maxrss = usage.ru_maxrss / 1024
        return Run(
            wall_s=wall,
            maxrss_mb=maxrss,
            tree_rss_mb=max(peak[0] / 1024, maxrss),
            returncode=proc.returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
        )


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def checked(run: Run, what: str) -> Run:
    if run.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    return run


def last_json(text: str) -> Any:
    """The whole output as JSON, else its last line that is a JSON document."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith(("{", "[")):
            return json.loads(line)
    raise ValueError(f"no JSON line in output: {text[-500:]!r}")


class EmbedServerProcess:
    """benchmarks/embed_server.py in its own process.

    Not a thread of this process on purpose: a child's ru_maxrss starts from
    the RSS of the process that forked it (the pre-exec image counts), so the
    process that launches the measured children must stay small.
    """

    def __init__(self, env: dict[str, str], timeout_s: float) -> None:
        script = Path(__file__).with_name("embed_server.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), "--port", "0", "--exit-on-eof"],
            env=env,
            stdin=subprocess.PIPE,  # closed when this process ends, however it ends
            stdout=subprocess.PIPE,
            text=True,
        )
        ready: list[str] = []
        reader = threading.Thread(
            target=lambda: ready.append(self.proc.stdout.readline() if self.proc.stdout else ""),
            daemon=True,
        )
        reader.start()
        reader.join(timeout_s)
        url = ready[0].strip() if ready else ""
        if not url.startswith("http://"):
            self.close()
            raise RuntimeError(f"the embedding server did not start (got {url!r})")
        self.base_url = url

    def stats(self) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
        return data

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def code_state(repo: Path) -> dict[str, Any]:
    """The commit memlane is measured at, and whether src/ differs from it."""

    def git(*argv: str) -> str:
        got = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True)
        return got.stdout.strip() if got.returncode == 0 else ""

    return {
        "commit": git("rev-parse", "HEAD"),
        "src_dirty": bool(git("status", "--porcelain", "--", "src")),
        "frozen_src": False,
    }


# ---------------------------------------------------------------------------
# corpora


@dataclass
class Corpus:
    name: str
    write: Callable[[Path], Path]  # writes the store of this project dir, returns it
    queries: list[str]
    gold: list[set[str]] | None = None  # gold dia_ids per query (LoCoMo)
    categories: list[int] = field(default_factory=list)


def synthetic_corpus(chunks: int, queries: int, seed: int = 11) -> Corpus:
    from _common import _DETAILS, _SUBJECTS, _THINGS, _VERBS
    from bench_index import make_store

    rng = random.Random(seed)
    asks = [
        rng.choice(_SYN_ASKS).format(
            s=rng.choice(_SUBJECTS),
            v=rng.choice(_VERBS),
            t=rng.choice(_THINGS),
            d=rng.choice(_DETAILS),
        )
        for _ in range(queries)
    ]

    def write(project: Path) -> Path:
        (project / ".git").mkdir(parents=True)  # its own scope wherever the temp dir is
        store = project / ".memsearch" / "memory"
        make_store(store, chunks, 350)
        return store

    name = f"synthetic-{chunks // 1000}k" if chunks >= 1000 else f"synthetic-{chunks}"
    return Corpus(name=name, write=write, queries=asks)


def parse_evidence(evidence: Sequence[str], known: set[str] | None = None) -> set[str]:
    """Gold dia_ids: split on ';' and spaces, repair the unambiguous ("D:11:26",
    "D30:05"), drop the rest and, given ``known``, ids that are no turn of the
    conversation (the protocol of benchmarks/quality/locomo.py)."""
    out: set[str] = set()
    for item in evidence:
        for token in re.split(r"[;\s]+", str(item)):
            match = EVIDENCE_RE.match(token.strip())
            if match:
                dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
                if known is None or dia_id in known:
                    out.add(dia_id)
    return out


def locomo_corpora(path: Path, limit: int, max_questions: int) -> list[Corpus]:
    try:
        from quality.locomo_store import write_conversation_store
    except ImportError:
        print("benchmarks/quality/locomo_store.py not found: LoCoMo part skipped", flush=True)
        return []
    if not path.exists():
        print(f"{path} not found: LoCoMo part skipped", flush=True)
        return []
    corpora = []
    for conv in json.loads(path.read_text())[:limit]:
        qs, gold, cats = [], [], []
        known = {
            str(turn["dia_id"])
            for key, turns in conv["conversation"].items()
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list)
            for turn in turns
        }
        for qa in conv["qa"]:
            ev = parse_evidence(qa.get("evidence") or [], known)
            text = " ".join(str(qa.get("question", "")).split())
            if ev and text:
                qs.append(text)
                gold.append(ev)
                cats.append(int(qa.get("category", 0)))
        if max_questions:
            qs, gold, cats = qs[:max_questions], gold[:max_questions], cats[:max_questions]

        def write(project: Path, conv: dict[str, Any] = conv) -> Path:
            store: Path = write_conversation_store(conv, project)
            return store

        corpora.append(Corpus(f"locomo-{conv['sample_id']}", write, qs, gold, cats))
    return corpora


def quality(hits: list[list[str]], gold: list[set[str]]) -> dict[str, float]:
    def session(dia: str) -> str:
        return dia.split(":", 1)[0]

    recall = sum(bool(set(h[:TOP_K]) & g) for h, g in zip(hits, gold, strict=True))
    hit1 = sum(
        bool(h) and session(h[0]) in {session(x) for x in g}
        for h, g in zip(hits, gold, strict=True)
    )
    n = len(gold) or 1
    return {"recall_any@10": recall / n, "session_hit@1": hit1 / n, "questions": len(gold)}


# ---------------------------------------------------------------------------
# one corpus, three configurations


@dataclass
class Ctx:
    root: Path
    base_env: dict[str, str]
    ms_py: Path
    base_url: str
    memlane_exe: str
    timeout_s: float
    cold_queries: int


def memlane_env(ctx: Ctx, label: str) -> dict[str, str]:
    env = dict(ctx.base_env, MEMLANE_HOME=str(ctx.root / f"home-{label}"))
    if label in ("memlane-http", "memlane-milvus"):
        env.update(
            MEMLANE_EMBEDDING_PROVIDER="openai",
            MEMLANE_EMBEDDING_BASE_URL=ctx.base_url,
            MEMLANE_EMBEDDING_MODEL=MODEL,
        )
    if label == "memlane-milvus":
        env.update(MEMLANE_INDEX_BACKEND="milvus", MEMLANE_INDEX_URI=str(milvus_db(ctx)))
    return env


def milvus_db(ctx: Ctx) -> Path:
    """The one Milvus Lite database of a corpus: memsearch's, and memlane-milvus's."""
    return ctx.root / "memsearch" / "milvus.db"


def memsearch_env(ctx: Ctx) -> dict[str, str]:
    home = ctx.root / "home-memsearch"  # no ~/.memsearch/config.toml leaks in
    home.mkdir(exist_ok=True)
    return dict(ctx.base_env, HOME=str(home), OPENAI_API_KEY="dummy")


def memsearch_flags(ctx: Ctx) -> list[str]:
    return [
        "--provider", "openai",
        "--model", MODEL,
        "--base-url", ctx.base_url,
        "--api-key", "dummy",
        "--milvus-uri", str(milvus_db(ctx)),
        "--collection", COLLECTION,
    ]  # fmt: skip


def summarize_latencies(lat: Sequence[float]) -> dict[str, float]:
    ms = [x * 1000 for x in lat]
    return {"p50_ms": median(ms), "p95_ms": percentile(ms, 95), "n": len(ms)}


def run_corpus(ctx: Ctx, corpus: Corpus, tools: Sequence[str]) -> dict[str, Any]:
    project = ctx.root / "proj"
    store = corpus.write(project)
    qfile = ctx.root / "queries.json"
    warmup = "warm up query"
    out: dict[str, Any] = {"corpus": corpus.name, "queries": len(corpus.queries), "tools": {}}
    milvus_db(ctx).parent.mkdir(exist_ok=True)
    ours = [t for t in tools if t != "memsearch"]

    # ---- index (memsearch first: memlane-milvus writes the same database file)
    env = memsearch_env(ctx)
    run = checked(
        run_child(
            [str(ctx.ms_py), "-m", "memsearch", "index", str(store), *memsearch_flags(ctx)],
            env,
            ctx.timeout_s,
            cwd=ctx.root,
        ),
        "memsearch index",
    )
    m = re.search(r"Indexed (\d+) chunks", run.stdout)
    out["tools"]["memsearch"] = {"index": _index_row(run, int(m.group(1)) if m else 0)}
    for label in ours:
        run = checked(
            run_child(
                [ctx.memlane_exe, "-C", str(project), "index", "--json"],
                memlane_env(ctx, label),
                ctx.timeout_s,
            ),
            f"{label} index",
        )
        report = last_json(run.stdout)
        chunks = int(report.get("total_chunks") or report.get("indexed_chunks") or 0)
        out["tools"][label] = {"index": _index_row(run, chunks)}

    # ---- warm search: each memlane and memsearch in one process, query by query
    site = memsearch_site(ctx.ms_py)
    for label in ours:
        qfile.write_text(
            json.dumps(
                {
                    "project": str(project),
                    "queries": corpus.queries,
                    "warmup": warmup,
                    "memsearch_site": site,
                    "model": MODEL,
                    "base_url": ctx.base_url,
                    "milvus_uri": str(milvus_db(ctx)),
                    "collection": COLLECTION,
                    "k": TOP_K,
                }
            )
        )
        run = checked(
            run_child(
                [sys.executable, __file__, "--child-pair", str(qfile)],
                memlane_env(ctx, label),
                ctx.timeout_s,
            ),
            f"{label} and memsearch warm search",
        )
        data = last_json(run.stdout)
        out["tools"][label]["warm"] = _warm_row(data["memlane"], run)
        out["tools"][label]["warm_memsearch"] = _warm_row(data["memsearch"], run)
        out["tools"][label]["warm"]["resynced_chunks"] = data["resynced_chunks"]
        out["tools"][label]["warm"]["calls_by_method"] = data["methods"]
        if data["resynced_chunks"]:
            print(
                f"  WARNING: {label} re-embedded {data['resynced_chunks']} chunks before "
                "searching: the code changed since it indexed (use --freeze-src)",
                flush=True,
            )
    # memsearch's own row: its figures from the run beside memlane-milvus
    # (else the first pairing).
    paired = "memlane-milvus" if "memlane-milvus" in ours else (ours[0] if ours else None)
    if paired is not None:
        out["tools"]["memsearch"]["warm"] = out["tools"][paired]["warm_memsearch"]

    # ---- cold search: a new process per query, the tools alternating
    cold = corpus.queries[: ctx.cold_queries]
    ms_cmd = [str(ctx.ms_py), "-m", "memsearch"]
    cases: dict[str, tuple[Callable[[str], list[str]], dict[str, str]]] = {
        label: (
            lambda q: [ctx.memlane_exe, "-C", str(project), "search", q, "-k", str(TOP_K)],
            memlane_env(ctx, label),
        )
        for label in ours
        if label != "memlane-http"  # the same cold path as memlane's but for the model
    }
    cases["memsearch"] = (
        lambda q: [*ms_cmd, "search", q, "-k", str(TOP_K), *memsearch_flags(ctx)],
        env,
    )
    walls: dict[str, list[Run]] = {label: [] for label in cases}
    for i, q in enumerate(cold):
        order = list(cases) if i % 2 == 0 else list(reversed(cases))
        for label in order:
            argv, cenv = cases[label]
            run = run_child(argv(q), cenv, ctx.timeout_s, cwd=ctx.root)
            walls[label].append(checked(run, f"{label} search"))
    for label, runs in walls.items():
        if runs:
            times = [r.wall_s for r in runs]
            out["tools"][label]["cold"] = {
                "runs": len(runs),
                "p50_s": median(times),
                "min_s": min(times),
                "max_s": max(times),
                "maxrss_mb": max(r.maxrss_mb for r in runs),
                "tree_rss_mb": max(r.tree_rss_mb for r in runs),
            }
    return out


def memsearch_site(ms_py: Path) -> str:
    """The site-packages of memsearch's venv (imported by the paired child)."""
    got = subprocess.run(
        [
            str(ms_py),
            "-c",
            "import memsearch, os; print(os.path.dirname(os.path.dirname(memsearch.__file__)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return got.stdout.strip()


def _index_row(run: Run, chunks: int) -> dict[str, Any]:
    return {
        "chunks": chunks,
        "wall_s": run.wall_s,
        "chunks_per_s": chunks / run.wall_s if run.wall_s else 0.0,
        "maxrss_mb": run.maxrss_mb,
        "tree_rss_mb": run.tree_rss_mb,
    }


def _warm_row(data: dict[str, Any], run: Run) -> dict[str, Any]:
    ms_cpu = [x * 1000 for x in data["cpu_s"]]
    trips = data["round_trips"]
    return {
        "first_s": data["first_s"],
        **summarize_latencies(data["latencies_s"]),
        "cpu_p50_ms": median(ms_cpu),
        "round_trips": sum(trips) / len(trips) if trips else 0.0,
        "maxrss_mb": run.maxrss_mb,
        "tree_rss_mb": run.tree_rss_mb,
        "_hits": data["hits"],
        "_lat": data["latencies_s"],
    }


def child_pair(qfile: Path) -> None:
    """One memlane (the environment says which) and memsearch in this one
    process, alternating query by query. memsearch is imported from its venv
    (appended to the path: memlane's own packages come first; both venvs hold
    pymilvus 3.0.2 and milvus-lite 3.2.2). memlane holds Milvus Lite open as
    the warm engine does, so memsearch's client shares its server when both
    use the same database file."""
    import asyncio

    cfg = json.loads(qfile.read_text())
    sys.path.append(cfg["memsearch_site"])
    from memsearch.core import MemSearch

    from _roundtrips import counting, install, methods, take
    from memlane.engine.index_backend import hold_milvus_lite
    from memlane.engine.project import Memory

    install()
    hold_milvus_lite(24 * 3600.0)
    mem = Memory.open(cfg["project"])
    # Already indexed: this only checks the store. If it embeds anything, the
    # index was built by other code (e.g. a schema change in between): say so.
    resynced = mem.sync().embedded_chunks
    ms = MemSearch(
        embedding_provider="openai",
        embedding_model=cfg["model"],
        embedding_base_url=cfg["base_url"],
        embedding_api_key="dummy",
        milvus_uri=cfg["milvus_uri"],
        collection=cfg["collection"],
    )
    loop = asyncio.new_event_loop()
    k = int(cfg["k"])

    def memlane(q: str) -> list[str]:
        res = mem.search(q, k, sync=False)
        return [m for h in res.hits for m in TURN_RE.findall(h.content)]

    def memsearch(q: str) -> list[str]:
        res = loop.run_until_complete(ms.search(q, top_k=k))
        return [m for r in res for m in TURN_RE.findall(r.get("content", ""))]

    tools = {"memlane": memlane, "memsearch": memsearch}
    out: dict[str, Any] = {}
    for name, fn in tools.items():
        t0 = time.perf_counter()
        with counting(name):
            fn(cfg["warmup"])  # loads the model, opens the collection
        take(name)
        out[name] = {
            "first_s": time.perf_counter() - t0,
            "latencies_s": [],
            "cpu_s": [],
            "round_trips": [],
            "hits": [],
        }
    for i, q in enumerate(cfg["queries"]):
        for name in list(tools) if i % 2 == 0 else list(reversed(tools)):
            row = out[name]
            with counting(name):
                c0, t0 = time.process_time(), time.perf_counter()
                hits = tools[name](q)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            row["latencies_s"].append(wall)
            row["cpu_s"].append(cpu)
            row["round_trips"].append(take(name))
            row["hits"].append(hits)
    out["methods"] = {name: methods(name) for name in tools}
    ms.close()
    loop.close()
    mem.close()
    out["resynced_chunks"] = resynced
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# aggregation and report


TOOLS = ("memlane", "memlane-http", "memlane-milvus", "memsearch")


def aggregate(
    results: list[dict[str, Any]], corpora: list[Corpus], tools: Sequence[str] = TOOLS
) -> list[dict[str, Any]]:
    """Pool per-corpus figures: one row per (group, tool)."""
    groups: dict[str, list[tuple[dict[str, Any], Corpus]]] = {}
    for res, corpus in zip(results, corpora, strict=True):
        group = "locomo-dev" if corpus.gold is not None else corpus.name
        groups.setdefault(group, []).append((res, corpus))
    rows = []
    for group, members in groups.items():
        for tool in tools:
            index_wall = sum(r["tools"][tool]["index"]["wall_s"] for r, _ in members)
            chunks = sum(r["tools"][tool]["index"]["chunks"] for r, _ in members)
            row: dict[str, Any] = {"corpus": group, "tool": tool, "chunks": chunks}
            row["index_s"] = index_wall
            row["chunks_per_s"] = chunks / index_wall if index_wall else 0.0
            row["index_rss_mb"] = max(r["tools"][tool]["index"]["tree_rss_mb"] for r, _ in members)
            warm = [r["tools"][tool]["warm"] for r, _ in members]
            pooled = summarize_latencies([x for w in warm for x in w["_lat"]])
            row["warm_p50_ms"] = pooled["p50_ms"]
            row["warm_p95_ms"] = pooled["p95_ms"]
            row["cpu_p50_ms"] = median([w["cpu_p50_ms"] for w in warm])
            row["round_trips"] = sum(w["round_trips"] for w in warm) / len(warm)
            row["search_rss_mb"] = max(w["tree_rss_mb"] for w in warm)
            beside = [r["tools"][tool].get("warm_memsearch") for r, _ in members]
            if all(beside):
                # memsearch in the same process, query by query: the ratio
                # this memlane's targets are about.
                ms_lat = summarize_latencies([x for b in beside if b for x in b["_lat"]])
                row["memsearch_p50_ms"] = ms_lat["p50_ms"]
                row["vs_memsearch_p50"] = pooled["p50_ms"] / ms_lat["p50_ms"]
                row["memsearch_round_trips"] = sum(b["round_trips"] for b in beside if b) / len(
                    beside
                )
            colds = [r["tools"][tool].get("cold") for r, _ in members]
            colds = [c for c in colds if c]
            if colds:
                row["cold_p50_s"] = median([c["p50_s"] for c in colds])
                row["cold_rss_mb"] = max(c["tree_rss_mb"] for c in colds)
            if members[0][1].gold is not None:
                hits = [h for r, _ in members for h in r["tools"][tool]["warm"]["_hits"]]
                gold = [g for _, c in members for g in (c.gold or [])]
                q = quality(hits, gold)
                row["recall_any@10"] = q["recall_any@10"]
                row["session_hit@1"] = q["session_hit@1"]
                cats = [cat for _, c in members for cat in c.categories]
                row["by_category"] = {
                    str(cat): quality(
                        [h for h, x in zip(hits, cats, strict=True) if x == cat],
                        [g for g, x in zip(gold, cats, strict=True) if x == cat],
                    )
                    for cat in sorted(set(cats))
                }
            rows.append(row)
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """memsearch / memlane for every figure (and memsearch / memlane-http)."""
    out = []
    keys = ["index_s", "index_rss_mb", "warm_p50_ms", "warm_p95_ms", "search_rss_mb"]
    keys += ["cold_p50_s", "cold_rss_mb", "recall_any@10", "session_hit@1"]
    by = {(r["corpus"], r["tool"]): r for r in rows}
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        ms = by[(corpus, "memsearch")]
        for base in ("memlane", "memlane-http", "memlane-milvus"):
            if (corpus, base) not in by:
                continue
            ml = by[(corpus, base)]
            row: dict[str, Any] = {"corpus": corpus, "memsearch /": base}
            for k in keys:
                if k in ms and k in ml and ml[k]:
                    row[k] = ms[k] / ml[k]
            out.append(row)
    return out


def _columns(rows: list[dict[str, Any]], cols: list[str]) -> list[dict[str, Any]]:
    """Rows restricted to ``cols`` (present in at least one row), blanks as "-"."""
    keep = [c for c in cols if any(c in r for r in rows)]
    return [{c: r.get(c, "-") for c in keep} for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2k chunks, 1 conversation")
    parser.add_argument("--synthetic-chunks", type=int, default=None, help="default 10000")
    parser.add_argument("--queries", type=int, default=None, help="warm synthetic queries")
    parser.add_argument("--cold-queries", type=int, default=None, help="cold runs per corpus")
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DEFAULT)
    parser.add_argument("--locomo-convs", type=int, default=None, help="default 5 (all)")
    parser.add_argument("--locomo-questions", type=int, default=0, help="per conversation; 0 = all")
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--timeout", type=float, default=900.0, help="per child process, s")
    parser.add_argument("--keep", action="store_true", help="keep the temp dirs")
    parser.add_argument(
        "--out", default="compare-memsearch", help="JSON name under benchmarks/results/"
    )
    parser.add_argument(
        "--freeze-src",
        action="store_true",
        help="run memlane from a copy of the committed src/ (git archive HEAD), so code "
        "edited in the working tree during the run cannot change what is measured",
    )
    parser.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help="which to run (memsearch always runs): " + ", ".join(TOOLS),
    )
    parser.add_argument("--child-pair", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_pair:
        child_pair(args.child_pair)
        return
    tools = [t for t in TOOLS if t in {x.strip() for x in args.tools.split(",")} | {"memsearch"}]
    syn_chunks = args.synthetic_chunks or (2000 if args.quick else 10_000)
    n_queries = args.queries or (50 if args.quick else 200)
    n_cold = args.cold_queries if args.cold_queries is not None else (3 if args.quick else 5)
    n_convs = args.locomo_convs if args.locomo_convs is not None else (1 if args.quick else 5)

    ms_py = ensure_memsearch(args.cache_dir / "memsearch-venv", timeout_s=args.timeout)
    corpora: list[Corpus] = []
    if not args.no_synthetic:
        corpora.append(synthetic_corpus(syn_chunks, n_queries))
    if not args.no_locomo and n_convs > 0:
        corpora += locomo_corpora(args.locomo, n_convs, args.locomo_questions)

    from memlane.core.paths import cache_dir

    exe = Path(sys.executable).parent / "memlane"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "MEMSEARCH_"))}
    base_env["MEMLANE_CACHE_DIR"] = str(cache_dir())  # the int8 model is built once, not per home
    base_env["PYTHONUNBUFFERED"] = "1"
    repo = Path(__file__).resolve().parents[1]
    code = code_state(repo)
    frozen: Path | None = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the finally blocks run
    started = time.perf_counter()
    if args.freeze_src:
        frozen = Path(tempfile.mkdtemp(prefix="memlane-compare-src-"))
        subprocess.run(
            ["sh", "-c", f"git -C {shlex.quote(str(repo))} archive HEAD src | tar -x -C ."],
            cwd=frozen,
            check=True,
            timeout=120,
        )
        base_env["PYTHONPATH"] = str(frozen / "src")
        code["frozen_src"] = True
        print(f"memlane runs from src/ at {code['commit'][:12]} (frozen copy)", flush=True)
    server = EmbedServerProcess(base_env, args.timeout)
    results = []
    try:
        for corpus in corpora:
            root = Path(tempfile.mkdtemp(prefix=f"memlane-compare-{corpus.name}-"))
            ctx = Ctx(root, base_env, ms_py, server.base_url, str(exe), args.timeout, n_cold)
            print(f"{corpus.name}: {len(corpus.queries)} queries ...", flush=True)
            t0 = time.perf_counter()
            try:
                results.append(run_corpus(ctx, corpus, tools))
            finally:
                if args.keep:
                    print(f"  kept {root}")
                else:
                    shutil.rmtree(root, ignore_errors=True)
            print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
        server_stats = server.stats()
    finally:
        server.close()
        if frozen is not None:
            shutil.rmtree(frozen, ignore_errors=True)
    rows = aggregate(results, corpora, tools)
    rat = ratios(rows)
    title = f"memsearch {MEMSEARCH_VERSION} vs memlane, same all-MiniLM-L6-v2 int8, k={TOP_K}"
    index_cols = ["corpus", "tool", "chunks", "index_s", "chunks_per_s", "index_rss_mb"]
    search_cols = ["corpus", "tool", "warm_p50_ms", "warm_p95_ms", "search_rss_mb"]
    search_cols += ["cold_p50_s", "cold_rss_mb", "recall_any@10", "session_hit@1"]
    print_table(f"Indexing ({title})", _columns(rows, index_cols))
    print_table(f"Search ({title})", _columns(rows, search_cols))
    pair_cols = ["corpus", "tool", "warm_p50_ms", "memsearch_p50_ms", "vs_memsearch_p50"]
    pair_cols += ["cpu_p50_ms", "round_trips", "memsearch_round_trips"]
    print_table(
        "Warm search, memlane and memsearch in one process, query by query "
        "(vs_memsearch_p50 < 1: memlane faster)",
        _columns([r for r in rows if "vs_memsearch_p50" in r], pair_cols),
    )
    ratio_cols = ["corpus", "memsearch /", *[c for c in search_cols if c not in ("corpus", "tool")]]
    print_table(
        "Ratios memsearch / memlane (time, RSS: >1 = memlane faster or smaller; "
        "quality: <1 = memlane better)",
        _columns(rat, ["corpus", "memsearch /", "index_s", "index_rss_mb", *ratio_cols[2:]]),
    )
    for res in results:  # keep the JSON readable: no per-query hit lists
        for tool in res["tools"].values():
            for key in ("warm", "warm_memsearch"):
                tool.get(key, {}).pop("_hits", None)
                tool.get(key, {}).pop("_lat", None)
    path = write_json(
        args.out,
        {
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "memsearch_version": MEMSEARCH_VERSION,
            "memlane_code": code,
            "model": MODEL,
            "top_k": TOP_K,
            "cpus": os.cpu_count(),
            "embed_server": server_stats,
            "total_s": time.perf_counter() - started,
            "rows": rows,
            "ratios": rat,
            "per_corpus": results,
        },
    )
    print(f"\nwrote {path} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
