"""What the ``memfold history``, ``why``, ``summary`` and ``forget-user`` commands do, thin
over ``Memory.history``, ``explain``, ``set_summary`` and ``forget_user``; text from
:mod:`memfold._cli_audit`. The commands themselves are declared in
:mod:`memfold.cli._audit`, which the CLI imports only when one of them runs."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Protocol

import click

from memfold import _cli_audit as text
from memfold.edits import section_name
from memfold.model import SUMMARY_SECTIONS

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from memfold.context_report import ContextReport
    from memfold.memory import Memory

__all__ = [
    "forget_user_command",
    "history_command",
    "print_report",
    "summary_clear_command",
    "summary_edit_command",
    "summary_show_command",
    "why_command",
]


class _Scoped(Protocol):
    """What the CLI's options object gives a command: the scope, and a ``Memory`` to use
    in a ``with`` block (closed without running queued updates)."""

    @property
    def scope(self) -> Any: ...

    def memory(self) -> AbstractContextManager[Memory]: ...


def _dump(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def print_report(report: ContextReport, *, as_json: bool) -> None:
    """``memfold context --explain``: a table, or the report as JSON."""
    if as_json:
        _dump(report.to_dict())
    else:
        click.echo(text.report_table(report))


def history_command(options: _Scoped, fact_id: str | None, limit: int, as_json: bool) -> None:
    with options.memory() as mem:
        events = mem.history(**options.scope, fact_id=fact_id, limit=limit)
    if as_json:
        _dump([e.to_dict() for e in events])
    elif not events:
        click.echo("(no history)" if fact_id is None else f"(no history for {fact_id})")
    else:
        click.echo("\n".join(text.event_line(e) for e in events))


def why_command(options: _Scoped, fact_id: str, as_json: bool) -> None:
    with options.memory() as mem:
        found = mem.explain(fact_id, **options.scope)
    if as_json:
        _dump(found.to_dict())
    else:
        click.echo(text.provenance_text(found))


def summary_show_command(options: _Scoped, section: str | None, as_json: bool) -> None:
    names = SUMMARY_SECTIONS if section is None else (section_name(section),)
    with options.memory() as mem:
        doc = mem.get(**options.scope)
    if as_json:
        _dump({n: doc.summary(n) for n in names})
    else:
        click.echo(text.summaries_text(doc, names))


def summary_edit_command(options: _Scoped, section: str, new_text: str | None) -> None:
    name = section_name(section)
    if new_text is None or new_text == "-":
        with options.memory() as mem:
            current = mem.get(**options.scope).summary(name)
        if new_text is None and sys.stdin.isatty():
            new_text = click.edit(current, extension=".txt")
            if new_text is None:
                raise click.ClickException(f"{name} unchanged (the editor was closed unsaved)")
        else:
            new_text = sys.stdin.read()
    with options.memory() as mem:
        summary = mem.set_summary(name, new_text, **options.scope)
    click.echo(f"{name}: {summary.summary or '(empty)'}")


def summary_clear_command(options: _Scoped, section: str) -> None:
    name = section_name(section)
    with options.memory() as mem:
        mem.set_summary(name, "", **options.scope)
    click.echo(f"{name} cleared")


def forget_user_command(
    options: _Scoped, user: str | None, default_user: bool, yes: bool, as_json: bool
) -> None:
    if (user is None) == (not default_user):
        raise click.UsageError("name the USER to erase, or pass --default-user (not both)")
    who = "the default user" if user is None else f"user {user!r}"
    if not yes:
        click.confirm(
            f"Erase every memory, history and queued update of {who}, for good?", abort=True
        )
    with options.memory() as mem:
        report = mem.forget_user(user)
    if as_json:
        _dump(report.to_dict())
    else:
        click.echo(
            f"erased {who}: {report.scopes} scope(s), {report.queued_updates} queued update(s)"
        )
