"""Dependencies: the settings, a read-only store per request, and the query-parameter check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request

from api.problems import ProblemError
from api.settings import ApiSettings
from routewatch.store import Store, StoreUnavailableError

__all__ = ["SettingsDep", "StoreDep", "reject_unknown_params"]


def get_settings(request: Request) -> ApiSettings:
    settings: ApiSettings = request.app.state.settings
    return settings


SettingsDep = Annotated[ApiSettings, Depends(get_settings)]


def get_store(settings: SettingsDep) -> Iterator[Store]:
    path = Path(settings.store_url.removeprefix("sqlite:///"))
    if not path.exists():
        raise StoreUnavailableError(
            f"The store {path} does not exist yet: start the stream job (routewatch stream)."
        )
    store = Store(settings.store_url, readonly=True, timeout_s=5.0)
    try:
        yield store
    finally:
        store.close()


StoreDep = Annotated[Store, Depends(get_store)]


def reject_unknown_params(request: Request) -> None:
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
