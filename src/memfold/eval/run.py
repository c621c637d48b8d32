"""Run an extractor over a labelled corpus the way memfold runs it in production.

Each conversation goes through ``Memory.update`` (capture, signals, redaction, the
extractor, ``apply``) into an in-memory store, one user per conversation, so what is
scored is what memfold would store and inject, not the extractor's raw proposal.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memfold.config import MemoryConfig
from memfold.errors import MemfoldError
from memfold.eval.corpus import Conversation
from memfold.eval.score import Report, StoredFact, score
from memfold.memory import Memory

__all__ = ["Evaluation", "evaluate"]

logger = logging.getLogger("memfold.eval")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A scored run: the report, which extractor ran, and how long it took."""

    report: Report
    extractor: str
    seconds: float
    messages: int

    @property
    def seconds_per_1000_messages(self) -> float:
        return self.seconds / self.messages * 1000 if self.messages else 0.0


def evaluate(
    conversations: Sequence[Conversation],
    config: MemoryConfig | None = None,
    *,
    memory: Callable[[MemoryConfig], Memory] | None = None,
) -> Evaluation:
    """Extract every conversation into a fresh in-memory store and score the result.

    ``config`` chooses the extractor (``extractor``, ``llm``, ``rule_pattern_files``…);
    its storage and queue are replaced by in-memory ones so nothing is written. A
    conversation whose update fails (an unreachable model, an unusable reply) is scored
    as storing nothing and listed under ``failed``.

    Raises:
        ConfigError: the configuration is invalid or names a missing dependency.
    """
    base = config or MemoryConfig()
    settings = MemoryConfig.validated({**base.model_dump(), "storage": "memory", "queue": "memory"})
    make = memory or (lambda cfg: Memory(cfg, start_workers=False))
    facts: dict[str, list[StoredFact]] = {}
    errors: dict[str, str] = {}
    spent = 0.0
    with make(settings) as mem:
        for index, conversation in enumerate(conversations):
            user = f"eval-{index}"
            started = time.perf_counter()
            try:
                mem.update(list(conversation.messages), thread_id=conversation.id, user_id=user)
            except (MemfoldError, ValueError, TypeError) as e:  # scored as nothing stored
                logger.warning("eval: conversation %s failed: %s", conversation.id, e)
                errors[conversation.id] = f"{type(e).__name__}: {e}"
            spent += time.perf_counter() - started
            facts[conversation.id] = [
                StoredFact(f.content, f.category) for f in mem.get(user_id=user).facts
            ]
        name = mem.extractor_name
    return Evaluation(
        report=score(conversations, facts, errors),
        extractor=name,
        seconds=spent,
        messages=sum(len(c.messages) for c in conversations),
    )
