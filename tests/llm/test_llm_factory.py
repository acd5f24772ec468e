"""make_llm / describe_llm: the provider rules, the capture model, the privacy default."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from fake_llm import FakeOpenAI
from memlane.core.errors import ConfigError
from memlane.core.settings import LLM_PROVIDERS, LlmSettings
from memlane.llm.anthropic import AnthropicLLM
from memlane.llm.budget import BudgetedLLM
from memlane.llm.command import CommandLLM
from memlane.llm.defaults import CLAUDE_NOT_FOUND_HINT
from memlane.llm.factory import PROVIDER_RULES, REGISTRY, describe_llm, make_llm, resolve_llm
from memlane.llm.host import HostLLM
from memlane.llm.openai import OpenAILLM

NO_ENV: dict[str, str] = {}
KEYS = {"OPENAI_API_KEY": "sk-env-openai", "ANTHROPIC_API_KEY": "sk-env-anthropic"}


def host_call(params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    return {"text": f"model={params.get('model')}"}


def settings(**kwargs: Any) -> LlmSettings:
    return LlmSettings(**kwargs)


def provider_of(chosen: LlmSettings, **kwargs: Any) -> Any:
    """The provider make_llm built, inside the daily budget every LLM gets."""
    llm = make_llm(chosen, **kwargs)
    assert isinstance(llm, BudgetedLLM)
    return llm.inner


# ---- none, auto and the privacy default ------------------------------------


def test_none_means_no_llm_even_inside_a_host() -> None:
    assert make_llm(settings(provider="none"), host_call=host_call) is None


@pytest.mark.parametrize("capture_model", [None, "gpt-4o-mini", "anthropic/claude-haiku-4-5"])
def test_auto_outside_a_host_is_none(capture_model: str | None) -> None:
    # Even with vendor keys in the environment: nothing leaves the machine
    # unless llm.provider names a remote provider.
    chosen = settings(provider="auto", capture_model=capture_model, api_key="sk-x")
    assert make_llm(chosen, env=KEYS) is None


def test_auto_inside_a_host_uses_the_hosts_cheapest_model() -> None:
    llm = provider_of(settings(), host_call=host_call)
    assert isinstance(llm, HostLLM)
    assert llm.model is None
    assert llm.complete("s", "p") == "model=None"


def test_a_dream_inside_a_host_asks_for_the_sessions_own_model() -> None:
    """pi-memory's dream falls back to the parent model, not the cheapest."""
    asked: list[dict[str, Any]] = []

    def recording(params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        asked.append(params)
        return host_call(params, timeout_s)

    llm = provider_of(settings(), host_call=recording, purpose="dream")
    assert isinstance(llm, HostLLM) and llm.name == "host/session model"
    llm.complete("s", "p")
    assert asked[-1]["model_role"] == "session" and "model" not in asked[-1]
    named = provider_of(settings(model="fake/big"), host_call=recording, purpose="dream")
    named.complete("s", "p")
    assert asked[-1]["model"] == "fake/big" and "model_role" not in asked[-1]
    capture = provider_of(settings(), host_call=recording)
    capture.complete("s", "p")
    assert "model_role" not in asked[-1]  # distillation: the cheapest


@pytest.mark.parametrize("provider", ["auto", "host"])
@pytest.mark.parametrize(
    ("capture_model", "model"),
    [
        ("anthropic/claude-haiku-4-5", "anthropic/claude-haiku-4-5"),
        ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
        ("claude-haiku-4-5", "claude-haiku-4-5"),
        ("host/google/gemini-2.5-flash", "google/gemini-2.5-flash"),
    ],
)
def test_under_the_host_the_capture_model_goes_through_whole(
    provider: str, capture_model: str, model: str
) -> None:
    llm = provider_of(settings(provider=provider, capture_model=capture_model), host_call=host_call)
    assert isinstance(llm, HostLLM)
    assert llm.model == model
    assert llm.complete("s", "p") == f"model={model}"


def test_host_uses_llm_model_when_no_capture_model() -> None:
    llm = provider_of(settings(provider="host", model="openai/gpt-4.1-nano"), host_call=host_call)
    assert isinstance(llm, HostLLM) and llm.model == "openai/gpt-4.1-nano"


def test_host_outside_a_host_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        make_llm(settings(provider="host"))
    assert info.value.hint is not None and "pi" in info.value.hint


def test_timeout_is_passed_on() -> None:
    llm = provider_of(settings(timeout_s=12.5), host_call=host_call)
    assert isinstance(llm, HostLLM) and llm.timeout_s == 12.5


# ---- explicit providers and <provider>/<id> ---------------------------------


def test_openai_compatible_server_with_a_slashed_model_id() -> None:
    with FakeOpenAI(answer="ok") as server:
        chosen = settings(
            provider="openai",
            base_url=server.base_url,
            model="ignored",
            capture_model="meta-llama/llama-3.1-8b",
        )
        llm = provider_of(chosen, env=KEYS)
        assert isinstance(llm, OpenAILLM)
        assert llm.name == "openai/meta-llama/llama-3.1-8b"
        assert llm.complete("s", "p") == "ok"
        request = server.requests[0]
        assert request.body["model"] == "meta-llama/llama-3.1-8b"
        # OPENAI_API_KEY is OpenAI's: never sent to another server.
        assert "authorization" not in request.headers


def test_capture_model_prefix_selects_the_same_provider() -> None:
    llm = provider_of(
        settings(provider="openai", api_key="sk", capture_model="openai/gpt-4.1-nano")
    )
    assert isinstance(llm, OpenAILLM) and llm.model == "gpt-4.1-nano"


def test_capture_model_prefix_selects_another_provider_with_its_own_defaults() -> None:
    chosen = settings(
        provider="openai",
        base_url="http://127.0.0.1:11434/v1",
        api_key="ollama-key",
        model="llama3.2",
        capture_model="anthropic/claude-sonnet-4-5",
    )
    llm = provider_of(chosen, env=KEYS)
    assert isinstance(llm, AnthropicLLM)
    assert llm.model == "claude-sonnet-4-5"
    assert llm.base_url == "https://api.anthropic.com"
    # make_llm builds what resolve_llm chose, key included: the vendor's, not Ollama's
    choice = resolve_llm(chosen, host_available=False, env=KEYS)
    assert choice is not None and choice.api_key == "sk-env-anthropic"
    assert "sk-env-anthropic" not in repr(choice) and "sk-env-anthropic" not in repr(llm)


def test_capture_model_is_only_for_capture() -> None:
    chosen = settings(provider="openai", api_key="sk", model="gpt-4.1", capture_model="gpt-nano")
    capture = provider_of(chosen)
    compact = provider_of(chosen, purpose="compact")
    assert isinstance(capture, OpenAILLM) and capture.model == "gpt-nano"
    assert isinstance(compact, OpenAILLM) and compact.model == "gpt-4.1"


def test_openai_defaults() -> None:
    llm = provider_of(settings(provider="openai", api_key="sk"))
    assert isinstance(llm, OpenAILLM)
    assert llm.name == "openai/gpt-4o-mini"
    assert llm.url == "https://api.openai.com/v1/chat/completions"


def test_openai_key_from_the_environment_only_for_openai() -> None:
    llm = provider_of(settings(provider="openai"), env=KEYS)
    assert isinstance(llm, OpenAILLM) and llm.url == "https://api.openai.com/v1/chat/completions"
    choice = resolve_llm(settings(provider="openai"), host_available=False, env=KEYS)
    assert choice is not None and choice.api_key == "sk-env-openai"
    with pytest.raises(ConfigError) as info:
        make_llm(settings(provider="openai"), env=NO_ENV)
    assert info.value.hint is not None and 'llm.api_key = "env:OPENAI_API_KEY"' in info.value.hint


def test_another_openai_compatible_server_needs_a_model() -> None:
    with pytest.raises(ConfigError) as info:
        make_llm(settings(provider="openai", base_url="http://127.0.0.1:11434/v1"), env=NO_ENV)
    assert "needs a model" in info.value.message
    assert info.value.hint is not None and "llm.model" in info.value.hint
    llm = provider_of(
        settings(provider="openai", base_url="http://127.0.0.1:11434/v1", model="qwen3")
    )
    assert isinstance(llm, OpenAILLM) and llm.name == "openai/qwen3"


def test_anthropic_defaults_and_key() -> None:
    llm = provider_of(settings(provider="anthropic", api_key="sk-ant"), env=NO_ENV)
    assert isinstance(llm, AnthropicLLM) and llm.name == "anthropic/claude-haiku-4-5"
    with pytest.raises(ConfigError) as info:
        make_llm(settings(provider="anthropic"), env=NO_ENV)
    assert (
        info.value.hint is not None and 'llm.api_key = "env:ANTHROPIC_API_KEY"' in info.value.hint
    )
    # A proxy does not get the vendor key from the environment.
    with pytest.raises(ConfigError):
        make_llm(settings(provider="anthropic", base_url="https://proxy.example"), env=KEYS)


def test_command_provider() -> None:
    llm = provider_of(settings(provider="command", command="claude -p --model haiku"))
    assert isinstance(llm, CommandLLM) and llm.name == "command/claude"
    with pytest.raises(ConfigError, match=r"llm\.command"):
        make_llm(settings(provider="command"))


def test_command_selected_by_the_capture_model() -> None:
    chosen = settings(provider="anthropic", command="claude -p", capture_model="command/haiku")
    llm = provider_of(chosen, env=NO_ENV)
    assert isinstance(llm, CommandLLM) and llm.name == "command/haiku"
    assert llm.argv == ["claude", "-p"]


def test_host_selected_by_the_capture_model() -> None:
    chosen = settings(provider="openai", api_key="sk", capture_model="host/anthropic/claude-x")
    llm = provider_of(chosen, host_call=host_call)
    assert isinstance(llm, HostLLM) and llm.model == "anthropic/claude-x"
    with pytest.raises(ConfigError, match="host"):
        make_llm(chosen)


def test_explicit_provider_wins_over_the_host() -> None:
    llm = provider_of(settings(provider="openai", api_key="sk"), host_call=host_call)
    assert isinstance(llm, OpenAILLM)


def test_bad_provider_and_purpose() -> None:
    with pytest.raises(ConfigError, match=r"llm\.provider"):
        make_llm(settings(provider="gemini"))
    with pytest.raises(ValueError, match="purpose"):
        resolve_llm(settings(), host_available=True, purpose="chitchat")


# ---- describe_llm and import cost -------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "host", "text"),
    [
        ({}, True, "host (pi's cheapest model)"),
        (
            {"capture_model": "anthropic/claude-haiku-4-5"},
            True,
            "host (anthropic/claude-haiku-4-5 via pi)",
        ),
        (
            {},
            False,
            f"auto: in Claude Code none ({CLAUDE_NOT_FOUND_HINT}); in pi host (pi's cheapest "
            "model); elsewhere none (capture writes a verbatim digest)",
        ),
        ({"provider": "none"}, True, "none (capture writes a verbatim digest)"),
        (
            {"provider": "openai", "api_key": "sk"},
            False,
            "openai/gpt-4o-mini at https://api.openai.com/v1",
        ),
        (
            {
                "provider": "openai",
                "base_url": "http://u:p@127.0.0.1:11434/v1?k=1",
                "model": "qwen3",
            },
            False,
            "openai/qwen3 at http://127.0.0.1:11434/v1",
        ),
        (
            {"provider": "anthropic", "api_key": "k"},
            False,
            "anthropic/claude-haiku-4-5 at https://api.anthropic.com",
        ),
        ({"provider": "command", "command": "claude -p"}, False, "command: claude -p"),
        (
            {"provider": "host"},
            False,
            "host (not usable: llm.provider is host, but memlane is not running inside a host)",
        ),
        (
            {"provider": "anthropic"},
            False,
            "anthropic (not usable: provider anthropic needs an API key)",
        ),
    ],
)
def test_describe(kwargs: dict[str, Any], host: bool, text: str) -> None:
    assert describe_llm(settings(**kwargs), host, env=NO_ENV) == text


def test_importing_the_factory_loads_no_provider_and_no_httpx() -> None:
    code = (
        "import sys, memlane.llm, memlane.llm.factory\n"
        "loaded = [m for m in sys.modules if m == 'httpx' or m.startswith('memlane.llm.')]\n"
        "print(sorted(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['memlane.llm.defaults', 'memlane.llm.factory']"


# ---- the provider registry ------------------------------------------------


@pytest.mark.parametrize("name", REGISTRY.names)
def test_every_registered_provider_resolves(name: str) -> None:
    assert callable(REGISTRY.load(name))


def test_every_registered_provider_has_its_rules_and_a_setting_value() -> None:
    assert set(REGISTRY.names) == set(PROVIDER_RULES)
    assert set(REGISTRY.names) <= set(LLM_PROVIDERS)


def test_unknown_provider_lists_the_registered_ones() -> None:
    with pytest.raises(ConfigError) as info:
        make_llm(settings(provider="gemini"))
    assert info.value.message == "unknown llm.provider 'gemini'"
    assert info.value.hint is not None
    for name in REGISTRY.names:
        assert name in info.value.hint


def test_make_llm_builds_each_registered_provider() -> None:
    built = {
        "host": provider_of(settings(provider="host"), host_call=host_call),
        "command": provider_of(settings(provider="command", command="cat")),
        "openai": provider_of(
            settings(provider="openai", base_url="http://127.0.0.1:1/v1", model="m")
        ),
        "anthropic": provider_of(settings(provider="anthropic", api_key="sk-x")),
    }
    kinds = {"host": HostLLM, "command": CommandLLM, "openai": OpenAILLM, "anthropic": AnthropicLLM}
    assert set(built) == set(REGISTRY.names)
    for name, llm in built.items():
        assert isinstance(llm, kinds[name])
