"""examples/langchain_agent.py runs offline and shows memory crossing threads."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langchain_agent.py"


def run_example(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMFOLD_"))}
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "--home", str(tmp_path / "home")],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_example_runs_offline_and_the_second_thread_sees_the_first_threads_memory(
    tmp_path: Path,
) -> None:
    done = run_example(tmp_path)

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[t1] assistant: The answer is 391." in out  # the tool loop ran
    memory_part = out.split("memory of alice after thread t1:")[1].split("[t2]")[0]
    assert "Based in Berlin" in memory_part
    assert "391" not in memory_part  # tool traffic did not become memory
    assert "Welcome back, Alice!" in out
    seen = out.split("system prompt the model saw in thread t2:")[1]
    assert seen.lstrip().startswith("You are a helpful assistant.\n\n<user_memory>")
    assert (tmp_path / "home").is_dir()  # memory was stored where it was told


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is not None,
    reason="langchain-openai is installed: the example would call the endpoint",
)
def test_example_with_an_api_key_but_no_langchain_openai_says_what_to_install(
    tmp_path: Path,
) -> None:
    done = run_example(tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1")

    assert done.returncode != 0
    assert "pip install langchain-openai" in done.stderr
