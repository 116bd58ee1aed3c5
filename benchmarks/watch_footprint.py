"""What ``routewatch watch`` costs on a small cluster: memory of all its processes together, CPU
at rest, and how soon a stuck send pages.

    .venv/bin/python -m benchmarks.watch_footprint [--version 5.5] [--topics 300] [--rest 60]
        [--size small]

A ``routewatch sandbox`` (2 NameServers, 2 brokers) whose brokers are given ``--topics`` topics
each (made by admin request, as ``mqadmin updateTopic -b``), then ``routewatch watch`` on it at
``--size``, exactly as a person starts them. Every half second, the memory of watch and every
process under it (collect, stream and its Spark JVM and Python workers, api):

- **watch_rss_mb**, the headline: the peak of their resident memory together, each page counted
  once — the sum of their proportional set sizes (``Pss`` of ``/proc/PID/smaps_rollup``, as
  ``smem`` adds them up): what the machine spends on them;
- **rss_sum_peak_mb**: the peak of their ``Rss`` added up, which counts a page they share (the
  Python interpreter's, a forked worker's) once per process.

Once the brokers are in the API: ``routewatch sandbox send`` to a new topic (the producer picks
the broker) and **watch_first_alert_s**, from the send's start until the API lists its
``PARTIAL_COVERAGE``; then ``--rest`` seconds with nothing happening, and **cpu_rest_pct**, the CPU
time of all the processes over that time, as a percentage of one core. Records section
``watch_footprint`` (headline ``watch_rss_mb`` and ``watch_first_alert_s``) in
``benchmarks/results/latest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.results import print_table, record
from routewatch import remoting
from routewatch.cli import plain_text
from routewatch.supervise import api_up
from routewatch.testing.processes import free_port, run_routewatch, start_routewatch, wait_for
from routewatch.testing.rocketmq import free_broker_port

TICK = os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> list[int]:
    """``root`` and every process under it, from ``/proc``'s parent links."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    out, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        out += frontier
    return out


def memory_kb(pid: int) -> tuple[int, int]:
    """A process's (Rss, Pss) in kB; zeros for one that is gone."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def cpu_s(pids: list[int]) -> float:
    """CPU seconds of the processes, and of their children they have waited for."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        total += sum(int(v) for v in stat[stat.rindex(")") + 2 :].split()[11:15])
    return total / TICK


class Sampler(threading.Thread):
    """Samples the tree's memory every half second, keeping the peaks."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peak_pss_kb = self.peak_rss_kb = 0
        self.peak_processes = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            pids = descendants(self.root)
            sizes = [memory_kb(p) for p in pids]
            self.peak_rss_kb = max(self.peak_rss_kb, sum(r for r, _ in sizes))
            self.peak_pss_kb = max(self.peak_pss_kb, sum(p for _, p in sizes))
            self.peak_processes = max(self.peak_processes, len(pids))


def measure(version: str, topics: int, rest_s: float, size: str, work: Path) -> dict[str, Any]:
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(work / "data")}
    first, port = free_broker_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    sandbox = start_routewatch(
        ["sandbox", "--version", version, "--namesrv-port", str(first)],
        env,
        work / "sandbox.out",
        new_session=True,
    )
    watch: subprocess.Popen[bytes] | None = None
    try:
        wait_for(
            lambda: "Ctrl-C stops the sandbox" in (work / "sandbox.out").read_text(),
            300,
            "the sandbox running",
            interval=0.5,
        )
        state = json.loads((work / "data" / "sandbox" / "sandbox.json").read_text())
        for addr in state["brokers"].values():
            for i in range(topics):
                remoting.update_topic_in_broker(addr, f"Bench{i:04d}", timeout=10)
        watch = start_routewatch(
            ["watch", "--namesrv", state["namesrv_addr"], "--port", str(port), "--size", size],
            env,
            work / "watch.out",
            new_session=True,
        )
        sampler = Sampler(watch.pid)
        sampler.start()
        wait_for(lambda: api_up(url), 180, "watch's API answering", interval=0.5)

        def listed(path: str, key: str, want: str) -> bool:
            try:
                body = httpx.get(f"{url}{path}", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                return False
            return any(item.get(key) == want for item in body.get("data", []))

        wait_for(lambda: listed("/brokers", "broker", "broker-b"), 180, "the brokers in the API")
        sent_at = time.monotonic()
        sent = run_routewatch(["sandbox", "send", "BenchStuck"], env)
        if sent.returncode != 0:
            raise RuntimeError(f"sandbox send failed: {sent.stdout}{sent.stderr}")
        wait_for(lambda: listed("/alerts", "topic", "BenchStuck"), 300, "the stuck topic's alert")
        first_alert_s = time.monotonic() - sent_at
        before = cpu_s(descendants(watch.pid))
        time.sleep(rest_s)  # (a benchmark's measuring window, not a wait on a condition)
        cpu_rest_pct = (cpu_s(descendants(watch.pid)) - before) / rest_s * 100
        sampler.done.set()
        sampler.join()
        return {
            "version": version,
            "brokers": len(state["brokers"]),
            "topics_per_broker": topics,
            "size": size,
            "watch_rss_mb": round(sampler.peak_pss_kb / 1024),
            "rss_sum_peak_mb": round(sampler.peak_rss_kb / 1024),
            "processes": sampler.peak_processes,
            "watch_first_alert_s": round(first_alert_s, 1),
            "cpu_rest_pct": round(cpu_rest_pct, 1),
        }
    finally:
        for proc in (watch, sandbox):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (watch, sandbox):
            if proc is not None:
                proc.wait(120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, paragraphs=1))
    parser.add_argument("--version", default="5.5", choices=["5.5", "4.9"])
    parser.add_argument("--topics", type=int, default=300, help="topics per broker (300)")
    parser.add_argument("--rest", type=float, default=60.0, help="seconds at rest measured (60)")
    parser.add_argument("--size", default="small", choices=["small", "fleet"])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="watch-footprint-") as tmp:
        figures = measure(args.version, args.topics, args.rest, args.size, Path(tmp))
    print_table(["figure", "value"], [[k, v] for k, v in figures.items()])
    if args.size == "small":
        record(
            "watch_footprint",
            figures,
            watch_rss_mb=figures["watch_rss_mb"],
            watch_first_alert_s=figures["watch_first_alert_s"],
        )
    else:
        record("watch_footprint_fleet", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
