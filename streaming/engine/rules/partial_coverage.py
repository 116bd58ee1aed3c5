"""PARTIAL_COVERAGE: an auto-created topic left on a subset of the cluster's writable masters,
where it stays."""

from __future__ import annotations

from functools import partial
from typing import Any

from routewatch.alerts import Alert, alert_id
from streaming.engine.alerts import Ending
from streaming.engine.rules.at_risk import AUTO_CREATE_NOTE, replaced
from streaming.engine.rules.base import TopicRule, TopicView, iso, listed
from streaming.engine.rules.topics import OBSERVED, evidence_of

__all__ = ["INFERRED_REMEDY", "PartialCoverage", "coverage_summary", "ended_summary"]

# what the plan says and does not do (docs/alerts.md, "Remedies as plans")
INFERRED_NOTE = (
    "routewatch inferred the auto-creation from the topic's config, which a topic created by "
    "hand on these brokers alone can also have: if the placement is deliberate, silence this "
    "alert instead (routewatch silence {id} --for 90d)."
)

INFERRED_REMEDY = (
    " (routewatch inferred the auto-creation from the topic's config, which a topic created "
    "by hand on these brokers alone can also have: if the placement is deliberate, silence "
    "this alert: `routewatch silence {id} --for 90d`.)"
)

# how an inferred auto-creation is said, by its evidence (docs/alerts.md, Terms)
_INFERRED = {
    "inferred_while_watching": "its auto-creation inferred from a config that appeared while "
    "routewatch watched",
    "inferred_at_start": "its auto-creation inferred from a config found on these brokers "
    "only when routewatch started",
}


def _coverage(evidence: dict[str, Any]) -> tuple[int, int]:
    k, n = evidence["coverage"].split("/")
    return int(k), int(n)


def coverage_summary(topic: str, evidence: dict[str, Any]) -> str:
    """PARTIAL_COVERAGE's sentence, from its evidence alone: the same k and n as its
    ``coverage``, the brokers and NameServers it names, how the auto-creation is known, and the
    producers it lists — nothing it does not hold. At k = 0 the topic has no route left (no
    subset to converge on), which is worse, not settled. Masters routed read-only
    (``read_only_brokers``) are not among the n."""
    k, n = _coverage(evidence)
    read_only = evidence.get("read_only_brokers") or []
    if k:
        namesrvs = sorted(evidence["namesrv_views"])
        ns = "NameServer" if len(namesrvs) == 1 else "NameServers"
        sentence = (
            f"Auto-created topic {topic} is on {k} of {n} brokers "
            f"({listed(evidence['brokers_with_topic'])}) as {ns} {listed(namesrvs)} route it, "
            "and the others will not get it by themselves"
        )
        how = _INFERRED.get(evidence["auto_created_evidence"])
        if how is not None:
            sentence += f" ({how})"
        producers = evidence["producers_with_template_route"]
        if producers:
            sentence += (
                f"; {'producer' if len(producers) == 1 else 'producers'} {listed(producers)} "
                f"still {'holds' if len(producers) == 1 else 'hold'} its template route"
            )
        return sentence + "."
    if read_only:
        verb = "is" if len(read_only) == 1 else "are"
        if n == 0:
            rest = "no writable broker is left"
        elif n == 1:
            rest = "the one writable broker left does not hold it"
        else:
            rest = f"none of the {n} writable brokers left holds it"
        return (
            f"Auto-created topic {topic} has no writable route left: {listed(read_only)} "
            f"{verb} routed read-only (write permission wiped), and {rest}."
        )
    if n == 1:
        left = "the only live broker does not hold it, and will not get it by itself"
    else:
        left = f"none of the {n} live brokers holds it, and none will get it by itself"
    return f"Auto-created topic {topic} has no route left: {left}."


def ended_summary(alert: Alert, opening: dict[str, Any], at: int, n: int) -> str:
    """A resolved PARTIAL_COVERAGE's sentence, in the past tense: how far the topic was short
    when it opened (``opening``: its evidence then), and how that ended."""
    k0, n0 = _coverage(opening)
    was = (
        f"Auto-created topic {alert.topic} was on {k0} of {n0} brokers from {iso(alert.opened_at)}"
    )
    if n == 1:
        return f"{was}; from {iso(at)} the only one left held it."
    if n:
        return f"{was}; from {iso(at)} every one of the {n} held it."
    return f"{was}; from {iso(at)} no writable broker was left to hold it."


class PartialCoverage(TopicRule):
    kind = "PARTIAL_COVERAGE"
    reads = frozenset({"registrations", "namesrvs"})
    auto_created_only = True

    def judge(self, view: TopicView, at: int) -> None:
        """Opens once the topic's coverage is settled on ``0 < k < n`` of the expected masters;
        stays open while ``k != n`` (also at 0), resolves when every one holds it."""
        state = view.state
        assert state is not None
        k, n = len(view.holding & view.expected), len(view.expected)
        key = self.facts.topic_key(self.kind, view.topic)
        settled = self.life.settled(state, at)
        is_open = self.e.book.get(key) is not None
        if (0 < k < n and settled) or (is_open and k != n):
            self._raise(view, at)
        elif is_open:
            self.e.book.resolve(key, at, lambda alert: self._ended(alert, view, at, n))

    def _evidence(self, view: TopicView) -> dict[str, Any]:
        """The topic's coverage as it stands: held by k of the n expected masters, and how."""
        state, holders = view.state, view.holders
        assert state is not None
        holding, expected = view.holding, view.expected
        read_only = sorted(
            {b for (_, b, i), r in self.facts.regs().items() if i == 0 and r.live and r.read_only}
            - expected
        )
        views: dict[str, list[str]] = {}
        for ns, b, _ in holders:
            views.setdefault(ns, []).append(b)
        # masters that held it and expired (their BROKER_EXPIRED names the topic): what lets
        # Alertmanager inhibit this alert while theirs fires (docs/alertmanager.md)
        expired = self.facts.expired_masters()
        if expired:
            held = {b for (_, b, i) in self.e.holders_of(view.topic) if i == 0}
            expired &= held
        return {
            "coverage": f"{len(holding & expected)}/{len(expected)}",
            **({"read_only_brokers": read_only} if read_only else {}),
            "brokers_with_topic": sorted(holding & expected),
            "brokers_without_topic": sorted(expected - holding),
            "namesrv_views": {ns: sorted(set(v)) for ns, v in sorted(views.items())},
            "auto_created_at": state.auto_created_at,
            "auto_created_evidence": evidence_of(state),
            "producers_with_template_route": sorted(state.holders),
            **({"expired_brokers_with_topic": sorted(expired)} if expired else {}),
        }

    def _ended(self, alert: Alert, view: TopicView, at: int, n: int) -> Ending:
        resolution = "on every writable broker" if n else "no writable broker left"
        return Ending(
            ended_summary(alert, self.e.book.opening(alert), at, n),
            {**self._evidence(view), "resolution": resolution},
        )

    def _raise(self, view: TopicView, at: int) -> None:
        topic, state = view.topic, view.state
        assert state is not None
        evidence = self._evidence(view)
        k = len(view.holding & view.expected)
        queues = max((c[1] for c in view.holders.values()), default=4)
        key = self.facts.topic_key(self.kind, topic)
        current = self.e.book.get(key)
        this = alert_id(key, at) if current is None else current.id  # (the id it opens with)
        observed = state.auto_created_how == OBSERVED
        notes = [AUTO_CREATE_NOTE] + ([] if observed else [INFERRED_NOTE.format(id=this)])
        plan = partial(
            self.facts.coverage_plan,
            topic,
            evidence["brokers_with_topic"],
            evidence["brokers_without_topic"],
            queues,
            notes,
        )
        self.e.book.raise_or_update(
            key,
            at,
            severity="critical" if k <= 1 else "warning",
            summary=coverage_summary(topic, evidence),
            evidence=evidence,
            remedy=self.facts.create_everywhere(topic, queues)
            + ("" if observed else INFERRED_REMEDY.format(id=this)),
            plan=plan,
        )
        # (AT_RISK's condition keeps its start: if it still holds when PARTIAL_COVERAGE
        # resolves, AT_RISK opens then, its 5 s counted from that start)
        self.e.book.resolve(
            self.facts.topic_key("AT_RISK", topic),
            at,
            lambda alert: replaced(alert, self.e.book.opening(alert), at),
        )
