"""Dependencies: the settings, a read-only store per request, and the query-parameter check."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import anyio.to_thread
from fastapi import Depends, Request
from fastapi.dependencies.utils import request_params_to_args
from fastapi.exceptions import RequestValidationError

from api.access import StoreAccess
from api.problems import ProblemError
from api.settings import ApiSettings
from api.topic_cache import TopicCache
from routewatch.store import Store

__all__ = [
    "QUERY_CHECKS",
    "SQLITE_INT_MAX",
    "AccessDep",
    "SettingsDep",
    "StoreDep",
    "TopicCacheDep",
    "check_query_names",
    "check_query_values",
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


def _takes_many(annotation: Any) -> bool:
    """Whether a query parameter's type takes several values (``list[str]``, optional or not)."""
    if get_origin(annotation) in (Union, UnionType):
        return any(_takes_many(a) for a in get_args(annotation))
    return get_origin(annotation) in (list, tuple, set, frozenset)


def _query_params(request: Request) -> list[Any]:
    """The query parameters the request's endpoint declares, its dependencies' included."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    fields: list[Any] = []
    stack = [] if dependant is None else [dependant]
    while stack:
        dep = stack.pop()
        fields.extend(dep.query_params)
        stack.extend(dep.dependencies)
    return fields


async def check_query_names(request: Request) -> None:
    """Refuse query parameters the endpoint does not declare (a typo must not go unnoticed), and
    a parameter of one value given several times (which one would count is a guess: FastAPI
    takes the last, a proxy or another framework may take the first)."""
    fields = _query_params(request)
    known = {param.alias for param in fields}
    many = {param.alias for param in fields if _takes_many(param.field_info.annotation)}
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise ProblemError(
            400,
            "Unknown query parameter",
            f"The query parameter {', '.join(unknown)} is not known here; the ones accepted "
            f"are: {allowed}.",
        )
    repeated = sorted(
        name
        for name in set(request.query_params) - many
        if len(request.query_params.getlist(name)) > 1
    )
    if len(repeated) == 1:
        times = len(request.query_params.getlist(repeated[0]))
        detail = f"The query parameter {repeated[0]} is given {times} times; it takes one value."
    else:
        detail = (
            f"The query parameters {', '.join(repeated)} are given more than once; each takes "
            "one value."
        )
    if repeated:
        raise ProblemError(400, "Repeated query parameter", detail)


async def check_query_values(request: Request) -> None:
    """Refuse query values that do not validate before anything else of the request is done, so
    a bad query is answered as one (422) even when the store is unavailable: FastAPI would find
    them too, but only after the endpoint's other dependencies (the store) were solved."""
    _, errors = request_params_to_args(_query_params(request), request.query_params)
    if errors:
        raise RequestValidationError(errors)


# What every route runs before its own dependencies (``APIRouter(dependencies=QUERY_CHECKS)``).
QUERY_CHECKS = [Depends(check_query_names), Depends(check_query_values)]
