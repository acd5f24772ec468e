"""HostLLM with plain Python callables standing in for the sidecar's llm.complete."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memlane.core.errors import ConfigError, LlmError
from memlane.llm.base import LLM
from memlane.llm.host import HostLLM


class Recorder:
    """A host that answers ``result`` (or raises it) and records each request.

    With ``hold`` it answers only once that event is set: a host that
    ignores its timeout."""

    def __init__(self, result: Any = None, hold: threading.Event | None = None) -> None:
        self.result = {"text": "- a fact"} if result is None else result
        self.hold = hold
        self.calls: list[tuple[dict[str, Any], float]] = []
        self.answered = threading.Event()

    def __call__(self, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.calls.append((dict(params), timeout_s))
        if self.hold is not None:
            self.hold.wait(30)
        self.answered.set()
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result  # type: ignore[no-any-return]


def failure(llm: HostLLM, **kwargs: float) -> LlmError:
    with pytest.raises(LlmError) as info:
        llm.complete("system", "prompt", **kwargs)
    assert "\n" not in info.value.message
    return info.value


def test_good_answer_and_request() -> None:
    host = Recorder({"text": "  - a fact\n"})
    llm = HostLLM(host, "anthropic/claude-haiku-4-5", timeout_s=7)
    assert isinstance(llm, LLM)
    assert llm.name == "host/anthropic/claude-haiku-4-5"
    assert llm.complete("sys", "hi", max_tokens=50) == "- a fact"
    [(params, timeout_s)] = host.calls
    assert params == {
        "system": "sys",
        "prompt": "hi",
        "max_tokens": 50,
        "model": "anthropic/claude-haiku-4-5",
    }
    assert timeout_s == 7


def test_without_a_model_the_host_chooses() -> None:
    host = Recorder()
    llm = HostLLM(host)
    assert llm.name == "host/cheapest"
    llm.complete("s", "p", timeout_s=2)
    params, timeout_s = host.calls[0]
    assert "model" not in params
    assert timeout_s == 2


def test_a_host_that_ignores_its_timeout_is_cut_at_the_deadline() -> None:
    release = threading.Event()
    host = Recorder(hold=release)
    llm = HostLLM(host, timeout_s=0.3)
    try:
        assert failure(llm).message == "timed out after 0.3 s"
        # The call returned while the host was still working on it.
        assert len(host.calls) == 1 and host.calls[0][1] == 0.3
        assert not host.answered.is_set()
    finally:
        release.set()  # let the abandoned host call finish
    assert host.answered.wait(5)


def test_timeout_raised_by_the_host() -> None:
    error = failure(HostLLM(Recorder(TimeoutError("no reply")), timeout_s=4))
    assert error.message == "timed out after 4 s"


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (
            RuntimeError("model not found:\n  openai/nope"),
            "host error: model not found: openai/nope",
        ),
        (ConnectionError(), "host error: ConnectionError"),
        (
            ConfigError("No API key for anthropic", "run /login"),
            "host error: No API key for anthropic",
        ),
        (LlmError("rate limited"), "rate limited"),
    ],
)
def test_host_errors(raised: Exception, message: str) -> None:
    assert failure(HostLLM(Recorder(raised))).message == message


@pytest.mark.parametrize("result", [["text"], {}, {"text": 3}, {"content": "hi"}, "just text"])
def test_malformed_answers(result: Any) -> None:
    assert failure(HostLLM(Recorder(result))).message.startswith("malformed answer: ")


@pytest.mark.parametrize("text", ["", "  \n "])
def test_empty_answer(text: str) -> None:
    assert failure(HostLLM(Recorder({"text": text}))).message == "empty answer"
