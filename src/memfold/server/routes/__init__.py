"""The REST API's routers, one file per part of it."""
