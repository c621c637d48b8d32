"""``memfold facts list | add | edit | rm``: a person's view and edits of one scope's facts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from memfold.cli._app import (
    InputError,
    MemfoldGroup,
    Options,
    cli,
    help_without_command,
    scope_options,
)
from memfold.cli._output import echo_json, emit, fact_dict, fact_lines
from memfold.cli._read import explain_missing, ordered_facts

__all__ = ["facts"]


@cli.group(cls=MemfoldGroup, invoke_without_command=True)
@scope_options
@click.pass_context
def facts(ctx: click.Context) -> None:
    """List, add, edit and remove facts."""
    help_without_command(ctx)


@contextlib.contextmanager
def _fact_errors(options: Options) -> Iterator[None]:
    """A missing fact id, reworded with the command that lists this scope's facts."""
    from memfold.errors import FactNotFoundError

    try:
        yield
    except FactNotFoundError as exc:
        raise InputError(
            f"no fact {exc.fact_id!r} for {options.who()}; list them with "
            f"`{options.command('facts list')}`"
        ) from None


def _category(options: Options, value: str | None) -> str | None:
    """``value`` lower-cased when it is one of the configured categories."""
    if value is None:
        return None
    category = value.strip().lower()
    known = options.settings().categories
    if category not in known:
        from memfold._config_sources import closest

        guess = closest(category, known)
        hint = f"did you mean {guess!r}? " if guess else ""
        raise InputError(
            f"{value!r} is not a category; {hint}use one of {', '.join(known)} "
            "(or add yours to `categories` in the config)"
        )
    return category


@facts.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with manual flag and dates).")
@scope_options
@click.pass_obj
def facts_list(options: Options, as_json: bool) -> None:
    """List facts, most confident first."""
    with options.opened() as mem:
        document = mem.get(**options.scope)
        explain_missing(mem, options, document)
    ordered = ordered_facts(document)
    if as_json:
        echo_json([fact_dict(f) for f in ordered])
    elif ordered:
        emit(line for fact in ordered for line in fact_lines(fact))


@facts.command(name="add")
@click.argument("content")
@click.option("--category", default="context", show_default=True,
              help="One of the configured categories.")  # fmt: skip
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), default=0.9, show_default=True)
@scope_options
@click.pass_obj
def facts_add(options: Options, content: str, category: str, confidence: float) -> None:
    """Add a manual fact (kept unless the user corrects it)."""
    chosen = _category(options, category) or "context"
    with options.opened() as mem:
        fact = mem.add_fact(content, category=chosen, confidence=confidence, **options.scope)
    click.echo(f"added {fact.id}")


@facts.command(name="edit")
@click.argument("fact_id")
@click.option("--content")
@click.option("--category", help="One of the configured categories.")
@click.option("--confidence", type=click.FloatRange(0.0, 1.0))
@scope_options
@click.pass_obj
def facts_edit(
    options: Options,
    fact_id: str,
    content: str | None,
    category: str | None,
    confidence: float | None,
) -> None:
    """Edit a fact's content, category or confidence (the fact becomes manual)."""
    if content is None and category is None and confidence is None:
        raise click.UsageError("nothing to change: pass --content, --category or --confidence")
    chosen = _category(options, category)
    with options.opened() as mem, _fact_errors(options):
        fact = mem.edit_fact(
            fact_id, content=content, category=chosen, confidence=confidence, **options.scope
        )
    click.echo(f"updated {fact.id}")


@facts.command(name="rm")
@click.argument("fact_id")
@scope_options
@click.pass_obj
def facts_rm(options: Options, fact_id: str) -> None:
    """Remove a fact."""
    with options.opened() as mem, _fact_errors(options):
        mem.delete_fact(fact_id, **options.scope)
    click.echo(f"removed {fact_id}")
