"""The web viewer's fixtures: ``web_store`` (a real project memory, _web.py),
``viewer`` over it, and ``client``: Starlette's TestClient on the viewer's
application, sent to 127.0.0.1, signed in with the access token; ``browser``:
one headless Chromium for the run (chromium.py installs it when missing).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _web import BASE_URL, WebStore, build_web_store
from starlette.testclient import TestClient

from helpers import FixedClock
from memlane.hosts.web.app import build_app
from memlane.hosts.web.viewer import Viewer


@pytest.fixture
def web_store(project: Path, clock: FixedClock) -> Iterator[WebStore]:
    built = build_web_store(project, clock)
    yield built
    built.memory.close()


@pytest.fixture
def viewer(web_store: WebStore) -> Viewer:
    """Caught up with the project's sessions, as ``memlane ui`` is when it starts
    (without its Background thread: the tests add messages themselves)."""
    viewer = Viewer(web_store.memory)
    viewer.catch_up()
    return viewer


@pytest.fixture
def client(viewer: Viewer) -> Iterator[TestClient]:
    """Signed in: every request goes under the viewer's token prefix, as its links do."""
    with TestClient(build_app(viewer), base_url=f"{BASE_URL}/{viewer.keys.token}") as test_client:
        first = test_client.get("/")
        assert first.status_code == 200, first.text
        yield test_client


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium (Debian's, driven by Playwright) for the whole run."""
    playwright_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the test extra has it)"
    )
    from chromium import BrowserUnavailable, ensure_chromium

    try:
        executable = ensure_chromium()
    except BrowserUnavailable as exc:
        pytest.skip(f"browser tests skipped: {exc}")
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
