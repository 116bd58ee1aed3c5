"""The Prometheus rules are valid and pass their unit tests, with Debian's real promtool."""

from __future__ import annotations

import subprocess

from dashboards import RULES_FILE, RULES_TEST_FILE
from routewatch.testing.prometheus import binary


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary("promtool"), *args],
        cwd=RULES_FILE.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_rules_check() -> None:
    result = _promtool("check", "rules", RULES_FILE.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_rules_unit_tests() -> None:
    result = _promtool("test", "rules", RULES_TEST_FILE.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_example_prometheus_config_is_valid() -> None:
    result = _promtool("check", "config", "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_rule_unit_test_fails(tmp_path: object) -> None:
    # The unit tests can fail: the same file with one expectation changed does.
    from pathlib import Path

    tmp = Path(str(tmp_path))
    (tmp / RULES_FILE.name).write_text(RULES_FILE.read_text())
    broken = RULES_TEST_FILE.read_text().replace("value: 2\n", "value: 3\n", 1)
    assert broken != RULES_TEST_FILE.read_text()
    (tmp / "broken.test.yml").write_text(broken)
    result = subprocess.run(
        [binary("promtool"), "test", "rules", "broken.test.yml"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "FAILED" in result.stdout + result.stderr  # an expectation failed, not the loading


def test_per_alert_rules_make_one_alertmanager_alert_per_kind_with_the_push_labels() -> None:
    """One rule per kind, named after it, over its own series, dropping exactly the labels the
    scrape adds (instance, job) and kind (alertname is the kind): the labels of the push."""
    import yaml

    from routewatch.alerts import ALERT_KINDS

    groups = {g["name"]: g["rules"] for g in yaml.safe_load(RULES_FILE.read_text())["groups"]}
    per_alert = groups["routewatch.alerts.per-alert"]
    assert [r["alert"] for r in per_alert] == list(ALERT_KINDS)
    for rule in per_alert:
        kind = rule["alert"]
        assert rule["expr"] == (
            f'max without (instance, job, kind) (routewatch_alert_open{{kind="{kind}"}}) > 0'
        )
        assert "labels" not in rule and "for" not in rule  # its own severity, at once
        assert rule["annotations"]["runbook_url"].endswith(f"/runbook#{kind.lower()}")
    # no other rule pages for routewatch's alerts a second time
    others = [
        r
        for name, rules in groups.items()
        if name != "routewatch.alerts.per-alert"
        for r in rules
        if "alert" in r
    ]
    assert not any("routewatch_alerts_open" in r["expr"] for r in others)
    assert not any("routewatch_topic_coverage_ratio" in r["expr"] for r in others)
    assert not any("routewatch_broker_up" in r["expr"] for r in others)
