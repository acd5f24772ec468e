"""The LoCoMo store writer and the harness's pure parts, on a tiny synthetic conversation."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "quality"
sys.path.insert(0, str(BENCH))

from locomo import questions_of, ranked_turns, repair_evidence, score_question  # noqa: E402
from locomo_store import write_conversation_store  # noqa: E402

from memlane.store.chunker import chunk_markdown  # noqa: E402

CONV = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {
                "speaker": "Bo",
                "dia_id": "D1:2",
                "text": "Cute!\nWhat name?",
                "img_url": ["x"],
                "blip_caption": "a photo of a cat",
            },
        ],
        "session_2_date_time": "7:05 pm on 8 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Her name is Miso."}],
        "session_3_date_time": "9:00 am on 1 June, 2023",
        "session_3": [],
    },
    "observation": {
        "session_1_observation": {"Ann": [["Ann adopted a cat.", "D1:1"]]},
        "session_2_observation": {"Ann": [["Ann's cat is named Miso.", "D2:1"]]},
    },
    "qa": [
        {"question": "What is the cat's name?", "evidence": ["D2:1"], "category": 4},
        {"question": "When?", "evidence": ["D:1:1; D02:01"], "category": 2},
        {"question": "Broken", "evidence": ["D"], "category": 1},
    ],
}


def test_turn_store_layout(tmp_path: Path) -> None:
    store = write_conversation_store(CONV, tmp_path / "p")
    assert [p.name for p in sorted(store.iterdir())] == ["2023-05-08.md"]
    text = (store / "2023-05-08.md").read_text(encoding="utf-8")
    assert text.startswith("# 2023-05-08\n\n## Session 13:56\n### 13:56\n")
    assert "<!-- session:conv-x-s1 turn:D1:1 transcript:none -->\n- Ann: I adopted a cat.\n" in text
    assert "- Bo: Cute! What name? [image: a photo of a cat]\n" in text
    assert (
        "\n## Session 19:05\n### 19:05\n<!-- session:conv-x-s2 turn:D2:1 transcript:none -->"
        in text
    )
    chunks = chunk_markdown(text, str(store / "2023-05-08.md"), "m")
    assert [ranked_turns([c.content]) for c in chunks] == [["D1:1"], ["D1:2"], ["D2:1"]]


def test_notes_store_holds_observations(tmp_path: Path) -> None:
    store = write_conversation_store(CONV, tmp_path / "p", notes=True)
    text = (store / "2023-05-08.md").read_text(encoding="utf-8")
    assert "turn:D2:1 transcript:none -->\n- Ann's cat is named Miso.\n" in text
    assert "Cute" not in text


def test_evidence_repair_and_scoring() -> None:
    known = {"D1:1", "D1:2", "D2:1"}
    assert repair_evidence(["D:1:1; D02:01", "D", "D9:9"], known) == ["D1:1", "D2:1"]
    questions, skipped = questions_of(CONV)
    assert skipped == 1 and [q.gold for q in questions] == [("D2:1",), ("D1:1", "D2:1")]
    row = score_question(["D1:2", "D2:1", "D1:1"], ["D2:1", "D1:1"])
    assert row["r@1"] == 0.0 and row["r@5"] == 1.0 and row["frac@1"] == 0.0
    assert row["frac@5"] == 1.0 and row["s@1"] == 1.0  # D1 is a gold session
    assert ranked_turns(["turn:D1:1 x turn:D1:2", "turn:D1:1"]) == ["D1:1", "D1:2"]
