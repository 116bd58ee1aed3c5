"""``/healthz`` (the process is up) and ``/readyz`` (the store answers, the job is recent)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from api.deps import AccessDep, SettingsDep, reject_unknown_params
from api.models import Health
from routewatch.store import StoreUnavailableError

router = APIRouter(tags=["health"], dependencies=[Depends(reject_unknown_params)])


@router.get("/healthz", response_model=Health, summary="The API process is up")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    summary="The store answers and the job is recent",
    responses={503: {"model": Health}},
)
def readyz(settings: SettingsDep, access: AccessDep) -> JSONResponse:
    checks: dict[str, str] = {}
    try:
        store = access.open(timeout_s=2.0)
        try:
            with access.reading():
                row = store.db.execute("SELECT MAX(written_at) FROM batches").fetchone()
        finally:
            store.close()
        checks["store"] = "ok"
        last = row[0]
        age = None if last is None else time.time() - last / 1000
        if age is None:
            checks["stream_job"] = "the stream job has not written a batch yet"
        elif age > settings.ready_max_batch_age_s:
            checks["stream_job"] = (
                f"the stream job's last batch is {age:.0f} s old "
                f"(more than {settings.ready_max_batch_age_s:.0f} s)"
            )
        else:
            checks["stream_job"] = "ok"
    except (StoreUnavailableError, OSError) as exc:
        checks["store"] = str(exc).rstrip(".")
    ready = all(v == "ok" for v in checks.values()) and "stream_job" in checks
    body = Health(status="ok" if ready else "not ready", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
