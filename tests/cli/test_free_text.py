"""Free text that starts with '-' is text, and no error repeats what could be a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import NOW, Cli
from memlane.cli.free_text import text_after_options

LEXICAL = {"MEMLANE_EMBEDDING_PROVIDER": "none"}
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----"
TOKEN = "ghp_Zq3rT8vLm2Nx7Kp4Wc9Yb6Hd1Fj5Gs0Ae2Ru"


def _leaks(result_text: str) -> bool:
    return KEY_BODY in result_text or "BEGIN OPENSSH" in result_text or TOKEN in result_text


def _daily(project: Path) -> Path:
    return project / ".memsearch" / "memory" / f"{NOW.date().isoformat()}.md"


def test_topic_add_of_a_pem_key_is_content_and_stored_redacted(cli: Cli, project: Path) -> None:
    out = cli("topic", "add", KEY, "--topic", "keys", "--title", "deploy key", env=LEXICAL)
    assert out.returncode == 0, out.stderr
    text = (project / ".memsearch" / "memory" / "topics" / "keys.md").read_text(encoding="utf-8")
    assert "[REDACTED:private-key]" in text
    assert not _leaks(text) and not _leaks(out.stdout + out.stderr)


@pytest.mark.parametrize(
    "text",
    ["- fixed the flaky test", "-x turns on extended mode", "--- a rule line", "-5 degrees", KEY],
)
def test_write_takes_text_that_starts_with_a_dash(cli: Cli, project: Path, text: str) -> None:
    out = cli("write", text, env=LEXICAL)
    assert out.returncode == 0, out.stderr
    stored = _daily(project).read_text(encoding="utf-8")
    if text == KEY:
        assert "[REDACTED:private-key]" in stored and not _leaks(stored)
    else:
        assert text.removeprefix("- ") in stored


def test_options_still_work_around_dash_text(cli: Cli, project: Path) -> None:
    out = cli("write", "--json", "-x means extended", env=LEXICAL)
    assert out.returncode == 0 and out.stdout.lstrip().startswith("{"), out.stderr
    out = cli(
        "topic",
        "add",
        "--title",
        "-t is the topic flag",
        "-t",
        "flags",
        "-d is dry run",
        env=LEXICAL,
    )
    assert out.returncode == 0, out.stderr
    topic = (project / ".memsearch" / "memory" / "topics" / "flags.md").read_text("utf-8")
    assert "## -t is the topic flag" in topic and "-d is dry run" in topic
    assert cli("index", env=LEXICAL).returncode == 0
    out = cli("search", "-x means extended", "-k", "1", env=LEXICAL)
    assert out.returncode == 0 and "1 hit for '-x means extended'" in out.stdout, out.stderr
    out = cli("write", "--", "--json", env=LEXICAL)  # after --, even an option name is text
    assert out.returncode == 0 and "--json" in _daily(project).read_text(encoding="utf-8")


def test_a_mistyped_option_is_still_named(cli: Cli) -> None:
    out = cli("write", "--jsn", "hello", env=LEXICAL)
    assert out.returncode == 2
    assert "No such option: --jsn" in out.stderr and "--json" in out.stderr
    out = cli("write", "-x", env=LEXICAL)  # maybe text: say how to pass it
    assert out.returncode == 2
    assert "No such option: -x" in out.stderr and "goes after `--`" in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("write", "hello", KEY),  # one text too many
        ("write", "hello", TOKEN),
        ("expand", KEY),  # not a free-text command: still never echoed
        ("index", KEY),
        ("topic", "list", f"--x{TOKEN}"),
        ("search", "-k", TOKEN, "query"),  # a bad option value
        ("topic", "remove", TOKEN),  # a memlane error quoting the input
        ("topic", "add", "fact", "--topic", "t", "--title", "x", "--type", TOKEN),
    ],
)
def test_no_error_repeats_a_secret(cli: Cli, args: tuple[str, ...]) -> None:
    out = cli(*args, env=LEXICAL)
    assert out.returncode != 0
    assert out.stderr.strip(), "an error must say something"
    assert not _leaks(out.stdout + out.stderr), out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-----BEGIN X"], ["--", "-----BEGIN X"]),
        (["--title", "-x", "text"], ["--title", "-x", "--", "text"]),
        (["--title=-x", "-y z"], ["--title=-x", "--", "-y z"]),
        (["-k5", "-k is a flag"], ["-k5", "--", "-k is a flag"]),
        (["--json", "-"], ["--json", "--", "-"]),
        (["a", "--", "--json", "-k"], ["--", "a", "--json", "-k"]),
        (["--jsn", "-q"], ["--jsn", "-q"]),  # mistyped options stay options
        (["--json"], ["--json"]),
    ],
)
def test_text_goes_after_the_options(args: list[str], expected: list[str]) -> None:
    options = {"--title": True, "-k": True, "--json": False}
    assert text_after_options(args, options) == expected
