"""Monotonic clocks for the queue: the real one, and a fake that tests move by hand."""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Monotonic seconds; only differences between two readings mean anything."""

    def now(self) -> float: ...


class SystemClock:
    """``time.monotonic``: immune to wall-clock jumps."""

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that only moves when told to, so timer behaviour is tested without sleeping."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` and return the new time.

        Raises:
            ValueError: if ``seconds`` is negative (a monotonic clock never goes back).
        """
        if seconds < 0:
            raise ValueError(f"advance({seconds!r}): a monotonic clock cannot go back")
        with self._lock:
            self._now += seconds
            return self._now

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now()!r})"
