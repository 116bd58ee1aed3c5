"""Dependencies: the settings, a read-only store per request, and the query-parameter check."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Request

from api.access import StoreAccess
from api.problems import ProblemError
from api.settings import ApiSettings
from api.topic_cache import TopicCache
from routewatch.store import Store

__all__ = [
    "SQLITE_INT_MAX",
    "AccessDep",
    "SettingsDep",
    "StoreDep",
    "TopicCacheDep",
    "reject_unknown_params",
]

# The largest INTEGER SQLite holds: a larger number given as a time or a sequence number cannot be
# bound to a query at all, so such parameters are validated against it (0 ..= SQLITE_INT_MAX).
SQLITE_INT_MAX = 2**63 - 1


async def get_settings(request: Request) -> ApiSettings:
    settings: ApiSettings = request.app.state.settings
    return settings


SettingsDep = Annotated[ApiSettings, Depends(get_settings)]


async def get_access(request: Request) -> StoreAccess:
    access: StoreAccess = request.app.state.store_access
    return access


AccessDep = Annotated[StoreAccess, Depends(get_access)]


async def get_store(access: AccessDep) -> AsyncIterator[Store]:
    """A read-only connection for the request: an idle one, or one opened in a worker thread
    (the store's drivers block). Dependencies here are ``async`` because FastAPI runs a plain
    one in the thread pool, and each hop there cost more than the work it did."""
    store = access.take_reader()
    if store is None:
        store = await anyio.to_thread.run_sync(access.open)
    reusable = False
    try:
        yield store
        reusable = True
    finally:
        access.give_back(store, reusable)


StoreDep = Annotated[Store, Depends(get_store)]


async def get_topic_cache(request: Request) -> TopicCache:
    cache: TopicCache = request.app.state.topic_cache
    return cache


TopicCacheDep = Annotated[TopicCache, Depends(get_topic_cache)]


async def reject_unknown_params(request: Request) -> None:
    """Refuse query parameters the endpoint does not declare (a typo must not go unnoticed)."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    known: set[str] = set()
    stack = [dependant]
    while stack:
        dep = stack.pop()
        known.update(p.alias for p in dep.query_params)
        stack.extend(dep.dependencies)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise ProblemError(
            400,
            "Unknown query parameter",
            f"The query parameter {', '.join(unknown)} is not known here; the ones accepted "
            f"are: {allowed}.",
        )
