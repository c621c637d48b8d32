"""Redaction measured on labelled corpora: secrets caught, ordinary chat untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memfold.redact import Redactor

CORPUS = Path(__file__).parent / "corpus"
SECRETS = [json.loads(line) for line in (CORPUS / "secrets.jsonl").read_text("utf-8").splitlines()]
ORDINARY = [json.loads(line) for line in (CORPUS / "ordinary.txt").read_text("utf-8").splitlines()]

#: Share of labelled secrets that must be caught (issue 7: at least 95 %).
MIN_CATCH_RATE = 0.95


def _caught(redactor: Redactor, row: dict[str, str]) -> bool:
    kinds = {finding.kind for finding in redactor.findings(row["text"])}
    return row["kind"] in kinds and row["secret"] not in redactor.redact(row["text"])


def test_corpora_are_large_enough_to_measure() -> None:
    assert len(SECRETS) >= 60
    assert len(ORDINARY) >= 150
    assert len({row["kind"] for row in SECRETS}) >= 20


def test_at_least_95_percent_of_labelled_secrets_are_caught_with_their_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    redactor = Redactor()
    missed = [row for row in SECRETS if not _caught(redactor, row)]
    rate = 1 - len(missed) / len(SECRETS)
    with capsys.disabled():
        print(f"\nredaction catch rate: {rate:.1%} of {len(SECRETS)} labelled secrets")
    assert rate >= MIN_CATCH_RATE, [row["text"][:80] for row in missed]


@pytest.mark.parametrize("kind", sorted({row["kind"] for row in SECRETS}))
def test_every_secret_kind_in_the_corpus_is_caught_at_least_once(kind: str) -> None:
    redactor = Redactor()
    assert any(_caught(redactor, row) for row in SECRETS if row["kind"] == kind)


def test_ordinary_technical_chat_has_no_false_positives() -> None:
    redactor = Redactor()
    false_positives = [
        (text[:60], [(f.kind, text[f.start : f.end]) for f in redactor.findings(text)])
        for text in ORDINARY
        if redactor.findings(text)
    ]
    assert false_positives == []


def test_ordinary_chat_is_returned_unchanged() -> None:
    redactor = Redactor()
    for text in ORDINARY:
        assert redactor.redact(text) is text


def test_redacted_text_keeps_the_words_around_the_secret() -> None:
    redactor = Redactor()
    for row in SECRETS:
        out = redactor.redact(row["text"])
        before = row["text"].split(row["secret"])[0]
        assert out.startswith(before[: max(0, len(before) - 12)])


@pytest.mark.parametrize("options", [{}, {"emails": True, "phones": True}])
def test_redaction_is_idempotent_on_every_corpus_line(options: dict[str, bool]) -> None:
    # The updater redacts text that may already hold markers (a model echoing them).
    redactor = Redactor(**options)
    for text in [row["text"] for row in SECRETS] + ORDINARY:
        once = redactor.redact(text)
        assert redactor.redact(once) == once, text


# --- corpus 2: generated in each provider's documented format (generate.py) -------------
# Built by a different method from corpus 1 and split before any pattern was written: the
# held-out third uses providers, shapes and sentence frames the tuned part does not.

GENERATED = CORPUS / "generated"
#: Issue 14: at least 98 % caught on both parts, no false positive on ordinary lines.
MIN_GENERATED_RATE = 0.98


def _rows(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (GENERATED / name).read_text("utf-8").splitlines()]


def _leaks(secret: str, redacted: str) -> bool:
    """Caught means no 8-character run of the secret survives (outside the markers,
    whose labels may name the provider: ``[REDACTED:rubygems_api_token]``)."""
    redacted = re.sub(r"\[REDACTED:[a-z0-9_]+\]", "[R]", redacted)
    n = min(8, len(secret))
    return any(secret[i : i + n] in redacted for i in range(len(secret) - n + 1))


def test_generated_corpus_is_reproducible_and_large_enough() -> None:
    import subprocess
    import sys

    check = subprocess.run(
        [sys.executable, str(CORPUS / "generate.py"), "--check"], capture_output=True, check=False
    )
    assert check.returncode == 0, check.stderr
    secrets = _rows("secrets_tuned.jsonl") + _rows("secrets_heldout.jsonl")
    ordinary = _rows("ordinary_tuned.jsonl") + _rows("ordinary_heldout.jsonl")
    assert len(secrets) >= 150
    assert len(ordinary) >= 400
    assert len(_rows("secrets_heldout.jsonl")) * 4 >= len(secrets)


@pytest.mark.parametrize("part", ["tuned", "heldout"])
def test_generated_secrets_are_caught(part: str, capsys: pytest.CaptureFixture[str]) -> None:
    redactor = Redactor()
    rows = _rows(f"secrets_{part}.jsonl")
    missed = [row for row in rows if _leaks(row["secret"], redactor.redact(row["text"]))]
    rate = 1 - len(missed) / len(rows)
    with capsys.disabled():
        print(f"\ngenerated corpus ({part}): {rate:.1%} of {len(rows)} secrets caught")
    assert rate >= MIN_GENERATED_RATE, [(row["kind"], row["text"][:80]) for row in missed]


@pytest.mark.parametrize("part", ["tuned", "heldout"])
def test_generated_look_alikes_are_left_alone(part: str) -> None:
    redactor = Redactor()
    false_positives = [
        (row["text"][:80], [(f.rule, row["text"][f.start : f.end]) for f in found])
        for row in _rows(f"ordinary_{part}.jsonl")
        if (found := redactor.findings(row["text"]))
    ]
    assert false_positives == []
