"""``memfold serve``: a REST API over :class:`memfold.Memory` and a web page to see and
correct memory. Needs the ``server`` extra: ``pip install 'memfold[server]'``.

``create_app(memory=None, config=None, *, extensions=())`` returns the FastAPI app.
``memfold.server.auth.Authenticator`` resolves a request's credentials to an admin or a
bound user for any face served over HTTP; an extension ``(app, state) -> context | None``
mounts more (``app.mount("/mcp", ...)``) and reaches ``state.memory`` and ``state.auth``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memfold.errors import ConfigError

if TYPE_CHECKING:
    from memfold.server.app import create_app

__all__ = ["SETTINGS_ENV", "create_app"]

#: How ``memfold serve`` hands the resolved configuration to its uvicorn worker processes.
SETTINGS_ENV = "MEMFOLD_SERVE_SETTINGS"


def __getattr__(name: str) -> Any:
    if name == "create_app":
        try:
            from memfold.server.app import create_app
        except ImportError as exc:  # pragma: no cover - the extra is installed in tests
            raise ConfigError(
                f"memfold serve needs FastAPI and uvicorn ({exc.name} is missing): "
                "pip install 'memfold[server]'"
            ) from exc
        return create_app
    raise AttributeError(f"module 'memfold.server' has no attribute {name!r}")
