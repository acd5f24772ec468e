"""The pi package's own redactor redacts what memlane's does, to the byte.

Without the engine the pi package writes daily-file entries itself
(integrations/pi/extensions/memlane/degraded.ts), through its TypeScript port
of memlane's redaction (redact.ts, its patterns generated from the Python
rules). Every row of the secret table goes through it with Node: each secret
comes out as ``[REDACTED:<kind>]`` and nothing else changes, each ordinary
look-alike line comes out unchanged, and on every text (the rows, the rows
set mid-sentence, all of them in one text, and seeded mixtures of rows,
look-alikes and pieces of secrets) the TypeScript and the Python give the
same text, count and kinds.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiInstall

from memlane.store.redaction import redact
from secret_fakes import ONE_LINE, ORDINARY, SECRETS, every_kind_text, in_sentence

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).with_name("node") / "redact_parity.mjs"
NODE_TIMEOUT_S = 120
MIXTURES = 300
SEPARATORS = (" ", "\n", ", ", " = ", ": ", '"', "\n\n", "\t", "'", " and ")


def _typescript(pi: PiInstall, texts: list[str], tmp_path: Path) -> list[dict[str, Any]]:
    given, taken = tmp_path / "texts.json", tmp_path / "redacted.json"
    given.write_text(json.dumps(texts))
    out = subprocess.run(
        [str(pi.node), str(SCRIPT), str(given), str(taken)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return list(json.loads(taken.read_text()))


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
