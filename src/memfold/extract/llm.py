"""``LLMExtractor``: folds new turns into a change set with one chat-model call.

The prompt has two parts. The system message (rules, categories, confidence bands, output
shape) is identical on every call, so providers can cache it. The user message carries a
compact view of current memory (the six summaries and facts as short refs ``f1 [preference
0.90] ...``, no ids or metadata), the new turns with each message cut to its head and
tail, and hints for detected signals. All conversation and memory text is escaped, so it
cannot close or forge the prompt's sections.
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from memfold.errors import ConfigError, ExtractionError
from memfold.extract._parse import parse_reply
from memfold.extract.base import Extraction, ExtractionRequest, Usage
from memfold.extract.view import DEFAULT_VIEW_MAX_FACTS, DEFAULT_VIEW_MAX_TOKENS, select_facts
from memfold.forgetting import held_out
from memfold.llm.base import ChatMessage, ChatModel, Completion
from memfold.model import (
    DEFAULT_CATEGORIES,
    HISTORY_SECTIONS,
    USER_SECTIONS,
    Fact,
    MemoryDocument,
    Message,
    Signals,
)

__all__ = [
    "EXTRACTION_SCHEMA",
    "SYSTEM_TEMPLATE",
    "USER_TEMPLATE",
    "LLMExtractor",
    "compact_memory",
    "format_turns",
]

SYSTEM_TEMPLATE = "extraction_system.txt"
USER_TEMPLATE = "extraction_user.txt"
#: Longest message text kept in the prompt; longer messages keep their head and tail.
MAX_MESSAGE_CHARS = 1000
#: What the chat format adds per message (role and separators), in OpenAI's accounting.
_CHAT_TOKENS_PER_MESSAGE = 4

#: Most items one reply may hold (a grammar-constrained model cannot loop on forever).
MAX_REPLY_ITEMS = 10
_LABELS: dict[str, Any] = {
    "scope": {"$ref": "#/$defs/scope"},
    "durability": {"$ref": "#/$defs/durability"},
}
_SUMMARY: dict[str, Any] = {"$ref": "#/$defs/summary"}


def _strict(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _list_of(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "array", "maxItems": MAX_REPLY_ITEMS, "items": _strict(properties, required)}


def _sections(names: Sequence[str]) -> dict[str, Any]:
    properties = dict.fromkeys(names, _SUMMARY)
    return {"type": "object", "properties": properties, "additionalProperties": False}


_FACT: dict[str, Any] = {
    "content": {"type": "string"},
    "category": {"type": "string"},
    "confidence": {"type": "number"},
    "sourceError": {"type": ["string", "null"]},
    **_LABELS,
}
_REMOVAL: dict[str, Any] = {
    "ref": {"type": "string"},
    "reason": {"type": "string"},
    "replacedBy": {"type": ["integer", "null"]},
}
#: JSON schema of the reply, passed to models that support structured output (and written
#: into the prompt for those that do not). It describes the shape only: no example values.
EXTRACTION_SCHEMA: dict[str, Any] = {
    "$defs": {
        "scope": {"enum": ["user", "task"]},
        "durability": {"enum": ["durable", "temporary"]},
        "summary": _strict(
            {"shouldUpdate": {"type": "boolean"}, "summary": {"type": "string"}, **_LABELS},
            ["shouldUpdate", "summary", "scope", "durability"],
        ),
    },
    **_strict(
        {
            "newFacts": _list_of(
                _FACT, ["content", "category", "confidence", "scope", "durability"]
            ),
            "factsToRemove": _list_of(_REMOVAL, ["ref", "reason", "replacedBy"]),
            "user": _sections(USER_SECTIONS),
            "history": _sections(HISTORY_SECTIONS),
        },
        ["newFacts", "factsToRemove"],
    ),
}

_CORRECTION_HINT = (
    "- The user corrected the assistant in these turns. Record what the user wants instead "
    'as a "correction" fact with confidence 0.95 or more, and put what the assistant got '
    "wrong in its sourceError."
)
_THREADS_HINT = (
    "- The turns come from {} separate conversations of this user, one <thread> each; "
    "learn from each of them."
)
_REINFORCEMENT_HINT = (
    "- The user confirmed that an answer or behaviour was right. Keep the facts behind it; "
    "if the confirmed preference is not listed yet, add it with confidence 0.9 or more."
)


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 5
    tail = limit - head
    return f"{text[:head]} [... {len(text) - limit} chars cut ...] {text[-tail:]}"


def _fact_line(ref: str, fact: Fact) -> str:
    category = _escape(_one_line(fact.category))
    return f"{ref} [{category} {fact.confidence:.2f}] {_escape(_one_line(fact.content))}"


def compact_memory(
    document: MemoryDocument,
    messages: Sequence[Message] = (),
    *,
    max_facts: int | None = None,
    max_tokens: int = DEFAULT_VIEW_MAX_TOKENS,
    count: Callable[[str], int] | None = None,
) -> tuple[str, dict[str, str]]:
    """The memory view the model sees, and the map from refs (``f1``...) to fact ids.

    Refs number facts in document order; text is escaped and kept on one line each. A
    summary held out after a removal (``memfold.forgetting``) says what it still mentions,
    so the model rewrites it without that. With ``max_facts``, a memory of more facts
    shows only those :func:`memfold.extract.view.select_facts` picks for ``messages``
    (the new turns), within ``max_tokens``.
    """
    lines: list[str] = []
    for group, sections in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        for name in sections:
            text = _one_line(document.summary(name))
            line = f"{group}.{name}: {_escape(text) if text else '(empty)'}"
            summary = document.summaries.get(name)
            hold = None if summary is None or not text else held_out(summary)
            if hold is not None:  # the user removed these: the model must rewrite the section
                removed = "; ".join(_escape(_one_line(r)) for r in hold.removed)
                line += f" [held out; it still mentions removed facts: {removed}]"
            lines.append(line)
    refs: dict[str, str] = {}
    shown: Sequence[Fact] = document.facts
    if max_facts is not None:
        shown = select_facts(
            document.facts, messages, max_facts=max_facts, max_tokens=max_tokens,
            count=count, line=lambda fact: _fact_line("f00", fact),
        )  # fmt: skip
    if len(shown) < len(document.facts):
        lines.append(
            f"facts ({len(shown)} of {len(document.facts)}: the ones related to these turns, "
            "corrections and the most confident; the rest are not shown):"
        )
    elif shown:
        lines.append(f"facts ({len(shown)}):")
    else:
        lines.append("facts: none")
    for number, fact in enumerate(shown, start=1):
        ref = f"f{number}"
        refs[ref] = fact.id
        lines.append(_fact_line(ref, fact))
    return "\n".join(lines), refs


def format_turns(messages: Sequence[Message], *, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """One ``<user>``/``<assistant>`` element per message, text cut to head and tail
    (``max_chars``) and escaped so it cannot close or open prompt sections."""
    return "\n".join(
        f"<{m.role}>{_escape(_cut(m.content.strip(), max_chars))}</{m.role}>" for m in messages
    )


def _conversation(request: ExtractionRequest, max_chars: int) -> str:
    """The turns as ``format_turns`` writes them; several threads' turns each in their
    own ``<thread>`` element."""
    if not request.threads:
        return format_turns(request.messages, max_chars=max_chars)
    out, start = [], 0
    for _, size in request.threads:
        turns = format_turns(request.messages[start : start + size], max_chars=max_chars)
        out.append(f"<thread>\n{turns}\n</thread>")
        start += size
    return "\n".join(out)


def _hints(signals: Signals, threads: int = 1) -> str:
    lines = [_THREADS_HINT.format(threads)] if threads > 1 else []
    if signals.correction:
        lines.append(_CORRECTION_HINT)
    if signals.reinforcement:
        lines.append(_REINFORCEMENT_HINT)
    return "\nNotes:\n" + "\n".join(lines) + "\n" if lines else ""


def _load(name: str, templates_dir: Path | None) -> Template:
    if templates_dir is not None and (templates_dir / name).is_file():
        path = templates_dir / name
        try:
            return Template(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read prompt template {path}: {exc.strerror}") from exc
    return Template(resources.files("memfold.templates").joinpath(name).read_text("utf-8"))


def _fill(template: Template, name: str, values: Mapping[str, str]) -> str:
    try:
        return template.substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConfigError(
            f"prompt template {name}: bad placeholder {exc}; it may use only "
            f"{', '.join('$' + k for k in values)} (write $$ for a literal $)"
        ) from exc


class LLMExtractor:
    """Extractor that asks a chat model for a change set (see the module docstring).

    ``counter`` counts tokens when the provider reports no usage (without either, usage
    is zero) and measures the memory view. Above ``view_max_facts`` facts the model sees
    the smaller view of :mod:`memfold.extract.view` (``None``: always every fact).
    ``templates_dir`` may hold ``extraction_system.txt`` and/or
    ``extraction_user.txt`` replacing the packaged ones.

    Raises:
        ConfigError: a template override cannot be read or has unknown placeholders.
    """

    name = "llm"
    #: Each proposal is a paid model call: the extraction gate may skip it.
    calls_model = True
    #: Reads ``ExtractionRequest.threads``: one request may hold several threads' turns.
    takes_threads = True

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        counter: Callable[[str], int] | None = None,
        templates_dir: Path | None = None,
        timeout: float = 120.0,
        categories: Sequence[str] = DEFAULT_CATEGORIES,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        view_max_facts: int | None = DEFAULT_VIEW_MAX_FACTS,
        view_max_tokens: int = DEFAULT_VIEW_MAX_TOKENS,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout={timeout}: must be positive seconds")
        if not categories:
            raise ValueError("categories must name at least one category")
        self.chat_model = chat_model
        self.counter = counter
        self.timeout = timeout
        self.max_message_chars = max_message_chars
        self.view_max_facts = view_max_facts
        self.view_max_tokens = view_max_tokens
        self._user_template = _load(USER_TEMPLATE, templates_dir)
        self.system_prompt = _fill(
            _load(SYSTEM_TEMPLATE, templates_dir),
            SYSTEM_TEMPLATE,
            {"categories": ", ".join(categories)},
        )
        # Fail at construction, not mid-update, when an override has a bad placeholder.
        fixed_user = _fill(
            self._user_template, USER_TEMPLATE, {"memory": "", "conversation": "", "hints": ""}
        )
        #: The prompt's own text, which a reply must not echo back as content.
        self.instructions: tuple[str, ...] = (
            self.system_prompt,
            fixed_user,
            _CORRECTION_HINT,
            _REINFORCEMENT_HINT,
        )

    def prompt(self, request: ExtractionRequest) -> tuple[list[ChatMessage], dict[str, str]]:
        """The messages :meth:`propose` sends, and the ref → fact id map for parsing."""
        memory, refs = compact_memory(
            request.document, request.messages, max_facts=self.view_max_facts,
            max_tokens=self.view_max_tokens, count=self.counter,
        )  # fmt: skip
        user = _fill(
            self._user_template,
            USER_TEMPLATE,
            {
                "memory": memory,
                "conversation": _conversation(request, self.max_message_chars),
                "hints": _hints(request.signals, len(request.threads)),
            },
        )
        return [ChatMessage("system", self.system_prompt), ChatMessage("user", user)], refs

    def propose(self, request: ExtractionRequest) -> Extraction:
        """Ask the model about the new turns and parse its reply into a change set.

        Raises:
            ChatModelError: the model call failed (the queue retries).
            ExtractionError: the reply held no usable JSON object (the queue retries).
        """
        messages, refs = self.prompt(request)
        completion = self.chat_model.complete(
            messages, json_schema=EXTRACTION_SCHEMA, timeout=self.timeout
        )
        usage = self._usage(messages, completion)
        try:
            change_set = parse_reply(completion.text, refs=refs, truncated=completion.truncated)
        except ExtractionError as exc:
            # The request was paid for: its usage is counted all the same.
            hint = (
                "; the reply stopped at the output-token limit: raise llm.max_output_tokens"
                if completion.truncated
                else ""
            )
            raise ExtractionError(f"{exc}{hint}", raw=exc.raw, usage=usage) from exc
        return Extraction(change_set=change_set, usage=usage, instructions=self.instructions)

    def request_tokens(self, request: ExtractionRequest) -> int | None:
        """Tokens of the request :meth:`propose` would send (None without a counter): its
        messages' text, the chat format's few tokens per message, and the reply schema
        (sent with every request, as a response format or in the system message)."""
        if self.counter is None:
            return None
        messages, _ = self.prompt(request)
        text = sum(self.counter(m.content) + _CHAT_TOKENS_PER_MESSAGE for m in messages)
        return text + self.schema_tokens

    @functools.cached_property
    def schema_tokens(self) -> int:
        """Tokens of the reply schema as sent (compact JSON); 0 without a counter."""
        if self.counter is None:
            return 0
        return self.counter(json.dumps(EXTRACTION_SCHEMA, separators=(",", ":")))

    def message_tokens(self, message: Message) -> int:
        """The tokens one conversation message adds to the prompt (as cut and escaped)."""
        text = format_turns((message,), max_chars=self.max_message_chars)
        return (len(text) if self.counter is None else self.counter(text)) + 1

    def _usage(self, messages: Sequence[ChatMessage], completion: Completion) -> Usage:
        if completion.usage is not None:
            return completion.usage
        if self.counter is None:
            return Usage()
        return Usage(
            prompt_tokens=sum(self.counter(m.content) for m in messages) + self.schema_tokens,
            completion_tokens=self.counter(completion.text),
        )
