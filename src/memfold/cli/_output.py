"""Printing for people and for scripts.

Text output wraps at the terminal's width on whole words (with a hanging indent) and is
coloured when stdout is a terminal (``NO_COLOR`` turns colour off); piped output is
neither wrapped nor coloured, so it stays easy to ``grep``. ``--json`` output is always
plain JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Iterable
from typing import Any

import click

__all__ = [
    "echo_json",
    "emit",
    "fact_dict",
    "fact_lines",
    "is_terminal",
    "note",
    "plural",
    "style",
    "wrap",
]


def is_terminal() -> bool:
    return sys.stdout.isatty()


def _colour() -> bool:
    return is_terminal() and not os.environ.get("NO_COLOR")


def style(text: str, **styles: Any) -> str:
    """``text`` styled (``fg=``, ``bold=``, ``dim=``) when colour is on, else as is."""
    return click.style(text, **styles) if _colour() else text


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 fact``, ``2 facts``, ``1 conversation``; ``many`` for irregular plurals."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"


def width() -> int:
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def wrap(text: str, *, indent: str = "", hanging: str = "") -> str:
    """``text`` wrapped to the terminal on whole words (only when stdout is one)."""
    if not is_terminal():
        return indent + text
    return textwrap.fill(
        text,
        width=width(),
        initial_indent=indent,
        subsequent_indent=hanging or indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def emit(lines: Iterable[str]) -> None:
    click.echo("\n".join(lines))


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def note(message: str) -> None:
    """A remark for the person at the terminal, on stderr, so it never mixes into output
    a script captures."""
    click.echo(f"memfold: {message}", err=True)


def _day(stamp: str) -> str:
    return stamp[:10] if stamp else ""


def fact_lines(fact: Any) -> list[str]:
    """A fact for reading: ``id  [category 0.90] content`` wrapped, then a dim line with
    where it came from (manual or its thread) and when it was added and changed."""
    label = style(f"[{fact.category} {fact.confidence:.2f}]", fg="cyan")
    head = f"  {style(fact.id, dim=True)}  {label} "
    plain = f"  {fact.id}  [{fact.category} {fact.confidence:.2f}] "
    text = fact.content + (f" (avoid: {fact.source_error})" if fact.source_error else "")
    body = wrap(text, indent=" " * len(plain), hanging=" " * len(plain)).lstrip()
    origin = "manual" if fact.is_manual else (f"thread {fact.source}" if fact.source else "")
    when = _day(fact.created_at)
    changed = _day(fact.updated_at)
    if changed and changed != when:
        when = f"{when}, changed {changed}" if when else f"changed {changed}"
    meta = " · ".join(part for part in (origin, f"added {when}" if when else "") if part)
    lines = [head + body]
    if meta:
        lines.append(style(" " * len(plain) + meta, dim=True))
    return lines


def fact_dict(fact: Any) -> dict[str, Any]:
    """A fact for ``--json``: its stored form (as in an export) plus ``manual``."""
    from memfold.model import fact_to_dict

    return {**fact_to_dict(fact), "manual": fact.is_manual}
