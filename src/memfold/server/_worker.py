"""The app factory each ``memfold serve`` worker process calls (uvicorn ``factory=True``)."""

from __future__ import annotations

import json
import os

from fastapi import FastAPI

from memfold.config import MemoryConfig
from memfold.server import SETTINGS_ENV
from memfold.server.app import create_app

__all__ = ["app_from_environment"]


def app_from_environment() -> FastAPI:
    """The app for the configuration ``memfold serve`` resolved (or ``MemoryConfig.build()``
    when started by another launcher)."""
    settings = os.environ.get(SETTINGS_ENV)
    config = MemoryConfig.validated(json.loads(settings)) if settings else MemoryConfig.build()
    return create_app(config=config)
