"""The one clock (core/clock.py) and the rule that nothing else reads the wall clock."""

from __future__ import annotations

import ast
import json
import threading
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers import Cli
from memlane.core.clock import (
    NOW_ENV,
    SYSTEM_CLOCK,
    Clock,
    FixedClock,
    RunningClock,
    clock_from_env,
    from_epoch,
    local,
    utc_z,
    utc_z_millis,
)
from memlane.core.errors import ConfigError

SRC = Path(__file__).resolve().parents[2] / "src" / "memlane"
TESTS = Path(__file__).resolve().parents[1]

# Calls that read the wall clock. ``time.monotonic``/``perf_counter`` measure
# durations and are fine anywhere; these decide dates and are not.
WALL_CLOCK_CALLS = {
    ("datetime", "now"),
    ("datetime", "today"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "gmtime"),
    ("time", "localtime"),
    ("time", "ctime"),
    ("time", "asctime"),
}


def wall_clock_reads(path: Path) -> list[str]:
    """``file:line call`` for every wall-clock read in *path*.

    ``time.strftime(fmt)`` and ``time.gmtime()``/``localtime()`` with no
    argument read the clock; with a timestamp argument they only format it.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
        call = (name, node.func.attr)
        formats_a_given_time = call in {("time", "gmtime"), ("time", "localtime")} and node.args
        reads = call in WALL_CLOCK_CALLS and not formats_a_given_time
        if call == ("time", "strftime") and len(node.args) < 2:
            reads = True
        if reads:
            found.append(f"{path}:{node.lineno} {name}.{node.func.attr}()")
    return found


def test_only_core_clock_reads_the_wall_clock_in_the_package() -> None:
    clock_module = SRC / "core" / "clock.py"
    reads = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path != clock_module
        for hit in wall_clock_reads(path)
    ]
    assert reads == [], "read the time from a Clock (memlane.core.clock), not the system"


def test_no_test_reads_the_wall_clock() -> None:
    reads = [hit for path in sorted(TESTS.rglob("*.py")) for hit in wall_clock_reads(path)]
    assert reads == [], "inject a FixedClock (tests/helpers.py) instead of reading today"


def test_the_scanner_sees_each_kind_of_read(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time\nfrom datetime import date, datetime\n"
        "a = datetime.now()\nb = date.today()\nc = time.time()\n"
        "d = time.strftime('%H')\ne = time.gmtime()\n"
        "f = time.gmtime(0)\ng = time.strftime('%H', time.gmtime(0))\n"
        "h = time.monotonic()\n"
    )
    lines = [int(hit.split(":")[1].split()[0]) for hit in wall_clock_reads(sample)]
    assert lines == [3, 4, 5, 6, 7]


def test_the_system_clock_is_local_and_aware() -> None:
    now = SYSTEM_CLOCK.now()
    assert now.tzinfo is not None and now.utcoffset() == now.astimezone().utcoffset()
    assert SYSTEM_CLOCK.utc().tzinfo == UTC
    assert SYSTEM_CLOCK.today() in {SYSTEM_CLOCK.now().date(), now.date()}
    assert isinstance(SYSTEM_CLOCK, Clock)


def test_a_fixed_clock_stands_still_until_moved() -> None:
    clock = FixedClock(datetime(2028, 2, 29, 23, 59, 30))
    assert clock.now() == datetime(2028, 2, 29, 23, 59, 30, tzinfo=UTC)  # naive means UTC
    assert clock.now() == clock.now() and clock.today() == date(2028, 2, 29)
    assert clock.advance(seconds=45) == datetime(2028, 3, 1, 0, 0, 15, tzinfo=UTC)
    assert clock.today() == date(2028, 3, 1)
    clock.advance(timedelta(days=-1))
    assert clock.today() == date(2028, 2, 29)
    clock.set(datetime(2027, 1, 1, 0, 0, 30, tzinfo=UTC))
    assert clock.timestamp() == datetime(2027, 1, 1, 0, 0, 30, tzinfo=UTC).timestamp()
    assert "2027-01-01" in repr(clock)


def test_a_fixed_clock_keeps_its_zone_for_local_dates() -> None:
    tokyo = timezone(timedelta(hours=9))
    clock = FixedClock(datetime(2026, 12, 31, 23, 59, 50, tzinfo=UTC))
    assert clock.today() == date(2026, 12, 31)
    clock.set(datetime(2027, 1, 1, 8, 59, 50, tzinfo=tokyo))  # the same instant, in Tokyo
    assert clock.today() == date(2027, 1, 1)
    assert clock.utc() == datetime(2026, 12, 31, 23, 59, 50, tzinfo=UTC)


def test_a_fixed_clock_is_safe_to_move_while_read() -> None:
    clock = FixedClock(datetime(2026, 1, 1))
    seen: list[datetime] = []

    def read() -> None:
        for _ in range(2000):
            seen.append(clock.now())

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(2000):
        clock.advance(seconds=1)
    reader.join()
    assert seen == sorted(seen) and clock.now() == datetime(2026, 1, 1, 0, 33, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "z", "millis"),
    [
        (
            datetime(2026, 11, 30, 16, 5, 7, 123456, tzinfo=UTC),
            "2026-11-30T16:05:07Z",
            "2026-11-30T16:05:07.123Z",
        ),
        (
            datetime(2027, 1, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=2))),
            "2026-12-31T23:00:00Z",
            "2026-12-31T23:00:00.000Z",
        ),
    ],
)
def test_utc_formats(moment: datetime, z: str, millis: str) -> None:
    assert utc_z(moment) == z and utc_z_millis(moment) == millis


def test_local_keeps_an_aware_offset_and_reads_a_naive_time_as_the_machines() -> None:
    aware = datetime(2026, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=-7)))
    assert local(aware) is aware
    naive = datetime(2026, 5, 1, 12, 0)
    assert local(naive).replace(tzinfo=None) == naive and local(naive).tzinfo is not None
    assert from_epoch(0) == datetime(1970, 1, 1, tzinfo=UTC)


def test_memlane_now_starts_a_running_clock_and_is_checked() -> None:
    assert clock_from_env({}) is SYSTEM_CLOCK
    assert clock_from_env({NOW_ENV: "  "}) is SYSTEM_CLOCK
    clock = clock_from_env({NOW_ENV: "2027-01-01T00:00:30Z"})
    assert isinstance(clock, RunningClock)
    first = clock.now()
    assert first >= datetime(2027, 1, 1, 0, 0, 30, tzinfo=UTC)
    assert first - datetime(2027, 1, 1, 0, 0, 30, tzinfo=UTC) < timedelta(hours=1)
    assert clock.now() >= first  # it runs on
    assert clock.departure() is not None and NOW_ENV in clock.departure()
    assert SYSTEM_CLOCK.departure() is None
    with pytest.raises(ConfigError, match="is not an ISO 8601 time") as caught:
        clock_from_env({NOW_ENV: "next tuesday"})
    assert NOW_ENV in (caught.value.hint or "")


def test_the_command_runs_on_memlane_now_and_the_doctor_says_so(project: Path) -> None:
    cli = Cli(None, cwd=project)  # no clock handed in: the command picks its own
    env = {NOW_ENV: "2027-01-01T00:00:30Z", "MEMLANE_EMBEDDING_PROVIDER": "none"}
    wrote = cli("write", "the new year's first entry", env=env)
    assert wrote.returncode == 0, wrote.stderr
    daily = project / ".memsearch" / "memory" / "2027-01-01.md"
    assert daily.read_text(encoding="utf-8").startswith("# 2027-01-01\n\n## Session 00:00\n")
    status = cli("status", "--json", "--no-probe", env=env)
    assert status.returncode == 0, status.stderr
    notices = json.loads(status.stdout)["notices"]
    assert any(n.startswith(f"clock: {NOW_ENV} started this process's clock") for n in notices)
    bad = cli("write", "x", env={**env, NOW_ENV: "soon"})
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"memlane: error: {NOW_ENV}='soon' is not an ISO 8601 time")
