"""open_store: the storage setting picks the backend; bad names fail with ConfigError."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from memfold.config import MemoryConfig
from memfold.errors import ConfigError
from memfold.store.factory import open_store
from memfold.store.inmemory import InMemoryStore
from memfold.store.jsonfile import JsonFileStore


def test_json_opens_a_file_store_under_home(tmp_path: Path) -> None:
    store = open_store(MemoryConfig(home=tmp_path / "mem"))
    assert isinstance(store, JsonFileStore)
    assert store.home == (tmp_path / "mem").absolute()


def test_memory_opens_a_fresh_in_memory_store(tmp_path: Path) -> None:
    config = MemoryConfig(home=tmp_path, storage="memory")
    first, second = open_store(config), open_store(config)
    assert isinstance(first, InMemoryStore)
    assert first is not second


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("memfold_test_plugin")
    module.calls = []  # type: ignore[attr-defined]

    def make(config: MemoryConfig) -> InMemoryStore:
        module.calls.append(config)  # type: ignore[attr-defined]
        return InMemoryStore()

    module.Factory = make  # type: ignore[attr-defined]
    module.Nested = types.SimpleNamespace(make=make)  # type: ignore[attr-defined]
    module.NotAStore = lambda config: object()  # type: ignore[attr-defined]
    module.constant = 42  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memfold_test_plugin", module)
    return module


@pytest.mark.parametrize("attr", ["Factory", "Nested.make"])
def test_third_party_factory_is_called_with_the_config(
    tmp_path: Path, plugin: types.ModuleType, attr: str
) -> None:
    config = MemoryConfig(home=tmp_path, storage=f"memfold_test_plugin:{attr}")
    assert isinstance(open_store(config), InMemoryStore)
    assert plugin.calls == [config]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_package_xyz.store:Factory", "cannot import 'no_such_package_xyz'"),
        ("memfold_test_plugin:Missing", "has no attribute 'Missing'"),
        ("memfold_test_plugin:constant", "is not callable"),
        ("memfold_test_plugin:NotAStore", "returned object, which lacks the MemoryStore methods"),
    ],
)
def test_bad_factory_spec_raises_config_error_naming_it(
    tmp_path: Path, plugin: types.ModuleType, spec: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        open_store(MemoryConfig(home=tmp_path, storage=spec))
    assert spec in str(caught.value)
