"""A provider registry: a setting's value names a provider, the provider lives
in its own module, and that module is imported only when it is chosen.

``embed/factory.py`` and ``llm/factory.py`` each hold one. An entry is data
(module path, factory name, install hint), so choosing a provider is a
lookup instead of an if-chain, ``memlane --help`` imports no provider, and a
provider whose dependency is missing fails with what to install rather than
a traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from memlane.core.errors import MemlaneError


@dataclass(frozen=True)
class Provider:
    name: str  # the setting's value, e.g. "onnx"
    module: str  # dotted path, imported on first use
    factory: str  # the module's attribute that builds the provider
    install_hint: str  # what to do when the module's dependency is missing


class ProviderRegistry:
    """Providers by name, in the order they are listed to the user."""

    def __init__(
        self,
        setting: str,
        providers: Iterable[Provider],
        error: Callable[[str, str | None], MemlaneError],
    ) -> None:
        """``setting`` names the key the user sets (for messages); ``error``
        builds the error type of the caller's package (message, hint)."""
        self.setting = setting
        self._providers = {p.name: p for p in providers}
        self._error = error

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._providers)

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def entry(self, name: str) -> Provider:
        """The entry for ``name``; ``KeyError`` when none is registered (the
        caller words that error, with ``names``)."""
        return self._providers[name]

    def load(self, name: str, attribute: str | None = None) -> Any:
        """``attribute`` (default: the entry's factory) of the provider's module,
        importing it now; the install hint is raised when the import fails."""
        provider = self.entry(name)
        try:
            module = importlib.import_module(provider.module)
        except ImportError as exc:
            raise self._error(
                f"{self.setting} {name} cannot be loaded: {exc}", provider.install_hint
            ) from exc
        return getattr(module, attribute or provider.factory)
