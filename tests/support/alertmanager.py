"""What the Alertmanager tests share: the shipped configuration with its pager on a closed port,
a trace whose PARTIAL_COVERAGE changes severity, and what an Alertmanager holds from routewatch."""

from __future__ import annotations

from typing import Any

import yaml

from dashboards import ALERTMANAGER_FILE
from routewatch.alertmanager import labels_key
from routewatch.testing.alertmanager import Alertmanager
from routewatch.testing.processes import free_port
from tests.streaming.engine.events import Trace


def shipped_config() -> dict[str, Any]:
    """dashboards/alertmanager/alertmanager.yml, its pager a closed port of 127.0.0.1."""
    config: dict[str, Any] = yaml.safe_load(ALERTMANAGER_FILE.read_text())
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"http://127.0.0.1:{free_port()}/"
    return config


def severity_flip(cluster: str = "Flip") -> list[dict[str, Any]]:
    """A cluster's events (from 2026-01-01T00:00:00Z): T auto-created on a, then b, of a, b and
    c — PARTIAL_COVERAGE critical at 1/3, warning at 2/3 from 2 s, critical again at 150 s,
    when b expires (1/2)."""
    t = Trace()
    t.every(0, 180, 30, "c")
    t.hb(0, "a")
    t.hb(0, "b")
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.send(2, "T", broker="b", auto_created=True)
    t.hb(2, "b", {"T": 4}, full=False)
    t.every(30, 180, 30, "a", topics={"T": 4})
    t.hb(30, "b", {"T": 4})
    for e in t.events:
        e["cluster"] = cluster
    return sorted(t.events, key=lambda e: e["ts"])


def held(am: Alertmanager) -> dict[str, dict[str, Any]]:
    """What the Alertmanager holds from routewatch, active or suppressed, by labels key."""
    return {
        labels_key(a["labels"]): a
        for a in am.alerts(filter='routewatch_id=~".+"')
        if a["status"]["state"] in ("active", "suppressed")
    }
