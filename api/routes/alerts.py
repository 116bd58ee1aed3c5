"""``/alerts``: queries over current alerts, newest first, with cursor pagination."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.deps import StoreDep, reject_unknown_params
from api.models import AlertPublic, AlertsPublic
from api.problems import ProblemError
from routewatch.store.views import AlertFilter, alert, alerts

router = APIRouter(prefix="/alerts", tags=["alerts"], dependencies=[Depends(reject_unknown_params)])


@router.get("", response_model=AlertsPublic, summary="List alerts, newest first")
def list_alerts(
    store: StoreDep,
    state: Annotated[str | None, Query(pattern="^(open|resolved)$")] = None,
    kind: str | None = None,
    severity: Annotated[str | None, Query(pattern="^(critical|warning|info)$")] = None,
    cluster: str | None = None,
    topic: str | None = None,
    broker: str | None = None,
    since: Annotated[int | None, Query(description="epoch ms: alerts active at or after")] = None,
    until: Annotated[int | None, Query(description="epoch ms: alerts opened before")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(description="the `next` of the previous page")] = None,
) -> AlertsPublic:
    f = AlertFilter(state, kind, severity, cluster, topic, broker, since, until)
    try:
        page, total, following = alerts(store, f, limit=limit, cursor=cursor)
    except ValueError as exc:
        raise ProblemError(400, "Invalid cursor", f"The cursor is invalid: {exc}.") from None
    return AlertsPublic(data=[AlertPublic(**a) for a in page], count=total, next=following)


@router.get("/{alert_id}", response_model=AlertPublic, summary="One alert, with its evidence")
def get_alert(alert_id: str, store: StoreDep) -> AlertPublic:
    found = alert(store, alert_id)
    if found is None:
        raise ProblemError(404, "No such alert", f"There is no alert with id {alert_id}.")
    return AlertPublic(**found)
