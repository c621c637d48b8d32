"""Secret redaction: API keys, tokens, passwords, card numbers, IBANs (and optionally
e-mail addresses and phone numbers) become ``[REDACTED:<kind>]`` before text reaches an
extractor or a store, and again when memory is rendered or exported (REFERENCE.md
defect 15).

Detection is by shape and by position, in three families:

- provider keys by their own shape: memfold's detectors for the most common providers
  and the provider list Betterleaks maintains as data (``_providers``);
- generic shapes whatever the provider: values assigned to a secret-named key, headers,
  credentials in URLs, command-line password flags, key blocks, JWTs, Luhn-valid card
  numbers, IBANs with their checksum (``_generic``);
- passwords stated in sentences of many languages (``_prose``).

Each detector is a pattern plus checks of the matched value, so look-alikes (git SHAs,
UUIDs, digests, placeholders such as ``${VAR}``) are left alone, and cheap hints so a
detector runs only on text that could hold its secret. Every pattern runs in linear
time (``benchmarks/bench_redact.py`` feeds each one 1 MB of hostile text).

Why not a detector library at run time: ``detect-secrets`` was measured
(``benchmarks/bench_redact.py``): its plugins report values rather than positions and
flag most ordinary lines in line mode; Betterleaks is a 56 MB Go binary. memfold keeps
its own engine and takes the provider list from Betterleaks' rules as data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memfold.model import Message
from memfold.redact._engine import Detector, DetectorSet, Finding, View, replace_findings, scan
from memfold.redact._generic import GENERIC
from memfold.redact._markers import is_only_redaction, redaction_kinds
from memfold.redact._prose import PROSE
from memfold.redact._providers import MAINTAINED, MAINTAINED_SOURCE, OWN
from memfold.redact._recall import cached_scrub, redact_document, redact_fact

if TYPE_CHECKING:
    from memfold.config import MemoryConfig

__all__ = [
    "PROVIDER_RULES_SOURCE",
    "Finding",
    "Redactor",
    "cached_scrub",
    "is_only_redaction",
    "redact_document",
    "redact_fact",
    "redact_messages",
    "redaction_kinds",
    "redactor_for",
]

#: Where the maintained provider rules come from (name and version of the rule set).
PROVIDER_RULES_SOURCE = MAINTAINED_SOURCE

_SECRETS: tuple[Detector, ...] = OWN + MAINTAINED + GENERIC + PROSE

_EMAIL = Detector(
    "email",
    re.compile(
        r"(?<![\w.+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"
    ),
    hints=("@",),
)
_PHONE = Detector(
    "phone",
    re.compile(
        r"(?<![\w+])(?:\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]?\d{2,4}){1,4}"
        r"|(?<!\d)1[3-9]\d{9}|\(?\d{3}\)?[ .\-]\d{3}[ .\-]\d{4})(?![\w\-])"
    ),
    hint=re.compile(r"\d[ .\-()]{0,2}\d[ .\-()]{0,2}\d[ .\-()]{0,2}\d"),
)


class Redactor:
    """Finds secrets in text and replaces them with ``[REDACTED:<kind>]``.

    Secrets are always looked for; ``emails`` and ``phones`` add those kinds. Stateless
    and thread-safe; build one and reuse it.
    """

    def __init__(self, *, secrets: bool = True, emails: bool = False, phones: bool = False) -> None:
        detectors: list[Detector] = list(_SECRETS) if secrets else []
        if emails:
            detectors.append(_EMAIL)
        if phones:
            detectors.append(_PHONE)
        self._detectors = DetectorSet(detectors)
        self._secrets = secrets
        self._emails = emails
        self._phones = phones

    def __repr__(self) -> str:
        return f"Redactor(secrets={self._secrets}, emails={self._emails}, phones={self._phones})"

    def findings(self, text: str) -> list[Finding]:
        """Non-overlapping secrets in ``text``, in order (the longest wins an overlap).
        Each names its ``kind`` and the ``rule`` that found it, never the value."""
        if not text:
            return []
        view = View(text)
        return scan(view, self._detectors.candidates(view))

    def redact(self, text: str) -> str:
        """``text`` with every finding replaced by ``[REDACTED:<kind>]``."""
        return replace_findings(text, self.findings(text))

    def redact_with_findings(self, text: str) -> tuple[str, list[Finding]]:
        """The redacted text and what was replaced (for a change history: which rule
        fired where, without the value)."""
        found = self.findings(text)
        return replace_findings(text, found), found

    def __call__(self, text: str) -> str:
        return self.redact(text)

    def redact_all(self, texts: Sequence[str]) -> list[str]:
        """``redact`` for each text (the same string objects when nothing was found).

        Faster than one ``redact`` per text: the detectors' hints are checked once on the
        joined texts, so detectors that cannot match anywhere are skipped for all of them.
        """
        views = [View(text) for text in texts]
        joined = View("\n".join(view.text for view in views), folded=True)
        candidates = self._detectors.candidates(joined)
        if not candidates:
            return list(texts)
        narrowed = DetectorSet(candidates)
        return [
            replace_findings(text, scan(view, narrowed.candidates(view))) if text else text
            for text, view in zip(texts, views, strict=True)
        ]


def redactor_for(config: MemoryConfig) -> Redactor | None:
    """The redactor the config asks for, or None when every redaction switch is off."""
    if not (config.redact_secrets or config.redact_emails or config.redact_phones):
        return None
    return Redactor(
        secrets=config.redact_secrets, emails=config.redact_emails, phones=config.redact_phones
    )


def redact_messages(messages: Sequence[Message], redactor: Redactor | None) -> tuple[Message, ...]:
    """The messages with their text redacted (the same objects when nothing changed)."""
    if redactor is None:
        return tuple(messages)
    clean = redactor.redact_all([m.content for m in messages])
    return tuple(
        m if text is m.content else replace(m, content=text)
        for m, text in zip(messages, clean, strict=True)
    )
