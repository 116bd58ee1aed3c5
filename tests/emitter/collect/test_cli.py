"""``routewatch collect``'s command line: NameServer lists, forwarded directories, and the
sentence for a bad one."""

from __future__ import annotations

import io
import os
import socket
import threading
import urllib.request
from pathlib import Path

import orjson
import pytest

from emitter.collect.cli import forward_dirs, proxy_log_files, what_to_do
from emitter.collect.collector import Collector
from emitter.collect.derive import Deriver
from emitter.collect.metrics import CollectorMetrics
from emitter.collect.poller import Poller
from emitter.collect.proxylog import ProxyLog
from emitter.collect.settings import CollectSettings
from emitter.settings import EmitterSettings
from emitter.sinks import sink_for
from emitter.sinks.local import StdoutSink
from routewatch.addresses import namesrv_list
from routewatch.cli import build_parser, main
from routewatch.errors import RoutewatchError
from routewatch.settings import SettingsError, load
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from routewatch.validation import validate


def test_a_namesrv_list_as_clients_write_it() -> None:
    assert namesrv_list("10.0.0.1:9876; 10.0.0.2:9876;") == ["10.0.0.1:9876", "10.0.0.2:9876"]


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("", "no NameServer to watch: give --namesrv"),
        ("10.0.0.1", "'10.0.0.1' is not a NameServer address: write each as host:port"),
        ("10.0.0.1:99999", "'10.0.0.1:99999' .* its port 99999 is out of range \\(1 to 65535\\)"),
        ("a:1;a:1", "names a NameServer twice"),
    ],
)
def test_a_bad_namesrv_list_is_one_sentence(text: str, sentence: str) -> None:
    with pytest.raises(RoutewatchError, match=sentence):
        namesrv_list(text)


def test_forward_is_repeatable_and_the_setting_is_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["collect", "--to", "kafka", "--forward", "hook", "--forward", "/var/spool/b"]
    assert build_parser().parse_args(argv).forward == [Path("hook"), Path("/var/spool/b")]
    monkeypatch.setenv("ROUTEWATCH_COLLECT_FORWARD_DIRS", "/var/spool/a; /var/spool/b;")
    dirs = load(CollectSettings).collect_forward_dirs
    assert dirs == (Path("/var/spool/a"), Path("/var/spool/b"))
    monkeypatch.setenv("ROUTEWATCH_COLLECT_FORWARD_DIRS", "spool/a")
    with pytest.raises(SettingsError, match="ROUTEWATCH_COLLECT_FORWARD_DIRS must hold absolute"):
        load(CollectSettings)


def test_forwarding_alone_needs_no_namesrv() -> None:
    assert what_to_do("", [Path("/var/spool/hook")]) == []
    assert what_to_do("a:1", [Path("/var/spool/hook")]) == ["a:1"]
    assert forward_dirs([Path("hook")], "kafka", Path("/x")) == [Path.cwd() / "hook"]


@pytest.mark.parametrize(
    ("given", "to", "sentence"),
    [
        (["/h", "/h"], "kafka", "--forward names /h twice: name each directory once."),
        (["/data/spool"], "spool", "--forward /data/spool is the spool collect writes to"),
    ],
)
def test_a_bad_forward_list_is_one_sentence(given: list[str], to: str, sentence: str) -> None:
    with pytest.raises(RoutewatchError, match=sentence):
        forward_dirs([Path(g) for g in given], to, Path("/data/spool"))
    assert forward_dirs([Path("/data/spool")], "kafka", Path("/data/spool"))  # into Kafka: fine


def test_neither_namesrv_nor_forward_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ROUTEWATCH_COLLECT_NAMESRV", raising=False)
    monkeypatch.delenv("ROUTEWATCH_COLLECT_FORWARD_DIRS", raising=False)

    assert main(["collect", "--to", "stdout"]) == 2

    assert capsys.readouterr().err == (
        "routewatch: nothing to collect: give --namesrv 'host:port;host:port' (or set "
        "ROUTEWATCH_COLLECT_NAMESRV) to watch a cluster, --forward DIR (or set "
        "ROUTEWATCH_COLLECT_FORWARD_DIRS) to forward a client library's spool, --proxy-log "
        "FILE (or set ROUTEWATCH_COLLECT_PROXY_LOGS) to follow a proxy's log, or several of "
        "them.\n"
    )


MISS = (
    "2026-11-28 14:29:46 WARN GrpcRouteThreadPool-0 - get Topic [{t}] RouteInfoFromNameServer "
    "is not exist value\n"
)


def test_proxy_logs_alone_need_no_namesrv(monkeypatch: pytest.MonkeyPatch) -> None:
    assert what_to_do("", [], [Path("/logs/broker_default.log")]) == []
    assert proxy_log_files([Path("a.log")]) == [Path.cwd() / "a.log"]
    with pytest.raises(RoutewatchError, match=r"--proxy-log names /a\.log twice: name each file"):
        proxy_log_files([Path("/a.log"), Path("/a.log")])
    argv = ["collect", "--proxy-log", "a.log", "--proxy-log", "/b.log"]
    assert build_parser().parse_args(argv).proxy_log == [Path("a.log"), Path("/b.log")]
    monkeypatch.setenv("ROUTEWATCH_COLLECT_PROXY_LOGS", "/p/a.log;/p/b.log")
    assert load(CollectSettings).collect_proxy_logs == (Path("/p/a.log"), Path("/p/b.log"))
    monkeypatch.setenv("ROUTEWATCH_COLLECT_PROXY_LOGS", "logs/a.log")
    with pytest.raises(SettingsError, match="ROUTEWATCH_COLLECT_PROXY_LOGS must hold absolute"):
        load(CollectSettings)


def test_once_reads_a_proxy_log_whole_into_the_sink(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "broker_default.log"
    log.write_text("noise\n" + MISS.format(t="Orders"))
    monkeypatch.setenv("ROUTEWATCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ROUTEWATCH_COLLECT_PROXY_CLUSTER", "ProdCluster")
    monkeypatch.delenv("ROUTEWATCH_COLLECT_NAMESRV", raising=False)

    assert main(["collect", "--proxy-log", str(log), "--once", "--to", "stdout"]) == 0

    (line,) = [ln for ln in capsysbinary.readouterr().out.splitlines() if ln.startswith(b"{")]
    event = orjson.loads(line)
    assert validate(event) is None
    assert (event["type"], event["cluster"], event["topic"], event["ts"]) == (
        "proxy_route_miss",
        "ProdCluster",
        "Orders",
        1_795_847_386_000,  # 14:29:46 at UTC+8
    )
    assert event["proxy"] == f"{socket.gethostname()}:{log}"


def test_the_loop_follows_a_proxy_log_without_a_poller(tmp_path: Path) -> None:
    log = tmp_path / "broker_default.log"
    log.write_text(MISS.format(t="Before"))
    out = io.BytesIO()
    counters = CollectorMetrics()
    collector = Collector(
        None,
        Deriver(10),
        StdoutSink(out),
        counters,
        10,
        forward_interval_s=0.05,
        proxy_logs=[ProxyLog(log, "C", "p")],
    )
    thread = threading.Thread(target=collector.run, daemon=True)
    thread.start()
    try:
        with log.open("a") as f:
            f.write(MISS.format(t="After"))
        wait_for(lambda: b'"After"' in out.getvalue(), 30, "the new line's event")
    finally:
        collector.stop()
        thread.join(10)
    assert b'"Before"' not in out.getvalue()  # written before the start
    assert counters.value("routewatch_collect_events_written_total") == 1


def test_metrics_listen_where_told(tmp_path: Path) -> None:
    # 127.0.0.2 is loopback too: told it, /metrics answers there and not on 127.0.0.1
    port = free_port()
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path),
        "ROUTEWATCH_COLLECT_METRICS_PORT": str(port),
        "ROUTEWATCH_COLLECT_METRICS_HOST": "127.0.0.2",
    }
    (tmp_path / "hook").mkdir()
    argv = ["collect", "--forward", str(tmp_path / "hook"), "--to", "stdout"]
    proc = start_routewatch(argv, env, tmp_path / "collect.log")
    try:

        def answers(host: str) -> bool:
            try:
                with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=1) as r:
                    return b"routewatch_collect_polls_total" in r.read()
            except OSError:
                return False

        wait_for(lambda: answers("127.0.0.2"), 60, "/metrics on 127.0.0.2")
        assert not answers("127.0.0.1")
    finally:
        stop(proc)
    assert f"/metrics on 127.0.0.2:{port}" in (tmp_path / "collect.log").read_text()


def _collect_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEWATCH_")}
    return {**env, "ROUTEWATCH_DATA_DIR": str(tmp_path), **settings}


def test_a_collector_no_namesrv_ever_answered_stops_saying_so(tmp_path: Path) -> None:
    # a closed loopback port: nothing answers, however long the collector waits
    closed = f"127.0.0.1:{free_port()}"
    env = _collect_env(
        tmp_path,
        ROUTEWATCH_COLLECT_START_TIMEOUT_S="2",
        ROUTEWATCH_COLLECT_POLL_INTERVAL_S="0.5",
    )
    log = tmp_path / "collect.log"
    proc = start_routewatch(["collect", "--namesrv", closed], env, log)
    try:
        assert proc.wait(60) == 2
    finally:
        stop(proc)
    said = log.read_text().splitlines()
    # the spool is the default sink: the one `routewatch stream` reads by default
    assert f"writing to the spool {tmp_path / 'spool'}" in said[0]
    assert said[-1].startswith(
        f"routewatch: no NameServer of --namesrv answered in 2 s ({closed} refused the "
        "connection (nothing listens there)): check the addresses and that this host can reach "
        "them, or set ROUTEWATCH_COLLECT_START_TIMEOUT_S=0 to wait for them."
    )


def test_once_with_no_namesrv_answering_is_an_error(tmp_path: Path) -> None:
    closed = f"127.0.0.1:{free_port()}"
    log = tmp_path / "collect.log"
    proc = start_routewatch(["collect", "--namesrv", closed, "--once"], _collect_env(tmp_path), log)
    assert proc.wait(60) == 2
    assert "routewatch: no NameServer of --namesrv answered at its poll" in log.read_text()


def _collector(tmp_path: Path, start_timeout_s: float) -> Collector:
    closed = f"127.0.0.1:{free_port()}"
    counters = CollectorMetrics()
    sink = sink_for("spool", load(EmitterSettings, data_dir=tmp_path))
    poller = Poller([closed], counters, timeout=1)
    return Collector(poller, Deriver(10), sink, counters, 0.01, start_timeout_s=start_timeout_s)


def test_a_start_timeout_of_zero_waits_for_the_namesrvs_as_long_as_it_takes(
    tmp_path: Path,
) -> None:
    waits, gives_up = _collector(tmp_path, 0), _collector(tmp_path, 0.3)
    with pytest.raises(RoutewatchError, match="no NameServer of --namesrv answered in 0 s"):
        gives_up.run()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            waits.run()
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        # ten times the polls of the collector that gave up, and it polls on
        polls = gives_up.metrics.value("routewatch_collect_polls_total")
        wait_for(
            lambda: (
                waits.metrics.value("routewatch_collect_polls_total") >= 10 * polls or bool(failed)
            ),
            60,
            "ten times as many polls",
        )
        assert not failed and thread.is_alive()
    finally:
        waits.stop()
        thread.join(10)
