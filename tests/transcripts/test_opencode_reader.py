"""OpenCode sessions: read from a real SQLite database in OpenCode 1.18's layout, kept as JSONL.

The database is built with the columns OpenCode 1.18 creates (``session``,
``message``, ``part``; JSON in ``data``); the copy is then read by memlane's
own readers: ``read_transcript`` (L3), the message-by-message reader (the
sessions layer) and the format sniffing both use.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.transcripts import message as m
from memlane.transcripts import opencode, read_transcript
from memlane.transcripts.formats import message_reader, sniff
from memlane.transcripts.locate import discover_sources, opencode_copy_dir, opencode_db
from memlane.transcripts.model import OPENCODE

SESSION = "ses_dbed20ea4ffeo4BrHu0nzXYbfW"
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DDL = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
  slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"""


class Db:
    """An OpenCode database written the way OpenCode 1.18 writes it."""

    def __init__(self, path: Path, directory: str = "/work/proj") -> None:
        self.path = path
        self.clock = 1_796_389_859_000
        self.n = 0
        with sqlite3.connect(path) as conn:
            conn.executescript(DDL)
            conn.execute(
                "INSERT INTO session VALUES (?, 'global', NULL, 'misty-otter', ?, 'Greeting', "
                "'1.18.33', ?, ?)",
                (SESSION, directory, self.clock, self.clock),
            )

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:012d}"

    def message(self, role: str, parts: list[dict[str, Any]], *, done: bool = True) -> str:
        self.clock += 1000
        mid = self._id("msg")
        info: dict[str, Any] = {"role": role, "time": {"created": self.clock}}
        if role == "assistant" and done:
            info["time"]["completed"] = self.clock + 500
        with sqlite3.connect(self.path) as conn:
            conn.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (mid, SESSION, self.clock, self.clock, json.dumps(info)),
            )
            for part in parts:
                conn.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (self._id("prt"), mid, SESSION, self.clock, self.clock, json.dumps(part)),
                )
        return mid

    def complete(self, mid: str) -> None:
        with sqlite3.connect(self.path) as conn:
            (data,) = conn.execute("SELECT data FROM message WHERE id = ?", (mid,)).fetchone()
            info = json.loads(data)
            info["time"]["completed"] = info["time"]["created"] + 1
            conn.execute("UPDATE message SET data = ? WHERE id = ?", (json.dumps(info), mid))


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def tool(name: str, output: str, status: str = "completed") -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": {"filePath": "a.py"}}
    state["output" if status == "completed" else "error"] = output
    return {"type": "tool", "tool": name, "callID": "call_1", "state": state}


@pytest.fixture
def db(tmp_path: Path) -> Db:
    return Db(tmp_path / "opencode.db")


def test_sync_writes_a_copy_memlanes_readers_read(db: Db, tmp_path: Path) -> None:
    prompt = db.message("user", [text("where is the config?"), text("ctx", synthetic=True)])
    db.message("assistant", [{"type": "step-start"}, text("Reading it."), tool("read", "x=1")])
    answer = db.message("assistant", [text("In a.py."), {"type": "step-finish"}])
    copy = tmp_path / "copy" / f"{SESSION}.jsonl"

    stored = opencode.sync(db.path, SESSION, copy)

    assert stored is not None and len(stored.messages) == 3
    lines = [json.loads(line) for line in copy.read_text().splitlines()]
    assert lines[0]["agent"] == "opencode" and lines[0]["cwd"] == "/work/proj"
    assert sniff(iter(lines)) == OPENCODE
    read = message_reader(OPENCODE)
    messages = [r for r in map(read, lines) if isinstance(r, m.Message)]
    assert [x.role for x in messages] == [m.USER, m.ASSISTANT, m.TOOL, m.ASSISTANT]
    assert messages[0].text == "where is the config?"  # the synthetic part is not the user's
    assert messages[1].calls[0].name == "read"
    assert messages[2].outputs[0].text == "x=1"
    # L3: the turns around the answer, OpenCode's ids as entry ids.
    transcript = read_transcript(copy, answer)
    assert transcript.format == OPENCODE and transcript.session_id == SESSION
    assert [t.role for t in transcript.turns] == ["user", "assistant", "assistant"]
    assert transcript.turns[0].id == prompt and transcript.target == answer
    assert "opencode session " + SESSION in transcript.render()


def test_sync_appends_only_settled_messages_once(db: Db, tmp_path: Path) -> None:
    copy = tmp_path / f"{SESSION}.jsonl"
    db.message("user", [text("first")])
    pending = db.message("assistant", [text("still streaming")], done=False)
    opencode.sync(db.path, SESSION, copy)
    first = copy.read_bytes()
    assert b"still streaming" not in first
    assert opencode.last_turn(opencode.read_session(db.path, SESSION)) is None  # type: ignore[arg-type]

    db.complete(pending)
    opencode.sync(db.path, SESSION, copy)
    opencode.sync(db.path, SESSION, copy)
    second = copy.read_bytes()
    assert second.startswith(first) and second.count(b"still streaming") == 1
    turn = opencode.last_turn(opencode.read_session(db.path, SESSION))  # type: ignore[arg-type]
    assert turn is not None and turn.user == "first" and turn.assistant == "still streaming"
    assert turn.last_id == pending


def test_last_turn_is_the_last_prompt_and_every_answer_after_it(db: Db) -> None:
    db.message("user", [text("old")])
    db.message("assistant", [text("old answer")])
    prompt = db.message("user", [text("new")])
    db.message("assistant", [text("part one"), tool("bash", "boom", status="error")])
    last = db.message("assistant", [text("part two")])
    turn = opencode.last_turn(opencode.read_session(db.path, SESSION))  # type: ignore[arg-type]
    assert turn is not None
    assert (turn.user_id, turn.user, turn.last_id) == (prompt, "new", last)
    assert turn.assistant == "part one\n\npart two" and turn.tools == ("bash",)
    assert not turn.aborted


def test_an_unknown_session_and_a_missing_database(db: Db, tmp_path: Path) -> None:
    assert opencode.read_session(db.path, "ses_unknown") is None
    with pytest.raises(sqlite3.Error):
        opencode.read_session(tmp_path / "none.db", SESSION)


def test_where_opencode_and_the_copies_live(tmp_path: Path) -> None:
    env = {"HOME": "/home/u"}
    assert opencode_db(env) == Path("/home/u/.local/share/opencode/opencode.db")
    assert opencode_db({**env, "XDG_DATA_HOME": "/d"}) == Path("/d/opencode/opencode.db")
    assert opencode_db({**env, "OPENCODE_DB": "beta.db"}).name == "beta.db"
    assert opencode_db({**env, "OPENCODE_DB": "/x/o.db"}) == Path("/x/o.db")
    home = {"HOME": str(tmp_path), "MEMLANE_HOME": str(tmp_path / "mh")}
    directory = opencode_copy_dir("/work/proj", home)
    assert directory == tmp_path / "mh" / "transcripts" / "opencode" / "-work-proj"
    directory.mkdir(parents=True)
    (directory / f"{SESSION}.jsonl").write_text("{}\n")
    sources = discover_sources(["/work/proj"], home)
    assert [(s.path.name, s.format) for s in sources] == [(f"{SESSION}.jsonl", OPENCODE)]


texts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)
part_lists = st.lists(
    st.one_of(
        texts.map(text),
        texts.map(lambda t: text(t, synthetic=True)),
        st.tuples(st.sampled_from(["read", "bash", "memlane_memory_search"]), texts).map(
            lambda a: tool(*a)
        ),
        st.just({"type": "step-start"}),
        st.just({"type": "reasoning", "text": "hmm"}),
        st.just({"type": "file", "filename": "a.png"}),
    ),
    max_size=5,
)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), part_lists), max_size=8))
def test_any_session_round_trips_through_the_copy(
    spec: list[tuple[str, list[dict[str, Any]]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Db(Path(tmp) / "opencode.db")
        ids = [db.message(role, parts) for role, parts in spec]
        copy = Path(tmp) / "c.jsonl"
        opencode.sync(db.path, SESSION, copy)
        again = copy.read_bytes()
        opencode.sync(db.path, SESSION, copy)
        assert copy.read_bytes() == again  # nothing twice
        lines = [json.loads(line) for line in again.decode().split("\n") if line]
        assert [line["id"] for line in lines[1:] if line["id"].startswith("msg_")] == ids
        read = message_reader(OPENCODE)
        by_id = {r.entry_id: r for r in map(read, lines) if isinstance(r, m.Message)}
        for mid, (role, parts) in zip(ids, spec, strict=True):
            wanted = "\n".join(
                p["text"] for p in parts if p["type"] == "text" and not p.get("synthetic")
            )
            files = ["[file a.png]" for p in parts if p["type"] == "file"]
            assert by_id[mid].text == "\n".join(t for t in [wanted, *files] if t)
            assert by_id[mid].role == (m.USER if role == "user" else m.ASSISTANT)
        if ids:
            transcript = read_transcript(copy)
            assert transcript.branch_turns == len(ids)
