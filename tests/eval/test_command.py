"""memfold eval extraction: the report on stdout, exit codes for CI, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memfold.llm.fake_server import FakeOpenAIServer, FakeReply

KNOWN = Path(__file__).resolve().parents[2] / "corpora" / "extraction" / "known-phrasings.jsonl"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    line = {
        "id": "c1",
        "lang": "en",
        "messages": [
            {
                "role": "user",
                "content": "I'm a beekeeper in Somerset. My friend wrote: I'm a pilot.",
            },
            {"role": "assistant", "content": "Lovely."},
        ],
        "expect": [
            {"terms": ["beekeeper"], "category": "context"},
            {"terms": ["Somerset"], "category": "context"},
            {"terms": ["honey"], "category": "context"},
        ],
        "traps": [{"terms": ["pilot"]}],
    }
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def test_prints_recall_precision_invented_and_the_misses(run, corpus: Path) -> None:
    code, out, _ = run("eval", "extraction", str(corpus))
    assert code == 0
    assert "extraction quality of the rules extractor" in out
    assert "recall" in out
    assert "precision" in out
    assert "invented" in out
    assert "honey" in out.split("missed (1):")[1]


def test_json_output_is_the_whole_report(run, corpus: Path) -> None:
    code, out, _ = run("eval", "extraction", str(corpus), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["overall"]["found"] == 2
    assert data["by_language"]["en"]["expected"] == 3


def test_thresholds_fail_the_run_for_ci(run, corpus: Path) -> None:
    code, _, err = run("eval", "extraction", str(corpus), "--min-recall", "0.9")
    assert code == 1
    assert "recall 0.67 < 0.9" in err
    ok = run("eval", "extraction", str(corpus), "--min-recall", "0.6", "--max-invented", "0")
    assert ok[0] == 0


def test_a_bad_corpus_is_one_error_line_and_exit_2(run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    code, out, err = run("eval", "extraction", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith("memfold: error: corpus")
    assert "line 1" in err


def test_llm_without_a_model_says_how_to_configure_one(run, corpus: Path) -> None:
    code, _, err = run("eval", "extraction", str(corpus), "--extractor", "llm")
    assert code == 2
    assert "--config FILE with an llm section" in err


def test_llm_extractor_through_an_openai_compatible_endpoint(run, corpus, tmp_path) -> None:
    with FakeOpenAIServer() as server:
        facts = [{"content": "Is a pilot", "category": "context", "confidence": 0.9,
                  "scope": "user", "durability": "durable"}]  # fmt: skip
        server.script(FakeReply.text(json.dumps({"newFacts": facts, "factsToRemove": []})))
        config = tmp_path / "memfold.yaml"
        config.write_text(
            f"llm: {{provider: openai, model: fake, base_url: '{server.base_url}', "
            "api_key_env: null}\n",
            encoding="utf-8",
        )
        code, out, _ = run(
            "eval", "extraction", str(corpus), "--extractor", "llm", "--config", str(config)
        )
    assert code == 0
    assert "extraction quality of the llm extractor" in out
    assert "Is a pilot" in out.split("invented (a trap's terms) (1):")[1]


def test_the_command_runs_as_a_program() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memfold.cli", "eval", "extraction", str(KNOWN), "--limit", "0"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "28 conversations" in done.stdout
