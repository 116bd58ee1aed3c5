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
