"""Turn an agent's raw message list into the few messages memory should learn from.

``capture`` normalises the shapes agents use (OpenAI-style dicts, LangChain messages,
``(role, text)`` pairs) and keeps only what the user said and the assistant's final
answers: tool traffic, system prompts, hidden messages (such as the injected memory block,
which would otherwise feed on itself), upload listings and bare acknowledgements are
dropped. ``format_for_prompt`` renders kept messages for an extraction prompt. Everything
here is pure and runs on every agent turn, so the common paths avoid needless work.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from memfold.model import Message
from memfold.tokens import valid_unicode

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_UPLOAD_TAGS",
    "capture",
    "format_for_prompt",
    "has_minimum_dialogue",
    "is_trivial",
    "strip_uploads",
    "truncate_middle",
]

#: Characters of one message kept by ``format_for_prompt`` before its middle is elided.
DEFAULT_MAX_CHARS: Final = 1000

_USER: Final = "user"
_ASSISTANT: Final = "assistant"
_DROP: Final = ""

# Role names (OpenAI dict roles, LangChain ``.type`` values, chunk class names) → kept role,
# or _DROP for roles memory never learns from.
_ROLES: Final[dict[str, str]] = {
    "user": _USER,
    "human": _USER,
    "humanmessagechunk": _USER,
    "assistant": _ASSISTANT,
    "ai": _ASSISTANT,
    "aimessagechunk": _ASSISTANT,
    "model": _ASSISTANT,
    "system": _DROP,
    "systemmessagechunk": _DROP,
    "developer": _DROP,
    "tool": _DROP,
    "toolmessagechunk": _DROP,
    "function": _DROP,
    "functionmessagechunk": _DROP,
    "remove": _DROP,
}
_ACCEPTED_ROLES: Final = "user/human, assistant/ai, system, developer, tool, function"

_ACCEPTED_SHAPES: Final = (
    "an OpenAI-style dict with 'role' and 'content', a LangChain message (an object with "
    ".type and .content), a (role, text) pair, or a memfold Message"
)

# Content-block types that carry text, and those that mean "the assistant is calling a tool".
_TEXT_BLOCKS: Final = frozenset({"text", "input_text", "output_text"})
_TOOL_BLOCKS: Final = frozenset({"tool_use", "tool_call", "function_call", "server_tool_use"})
# Tool output sent back in a user-role message (Anthropic style) is tool traffic, not a turn.
_TOOL_RESULT_BLOCKS: Final = frozenset({"tool_result", "function_call_output"})

#: Tags whose blocks ``capture`` strips from user text (``upload_tags`` in the config).
DEFAULT_UPLOAD_TAGS: Final = ("uploaded_files", "current_uploads")


# security: upload blocks are found by plain scans that only move forward (linear on any
# input); one pattern with "[^>]*" rescanned the rest of the text at every unclosed tag.
@functools.lru_cache(maxsize=32)
def _upload_open(tags: tuple[str, ...]) -> re.Pattern[str] | None:
    if not tags:
        return None
    return re.compile(rf"<({'|'.join(re.escape(tag) for tag in tags)})\b", re.IGNORECASE)


@functools.lru_cache(maxsize=64)
def _upload_close(tag: str) -> re.Pattern[str]:
    return re.compile(rf"</{re.escape(tag)}\s*>", re.IGNORECASE)


# --- trivial acknowledgements ------------------------------------------------------------

#: Longest text (stripped) that can still be a bare acknowledgement.
_TRIVIAL_MAX_CHARS: Final = 32

# Each entry is a regex fragment; a space inside an entry matches optional whitespace.
_ACK_EN: Final = (
    "o+k+",
    "o+ka+y+",
    "okey",
    "okie",
    "k+",
    "alright",
    "all right",
    "thanks",
    "thank you",
    "thank u",
    "thx",
    "thnx",
    "tks",
    "ty",
    "tysm",
    "tyvm",
    "cheers",
    "many thanks",
    "thanks a lot",
    "thanks a bunch",
    "thanks so much",
    "thank you so much",
    "thank you very much",
    "thanks again",
    "much appreciated",
    "appreciated",
    "appreciate it",
    "got it",
    "gotcha",
    "understood",
    "noted",
    "roger",
    "roger that",
    "cool",
    "nice",
    "sure",
    "fine",
    "sounds good",
    "will do",
    "i see",
    "makes sense",
    "no problem",
    "np",
    "no worries",
    "great",
    "awesome",
    "ah+",
    "oh+",
    "h+m+",
    "m+h+m+",
    "lol",
)
_ACK_ZH: Final = (
    "好",
    "好的",
    "好吧",
    "好滴",
    "好嘞",
    "好哒",
    "行",
    "行吧",
    "可以",
    "嗯",
    "恩",
    "哦",
    "噢",
    "喔",
    "谢谢",
    "谢谢你",
    "谢谢您",
    "谢了",
    "多谢",
    "感谢",
    "非常感谢",
    "十分感谢",
    "收到",
    "明白",
    "了解",
    "知道",
    "懂",
    "没问题",
)
# Sentence-final particles that may follow an acknowledgement ("好的呀", "收到了").
_PARTICLES_ZH: Final = ("了", "啦", "呀", "啊", "哈", "呢", "哈哈")


def _ack_pattern() -> re.Pattern[str]:
    acks = "|".join(a.replace(" ", r"\s*") for a in (*_ACK_EN, *_ACK_ZH))
    tails = "|".join(_PARTICLES_ZH)
    return re.compile(rf"(?:{acks})(?:\s*(?:{acks}|{tails}))*")


_ACK: Final = _ack_pattern()
# The common single acknowledgements, answered without running the pattern.
_ACK_EXACT: Final = frozenset(a for a in (*_ACK_EN, *_ACK_ZH) if re.fullmatch(r"[\w ]+", a))
_NON_WORD: Final = re.compile(r"[\W_]+")


def is_trivial(text: str) -> bool:
    """True when ``text`` is only an acknowledgement ("ok", "thanks!", "👍", "好的，谢谢").

    Case, punctuation, emoji and whitespace are ignored; anything longer than a short
    phrase is never trivial, so a real request that starts with "ok" is kept.
    """
    stripped = text.strip()
    if len(stripped) > _TRIVIAL_MAX_CHARS:
        return False
    key = _NON_WORD.sub(" ", stripped.casefold()).strip()
    return not key or key in _ACK_EXACT or _ACK.fullmatch(key) is not None


def strip_uploads(text: str, tags: Sequence[str] = DEFAULT_UPLOAD_TAGS) -> str:
    """Remove ``<uploaded_files …>…</uploaded_files>`` and ``<current_uploads>…`` blocks
    (or those of ``tags``; any case, across lines; an unclosed block runs to the end).
    Linear in the length of ``text``."""
    opener = _upload_open(tuple(tags))
    if opener is None or "<" not in text:
        return text
    kept: list[str] = []
    position = 0
    while (opening := opener.search(text, position)) is not None:
        tag_end = text.find(">", opening.end())
        if tag_end == -1:  # no complete opening tag from here on
            break
        kept.append(text[position : opening.start()])
        closing = _upload_close(opening.group(1).lower()).search(text, tag_end + 1)
        if closing is None:
            position = len(text)
            break
        position = closing.end()
    if not kept and position == 0:
        return text.strip()
    kept.append(text[position:])
    return "".join(kept).strip()


# --- normalisation ------------------------------------------------------------------------


#: Deepest list-in-list nesting of content parts that is read (deeper is an error).
_MAX_PART_DEPTH: Final = 8


def _flatten(content: object, index: int) -> tuple[str, bool]:
    """Text of a message's content, and whether it is tool traffic (a tool call, or only
    tool results).

    Raises:
        TypeError: the content, or a text part's ``text``, is not text.
    """
    if isinstance(content, str):
        return content.strip(), False
    if content is None:
        return "", False
    if not isinstance(content, list | tuple):
        raise TypeError(
            f"messages[{index}]: content must be a string, None or a list of parts, "
            f"got {type(content).__name__}"
        )
    texts: list[str] = []
    flags = [False, False]  # calls a tool, holds tool results
    _collect(content, index, texts, flags, depth=0)
    text = "\n".join(t for t in texts if t.strip()).strip()
    return text, flags[0] or (flags[1] and not text)


def _collect(
    parts: list[object] | tuple[object, ...],
    index: int,
    texts: list[str],
    flags: list[bool],
    *,
    depth: int,
) -> None:
    """Gather the text parts (lists of parts may nest) and note tool blocks in ``flags``."""
    if depth >= _MAX_PART_DEPTH:
        raise TypeError(
            f"messages[{index}]: content parts nested more than {_MAX_PART_DEPTH} lists "
            "deep; flatten the content"
        )
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, list | tuple):
            _collect(part, index, texts, flags, depth=depth + 1)
        elif isinstance(part, Mapping):
            kind = part.get("type")
            if kind in _TEXT_BLOCKS:
                texts.append(_part_text(part.get("text"), index))
            elif kind in _TOOL_BLOCKS:
                flags[0] = True
            elif kind in _TOOL_RESULT_BLOCKS:
                flags[1] = True


def _part_text(text: object, index: int) -> str:
    """A text part's text: a string, ``None``, or ``{"value": str}`` (Assistants API)."""
    if isinstance(text, str):
        return text
    if text is None:
        return ""
    if isinstance(text, Mapping) and isinstance(text.get("value"), str):
        return str(text["value"])
    raise TypeError(
        f"messages[{index}]: a text part's 'text' must be a string, got "
        f"{type(text).__name__}; pass the text itself"
    )


def _sanitise(text: str) -> str:
    """NUL removed (never content, and PostgreSQL text cannot hold it) and lone surrogates
    (half an emoji cut by a client) replaced by U+FFFD, so every stored or hashed form of
    the message encodes."""
    if text.isascii():
        return text.replace("\x00", "").strip() if "\x00" in text else text
    text = valid_unicode(text)
    return text.replace("\x00", "").strip() if "\x00" in text else text


_Item = tuple[str, str, "str | None", bool]
_DROPPED: Final[_Item] = (_DROP, "", None, True)


def _flag(container: object, key: str) -> bool:
    if not container:
        return False
    if type(container) is dict:
        return bool(container.get(key))
    return isinstance(container, Mapping) and bool(container.get(key))


def _role(name: object, index: int) -> str:
    if isinstance(name, str):
        role = _ROLES.get(name)
        if role is None:
            role = _ROLES.get(name.lower())
        if role is not None:
            return role
    raise ValueError(
        f"messages[{index}]: unknown role {name!r}; expected one of {_ACCEPTED_ROLES} "
        "(map custom roles to one of these before recording)"
    )


def _ident(raw_id: object) -> str | None:
    if raw_id is None or raw_id == "":
        return None
    return raw_id if type(raw_id) is str else str(raw_id)


def _from_mapping(raw: Mapping[str, object], index: int) -> _Item:
    name = raw.get("role")
    role = _ROLES.get(name) if type(name) is str else None
    if role is None:
        role = _role(name, index)
    if role == _DROP:
        return _DROPPED
    content = raw.get("content")
    if type(content) is str:
        text, dropped = content.strip(), False
    else:
        text, dropped = _flatten(content, index)
    dropped = dropped or (
        role == _ASSISTANT and bool(raw.get("tool_calls") or raw.get("function_call"))
    )
    if not dropped:
        dropped = _hidden(
            raw.get("additional_kwargs"), raw.get("metadata"), raw.get("response_metadata")
        )
    raw_id = raw.get("id")
    return role, text, raw_id if type(raw_id) is str and raw_id else _ident(raw_id), dropped


def _hidden(extra: object, metadata: object, response_metadata: object) -> bool:
    """Marked hidden by the framework, or a summary LangChain's SummarizationMiddleware
    wrote as a human message (memory must not learn it as something the user said)."""
    return (
        bool(extra and (_flag(extra, "hide_from_ui") or _summary_source(extra)))
        or bool(metadata and _flag(metadata, "hidden"))
        or bool(response_metadata and _flag(response_metadata, "hidden"))
    )


def _summary_source(extra: object) -> bool:
    return isinstance(extra, Mapping) and extra.get("lc_source") == "summarization"


_OBJECT_FIELDS: Final = (
    "type",
    "content",
    "additional_kwargs",
    "tool_calls",
    "invalid_tool_calls",
    "metadata",
    "response_metadata",
    "id",
    "role",
)
_DICT_BACKED: dict[type, bool] = {}
_DICT_BACKED_MAX: Final = 256


def _dict_backed(cls: type) -> bool:
    """Whether instances of ``cls`` keep the LangChain fields in ``__dict__`` only.

    Then a field missing from ``__dict__`` is simply absent, and reading ``__dict__``
    avoids ``getattr`` on a missing name, which pydantic answers through a slow raising
    ``__getattr__`` (LangChain messages have no ``metadata``). Classes that define one of
    the fields themselves (a property, a class default) are read with ``getattr``. The
    cache is bounded; message classes are few.
    """
    found = _DICT_BACKED.get(cls)
    if found is None:
        if len(_DICT_BACKED) >= _DICT_BACKED_MAX:
            _DICT_BACKED.clear()
        found = _DICT_BACKED[cls] = not any(
            name in vars(klass) for klass in cls.__mro__ for name in _OBJECT_FIELDS
        )
    return found


def _from_fields(fields: dict[str, object], kind: str, index: int) -> _Item:
    """A LangChain-like message, given its attributes (missing ones absent or ``None``)."""
    get = fields.get
    # ChatMessage carries its role separately from its type.
    name = get("role") if kind == "chat" else kind
    role = _ROLES.get(name) if type(name) is str else None
    if role is None:
        role = _role(name, index)
    if role == _DROP:
        return _DROPPED
    content = get("content")
    if type(content) is str:
        text, dropped = content.strip(), False
    else:
        text, dropped = _flatten(content, index)
    extra = get("additional_kwargs")
    metadata = get("metadata")
    response_metadata = get("response_metadata")
    dropped = (
        dropped
        or (
            role == _ASSISTANT
            and bool(
                get("tool_calls")
                or get("invalid_tool_calls")
                or (extra and (_flag(extra, "tool_calls") or _flag(extra, "function_call")))
            )
        )
        or _hidden(extra, metadata, response_metadata)
    )
    return role, text, _ident(get("id")), dropped


def _normalise(raw: object, index: int) -> _Item:
    """``(role, text, id, dropped)`` of one raw message; ``dropped`` = hidden or tool call."""
    cls = type(raw)
    if _DICT_BACKED.get(cls):  # a LangChain message class seen before: read its __dict__
        fields: dict[str, object] = raw.__dict__
        kind = fields.get("type")
        if type(kind) is str:
            return _from_fields(fields, kind, index)
    if cls is Message:
        message: Message = raw  # type: ignore[assignment]
        role = _role(message.role, index)
        return role, message.content.strip(), message.id or None, role == _DROP
    if cls is tuple or cls is list:
        return _from_pair(raw, index)  # type: ignore[arg-type]
    # Duck-typed before the (slow) Mapping ABC check: LangChain messages are the common case.
    kind = getattr(raw, "type", None)
    if isinstance(kind, str) and hasattr(raw, "content"):
        fields = getattr(raw, "__dict__", None)  # type: ignore[assignment]
        if type(fields) is not dict or not _dict_backed(cls):
            fields = {name: getattr(raw, name, None) for name in _OBJECT_FIELDS}
        return _from_fields(fields, kind, index)
    if isinstance(raw, Mapping):
        return _from_mapping(raw, index)
    if isinstance(raw, Message):
        return _normalise(Message(raw.role, raw.content, raw.id), index)
    if isinstance(raw, tuple | list):
        return _from_pair(raw, index)
    raise TypeError(
        f"messages[{index}]: unsupported message of type {cls.__name__}; "
        f"expected {_ACCEPTED_SHAPES}"
    )


def _from_pair(raw: tuple[object, ...] | list[object], index: int) -> _Item:
    if len(raw) != 2:
        raise TypeError(f"messages[{index}]: a pair must be (role, text), got {len(raw)} items")
    role = _role(raw[0], index)
    if role == _DROP:
        return _DROPPED
    text, calls_tool = _flatten(raw[1], index)
    return role, text, None, calls_tool


# --- public API ---------------------------------------------------------------------------


def capture(
    messages: Iterable[object], *, upload_tags: Sequence[str] = DEFAULT_UPLOAD_TAGS
) -> tuple[Message, ...]:
    """Normalise and filter an agent's messages down to what memory learns from.

    Keeps user messages and final assistant answers (no tool calls, non-empty text), in
    order, with their ids. Drops system/developer/tool messages, hidden messages, upload
    blocks inside user text (the ``upload_tags`` blocks), and user turns that are empty
    after that or only an acknowledgement, together with the assistant reply that follows
    such a turn. Text and ids are sanitised once, here: NUL is removed and lone surrogates
    (half an emoji) become U+FFFD, so nothing captured can fail to encode later.

    Raises:
        TypeError: ``messages`` is a single message or string rather than an iterable of
            messages, an item has a shape none of the accepted ones match, or a text part
            holds something other than text.
        ValueError: an item names a role memfold does not know.
    """
    if type(messages) is not list and isinstance(messages, str | bytes | Mapping):
        raise TypeError(
            f"capture() takes an iterable of messages, got a single {type(messages).__name__}; "
            "wrap it in a list"
        )
    kept: list[Message] = []
    skip_reply = False
    for index, raw in enumerate(messages):
        if type(raw) is dict:
            role, text, message_id, dropped = _from_mapping(raw, index)
        else:
            role, text, message_id, dropped = _normalise(raw, index)
        text = _sanitise(text)
        if message_id is not None:
            message_id = _sanitise(message_id) or None
        if role == _USER:
            if dropped:
                continue  # a hidden user message (e.g. an injected reminder) is invisible
            if "<" in text:
                text = strip_uploads(text, upload_tags)
            if not text or is_trivial(text):
                skip_reply = True
                continue
            skip_reply = False
            kept.append(Message(_USER, text, message_id))
        elif role == _ASSISTANT and text and not dropped and not skip_reply:
            kept.append(Message(_ASSISTANT, text, message_id))
    return tuple(kept)


def has_minimum_dialogue(messages: Iterable[Message]) -> bool:
    """True when there is at least one user and one assistant message to learn from."""
    seen_user = seen_assistant = False
    for message in messages:
        if message.role == _USER:
            seen_user = True
        elif message.role == _ASSISTANT:
            seen_assistant = True
        if seen_user and seen_assistant:
            return True
    return False


def truncate_middle(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Keep the head and tail of ``text`` (``max_chars`` in all), marking what was cut.

    Raises:
        ValueError: ``max_chars`` is less than 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars={max_chars}: must be at least 1")
    length = len(text)
    if length <= max_chars:
        return text
    head = (max_chars + 1) // 2
    tail = max_chars - head
    return f"{text[:head]}\n[… {length - max_chars} characters omitted …]\n{text[length - tail :]}"


_LABELS: Final = {_USER: "User", _ASSISTANT: "Assistant"}


def format_for_prompt(
    messages: Iterable[Message],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    escape: Callable[[str], str] | None = None,
) -> str:
    """Render messages as ``User: …`` / ``Assistant: …`` blocks separated by blank lines.

    Each message longer than ``max_chars`` keeps its head and tail (see
    ``truncate_middle``). Text is not escaped unless an ``escape`` function is given; it is
    applied after truncation so an escape sequence is never cut in half.

    Raises:
        ValueError: ``max_chars`` is less than 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars={max_chars}: must be at least 1")
    blocks: list[str] = []
    for message in messages:
        text = truncate_middle(message.content, max_chars)
        if escape is not None:
            text = escape(text)
        blocks.append(f"{_LABELS.get(message.role, message.role.title())}: {text}")
    return "\n\n".join(blocks)
