"""``routewatch notify``: push every routewatch alert to Alertmanager, one Alertmanager alert per
routewatch alert, and keep silences the same on both sides (docs/alertmanager.md).

Each round (``ROUTEWATCH_NOTIFY_INTERVAL_S``) reads the store's open alerts and, for each
Alertmanager of ``ROUTEWATCH_ALERTMANAGER_URL``:

- sends each open alert that is new or changed since its last send there, or that it does
  not hold (it restarted: its alerts live in memory), and every one again each
  ``ROUTEWATCH_NOTIFY_RESEND_S`` and after a round it refused, firing until four resends from
  now; and the resolution of everything it holds firing from routewatch that is no longer
  open under those labels — resolved, or open under other labels since its severity changed;
- remembers in the store (``alertmanager_pushed``) what that Alertmanager holds firing, and
  forgets an alert there only once the Alertmanager has accepted its resolution: a restart or
  an outage loses no resolve, and re-sending is harmless (Alertmanager keys alerts by labels);
- reads the silences that hold routewatch alerts there into the store (the API shows them as
  ``silenced_by``), makes an Alertmanager silence matching one alert's ``routewatch_id`` for
  each routewatch silence (``POST /alerts/{id}/silence``), and expires it when routewatch's
  silence is lifted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any

import orjson
from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from api.alertmanager_client import Alertmanager, AlertmanagerError, parse_time
from api.settings import PublicSettings
from routewatch.alertmanager import Links, alert_labels, firing, labels_key, resolved, silence
from routewatch.settings import load
from routewatch.store import Store, StoreUnavailableError, open_store
from routewatch.store.views import open_alerts

__all__ = ["Notifier", "NotifySettings", "register"]

log = logging.getLogger("routewatch.notify")

Key = tuple[str, str]  # (alert id, labels key)


class NotifySettings(PublicSettings):
    """Built once, in ``routewatch notify``."""

    alertmanager_url: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Alertmanagers to push to, comma-separated base URLs (http://host:9093); "
        "every one gets every alert, as Prometheus sends to each. Unset: nothing is pushed.",
    )
    runbook_url: str = Field(
        default="",
        description="Where the alert catalogue (docs/alerts.md) is read; each alert's "
        "runbook_url is it with #<kind in lower case> (default <public_url>/runbook, which the "
        "API serves).",
    )
    notify_interval_s: float = Field(
        default=5.0, gt=0, description="Seconds between rounds: how soon a change is pushed."
    )
    notify_resend_s: float = Field(
        default=60.0,
        gt=0,
        description="Every open alert is sent again this often; each send is valid for four "
        "of these, so an alert whose pusher stopped ends in Alertmanager after that long.",
    )
    alertmanager_timeout_s: float = Field(
        default=10.0, gt=0, description="Timeout of one request to an Alertmanager."
    )

    @field_validator("alertmanager_url", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [u.strip() for u in value.split(",") if u.strip()]
        for url in value or []:
            if not str(url).startswith(("http://", "https://")):
                raise ValueError(
                    f"ROUTEWATCH_ALERTMANAGER_URL takes http:// or https:// base URLs separated "
                    f"by commas, got '{url}'"
                )
        return value

    @model_validator(mode="after")
    def _runbook(self) -> NotifySettings:
        if not self.runbook_url:
            object.__setattr__(self, "runbook_url", f"{self.public_url.rstrip('/')}/runbook")
        return self


def _digest(payload: dict[str, Any]) -> str:
    """What a send carries, but its validity: equal digests need no new send."""
    body = {k: v for k, v in payload.items() if k != "endsAt"}
    return hashlib.sha1(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


class Receiver:
    """One Alertmanager, and what this process sent it since it started."""

    def __init__(self, am: Alertmanager) -> None:
        self.am = am
        self.sent: dict[Key, str] = {}  # key -> digest of the last send accepted
        self.full_at = 0.0  # when every open alert was last sent (0: never, or after a failure)
        self.failing = False


class Notifier:
    """The rounds of ``routewatch notify`` over one store; ``clock`` is the wall clock in
    seconds (a test's may be moved)."""

    def __init__(self, settings: NotifySettings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self.links = Links(settings.public_url, settings.runbook_url)
        self.receivers = [
            Receiver(Alertmanager(url, settings.alertmanager_timeout_s))
            for url in settings.alertmanager_url
        ]

    def round(self) -> list[str]:
        """One round over every Alertmanager; the failures, one line each."""
        store = open_store(self.settings.store_url)
        try:
            return [f for r in self.receivers if (f := self._round(store, r)) is not None]
        finally:
            store.close()

    def _round(self, store: Store, receiver: Receiver) -> str | None:
        now_s = self.clock()
        now = int(now_s * 1000)
        url = receiver.am.url
        alerts = open_alerts(store)
        try:
            held = receiver.am.alerts()  # (what it holds now: after a restart, nothing)
            self._push(store, receiver, alerts, held, now, now_s)
            self._silences(store, receiver, alerts, held, now)
        except AlertmanagerError as exc:
            receiver.failing, receiver.full_at = True, 0.0
            store.record_push_failure(url, str(exc), now)
            return str(exc)
        if receiver.failing:
            log.info("Alertmanager at %s accepts pushes again.", url)
            receiver.failing = False
        return None

    def _push(
        self,
        store: Store,
        receiver: Receiver,
        alerts: list[dict[str, Any]],
        holds: list[dict[str, Any]],
        now: int,
        now_s: float,
    ) -> None:
        """Send what is new or changed, or missing there; resolve what it holds from us that
        is no longer open under those labels."""
        url, static = receiver.am.url, self.settings.alert_labels
        valid_ms = int(4 * self.settings.notify_resend_s * 1000)
        wanted: dict[Key, dict[str, Any]] = {}
        for a in alerts:
            labels = alert_labels(a, static)
            wanted[a["id"], labels_key(labels)] = firing(
                a, labels, self.links, now_ms=now, valid_ms=valid_ms
            )
        pushed = store.pushed(url)
        ended = [k for k in pushed if k not in wanted]
        there = {
            (a["labels"]["routewatch_id"], labels_key(a["labels"]))
            for a in holds
            if "routewatch_id" in a["labels"]
        }
        full = now_s - receiver.full_at >= self.settings.notify_resend_s
        sends = {
            k: p
            for k, p in wanted.items()
            if full or k not in there or receiver.sent.get(k) != _digest(p)
        }
        payload = list(sends.values()) + [self._resolution(store, k, now) for k in ended]
        receiver.am.post_alerts(payload)
        store.record_push(url, sends, ended, now)
        receiver.sent = {k: d for k, d in receiver.sent.items() if k in wanted}
        receiver.sent.update((k, _digest(p)) for k, p in sends.items())
        if full:
            receiver.full_at = now_s

    def _resolution(self, store: Store, key: Key, now: int) -> dict[str, Any]:
        """The end of what was pushed under ``key``: at the alert's resolution (event time),
        at its last change when it is open under other labels now (its severity changed), or
        now when the store no longer has it (reset)."""
        alert_id, labels = key
        row = store.db.execute(
            "SELECT state, updated_at, resolved_at FROM alerts WHERE id = ?", (alert_id,)
        ).fetchone()
        if row is None:
            ended = now
        else:
            ended = row["resolved_at"] if row["state"] == "resolved" else row["updated_at"]
        return resolved(orjson.loads(labels), min(ended, now), self.links)

    def _silences(
        self,
        store: Store,
        receiver: Receiver,
        alerts: list[dict[str, Any]],
        holds: list[dict[str, Any]],
        now: int,
    ) -> None:
        """Read the silences holding routewatch alerts there; make, move or expire the ones
        that stand for routewatch's own silences."""
        am = receiver.am
        active = {s["id"]: s for s in am.silences() if s["status"]["state"] == "active"}
        ours: dict[str, dict[str, Any]] = {}
        for s in active.values():
            alert_id = _ours(s)
            if alert_id is not None:
                ours[alert_id] = s
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for a in holds:
            alert_id = a["labels"].get("routewatch_id")
            for sid in a["status"].get("silencedBy") or []:
                if alert_id and sid in active:
                    rows[sid, alert_id] = _row(active[sid], alert_id, _ours(active[sid]))
        for alert_id, s in ours.items():
            rows.setdefault((s["id"], alert_id), _row(s, alert_id, alert_id))
        store.replace_silences(am.url, rows.values())

        wanted = {
            a["id"]: a["silenced_until"]
            for a in alerts
            if a.get("silenced_until") is not None and a["silenced_until"] > now
        }
        for alert_id, until in wanted.items():
            have = ours.get(alert_id)
            if have is not None and abs(parse_time(have["endsAt"]) - until) < 1000:
                continue
            am.post_silence(
                silence(
                    alert_id,
                    starts_ms=now,
                    ends_ms=until,
                    comment=f"Silenced through routewatch (POST /alerts/{alert_id}/silence).",
                    silence_id=None if have is None else have["id"],
                )
            )
        still_open = {a["id"] for a in alerts}
        for alert_id, s in ours.items():
            if alert_id not in wanted and alert_id in still_open:
                am.expire_silence(s["id"])  # routewatch's silence of this open alert lifted


def _ours(s: dict[str, Any]) -> str | None:
    """The alert id of a silence routewatch made (one exact routewatch_id matcher), else None."""
    matchers = s.get("matchers") or []
    if s.get("createdBy") != "routewatch" or len(matchers) != 1:
        return None
    m = matchers[0]
    if m["name"] != "routewatch_id" or m.get("isRegex") or not m.get("isEqual", True):
        return None
    return str(m["value"])


def _row(s: dict[str, Any], alert_id: str, ours: str | None) -> dict[str, Any]:
    return {
        "silence_id": s["id"],
        "alert_id": alert_id,
        "ends_at": parse_time(s["endsAt"]),
        "created_by": s.get("createdBy") or "",
        "comment": s.get("comment") or "",
        "ours": ours == alert_id,
    }


def run(settings: NotifySettings, stop: threading.Event) -> None:
    """Rounds until ``stop`` is set; a round's failures are logged once each, until they
    change."""
    notifier = Notifier(settings)
    said: set[str] = set()
    while not stop.is_set():
        try:
            failures = notifier.round()
        except StoreUnavailableError as exc:
            failures = [f"the store could not be read: {exc}"]
        for line in set(failures) - said:
            log.warning("%s; retrying every %g s.", line.rstrip("."), settings.notify_interval_s)
        said = set(failures)
        stop.wait(settings.notify_interval_s)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "notify",
        help="push the store's alerts to Alertmanager, and keep silences alike on both sides",
        description="Push every routewatch alert to each Alertmanager of "
        "ROUTEWATCH_ALERTMANAGER_URL (one Alertmanager alert per routewatch alert; resolved "
        "when routewatch resolves it), show Alertmanager's silences on routewatch's alerts, "
        "and make an Alertmanager silence for each silence made through routewatch. Runs "
        "until Ctrl-C or SIGTERM (docs/alertmanager.md).",
    )
    parser.add_argument(
        "--alertmanager",
        metavar="URL",
        help="Alertmanager base URL(s), comma-separated (default ROUTEWATCH_ALERTMANAGER_URL)",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    overrides = {"alertmanager_url": args.alertmanager} if args.alertmanager else {}
    settings = load(NotifySettings, **overrides)
    logging.basicConfig(level=logging.INFO, format="routewatch notify: %(message)s")
    if not settings.alertmanager_url:
        from routewatch.errors import RoutewatchError

        raise RoutewatchError(
            "No Alertmanager to push to: set ROUTEWATCH_ALERTMANAGER_URL (or give "
            "--alertmanager) to its base URL, e.g. http://127.0.0.1:9093."
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log.info(
        "pushing the alerts of %s to %s every %g s.",
        _where(settings.store_url),
        ", ".join(settings.alertmanager_url),
        settings.notify_interval_s,
    )
    with contextlib.suppress(KeyboardInterrupt):
        run(settings, stop)
    log.info("stopped.")
    return 0


def _where(store_url: str) -> str:
    from routewatch.store.backend import locate

    return locate(store_url).where
