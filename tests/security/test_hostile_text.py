"""Nothing a user types can freeze the process: capture, signals and URL masking run in
linear time on 1 MB of hostile text (issue 10, item 8).

The bounds are generous guards for a shared machine (linear code takes a few tens of
milliseconds; the quadratic patterns these shapes target took minutes). The ratios are
measured in ``benchmarks/bench_hostile.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from memfold.config import mask_url
from memfold.conversation import capture, strip_uploads
from memfold.model import Message
from memfold.signals import detect

MB = 1_000_000
BOUND_SECONDS = 3.0


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _capture(text: str) -> None:
    capture([{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}])


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("unclosed upload tags", "<uploaded_files " * (MB // 16)),
        ("upload tags closed by spaces", "<uploaded_files>" + "</uploaded_files " * (MB // 17)),
        ("'<' runs", "<" * MB),
        ("cut emoji", "\ud83d " * (MB // 2)),
        ("NUL runs", "a\x00" * (MB // 2)),
    ],
)
def test_capture_of_1_mb_of_hostile_text_is_linear(name: str, text: str) -> None:
    assert _timed(lambda: _capture(text)) < BOUND_SECONDS, name


@pytest.mark.parametrize(
    "text",
    [
        "that's " + "not " * (MB // 4),
        "no, " + "i meant " * (MB // 8),
        "我说的" + "不是" * (MB // 6),
    ],
)
def test_signals_on_1_mb_of_hostile_text_are_fast(text: str) -> None:
    messages = tuple(Message("user", text) for _ in range(6))
    assert _timed(lambda: detect(messages)) < BOUND_SECONDS


@pytest.mark.parametrize(
    "text", ["a." * (MB // 2) + "://", "http://a:" * (MB // 9), "x://" * (MB // 4)]
)
def test_url_masking_of_1_mb_of_hostile_text_is_linear(text: str) -> None:
    assert _timed(lambda: mask_url(text)) < BOUND_SECONDS


def test_strip_uploads_still_removes_blocks() -> None:
    text = "keep <UPLOADED_FILES a=1>secret.pdf</uploaded_files > this <uploaded_files>rest"
    assert strip_uploads(text) == "keep  this"
