"""``make_extractor``: the ``extractor`` setting (and an optional chat model) → an Extractor.

``Memory(config, chat_model=...)`` takes memfold's ``ChatModel`` or any LangChain
``BaseChatModel`` (wrapped in :class:`~memfold.llm.langchain.LangChainChatModel`); anything
else is refused here, when the ``Memory`` is built, not on its first update.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from memfold.config import MemoryConfig
from memfold.extract.base import Extraction, ExtractionRequest, Extractor
from memfold.tokens import get_counter

if TYPE_CHECKING:
    from memfold.gate import ExtractionGate
    from memfold.llm.base import ChatModel

__all__ = ["as_chat_model", "make_extractor", "make_gate"]

logger = logging.getLogger("memfold")


def as_chat_model(model: object) -> ChatModel:
    """``model`` as memfold's ``ChatModel``: as is when it has ``complete``, wrapped when it
    is a LangChain ``BaseChatModel``.

    Raises:
        TypeError: ``model`` is neither.
    """
    from memfold.llm.base import ChatModel

    if isinstance(model, ChatModel):
        return model
    # A BaseChatModel instance means langchain_core is already imported: no import cost.
    core = sys.modules.get("langchain_core.language_models")
    base = getattr(core, "BaseChatModel", None)
    if base is not None and isinstance(model, base):
        from memfold.llm.langchain import LangChainChatModel

        return LangChainChatModel(model)
    raise TypeError(
        f"chat_model={type(model).__name__}: expected a LangChain chat model (a "
        "langchain_core BaseChatModel, e.g. from init_chat_model) or a memfold ChatModel "
        "(an object with complete(messages, *, json_schema=None, timeout)); "
        "or configure an llm section instead"
    )


def _count_lazily(encoding: str) -> Callable[[str], int]:
    def count(text: str) -> int:  # the table loads on the first prompt, not at start-up
        return get_counter(encoding).count(text)

    return count


class _BuiltinRules:
    """The rule extractor with memfold's own (tested) patterns, compiled on the first
    update: compiling them takes ~0.3 s, which commands that only read never pay."""

    name = "rules"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: Extractor | None = None

    def propose(self, request: ExtractionRequest) -> Extraction:
        if self._rules is None:
            with self._lock:
                if self._rules is None:
                    from memfold.extract.rules import RuleExtractor

                    self._rules = RuleExtractor()
        return self._rules.propose(request)


def make_extractor(config: MemoryConfig, chat_model: object = None) -> Extractor:
    """The LLM extractor when ``extractor`` is ``llm``, or ``auto`` with an ``llm`` section
    or a ``chat_model``; else the offline rule extractor.

    Raises:
        TypeError: ``chat_model`` is not a chat model (see :func:`as_chat_model`).
        ConfigError: the ``llm`` section names a missing package or provider.
    """
    model = None if chat_model is None else as_chat_model(chat_model)
    use_llm = config.extractor == "llm" or (
        config.extractor == "auto" and (config.llm is not None or model is not None)
    )
    if not use_llm:
        logger.info("memfold extractor: rules (offline; configure llm to use a model)")
        if config.rule_pattern_files:  # the user's files: any error shows now, at start
            from memfold.extract.rules import RuleExtractor

            return RuleExtractor(config.rule_pattern_files)
        return _BuiltinRules()
    from memfold.extract.llm import LLMExtractor
    from memfold.llm.factory import make_chat_model

    if model is None and config.llm is not None:
        model = make_chat_model(config.llm)
    if model is None:  # extractor=llm without llm is refused by MemoryConfig
        raise TypeError("extractor=llm needs a chat_model or an llm section")
    name = config.llm.model if config.llm is not None else type(model).__name__
    logger.info("memfold extractor: llm (%s)", name)
    return LLMExtractor(
        model,
        counter=_count_lazily(config.token_encoding),
        timeout=config.extraction_timeout_seconds,
        categories=config.categories,
        view_max_facts=config.view_max_facts,
        view_max_tokens=config.view_max_tokens,
    )


def make_gate(config: MemoryConfig, extractor: Extractor) -> ExtractionGate | None:
    """The extraction gate, for extractors whose calls cost (``calls_model``), unless
    ``extraction_gate`` is off. The built-in rule patterns it reads with compile on its
    first decision, not at start-up.

    Raises:
        ConfigError: a configured ``rule_pattern_files`` entry cannot be used.
    """
    if not config.extraction_gate or not getattr(extractor, "calls_model", False):
        return None
    from memfold.gate import ExtractionGate

    if config.rule_pattern_files:  # the user's files: any error shows now, at start
        from memfold.extract.rules import RuleExtractor

        return ExtractionGate(RuleExtractor(config.rule_pattern_files, log_misses=False))
    return ExtractionGate()
