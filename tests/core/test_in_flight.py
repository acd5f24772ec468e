"""``InFlight``: a value computed on its own thread while the caller works."""

from __future__ import annotations

import threading

import pytest

from memlane.core.in_flight import InFlight


def test_the_value_is_computed_on_another_thread_while_the_caller_goes_on() -> None:
    caller_went_on = threading.Event()
    computed_on: list[threading.Thread] = []

    def compute() -> str:
        # Finishes only once the caller has passed the constructor: a value
        # computed in the caller's own thread would never get here.
        assert caller_went_on.wait(60)
        computed_on.append(threading.current_thread())
        return "vector"

    pending = InFlight(compute, name="test-in-flight")
    caller_went_on.set()
    assert pending.result() == "vector"
    assert pending.done()
    assert computed_on[0] is not threading.current_thread()
    assert computed_on[0].name == "test-in-flight"
    assert pending.result() == "vector"  # asked again: the same value


def test_what_the_computation_raised_is_raised_to_the_caller() -> None:
    def compute() -> None:
        raise KeyError("no such model")

    pending = InFlight(compute)
    pending.settle()  # waits, raises nothing
    assert pending.done()
    with pytest.raises(KeyError, match="no such model"):
        pending.result()
