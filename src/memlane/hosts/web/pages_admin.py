"""Health (``memlane status`` as a page), Forget (a confirmation, then
memory_forget itself) and Correct (the entry's text in a form, then the
same rewrite in place)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memlane.hosts.web.render import render, url

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.hosts.web.viewer import Viewer


def health(viewer: Viewer) -> str:
    """The doctor's report from its structured Status: what is missing first,
    then every row of it (engine/reports.py's ``status_rows``), then notes."""
    from memlane.engine.reports import status_rows

    st = viewer.memory.status()  # what memory_status reports without a live session
    return render("health.html", title="Health", active="/health", status=st, rows=status_rows(st))


def forget_arguments(params: Mapping[str, str]) -> dict[str, str]:
    """memory_forget's arguments named in a request (chunk_hash, or date and time)."""
    return {
        name: params[name].strip()
        for name in ("chunk_hash", "date", "time")
        if params.get(name, "").strip()
    }


def forget_confirm(viewer: Viewer, params: Mapping[str, str]) -> str:
    """Exactly what the removal will take, and the button that takes it."""
    from memlane.engine.journal.forget_preview import preview_forget

    arguments = forget_arguments(params)
    return render(
        "forget_confirm.html",
        title="Forget",
        removed=preview_forget(viewer.memory, **arguments),
        arguments=arguments,
        csrf=viewer.keys.csrf,
    )


def forget_apply(viewer: Viewer, form: Mapping[str, str]) -> tuple[int, str]:
    """Remove it with memory_forget, when it is still what the confirmation showed."""
    from memlane.core.errors import ConflictError

    arguments = forget_arguments(form)
    try:
        # The engine compares the confirmation's fingerprint under the store
        # lock: no change can slip in between the check and the removal.
        result = viewer.tools.forget_confirmed(form.get("fingerprint", ""), **arguments)
    except ConflictError:
        return 409, render("forget_done.html", title="Forget", again=url("/forget", arguments))
    details = result.details
    return 200, render(
        "forget_done.html",
        title="Forgotten",
        again=None,
        headline=details["headline"],
        markdown=details["markdown"],
        notices=details.get("notices") or (),
    )


def editable_text(markdown: str) -> str:
    """An entry's text as the correction form shows it: its lines below the
    heading, comment lines (the anchor, markers) left out: they stay."""
    lines = markdown.strip("\n").split("\n")[1:]
    return "\n".join(ln for ln in lines if not ln.strip().startswith("<!--")).strip()


def correct_form(viewer: Viewer, params: Mapping[str, str]) -> str:
    """The entry as it is now, its text in a form to edit."""
    from memlane.engine.journal.forget_preview import preview_forget

    arguments = forget_arguments(params)
    current = preview_forget(viewer.memory, **arguments)
    return render(
        "correct_form.html",
        title="Correct",
        current=current,
        text=editable_text(current.markdown),
        arguments=arguments,
        csrf=viewer.keys.csrf,
    )


def correct_apply(viewer: Viewer, form: Mapping[str, str]) -> tuple[int, str]:
    """Rewrite it in place, when it is still what the form showed."""
    from memlane.core.errors import ConflictError
    from memlane.engine.journal.maintenance import correct

    arguments = forget_arguments(form)
    try:
        old = correct(
            viewer.memory, form.get("text", ""), expect=form.get("fingerprint", ""), **arguments
        )
    except ConflictError:
        return 409, render("forget_done.html", title="Correct", again=url("/correct", arguments))
    return 200, render(
        "correct_done.html",
        title="Corrected",
        old=old,
        day=Path(old.source).stem,
        notices=old.notices,
    )
