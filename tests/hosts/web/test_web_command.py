"""``memlane ui`` as a command: the port it is given, --open, the assets it
ships, and what its pages cost (no model load to list messages)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _web import BASE_URL, SESSION_ID, build_web_store
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from fake_embedding import FakeEmbeddings
from helpers import MEMLANE, Cli, FixedClock, open_memory, wait_for
from memlane.hosts.web.app import STATIC, build_app
from memlane.hosts.web.markdown import markdown_html
from memlane.hosts.web.render import TEMPLATES, environment
from memlane.hosts.web.viewer import Viewer


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
        # The browser is given a private file that redirects, not the URL:
        # the token stays off every command line.
        opener = opened.read_text(encoding="utf-8").strip()
        assert opener.startswith("file://") and "token" not in opener, opener
        redirect = Path(opener.removeprefix("file://")).read_text(encoding="utf-8")
        found = re.search(rf'url=(http://127\.0\.0\.1:{port}/[\w-]{{20,}}/)"', redirect)
        assert found is not None, redirect
        url = found.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"memlane ui: {url}" in output
    assert "memlane ui: stopped" in output


def test_the_help_names_the_project_option_and_the_docs(cli: Cli) -> None:
    result = cli("ui", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "-C DIR" in text and "docs/web-viewer.md" in text


def test_a_port_in_use_is_one_clear_error(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli("ui", "--port", str(port))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_asset_a_page_names_ships_in_the_package(client: TestClient, viewer: Viewer) -> None:
    page = client.get("/").text
    root = f"/{viewer.keys.token}"
    assets = re.findall(rf'(?:href|src)="{root}(/static/[^"]+)"', page)
    assert sorted(assets) == ["/static/app.css", "/static/app.js", "/static/theme.js"]
    for asset in assets:
        assert (STATIC / asset.removeprefix("/static/")).is_file()
        assert client.get(asset).status_code == 200
    # Nothing from a network: no page or asset names another origin.
    for text in [page, *(p.read_text(encoding="utf-8") for p in STATIC.iterdir())]:
        assert not re.search(r"(?:src|href)=\"(?:https?:)?//", text)
        assert "@import" not in text and "url(http" not in text


def test_every_template_ships_compiles_and_escapes() -> None:
    names = sorted(p.name for p in TEMPLATES.iterdir())
    assert "base.html" in names and len(names) >= 20
    env = environment()
    for name in names:
        env.get_template(name)  # a syntax error fails here, not on a person's page
    assert env.autoescape is True
    shown = env.from_string("<p>{{ value }}</p>").render(value='<script>"x"</script>')
    assert shown == "<p>&lt;script&gt;&#34;x&#34;&lt;/script&gt;</p>"


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
    index = markdown_html(
        "- [Deploys](topics/deploys.md) — when\n- [x](https://evil.example) [y](javascript:z)"
    )
    assert '<a href="/topics/deploys">Deploys</a> — when' in index
    assert "<a href" not in index.split("</li>", 1)[1]  # any other link stays text


def test_markdown_renders_emphasis_and_keeps_a_line_out_of_the_bullet_above() -> None:
    html = markdown_html("- **bold** and _it_\nnot in the bullet\n\n# Top\n\n###### Deepest")
    assert "<li><strong>bold</strong> and <em>it</em></li>" in html
    assert "<p>not in the bullet</p>" in html
    assert "<h2>Top</h2>" in html and "<h6>Deepest</h6>" in html


@pytest.mark.subprocess
def test_the_command_line_never_imports_the_template_library() -> None:
    # Jinja2 is the viewer's alone: loaded when a page is rendered, not by `memlane --help`.
    probe = (
        "import sys; sys.argv = ['memlane', '--help']; from memlane.cli.fast import run\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print('jinja2' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "Usage" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False"


#: What markdown_html may write: CommonMark's block and inline elements, links to topics.
MARKDOWN_TAG_RE = re.compile(r"<(/?)([a-zA-Z0-9]+)([^>]*)>")
MARKDOWN_TAGS = {"p", "ul", "ol", "li", "h2", "h3", "h4", "h5", "h6", "pre", "code", "em"}
MARKDOWN_TAGS |= {"strong", "blockquote", "hr", "br", "a"}
MARKDOWN_PIECES = st.sampled_from(
    [
        "<",
        ">",
        "&",
        '"',
        "'",
        "`",
        "*",
        "_",
        "[",
        "]",
        "(",
        ")",
        "!",
        "#",
        "-",
        " ",
        "\n",
        "\\",
        "javascript:",
        "<script>",
        "<img src=x onerror=alert(1)>",
        "](topics/a.md)",
        "](http://x)",
        "<!--",
        "-->",
        "```",
        "    ",
        "1. ",
        "> ",
        "&lt;",
        "&#60;",
        "<https://x>",
        "x",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(MARKDOWN_PIECES | st.text(max_size=5), max_size=40).map("".join))
def test_markdown_writes_no_markup_of_its_own(text: str) -> None:
    for closing, tag, attributes in MARKDOWN_TAG_RE.findall(markdown_html(text, "/T")):
        assert tag in MARKDOWN_TAGS, (text, tag)
        if tag == "a" and not closing:
            assert re.fullmatch(r' href="/T/topics/[\w-]+"', attributes), (text, attributes)
        elif tag == "ol" and not closing:
            assert re.fullmatch(r'( start="\d+")?', attributes), (text, attributes)
        else:
            assert attributes in ("", " /"), (text, tag, attributes)


def test_pages_read_the_sessions_index_and_never_load_the_embedder(
    project: Path, clock: FixedClock, fake_embeddings: FakeEmbeddings
) -> None:
    build_web_store(project, clock).memory.close()
    memory = open_memory(
        project,
        clock=clock,
        lexical=False,
        MEMLANE_EMBEDDING_PROVIDER="openai",
        MEMLANE_EMBEDDING_BASE_URL=fake_embeddings.base_url,
        MEMLANE_EMBEDDING_MODEL="fake-embed",
    )
    viewer = Viewer(memory)
    try:
        with TestClient(build_app(viewer), base_url=f"{BASE_URL}/{viewer.keys.token}") as browser:
            # A page view reads the index; it never reads transcripts itself.
            assert "No past sessions" in browser.get("/sessions").text
            viewer.catch_up()  # what `memlane ui` does once, when it starts
            assert SESSION_ID in browser.get("/sessions").text
            assert SESSION_ID in browser.get("/day/2026-08-13").text
            assert browser.get("/").status_code == 200
        assert fake_embeddings.requests == []  # listed, counted, not embedded
    finally:
        viewer.close()


def test_start_keeps_the_sessions_index_current(project: Path, clock: FixedClock) -> None:
    from _transcript_builders import PiSession
    from memlane.transcripts.locate import pi_project_dir

    build_web_store(project, clock).memory.close()
    viewer = Viewer(open_memory(project, clock=clock, MEMLANE_SESSIONS_SWEEP_INTERVAL_MS="200"))
    viewer.start()  # the engine's Background: a catch-up, then sweeps for more
    try:
        with TestClient(build_app(viewer), base_url=f"{BASE_URL}/{viewer.keys.token}") as browser:
            wait_for(
                lambda: SESSION_ID in browser.get("/sessions").text,
                timeout=60,
                what="the catch-up indexed the session",
            )
            later = PiSession("019a2b3c-later")
            later.user("a question asked after the viewer started")
            path = pi_project_dir(str(project)) / "2026-08-14T09-00-00_later.jsonl"
            path.write_text("\n".join(later.lines) + "\n", encoding="utf-8")
            wait_for(
                lambda: "019a2b3c-later" in browser.get("/sessions").text,
                timeout=60,
                what="the sweeper indexed the new session",
            )
    finally:
        viewer.close()


def test_ctrl_c_while_the_viewer_starts_stops_it_without_an_exception(
    project: Path, clock: FixedClock
) -> None:
    """A Ctrl-C that lands before uvicorn's own handlers are in place (here:
    while the URL is printed) asks the server to stop. Raised as
    KeyboardInterrupt wherever the main thread is, it can be swallowed (inside
    an import's weakref callback) and leave the viewer running."""
    from memlane.hosts.web.server import serve

    store = build_web_store(project, clock)
    viewer = Viewer(store.memory)
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 1:
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    try:
        serve(viewer, 0, say=say)  # returns: no KeyboardInterrupt, no server left running
    finally:
        viewer.close()
    assert said[0].startswith("memlane ui: http://127.0.0.1:")
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back
