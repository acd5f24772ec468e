"""Date bounds: a search's ``after`` and ``before``, read in one place.

Every surface that filters by date (``memory_search`` of every kind, the
CLI's ``search --after/--before`` and ``sessions search``, the web viewer)
hands the user's text to ``parse_bound`` and gets one moment back, already
in the two forms the indexes compare with:

* the notes' labels are local times as the daily files name them:
  ``YYYY-MM-DD`` (a day) and ``YYYY-MM-DDTHH:MM`` (an entry's heading);
* the sessions' timestamps are UTC with milliseconds, ``...SS.mmmZ``.

Both are compared as strings, so each form is the bound rounded *up* to the
labels' precision: a label compares at or after the key exactly when the
moment it starts at is at or after the bound (tests/core/test_bounds.py
checks that with hypothesis). ``after`` is inclusive, ``before`` exclusive.

Accepted (ISO 8601, as ``datetime.fromisoformat`` reads it):

* ``2026-12-03``: that local day; ``after`` starts at its local midnight,
  ``before`` ends there (the day itself is not included);
* ``2026-12-03T14:12`` or ``2026-12-03T14:12:30``: local time;
* ``2026-12-03T14:12:30Z`` or ``...+01:00``: that moment, in any zone.

"Local" is the calendar of the clock the memory runs on (``Clock.zone``):
the machine's zone, or a fixed clock's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, tzinfo

from memlane.core.errors import MemlaneError

#: What a bound may look like, for tool schemas, help texts and errors.
BOUND_FORMS = (
    "an ISO 8601 date or time: 2026-12-03 (that local day), 2026-12-03T14:12 "
    "(local time), 2026-12-03T14:12:30Z or 2026-12-03T14:12:30+01:00"
)
#: The longest text read as a bound (anything longer is not one).
MAX_BOUND_CHARS = 64


@dataclass(frozen=True)
class Bound:
    """One ``after`` or ``before`` bound, converted once."""

    name: str  # "after" | "before"
    text: str  # as it was given
    moment: datetime  # aware
    note_key: str  # local "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM", rounded up to the minute
    utc_key: str  # UTC "YYYY-MM-DDTHH:MM:SS.mmmZ", rounded up to the millisecond


def parse_bound(name: str, text: str, zone: tzinfo | None = None) -> Bound:
    """*text* as a bound; a time without a zone is local time in *zone* (None:
    the machine's). Raises a MemlaneError saying what is accepted otherwise."""
    raw = text.strip()
    try:
        if not raw or len(raw) > MAX_BOUND_CHARS:
            raise ValueError(raw)
        moment = _aware(datetime.fromisoformat(raw), zone)
        return Bound(name, raw, moment, _note_key(moment, zone), _utc_key(moment))
    except (ValueError, OverflowError):
        shown = text if len(text) <= MAX_BOUND_CHARS else text[:MAX_BOUND_CHARS] + "…"
        raise MemlaneError(
            f"{name} {shown!r} is not a date or time", f"use {BOUND_FORMS}"
        ) from None


def parse_range(
    after: str | None, before: str | None, zone: tzinfo | None = None
) -> tuple[Bound | None, Bound | None]:
    """Both bounds (None where not given or blank), and an error when
    together they leave no moment at all."""
    low = parse_bound("after", after, zone) if after and after.strip() else None
    high = parse_bound("before", before, zone) if before and before.strip() else None
    if low is not None and high is not None and low.moment >= high.moment:
        raise MemlaneError(
            f"after {low.text!r} is not earlier than before {high.text!r}: nothing can match",
            "give an after that comes before the before, or leave one of them out",
        )
    return low, high


def _aware(moment: datetime, zone: tzinfo | None) -> datetime:
    if moment.tzinfo is not None:
        return moment
    if zone is None:
        return moment.astimezone()  # the machine's zone, with that day's offset
    return moment.replace(tzinfo=zone)


def _local(moment: datetime, zone: tzinfo | None) -> datetime:
    return moment.astimezone() if zone is None else moment.astimezone(zone)


def _note_key(moment: datetime, zone: tzinfo | None) -> str:
    here = _local(moment, zone).replace(tzinfo=None)
    up = _ceil(here, timedelta(minutes=1))
    if up.time() == time(0):
        return up.date().isoformat()  # a day's label sorts before every time of it
    return up.isoformat(timespec="minutes")


def _utc_key(moment: datetime) -> str:
    up = _ceil(moment.astimezone(UTC).replace(tzinfo=None), timedelta(milliseconds=1))
    return up.isoformat(timespec="milliseconds") + "Z"


def _ceil(moment: datetime, step: timedelta) -> datetime:
    """*moment* rounded up to a whole *step* (of a minute or a millisecond)."""
    since = moment - datetime.combine(moment.date(), time(0))
    rest = since % step
    return moment if not rest else moment + (step - rest)
