"""The committed dashboard is what the code generates, queries only documented metrics, and tells
the on-call operator what to do from every panel."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dashboards import DASHBOARD_FILE, RULES_FILE
from dashboards.__main__ import main
from dashboards.routewatch_dashboard import dashboard_json
from tests.support import grafana

REPO = DASHBOARD_FILE.parents[2]


@pytest.fixture(scope="module")
def board() -> dict[str, Any]:
    return grafana.load(DASHBOARD_FILE)


def _recorded(rules: dict[str, Any]) -> set[str]:
    return {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}


def test_the_committed_json_is_what_the_code_generates() -> None:
    assert DASHBOARD_FILE.read_text() == dashboard_json()
    assert main(["--check"]) == 0


def test_check_fails_with_a_sentence_when_the_json_is_stale(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "routewatch.json"
    stale.write_text("{}\n")
    monkeypatch.setattr("dashboards.__main__.DASHBOARD_FILE", stale)

    assert main(["--check"]) == 1
    assert "run `python -m dashboards` and commit the result" in capsys.readouterr().err


def test_metric_names_in_the_dashboard_are_exactly_those_documented(
    board: dict[str, Any],
) -> None:
    exprs = [t.expr for t in grafana.targets(board)] + list(
        grafana.variable_queries(board).values()
    )
    used = grafana.metric_names(exprs)
    documented = grafana.documented_metrics()
    recorded = _recorded(yaml.safe_load(RULES_FILE.read_text()))

    # Every exported metric has a panel, and a panel queries nothing undocumented; recording
    # rules (names with a colon) are documented and exist, though some serve alerting only.
    assert {n for n in used if ":" not in n} == {n for n in documented if ":" not in n}
    assert {n for n in used if ":" in n} <= recorded & documented


def test_every_recording_rule_is_documented() -> None:
    # The exported names are checked against a live store in tests/api/test_inventory.py.
    documented = grafana.documented_metrics()
    recorded = _recorded(yaml.safe_load(RULES_FILE.read_text()))
    assert {n for n in documented if ":" in n} == recorded


def test_every_panel_says_what_to_do_and_queries_the_chosen_datasource(
    board: dict[str, Any],
) -> None:
    for panel in grafana.panels(board):
        assert len(panel.get("description", "")) > 80, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])


def test_template_variables_for_cluster_and_topic(board: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in board["templating"]["list"]}

    assert variables["datasource"]["query"] == "prometheus"
    for name in ("cluster", "topic"):
        assert variables[name]["multi"] and variables[name]["includeAll"]
        assert variables[name]["allValue"] == ".*"
    assert "$cluster" in variables["topic"]["query"]["query"]
    exprs = " ".join(t.expr for t in grafana.targets(board))
    assert 'cluster=~"$cluster"' in exprs and 'topic=~"$topic"' in exprs


def test_panels_fit_the_grid_without_overlap_and_have_unique_ids(board: dict[str, Any]) -> None:
    cells: set[tuple[int, int]] = set()
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)) and 0 not in ids
    for p in board["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & mine, p["title"]
        cells |= mine


def test_the_dashboard_covers_what_on_call_needs_first(board: dict[str, Any]) -> None:
    titles = [p["title"] for p in grafana.panels(board)]
    types = {p["title"]: p["type"] for p in grafana.panels(board)}

    assert titles[0] == "Open critical alerts"  # top left: the first thing seen
    assert types["Broker up per NameServer"] == "state-timeline"
    assert types["Topics with partial coverage, worst first"] == "table"
    assert board["schemaVersion"] >= 41


def test_provisioning_points_grafana_at_prometheus_and_the_dashboard_folder() -> None:
    provisioning = REPO / "dashboards" / "provisioning"
    datasources = yaml.safe_load((provisioning / "datasources" / "routewatch.yaml").read_text())
    providers = yaml.safe_load((provisioning / "dashboards" / "routewatch.yaml").read_text())

    assert [d["type"] for d in datasources["datasources"]] == ["prometheus"]
    # copied into a Grafana with a default data source already, it does not take its place
    assert [d["isDefault"] for d in datasources["datasources"]] == [False]
    assert providers["providers"][0]["type"] == "file"
    assert providers["providers"][0]["options"]["path"]
