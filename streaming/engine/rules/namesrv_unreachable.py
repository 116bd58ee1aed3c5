"""NAMESRV_UNREACHABLE: the cluster's collector has not reached a NameServer for 30 s."""

from __future__ import annotations

from functools import partial
from typing import Any

from streaming.engine.alerts import Ending
from streaming.engine.rules.base import Rule, iso

__all__ = ["REMEDY", "UNREACHABLE_MS", "NamesrvUnreachable"]

UNREACHABLE_MS = 30_000  # a NameServer the collector cannot reach for this long: an alert

REMEDY = (
    "Check each NameServer named: its process, and that its port can be reached from the "
    "collector's host (a firewall, a closed port); if it was retired, remove it from the "
    "collector's --namesrv list (and the brokers' namesrvAddr)."
)


class NamesrvUnreachable(Rule):
    kind = "NAMESRV_UNREACHABLE"
    scope = "cluster"
    reads = frozenset({"observer"})

    def on_namesrvs_reached(self, obs: dict[str, Any], at: int, *, changed: bool) -> None:
        """A round's reach: opens once a NameServer has not been reached for 30 s (at the first
        round that says so); once open, names every NameServer the round did not reach, and
        resolves only at a round that reached them all."""
        key = self.facts.cluster_key(self.kind)
        unreachable: dict[str, int] = obs["unreachable"]
        is_open = self.e.book.get(key) is not None
        if not unreachable or not (
            is_open or any(at - since >= UNREACHABLE_MS for since in unreachable.values())
        ):
            self.e.book.resolve(
                key,
                at,
                lambda alert: Ending(
                    f"The collector of cluster {self.cluster} could not reach NameServer(s) "
                    f"{', '.join(sorted(alert.evidence['unreachable_since']))} from "
                    f"{iso(alert.opened_at)}; at {iso(at)} a round of {obs['collector']} reached "
                    "every one.",
                    {
                        "collector": obs["collector"],
                        "unreachable_since": {},
                        "resolution": "every NameServer reached",
                    },
                ),
            )
            return
        names = ", ".join(f"{ns} (since {iso(since)})" for ns, since in sorted(unreachable.items()))
        one = len(unreachable) == 1
        self.e.book.raise_or_update(
            key,
            at,
            severity="warning",
            summary=f"The collector of cluster {self.cluster} cannot reach NameServer"
            f"{'' if one else 's'} {names}: what {'it routes' if one else 'they route'} is "
            "unknown, and no divergence is judged against "
            f"{'it' if one else 'them'}.",
            evidence={
                "collector": obs["collector"],
                "unreachable_since": dict(sorted(unreachable.items())),
            },
            remedy=REMEDY,
            plan=partial(
                self.facts.manual_plan,
                REMEDY,
                "namesrv_answers",
                "each NameServer named answers routewatch",
                namesrvs=sorted(unreachable),
            ),
        )
