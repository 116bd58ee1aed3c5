"""The shipped Alertmanager configuration (dashboards/alertmanager/alertmanager.yml): valid to
Debian's amtool, and its inhibition rules, loaded into a real Alertmanager, inhibit what
docs/alertmanager.md says and nothing else."""

from __future__ import annotations

import datetime
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dashboards import ALERTMANAGER_FILE
from routewatch.alertmanager import alert_labels, am_time
from routewatch.testing.alertmanager import Alertmanager, binary, running_alertmanager
from routewatch.testing.processes import free_port, wait_for

pytestmark = pytest.mark.alertmanager


def test_alertmanager_config_is_valid_to_amtool() -> None:
    amtool = shutil.which("amtool", path=str(Path(binary()).parent)) or shutil.which("amtool")
    assert amtool, "amtool (Debian's prometheus-alertmanager) was not found"
    result = subprocess.run(
        [amtool, "check-config", ALERTMANAGER_FILE.name],
        cwd=ALERTMANAGER_FILE.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 inhibit rules" in result.stdout


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    config: dict[str, Any] = yaml.safe_load(ALERTMANAGER_FILE.read_text())
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"http://127.0.0.1:{free_port()}/"
    with running_alertmanager(config, tmp_path / "alertmanager") as am:
        yield am


def _alert(kind: str, cluster: str, **fields: Any) -> dict[str, Any]:
    record = {
        "id": f"{kind.lower()}-{cluster}-{fields.get('topic') or fields.get('broker') or 'c'}",
        "kind": kind,
        "cluster": cluster,
        "severity": fields.pop("severity", "critical"),
        "topic": fields.pop("topic", None),
        "broker": fields.pop("broker", None),
        "evidence": fields.pop("evidence", {}),
    }
    return record


ALERTS = [
    # Silent: its collector is silent; its route alerts page no one, the collector's alert does
    _alert("COLLECTOR_SILENT", "Silent"),
    _alert("PARTIAL_COVERAGE", "Silent", topic="T"),
    _alert("BROKER_EXPIRED", "Silent", broker="a"),
    _alert("NAMESRV_UNREACHABLE", "Silent", severity="warning"),  # (not a route alert)
    # Blind: one NameServer unreachable; its route alerts page no one
    _alert("NAMESRV_UNREACHABLE", "Blind", severity="warning"),
    _alert("STALE_ROUTE", "Blind", topic="T", severity="warning"),
    _alert("QUEUE_SKEW", "Blind", topic="Q", severity="info"),
    # Dying: broker c expired; the topic it held (its broker label) is inhibited, others not
    _alert("BROKER_EXPIRED", "Dying", broker="c"),
    _alert(
        "PARTIAL_COVERAGE",
        "Dying",
        topic="Lost",
        evidence={"coverage": "0/2", "expired_brokers_with_topic": ["c"]},
    ),
    _alert(
        "PARTIAL_COVERAGE",
        "Dying",
        topic="Other",
        evidence={"coverage": "0/2", "expired_brokers_with_topic": ["d"]},
    ),
    _alert("PARTIAL_COVERAGE", "Dying", topic="Stuck", severity="warning"),
    _alert("AT_RISK", "Dying", topic="Lost", severity="warning"),
    # Healthy view: nothing inhibits its alerts
    _alert("PARTIAL_COVERAGE", "Seen", topic="T"),
    _alert("NO_ROUTE_INFO", "Seen", topic="N"),
]
INHIBITED = {
    "partial_coverage-Silent-T",
    "broker_expired-Silent-a",
    "stale_route-Blind-T",
    "queue_skew-Blind-Q",
    "partial_coverage-Dying-Lost",
}


def test_alertmanager_inhibition_rules_inhibit_what_they_say_and_nothing_else(
    alertmanager: Alertmanager,
) -> None:
    import httpx

    now = datetime.datetime.now(datetime.UTC)
    ends = am_time(int((now + datetime.timedelta(hours=1)).timestamp() * 1000))
    body = [{"labels": alert_labels(a), "endsAt": ends} for a in ALERTS]
    httpx.post(f"{alertmanager.url}/api/v2/alerts", json=body, timeout=10).raise_for_status()

    def states() -> dict[str, str]:
        return {a["labels"]["routewatch_id"]: a["status"]["state"] for a in alertmanager.alerts()}

    # (inhibitions are judged as alerts come in: wait until every one has a state)
    wait_for(
        lambda: len(states()) == len(ALERTS) and "unprocessed" not in states().values(),
        30,
        "Alertmanager processing the alerts",
    )
    found = states()
    assert {i for i, s in found.items() if s == "suppressed"} == INHIBITED
    assert {i for i, s in found.items() if s == "active"} == {a["id"] for a in ALERTS} - INHIBITED


def test_the_test_alertmanager_listens_on_loopback_only(alertmanager: Alertmanager) -> None:
    from routewatch.testing.processes import listening_addresses

    assert alertmanager.process is not None
    assert listening_addresses(alertmanager.process.pid) == {("127.0.0.1", alertmanager.port)}
