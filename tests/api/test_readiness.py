"""``/readyz``: the job is alive (it reported progress, a batch's or Spark's idle report, within
the bound) and keeps up (its batches have not left input unread for longer); whether input still
arrives is not asked. Over a store written here, without Spark: what the job's listener writes
(``record_progress``, ``record_idle``) at chosen wall-clock times."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from routewatch.settings import load
from routewatch.store import Store, open_store

Report = Callable[[Store], None]


def _ready(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, *reports: tuple[float, Report]
) -> dict[str, Any]:
    """/readyz's answer (status code under ``code``) after each report, made ``ago`` seconds
    before now."""
    store = open_store(f"sqlite:///{data_dir / 'routewatch.db'}")
    try:
        for ago, report in reports:
            at = int((time.time() - ago) * 1000)
            monkeypatch.setattr("routewatch.store.store._now_ms", lambda at=at: at)
            report(store)
    finally:
        store.close()
        monkeypatch.undo()
    client = TestClient(create_app(load(ApiSettings, data_dir=data_dir)))
    response = client.get("/readyz")
    return {"code": response.status_code, **response.json()}


def _batch(batch_id: int, behind: bool = False, job: str = "job") -> Report:
    def report(store: Store) -> None:
        store.write_batch(job, batch_id, [])
        store.record_progress(job, batch_id, 10, 100, behind=behind)

    return report


def _idle(job: str = "job") -> Report:
    return lambda store: store.record_idle(job)


def _stop(failure: str | None = None, job: str = "job") -> Report:
    return lambda store: store.record_stop(job, failure)


def test_an_idle_job_is_ready_however_old_its_last_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the demo after its replay: the last batch 10 minutes ago, Spark's idle report since
    body = _ready(tmp_path, monkeypatch, (600, _batch(0)), (4, _idle()))

    assert body == {"code": 200, "status": "ok", "checks": {"store": "ok", "stream_job": "ok"}}


def test_a_job_that_reports_nothing_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stopped, crashed or stuck in a batch: neither a batch nor an idle report for 300 s
    body = _ready(tmp_path, monkeypatch, (310, _batch(0)), (300, _idle()))

    assert body["code"] == 503 and body["status"] == "not ready"
    assert body["checks"] == {
        "store": "ok",
        "stream_job": "the stream job has reported no progress for 300 s (more than 120 s): it "
        "was killed, or is stuck in a batch",
    }


def test_a_job_whose_batches_leave_input_unread_for_longer_than_the_bound_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    behind = [(150 - i, _batch(i, behind=True)) for i in range(0, 150, 10)]

    body = _ready(tmp_path, monkeypatch, *behind)

    assert body["code"] == 503
    assert body["checks"]["stream_job"] == (
        "the stream job has left input unread after each batch for 150 s (more than 120 s): it "
        "is not keeping up"
    )


def test_a_backlog_drained_within_the_bound_leaves_the_job_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draining = [(60 - i, _batch(i, behind=True)) for i in range(0, 60, 10)]
    drained = [(200, _batch(0, behind=True)), (1, _batch(1))]

    assert _ready(tmp_path / "draining", monkeypatch, *draining)["code"] == 200
    assert _ready(tmp_path / "drained", monkeypatch, *drained)["code"] == 200


def test_a_job_that_has_not_reported_yet_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = _ready(tmp_path, monkeypatch)

    assert body["code"] == 503
    assert body["checks"]["stream_job"] == "the stream job has not reported progress yet"


def test_the_job_that_reported_last_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a spool job stopped long ago, and the Kafka job that replaced it, idle
    body = _ready(tmp_path, monkeypatch, (3_600, _batch(0, job="spool")), (5, _idle(job="kafka")))

    assert body["code"] == 200


def test_a_job_that_recorded_its_stop_is_not_ready_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped = _ready(tmp_path / "stopped", monkeypatch, (6, _idle()), (5, _stop()))
    failed = _ready(
        tmp_path / "failed", monkeypatch, (6, _batch(0)), (5, _stop("OSError: disk full"))
    )

    assert stopped["code"] == failed["code"] == 503
    assert re.fullmatch(r"the stream job stopped \d+ s ago", stopped["checks"]["stream_job"])
    assert re.fullmatch(
        r"the stream job failed \d+ s ago: OSError: disk full", failed["checks"]["stream_job"]
    )


def test_a_job_stopped_beside_one_that_runs_leaves_it_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the spool job stopped after the Kafka job's last idle report; the Kafka job runs on
    body = _ready(tmp_path, monkeypatch, (5, _idle(job="kafka")), (2, _stop(job="spool")))
    assert body["code"] == 200

    # ... until it falls silent: the newest of the two is said
    silent = _ready(tmp_path, monkeypatch, (300, _idle(job="kafka")))
    assert re.fullmatch(r"the stream job stopped \d+ s ago", silent["checks"]["stream_job"])
    restarted = _ready(tmp_path, monkeypatch, (200, _idle(job="spool")))
    assert restarted["checks"]["stream_job"].startswith(
        "the stream job has reported no progress for 200 s"
    )
