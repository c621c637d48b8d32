"""``create_app``: the FastAPI app of ``memfold serve`` (REST API + the web page).

Routes live under ``/api/v1`` (OpenAPI at ``/api/v1/openapi.json``); the page is ``/``
with its files under ``/static``. Sub-apps (the MCP transport) are added through
``extensions`` and share the app's memory and authentication.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from importlib import resources

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from memfold import __version__
from memfold.config import MemoryConfig
from memfold.memory import Memory
from memfold.server.errors import COMMON_ERRORS, install_error_handlers
from memfold.server.limits import BodyLimit
from memfold.server.routes import reads, scope, system, users
from memfold.server.state import Extension, ServerState

__all__ = ["API_PREFIX", "create_app"]

logger = logging.getLogger("memfold.server")

API_PREFIX = "/api/v1"
_STATIC = resources.files("memfold.server") / "static"


def create_app(
    memory: Memory | None = None,
    config: MemoryConfig | None = None,
    *,
    extensions: Sequence[Extension] = (),
) -> FastAPI:
    """The ASGI app serving ``memory`` (or a ``Memory`` built from ``config``, else from
    ``MemoryConfig.build()``: ``./memfold.yaml`` and ``MEMFOLD_*``).

    An app given a ``memory`` leaves closing it to the caller; one that builds its own
    opens it at startup and closes it (draining the queue) at shutdown.

    Raises:
        ConfigError: the configuration or the API keys are invalid.
        ValueError: both ``memory`` and a different ``config`` were given.
    """
    if memory is not None and config is not None and config != memory.config:
        raise ValueError("pass a memory or a config, not both: the memory has its own config")
    if memory is not None:
        config = memory.config
    elif config is None:
        config = MemoryConfig.build()
    state = ServerState(config, memory)
    contexts: list[AbstractAsyncContextManager[None]] = []

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.open()  # the store, and a durable queue's workers, start now
        async with AsyncExitStack() as stack:
            for context in contexts:
                await stack.enter_async_context(context)
            try:
                yield
            finally:
                await stack.aclose()
                if not state.close():
                    logger.warning("memfold serve: the queue did not drain before shutdown")

    app = FastAPI(
        title="memfold",
        version=__version__,
        description="Long-term user memory for LLM agents: read, correct and feed it.",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # the Swagger page loads its files from a CDN: nothing loads at run time
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.memfold = state
    install_error_handlers(app)
    app.add_middleware(
        BodyLimit,
        max_bytes=config.server.max_body_bytes,
        max_import_bytes=config.server.max_import_bytes,
    )
    for router in (system.router, users.router, scope.router, reads.router):
        app.include_router(router, prefix=API_PREFIX, responses=COMMON_ERRORS)
    _add_page(app)
    for extension in extensions:
        context = extension(app, state)
        if context is not None:
            contexts.append(context)
    return app


def _add_page(app: FastAPI) -> None:
    index = (_STATIC / "index.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(index, headers=_PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=str(_STATIC)), name="static")


#: The page loads nothing from elsewhere and may not be framed.
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
