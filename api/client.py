"""``routewatch alerts``: the alerts of a store, or of a running API, in a terminal — as
``kubectl get`` lists resources: one line each, filtered, ``-o wide`` or ``-o json``; with
``--follow``, the alert log's changes as they come (from the API's live stream with ``--api``).

Times are ISO 8601 with their zone (epoch milliseconds only in JSON).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import orjson

from routewatch.alerts import ALERT_KINDS
from routewatch.errors import RoutewatchError
from routewatch.settings import Settings, load
from routewatch.store import Store, StoreError, open_store
from routewatch.store.backend import locate
from routewatch.store.views import AlertFilter, alerts
from routewatch.terminal import alert_line, iso_time, remedy_line

__all__ = ["no_store", "post", "register", "register_silence"]

FOLLOW_POLL_S = 1.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "alerts",
        help="list the alerts of the store, or of a running API (--api); --follow their changes",
        description="List alerts, one line each: state, severity, kind, what it is about, when "
        "(event time, ISO 8601), summary. They come from the store of ROUTEWATCH_STORE_URL (or "
        "ROUTEWATCH_DATA_DIR), or with --api from a running routewatch api. With --follow, "
        "print the alert log's changes instead, from the oldest the store keeps, then each as "
        "it comes (with --api, over the API's live stream), until Ctrl-C.",
    )
    parser.add_argument("--state", choices=["open", "resolved"], help="only alerts in this state")
    parser.add_argument("--kind", choices=ALERT_KINDS, help="only alerts of this kind")
    parser.add_argument("--cluster", help="only alerts of this cluster")
    parser.add_argument(
        "-o",
        "--output",
        choices=["text", "wide", "json"],
        default="text",
        help="text (default); wide: with each alert's id, opening, resolution and remedy; "
        "json: the alerts as the API gives them (epoch ms; with --follow, one change per line)",
    )
    parser.add_argument("--api", metavar="URL", help="a running API, e.g. http://127.0.0.1:8000")
    parser.add_argument("--follow", "-f", action="store_true", help="print changes as they come")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    def wanted(alert: dict[str, Any]) -> bool:
        return (
            (args.kind is None or alert["kind"] == args.kind)
            and (args.cluster is None or alert["cluster"] == args.cluster)
            and (args.state is None or alert["state"] == args.state)
        )

    if args.follow:
        changes = _api_changes(args.api) if args.api else _store_changes(load(Settings))
        for change, alert in changes:
            if wanted(alert):
                _print_change(change, alert, args.output)
        return 0
    alerts = _api_alerts(args.api, args) if args.api else _store_alerts(load(Settings), args)
    alerts = sorted(filter(wanted, alerts), key=lambda a: (a["opened_at"], a["id"]))
    if args.output == "json":
        sys.stdout.write(orjson.dumps(alerts, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    for alert in alerts:
        _print_alert(alert["state"], alert, args.output)
    if not alerts:
        print("no alerts", file=sys.stderr)
    return 0


def _print_alert(change: str, alert: dict[str, Any], output: str) -> None:
    print(alert_line(change, alert), flush=True)
    if output == "wide":
        print(
            f"      id {alert['id']}, opened {iso_time(alert['opened_at'])}, resolved "
            f"{iso_time(alert['resolved_at'])}",
            flush=True,
        )
        remedy = remedy_line(alert)
        if remedy is not None:
            print(remedy, flush=True)


def _print_change(change: str, alert: dict[str, Any], output: str) -> None:
    if output == "json":
        sys.stdout.write(orjson.dumps({"change": change, "alert": alert}).decode() + "\n")
        sys.stdout.flush()
    else:
        _print_alert(change, alert, output)


# -- from the store ---------------------------------------------------------------------------


def no_store(settings: Settings) -> RoutewatchError:
    where = locate(settings.store_url).where
    return RoutewatchError(
        f"there is no routewatch store at {where} yet: start routewatch stream (or give the "
        "store with ROUTEWATCH_STORE_URL or ROUTEWATCH_DATA_DIR, or a running API with --api)."
    )


def _open(settings: Settings) -> Store:
    file = locate(settings.store_url).file
    if file is not None and not file.exists():
        raise no_store(settings)
    try:
        return open_store(settings.store_url, readonly=True)
    except StoreError as exc:
        raise RoutewatchError(f"cannot read the store: {str(exc).rstrip('.')}.") from None


def _store_alerts(settings: Settings, args: argparse.Namespace) -> list[dict[str, Any]]:
    store = _open(settings)
    try:
        # (as the API lists them: with their acknowledgement and silences)
        page, _, _ = alerts(store, AlertFilter(state=args.state), limit=2**31)
        return page
    except StoreError:
        raise no_store(settings) from None
    finally:
        store.close()


def _store_changes(settings: Settings) -> Iterator[tuple[str, dict[str, Any]]]:
    """The store's alert log, entry by entry, read again every second."""
    after = 0
    while True:
        store = _open(settings)
        try:
            entries = store.alert_log(after=after)
        except StoreError:
            entries = []  # (not migrated yet: next second)
        finally:
            store.close()
        for entry in entries:
            after = entry["seq"]
            yield entry["change"], entry["alert"]
        if not entries:
            time.sleep(FOLLOW_POLL_S)


# -- from a running API -----------------------------------------------------------------------


def _get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return orjson.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise RoutewatchError(f"the API answered {exc.code} to {url}: {exc.reason}.") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RoutewatchError(
            f"cannot reach the API at {url} ({reason}): is routewatch api running there?"
        ) from None


def _api_alerts(api: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every alert the API lists for the filters, page by page."""
    query: dict[str, str] = {"limit": "1000"}
    for name in ("state", "kind", "cluster"):
        if getattr(args, name) is not None:
            query[name] = getattr(args, name)
    out: list[dict[str, Any]] = []
    while True:
        page = _get(f"{api.rstrip('/')}/alerts?{urllib.parse.urlencode(query)}")
        out += page["data"]
        if page["next"] is None:
            return out
        query["cursor"] = page["next"]


def _api_changes(api: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The API's live stream (Server-Sent Events), from the oldest change the store keeps;
    reconnected after the last event seen when it ends."""
    last = 0
    while True:
        url = f"{api.rstrip('/')}/alerts/stream?after={last}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                event: dict[str, str] = {}
                for raw in response:
                    line = raw.decode().rstrip("\r\n")
                    if line:
                        name, _, value = line.partition(":")
                        event[name] = value.removeprefix(" ")
                        continue
                    if "data" in event and "event" in event:
                        last = int(event.get("id", last))
                        yield event["event"], orjson.loads(event["data"])
                    event = {}
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            print(f"routewatch: the API's stream ended ({reason}); again in 2 s", file=sys.stderr)
            time.sleep(2)


# -- routewatch silence -----------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration_s(text: str) -> int:
    """``90s``, ``30m``, ``12h``, ``30d`` as seconds (argparse's type: its error names it)."""
    number, unit = text[:-1], text[-1:]
    if unit not in _UNITS or not number.isdigit() or int(number) <= 0:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a duration: give a whole number and s, m, h or d, e.g. 30d"
        )
    return int(number) * _UNITS[unit]


def register_silence(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "silence",
        help="silence one alert for a while (or lift its silence), in routewatch and, through "
        "routewatch notify, in Alertmanager",
        description="Silence one alert, by its id (GET /alerts, routewatch alerts -o wide), "
        "for a duration: it stays visible in routewatch with silenced_by, leaves the paging "
        "series routewatch_alert_open, and routewatch notify makes an Alertmanager silence "
        "matching it alone. Writes to the store of ROUTEWATCH_STORE_URL (or "
        "ROUTEWATCH_DATA_DIR), or with --api goes through a running API with the token of "
        "ROUTEWATCH_API_TOKEN.",
    )
    parser.add_argument("alert_id", metavar="ID", help="the alert's id")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--for", dest="duration", type=_duration_s, metavar="DURATION", help="e.g. 8h or 30d"
    )
    how.add_argument("--lift", action="store_true", help="end its silence now")
    parser.add_argument("--api", metavar="URL", help="a running API, e.g. http://127.0.0.1:8000")
    parser.set_defaults(handler=_silence)


def _silence(args: argparse.Namespace) -> int:
    now = int(time.time() * 1000)
    until = now if args.lift else now + args.duration * 1000
    if args.api:
        _api_silence(args.api, args.alert_id, until)
    else:
        settings = load(Settings)
        file = locate(settings.store_url).file
        if file is not None and not file.exists():
            raise no_store(settings)
        store = open_store(settings.store_url)
        try:
            if store.db.execute("SELECT 1 FROM alerts WHERE id = ?", (args.alert_id,)).fetchone():
                store.set_ack(args.alert_id, silenced_until=until, now_ms=now)
            else:
                raise RoutewatchError(
                    f"there is no alert with id {args.alert_id} in the store at "
                    f"{locate(settings.store_url).where}: copy the id from routewatch alerts -o "
                    "wide."
                )
        finally:
            store.close()
    if args.lift:
        print(f"Lifted the silence of {args.alert_id}.")
    else:
        print(f"Silenced {args.alert_id} until {iso_time(until)}.")
    return 0


def _api_silence(api: str, alert_id: str, until: int) -> None:
    path = f"/alerts/{urllib.parse.quote(alert_id)}/silence?until={until}"
    post(api, path, "the silence", "silencing")


def post(
    api: str, path: str, what: str, doing: str, *, timeout: float = 30
) -> tuple[int, dict[str, Any]]:
    """POST ``path`` to a running API with the token of ``ROUTEWATCH_API_TOKEN``: the status and
    JSON body of its answer, a 409 (a refusal that says why) included; any other refusal, or no
    token, is a :class:`RoutewatchError` naming ``what``."""
    token = os.environ.get("ROUTEWATCH_API_TOKEN", "")
    if not token:
        raise RoutewatchError(
            f"{doing} through the API needs its token: set ROUTEWATCH_API_TOKEN to the API's."
        )
    request = urllib.request.Request(
        f"{api.rstrip('/')}{path}", method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, orjson.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = {}
        if exc.code == 409 and isinstance(body, dict):
            return exc.code, body
        detail = (body.get("detail") if isinstance(body, dict) else None) or exc.reason
        raise RoutewatchError(f"the API refused {what} ({exc.code}): {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RoutewatchError(
            f"cannot reach the API at {api} ({reason}): is routewatch api running there?"
        ) from None
