"""AnthropicLLM against a real HTTP server on 127.0.0.1 (tests/fake_llm.py)."""

from __future__ import annotations

import pytest

from fake_llm import FakeAnthropic, closed_port_url
from memlane.core.errors import ConfigError, LlmError
from memlane.llm.anthropic import AnthropicLLM


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> FakeAnthropic:
    return fake_anthropic  # tests/conftest.py's server, by the name these tests use


def make(server: FakeAnthropic, **kwargs: object) -> AnthropicLLM:
    options: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": "sk-ant-test",
        "timeout_s": 5.0,
    }
    options.update(kwargs)
    return AnthropicLLM("claude-fake", **options)  # type: ignore[arg-type]


def failure(llm: AnthropicLLM, **kwargs: float) -> LlmError:
    with pytest.raises(LlmError) as info:
        llm.complete("system", "prompt", **kwargs)
    assert "\n" not in info.value.message
    return info.value


def test_streamed_answer_and_request_shape(server: FakeAnthropic) -> None:
    llm = make(server)
    assert llm.name == "anthropic/claude-fake"
    assert llm.complete("be brief", "what happened?", max_tokens=99) == "- a\n- b"
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "claude-fake",
        "max_tokens": 99,
        "system": "be brief",
        "messages": [{"role": "user", "content": "what happened?"}],
        "stream": True,
    }


def test_json_answer_joins_text_blocks(server: FakeAnthropic) -> None:
    server.set(
        body='{"type": "message", "content": [{"type": "thinking", "thinking": "hm"},'
        '{"type": "text", "text": "one "}, {"type": "text", "text": "two"}]}'
    )
    assert make(server).complete("s", "p") == "one two"


def test_plain_json_when_stream_is_ignored(server: FakeAnthropic) -> None:
    server.set(stream=False, answer="plain")
    assert make(server).complete("s", "p") == "plain"


def test_base_url_with_v1_is_accepted(server: FakeAnthropic) -> None:
    assert make(server, base_url=server.base_url + "/v1/").complete("s", "p") == "- a\n- b"


def test_empty_system_is_left_out(server: FakeAnthropic) -> None:
    make(server).complete("", "p")
    assert "system" not in server.requests[0].body


def test_deadline(server: FakeAnthropic) -> None:
    # A trickle far slower than the deadline (and never idle long enough for
    # the 5 s socket timeout): only the call's total deadline can end it.
    server.set(answer="y" * 300, trickle_s=0.1)
    assert failure(make(server), timeout_s=0.4).message == "timed out after 0.4 s"
    assert len(server.requests) == 1  # the request went out; its answer was cut off


def test_401_hint(server: FakeAnthropic) -> None:
    server.set(status=401, error_message="invalid x-api-key")
    error = failure(make(server))
    assert error.message == f"HTTP 401 from {server.url}: invalid x-api-key"
    assert error.hint is not None and "env:ANTHROPIC_API_KEY" in error.hint


@pytest.mark.parametrize("status", [429, 500, 529])
def test_http_errors(server: FakeAnthropic, status: int) -> None:
    server.set(status=status)
    assert failure(make(server)).message.startswith(f"HTTP {status} from {server.url}")


def test_error_event_in_the_stream(server: FakeAnthropic) -> None:
    server.set(stream_error="Overloaded")
    error = failure(make(server))
    assert error.message == f"error from {server.url}: overloaded_error: Overloaded"


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        ("{", "application/json", "malformed answer: the body is not JSON"),
        ('{"type": "message"}', "application/json", "malformed answer: no content"),
        ("event: x\ndata: nope\n\n", "text/event-stream", "malformed answer: bad stream data"),
    ],
)
def test_malformed(server: FakeAnthropic, body: str, content_type: str, reason: str) -> None:
    server.set(body=body, content_type=content_type)
    assert failure(make(server)).message.startswith(reason)


@pytest.mark.parametrize("stream", [True, False])
def test_empty_answer(server: FakeAnthropic, stream: bool) -> None:
    server.set(answer="", stream=stream)
    assert failure(make(server)).message == "empty answer"


def test_connection_refused() -> None:
    base = closed_port_url("")
    error = failure(AnthropicLLM(api_key="k", base_url=base, timeout_s=5))
    assert error.message.startswith(f"cannot connect to {base}/v1/messages")


def test_missing_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        AnthropicLLM(api_key=None)
    assert (
        info.value.hint is not None and 'llm.api_key = "env:ANTHROPIC_API_KEY"' in info.value.hint
    )
