"""AT_RISK: a producer holds a template route over brokers of which only some hold the topic;
at its next route refresh the topic collapses to those."""

from __future__ import annotations

from functools import partial
from typing import Any

from routewatch.alerts import Alert
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import REFRESH_MS, TopicRule, TopicView, iso
from streaming.engine.state import Holder

# (partial_coverage imports this module's `replaced`: the note is its own)
AUTO_CREATE_NOTE = (
    "Set autoCreateTopicEnable=false on the brokers in production, so that no other topic gets "
    "stuck so: routewatch does not change a broker's configuration."
)

__all__ = ["AT_RISK_MS", "AtRisk", "replaced"]

AT_RISK_MS = 5_000


def _was(alert: Alert, e: dict[str, Any]) -> str:
    """What a resolved AT_RISK was, from the evidence it opened with."""
    m = max((len(p["template_brokers"]) for p in e["producers"]), default=0)
    k = len(e["brokers_with_topic"])
    return (
        f"Topic {alert.topic} was on {k} of the {m} brokers its producers' template route "
        f"covered from {iso(alert.opened_at)}"
    )


def _producers(short: dict[str, Holder], holding: set[str]) -> list[dict[str, Any]]:
    """The producers whose template route covers brokers without the topic, as evidence."""
    return [
        {
            "client_id": c,
            "template_brokers": sorted(set(h.brokers)),
            "brokers_with_topic": sorted(set(h.brokers) & holding),
            "template_route_since": h.since,
            "next_refresh_by": h.last_pull + REFRESH_MS,
        }
        for c, h in sorted(short.items())
    ]


def replaced(alert: Alert, opening: dict[str, Any], at: int) -> Ending:
    """AT_RISK ended by PARTIAL_COVERAGE opening for its topic (the condition may still hold:
    its start is kept, and the evidence is the last, still the state)."""
    return Ending(
        f"{_was(alert, opening)}; PARTIAL_COVERAGE took over at {iso(at)}.",
        {**alert.evidence, "resolution": "partial coverage opened"},
    )


class AtRisk(TopicRule):
    kind = "AT_RISK"
    reads = frozenset({"registrations", "namesrvs"})
    auto_created_only = True
    rejudges = ("at_risk",)

    def judge(self, view: TopicView, at: int) -> None:
        """Opens once its condition — a producer's template route over ``m`` brokers of which
        ``1 <= k < m`` hold the topic — has held for 5 s without a break while no
        PARTIAL_COVERAGE is open; once open it stays while the routes have not converged, also
        when ``k`` falls to 0, until they do, PARTIAL_COVERAGE opens, or no producer holds a
        template route. The condition's start (``at_risk_since``) is the condition's, not the
        alert's: it is kept while a PARTIAL_COVERAGE suppresses the alert, so that when that
        resolves with the condition held all along, AT_RISK opens at once."""
        topic, state, holding = view.topic, view.state, view.holding
        assert state is not None
        key = self.facts.topic_key(self.kind, topic)
        short = {c: h for c, h in state.holders.items() if not set(h.brokers) <= holding}
        risky = {c: h for c, h in short.items() if set(h.brokers) & holding}
        pc_open = self.e.book.get(self.facts.topic_key("PARTIAL_COVERAGE", topic)) is not None
        is_open = self.e.book.get(key) is not None and not pc_open
        holds = bool(short) and bool(risky or is_open)
        if pc_open:
            self.e.book.resolve(
                key, at, lambda alert: replaced(alert, self.e.book.opening(alert), at)
            )
        elif not holds:
            self.e.book.resolve(key, at, lambda alert: self._ended(alert, view, short, at))
        if not holds:
            if state.at_risk_since is not None:
                state.at_risk_since = None
                self.e.topics.mark(topic)
            return
        if state.at_risk_since is None:
            state.at_risk_since = at
            self.e.topics.mark(topic)
            self.e.schedule(at + AT_RISK_MS, "at_risk", topic)
        if pc_open or (not is_open and at < state.at_risk_since + AT_RISK_MS):
            return
        producers = _producers(short, holding)
        refresh_by = max(h.last_pull + REFRESH_MS for h in short.values())
        m = max(len(set(h.brokers)) for h in short.values())
        k = min(len(set(h.brokers) & holding) for h in short.values())
        if k:
            summary = (
                f"Topic {topic} is on {k} of the {m} brokers its producers' template route "
                f"covers; at their next route refresh (by {iso(refresh_by)}) it collapses to "
                "those brokers."
            )
        else:
            summary = (
                f"Topic {topic} is on none of the {m} brokers its producers' template route "
                "covers any more; those producers keep that route until a route refresh "
                f"succeeds (next by {iso(refresh_by)})."
            )
        # the topic's own count where a broker holds it, else the template route's (4 queues)
        queues = max((c[1] for c in view.holders.values()), default=4)
        self.e.book.raise_or_update(
            key,
            max(at, state.at_risk_since + AT_RISK_MS),
            severity="warning",
            summary=summary,
            evidence={
                "producers": producers,
                "brokers_with_topic": sorted(holding),
                "condition_since": state.at_risk_since,
            },
            remedy=self.facts.create_everywhere(topic, queues),
            plan=partial(
                self.facts.coverage_plan,
                topic,
                sorted(holding & view.expected),
                sorted(view.expected - holding),
                queues,
                [AUTO_CREATE_NOTE],
            ),
        )

    def _ended(self, alert: Alert, view: TopicView, short: dict[str, Holder], at: int) -> Ending:
        """Resolved without PARTIAL_COVERAGE: every producer's template brokers hold the topic,
        or no producer holds a template route any more."""
        if view.state is not None and view.state.holders and not short:
            how, resolution = "every broker of its template route held it", "converged"
        else:
            how, resolution = "no producer held its template route", "no template route left"
        return Ending(
            f"{_was(alert, self.e.book.opening(alert))}; from {iso(at)} {how}.",
            {
                "producers": _producers(short, view.holding),
                "brokers_with_topic": sorted(view.holding),
                "condition_since": alert.evidence["condition_since"],
                "resolution": resolution,
            },
        )
