"""Claude Code 2.1.x transcripts: the entry types it writes besides conversation.

2.1.x chains ``attachment`` lines (environment, date, prompt snapshots)
between a prompt and its reply, and writes ``api-request*``, ``tools-used``,
``cost-state``, latches, modes and more as lines of their own. L3 and the
sessions layer skip them silently and read the conversation through them;
a type that is truly new is still counted and said.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _transcript_builders import ClaudeSession
from memlane.engine.sessions.docs import documents
from memlane.transcripts import claude, read_transcript
from memlane.transcripts.formats import sniff
from memlane.transcripts.message import Skip
from memlane.transcripts.model import CLAUDE_CODE

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


HOOK_CONTEXT = "MEMLANE-INJECTED snapshot of the project's memory"


def _session() -> tuple[ClaudeSession, list[str]]:
    """Two turns as 2.1.x writes them, with memlane's hooks adding context."""
    cc = ClaudeSession()
    cc.session_start_21(HOOK_CONTEXT)
    ids: list[str] = []
    for n, (prompt, reply) in enumerate(
        [
            ("Which database for the ledger?", "Postgres, for its row locks."),
            ("And the cache?", "Redis with allkeys-lru."),
        ]
    ):
        ids.extend(cc.turn_21(prompt, reply, msg_id=f"msg_{n}", context=HOOK_CONTEXT))
    return cc, ids


def test_a_2_1_transcript_reads_with_no_note_and_only_its_conversation(tmp_path: Path) -> None:
    cc, (q1, a1, q2, a2) = _session()
    path = cc.write(tmp_path / "s.jsonl")
    live = read_transcript(path)
    assert live.notes == ()
    assert [(t.role, t.text) for t in live.turns] == [
        ("user", "Which database for the ledger?"),
        ("assistant", "Postgres, for its row locks."),
        ("user", "And the cache?"),
        ("assistant", "Redis with allkeys-lru."),
    ]
    assert [t.id for t in live.turns] == [q1, a1, q2, a2]
    # An anchor on the first answer finds it across the attachments around it.
    anchored = read_transcript(path, a1, context=1)
    target = [t for t in anchored.turns if t.is_target]
    assert [t.id for t in target] == [a1] and anchored.notes == ()
    # What the hooks added (memlane's own context) is not conversation.
    for shown in (live, anchored):
        assert "system-reminder" not in shown.render() and HOOK_CONTEXT not in shown.render()


def test_a_truly_new_type_is_still_counted_and_said(tmp_path: Path) -> None:
    cc, _ = _session()
    cc.record("hologram-state", level=3)
    cc.record("hologram-state", level=4)
    t = read_transcript(cc.write(tmp_path / "s.jsonl"))
    assert t.notes == ("skipped 2 entries of unknown type: hologram-state ×2",)
    assert [turn.text for turn in t.turns][-1] == "Redis with allkeys-lru."


def test_a_file_that_opens_with_2_1_records_is_known_as_claude_code() -> None:
    # A resumed session can start with modes and latches, before any message.
    opening = [{"type": kind, "sessionId": "s"} for kind in ("permission-mode", "atis-latch")]
    assert sniff(opening) == CLAUDE_CODE


def test_the_sessions_layer_takes_them_as_silent_not_unknown() -> None:
    cc, _ = _session()
    reads = [claude.message(json.loads(line)) for line in cc.lines]
    assert Skip.UNKNOWN not in reads
    docs = [doc for read in reads for doc in documents(read, CLAUDE_CODE) or []]
    assert [(d.role, d.text) for d in docs] == [
        ("user", "Which database for the ledger?"),
        ("assistant", "Postgres, for its row locks."),
        ("user", "And the cache?"),
        ("assistant", "Redis with allkeys-lru."),
    ]


def _busy_session() -> tuple[ClaudeSession, str]:
    """A turn during which the person typed twice more: once a prompt of their
    own, once a slash command's notification (not their words)."""
    cc = ClaudeSession()
    cc.user("Run the migration.")
    cc.assistant([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "m"}}])
    cc.tool_result("t1", "migrated 3 tables")
    typed = cc.queued("Also drop the old index, please.")
    cc.queued("<task-notification>done</task-notification>", commandMode="task-notification")
    cc.queued("from another session", origin={"kind": "peer"})
    cc.assistant([{"type": "text", "text": "Done, and the old index is dropped."}], msg_id="m2")
    return cc, typed


def test_a_prompt_typed_while_the_agent_worked_is_a_user_turn(tmp_path: Path) -> None:
    cc, typed = _busy_session()
    t = read_transcript(cc.write(tmp_path / "s.jsonl"))
    assert t.notes == ()
    users = [(turn.id, turn.text) for turn in t.turns if turn.role == "user"]
    assert users[-1] == (typed, "Also drop the old index, please.")
    assert "task-notification" not in t.render() and "another session" not in t.render()
    around = read_transcript(tmp_path / "s.jsonl", typed, context=0)
    assert [turn.text for turn in around.turns if turn.is_target] == [
        "Also drop the old index, please."
    ]


def test_the_sessions_layer_indexes_a_typed_prompt_as_the_persons_words() -> None:
    cc, typed = _busy_session()
    reads = [claude.message(json.loads(line)) for line in cc.lines]
    docs = [doc for read in reads for doc in documents(read, CLAUDE_CODE) or []]
    assert [(d.entry_id, d.text) for d in docs if d.role == "user"] == [
        (docs[0].entry_id, "Run the migration."),
        (typed, "Also drop the old index, please."),
    ]


def test_a_slash_command_reads_as_typed_and_its_output_is_not_conversation(
    tmp_path: Path,
) -> None:
    cc = ClaudeSession()
    cc.turn_21("Which database for the ledger?", "Postgres.")
    compact = cc.command_21("compact", output="Compacted (ctrl+o to see full summary)")
    recall = cc.command_21("recall", args="what did we decide about the ledger")
    shell = cc.shell_21("git status", stdout="On branch main", stderr="warning: LF")
    t = read_transcript(cc.write(tmp_path / "s.jsonl"), limit=20)
    users = [(turn.id, turn.text) for turn in t.turns if turn.role == "user"]
    assert users[-3:] == [
        (compact, "/compact"),
        (recall, "/recall what did we decide about the ledger"),
        (shell, "!git status"),
    ]
    rendered = t.render()
    assert "command-name" not in rendered and "Compacted" not in rendered
    assert "bash-" not in rendered and "On branch main" not in rendered
    reads = [claude.message(json.loads(line)) for line in cc.lines]
    texts = [r.text for r in reads if not isinstance(r, Skip) and r.role == "user"]
    assert texts == [
        "Which database for the ledger?",
        "/compact",
        "/recall what did we decide about the ledger",
        "!git status",
    ]
    docs = [doc for read in reads for doc in documents(read, CLAUDE_CODE) or []]
    indexed = " ".join(doc.text for doc in docs)
    assert "!git status" in indexed
    assert "On branch main" not in indexed and "Compacted" not in indexed


# -- any mix of them, anywhere ------------------------------------------------------------

KNOWN_RECORDS = sorted(claude.METADATA_TYPES)
ATTACHMENT_KINDS = ["environment", "date", "prompt_snapshot", "hook_additional_context", "todo"]


@st.composite
def sessions(draw: st.DrawFn) -> tuple[ClaudeSession, ClaudeSession, int]:
    """The same conversation twice: bare, and with 2.1.x lines mixed in (records
    anywhere, attachments chained between lines), plus how many lines of a
    made-up type were mixed in too."""
    n = draw(st.integers(1, 6))
    bare, mixed = ClaudeSession(), ClaudeSession()
    unknown = 0
    for i in range(n):
        extras = draw(
            st.lists(
                st.one_of(
                    st.tuples(st.just("record"), st.sampled_from(KNOWN_RECORDS)),
                    st.tuples(st.just("attachment"), st.sampled_from(ATTACHMENT_KINDS)),
                    st.tuples(st.just("unknown"), st.just("not-a-claude-type")),
                ),
                max_size=6,
            )
        )
        bare.user(f"question {i}", uuid=f"u{i}")
        mixed.user(f"question {i}", uuid=f"u{i}")
        for what, kind in extras:
            if what == "record":
                mixed.record(kind, value=i)
            elif what == "attachment":
                mixed.attachment(kind, f"context {i}")
            else:
                mixed.record(kind)
                unknown += 1
        bare.assistant([{"type": "text", "text": f"answer {i}"}], msg_id=f"m{i}", uuid=f"a{i}")
        mixed.assistant([{"type": "text", "text": f"answer {i}"}], msg_id=f"m{i}", uuid=f"a{i}")
    return bare, mixed, unknown


@SETTINGS
@given(sessions(), st.data())
def test_mixed_in_2_1_lines_change_no_turn_and_only_unknown_ones_are_said(
    case: tuple[ClaudeSession, ClaudeSession, int], data: st.DataObject
) -> None:
    bare, mixed, unknown = case
    with tempfile.TemporaryDirectory() as tmp:
        plain = read_transcript(bare.write(Path(tmp) / "bare.jsonl"), limit=100)
        path = mixed.write(Path(tmp) / "mixed.jsonl")
        seen = read_transcript(path, limit=100)
        turns = len(plain.turns) // 2
        anchor = f"a{data.draw(st.integers(0, turns - 1))}"
        around = read_transcript(path, anchor, context=100, limit=100)
    shape = [(t.id, t.role, t.text) for t in plain.turns]
    assert [(t.id, t.role, t.text) for t in seen.turns] == shape
    assert [(t.id, t.role, t.text) for t in around.turns] == shape
    expected = (
        (
            f"skipped {unknown} entr{'y' if unknown == 1 else 'ies'} of unknown type: "
            f"not-a-claude-type ×{unknown}",
        )
        if unknown
        else ()
    )
    assert seen.notes == expected


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@SETTINGS
@given(
    attachment=st.one_of(
        JSON,
        st.fixed_dictionaries(
            {"type": st.just("queued_command")},
            optional={
                "prompt": JSON | st.text(max_size=20),
                "commandMode": JSON | st.sampled_from(["prompt", "task-notification"]),
                "origin": JSON | st.fixed_dictionaries({"kind": JSON | st.just("human")}),
                "isMeta": JSON,
            },
        ),
    )
)
def test_any_attachment_shape_reads_without_error(attachment: object) -> None:
    obj = {"type": "attachment", "uuid": "u1", "parentUuid": None, "attachment": attachment}
    prompt = claude.queued_prompt(obj)
    read = claude.message(obj)
    if prompt is None:
        assert read is Skip.SILENT
    else:
        assert prompt.strip() and not isinstance(read, Skip) and read.text == prompt
        assert claude.draft(obj).text == prompt
