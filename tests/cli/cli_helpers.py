"""Helpers shared by the CLI tests (imported as ``cli_helpers``: pytest puts this folder
on ``sys.path``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "conversations.jsonl"


def memfold_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """The real ``memfold`` command (``python -m memfold.cli``) in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "memfold.cli", *args],
        capture_output=True, text=True, check=False, timeout=120, cwd=cwd, input=stdin,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def write_jsonl(path: Path, *conversations: object) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations), encoding="utf-8")
    return path


def conversation(
    thread_id: str, user_said: str, *, user_id: str | None = "u", **extra: object
) -> dict[str, object]:
    return {
        "thread_id": thread_id,
        "user_id": user_id,
        "messages": [
            {"role": "user", "content": user_said},
            {"role": "assistant", "content": "Noted."},
        ],
        **extra,
    }
