"""What the pi package does itself without memlane is what memlane does, to the byte.

Without the engine the pi package writes daily-file entries itself and reads
transcripts itself (integrations/pi/extensions/memlane/degraded.ts), through
TypeScript ports of memlane's rules, run here with Node:

* redaction (redact.ts, its patterns generated from the Python rules): each
  row of the secret table comes out as ``[REDACTED:<kind>]`` with nothing
  else changed, each ordinary look-alike line comes out unchanged, and on
  every text (the rows, the rows mid-sentence, all of them in one text, and
  seeded mixtures of rows, look-alikes and pieces of secrets) the TypeScript
  and the Python give the same text, count and kinds;
* L3 (transcript.ts): pi sessions with forks, tool calls and results,
  compactions, branch summaries, unknown and unreadable lines, a missing
  parent, long turns and secrets render exactly as memlane's
  ``memory_transcript`` renders them, errors included.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiInstall

from _transcript_builders import PiSession
from memlane.core.errors import MemlaneError
from memlane.engine.recall.transcript_redaction import redacted_transcript
from memlane.store.redaction import redact
from memlane.transcripts import read_transcript
from secret_fakes import ONE_LINE, ORDINARY, SECRETS, every_kind_text, in_sentence

pytestmark = pytest.mark.e2e

NODE = Path(__file__).with_name("node")
NODE_TIMEOUT_S = 120
MIXTURES = 300
SEPARATORS = (" ", "\n", ", ", " = ", ": ", '"', "\n\n", "\t", "'", " and ")


def _node(pi: PiInstall, script: str, given: Any, tmp_path: Path) -> list[Any]:
    """*script* (in node/) run on *given*: the JSON it wrote back."""
    source, taken = tmp_path / f"{script}.in.json", tmp_path / f"{script}.out.json"
    source.write_text(json.dumps(given))
    out = subprocess.run(
        [str(pi.node), str(NODE / script), str(source), str(taken)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return list(json.loads(taken.read_text()))


def _typescript(pi: PiInstall, texts: list[str], tmp_path: Path) -> list[dict[str, Any]]:
    return _node(pi, "redact_parity.mjs", texts, tmp_path)


def _mixtures(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    pieces: list[str] = []
    for case in SECRETS:
        pieces += [case.text, case.line, case.secret, *case.fragments(12)[:2]]
    pieces += ORDINARY
    pieces += ["token", "password:", "key=", "api_key", "Bearer", "machine", "-p", "--token"]
    texts = []
    for _ in range(n):
        parts = rng.sample(pieces, rng.randint(1, 5))
        text = parts[0]
        for part in parts[1:]:
            text += rng.choice(SEPARATORS) + part
        texts.append(text)
    return texts


def test_every_secret_of_the_table_is_redacted_and_every_ordinary_line_kept(
    pi_install: PiInstall, tmp_path: Path
) -> None:
    texts = [case.text for case in SECRETS] + ORDINARY
    results = _typescript(pi_install, texts, tmp_path)
    for case, result in zip(SECRETS, results[: len(SECRETS)], strict=True):
        assert result["text"] == case.redacted, case.name
        assert case.kind in result["kinds"], case.name
    for line, result in zip(ORDINARY, results[len(SECRETS) :], strict=True):
        assert result["text"] == line
        assert result["count"] == 0


def test_the_typescript_and_the_python_redact_every_text_alike(
    pi_install: PiInstall, tmp_path: Path
) -> None:
    texts = [
        every_kind_text(),
        *(in_sentence(case) for case in ONE_LINE),
        *_mixtures(20261214, MIXTURES),
        "<private>the door code is 4711</private> and <private>never closed",
        "already [REDACTED:github-token] and [private] stay as they are",
        "",
    ]
    results = _typescript(pi_install, texts, tmp_path)
    differ = []
    for text, result in zip(texts, results, strict=True):
        python = redact(text)
        mine = (result["text"], result["count"], tuple(result["kinds"]))
        if mine != (python.text, python.count, python.kinds):
            differ.append(
                f"{text[:120]!r}\n  ts: {result['text'][:160]!r}\n  py: {python.text[:160]!r}"
            )
    assert not differ, f"{len(differ)} of {len(texts)} texts differ:\n" + "\n".join(differ[:5])


def _sessions(tmp_path: Path) -> list[tuple[Path, str | None]]:
    """pi sessions in every shape L3 meets, and the turns asked of each."""
    calls: list[tuple[Path, str | None]] = []
    plain = PiSession("sess-plain")
    first = plain.user("Which cache should we use?")
    plain.assistant(
        "", tool_calls=[("bash", {"command": "ls -la", "password": "Xk29fjQ0pLm3Zr8T"})]
    )
    plain.tool_result("files")
    answer = plain.assistant("Redis, with 5 minute TTLs. " + "Long reasoning. " * 200)
    plain.model_change()
    plain.user(f"and the token {SECRETS[11].secret}?")
    plain.assistant("Rotate it.", tool_calls=[("read", {"a": 1, "b": [2], "c": {"d": 3}, "e": 4})])
    plain.compaction("summary of the work " * 30, first_kept=first)
    plain.raw("{not json")
    plain.raw('{"type": "mystery", "id": "m1", "parentId": null}')
    branch_point = plain.user("one more thing")
    plain.assistant("done")
    plain.branch(answer)
    plain.branch_summary(branch_point, "left a branch", parent=answer)
    plain.user("a fork after the answer")
    plain.assistant("forked reply")
    plain.entry("message", parent="gone", message={"role": "user", "content": "orphan"})
    path = plain.write(tmp_path / "plain.jsonl")
    calls += [(path, None), (path, first), (path, answer), (path, branch_point), (path, answer[:5])]
    calls += [(path, "nope"), (path, "e")]
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_text(
        '{"type": "session", "id": "old", "timestamp": "2026-08-13T14:00:00Z"}\n'
        '{"type": "message", "message": {"role": "user", "content": "v1 question"}}\n'
        '{"type": "message", "message": {"role": "assistant", "content": "v1 answer"}}\n'
    )
    calls += [(legacy, None), (legacy, "L1")]
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "other.jsonl").write_text('{"hello": "world"}\n')
    calls += [(tmp_path / "empty.jsonl", None), (tmp_path / "other.jsonl", None)]
    calls += [(tmp_path / "missing.jsonl", None)]
    return calls


def _python_l3(path: Path, turn: str | None) -> str:
    try:
        return redacted_transcript(read_transcript(path, turn)).render()
    except MemlaneError as exc:
        return f"error: {exc.message}"


def test_the_typescript_reads_a_pi_session_as_memlane_does(
    pi_install: PiInstall, tmp_path: Path
) -> None:
    calls = _sessions(tmp_path)
    given = [{"path": str(path), "turn": turn} for path, turn in calls]
    answers = _node(pi_install, "transcript_parity.mjs", given, tmp_path)
    for (path, turn), answer in zip(calls, answers, strict=True):
        assert answer == _python_l3(path, turn), f"{path.name} turn={turn}"
