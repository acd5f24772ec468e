"""The doctor's report as text and rows (``memlane status``, the sidecar's
``memory_status``, the web viewer's Health page); its data is
``Status`` (engine/shared/results.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memlane.engine.shared.results import DAMAGE_SHOWN
from memlane.engine.topics.overview import topic_rows

if TYPE_CHECKING:
    from memlane.engine.shared.results import Status
    from memlane.store.damage import DamagedLine


def describe_damage(line: DamagedLine) -> str:
    """``path:line: why: "how it starts"`` for one damaged line."""
    return f'{line.where}: {line.reason}: "{line.preview}"'


def health_line(health: dict[str, Any]) -> str:
    """``index health`` in the doctor's report: usable or not, and why."""
    if health.get("error"):
        return f"unavailable: {health['error']}"
    if not health.get("exists"):
        return "reachable; the collection is created by the first index run"
    rows = health.get("rows")
    dimension = health.get("dimension")
    parts = ["ok", f"collection {health.get('collection')}"]
    if rows is not None:
        parts.append(f"{rows} rows")
    if dimension:
        parts.append(f"dimension {dimension}")
    return ", ".join(parts)


def render_status(st: Status) -> str:
    """The doctor's text report, shared with the sidecar's memory_status."""
    rows = status_rows(st)
    width = max(len(r[0]) for r in rows)
    out = [f"{key:<{width}}  {value}" for key, value in rows]
    out += [f"missing: {text}" for text in st.missing]
    out += [f"note: {text}" for text in st.notices]
    if not st.missing:
        out.append("nothing missing")
    return "\n".join(out)


def calibration_line(calibration: dict[str, Any]) -> str:
    """What the search scores are calibrated for, in one line."""
    source = calibration.get("source")
    if source == "bundled":
        return "calibrated (the bundled model)"
    if source == "derived":
        return f"calibrated for this model (measured {calibration.get('measured_at')})"
    return "not calibrated for this model: run `memlane calibrate`"


def status_rows(st: Status) -> list[tuple[str, str]]:
    """The report's (label, value) rows, in order: what ``render_status``
    prints and the web viewer's Health page shows (``missing`` and
    ``notices`` are the Status's own fields)."""
    rows: list[tuple[str, str | None]] = [
        ("memlane", st.versions["memlane"]),
        ("python / sqlite", f"{st.versions['python']} / {st.versions['sqlite']}"),
        ("scope", st.scope["scope"]),
        *([("worktree", st.scope["worktree"]["reason"])] if st.scope.get("worktree") else []),
        *([("worktrees", _shared_by(st.scope))] if st.scope.get("shared_by") else []),
        ("store", st.scope["store"]),
        *([("store link", st.store_link)] if st.store_link else []),
        ("collection", st.scope["collection"]),
        ("backend", f"{st.backend} ({st.index_uri})"),
        *([("index health", health_line(st.index_health))] if st.index_health else []),
        ("model", f"{st.model} — embedder {st.embedder}"),
        *([("scores", calibration_line(st.calibration))] if st.calibration else []),
        ("chunks", f"{st.chunks} in {st.files} files, {st.vectors} with vectors"),
        ("index state", st.state_path or f"index: {st.state_note or 'no state file'}"),
        ("index status", str(st.state.get("status", "never indexed"))),
    ]
    if st.state.get("last_success_at"):
        rows.append(("last success", str(st.state["last_success_at"])))
    if st.state.get("last_error"):
        rows.append(("last error", str(st.state["last_error"])))
    for failure in st.state.get("failed_files") or []:
        rows.append(("failed file", f"{failure.get('path')}: {failure.get('error')}"))
    rows += [("damaged line", describe_damage(line)) for line in st.damaged[:DAMAGE_SHOWN]]
    if len(st.damaged) > DAMAGE_SHOWN:
        rows.append(
            ("damaged line", f"and {len(st.damaged) - DAMAGE_SHOWN} more (`--json` lists them all)")
        )
    rows += topic_rows(st.topics)
    capture = st.capture
    rows.append(("capture", "on" if capture.get("enabled") else "off (MEMLANE_CAPTURE=off)"))
    rows.append(("capture llm", str(capture.get("llm", ""))))
    if st.llm_budget is not None:
        from memlane.llm.budget import budget_line

        rows.append(("llm budget", budget_line(st.llm_budget)))
    if capture.get("journal"):
        from memlane.engine.journal.capture_recovery import status_line

        rows.append(("capture journal", status_line(capture["journal"])))
    from memlane.engine import warm_engine

    if st.engine:
        rows.append(("engine", warm_engine.engine_line(st.engine)))
    if st.hooks:
        rows.append(("client failures", warm_engine.status_line(st.hooks)))
    if st.claude_code:
        rows.append(("claude code", str(st.claude_code.get("line", ""))))
    ac = st.auto_context
    # In a session, the session's truth: auto-context turns itself off for
    # the session after too many deadline misses (engine/live/auto_context.py).
    given_up = (st.session or {}).get("auto_context", {}).get("disabled_reason")
    if ac.get("enabled") and given_up:
        rows.append(
            (
                "auto-context",
                f"off for this session: {given_up} "
                "(a new session starts it again; a slow embedder is the usual cause)",
            )
        )
    elif ac.get("enabled"):
        rows.append(
            (
                "auto-context",
                f"on: top {ac['top_k']}, score >= {ac['score_floor']}, "
                f"{ac['char_budget']} chars, {ac['cap_ms']} ms deadline",
            )
        )
    else:
        rows.append(("auto-context", "off (MEMLANE_AUTO_CONTEXT=on enables it)"))
    if st.session:
        counters = st.session.get("auto_context", {})
        rows.append(
            (
                "auto-context counts",
                ", ".join(
                    f"{name} {counters.get(name, 0)}"
                    for name in (
                        "injected",
                        "skippedBudget",
                        "skippedEmpty",
                        "skippedError",
                        "skippedWarming",
                        "lexicalWhileWarming",
                    )
                ),
            )
        )
        surf = st.session.get("surfacing", {})
        if surf.get("enabled"):
            rows.append(
                (
                    "topic surfacing",
                    f"{surf.get('injected', 0)} injected, {surf.get('skipped_empty', 0)} with "
                    f"nothing relevant, {surf.get('skipped_budget', 0)} past the deadline",
                )
            )
        recall = st.session.get("recall", {})
        if recall:
            rows.append(
                (
                    "auto-recall",
                    f"{recall.get('mode')}: {recall.get('injected', 0)} injected, "
                    f"{recall.get('skipped_empty', 0)} found nothing",
                )
            )
        extraction = st.session.get("extraction", {})
        if extraction.get("enabled"):
            rows.append(
                (
                    "extraction",
                    f"{extraction.get('written', 0)} topic entries written, "
                    f"{extraction.get('skipped', 0)} skipped, {extraction.get('failed', 0)} failed"
                    + (
                        f", {extraction['abandoned']} left undone at a session end"
                        if extraction.get("abandoned")
                        else ""
                    ),
                )
            )
        cap = st.session.get("capture", {})
        rows.append(
            (
                "captured",
                f"{cap.get('written', 0)} written, {cap.get('failed', 0)} failed, "
                f"{st.session.get('pending_captures', 0)} pending, "
                f"{cap.get('skipped_recall_only', 0)} only restated memory (not captured), "
                f"{cap.get('restated_dropped', 0)} restated sentences left out",
            )
        )
    if st.sessions:
        rows.append(
            (
                "sessions index",
                f"{st.sessions.get('documents', 0)} messages of "
                f"{st.sessions.get('sessions', 0)} sessions, "
                f"{st.sessions.get('embedded', 0)} embedded",
            )
        )
    if st.sessions and st.sessions.get("rebuilt"):
        rows.append(("sessions note", str(st.sessions["rebuilt"])))
    for item in st.config:
        rows.append(("config", f"{item['key']} = {item['value']}  [{item['layer']}]"))
    return [(label, str(value)) for label, value in rows]


def _shared_by(scope: dict[str, Any]) -> str:
    others = [p for p in scope["shared_by"] if p != scope["repository_dir"]]
    return f"this memory is shared with {len(others)} other checkout(s): {', '.join(others)}"
