"""Transcript timestamps shown in the machine's local time."""

from __future__ import annotations

from datetime import UTC, datetime


def local_time(stamp: str | float | None, fmt: str = "%H:%M") -> str | None:
    """HH:MM (or *fmt*) in the machine's local zone, from an ISO string or epoch ms."""
    moment: datetime | None = None
    if isinstance(stamp, str) and stamp:
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            # A naive stamp is already local time: nothing to convert.
            return moment.strftime(fmt)
    elif isinstance(stamp, int | float) and not isinstance(stamp, bool):
        try:
            moment = datetime.fromtimestamp(stamp / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if moment is None:
        return None
    return moment.astimezone().strftime(fmt)
