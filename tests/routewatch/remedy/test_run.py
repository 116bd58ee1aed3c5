"""A remedy's refusals that come before it reads the cluster, on a store the job's own step
filled from a scenario (no Spark, no cluster: the scenario's addresses are the model's, never
asked — every check here refuses before the first request); each run audited. The refusals
that need a live cluster, and every dry run and apply, are in ``test_remedy_on_rocketmq.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from routewatch.remedy.run import Request, run_remedy
from routewatch.store import Store, open_store
from routewatch.store.remedy_runs import record_run, remedy_runs
from streaming.settings import StreamingSettings
from tests.support.stores import EngineJob
from tests.support.traces import arrivals


@pytest.fixture
def store(tmp_path: Path) -> Store:
    settings = StreamingSettings(data_dir=tmp_path, lateness_bound_s=2)
    job = EngineJob(settings)
    job.write([raw for _, _, _, raw in arrivals("broker-side-alerts")])
    return open_store(settings.store_url)


def _one(store: Store, kind: str, state: str = "open") -> dict[str, Any]:
    return next(a for a in store.alerts() if a["kind"] == kind and a["state"] == state)


def _run(store: Store, alert_id: str, **kw: Any) -> tuple[str, str | None]:
    report = run_remedy(store, Request(alert_id, actor="os:tester@here", **kw))
    return report.outcome, report.refusal


def test_a_remedy_of_a_resolved_or_silenced_alert_is_refused_and_audited(store: Store) -> None:
    resolved = next(a for a in store.alerts() if a["state"] == "resolved")
    outcome, refusal = _run(store, resolved["id"], apply=True)
    assert outcome == "refused"
    assert refusal is not None
    assert refusal.startswith(f"Alert {resolved['id']} was resolved at ")
    assert refusal.endswith(": there is nothing to remedy.")

    alert = _one(store, "PARTIAL_COVERAGE")
    store.set_ack(alert["id"], silenced_until=4_000_000_000_000, now_ms=1)
    outcome, refusal = _run(store, alert["id"])
    assert outcome == "refused"
    assert refusal == (
        f"Alert {alert['id']} is silenced until 2096-10-02T07:06:40.000Z (by routewatch): lift "
        f"the silence first (routewatch silence {alert['id']} --lift)."
    )
    runs = remedy_runs(store)
    assert [(r["alert_id"], r["mode"], r["outcome"]) for r in runs] == [
        (alert["id"], "dry_run", "refused"),
        (resolved["id"], "apply", "refused"),
    ]
    assert {r["actor"] for r in runs} == {"os:tester@here"}


def test_a_remedy_without_an_alternative_or_of_an_unseen_broker_is_refused(store: Store) -> None:
    alert = _one(store, "PARTIAL_COVERAGE")
    assert alert["plan"]["alternative"] is None
    assert _run(store, alert["id"], alternative=True) == (
        "refused",
        f"The plan of alert {alert['id']} has no alternative: run it without --alternative.",
    )
    plan = alert["plan"]
    plan["steps"][0]["addr"] = "127.0.0.1:1"
    with store.transaction() as db:
        db.execute(
            "UPDATE alerts SET plan = ? WHERE id = ?", (orjson.dumps(plan).decode(), alert["id"])
        )
    broker = plan["steps"][0]["broker"]
    assert _run(store, alert["id"]) == (
        "refused",
        f"Broker {broker} at 127.0.0.1:1 was never seen by the collector as a master of cluster "
        f"{alert['cluster']}: routewatch acts only on the cluster it watches.",
    )


def test_an_apply_after_a_dry_run_of_another_plan_is_refused(store: Store) -> None:
    alert = _one(store, "PARTIAL_COVERAGE")
    earlier = {**alert["plan"], "notes": ["the plan as it was"]}
    record_run(
        store,
        {
            "alert_id": alert["id"],
            "cluster": alert["cluster"],
            "kind": alert["kind"],
            "mode": "dry_run",
            "alternative": False,
            "actor": "os:tester@here",
            "started_at": 1_000,
            "ended_at": 1_001,
            "outcome": "dry run",
            "refusal": None,
            "plan": earlier,
            "steps": [],
        },
    )
    assert _run(store, alert["id"], apply=True) == (
        "refused",
        f"The plan of alert {alert['id']} changed since your dry run at "
        "1970-01-01T00:00:01.000Z (the cluster changed): run the dry run again and check it "
        "before you apply.",
    )
