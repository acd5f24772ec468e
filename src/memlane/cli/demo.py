"""``memlane demo``: a guided tour on a throwaway project, offline, no API key."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

# Variables that would point the demo at the user's real memory.
_REDIRECTING_ENV = ("MEMSEARCH_DIR", "MEMLANE_STORE_CMD", "PI_MEMSEARCH_STORE_CMD", "MEMLANE_HOME")


@contextmanager
def _isolated_env(home: Path) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in _REDIRECTING_ENV}
    for name in _REDIRECTING_ENV:
        os.environ.pop(name, None)
    os.environ["MEMLANE_HOME"] = str(home)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def fixtures_dir() -> Path:
    return Path(str(resources.files("memlane.demo") / "fixtures"))


def build_project(root: Path) -> Path:
    """Lay out a fictional project whose memory store holds the fixtures."""
    project = root / "fernbill"
    store = project / ".memsearch" / "memory"
    store.parent.mkdir(parents=True)
    shutil.copytree(fixtures_dir() / "memory", store)
    (project / ".git").mkdir()  # the project root, as a git checkout would mark it
    (project / "README.md").write_text("# fernbill\n\nA fictional invoicing service.\n")
    return project


def run_demo(keep: bool = False) -> None:
    from rich.console import Console

    from memlane.cli.context import ProgressBar
    from memlane.core.render import render_search, render_section
    from memlane.engine.project import Memory

    out = Console(highlight=False)
    root = Path(tempfile.mkdtemp(prefix="memlane-demo-"))
    try:
        with _isolated_env(root / "home"):
            project = build_project(root)
            mem = Memory.open(project)
            files = sorted(mem.scope.store.glob("*.md"))
            entries = sum(p.read_text(encoding="utf-8").count("\n### ") for p in files)

            out.rule("[bold]memlane demo")
            out.print(
                "memlane gives a coding agent memory that survives sessions. Each exchange "
                "is distilled into a markdown entry in the project; memlane indexes the "
                "markdown and recalls it later. This tour runs offline with the bundled model."
            )
            out.print(
                f"\n[bold]1. A project with {len(files)} days of memory[/] ({entries} entries)"
            )
            out.print(f"   store: {mem.scope.store}")
            out.print(f"   collection: {mem.scope.collection} (memsearch-compatible name)")
            sample = files[0].read_text(encoding="utf-8").split("\n")[:8]
            out.print("   a daily file starts like this:", style="dim")
            for line in sample:
                out.print(f"   │ {line}", style="dim", markup=False)

            out.print("\n[bold]2. Index it[/] (chunk by heading, embed locally, store in SQLite)")
            with ProgressBar("indexing") as progress:
                report = mem.sync(progress)
            out.print(
                f"   {report.total_chunks} chunks from {report.total_files} files in "
                f"{report.seconds:.1f} s with {mem.embedding.model} (no network); index at {mem.index.uri}"
            )
            for text in report.notices:
                out.print(f"   note: {text}")

            queries = json.loads((fixtures_dir() / "queries.json").read_text(encoding="utf-8"))
            query = queries[0]["query"]
            out.print(
                f"\n[bold]3. L1 recall — search[/] for {query!r}: BM25 and dense results fused; "
                "the words differ from the memory's, the meaning matches"
            )
            result = mem.search(query, 3)
            out.print(_indent(render_search(result, str(project))), markup=False)

            if result.hits:
                top = result.hits[0]
                out.print(
                    f"\n[bold]4. L2 recall — expand[/] {top.chunk_hash}: the whole section, "
                    "with the session anchor that leads to the original transcript (L3)"
                )
                section = mem.expand(top.chunk_hash)
                out.print(_indent(render_section(section, str(project))), markup=False)
            mem.close()

            out.print("\n[bold]Try it on your own project[/]")
            out.print('   memlane write "we chose SQLite FTS5 for lexical search"')
            out.print(
                '   memlane search "why SQLite?"      memlane expand <hash>      memlane status'
            )
            if keep:
                out.print(
                    f"\nThe demo project was kept at {project} (MEMLANE_HOME={root / 'home'})."
                )
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _indent(text: str) -> str:
    return "\n".join("   " + line if line else "" for line in text.split("\n"))
