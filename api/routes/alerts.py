"""``/alerts``: queries over current alerts, newest first, with cursor pagination."""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import JSONResponse

from api.access import StoreAccess
from api.deps import (
    QUERY_CHECKS,
    SQLITE_INT_MAX,
    AccessDep,
    SettingsDep,
    StoreDep,
    check_query_names,
    check_query_values,
)
from api.models import AlertPublic, AlertsPublic
from api.problems import PROBLEM_JSON, ProblemError
from api.settings import ApiSettings
from routewatch.alerts import AlertKind, AlertState, Severity
from routewatch.errors import RoutewatchError
from routewatch.remedy.run import run_remedy
from routewatch.store.views import AlertFilter, alert, alerts, decode_cursor

# Each route names its dependencies, in the order they run. Acknowledging and silencing check
# the token right after the query's names (refused first everywhere: a typo, a repeat) and
# before their own parameters, so that a caller without a token is told so (403 or 401) rather
# than about a value for an operation it may not use.
router = APIRouter(prefix="/alerts", tags=["alerts"])


async def require_token(
    settings: SettingsDep, authorization: Annotated[str | None, Header()] = None
) -> str:
    """The caller's token check: constant-time, and a sentence saying what to do on refusal.

    An empty ROUTEWATCH_API_TOKEN counts as unset: otherwise 'Authorization: Bearer ' would pass.
    """
    expected = "" if settings.api_token is None else settings.api_token.get_secret_value()
    if not expected:
        raise ProblemError(
            403,
            "Disabled",
            "Acknowledging and silencing are disabled: set ROUTEWATCH_API_TOKEN to enable them.",
        )
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), expected.encode()):
        raise ProblemError(
            401,
            "Unauthorized",
            "This needs the header 'Authorization: Bearer <ROUTEWATCH_API_TOKEN>'; the token "
            "given is missing or wrong.",
            {"WWW-Authenticate": "Bearer"},  # what a 401 must name (RFC 9110)
        )
    return "token"


AUTHORIZED = [Depends(check_query_names), Depends(require_token), Depends(check_query_values)]


@router.get(
    "", response_model=AlertsPublic, summary="List alerts, newest first", dependencies=QUERY_CHECKS
)
def list_alerts(
    store: StoreDep,
    state: AlertState | None = None,
    kind: AlertKind | None = None,
    severity: Severity | None = None,
    cluster: str | None = None,
    topic: str | None = None,
    broker: str | None = None,
    since: Annotated[
        int | None,
        Query(ge=0, le=SQLITE_INT_MAX, description="epoch ms: alerts active at or after"),
    ] = None,
    until: Annotated[
        int | None, Query(ge=0, le=SQLITE_INT_MAX, description="epoch ms: alerts opened before")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(description="the `next` of the previous page")] = None,
) -> AlertsPublic:
    f = AlertFilter(state, kind, severity, cluster, topic, broker, since, until)
    try:
        if cursor is not None and not 0 <= decode_cursor(cursor)[0] <= SQLITE_INT_MAX:
            raise ValueError("the cursor is not one this API returned")
        page, total, following = alerts(store, f, limit=limit, cursor=cursor)
    except ValueError as exc:
        raise ProblemError(400, "Invalid cursor", f"The cursor is invalid: {exc}.") from None
    return AlertsPublic(data=[AlertPublic(**a) for a in page], count=total, next=following)


def _changed(access: StoreAccess, alert_id: str, **change: Any) -> AlertPublic:
    store = access.open_writable()
    try:
        if alert(store, alert_id) is None:
            raise ProblemError(404, "No such alert", f"There is no alert with id {alert_id}.")
        store.set_ack(alert_id, now_ms=int(time.time() * 1000), **change)
        found = alert(store, alert_id)
    finally:
        store.close()
    assert found is not None
    return AlertPublic(**found)


@router.post(
    "/{alert_id}/ack",
    response_model=AlertPublic,
    summary="Acknowledge an alert",
    dependencies=AUTHORIZED,
)
def ack_alert(
    alert_id: str, access: AccessDep, who: Annotated[str, Depends(require_token)]
) -> AlertPublic:
    return _changed(access, alert_id, acked_by=who)


@router.post(
    "/{alert_id}/silence",
    response_model=AlertPublic,
    summary="Silence an alert",
    dependencies=AUTHORIZED,
)
def silence_alert(
    alert_id: str,
    access: AccessDep,
    until: Annotated[
        int,
        Query(ge=0, le=SQLITE_INT_MAX, description="epoch ms until which the alert is silenced"),
    ],
) -> AlertPublic:
    return _changed(access, alert_id, silenced_until=until)


@router.get(
    "/{alert_id}",
    response_model=AlertPublic,
    summary="One alert, with its evidence",
    dependencies=QUERY_CHECKS,
)
def get_alert(alert_id: str, store: StoreDep) -> AlertPublic:
    found = alert(store, alert_id)
    if found is None:
        raise ProblemError(404, "No such alert", f"There is no alert with id {alert_id}.")
    return AlertPublic(**found)


def token_actor(settings: ApiSettings) -> str:
    """Who ran a remedy through the API, as the audit names them: the token's digest (the
    token itself is never stored)."""
    token = "" if settings.api_token is None else settings.api_token.get_secret_value()
    return f"token:{hashlib.sha256(token.encode()).hexdigest()[:12]}"


@router.post(
    "/{alert_id}/remedy",
    summary="Run an alert's plan on its live cluster: a dry run, or apply it",
    dependencies=AUTHORIZED,
    response_model=None,
    responses={409: {"description": "refused: detail says why, run is the audited run"}},
)
def remedy_alert(
    alert_id: str,
    access: AccessDep,
    settings: SettingsDep,
    apply: Annotated[bool, Query(description="perform the plan and verify it")] = False,
    alternative: Annotated[bool, Query(description="run the plan's alternative")] = False,
    allow_loss: Annotated[
        bool, Query(description="perform steps that could lose data or routes")
    ] = False,
) -> JSONResponse:
    store = access.open_writable()
    try:
        request = settings.request(
            alert_id,
            token_actor(settings),
            apply=apply,
            alternative=alternative,
            allow_loss=allow_loss,
        )
        run = run_remedy(store, request).to_dict()
    except RoutewatchError:
        raise ProblemError(404, "No such alert", f"There is no alert with id {alert_id}.") from None
    finally:
        store.close()
    if run["outcome"] == "refused":
        body = {
            "type": "about:blank",
            "title": "Remedy refused",
            "status": 409,
            "detail": run["refusal"],
            "run": run,
        }
        return JSONResponse(body, status_code=409, media_type=PROBLEM_JSON)
    return JSONResponse(run)
