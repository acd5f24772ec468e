"""The provider registry: lookup in order, lazy import, install hint."""

from __future__ import annotations

import sys

import pytest

from memlane.core.errors import EmbedderError
from memlane.core.providers import Provider, ProviderRegistry


def registry(*providers: Provider) -> ProviderRegistry:
    return ProviderRegistry("thing.provider", providers, EmbedderError)


def test_names_keep_the_registered_order() -> None:
    reg = registry(
        Provider("b", "json", "dumps", "-"),
        Provider("a", "json", "loads", "-"),
    )
    assert reg.names == ("b", "a")
    assert "a" in reg and "c" not in reg


def test_load_imports_the_module_and_returns_the_factory() -> None:
    import json

    reg = registry(Provider("json", "json", "dumps", "-"))
    assert reg.load("json") is json.dumps
    assert reg.load("json", "loads") is json.loads


def test_load_imports_only_when_asked() -> None:
    name = "memlane.core._never_a_module"
    reg = registry(Provider("ghost", name, "make", "pip install ghost"))
    assert name not in sys.modules  # building the registry imported nothing
    assert reg.names == ("ghost",)


def test_a_missing_dependency_raises_the_install_hint() -> None:
    reg = registry(Provider("ghost", "memlane_ghost_dependency", "make", "pip install ghost"))
    with pytest.raises(EmbedderError) as info:
        reg.load("ghost")
    assert info.value.message.startswith("thing.provider ghost cannot be loaded")
    assert "memlane_ghost_dependency" in info.value.message
    assert info.value.hint == "pip install ghost"


def test_an_unregistered_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        registry().load("nope")
