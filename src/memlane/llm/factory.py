"""Which LLM answers, from ``LlmSettings``: ``make_llm`` builds it,
``describe_llm`` says it in one line for ``memlane status``.

Rules, in order (privacy first: nothing leaves the machine unless the user
configured a remote provider or the host already talks to one):

1. ``provider = "none"``: no LLM; capture writes a verbatim digest.
2. ``provider = "auto"``: the host's model when the host can answer
   ``llm.complete`` (``host_call`` given); inside Claude Code (``host`` is
   ``"claude-code"``, which answers no ``llm.complete``), the user's own
   ``claude -p --model haiku`` when ``claude`` is on PATH (llm/claude_code.py:
   that Claude Code already talks to Anthropic with the user's credentials,
   so nothing new leaves the machine; ``llm.model`` or a ``capture.model``
   without a provider prefix, ``anthropic/`` aside, picks its ``--model``);
   else no LLM. ``capture.model`` never turns ``auto`` into a remote provider
   outside a host.
3. Under the host (``host``, or ``auto`` inside one), ``capture.model`` goes
   to the host whole (a ``host/`` prefix is dropped): pi resolves
   ``<provider>/<id>`` against its own registry and credentials. Without it
   the host gets ``llm.model`` if set, else no model and picks its session
   provider's cheapest (for a dream, its session's own model: pi-memory's
   dream falls back to the parent model).
4. Otherwise ``capture.model`` is ``<id>`` or ``<provider>/<id>``: a prefix
   naming a memlane provider (openai, anthropic, command, host) selects that
   provider; any other string, slashes included (OpenRouter's
   ``meta-llama/llama-3.1-8b``), is a model id for ``llm.provider``.
5. Then ``llm.model``, then the provider's cheap default (``gpt-4o-mini``
   only on api.openai.com, ``claude-haiku-4-5``); another OpenAI-compatible
   server without a model is a ``ConfigError``.

``llm.base_url`` and ``llm.api_key`` belong to ``llm.provider``: when
``capture.model`` selects a different provider, that provider gets its own
defaults, so an Ollama URL or a local key is never sent to another service.
When no key is configured, provider openai on api.openai.com and provider
anthropic on api.anthropic.com read ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``
from the environment, as the vendors' own clients do; this only happens
once the user selected that provider, and never for another host, which
must not receive a vendor's key.

Every LLM ``make_llm`` builds is wrapped in the daily budget
(llm/budget.py): ``llm.daily_calls`` and ``llm.daily_tokens``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from memlane.core.errors import ConfigError
from memlane.core.providers import Provider, ProviderRegistry
from memlane.core.settings import LLM_PROVIDERS, LlmSettings
from memlane.llm import defaults as D

if TYPE_CHECKING:
    from memlane.core.clock import Clock
    from memlane.llm.base import LLM

#: The host adapter's ``llm.complete`` sender (host.py).
HostCall = Callable[[dict[str, Any], float], dict[str, Any]]

_REINSTALL = 'reinstall memlane, or set llm.provider = "none"'

#: The providers an LLM is built from, one module each, imported when chosen.
REGISTRY = ProviderRegistry(
    "llm.provider",
    (
        Provider("openai", "memlane.llm.openai", "from_choice", f"it needs httpx; {_REINSTALL}"),
        Provider(
            "anthropic", "memlane.llm.anthropic", "from_choice", f"it needs httpx; {_REINSTALL}"
        ),
        Provider("command", "memlane.llm.command", "from_choice", _REINSTALL),
        Provider("host", "memlane.llm.host", "from_choice", _REINSTALL),
    ),
    ConfigError,
)
#: The Claude Code default (rule 2): provider command, memlane's own ``claude -p``.
CLAUDE_CODE = ProviderRegistry(
    "llm.provider",
    (Provider("command", "memlane.llm.claude_code", "from_choice", _REINSTALL),),
    ConfigError,
)
#: Providers a ``capture.model`` prefix can select.
SELECTABLE = REGISTRY.names
#: What an LLM is asked to do; only capture has its own model setting so far.
PURPOSES = ("capture", "compact", "dream", "surfacing")

HOST_ONLY_HINT = (
    "provider host only works inside a host that answers llm.complete, such as pi; "
    'outside one, set llm.provider to "openai", "anthropic", "command" or "none"'
)


@dataclass(frozen=True)
class LlmChoice:
    """The resolved provider and its parameters; ``make_llm`` builds it as is."""

    provider: str
    model: str | None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in a repr or a log
    command: str | None = None
    timeout_s: float = 30.0
    # The Claude Code default: memlane's own command line, run with the
    # flags that keep the child from being a session (llm/claude_code.py).
    claude_code: bool = False
    # Provider host without a model: the host's session model rather than its
    # cheapest (a dream, as pi-memory's falls back to the parent model).
    session_model: bool = False


@dataclass(frozen=True)
class _Wanted:
    """What the settings ask of one provider, before its own rules apply."""

    settings: LlmSettings
    capture_model: str  # the capture.model override as written ("" when none)
    model: str | None
    base_url: str | None  # only when the provider is llm.provider's own
    api_key: str | None = field(repr=False)
    host_available: bool
    environ: Mapping[str, str] = field(repr=False)


def resolve_llm(
    settings: LlmSettings,
    *,
    host_available: bool,
    purpose: str = "capture",
    env: Mapping[str, str] | None = None,
    host: str | None = None,
) -> LlmChoice | None:
    """Apply the module's rules without building anything; ``ConfigError`` if unusable.

    ``host`` is the host's name (``Session.host``); only ``"claude-code"``
    changes anything (rule 2)."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown LLM purpose {purpose!r}; expected one of {PURPOSES}")
    configured = settings.provider
    if configured not in LLM_PROVIDERS:
        raise ConfigError(
            f"unknown llm.provider {configured!r}", f"choose one of {', '.join(LLM_PROVIDERS)}"
        )
    if configured == "none":
        return None
    for key, value in (
        ("daily_calls", settings.daily_calls),
        ("daily_tokens", settings.daily_tokens),
    ):
        if value < 0:
            raise ConfigError(
                f"llm.{key} must be 0 (unlimited) or a positive number, got {value}",
                f"`memlane config set llm.{key} 0` turns the limit off",
            )
    wanted = (settings.capture_model or "").strip() if purpose == "capture" else ""
    if configured == "auto" and not host_available:
        if host == D.CLAUDE_CODE_HOST:
            return _claude_code_default(settings, wanted, os.environ if env is None else env)
        return None

    if configured in ("auto", "host"):
        if not host_available:
            raise ConfigError(
                "llm.provider is host, but memlane is not running inside a host", HOST_ONLY_HINT
            )
        model = wanted.removeprefix("host/") or settings.model
        return LlmChoice(
            "host",
            model or None,
            timeout_s=settings.timeout_s,
            session_model=purpose == "dream" and not model,
        )

    provider, model = configured, wanted or None
    prefix, slash, rest = wanted.partition("/")
    if slash and prefix in SELECTABLE:
        provider, model = prefix, rest.strip() or None
    owns = provider == configured
    if model is None and owns:
        model = settings.model
    request = _Wanted(
        settings=settings,
        capture_model=wanted,
        model=model,
        base_url=settings.base_url if owns else None,
        api_key=settings.api_key if owns else None,
        host_available=host_available,
        environ=os.environ if env is None else env,
    )
    return PROVIDER_RULES[provider](request)


def _claude_code_default(
    settings: LlmSettings, wanted: str, env: Mapping[str, str]
) -> LlmChoice | None:
    program = D.find_claude(env)
    if program is None:
        return None
    model = D.CLAUDE_CODE_MODEL
    for setting in (wanted, settings.model or ""):
        candidate = setting.strip().removeprefix("anthropic/")
        if candidate and "/" not in candidate:  # pi's <provider>/<id> models are not Claude's
            model = candidate
            break
    return LlmChoice(
        "command",
        model,
        command=D.claude_command(program, model),
        timeout_s=settings.timeout_s,
        claude_code=True,
    )


def _resolve_host(want: _Wanted) -> LlmChoice:
    if not want.host_available:
        raise ConfigError(
            f"capture.model {want.capture_model!r} selects provider host, but memlane is not "
            "running inside a host",
            HOST_ONLY_HINT,
        )
    return LlmChoice("host", want.model, timeout_s=want.settings.timeout_s)


def _resolve_command(want: _Wanted) -> LlmChoice:
    command = want.settings.command
    if not command:
        raise ConfigError(
            "provider command needs llm.command", 'e.g. llm.command = "claude -p --model haiku"'
        )
    return LlmChoice("command", want.model, command=command, timeout_s=want.settings.timeout_s)


def _resolve_openai(want: _Wanted) -> LlmChoice:
    url = want.base_url or D.OPENAI_BASE_URL
    api_key, model = want.api_key, want.model
    if not api_key and D.is_openai_url(url):
        api_key = want.environ.get(D.OPENAI_KEY_ENV) or None
        if not api_key:
            raise ConfigError(
                "provider openai needs an API key for api.openai.com",
                f'set llm.api_key = "env:{D.OPENAI_KEY_ENV}" and export {D.OPENAI_KEY_ENV}, '
                "or set llm.base_url to a local server such as http://127.0.0.1:11434/v1",
            )
    if model is None:
        if not D.is_openai_url(url):
            raise ConfigError(
                f"provider openai at {url} needs a model",
                "set llm.model (or capture.model) to a model the server has, "
                'e.g. llm.model = "llama3.2" for Ollama',
            )
        model = D.OPENAI_DEFAULT_MODEL
    return LlmChoice(
        "openai", model, base_url=url, api_key=api_key, timeout_s=want.settings.timeout_s
    )


def _resolve_anthropic(want: _Wanted) -> LlmChoice:
    url = want.base_url or D.ANTHROPIC_BASE_URL
    api_key = want.api_key
    if not api_key and D.is_anthropic_url(url):
        api_key = want.environ.get(D.ANTHROPIC_KEY_ENV) or None
    if not api_key:
        raise ConfigError(
            "provider anthropic needs an API key",
            f'set llm.api_key = "env:{D.ANTHROPIC_KEY_ENV}" and export {D.ANTHROPIC_KEY_ENV}',
        )
    return LlmChoice(
        "anthropic",
        want.model or D.ANTHROPIC_DEFAULT_MODEL,
        base_url=url,
        api_key=api_key,
        timeout_s=want.settings.timeout_s,
    )


#: Each provider's own rules (keys, endpoints, default models), by name.
PROVIDER_RULES: dict[str, Callable[[_Wanted], LlmChoice]] = {
    "host": _resolve_host,
    "command": _resolve_command,
    "openai": _resolve_openai,
    "anthropic": _resolve_anthropic,
}


def make_llm(
    settings: LlmSettings,
    *,
    host_call: HostCall | None = None,
    purpose: str = "capture",
    env: Mapping[str, str] | None = None,
    host: str | None = None,
    clock: Clock | None = None,
) -> LLM | None:
    """The LLM for ``purpose``, or None (capture then writes a verbatim digest).

    ``host_call`` is the host adapter's ``llm.complete`` sender (host.py);
    ``host`` the host's name (rule 2); ``env`` replaces ``os.environ`` for
    the vendor key fallback and PATH (tests); ``clock`` dates the daily
    budget (the system clock by default). The LLM is a ``BudgetedLLM``
    around the provider (``.inner``). Raises ``ConfigError`` for a
    configuration that cannot work.
    """
    from memlane.core.clock import SYSTEM_CLOCK
    from memlane.llm.budget import BudgetedLLM, Ledger, Limits

    choice = resolve_llm(
        settings, host_available=host_call is not None, purpose=purpose, env=env, host=host
    )
    if choice is None:
        return None
    registry = CLAUDE_CODE if choice.claude_code else REGISTRY
    build = cast(Callable[[LlmChoice, HostCall | None], "LLM"], registry.load(choice.provider))
    limits = Limits(calls=settings.daily_calls, tokens=settings.daily_tokens)
    return BudgetedLLM(build(choice, host_call), limits, Ledger(clock=clock or SYSTEM_CLOCK))


def describe_llm(
    settings: LlmSettings,
    host_available: bool,
    *,
    purpose: str = "capture",
    env: Mapping[str, str] | None = None,
    host: str | None = None,
) -> str:
    """One line for ``memlane status``; never raises for a bad configuration."""
    from memlane.llm._text import display_url

    try:
        choice = resolve_llm(
            settings, host_available=host_available, purpose=purpose, env=env, host=host
        )
    except ConfigError as exc:
        return f"{settings.provider} (not usable: {exc.message})"
    if choice is None:
        if settings.provider == "auto" and host == D.CLAUDE_CODE_HOST:
            return f"none ({D.CLAUDE_NOT_FOUND_HINT})"
        if settings.provider == "auto" and host is None:
            # Asked outside any session (`memlane status`, a tool call without one):
            # what each host's sessions use, as the engine serving them resolves it.
            in_claude = describe_llm(
                settings, False, purpose=purpose, env=env, host=D.CLAUDE_CODE_HOST
            )
            in_pi = describe_llm(settings, True, purpose=purpose, env=env)
            return (
                f"auto: in Claude Code {in_claude}; in pi {in_pi}; "
                "elsewhere none (capture writes a verbatim digest)"
            )
        return "none (capture writes a verbatim digest)"
    if choice.provider == "host":
        return f"host ({choice.model} via pi)" if choice.model else "host (pi's cheapest model)"
    if choice.claude_code:
        return f"command: {choice.command} (Claude Code's, without hooks or a transcript)"
    if choice.provider == "command":
        return f"command: {choice.command}"
    assert choice.base_url is not None
    return f"{choice.provider}/{choice.model} at {display_url(choice.base_url)}"
