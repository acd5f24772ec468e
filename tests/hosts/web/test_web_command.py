"""``memlane ui`` as a command: the port it is given, --open, the assets it ships."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _web import build_web_store
from starlette.testclient import TestClient

from helpers import MEMLANE, Cli, FixedClock, wait_for
from memlane.hosts.web.app import STATIC
from memlane.hosts.web.render import markdown_html


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.subprocess
def test_ui_listens_on_the_port_given_and_opens_the_browser_on_its_url(
    project: Path, clock: FixedClock, tmp_path: Path
) -> None:
    build_web_store(project, clock).memory.close()
    opened = tmp_path / "opened.txt"
    # Python's webbrowser runs $BROWSER with the URL in place of %s.
    recorder = f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])"
    port = _free_port()
    process = subprocess.Popen(
        [*MEMLANE, "-C", str(project), "ui", "--port", str(port), "--open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "BROWSER": f"{sys.executable} -c {recorder!r} %s"},
    )
    try:
        wait_for(opened.exists, timeout=60, what="the browser command ran")
        wait_for(lambda: opened.read_text(encoding="utf-8"), timeout=10)
        url = opened.read_text(encoding="utf-8").strip()
        assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=[\w-]{{20,}}", url), url
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"memlane ui: {url}" in output
    assert "memlane ui: stopped" in output


def test_a_port_in_use_is_one_clear_error(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli("ui", "--port", str(port))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_asset_a_page_names_ships_in_the_package(client: TestClient) -> None:
    page = client.get("/").text
    assets = re.findall(r'(?:href|src)="(/static/[^"]+)"', page)
    assert sorted(assets) == ["/static/app.css", "/static/app.js"]
    for asset in assets:
        assert (STATIC / asset.removeprefix("/static/")).is_file()
        assert client.get(asset).status_code == 200
    # Nothing from a network: no page or asset names another origin.
    for text in [page, *(p.read_text(encoding="utf-8") for p in STATIC.iterdir())]:
        assert not re.search(r"(?:src|href)=\"(?:https?:)?//", text)
        assert "@import" not in text and "url(http" not in text


def test_markdown_is_rendered_without_passing_markup_through() -> None:
    html = markdown_html(
        "## Decisions\n<!-- session:s turn:t transcript:/x -->\n- use `<b>` tags\n"
        "<img src=x onerror=alert(1)>\n```\n<script>x</script>\n```"
    )
    assert "<h3>Decisions</h3>" in html
    assert "<li>use <code>&lt;b&gt;</code> tags</li>" in html
    assert "session:s" not in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<pre><code>&lt;script&gt;x&lt;/script&gt;</code></pre>" in html
