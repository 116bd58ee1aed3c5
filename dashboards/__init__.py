"""The Grafana dashboard (generated from code), the Prometheus rules over the metrics, and the
Alertmanager configuration for routewatch's alerts."""

from pathlib import Path

__all__ = ["ALERTMANAGER_FILE", "DASHBOARD_FILE", "RULES_FILE", "RULES_TEST_FILE"]

HERE = Path(__file__).resolve().parent
DASHBOARD_FILE = HERE / "grafana" / "routewatch.json"
RULES_FILE = HERE / "prometheus" / "routewatch.rules.yml"
RULES_TEST_FILE = HERE / "prometheus" / "routewatch.rules.test.yml"
ALERTMANAGER_FILE = HERE / "alertmanager" / "alertmanager.yml"
