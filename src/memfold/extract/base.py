"""What an extractor proposes: a typed, validated change set, and the extractor protocol.

Extractors never touch storage. They read a document and the new turns and return an
:class:`Extraction`; ``memfold.apply`` decides what of it lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from memfold.model import MemoryDocument, Message, Signals

__all__ = [
    "ChangeSet",
    "Extraction",
    "ExtractionRequest",
    "Extractor",
    "FactRemoval",
    "NewFact",
    "SizedExtractor",
    "SummaryUpdate",
    "Usage",
]

ItemScope = Literal["user", "task"]
Durability = Literal["durable", "temporary"]


@dataclass(frozen=True, slots=True)
class SummaryUpdate:
    """Replace one of the six summaries (``section`` is e.g. ``"workContext"``).

    ``scope``/``durability`` of ``None`` mean the extractor did not label the item; apply
    keeps only ``user`` + ``durable`` items.
    """

    section: str
    summary: str
    scope: ItemScope | None = "user"
    durability: Durability | None = "durable"


@dataclass(frozen=True, slots=True)
class NewFact:
    """A fact the extractor proposes to add."""

    content: str
    category: str
    confidence: float
    source_error: str | None = None
    scope: ItemScope | None = "user"
    durability: Durability | None = "durable"


@dataclass(frozen=True, slots=True)
class FactRemoval:
    """Remove an existing fact (by its real id); ``replaced_by`` indexes ``new_facts``."""

    fact_id: str
    reason: str = ""
    replaced_by: int | None = None


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Everything one extraction proposes. ``removals`` apply only if ``removals_allowed``
    (an LLM reply that did not parse cleanly may not delete anything). ``dropped`` says
    what the parser could not use, one entry per item, so it is counted with the rest."""

    summaries: tuple[SummaryUpdate, ...] = ()
    new_facts: tuple[NewFact, ...] = ()
    removals: tuple[FactRemoval, ...] = ()
    removals_allowed: bool = True
    dropped: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.summaries or self.new_facts or self.removals)


@dataclass(frozen=True, slots=True)
class Usage:
    """LLM tokens one extraction cost (zero for the rule extractor)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class ExtractionRequest:
    """The input of one extraction: current memory, the turns not seen yet, signals."""

    document: MemoryDocument
    messages: tuple[Message, ...]
    signals: Signals = field(default_factory=Signals)
    thread_id: str | None = None
    #: With turns of several threads (one extraction for a user's busy threads): each
    #: thread's id and how many of ``messages`` it holds, in order; () for one thread.
    threads: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Extraction:
    """A change set, what it cost, and the prompt's fixed instructions (so ``apply`` can
    tell an echo of them from content; empty for extractors without a prompt)."""

    change_set: ChangeSet
    usage: Usage = field(default_factory=Usage)
    instructions: tuple[str, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Turns new conversation turns into a proposed change set.

    Raises:
        ExtractionError: the extractor's output could not be used (the queue retries).
    """

    name: str

    def propose(self, request: ExtractionRequest) -> Extraction: ...


@runtime_checkable
class SizedExtractor(Protocol):
    """An extractor whose requests have a size, so the updater can keep each one under
    ``max_extraction_input_tokens`` by splitting a long run of new turns into chunks.

    ``request_tokens`` is the exact size of the whole request (None when the extractor
    cannot count); ``message_tokens`` the share one message adds to it, which the
    updater sums to plan a chunk before measuring it whole.
    """

    def request_tokens(self, request: ExtractionRequest) -> int | None: ...

    def message_tokens(self, message: Message) -> int: ...
