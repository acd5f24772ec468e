"""Health (``memlane status`` as a page) and Forget (a confirmation, then
memory_forget itself)."""

from __future__ import annotations

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
