"""What ``routewatch collect`` costs per round on a real cluster of 10,000 topics: requests,
wall seconds and the collector's CPU seconds.

    .venv/bin/python -m benchmarks.collect_cost [--topics 10000] [--rounds 10] [--major 4]

A real RocketMQ of the ``--major`` line (the Maven-resolved distribution the tests use: 2
NameServers, 2 masters) whose masters start on a store that already holds ``--topics`` topics
each (their ``topics.json`` written before the start: creating 10,000 topics one request at a
time would rewrite that file 10,000 times). Then the collector's rounds — one poll and what it
derives, as ``routewatch collect`` makes them, in this process — each measured:

1. **first**: a new collector's first round (every table read, the inference's first look);
2. **steady**: ``--rounds`` rounds with nothing changed (the median and the largest);
3. **wiped**, **added**: the round after ``mqadmin wipeWritePerm`` of broker-a, and after
   ``addWritePerm``;
4. **dropped**: the round after a topic was deleted on broker-b alone and broker-b registered
   its changed table (a topic made there);
5. **unseen**: a new collector's first round while a NameServer holds a table of broker-a the
   collector never read (a topic deleted on broker-a, whose changed table reaches the
   NameServers only at its next registration, up to 30 s later): every topic of broker-a is
   asked once — which ``routewatch collect`` does only once a NameServer has held such a version
   for 35 s; here at once, to measure its cost. Not measured when the registration came first
   (the round then asked no more than usual).

Prints a table and records section ``collect`` (``collect_rocketmq5`` with ``--major 5``) in
``benchmarks/results/latest.json``: per
round kind, requests to NameServers and to brokers, wall and CPU seconds; and whether a steady
round fits the default poll interval (10 s).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.results import median, print_table, record
from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from emitter.collect.routes import FULL_CHECK_AFTER_MS
from routewatch import remoting
from routewatch.testing.processes import wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster, rocketmq_home

POLL_INTERVAL_S = 10.0
SPEC = ClusterSpec(
    namesrvs=("ns1", "ns2"), brokers=(BrokerSpec("broker-a"), BrokerSpec("broker-b"))
)


def write_topics(store: Path, topics: int) -> None:
    """A broker's ``topics.json`` holding ``topics`` ordinary topics (8 queues, read|write)."""
    table = {
        f"BenchTopic{i:05d}": {
            "topicName": f"BenchTopic{i:05d}",
            "readQueueNums": 8,
            "writeQueueNums": 8,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
        }
        for i in range(topics)
    }
    config = store / "config"
    config.mkdir(parents=True, exist_ok=True)
    body = {
        "dataVersion": {"counter": 1, "timestamp": int(time.time() * 1000)},
        "topicConfigTable": table,
    }
    (config / "topics.json").write_text(json.dumps(body))


class Rounds:
    """One collector, its rounds measured."""

    def __init__(self, namesrvs: list[str], full_check_after_ms: int = FULL_CHECK_AFTER_MS) -> None:
        self.metrics = CollectorMetrics()
        self.poller = Poller(namesrvs, self.metrics, timeout=10)
        self.deriver = Deriver(10, full_check_after_ms=full_check_after_ms)

    def round(self) -> dict[str, Any]:
        before = {
            t: self.metrics.value("routewatch_collect_requests_total", target=t)
            for t in ("namesrv", "broker")
        }
        wall, cpu = time.perf_counter(), time.process_time()
        events = self.deriver.derive(self.poller.poll(self.deriver.known, self.deriver))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        requests = {
            t: self.metrics.value("routewatch_collect_requests_total", target=t) - n
            for t, n in before.items()
        }
        errors = self.metrics.value("routewatch_collect_errors_total")
        if errors:
            raise RuntimeError(f"the round counted {errors} failed requests")
        return {
            "namesrv_requests": requests["namesrv"],
            "broker_requests": requests["broker"],
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "events": len(events),
        }

    def close(self) -> None:
        self.poller.close()


def _route_perm(ns: str, topic: str, broker: str) -> int | None:
    route = remoting.topic_route(ns, topic)
    queue = None if route is None else route.queue(broker)
    return None if queue is None else queue.perm


def measure(cluster: RocketMQCluster, topics: int, rounds: int) -> dict[str, Any]:
    namesrvs = [cluster.namesrv_addr(n) for n in SPEC.namesrvs]
    ns1 = namesrvs[0]
    out: dict[str, Any] = {}
    watch = Rounds(namesrvs)
    try:
        out["first"] = watch.round()
        steady = [watch.round() for _ in range(rounds)]
        out["steady"] = {
            "namesrv_requests": steady[-1]["namesrv_requests"],
            "broker_requests": steady[-1]["broker_requests"],
            "wall_s": median([r["wall_s"] for r in steady]),
            "wall_s_max": max(r["wall_s"] for r in steady),
            "cpu_s": median([r["cpu_s"] for r in steady]),
            "cpu_s_max": max(r["cpu_s"] for r in steady),
            "rounds": rounds,
        }
        cluster.mqadmin("wipeWritePerm", "-b", "broker-a", namesrv_name="ns1")
        cluster.mqadmin("wipeWritePerm", "-b", "broker-a", namesrv_name="ns2")
        wait_for(lambda: _route_perm(ns1, "broker-a", "broker-a") == 5, 30, "broker-a wiped")
        out["wiped"] = watch.round()
        cluster.mqadmin("addWritePerm", "-b", "broker-a", namesrv_name="ns1")
        cluster.mqadmin("addWritePerm", "-b", "broker-a", namesrv_name="ns2")
        wait_for(lambda: _route_perm(ns1, "broker-a", "broker-a") == 6, 30, "broker-a writable")
        out["added"] = watch.round()
        remoting.delete_topic_in_broker(cluster.brokers["broker-b"].addr, "BenchTopic00000")
        cluster.update_topic("BenchLater", broker="broker-b")
        for ns in namesrvs:
            made = lambda ns=ns: _route_perm(ns, "BenchLater", "broker-b") is not None  # noqa: E731
            wait_for(made, 30, f"BenchLater routed by {ns}")
        out["dropped"] = watch.round()
    finally:
        watch.close()
    # a NameServer holding a table of broker-a the new collector never read
    remoting.delete_topic_in_broker(cluster.brokers["broker-a"].addr, "BenchTopic00001")
    fresh = Rounds(namesrvs, full_check_after_ms=0)  # (at once: its cost is what is measured)
    try:
        unseen = fresh.round()
    finally:
        fresh.close()
    unseen["full_check"] = (
        unseen["namesrv_requests"] > out["first"]["namesrv_requests"] + topics // 2
    )
    out["unseen"] = unseen
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--major", type=int, choices=(4, 5), default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="routewatch-collect-cost-") as tmp:
        workdir = Path(tmp)
        cluster = RocketMQCluster(SPEC, workdir, rocketmq_home(args.major))
        for broker in cluster.brokers.values():
            write_topics(broker.store, args.topics)
        started = time.perf_counter()
        cluster.start()
        try:
            last = f"BenchTopic{args.topics - 1:05d}"
            for ns in (cluster.namesrv_addr(n) for n in SPEC.namesrvs):
                routed = lambda ns=ns: _route_perm(ns, last, "broker-b") is not None  # noqa: E731
                wait_for(routed, 120, f"{last} routed by {ns}")
            start_s = time.perf_counter() - started
            figures = measure(cluster, args.topics, args.rounds)
        finally:
            cluster.stop()
    rows = [
        (kind, f["namesrv_requests"], f["broker_requests"], f["wall_s"], f["cpu_s"])
        for kind, f in figures.items()
    ]
    print(
        f"routewatch collect on RocketMQ {args.major}.x: 2 NameServers, 2 masters of "
        f"{args.topics:,} topics each (cluster started in {start_s:.0f} s)"
    )
    print_table(("round", "NameServer requests", "broker requests", "wall s", "CPU s"), rows)
    if not figures["unseen"]["full_check"]:
        print("(unseen: broker-a registered before the round; no full check was measured)")
    fits = figures["steady"]["wall_s_max"] < POLL_INTERVAL_S
    print(f"a steady round fits the {POLL_INTERVAL_S:g} s poll interval: {fits}")
    record(
        "collect" if args.major == 4 else f"collect_rocketmq{args.major}",
        {
            "topics_per_broker": args.topics,
            "namesrvs": 2,
            "masters": 2,
            "rocketmq_major": args.major,
            "rounds": figures,
            "steady_round_fits_poll_interval": fits,
        },
    )


if __name__ == "__main__":
    main()
