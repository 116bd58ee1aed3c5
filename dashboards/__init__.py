"""The Grafana dashboard (generated from code) and the Prometheus rules over the metrics."""

from pathlib import Path

__all__ = ["DASHBOARD_FILE", "RULES_FILE", "RULES_TEST_FILE"]

HERE = Path(__file__).resolve().parent
DASHBOARD_FILE = HERE / "grafana" / "routewatch.json"
RULES_FILE = HERE / "prometheus" / "routewatch.rules.yml"
RULES_TEST_FILE = HERE / "prometheus" / "routewatch.rules.test.yml"
