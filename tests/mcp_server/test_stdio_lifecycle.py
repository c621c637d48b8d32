"""``serve_stdio``'s lifecycle in process, with the SDK's stdio loop replaced by a stand-in:
the memory is closed (drained) however the session ends, a signal stops the session, and
a second signal gives up the drain."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import memfold.mcp
from memfold import Memory
from memfold.errors import ConfigError
from memfold.mcp import Binding
from memfold.mcp import stdio as stdio_module


class _StandIn:
    """``build_server``'s result: ``run_stdio_async`` returns at once (stdin EOF) or when
    ``release`` is set (a client that keeps stdin open)."""

    def __init__(self, *, wait: bool) -> None:
        self.wait = wait
        self.release = threading.Event()
        self.started = threading.Event()

    async def run_stdio_async(self) -> None:
        self.started.set()
        if self.wait:
            await anyio.to_thread.run_sync(self.release.wait)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], _StandIn]:
    def install(wait: bool) -> _StandIn:
        server = _StandIn(wait=wait)
        monkeypatch.setattr(stdio_module, "build_server", lambda memory, binding: server)
        return server

    return install


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    codes: list[int] = []
    monkeypatch.setattr(stdio_module, "_exit", codes.append)
    return codes


def test_end_of_stdin_closes_the_memory_after_draining(
    memory: Memory, stand_in: Callable[[bool], _StandIn], exits: list[int]
) -> None:
    stand_in(False)
    memory.record(
        [{"role": "user", "content": "I live in Berlin."}, {"role": "assistant", "content": "Ok"}],
        thread_id="t1", user_id="alice",
    )  # fmt: skip
    assert stdio_module.serve_stdio(memory, Binding("alice")) is True
    assert exits == []
    assert memory.record([("user", "hi there"), ("assistant", "hello")], thread_id="t2") is False
    with Memory(home=memory.config.home) as again:
        assert [f.content for f in again.get(user_id="alice").facts] == ["Lives in Berlin"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def _signal_when(event: threading.Event) -> threading.Thread:
    def send() -> None:
        event.wait(30)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_sigterm_stops_a_session_whose_client_keeps_stdin_open(
    memory: Memory, stand_in: Callable[[bool], _StandIn], exits: list[int]
) -> None:
    server = stand_in(True)
    sender = _signal_when(server.started)
    try:
        assert stdio_module.serve_stdio(memory, Binding("alice")) is True
    finally:
        server.release.set()
        sender.join(5)
    assert exits == [0]  # past the thread still reading stdin


def test_a_second_signal_gives_up_the_drain(
    memory: Memory, stand_in: Callable[[bool], _StandIn], exits: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    server = stand_in(True)
    closing = threading.Event()
    real_close = memory.close

    def slow_close(timeout: Any = None) -> bool:
        closing.set()
        os.kill(os.getpid(), signal.SIGTERM)  # the client's SIGTERM while draining
        return real_close(timeout)

    monkeypatch.setattr(memory, "close", slow_close)
    sender = _signal_when(server.started)
    try:
        stdio_module.serve_stdio(memory, Binding("alice"))
    finally:
        server.release.set()
        sender.join(5)
    assert closing.is_set()
    assert exits[0] == 1


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named {name!r}", name="mcp")

    monkeypatch.setattr(memfold.mcp.importlib, "import_module", missing)
    with pytest.raises(ConfigError, match=r"pip install 'memfold\[mcp\]'"):
        memfold.mcp.require_sdk()
    with pytest.raises(ConfigError, match="mcp is missing"):
        memfold.mcp.build_server  # noqa: B018


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memfold.mcp.nope  # noqa: B018
