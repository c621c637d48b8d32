"""The root ``memfold`` group, the options every command shares, and error handling.

Scope options (``--user``, ``--agent``, ``--home``, ``--config``, ``-v``) are accepted
before or after the subcommand: :func:`scope_options` adds them to a command, and a value
given after the command wins. Nothing heavy is imported at module level (``memfold
--help`` must start fast); commands import ``Memory`` when they run.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, TypeVar

import click

from memfold import __version__

if TYPE_CHECKING:
    from memfold.config import MemoryConfig
    from memfold.memory import Memory

__all__ = [
    "EXIT_CHECK_FAILED",
    "EXIT_USAGE",
    "CheckFailed",
    "InputError",
    "MemfoldGroup",
    "Options",
    "cli",
    "home_options",
    "main",
    "scope_options",
]

#: A check failed or the operation could not be completed (conflicts, a refused import,
#: the store or the LLM failing).
EXIT_CHECK_FAILED = 1
#: A usage or input error (bad option, unreadable file, invalid config or data).
EXIT_USAGE = 2

_F = TypeVar("_F", bound=Callable[..., Any])

#: Words people type for a command, and the command memfold has for it.
_ALIASES = {"delete": "rm", "remove": "rm", "del": "rm", "ls": "list", "get": "show",
            "view": "show", "dump": "export", "load": "import", "reset": "clear",
            "info": "status", "config": "status"}  # fmt: skip


class CheckFailed(click.ClickException):
    """A refusal or failed check: one line on stderr, exit status 1."""

    exit_code = EXIT_CHECK_FAILED


class InputError(click.ClickException):
    """Bad input (an id that does not exist, an unreadable file): one line, exit status 2."""

    exit_code = EXIT_USAGE


class MemfoldGroup(click.Group):
    """A group that suggests the command meant by a misspelt or familiar name, prints its
    help (status 0, no "error:") when run without a command, and imports a command
    registered with :meth:`add_lazy` only when it is run (so ``--help`` stays fast)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy: dict[str, tuple[str, str]] = {}

    def add_lazy(self, name: str, target: str, short_help: str) -> None:
        """Register ``module:attribute`` as the command ``name`` without importing it."""
        self._lazy[name] = (target, short_help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in self._lazy:
            import importlib

            module, _, attribute = self._lazy.pop(cmd_name)[0].partition(":")
            found = getattr(importlib.import_module(module), attribute)
            self.add_command(found, cmd_name)
        return found

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self._lazy:
                rows.append((name, self._lazy[name][1]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            commands = self.list_commands(ctx)
            guess = _ALIASES.get(name.lower())
            if guess not in commands:
                close = difflib.get_close_matches(name, commands, n=1, cutoff=0.6)
                guess = close[0] if close else None
            hint = f"; did you mean '{guess}'?" if guess else ""
            where = ctx.command_path
            raise click.UsageError(
                f"no such command '{name}'{hint} (`{where} --help` lists them)", ctx
            )
        return super().resolve_command(ctx, args)


class ScopeArgs(TypedDict):
    user_id: str | None
    agent: str | None


@dataclass
class Options:
    """What the shared options chose; each command reads it from the click context."""

    home: str | None = None
    config: str | None = None
    user: str | None = None
    agent: str | None = None
    verbose: bool = False
    _settings: MemoryConfig | None = field(default=None, repr=False)

    def settings(self) -> MemoryConfig:
        """The configuration: the config file (``--config``, ``$MEMFOLD_CONFIG`` or
        ``./memfold.yaml``), ``MEMFOLD_*`` variables, then ``--home``."""
        if self._settings is None:
            from memfold.config import MemoryConfig

            self._settings = MemoryConfig.build(self.config, home=self.home)
        return self._settings

    def build_memory(self) -> Memory:
        """A ``Memory`` that runs no queue workers: only ``flush`` runs queued updates."""
        from memfold.memory import Memory

        return Memory(self.settings(), start_workers=False)

    @contextlib.contextmanager
    def opened(self) -> Iterator[Memory]:
        """A ``Memory`` closed without running what is queued (``close(timeout=0)``), so
        a command that reads never becomes a queue worker or calls an LLM."""
        mem = self.build_memory()
        try:
            yield mem
        finally:
            mem.close(timeout=0)

    #: ``with options.memory() as mem:`` is ``opened()`` (the name other modules use).
    memory = opened

    @property
    def scope(self) -> ScopeArgs:
        return {"user_id": self.user, "agent": self.agent}

    def who(self) -> str:
        """``user 'alice', agent 'coder'`` / ``the default user (shared memory)``."""
        user = "the default user" if self.user is None else f"user {self.user!r}"
        return f"{user}, agent {self.agent!r}" if self.agent else f"{user} (shared memory)"

    def command(self, rest: str, *, scoped: bool = True) -> str:
        """A command line for this scope: ``memfold --user alice facts list`` (only the
        ``--home``/``--config`` part when not ``scoped``)."""
        parts = ["memfold"]
        flags = [("--home", self.home), ("--config", self.config)]
        if scoped:
            flags += [("--user", self.user), ("--agent", self.agent)]
        for flag, value in flags:
            if value is not None:
                parts += [flag, _quote(value)]
        return " ".join([*parts, rest])


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


def _reset_logging() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_memfold", False):
            root.removeHandler(handler)
            root.setLevel(handler._memfold_root_level)  # type: ignore[attr-defined]
    logging.getLogger("psycopg.pool").setLevel(logging.NOTSET)


def _configure_logging(verbose: bool) -> None:
    root = logging.getLogger()
    _reset_logging()
    handler = logging.StreamHandler(sys.stderr)
    handler._memfold_root_level = root.level  # type: ignore[attr-defined]
    handler._memfold = True  # type: ignore[attr-defined]
    fmt = (
        "%(levelname)s %(name)s: %(message)s" if verbose else "memfold: %(levelname)s: %(message)s"
    )
    handler.setFormatter(_LowerLevel(fmt))
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    # psycopg's pool logs every failed connection attempt with a multi-line warning;
    # memfold reports the outage itself in one line (shown in full with -v).
    logging.getLogger("psycopg.pool").setLevel(logging.NOTSET if verbose else logging.CRITICAL)


class _LowerLevel(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text.replace(f": {record.levelname}: ", f": {record.levelname.lower()}: ", 1)


def _check_id(value: str | None, flag: str) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter(
            f"{flag} needs an id; leave {flag} out for the default "
            + ("user" if flag == "--user" else "(shared) memory")
        )
    return value


def _store(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None or value is False:
            return
        options = ctx.ensure_object(Options)
        if name in ("user", "agent"):
            value = _check_id(value, f"--{name}")
        setattr(options, name, value)
        options._settings = None
        if name == "verbose":
            _configure_logging(True)

    return callback


#: The options every command takes: flag, ``Options`` field, extra click arguments, help.
_SHARED: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("--home", "home", {}, "Memory folder (default: `home` in the config, else ./.memfold)."),
    ("--config", "config", {"type": click.Path(dir_okay=False)},
     "YAML config (default: $MEMFOLD_CONFIG, else ./memfold.yaml)."),
    ("--user", "user", {}, "User id (default: the single default user)."),
    ("--agent", "agent", {}, "Agent bucket (default: the user's shared memory)."),
)  # fmt: skip


def _with_shared(command: _F, *, hidden: bool, scoped: bool = True) -> _F:
    options = [
        click.option(flag, callback=_store(name), expose_value=False, hidden=hidden,
                     help=text, **extra)
        for flag, name, extra, text in _SHARED
        if scoped or name not in ("user", "agent")
    ]  # fmt: skip
    options.append(
        click.option("-v", "--verbose", is_flag=True, default=None, callback=_store("verbose"),
                     expose_value=False, hidden=hidden, help="Log what memfold does.")
    )  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def scope_options(command: _F) -> _F:
    """Accept ``--user``, ``--agent``, ``--home``, ``--config`` and ``-v`` on a subcommand
    too (they are listed in ``memfold --help``)."""
    return _with_shared(command, hidden=True)


def home_options(command: _F) -> _F:
    """Accept ``--home``, ``--config`` and ``-v`` on a subcommand that names its user
    itself (``forget-user USER``), where ``--user`` would be ambiguous."""
    return _with_shared(command, hidden=True, scoped=False)


def _root_options(command: _F) -> _F:
    return _with_shared(command, hidden=False)


@click.group(
    cls=MemfoldGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Options --user, --agent, --home, --config and -v also work after the command. "
    "Exit status: 0 ok, 1 a check failed (conflicts, refused import, store or LLM "
    "failure), 2 usage or input error.",
)
@_root_options
@click.version_option(__version__, "-V", "--version", prog_name="memfold")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """memfold: long-term user memory for LLM agents."""
    options = ctx.ensure_object(Options)
    if not options.verbose:
        _configure_logging(False)
    help_without_command(ctx)


def help_without_command(ctx: click.Context) -> None:
    """For a group run without its command: print its help and exit 0 (no "error:")."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        ctx.exit(0)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"memfold: error: {message}", err=True)
    sys.exit(code)


def _usage_message(exc: click.UsageError) -> str:
    message = exc.format_message()
    if exc.ctx is not None and "--help" not in message:
        message += f" (see `{exc.ctx.command_path} --help`)"
    return message


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``memfold`` command: one line on stderr for any error, never a
    traceback; exit status 0 ok, 1 check failed, 2 usage or input error."""
    try:
        _run(argv)
    finally:
        _reset_logging()  # main() may run in a host process (tests): leave its logging as it was


def _run(argv: list[str] | None) -> None:
    from memfold.errors import ConfigError, MemfoldError

    try:
        code = cli.main(args=argv, prog_name="memfold", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # a group run without its command
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        sys.exit(0)
    except click.exceptions.Abort:
        fail("aborted; nothing was changed", EXIT_CHECK_FAILED)
    except click.UsageError as exc:
        fail(_usage_message(exc), EXIT_USAGE)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    except MemfoldError as exc:
        # storage, LLM and extraction failures, and input errors that are also ValueErrors
        fail(str(exc), EXIT_USAGE if isinstance(exc, ValueError | KeyError) else EXIT_CHECK_FAILED)
    except (ValueError, TypeError) as exc:
        fail(str(exc), EXIT_USAGE)
    except RecursionError:
        fail("the input is nested too deeply to be memory data", EXIT_USAGE)
    except OSError as exc:
        fail(str(exc), EXIT_CHECK_FAILED)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    if isinstance(code, int) and code:
        sys.exit(code)
