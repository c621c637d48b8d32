"""The ``memfold history``, ``why``, ``summary`` and ``forget-user`` commands, thin over
``Memory.history``, ``explain``, ``set_summary`` and ``forget_user``; text from
:mod:`memfold._cli_audit`. ``register`` adds them to the root group."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Protocol

import click

from memfold import _cli_audit as text
from memfold.context_report import ContextReport
from memfold.edits import section_name
from memfold.memory import Memory
from memfold.model import SUMMARY_SECTIONS

__all__ = ["print_report", "register"]


class _Scoped(Protocol):
    """What the CLI's options object gives a command."""

    @property
    def scope(self) -> Any: ...

    def memory(self) -> Memory: ...


def _dump(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def print_report(report: ContextReport, *, as_json: bool) -> None:
    """``memfold context --explain``: a table, or the report as JSON."""
    if as_json:
        _dump(report.to_dict())
    else:
        click.echo(text.report_table(report))


def _history(options: _Scoped, fact_id: str | None, limit: int, as_json: bool) -> None:
    with options.memory() as mem:
        events = mem.history(**options.scope, fact_id=fact_id, limit=limit)
    if as_json:
        _dump([e.to_dict() for e in events])
    elif not events:
        click.echo("(no history)" if fact_id is None else f"(no history for {fact_id})")
    else:
        click.echo("\n".join(text.event_line(e) for e in events))


def _why(options: _Scoped, fact_id: str, as_json: bool) -> None:
    with options.memory() as mem:
        found = mem.explain(fact_id, **options.scope)
    if as_json:
        _dump(found.to_dict())
    else:
        click.echo(text.provenance_text(found))


def _summary_show(options: _Scoped, section: str | None, as_json: bool) -> None:
    names = SUMMARY_SECTIONS if section is None else (section_name(section),)
    with options.memory() as mem:
        doc = mem.get(**options.scope)
    if as_json:
        _dump({n: doc.summary(n) for n in names})
    else:
        click.echo(text.summaries_text(doc, names))


def _summary_edit(options: _Scoped, section: str, new_text: str | None) -> None:
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


def _summary_clear(options: _Scoped, section: str) -> None:
    name = section_name(section)
    with options.memory() as mem:
        mem.set_summary(name, "", **options.scope)
    click.echo(f"{name} cleared")


def _forget_user(
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


def register(cli: click.Group, options: type) -> None:
    """Add the commands to ``cli``; ``options`` is the type of its ``ctx.obj``."""
    pass_options: Callable[[Callable[..., None]], Callable[..., None]]
    pass_options = click.make_pass_decorator(options)

    @cli.command(name="history")
    @click.argument("fact_id", required=False)
    @click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print the events as JSON.")
    @pass_options
    def history(options: _Scoped, fact_id: str | None, limit: int, as_json: bool) -> None:
        """Changes to one scope's memory, newest first (or those of FACT_ID)."""
        _history(options, fact_id, limit, as_json)

    @cli.command(name="why")
    @click.argument("fact_id")
    @click.option("--json", "as_json", is_flag=True, help="Print the provenance as JSON.")
    @pass_options
    def why(options: _Scoped, fact_id: str, as_json: bool) -> None:
        """Where FACT_ID came from, what changed it, what it superseded or replaced it."""
        _why(options, fact_id, as_json)

    @cli.group(name="summary")
    def summary() -> None:
        """Show, edit or clear the summary sections (work, personal, focus, recent, …)."""

    @summary.command(name="show")
    @click.argument("section", required=False)
    @click.option("--json", "as_json", is_flag=True)
    @pass_options
    def summary_show(options: _Scoped, section: str | None, as_json: bool) -> None:
        """Show every section, or SECTION; held-out sections are marked."""
        _summary_show(options, section, as_json)

    @summary.command(name="edit")
    @click.argument("section")
    @click.argument("new_text", metavar="[TEXT]", required=False)
    @pass_options
    def summary_edit(options: _Scoped, section: str, new_text: str | None) -> None:
        """Replace SECTION with TEXT (- or a pipe: read stdin; none: open $EDITOR)."""
        _summary_edit(options, section, new_text)

    @summary.command(name="clear")
    @click.argument("section")
    @pass_options
    def summary_clear(options: _Scoped, section: str) -> None:
        """Empty SECTION."""
        _summary_clear(options, section)

    @cli.command(name="forget-user")
    @click.argument("user", required=False)
    @click.option("--default-user", is_flag=True, help="Erase the default user (no id).")
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @click.option("--json", "as_json", is_flag=True)
    @pass_options
    def forget_user(
        options: _Scoped, user: str | None, default_user: bool, yes: bool, as_json: bool
    ) -> None:
        """Erase USER everywhere: every agent's memory, history, queued updates."""
        _forget_user(options, user, default_user, yes, as_json)
