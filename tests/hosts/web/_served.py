"""A real ``memlane ui`` process for the browser tests (test_web_browser.py,
test_web_live.py): started over the store of _web.py on the suite's clock,
with its output read by a thread."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _web import SESSION_ID, WebStore, build_web_store

from helpers import NOW, FixedClock, isolate_environment, make_project, wait_for

START_TIMEOUT_S = 60


@dataclass
class Running:
    process: subprocess.Popen[str]
    url: str  # the printed one: the token prefix, with a slash
    base: str  # the same without the slash (paths are added to it)
    origin: str  # without the token
    store: WebStore
    lines: queue.Queue[str]  # the process's output, read by a thread
    reader: threading.Thread
    project: Path
    env: dict[str, str]  # the viewer's environment (its MEMLANE_HOME: its index)

    def output_after_exit(self) -> str:
        """Everything the process printed, once it has exited."""
        self.reader.join(timeout=30)
        out = []
        while not self.lines.empty():
            out.append(self.lines.get())
        return "".join(out)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return str(answer.read().decode("utf-8"))


def _read_lines(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


@contextmanager
def serve_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A ``memlane ui`` process over the store of _web.py, once it has indexed
    the project's session; killed on the way out if it still runs."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("ui-home")
        isolate_environment(patch, home, tmp_path_factory.mktemp("ui-cache"))
        project = make_project(tmp_path_factory.mktemp("ui"))
        store = build_web_store(project, FixedClock(NOW))
        store.memory.close()
        env = {
            **os.environ,
            "MEMLANE_NOW": NOW.isoformat(),
            "MEMLANE_EMBEDDING_PROVIDER": "none",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "memlane.cli.main", "-C", str(project), "ui"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        url = ""
        try:
            while not url:
                line = lines.get(timeout=START_TIMEOUT_S)
                if line.startswith("memlane ui: http://"):
                    url = line.split("memlane ui: ", 1)[1].strip()
            origin = url.rsplit("/", 2)[0]
            # The engine catches the sessions index up on its own thread.
            wait_for(
                lambda: SESSION_ID in _get(url + "sessions"),
                timeout=START_TIMEOUT_S,
                what="the viewer indexed the project's session",
            )
            yield Running(process, url, url.rstrip("/"), origin, store, lines, reader, project, env)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
