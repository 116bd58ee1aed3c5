"""The registry of rules: one module per alert kind of the contract, and every list of kinds and
thresholds derived from it."""

from __future__ import annotations

import re
from pathlib import Path

from routewatch.alerts import ALERT_KINDS
from streaming.engine.cluster import ClusterEngine
from streaming.engine.rules import KEEPING_KINDS, REGISTRY
from streaming.engine.rules.base import HAPPENINGS
from streaming.engine.rules.failures import FailureRule

ROOT = Path(__file__).resolve().parents[4]


def test_every_kind_of_the_contract_has_one_rule_in_a_module_of_its_own() -> None:
    kinds = [rule.kind for rule in REGISTRY]

    assert sorted(kinds) == sorted(ALERT_KINDS)
    assert len(set(kinds)) == len(kinds)
    for rule in REGISTRY:
        assert rule.__module__ == f"streaming.engine.rules.{rule.kind.lower()}"


def test_every_hook_a_rule_defines_is_a_happening_the_engine_reports() -> None:
    hooks = {
        (rule.kind, name)
        for rule in REGISTRY
        for name in dir(rule)
        if name.startswith("on_") and callable(getattr(rule, name))
    }

    assert {name for _, name in hooks} <= {f"on_{h}" for h in HAPPENINGS}, hooks
    # and each happening the engine reports reaches some rule
    assert {name for _, name in hooks} == {f"on_{h}" for h in HAPPENINGS}


def test_a_broker_or_cluster_rule_hears_the_head_shard_alone() -> None:
    head, other = ClusterEngine("C"), ClusterEngine("C", shard=1, shards=2)

    def kinds(engine: ClusterEngine, happening: str) -> list[str]:
        return [getattr(on, "__self__").kind for on in engine.rules.on[happening]]  # noqa: B009

    assert kinds(head, "broker_heard") == ["BROKER_EXPIRED"]
    assert kinds(head, "namesrvs_reached") == ["NAMESRV_DIVERGENCE", "NAMESRV_UNREACHABLE"]
    assert kinds(other, "broker_heard") == kinds(other, "namesrvs_reached") == []
    assert kinds(other, "send_succeeded") == ["NO_ROUTE_INFO"]


def test_every_kind_has_its_own_tests_beside_this_module() -> None:
    for rule in REGISTRY:
        tests = Path(__file__).with_name(f"test_{rule.kind.lower()}.py")
        assert tests.is_file(), f"{rule.kind} has no tests in {tests.name}"
        assert re.search(r"^def test_", tests.read_text(), re.MULTILINE)


def test_the_kinds_that_keep_a_topic_are_the_topic_scoped_ones() -> None:
    assert set(KEEPING_KINDS) == {
        "PARTIAL_COVERAGE",
        "AT_RISK",
        "QUEUE_SKEW",
        "NO_ROUTE_INFO",
        "SEND_REJECTED",
        "STALE_ROUTE",
    }


def test_every_threshold_scheduled_in_the_engine_is_one_the_rules_cross() -> None:
    engine = ClusterEngine("C")
    sources = [
        ROOT / "streaming/engine/cluster.py",
        *(ROOT / "streaming/engine/rules").glob("*.py"),
    ]
    scheduled = {
        name
        for source in sources
        for name in re.findall(r'schedule\([^()]*?,\s*"([a-z_]+)"', source.read_text())
    }

    # (the failure rules schedule their quiet period under their record's name)
    scheduled |= {rule.record for rule in REGISTRY if issubclass(rule, FailureRule)}

    assert {"expire", "linger", "diverge", "at_risk", "settle", "forget"} <= scheduled
    assert scheduled <= engine.rules.thresholds()


def test_the_docs_table_says_what_each_rule_reads() -> None:
    text = (ROOT / "docs/streaming.md").read_text()
    rows = re.findall(r"^\| ([A-Z_]+) \| (topic|broker|cluster) \| ([^|]+) \|$", text, re.M)
    documented = {
        kind: (scope, set() if reads.strip() == "—" else set(reads.strip().split(", ")))
        for kind, scope, reads in rows
    }

    assert documented == {rule.kind: (rule.scope, set(rule.reads)) for rule in REGISTRY}
