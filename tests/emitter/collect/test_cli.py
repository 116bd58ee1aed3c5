"""``routewatch collect``'s command line: NameServer lists, forwarded directories, and the
sentence for a bad one."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest

from emitter.collect.cli import forward_dirs, namesrv_list, what_to_do
from emitter.collect.settings import CollectSettings
from routewatch.cli import build_parser, main
from routewatch.errors import RoutewatchError
from routewatch.settings import SettingsError, load
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for


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
        "ROUTEWATCH_COLLECT_FORWARD_DIRS) to forward a client library's spool, or both.\n"
    )


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
