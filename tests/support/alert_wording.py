"""What an alert says must be true of its own evidence (docs/alerts.md, "Reading an alert"): a
resolved alert speaks in the past tense, holds its evidence at the resolution with the evidence
it opened with apart, and agrees with itself; no summary claims a producer its evidence does not
name; no count or list of topics outside ``system_topics`` names a system topic."""

from __future__ import annotations

import re
from typing import Any

from routewatch.rocketmq import is_system_topic

__all__ = ["wording_problems"]

# finite verbs in the present tense that the catalogue's summaries use; none may stand in a
# resolved alert's summary
_PRESENT = re.compile(
    r"\b(is|are|has|have|will|does|cannot|can|fails?|refuses?|sees?|holds|keeps?|collapses|"
    r"stays?|routes)\b"
)
# evidence fields that list topics (a capped list: {"items", "count"})
_TOPIC_LISTS = ("topics_without_route", "topics_differing")
# summary counts of those lists: "<n> topic(s) it held", "route it <n> topic(s)"
_COUNTS = {
    "topics_without_route": re.compile(r"(\d+) topic\(s\) it held"),
    "topics_differing": re.compile(r"route it (\d+) topic\(s\)"),
}


def _producers(evidence: dict[str, Any]) -> bool:
    return bool(evidence.get("producers") or evidence.get("producers_with_template_route"))


def _coverage(evidence: dict[str, Any]) -> tuple[int, int]:
    k, n = evidence["coverage"].split("/")
    return int(k), int(n)


def _consistent(alert: dict[str, Any]) -> list[str]:
    """What the evidence of a resolved alert says against its resolution."""
    e, kind = alert["evidence"], alert["kind"]
    out = []
    if kind == "PARTIAL_COVERAGE":
        k, n = _coverage(e)
        if k != n or e["brokers_without_topic"] or len(e["brokers_with_topic"]) != k:
            out.append(f"coverage {e['coverage']} with {e['brokers_without_topic']} without it")
    elif kind == "QUEUE_SKEW":
        counts = {(c["read"], c["write"]) for c in e["brokers"].values()}
        if len(counts) > 1 or any(r != w for r, w in counts):
            out.append(f"counts {e['brokers']} still uneven")
    elif kind == "NAMESRV_DIVERGENCE":
        if e["missing_on"] or e["topics_differing"]["count"]:
            out.append(f"still missing on {e['missing_on']}, {e['topics_differing']} apart")
    elif kind == "STALE_ROUTE" and e["stale_routes"]:
        out.append(f"stale routes {e['stale_routes']} left")
    elif kind == "NAMESRV_UNREACHABLE" and e["unreachable_since"]:
        out.append(f"{e['unreachable_since']} still unreachable")
    return out


def _system_topics(
    alert: dict[str, Any], evidence: dict[str, Any], brokers: frozenset[str]
) -> list[str]:
    out = []
    for name in _TOPIC_LISTS:
        listed = evidence.get(name)
        if listed is None:
            continue
        system = [t for t in listed["items"] if is_system_topic(t, alert["cluster"], brokers)]
        if system:
            out.append(f"{name} names system topics {system}")
        if any(
            not is_system_topic(t, alert["cluster"], brokers)
            for t in evidence.get("system_topics", [])
        ):
            out.append(f"system_topics {evidence['system_topics']} names a topic of the users")
    return out


def wording_problems(alert: dict[str, Any], brokers: frozenset[str]) -> list[str]:
    """Everything ``alert`` (as ``Alert.to_dict`` or the store gives it) says that its evidence
    does not bear out, in words; ``brokers``: the names of its cluster's brokers."""
    out = []
    e, summary = alert["evidence"], alert["summary"]
    opened = e.get("opened_with", {})
    if alert["state"] == "resolved":
        present = _PRESENT.findall(summary)
        if present:
            out.append(f"resolved, but its summary says {present}: {summary!r}")
        if "opened_with" not in e or "resolution" not in e:
            out.append(f"resolved without opened_with and resolution: {sorted(e)}")
        out += _consistent(alert)
    elif "opened_with" in e:
        out.append("open, with opened_with")
    if "producer" in summary.lower() and not (_producers(e) or _producers(opened)):
        out.append(f"its summary speaks of producers its evidence does not name: {summary!r}")
    for evidence in (e, opened):
        out += _system_topics(alert, evidence, brokers)
    if alert["state"] == "open":
        for name, pattern in _COUNTS.items():
            found = pattern.search(summary)
            if found and name in e and int(found.group(1)) != e[name]["count"]:
                out.append(f"its summary counts {found.group(1)}, its {name} {e[name]['count']}")
    return [f"{alert['kind']} {alert['id']}: {p}" for p in out]
