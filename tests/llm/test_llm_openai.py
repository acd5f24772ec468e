"""OpenAILLM against a real HTTP server on 127.0.0.1 (tests/fake_llm.py)."""

from __future__ import annotations

import threading

import httpx
import pytest

from fake_llm import FakeOpenAI, Request, closed_port_url, wait_until
from memlane.core.errors import ConfigError, LlmError
from memlane.llm.base import LLM
from memlane.llm.openai import OpenAILLM


@pytest.fixture
def server(fake_openai: FakeOpenAI) -> FakeOpenAI:
    return fake_openai  # tests/conftest.py's server, by the name these tests use


def make(server: FakeOpenAI, **kwargs: object) -> OpenAILLM:
    options: dict[str, object] = {"base_url": server.base_url, "timeout_s": 5.0}
    options.update(kwargs)
    return OpenAILLM("fake-model", **options)  # type: ignore[arg-type]


def failure(llm: OpenAILLM, **kwargs: float) -> LlmError:
    with pytest.raises(LlmError) as info:
        llm.complete("system", "prompt", **kwargs)
    error = info.value
    # Every reason fits in a one-line marker.
    assert "\n" not in error.message and "Traceback" not in error.message
    return error


def test_streamed_answer_and_request_shape(server: FakeOpenAI) -> None:
    llm = make(server, api_key="sk-test-123")
    assert isinstance(llm, LLM)
    assert llm.name == "openai/fake-model"
    assert llm.complete("be brief", "what happened?", max_tokens=123) == "- a\n- b"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert request.body == {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "what happened?"},
        ],
        "max_tokens": 123,
        "stream": True,
    }


def test_server_ignoring_stream_answers_json(server: FakeOpenAI) -> None:
    server.set(stream=False, answer="  one line  ")
    assert make(server).complete("s", "p") == "one line"
    assert "authorization" not in server.requests[0].headers


def test_sse_with_a_wrong_content_type_and_no_done(server: FakeOpenAI) -> None:
    chunk = '{"choices": [{"delta": {"content": "hi"}}]}'
    server.set(body=f"data: {chunk}\n\ndata: {chunk}", content_type="text/plain")
    assert make(server).complete("s", "p") == "hihi"


def test_reasoning_block_is_dropped(server: FakeOpenAI) -> None:
    server.set(answer="<think>\nlet me see\n</think>\n\n- the fact")
    assert make(server).complete("s", "p") == "- the fact"


def test_behaviour_changes_between_calls(server: FakeOpenAI) -> None:
    llm = make(server)
    server.push(status=500)
    assert failure(llm).message.startswith("HTTP 500")
    assert llm.complete("s", "p") == "- a\n- b"
    assert len(server.requests) == 2


@pytest.mark.parametrize("kind", ["delay", "trickle"])
def test_deadline_is_total(server: FakeOpenAI, kind: str) -> None:
    # Either answer would take far longer than the call's deadline (and the
    # instance's 30 s socket timeout never trips on a trickle: bytes keep
    # coming), so only the total deadline can end the call with this error.
    if kind == "delay":
        server.set(delay_s=30)
    else:
        server.set(answer="x" * 400, trickle_s=0.1)
    llm = make(server, timeout_s=30)
    error = failure(llm, timeout_s=0.5)
    assert error.message == "timed out after 0.5 s"
    assert len(server.requests) == 1  # the request was sent; the answer was cut off


def test_the_worker_stops_reading_after_the_deadline(server: FakeOpenAI) -> None:
    # Only this call's worker counts: other tests' abandoned calls may still be alive.
    before = set(threading.enumerate())
    workers: list[threading.Thread] = []

    def note_threads(request: Request) -> None:  # runs while the client waits for us
        workers.extend(
            t for t in threading.enumerate() if t.name == "memlane-llm-openai" and t not in before
        )

    server.responder = note_threads
    server.set(answer="x" * 400, trickle_s=0.01)
    assert failure(make(server), timeout_s=0.3).message == "timed out after 0.3 s"
    assert workers  # the worker this is about
    assert wait_until(lambda: not any(t.is_alive() for t in workers)), (
        "the request thread outlived its deadline"
    )


def test_instance_timeout_applies_by_default(server: FakeOpenAI) -> None:
    server.set(delay_s=30)
    assert failure(make(server, timeout_s=0.3)).message == "timed out after 0.3 s"
    assert len(server.requests) == 1


def test_a_slow_trickle_that_finishes_in_time_succeeds(server: FakeOpenAI) -> None:
    server.set(answer="slow but fine", trickle_s=0.005, trickle_bytes=32)
    assert make(server).complete("s", "p", timeout_s=3) == "slow but fine"


def test_401_names_the_key_setting_and_hides_the_key(server: FakeOpenAI) -> None:
    server.set(status=401, error_message="Incorrect API key provided: sk-secret-987.")
    error = failure(make(server, api_key="sk-secret-987"))
    assert error.message == (
        f"HTTP 401 from {server.base_url}/chat/completions: Incorrect API key provided: ***."
    )
    assert error.hint is not None and 'llm.api_key = "env:OPENAI_API_KEY"' in error.hint
    assert "sk-secret-987" not in str(error)


@pytest.mark.parametrize(("status", "hint_word"), [(429, "rate"), (500, "server"), (503, "server")])
def test_http_errors(server: FakeOpenAI, status: int, hint_word: str) -> None:
    server.set(status=status, error_message="nope " * 200)
    error = failure(make(server))
    assert error.message.startswith(f"HTTP {status} from {server.url}: nope nope")
    assert len(error.message) < 300, "the body excerpt is clipped"
    assert error.hint is not None and hint_word in error.hint


def test_404_suggests_the_v1_segment(server: FakeOpenAI) -> None:
    error = failure(make(server, base_url=server.base_url.removesuffix("/v1")))
    assert error.message.startswith("HTTP 404")
    assert error.hint is not None and "/v1" in error.hint


def test_error_body_that_is_not_json(server: FakeOpenAI) -> None:
    server.set(status=502, body="<html>\n<b>Bad gateway</b>\n</html>", content_type="text/html")
    assert failure(make(server)).message.endswith(": <html> <b>Bad gateway</b> </html>")


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        ("not json at all", "application/json", "malformed answer: the body is not JSON"),
        ('{"id": "x"}', "application/json", "malformed answer: no choices"),
        ('{"choices": []}', "application/json", "malformed answer: no choices"),
        ('{"choices": [{"text": "legacy"}]}', "application/json", "malformed answer: no message"),
        ("[1, 2]", "application/json", "malformed answer: the body is not an object"),
        ("data: {broken\n\n", "text/event-stream", "malformed answer: bad stream data"),
        ('data: {"object": "x"}\n\n', "text/event-stream", "malformed answer: no choices"),
    ],
)
def test_malformed_answers(server: FakeOpenAI, body: str, content_type: str, reason: str) -> None:
    server.set(body=body, content_type=content_type)
    assert failure(make(server)).message.startswith(reason)


@pytest.mark.parametrize("stream", [True, False])
def test_empty_answer(server: FakeOpenAI, stream: bool) -> None:
    server.set(answer="", stream=stream)
    assert failure(make(server)).message == "empty answer"


def test_null_content_is_an_empty_answer(server: FakeOpenAI) -> None:
    server.set(body='{"choices": [{"message": {"role": "assistant", "content": null}}]}')
    assert failure(make(server)).message == "empty answer"


def test_error_inside_the_stream(server: FakeOpenAI) -> None:
    server.set(stream_error="model crashed")
    assert failure(make(server)).message == f"error from {server.url}: model crashed"


def test_connection_refused() -> None:
    base = closed_port_url()
    error = failure(OpenAILLM("m", base_url=base, timeout_s=5))
    assert error.message.startswith(f"cannot connect to {base}/chat/completions (")
    assert error.hint is not None and "llm.base_url" in error.hint


def test_openai_itself_needs_a_key() -> None:
    with pytest.raises(ConfigError, match="API key"):
        OpenAILLM("gpt-4o-mini")
    llm = OpenAILLM("gpt-4o-mini", api_key="sk-hidden")
    assert "sk-hidden" not in repr(llm)


@pytest.mark.parametrize("base_url", ["127.0.0.1:11434/v1", "http://", "ftp://host/v1"])
def test_base_url_must_be_http(base_url: str) -> None:
    with pytest.raises(ConfigError, match="http"):
        OpenAILLM("m", base_url=base_url)


class ToServer(httpx.HTTPTransport):
    """httpx's real transport, sending every request to *server* instead
    (as a proxy would): how a test talks to "api.openai.com" on 127.0.0.1."""

    def __init__(self, server: FakeOpenAI) -> None:
        super().__init__()
        self.server = server

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.server.port)
        return super().handle_request(request)


def test_openai_itself_gets_max_completion_tokens(server: FakeOpenAI) -> None:
    # Only api.openai.com knows (and for reasoning models requires) the new name.
    llm = OpenAILLM("gpt-5-nano", api_key="sk-real", transport=ToServer(server))
    assert llm.url == "https://api.openai.com/v1/chat/completions"
    assert llm.complete("s", "p", max_tokens=321) == "- a\n- b"
    [request] = server.requests
    assert request.headers["host"] == "api.openai.com"
    assert request.body["max_completion_tokens"] == 321
    assert "max_tokens" not in request.body
    # Any other server gets the name every compatible server knows.
    make(server).complete("s", "p", max_tokens=321)
    assert server.requests[1].body["max_tokens"] == 321
    assert "max_completion_tokens" not in server.requests[1].body
