"""The LoCoMo-at-scale benchmark's distractors (benchmarks/quality/distractors.py).

Their vectors are cached by text, so the generator must give the same texts
for a seed, a longer run must start with a shorter one's, and they must be
varied enough to compete; ``avoid`` must take the speakers' names out and
change nothing else.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load() -> ModuleType:
    path = ROOT / "benchmarks" / "quality" / "distractors.py"
    spec = importlib.util.spec_from_file_location("bench_distractors", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_same_seed_gives_the_same_texts_and_a_longer_run_extends_a_shorter_one() -> None:
    d = load()
    short = list(d.distractors(500, seed=7))
    assert short == list(d.distractors(500, seed=7))
    assert list(d.distractors(2000, seed=7))[:500] == short
    assert short != list(d.distractors(500, seed=8))


def test_the_texts_are_varied_short_and_timed() -> None:
    d = load()
    items = list(d.distractors(5000))
    texts = [text for _, text in items]
    assert len(set(texts)) >= 0.9 * len(texts)
    assert all(re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", hhmm) for hhmm, _ in items)
    assert max(len(text) for text in texts) < 400
    words = {w for text in texts for w in re.findall(r"[A-Za-z]+", text)}
    # Coding, life and meeting vocabularies are all there.
    assert {"pytest", "hiking", "Paris", "Met", "Reminder"} <= words


def test_avoided_names_are_replaced_and_nothing_else_changes() -> None:
    d = load()
    plain = list(d.distractors(3000))
    avoided = list(d.distractors(3000, avoid=["Jon", "Gina"]))
    swaps = d.name_swaps(["Jon", "Gina"])
    assert not any(re.search(r"\b(Jon|Gina)\b", text) for _, text in avoided)
    changed = 0
    for (hhmm, before), (hhmm_after, after) in zip(plain, avoided, strict=True):
        assert hhmm == hhmm_after
        expected = re.sub(r"\b(Jon|Gina)\b", lambda m: swaps[m.group(1)], before)
        assert after == expected
        changed += before != after
    assert changed > 0
