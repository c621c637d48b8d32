"""Commands that read: ``context``, ``show``, ``export``, ``users``, ``status``.

None of them runs a queued update or calls an LLM (``Options.opened`` closes the
``Memory`` with ``timeout=0``); ``status`` reads a durable queue's counts only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memfold import __version__
from memfold.cli._app import CheckFailed, Options, cli, scope_options
from memfold.cli._output import echo_json, emit, fact_lines, note, plural, style, wrap

if TYPE_CHECKING:
    from memfold.memory import Memory
    from memfold.model import MemoryDocument

__all__ = ["explain_missing", "ordered_facts", "write_private"]

_SECTION_TITLES = {
    "workContext": "Work",
    "personalContext": "Personal",
    "topOfMind": "Current focus",
    "recentMonths": "Recent months",
    "earlierContext": "Earlier context",
    "longTermBackground": "Long-term background",
}


def _where(mem: Memory) -> str:
    config = mem.config
    if config.storage in ("json", "sqlite"):
        return str(config.home.resolve())
    return f"the {config.storage} store"


def explain_missing(mem: Memory, options: Options, document: MemoryDocument) -> bool:
    """When nothing was ever stored for the scope, say so on stderr (with what *is* stored)
    and return True; a typo'd ``--user`` or another folder must not look like an empty
    memory."""
    if document.revision > 0:
        return False
    users = mem.users()
    mine = mem.scopes(options.user) if options.user in users else []
    if mine:
        buckets = ", ".join(
            "shared memory" if s.agent is None else f"agent {s.agent!r}" for s in mine
        )
        note(f"no stored memory for {options.who()}; this user has: {buckets}")
    else:
        stored = plural(len(users), "user")
        note(
            f"no stored memory for {options.who()} in {_where(mem)} ({stored} stored; "
            f"see `{options.command('users', scoped=False)}`)"
        )
    return True


def ordered_facts(document: MemoryDocument) -> list[Any]:
    """Most confident first, then newest, as the injected block ranks them."""
    newest = sorted(document.facts, key=lambda f: f.created_at, reverse=True)
    return sorted(newest, key=lambda f: f.confidence, reverse=True)


@cli.command()
@click.option("--max-tokens", type=click.IntRange(min=1), help="Budget for the block.")
@click.option("--shared/--no-shared", "include_shared", default=None,
              help="With --agent: layer the user's shared memory beneath (default: "
              "`include_shared` in the config).")  # fmt: skip
@click.option("--query", help="The user's message: inject the facts relevant to it first.")
@click.option("--explain", is_flag=True, help="What is included or dropped, and why (a table).")
@click.option("--json", "as_json", is_flag=True,
              help="The block, its budget and its size (with --explain: the report).")  # fmt: skip
@scope_options
@click.pass_obj
def context(  # noqa: PLR0917 (click passes options positionally)
    options: Options,
    max_tokens: int | None,
    include_shared: bool | None,
    query: str | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Print the block memfold would inject into the system prompt (nothing when empty)."""
    with options.opened() as mem:
        if explain:
            from memfold._cli_commands import print_report

            report = mem.explain_context(**options.scope, max_tokens=max_tokens, query=query)
            print_report(report, as_json=as_json)
            return
        block = mem.context(
            **options.scope, max_tokens=max_tokens, include_shared=include_shared, query=query
        )
        if not block and not explain_missing(mem, options, mem.get(**options.scope)):
            note(f"the memory of {options.who()} is empty: nothing to inject")
        budget = mem.config.max_injection_tokens if max_tokens is None else max_tokens
        if as_json:
            from memfold.tokens import get_counter

            tokens = get_counter(mem.config.token_encoding).count(block)
            echo_json({"userId": options.user, "agent": options.agent, "block": block,
                       "tokens": tokens, "maxTokens": budget,
                       "encoding": mem.config.token_encoding})  # fmt: skip
        elif block:
            click.echo(block)


def _render(document: MemoryDocument, options: Options) -> list[str]:
    header = f"{options.who()}: {plural(len(document.facts), 'fact')}, revision {document.revision}"
    if document.generation:
        header += f", cleared {plural(document.generation, 'time')}"
    lines = [style(header, bold=True)]
    from memfold.model import HISTORY_SECTIONS, USER_SECTIONS

    for group, sections in (("User", USER_SECTIONS), ("History", HISTORY_SECTIONS)):
        filled = [(s, document.summary(s)) for s in sections if document.summary(s).strip()]
        if filled:
            lines.append(f"\n{style(group + ':', bold=True)}")
            for section, text in filled:
                title = f"{_SECTION_TITLES[section]}: "
                lines.append(wrap(title + text, indent="  ", hanging="    "))
    if document.facts:
        lines.append(f"\n{style('Facts (most confident first):', bold=True)}")
        for fact in ordered_facts(document):
            lines.extend(fact_lines(fact))
    return lines


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the stored JSON document.")
@scope_options
@click.pass_obj
def show(options: Options, as_json: bool) -> None:
    """Show the stored memory of one user (and agent): summaries, then facts."""
    with options.opened() as mem:
        document = mem.get(**options.scope)
        explain_missing(mem, options, document)
        if as_json:
            echo_json(mem.export(**options.scope))
        else:
            emit(_render(document, options))


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600), as memory files are."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps no wider permissions either
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fd = -1
            handle.write(text)
    finally:
        if fd >= 0:
            os.close(fd)


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="File to write (created 0600); default: stdout.")  # fmt: skip
@scope_options
@click.pass_obj
def export(options: Options, output: Path | None) -> None:
    """Export one scope's memory as JSON (for `memfold import`)."""
    with options.opened() as mem:
        explain_missing(mem, options, mem.get(**options.scope))
        text = json.dumps(mem.export(**options.scope), ensure_ascii=False, indent=2)
    if output is None:
        click.echo(text)
    else:
        write_private(output, text + "\n")
        note(f"wrote {output}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@scope_options
@click.pass_obj
def users(options: Options, as_json: bool) -> None:
    """List the users with stored memory, their agents and fact counts."""
    with options.opened() as mem:
        rows: dict[str | None, list[dict[str, Any]]] = {}
        for scope in mem.scopes():
            doc = mem.get(user_id=scope.user_id, agent=scope.agent)
            rows.setdefault(scope.user_id, []).append({
                "agent": scope.agent, "facts": len(doc.facts), "revision": doc.revision,
                "summaries": sum(1 for s in doc.summaries.values() if s.summary.strip()),
            })  # fmt: skip
        where = _where(mem)
    if as_json:
        echo_json([{"userId": user, "scopes": scopes} for user, scopes in rows.items()])
        return
    if not rows:
        note(f"no stored memory in {where}")
        return
    width = max(len(_user_label(user)) for user in rows)
    for user, scopes in rows.items():
        parts = [
            f"{'shared' if s['agent'] is None else s['agent']}: {plural(s['facts'], 'fact')}"
            for s in scopes
        ]
        label = style(_user_label(user).ljust(width), bold=True)
        click.echo(wrap(f"{label}  {' · '.join(parts)}", hanging=" " * (width + 2)))


def _user_label(user: str | None) -> str:
    return "(default user)" if user is None else user


def _extractor_of(config: Any) -> str:
    uses_llm = config.extractor == "llm" or (config.extractor == "auto" and config.llm)
    return "llm" if uses_llm else "rules"


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@scope_options
@click.pass_obj
def status(options: Options, as_json: bool) -> None:
    """Configuration (secrets masked), where it came from, and the queue's state.

    Reads only: a durable queue's pending updates are counted, never run.
    """
    config = options.settings()
    source = config.source_file
    info: dict[str, Any] = {
        "version": __version__,
        "configFile": None if source is None else str(source),
        "extractor": _extractor_of(config),
        "config": config.masked(),
    }
    problem = None
    try:
        with options.opened() as mem:
            info["extractor"] = mem.extractor_name
            info["queue"] = asdict(mem.status()) if config.queue != "memory" else None
    except Exception as exc:  # the configuration is what one needs to see during an outage
        problem = str(exc)
        info["error"] = problem
    if as_json:
        echo_json(info)
    else:
        emit(_status_lines(info, config.queue))
    if problem is not None:
        raise CheckFailed(problem)


def _status_lines(info: dict[str, Any], queue_kind: str) -> list[str]:
    source = info["configFile"] or "none (defaults and MEMFOLD_* variables)"
    lines = [
        f"memfold {info['version']}",
        f"config file: {source}",
        f"extractor: {info['extractor']}",
    ]
    queue = info.get("queue")
    if queue_kind == "memory":
        lines.append("queue: memory (in-process; nothing is queued between CLI runs)")
    elif queue is not None:
        lines.append(
            f"queue: {queue_kind}: {queue['pending']} pending, {queue['in_flight']} running, "
            f"oldest {queue['oldest_pending_age_seconds']:.0f} s (`memfold flush` runs them)"
        )
    lines.append("settings:")
    for key, value in info["config"].items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(wrap(f"{key}: {shown}", indent="  ", hanging="    "))
    return lines
