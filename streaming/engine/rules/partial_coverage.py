"""PARTIAL_COVERAGE: an auto-created topic whose producers' routes converged on a subset of the
cluster's writable masters, where it stays."""

from __future__ import annotations

from streaming.engine.rules.base import TopicRule, TopicView
from streaming.engine.rules.topics import OBSERVED, evidence_of

__all__ = ["INFERRED_REMEDY", "PartialCoverage", "coverage_summary"]

INFERRED_REMEDY = (
    " (routewatch inferred the auto-creation from the topic's config, which a topic created "
    "by hand on these brokers alone can also have: if the placement is deliberate, silence "
    "this alert with POST /alerts/{id}/silence.)"
)


def coverage_summary(topic: str, k: int, n: int, read_only: list[str] | None = None) -> str:
    """PARTIAL_COVERAGE's sentence, from the same k and n as its ``coverage``: at k = 0 the
    topic has no route left (no subset to converge on), which is worse, not settled. Masters
    routed read-only (``read_only``, holding the topic or not) are not among the n."""
    if k:
        return (
            f"Auto-created topic {topic} is on {k} of {n} brokers and will stay there: its "
            "producers' routes have converged on that subset."
        )
    if read_only:
        verb = "is" if len(read_only) == 1 else "are"
        if n == 0:
            rest = "no writable broker is left"
        elif n == 1:
            rest = "the one writable broker left does not hold it"
        else:
            rest = f"none of the {n} writable brokers left holds it"
        return (
            f"Auto-created topic {topic} has no writable route left: {', '.join(read_only)} "
            f"{verb} routed read-only (write permission wiped), and {rest}."
        )
    if n == 1:
        left = "the only live broker does not hold it, and will not get it by itself"
    else:
        left = f"none of the {n} live brokers holds it, and none will get it by itself"
    return f"Auto-created topic {topic} has no route left: {left}."


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
            self.e.book.resolve(key, at, {"coverage": f"{k}/{n}"})

    def _raise(self, view: TopicView, at: int) -> None:
        topic, state, holders = view.topic, view.state, view.holders
        assert state is not None
        holding, expected = view.holding, view.expected
        k, n = len(holding & expected), len(expected)
        read_only = sorted(
            {b for (_, b, i), r in self.facts.regs().items() if i == 0 and r.live and r.read_only}
            - expected
        )
        views: dict[str, list[str]] = {}
        for ns, b, _ in holders:
            views.setdefault(ns, []).append(b)
        queues = max((c[1] for c in holders.values()), default=4)
        self.e.book.raise_or_update(
            self.facts.topic_key(self.kind, topic),
            at,
            severity="critical" if k <= 1 else "warning",
            summary=coverage_summary(topic, k, n, read_only),
            evidence={
                "coverage": f"{k}/{n}",
                **({"read_only_brokers": read_only} if read_only else {}),
                "brokers_with_topic": sorted(holding & expected),
                "brokers_without_topic": sorted(expected - holding),
                "namesrv_views": {ns: sorted(set(v)) for ns, v in sorted(views.items())},
                "auto_created_at": state.auto_created_at,
                "auto_created_evidence": evidence_of(state),
                "producers_with_template_route": sorted(state.holders),
            },
            remedy=self.facts.create_everywhere(topic, queues)
            + ("" if state.auto_created_how == OBSERVED else INFERRED_REMEDY),
        )
        # (AT_RISK's condition keeps its start: if it still holds when PARTIAL_COVERAGE
        # resolves, AT_RISK opens then, its 5 s counted from that start)
        self.e.book.resolve(
            self.facts.topic_key("AT_RISK", topic), at, {"resolution": "partial coverage opened"}
        )
