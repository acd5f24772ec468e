"""core/bounds.py: a search's after/before, read once, compared right by both indexes."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.core.bounds import BOUND_FORMS, parse_bound, parse_range
from memlane.core.clock import SYSTEM_CLOCK, FixedClock, RunningClock
from memlane.core.errors import MemlaneError
from memlane.engine.sessions.docs import utc_iso
from memlane.engine.shared.tool_catalog import MEMORY_SEARCH_SPEC

# Fixed offsets: a local calendar that never goes back (summer time's extra
# hour would make two labels of one day name the same minute).
zones = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
naive_moments = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1))
moments = st.builds(lambda naive, zone: naive.replace(tzinfo=zone), naive_moments, zones)


@st.composite
def note_labels(draw: st.DrawFn) -> str:
    """A notes index date: a day (a daily file's title, a whole day) or an
    entry's ``YYYY-MM-DDTHH:MM``."""
    day = draw(st.dates(min_value=date(1990, 1, 2), max_value=date(2099, 12, 30)))
    if draw(st.booleans()):
        return day.isoformat()
    minute = draw(st.integers(min_value=0, max_value=24 * 60 - 1))
    return f"{day.isoformat()}T{minute // 60:02d}:{minute % 60:02d}"


def label_start(label: str, zone: tzinfo) -> datetime:
    """The moment a note label starts at, in local time *zone*."""
    return datetime.fromisoformat(label).replace(tzinfo=zone)


@given(label=note_labels(), moment=moments, zone=zones)
def test_a_note_compares_with_the_key_as_its_start_compares_with_the_bound(
    label: str, moment: datetime, zone: tzinfo
) -> None:
    bound = parse_bound("after", moment.isoformat(), zone)
    assert (label >= bound.note_key) == (label_start(label, zone) >= moment)
    # ... so `before` (label < key) is the complement: exclusive.
    assert (label < bound.note_key) == (label_start(label, zone) < moment)


@given(stamp=moments, moment=moments)
def test_a_message_compares_with_the_key_as_its_timestamp_with_the_bound(
    stamp: datetime, moment: datetime
) -> None:
    stored = utc_iso(stamp.isoformat())  # how the sessions index keeps a timestamp
    assert stored is not None
    whole_ms = datetime.fromisoformat(stored.replace("Z", "+00:00"))
    bound = parse_bound("before", moment.isoformat())
    assert (stored >= bound.utc_key) == (whole_ms >= moment)


@given(moment=moments, zone=zones)
def test_a_time_with_a_zone_is_that_moment_whatever_the_local_zone(
    moment: datetime, zone: tzinfo
) -> None:
    assert parse_bound("after", moment.isoformat(), zone).moment == moment
    z = moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"
    assert parse_bound("after", z, zone).moment == moment


@given(naive=naive_moments, zone=zones)
def test_a_time_without_a_zone_is_local_time(naive: datetime, zone: tzinfo) -> None:
    bound = parse_bound("after", naive.isoformat(), zone)
    assert bound.moment == naive.replace(tzinfo=zone)


@given(day=st.dates(min_value=date(1990, 1, 2), max_value=date(2099, 12, 30)), zone=zones)
def test_a_bare_date_is_that_local_days_midnight(day: date, zone: tzinfo) -> None:
    midnight = datetime.combine(day, time(0), tzinfo=zone)
    after, before = (
        parse_bound("after", day.isoformat(), zone),
        parse_bound("before", day.isoformat(), zone),
    )
    assert after.moment == before.moment == midnight
    # The day's own label and every entry of it are in `after`, none in `before`.
    assert after.note_key == day.isoformat()
    assert after.utc_key == midnight.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@given(text=st.text(max_size=80))
def test_any_text_is_a_bound_or_a_clear_error(text: str) -> None:
    try:
        bound = parse_bound("after", text, UTC)
    except MemlaneError as exc:
        assert "is not a date or time" in exc.message
        assert exc.hint and "ISO 8601" in exc.hint
    else:
        assert bound.moment.tzinfo is not None


def test_the_issue_s_examples() -> None:
    bound = parse_bound("after", "2026-12-03T14:12:30Z", UTC)
    assert bound.moment == datetime(2026, 12, 3, 14, 12, 30, tzinfo=UTC)
    assert (bound.note_key, bound.utc_key) == ("2026-12-03T14:13", "2026-12-03T14:12:30.000Z")
    berlin = timezone(timedelta(hours=1))
    local = parse_bound("before", "2026-11-20T09:00:00", berlin)
    assert local.utc_key == "2026-11-20T08:00:00.000Z"
    assert local.note_key == "2026-11-20T09:00"
    assert parse_bound("after", "2026-12-03T14:12:30+01:00", UTC).note_key == "2026-12-03T13:13"


@pytest.mark.parametrize(
    "text", ["yesterday", "2026-13-01", "2026-12-03T25:00", "03/12/2026", "", "   "]
)
def test_bad_values_say_what_is_accepted(text: str) -> None:
    with pytest.raises(MemlaneError) as refused:
        parse_bound("before", text)
    assert refused.value.hint == f"use {BOUND_FORMS}"


def test_a_range_that_holds_nothing_is_an_error() -> None:
    assert parse_range(None, "  ") == (None, None)
    with pytest.raises(MemlaneError, match="is not earlier than before"):
        parse_range("2026-12-04", "2026-12-03")
    with pytest.raises(MemlaneError, match="is not earlier than before"):
        parse_range("2026-12-03T14:00:00Z", "2026-12-03T15:00:00+01:00")
    low, high = parse_range("2026-12-03", "2026-12-03T14:12:30Z", UTC)
    assert low is not None and high is not None and low.moment < high.moment


def test_every_form_the_search_tool_names_is_accepted() -> None:
    for param in MEMORY_SEARCH_SPEC.params:
        if param.name in ("after", "before"):
            shown = re.findall(r"\d{4}-\d{2}-\d{2}[0-9T:+\-Z]*", param.description)
            assert len(shown) >= 4
            for text in shown:
                parse_bound(param.name, text)
    for text in re.findall(r"\d{4}-\d{2}-\d{2}[0-9T:+\-Z]*", BOUND_FORMS):
        parse_bound("after", text)


def test_each_clock_names_its_calendar() -> None:
    berlin = timezone(timedelta(hours=1))
    assert SYSTEM_CLOCK.zone() is None  # the machine's, offset by date
    assert FixedClock(datetime(2026, 12, 3, 10, 0, tzinfo=berlin)).zone() == berlin
    assert RunningClock(datetime(2026, 12, 3, 10, 0, tzinfo=berlin)).zone() == berlin
