"""The collector's counters, served as Prometheus text on its own ``/metrics`` and logged."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["Counters", "MetricsServer"]

_HELP = {
    "routewatch_collect_polls_total": ("counter", "Polls of every NameServer and broker."),
    "routewatch_collect_requests_total": ("counter", "Requests sent, by target kind."),
    "routewatch_collect_errors_total": (
        "counter",
        "Requests that failed, by target kind and reason (unreachable, timeout, garbage, refused).",
    ),
    "routewatch_collect_events_written_total": (
        "counter",
        "Events written: heartbeats and the rounds' reports (collector_round).",
    ),
    "routewatch_collect_last_round_timestamp_seconds": (
        "gauge",
        "When the last poll round ended, Unix seconds (a collector that stops polling is seen).",
    ),
    "routewatch_collect_targets_down": (
        "gauge",
        "NameServers and brokers that did not answer the last poll, by target kind.",
    ),
    "routewatch_collect_forward_files_total": (
        "counter",
        "Client-library spool files forwarded to the sink and removed.",
    ),
    "routewatch_collect_forward_events_total": (
        "counter",
        "Client-library events forwarded to the sink (counted once delivered).",
    ),
    "routewatch_collect_forward_lines_skipped_total": (
        "counter",
        "Lines of forwarded files that are not contract events, skipped.",
    ),
    "routewatch_collect_forward_errors_total": (
        "counter",
        "Forwarding failures, by reason (list, read, delivery, remove); each is retried.",
    ),
}


class Counters:
    """Thread-safe counters and gauges with labels; rendered in Prometheus' text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] = value

    def get(self, name: str, **labels: str) -> float:
        """One series' value; without labels, the sum over all of the name's series."""
        with self._lock:
            if labels:
                return self._values.get((name, tuple(sorted(labels.items()))), 0)
            return sum(v for (n, _), v in self._values.items() if n == name)

    def render(self) -> str:
        with self._lock:
            values = dict(self._values)
        lines = []
        for name, (kind, text) in _HELP.items():
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            series = sorted((k, v) for k, v in values.items() if k[0] == name)
            if not series and not name.endswith("_down"):
                series = [((name, ()), 0.0)]
            for (_, labels), value in series:
                label = ",".join(f'{k}="{v}"' for k, v in labels)
                lines.append(f"{name}{{{label}}} {value:g}" if label else f"{name} {value:g}")
        return "\n".join(lines) + "\n"

    def has(self, name: str) -> bool:
        """Whether any series of ``name`` was counted (even by 0)."""
        with self._lock:
            return any(n == name for n, _ in self._values)

    def summary(self) -> str:
        """One line for the log; the forwarding part once something forwards."""
        text = (
            f"{self.get('routewatch_collect_polls_total'):g} polls, "
            f"{self.get('routewatch_collect_requests_total'):g} requests, "
            f"{self.get('routewatch_collect_errors_total'):g} errors, "
            f"{self.get('routewatch_collect_events_written_total'):g} events written"
        )
        if self.has("routewatch_collect_forward_files_total"):
            text += (
                f"; {self.get('routewatch_collect_forward_events_total'):g} client events "
                f"forwarded from {self.get('routewatch_collect_forward_files_total'):g} files, "
                f"{self.get('routewatch_collect_forward_lines_skipped_total'):g} bad lines "
                f"skipped, {self.get('routewatch_collect_forward_errors_total'):g} forwarding "
                "errors"
            )
        return text


class MetricsServer:
    """``GET /metrics`` on ``host``:``port`` (loopback unless told otherwise) in a daemon
    thread."""

    def __init__(self, counters: Counters, port: int, host: str = "127.0.0.1") -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                body = counters.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
