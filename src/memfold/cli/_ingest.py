"""``memfold ingest``: fold a file of conversations into memory.

The whole input is read and checked first (JSON, shapes, ids with the API's own rules,
text that can be stored), so a bad line stops the run before anything is stored. Then
the conversations run on ``--workers`` threads, one scope (user, agent) per thread at a
time and in file order within a scope, each through ``Memory.update``. A failure stops
the run (or, with ``--keep-going``, is reported at the end) and says where it stopped;
running the same command again resumes, because conversations already folded in are
skipped by their watermarks.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memfold.cli._app import CheckFailed, InputError, Options, cli, scope_options
from memfold.cli._output import echo_json, note, plural

if TYPE_CHECKING:
    from memfold.memory import Memory
    from memfold.updater import UpdateResult

__all__ = ["Conversation", "ingest", "read_conversations"]


@dataclass(frozen=True, slots=True)
class Conversation:
    where: str  # "file.jsonl:3" or "file.json[2]": how messages name it
    thread_id: str
    user_id: str | None
    agent: str | None
    messages: list[Any]

    def describe(self) -> str:
        who = "the default user" if self.user_id is None else f"user {self.user_id!r}"
        agent = f", agent {self.agent!r}" if self.agent else ""
        return f"{self.where} (thread {self.thread_id!r}, {who}{agent})"


def _check_id(value: object, what: str, where: str) -> None:
    from memfold.model import validate_id

    try:
        validate_id(value, what)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if isinstance(value, str) and not value:
            message = f"{what} must not be empty; use null (or leave it out) for the default"
        raise ValueError(f"{where}: {message}") from None


def _check_messages(messages: list[Any], where: str) -> None:
    from memfold.conversation import capture

    for index, message in enumerate(messages):
        if isinstance(message, dict) and "content" not in message:
            found = ", ".join(sorted(map(str, message))) or "none"
            raise ValueError(
                f"{where}: message {index} has no 'content' (its keys: {found}); memfold "
                'reads OpenAI-style messages: {"role": "user", "content": "..."}'
            )
    try:  # every message's shape, now, so a bad one stops the run before any commit
        capture(messages)  # it also makes the text storable (lone surrogates become U+FFFD)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _conversation(data: Any, where: str, options: Options) -> Conversation:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object with thread_id and messages")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ValueError(f"{where}: 'messages' must be a list of messages")
    thread_id = data.get("thread_id") or data.get("threadId")
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"{where}: 'thread_id' must be a non-empty string")
    _check_id(thread_id, "thread_id", where)
    user_id = data.get("user_id", options.user)
    agent = data.get("agent", options.agent)
    for name, value in (("user_id", user_id), ("agent", agent)):
        if value is not None:
            _check_id(value, name, where)
    _check_messages(messages, where)
    return Conversation(where, thread_id, user_id, agent, messages)


def _loads(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to be a conversation") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise ValueError(f"{where}: {' '.join(str(exc).split())[:200]}") from None


def read_conversations(name: str, text: str, options: Options) -> list[Conversation]:
    """Parse and check every conversation of the input before anything is stored.

    JSONL (one conversation per line), one JSON conversation, or a JSON array of them.

    Raises:
        ValueError: naming the line (or array index) and what is wrong.
    """
    if not text.strip():
        raise ValueError(f"{name} is empty: expected JSONL, one conversation per line")
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None  # JSONL, or broken: read line by line for a precise message
    if isinstance(whole, list):
        return [_conversation(item, f"{name}[{i}]", options) for i, item in enumerate(whole)]
    if isinstance(whole, dict) and len(text.strip().splitlines()) > 1:
        return [_conversation(whole, name, options)]  # one pretty-printed conversation
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            where = f"{name}:{number}"
            data = _loads(line, where)
            if isinstance(data, list):
                raise ValueError(
                    f"{where}: a JSON array; put one conversation object per line (JSONL), "
                    "or give the file as one JSON array of conversations"
                )
            out.append(_conversation(data, where, options))
    return out


@dataclass
class _Tally:
    """What the run did; worker threads update it under ``lock``."""

    total: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0
    added: int = 0
    removed: int = 0
    updated: int = 0
    already_seen: int = 0
    no_dialogue: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: list[tuple[int, Conversation, Exception]] = field(default_factory=list)

    def count(self, result: UpdateResult) -> None:
        with self.lock:
            self.done += 1
            self.added += result.facts_added
            self.removed += result.facts_removed
            self.updated += result.count("summary_changed") + result.count("updated")
            self.already_seen += result.skipped == "nothing new"
            self.no_dialogue += result.skipped == "no dialogue"
            self.prompt_tokens += result.usage.prompt_tokens
            self.completion_tokens += result.usage.completion_tokens

    def fail(self, order: int, conversation: Conversation, error: Exception) -> None:
        with self.lock:
            self.failures.append((order, conversation, error))

    def as_dict(self, extractor: str) -> dict[str, Any]:
        return {
            "conversations": self.total, "stored": self.done, "extractor": extractor,
            "factsAdded": self.added, "factsRemoved": self.removed, "updated": self.updated,
            "alreadySeen": self.already_seen, "noDialogue": self.no_dialogue,
            "promptTokens": self.prompt_tokens, "completionTokens": self.completion_tokens,
            "failed": [{"where": c.where, "threadId": c.thread_id, "userId": c.user_id,
                        "agent": c.agent, "error": str(e)} for _, c, e in sorted(
                            self.failures, key=lambda f: f[0])],
        }  # fmt: skip

    def summary(self, extractor: str) -> str:
        parts = [
            f"read {plural(self.total, 'conversation')} with the {extractor} extractor: "
            f"{plural(self.added, 'fact')} added, {self.removed:,} removed, "
            f"{self.updated:,} summaries/facts updated"
        ]
        if self.already_seen:
            parts.append(f"{self.already_seen:,} already seen (nothing new; --reprocess to redo)")
        if self.no_dialogue:
            parts.append(f"{self.no_dialogue:,} skipped (no user message with an assistant reply)")
        if self.prompt_tokens or self.completion_tokens:
            parts.append(
                f"LLM tokens: {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion"
            )
        return "; ".join(parts)


def _by_scope(conversations: list[Conversation]) -> list[list[tuple[int, Conversation]]]:
    groups: dict[tuple[str | None, str | None], list[tuple[int, Conversation]]] = {}
    for order, conv in enumerate(conversations):
        groups.setdefault((conv.user_id, conv.agent), []).append((order, conv))
    return list(groups.values())


def _run(
    mem: Memory,
    conversations: list[Conversation],
    *,
    workers: int,
    reprocess: bool,
    keep_going: bool,
    progress: Callable[[], None],
) -> _Tally:
    tally = _Tally(len(conversations))
    stop = threading.Event()

    def run_scope(items: list[tuple[int, Conversation]]) -> None:
        for order, conv in items:  # in file order within the scope
            if stop.is_set():
                return
            try:
                result = mem.update(
                    conv.messages, thread_id=conv.thread_id, user_id=conv.user_id,
                    agent=conv.agent, reprocess=reprocess,
                )  # fmt: skip
            except Exception as exc:  # reported with its line below; the run goes on or stops
                tally.fail(order, conv, exc)
                if not keep_going:
                    stop.set()
                    return
                continue
            tally.count(result)
            progress()

    groups = _by_scope(conversations)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(groups)))) as pool:
        for future in [pool.submit(run_scope, group) for group in groups]:
            future.result()
    return tally


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[], None]]:
    """A thread-safe step function that advances a bar on a terminal (stderr)."""
    if not sys.stderr.isatty() or total < 2:
        yield lambda: None
        return
    lock = threading.Lock()
    with click.progressbar(length=total, label="ingesting", file=sys.stderr) as bar:

        def step() -> None:
            with lock:
                bar.update(1)

        yield step


def _read_input(file: str) -> tuple[str, str]:
    if file == "-":
        return "<stdin>", sys.stdin.read()
    path = Path(file)
    try:
        return str(path), path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"cannot read {path}: {reason}") from None


@cli.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Scopes folded in parallel (default: `workers` in the config).",
)
@click.option(
    "--reprocess",
    is_flag=True,
    help="Extract again from conversations already seen (after clear, or a new "
    "extractor); stored facts are not duplicated.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Go on past a failed conversation; list the failures at the end.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@scope_options
@click.pass_obj
def ingest(  # noqa: PLR0917 (click passes options positionally)
    options: Options,
    file: str,
    workers: int | None,
    reprocess: bool,
    keep_going: bool,
    as_json: bool,
) -> None:
    """Fold conversations from FILE ("-" for stdin) into memory.

    FILE is JSONL (one {"thread_id", "user_id", "agent", "messages"} object per line),
    one such JSON object, or a JSON array of them. --user and --agent are the defaults
    for conversations that do not name theirs.
    """
    name, text = _read_input(file)
    conversations = read_conversations(name, text, options)
    with options.opened() as mem, _progress(len(conversations)) as step:
        tally = _run(
            mem, conversations, workers=workers or mem.config.workers,
            reprocess=reprocess, keep_going=keep_going, progress=step,
        )  # fmt: skip
        extractor = mem.extractor_name
    if as_json:
        echo_json(tally.as_dict(extractor))
    else:
        click.echo(tally.summary(extractor))
    if not tally.failures:
        return
    failures = sorted(tally.failures, key=lambda item: item[0])
    if keep_going:
        for _, conv, error in failures:
            note(f"{conv.describe()} failed: {error}")
        raise CheckFailed(
            f"{plural(len(failures), 'conversation')} failed, {tally.done:,} stored; "
            "run the same command again to retry them (stored ones are skipped)"
        )
    _, conv, error = failures[0]
    raise CheckFailed(
        f"{conv.describe()} failed: {error}; {tally.done:,} of "
        f"{plural(tally.total, 'conversation')} stored before the run stopped; run the "
        "same command again to resume (stored conversations are skipped), or add "
        "--keep-going to go past failures"
    )
