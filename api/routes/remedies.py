"""``/remedies``: the audit of every remedy run, dry run or apply (docs/remedies.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from api.deps import QUERY_CHECKS, StoreDep
from routewatch.store.remedy_runs import remedy_runs

router = APIRouter(prefix="/remedies", tags=["alerts"])


@router.get(
    "",
    summary="The audited runs of alerts' plans, newest first",
    dependencies=QUERY_CHECKS,
    response_model=None,
)
def list_remedies(
    store: StoreDep,
    alert_id: Annotated[str | None, Query(description="one alert's runs")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSONResponse:
    return JSONResponse({"data": remedy_runs(store, alert_id=alert_id, limit=limit)})
