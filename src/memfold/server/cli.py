"""``memfold serve`` and ``memfold api-key``: run the REST API and web page, make keys.

Registered lazily by :mod:`memfold.cli`. Importing this module needs only click: FastAPI
and uvicorn are imported when ``serve`` runs, so the CLI works without the ``server`` extra.
"""

from __future__ import annotations

import ipaddress
import json
import os
from typing import Any

import click

from memfold.cli._app import Options, home_options
from memfold.config import MemoryConfig
from memfold.errors import ConfigError
from memfold.server import SETTINGS_ENV
from memfold.server.keys import hash_key, new_key

__all__ = ["api_key", "check_bind", "serve"]

_WORKER_FACTORY = "memfold.server._worker:app_from_environment"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, config: MemoryConfig, workers: int) -> None:
    """Refuse settings that would expose memory or split it between processes.

    Raises:
        ConfigError: a non-loopback ``host`` without API keys, or several workers on a
            store that lives in one process.
    """
    from memfold.server.auth import Authenticator

    auth = Authenticator(config.server)
    if not is_loopback(host) and not auth.has_keys:
        raise ConfigError(
            f"refusing to serve on {host} without API keys: anyone who reaches it could "
            "read every user's memory. Make a key with `memfold api-key --admin` and put its "
            "sha256 in server.api_keys (or the key in $MEMFOLD_API_KEYS), or serve on 127.0.0.1",
            key="server.api_keys",
        )
    if workers > 1 and config.storage == "memory":
        raise ConfigError(
            f"--workers {workers} with storage=memory: each worker would keep its own memory; "
            "use one worker or storage json, sqlite or postgres",
            key="storage",
        )


@click.command()
@home_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Worker processes (use a SQLite or PostgreSQL queue with more than one).",
)
@click.option(
    "--timeout-keep-alive",
    type=click.IntRange(1, 3600),
    default=75,
    show_default=True,
    help="Seconds an idle connection stays open (keep it above your proxy's idle timeout).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@click.pass_obj
def serve(  # noqa: PLR0917 (click passes options positionally)
    options: Options, host: str, port: int, workers: int, timeout_keep_alive: int, log_level: str
) -> None:
    """Serve the REST API (/api/v1) and the memory web page (/) with uvicorn."""
    config = options.settings()
    check_bind(host, config, workers)
    try:
        import uvicorn

        import memfold.server.app  # noqa: F401 (fail here, with the hint, when FastAPI is missing)
        from memfold.server._protocol import NoDelayH11Protocol
    except ImportError as exc:
        raise ConfigError(
            f"memfold serve needs the server extra ({exc.name} is missing): "
            "pip install 'memfold[server]'"
        ) from exc
    os.environ[SETTINGS_ENV] = json.dumps(config.model_dump(mode="json"))
    click.echo(f"memfold serve: http://{host}:{port}/ ({workers} worker(s))", err=True)
    uvicorn.run(
        _WORKER_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        timeout_keep_alive=timeout_keep_alive,
        proxy_headers=False,  # the client address decides trust in the proxy header
        http=NoDelayH11Protocol,
    )


@click.command(name="api-key")
@click.option("--admin", is_flag=True, help="A key that reaches every user.")
@click.option("--user", "user_id", help="Bind the key to this user only.")
@click.option("--name", help="A label for logs (e.g. who holds the key).")
def api_key(admin: bool, user_id: str | None, name: str | None) -> None:
    """Make a new API key for memfold serve and print how to configure it."""
    if admin == (user_id is not None):
        raise click.UsageError("pass either --admin or --user USER_ID")
    key = new_key()
    entry: dict[str, Any] = {"sha256": hash_key(key)}
    entry.update({"admin": True} if admin else {"user_id": user_id})
    if name:
        entry["name"] = name
    line = "admin:" + key if admin else f"user:{user_id}:{key}"
    click.echo(f"key: {key}")
    click.echo("give the key to its holder once; memfold keeps only its hash.\n")
    click.echo("memfold.yaml (the hash, safe to commit):")
    click.echo("server:\n  api_keys:\n    - " + json.dumps(entry, ensure_ascii=False))
    click.echo(f"\nor in $MEMFOLD_API_KEYS / server.api_keys_file:\n{line}")
