"""``memfold history``, ``why``, ``summary show|edit|clear`` and ``forget-user`` (issue 13).

What they do is in :mod:`memfold._cli_commands`; this module declares them with the
shared scope options. It is imported only when one of them runs (``cli.add_lazy``), so
``memfold --help`` does not load the history and redaction code.
"""

from __future__ import annotations

import click

from memfold import _cli_commands as run
from memfold.cli._app import (
    MemfoldGroup,
    Options,
    help_without_command,
    home_options,
    scope_options,
)

__all__ = ["forget_user", "history", "summary", "why"]


@click.command(name="history")
@click.argument("fact_id", required=False)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON.")
@scope_options
@click.pass_obj
def history(options: Options, fact_id: str | None, limit: int, as_json: bool) -> None:
    """Changes to one scope's memory, newest first (or those of FACT_ID)."""
    run.history_command(options, fact_id, limit, as_json)


@click.command(name="why")
@click.argument("fact_id")
@click.option("--json", "as_json", is_flag=True, help="Print the provenance as JSON.")
@scope_options
@click.pass_obj
def why(options: Options, fact_id: str, as_json: bool) -> None:
    """Where FACT_ID came from, what changed it, what it superseded or replaced it."""
    run.why_command(options, fact_id, as_json)


@click.group(name="summary", cls=MemfoldGroup, invoke_without_command=True)
@scope_options
@click.pass_context
def summary(ctx: click.Context) -> None:
    """Show, edit or clear the summary sections (work, personal, focus, recent, …)."""
    help_without_command(ctx)


@summary.command(name="show")
@click.argument("section", required=False)
@click.option("--json", "as_json", is_flag=True)
@scope_options
@click.pass_obj
def summary_show(options: Options, section: str | None, as_json: bool) -> None:
    """Show every section, or SECTION; held-out sections are marked."""
    run.summary_show_command(options, section, as_json)


@summary.command(name="edit")
@click.argument("section")
@click.argument("new_text", metavar="[TEXT]", required=False)
@scope_options
@click.pass_obj
def summary_edit(options: Options, section: str, new_text: str | None) -> None:
    """Replace SECTION with TEXT (- or a pipe: read stdin; none: open $EDITOR)."""
    run.summary_edit_command(options, section, new_text)


@summary.command(name="clear")
@click.argument("section")
@scope_options
@click.pass_obj
def summary_clear(options: Options, section: str) -> None:
    """Empty SECTION."""
    run.summary_clear_command(options, section)


@click.command(name="forget-user")
@click.argument("user", required=False)
@click.option("--default-user", is_flag=True, help="Erase the default user (no id).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True)
@home_options
@click.pass_obj
def forget_user(
    options: Options, user: str | None, default_user: bool, yes: bool, as_json: bool
) -> None:
    """Erase USER everywhere: every agent's memory, history, queued updates."""
    run.forget_user_command(options, user, default_user, yes, as_json)
