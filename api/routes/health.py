"""``/healthz`` (the process is up) and ``/readyz`` (the store answers, the job is alive and
keeping up)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.deps import QUERY_CHECKS, AccessDep, SettingsDep
from api.models import Health
from routewatch.store import StoreUnavailableError
from routewatch.store.views import ended_job, running_jobs

router = APIRouter(tags=["health"], dependencies=QUERY_CHECKS)


@router.get("/healthz", response_model=Health, summary="The API process is up")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    summary="The store answers, and the stream job is alive and keeping up",
    responses={503: {"model": Health}},
)
def readyz(settings: SettingsDep, access: AccessDep) -> JSONResponse:
    checks: dict[str, str] = {}
    try:
        store = access.open(timeout_s=2.0)
        try:
            jobs = store.jobs()
        finally:
            store.close()
        checks["store"] = "ok"
        checks["stream_job"] = job_check(jobs, time.time() * 1000, settings.ready_max_batch_age_s)
    except (StoreUnavailableError, OSError) as exc:
        checks["store"] = str(exc).rstrip(".")
    ready = all(v == "ok" for v in checks.values()) and "stream_job" in checks
    body = Health(status="ok" if ready else "not ready", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


def job_check(jobs: list[dict[str, Any]], now_ms: float, max_age_s: float) -> str:
    """``ok`` when the job that reported last among those still running (the store's ``jobs``,
    latest report first) is alive — it reported progress, a batch's or Spark's idle report,
    within ``max_age_s`` — and keeps up: its batches have not left input unread for longer
    than that. Else what is wrong, in a phrase: a job's recorded end, stopped or failed
    (:func:`~routewatch.store.views.ended_job`), else the running job's silence. Whether input
    still arrives is not asked: an idle job is ready (the input's age and
    RoutewatchInputStalled tell a stalled input)."""
    if not jobs:
        return "the stream job has not reported progress yet"
    ended = ended_job(jobs, now_ms, max_age_s)
    if ended is not None:
        ago_s = max(now_ms - ended["stopped_at"], 0) / 1000
        if ended["failure"]:
            return f"the stream job failed {ago_s:.0f} s ago: {ended['failure']}"
        return f"the stream job stopped {ago_s:.0f} s ago"
    job = running_jobs(jobs)[0]  # (none ended: so one runs, or ran)
    silent_s = (now_ms - job["reported_at"]) / 1000
    if silent_s > max_age_s:
        return (
            f"the stream job has reported no progress for {silent_s:.0f} s (more than "
            f"{max_age_s:.0f} s): it was killed, or is stuck in a batch"
        )
    if job["behind_since"] is not None:
        behind_s = (now_ms - job["behind_since"]) / 1000
        if behind_s > max_age_s:
            return (
                f"the stream job has left input unread after each batch for {behind_s:.0f} s "
                f"(more than {max_age_s:.0f} s): it is not keeping up"
            )
    return "ok"
