"""Secrets in past sessions never reach the sessions index (issue 14 item 4).

What is stored (the row text and so the FTS content), what is embedded,
what search, the primer and the MCP tools return: all redacted. An index
written before redaction existed is rescanned by the next pass and its rows
holding a secret are replaced (text, FTS entry, vector), leaving no copy in
the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from _fixtures import ClaudeSession, HashEmbedder, PiSession, Project

from helpers import NOW, FixedClock
from memlane.engine.project import Memory
from memlane.engine.sessions.layer import SessionsLayer
from memlane.engine.sessions.registry import close_stores, sessions_path
from memlane.engine.tools.dispatch import Tools
from memlane.index.session_docs import BatchWrite, SessionDoc
from memlane.index.sqlite.session_schema import META_REDACTION
from memlane.index.sqlite.sessions import SessionStore
from secret_fakes import CHANNEL_SAMPLE, ISSUE_28, ONE_LINE, SECRETS, in_sentence


class RecordingEmbedder(HashEmbedder):
    """A HashEmbedder that keeps every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts.extend(texts)
        return super().embed(texts)


def _memory(agent_project: Project) -> Memory:
    return Memory.open(agent_project.root, clock=FixedClock(NOW))


def _contents(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT content FROM chunks ORDER BY id")]
    finally:
        conn.close()


def _fts_matches(path: Path, term: str) -> int:
    conn = sqlite3.connect(path)
    try:
        query = '"' + term.replace('"', '""') + '"'
        return int(
            conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (query,)
            ).fetchone()[0]
        )
    finally:
        conn.close()


def _file_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    wal = path.with_name(path.name + "-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def _secret_session() -> PiSession:
    session = PiSession()
    for i, case in enumerate(CHANNEL_SAMPLE):
        session.user(f"step {i} of the deploy checklist: {case.text}")
        session.assistant(
            f"noted step {i} of the deploy checklist",
            tool_calls=[("bash", {"command": f"cat >> notes <<EOF\n{case.text}\nEOF"})],
        )
    return session


def test_ingested_messages_are_redacted_in_rows_fts_vectors_and_replies(
    agent_project: Project,
) -> None:
    _secret_session().write(agent_project.pi_file())
    embedder = RecordingEmbedder()
    mem = _memory(agent_project)
    layer = SessionsLayer(mem, embedder=embedder)
    report = layer.backfill()
    assert report.documents_added == 3 * len(CHANNEL_SAMPLE)
    layer.store.checkpoint()

    stored = "\n".join(_contents(layer.store.path))
    hits = layer.search("deploy checklist", k=20, mode="lexical").hits
    recent = layer.recent(5)
    mcp = Tools(mem).call("memory_search", {"query": "deploy checklist", "kind": "session"})
    replies = [
        "\n".join(hit.text for hit in hits),
        recent[0].first_user,
        str(mcp.to_json()),
    ]
    assert hits and embedder.texts
    for case in CHANNEL_SAMPLE:
        assert case.secret not in stored, case.name
        assert f"[REDACTED:{case.kind}]" in stored, case.name
        assert not any(case.secret in text for text in embedder.texts), case.name
        assert _fts_matches(layer.store.path, case.secret) == 0, case.name
        assert case.secret.encode() not in _file_bytes(layer.store.path), case.name
        for reply in replies:
            assert case.secret not in reply, case.name
    layer.close()


def _old_index(mem: Memory, texts: list[str]) -> Path:
    """A sessions index as memlane wrote it before redaction: raw texts, vectors."""
    path = sessions_path(mem)
    store = SessionStore(path, mem.config.index, mem.config.sessions)  # no redact
    docs = [
        SessionDoc(
            "/old/t.jsonl", f"e{i}", "old-sess", "user", f"2026-01-0{i + 1}T00:00:00Z", t, True
        )
        for i, t in enumerate(texts)
    ]
    embedder = HashEmbedder()
    store.ensure_model(embedder.name, embedder.dimension)
    vectors = embedder.embed([d.text for d in docs])
    store.commit(BatchWrite(docs=docs, vectors={d.key: vectors[i] for i, d in enumerate(docs)}))
    store.checkpoint()
    store.close()
    return path


def test_every_kind_in_pi_and_claude_code_transcripts_reaches_no_row_nor_reply(
    agent_project: Project,
) -> None:
    pi = PiSession()
    claude = ClaudeSession()
    for case in SECRETS:
        # Whole line and mid-sentence, from the user and from the assistant.
        pi.user(f"staging box checklist:\n{case.text}")
        claude.assistant([{"type": "text", "text": f"staging box noted:\n{case.text}"}])
    for case in ONE_LINE:
        pi.assistant(f"staging box noted. {in_sentence(case)}")
        claude.user(in_sentence(case).replace("staging box", "staging box checklist"))
    pi.write(agent_project.pi_file())
    claude.write(agent_project.claude_file())
    embedder = RecordingEmbedder()
    mem = _memory(agent_project)
    layer = SessionsLayer(mem, embedder=embedder)
    messages = 2 * (len(SECRETS) + len(ONE_LINE))
    assert layer.backfill().documents_added == messages
    layer.store.checkpoint()

    stored = "\n".join(_contents(layer.store.path))
    assert stored.count("[REDACTED:") >= messages
    hits = layer.search("staging box", k=100, mode="lexical").hits
    assert len(hits) == 100  # the most a search returns; the rows above hold them all
    tools = Tools(mem)
    replies = ["\n".join(hit.text for hit in hits)]
    for query in ("staging box", *(case.line for case in ISSUE_28)):
        found = tools.call("memory_search", {"query": query, "kind": "session", "k": 50})
        replies.append(str(found.to_json()))
    # The plain-text search of the transcripts themselves shows snippets of them.
    raw = tools.call("memory_topic", {"action": "search", "scope": "sessions", "query": "staging"})
    assert "[REDACTED:" in raw.text
    replies += [raw.text, str(raw.to_json())]
    raw_bytes = _file_bytes(layer.store.path)
    for case in SECRETS:
        assert case.secret not in stored, case.name
        assert not any(case.secret in text for text in embedder.texts), case.name
        assert case.secret.encode() not in raw_bytes, case.name
        for reply in replies:
            assert case.secret not in reply, case.name
    for case in ISSUE_28:
        assert _fts_matches(layer.store.path, case.secret) == 0, case.name
    layer.close()


def test_an_index_made_before_redaction_is_rewritten_by_the_next_pass(
    agent_project: Project,
) -> None:
    mem = _memory(agent_project)
    secret_texts = [f"the deploy checklist says {case.text}" for case in CHANNEL_SAMPLE]
    clean = "the deploy checklist has no secret in this message"
    path = _old_index(mem, [*secret_texts, clean])
    assert any(CHANNEL_SAMPLE[0].secret in text for text in _contents(path))

    embedder = RecordingEmbedder()
    layer = SessionsLayer(mem, embedder=embedder)
    # Before any pass ran, what is read out is redacted already.
    hits = layer.search("deploy checklist", k=20, mode="lexical").hits
    assert len(hits) == len(secret_texts) + 1
    for case in CHANNEL_SAMPLE:
        assert not any(case.secret in hit.text for hit in hits), case.name

    layer.backfill()  # no transcripts: only the rescan of the stored rows
    layer.store.checkpoint()
    contents = _contents(path)
    assert len(contents) == len(secret_texts) + 1
    assert clean in contents  # a clean row is left alone
    # Only the rewritten rows were embedded again, from their redacted text.
    assert len(embedder.texts) == len(secret_texts)
    assert all("[REDACTED:" in text for text in embedder.texts)
    for case in CHANNEL_SAMPLE:
        assert not any(case.secret in text for text in contents), case.name
        assert _fts_matches(path, case.secret) == 0, case.name
        assert case.secret.encode() not in _file_bytes(path), case.name
    assert layer.store.meta()[META_REDACTION] >= 1
    assert layer.store.stats()["pending"] == 0
    layer.close()
    close_stores()
    # The next pass finds nothing to do.
    again = RecordingEmbedder()
    SessionsLayer(_memory(agent_project), embedder=again).backfill()
    assert again.texts == []


def test_an_index_redacted_by_the_rules_before_issue_28_is_rescanned(
    agent_project: Project,
) -> None:
    # Rows the earlier rules let through (ENCRYPTION_KEY=<hex>, Okta's SSWS, …)
    # are rewritten by the next pass: the version in the meta row is older.
    mem = _memory(agent_project)
    texts = [f"the deploy checklist says {in_sentence(case)}" for case in ISSUE_28]
    path = _old_index(mem, texts)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (META_REDACTION, 1))
    conn.close()
    layer = SessionsLayer(mem, embedder=HashEmbedder())
    layer.backfill()
    layer.store.checkpoint()
    contents = _contents(path)
    for case in ISSUE_28:
        assert not any(case.secret in text for text in contents), case.name
        assert case.secret.encode() not in _file_bytes(path), case.name
    layer.close()
