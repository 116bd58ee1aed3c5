"""COLLECTOR_SILENT: the cluster's collector has written no round for three of its intervals."""

from __future__ import annotations

from functools import partial
from typing import Any

from streaming.engine.alerts import Ending
from streaming.engine.rules.base import Rule, iso

__all__ = ["REMEDY", "CollectorSilent"]

REMEDY = (
    "Check the routewatch collect process that watches this cluster: its log says why it "
    "stopped or cannot write (Kafka, the spool), and its /metrics (routewatch_collect_*) say "
    "when it last polled."
)


class CollectorSilent(Rule):
    kind = "COLLECTOR_SILENT"
    scope = "cluster"
    reads = frozenset({"observer"})

    def on_observer_silent(self, at: int) -> None:
        """The collector went silent (``ClusterEngine.went_silent``): three of its intervals (at
        least 30 s) without a round; its brokers' expiries wait for its return."""
        obs = self.e.meta.observer
        assert obs is not None
        self.e.book.raise_or_update(
            self.facts.cluster_key(self.kind),
            at,
            severity="critical",
            summary=f"The collector {obs['collector']} of cluster {self.cluster} has written "
            f"nothing since {iso(obs['last'])}: routewatch does not see the cluster, and "
            "judges none of its brokers' liveness until it is back.",
            evidence={"collector": obs["collector"], "last_round": obs["last"]},
            remedy=REMEDY,
            plan=partial(
                self.facts.manual_plan,
                REMEDY,
                "alert_resolved",
                f"the collector of {self.cluster} writes a round again: the alert resolves",
            ),
        )

    def on_observer_back(self, obs: dict[str, Any], at: int) -> None:
        """The collector's first round after its gap (``obs``: as before that round)."""
        back = self.e.meta.observer
        assert back is not None
        self.e.book.resolve(
            self.facts.cluster_key(self.kind),
            at,
            lambda alert: Ending(
                f"The collector {obs['collector']} of cluster {self.cluster} wrote nothing "
                f"from {iso(obs['last'])} until {back['collector']} wrote a round at {iso(at)}, "
                f"{(at - obs['last']) / 1000:g} s later.",
                {
                    "collector": back["collector"],
                    "last_round": obs["last"],
                    "gap_ms": at - obs["last"],
                    "back_at": at,
                    "resolution": "collector back",
                },
            ),
        )
