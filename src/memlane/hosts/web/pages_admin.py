"""Health (``memlane status`` as a page) and Forget (a confirmation, then
memory_forget itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.hosts.web.render import esc, link, page, url

if TYPE_CHECKING:
    from collections.abc import Mapping

    from memlane.hosts.web.viewer import Viewer
    from memlane.store.forget import Removed


def health(viewer: Viewer) -> str:
    """The doctor's report from its structured Status: what is missing first,
    then every row of it (engine/reports.py's ``status_rows``), then notes."""
    from memlane.engine.reports import status_rows

    st = viewer.memory.status()  # what memory_status reports without a live session
    if st.missing:
        fixes = "".join(f"<li>{esc(text)}</li>" for text in st.missing)
        head = f'<section class="missing"><h2>Missing</h2><ul>{fixes}</ul></section>'
    else:
        head = '<p class="ok">Nothing missing.</p>'
    rows = "".join(
        f"<tr><th>{esc(label)}</th><td>{esc(value)}</td></tr>" for label, value in status_rows(st)
    )
    counters = (
        f'<p class="summary">{st.chunks} chunks in {st.files} files, {st.vectors} with '
        f"vectors; index {esc(st.state.get('status', 'never indexed'))}</p>"
    )
    notes = "".join(f"<li>{esc(text)}</li>" for text in st.notices)
    body = (
        head
        + counters
        + f'<table class="status">{rows}</table>'
        + (f'<section class="notes"><h2>Notes</h2><ul>{notes}</ul></section>' if notes else "")
    )
    return page("Health", body, active="/health")


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
    removed = preview_forget(viewer.memory, **arguments)
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in arguments.items()
    )
    body = (
        _removed_block(removed, "This will be removed for good")
        + f'<form method="post" action="{esc(url("/forget"))}" class="confirm">'
        + hidden
        + f'<input type="hidden" name="fingerprint" value="{esc(removed.fingerprint())}">'
        + f'<input type="hidden" name="csrf" value="{esc(viewer.keys.csrf)}">'
        + '<button type="submit" class="danger" id="confirm-forget">Forget this entry</button> '
        + link(url("/"), "cancel")
        + "</form>"
    )
    return page("Forget", body)


def forget_apply(viewer: Viewer, form: Mapping[str, str]) -> tuple[int, str]:
    """Remove it with memory_forget, when it is still what the confirmation showed."""
    from memlane.core.errors import ConflictError

    arguments = forget_arguments(form)
    try:
        # The engine compares the confirmation's fingerprint under the store
        # lock: no change can slip in between the check and the removal.
        result = viewer.tools.forget_confirmed(form.get("fingerprint", ""), **arguments)
    except ConflictError:
        body = (
            '<p class="error">The file changed since the confirmation was shown, so nothing '
            "was removed.</p>" + link(_again(arguments), "review it again")
        )
        return 409, page("Forget", body)
    details = result.details
    body = f'<p class="ok">{esc(details["headline"])}</p><pre class="removed">{esc(details["markdown"])}</pre>'
    notices = details.get("notices") or ()
    return 200, page("Forgotten", body, notices=notices)


def _again(arguments: Mapping[str, str]) -> str:
    return url("/forget", arguments)


def _removed_block(removed: Removed, title: str) -> str:
    return (
        f'<p class="warning">{esc(title)}: {esc(removed.kind)} at lines '
        f"{removed.start_line}-{removed.end_line} of {esc(removed.source)}</p>"
        f'<pre class="removed">{esc(removed.markdown)}</pre>'
    )
