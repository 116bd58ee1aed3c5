"""One run of an alert's plan (docs/remedies.md): the checks that may refuse it, the live read,
a dry run (the default: nothing that changes the cluster is sent) or an apply with its
verification, and the audit of either.

:func:`run_remedy` is the one entry: ``routewatch remedy`` calls it with the OS user as actor,
the API's ``POST /alerts/{id}/remedy`` with its token's digest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from routewatch import remoting
from routewatch.errors import RoutewatchError
from routewatch.remedy.live import LiveCluster, UnreachableError
from routewatch.remedy.plan import (
    PERM_TEMPLATE,
    VALIDATE_SYSTEM_TOPIC,
    Action,
    Manual,
    Plan,
    Step,
)
from routewatch.remoting import Credentials, TopicConfig
from routewatch.rocketmq import PERM_WRITE, TBW102
from routewatch.store import Store
from routewatch.store.remedy_runs import record_run, release_lock, remedy_runs, take_lock
from routewatch.store.views.alerts import alert as stored_alert
from routewatch.terminal import iso_time

__all__ = ["RefusedError", "Report", "Request", "StepReport", "run_remedy"]

Status = Literal[
    "would change",
    "already so",
    "done",
    "not done",
    "refused",
    "manual: done",
    "manual: not yet",
]
Outcome = Literal["dry run", "done", "not done", "refused"]

# how long a verification polls, between two reads of every NameServer
POLL_S = 0.5
# a lock outlives its apply's verification by this much before another apply may take it
LOCK_MARGIN_MS = 60_000


class RefusedError(Exception):
    """The run was refused before it sent anything that changes the cluster: one sentence."""


@dataclass(frozen=True)
class Request:
    """What to run: the alert's plan (or its alternative), a dry run or an apply."""

    alert_id: str
    actor: str
    apply: bool = False
    alternative: bool = False
    allow_loss: bool = False
    verify_timeout_s: float = 60.0
    request_timeout_s: float = 5.0
    credentials: Credentials | None = None


@dataclass
class StepReport:
    n: int
    step: dict[str, Any]
    status: Status
    says: str

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "step": self.step, "status": self.status, "says": self.says}


@dataclass
class Report:
    """A run as the audit keeps it and the CLI and API show it."""

    alert_id: str
    cluster: str
    kind: str
    mode: Literal["dry_run", "apply"]
    alternative: bool
    actor: str
    started_at: int
    plan: dict[str, Any]
    ended_at: int = 0
    outcome: Outcome = "refused"
    refusal: str | None = None
    steps: list[StepReport] = field(default_factory=list)
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "alert_id": self.alert_id,
            "cluster": self.cluster,
            "kind": self.kind,
            "mode": self.mode,
            "alternative": self.alternative,
            "actor": self.actor,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "outcome": self.outcome,
            "refusal": self.refusal,
            "plan": self.plan,
            "steps": [s.to_dict() for s in self.steps],
        }


def _now() -> int:
    return int(time.time() * 1000)


def _config(c: TopicConfig | None) -> str:
    if c is None:
        return "not held"
    return f"{c.read_queue_nums} read / {c.write_queue_nums} write queues, perm {c.perm}"


@dataclass
class _Prepared:
    """A step, read against the live cluster: what it would change."""

    n: int
    step: Step
    status: Status
    says: str
    current: TopicConfig | None = None
    queues: int | None = None  # restore_template: the broker's defaultTopicQueueNums
    validate: str = "true"  # restore_template: validateSystemTopicWhenUpdateTopic before
    sent_at: float = 0.0

    def report(self, plan: Plan) -> StepReport:
        return StepReport(self.n, plan.step_dict(self.step), self.status, self.says)


class _Run:
    def __init__(self, store: Store, req: Request, alert: dict[str, Any], plan: Plan) -> None:
        self.store, self.req, self.alert, self.plan = store, req, alert, plan
        self.cluster = alert["cluster"]
        self.live = LiveCluster(plan.namesrvs, req.credentials, req.request_timeout_s)
        self.addrs = self._masters()

    # -- before anything is sent ---------------------------------------------------------------

    def _masters(self) -> dict[str, str]:
        """Each master of the cluster -> its address, as the collector saw it last (a plan's
        own addresses first)."""
        rows = self.store.db.execute(
            "SELECT broker, addr FROM brokers WHERE cluster = ? AND broker_id = 0 "
            "ORDER BY last_heartbeat",
            (self.cluster,),
        )
        addrs = {r["broker"]: r["addr"] for r in rows}
        for s in self.plan.steps + self.plan.path(alternative=True):
            if isinstance(s, Action) and s.broker is not None and s.addr is not None:
                addrs[s.broker] = s.addr
        return addrs

    def check_seen(self, steps: list[Step]) -> None:
        """Every NameServer and broker the run would ask is one the collector saw in the
        alert's cluster."""
        rows = list(
            self.store.db.execute(
                "SELECT namesrv, broker, broker_id, addr FROM brokers WHERE cluster = ?",
                (self.cluster,),
            )
        )
        namesrvs = {r["namesrv"] for r in rows}
        masters = {(r["broker"], r["addr"]) for r in rows if r["broker_id"] == 0}
        if not self.plan.namesrvs:
            raise RefusedError(
                f"The plan of alert {self.req.alert_id} names no NameServer to read."
            )
        targets = [s.namesrv for s in steps if isinstance(s, Action) and s.op == "delete_route"]
        for ns in [*self.plan.namesrvs, *targets]:
            if ns not in namesrvs:
                raise self._unseen(f"NameServer {ns} of the plan")
        for s in steps:
            if (
                isinstance(s, Action)
                and s.op != "delete_route"
                and (s.broker, s.addr) not in masters
            ):
                raise self._unseen(f"Broker {s.broker} at {s.addr}", as_master=True)

    def _unseen(self, what: str, as_master: bool = False) -> RefusedError:
        where = "as a master of" if as_master else "for"
        return RefusedError(
            f"{what} was never seen by the collector {where} cluster "
            f"{self.cluster}: routewatch acts only on the cluster it watches."
        )

    def _addr(self, broker: str) -> str:
        addr = self.addrs.get(broker)
        if addr is None:
            raise self._unseen(f"Broker {broker} of the plan")
        return addr

    def check_expects(self) -> None:
        """The cluster is still as the plan assumes."""
        expects = self.plan.expects
        topic = expects.get("topic")
        differ: list[str] = []
        if topic is not None:
            routes = self.live.routes(topic) if expects.get("routed") else {}
            for b, want in (expects.get("routed") or {}).items():
                got = {ns: r.queue(b) for ns, r in routes.items() if r and r.queue(b)}
                where = ", ".join(sorted(got))
                if want is None and got:
                    differ.append(f"{b} is routed {topic} on {where}")
                elif want == "writable" and not any(
                    q and q.perm & PERM_WRITE for q in got.values()
                ):
                    differ.append(f"{b} is routed {topic} writable on no NameServer")
                elif isinstance(want, list) and (
                    not got
                    or any(
                        q is None or [q.read_queue_nums, q.write_queue_nums] != want
                        for q in got.values()
                    )
                ):
                    counts = sorted(
                        {f"{q.read_queue_nums}/{q.write_queue_nums}" for q in got.values() if q}
                    )
                    now = ", ".join(counts) if counts else "nothing"
                    differ.append(
                        f"{b} is routed {topic} with {now} read/write queues, not "
                        f"{want[0]}/{want[1]}"
                    )
            for b, want in (expects.get("held") or {}).items():
                if (topic in self.live.table(self._addr(b))) != want:
                    differ.append(f"{b} {'does not hold' if want else 'holds'} {topic} itself")
        for b in expects.get("template_unusable") or []:
            template = self.live.table(self._addr(b)).get(TBW102)
            if template is not None and template.perm & 1:
                differ.append(f"{b}'s own TBW102 has INHERIT")
        if differ:
            raise RefusedError(
                f"The cluster is not as the plan assumes any more ({'; '.join(differ)}): the "
                "alert will follow the change; run the dry run again once it has."
            )

    def prepare(self, steps: list[Step]) -> list[_Prepared]:
        return [self._prepare(n, s) for n, s in enumerate(steps, 1)]

    def _prepare(self, n: int, step: Step) -> _Prepared:
        if isinstance(step, Manual):
            done, detail = self._check(step.check)
            status: Status = "manual: done" if done else "manual: not yet"
            return _Prepared(n, step, status, f"{step.check['says']}: {detail}")
        if step.op == "delete_route":
            assert step.namesrv is not None
            route = self.live.route(step.namesrv, step.topic)
            if route is None:
                return _Prepared(n, step, "already so", f"{step.namesrv} routes no {step.topic}")
            brokers = ", ".join(sorted(route.broker_names))
            return _Prepared(
                n,
                step,
                "would change",
                f"{step.topic} on {step.namesrv}: routed on {brokers} -> no route",
            )
        assert step.addr is not None
        table = self.live.table(step.addr)
        current = table.get(step.topic)
        if step.op == "restore_template":
            config = self.live.config(step.addr)
            if not config.five:
                raise RefusedError(
                    f"Broker {step.broker} ({step.addr}) runs RocketMQ 4.9, which refuses any "
                    "admin request on TBW102 (a system topic): take the plan's alternative "
                    f"(routewatch remedy {self.req.alert_id} --alternative), a restart with "
                    "autoCreateTopicEnable=true."
                )
            q = int(config.properties.get("defaultTopicQueueNums") or 8)
            validate = config.properties.get(VALIDATE_SYSTEM_TOPIC) or "true"
            target = TopicConfig(q, q, PERM_TEMPLATE)
            if current is not None and current.perm & 1:
                return _Prepared(n, step, "already so", f"TBW102 on {step.broker} has INHERIT")
            return _Prepared(
                n,
                step,
                "would change",
                f"TBW102 on {step.broker}: {_config(current)} -> {_config(target)} (its "
                f"defaultTopicQueueNums); {VALIDATE_SYSTEM_TOPIC} false for that request, then "
                f"back to {validate}",
                current=current,
                queues=q,
                validate=validate,
            )
        assert step.read_queues is not None and step.write_queues is not None
        assert step.perm is not None
        target = TopicConfig(step.read_queues, step.write_queues, step.perm)
        if current == target:
            return _Prepared(
                n, step, "already so", f"{step.topic} on {step.broker}: {_config(current)}"
            )
        return _Prepared(
            n,
            step,
            "would change",
            f"{step.topic} on {step.broker}: {_config(current)} -> {_config(target)}",
            current=current,
        )

    def _check(self, check: dict[str, Any]) -> tuple[bool, str]:
        """A manual step's check, on the live cluster: whether it holds, and what was seen."""
        kind = check["kind"]
        if kind == "alert_resolved":
            return False, f"alert {self.req.alert_id} is open"
        if kind == "namesrv_answers":
            silent = []
            for ns in check["namesrvs"]:
                try:
                    self.live.info(ns)
                except UnreachableError:
                    silent.append(ns)
            if silent:
                return False, f"{', '.join(silent)} did not answer"
            return True, "every one answers"
        if kind == "broker_live":
            broker, broker_id = check.get("broker"), check.get("broker_id") or 0
            missing = []
            for ns in self.plan.namesrvs:
                info = self.live.info(ns)
                names = info.clusters.get(self.cluster, frozenset())
                live = (
                    info.addr(broker, broker_id) is not None
                    if broker is not None
                    else any(info.addr(b, 0) for b in names)
                )
                if not live:
                    missing.append(ns)
            if missing:
                return False, f"not on {', '.join(missing)}"
            return True, "live on every NameServer"
        if kind == "template_usable":
            template = self.live.table(check["addr"]).get(TBW102)
            if template is not None and template.perm & 1:
                return True, "it has"
            return False, f"its TBW102 is {'missing' if template is None else 'without INHERIT'}"
        if kind == "routed_alike":
            apart = []
            for topic in check["topics"]:
                seen = {
                    (r.queue(check["broker"]) if r else None)
                    for r in self.live.routes(topic).values()
                }
                if len(seen) > 1:
                    apart.append(topic)
            if apart:
                return False, f"routed apart: {', '.join(apart[:5])}"
            return True, "routed alike"
        raise ValueError(f"unknown check {kind!r}")

    def check_loss(self, prepared: list[_Prepared]) -> None:
        """Nothing that could lose data or routes without --allow-loss."""
        if self.req.allow_loss:
            return
        for p in prepared:
            if isinstance(p.step, Action) and p.step.loses and p.status == "would change":
                raise RefusedError(
                    f"Step {p.n} could lose something ({p.step.loses}): add --allow-loss to "
                    "perform it."
                )
        for topic in sorted({p.step.topic for p in prepared if isinstance(p.step, Action)}):
            if topic == TBW102 and not self.plan.expects.get("topic"):
                continue
            now = {
                q.broker
                for r in self.live.routes(topic).values()
                if r
                for q in r.queues
                if q.perm & PERM_WRITE
            }
            after = set(now)
            for p in prepared:
                s = p.step
                if not isinstance(s, Action) or s.topic != topic or p.status != "would change":
                    continue
                if s.op == "delete_route":
                    after = set()
                elif s.perm is not None and s.perm & PERM_WRITE:
                    after.add(str(s.broker))
                else:
                    after.discard(str(s.broker))
            if len(after) < len(now):
                raise RefusedError(
                    f"The plan would leave {topic} routed writable on {len(after)} masters, "
                    f"fewer than the {len(now)} now: add --allow-loss to do it anyway."
                )

    # -- apply and verify ------------------------------------------------------------------

    def apply(self, prepared: list[_Prepared]) -> None:
        failed = False
        for p in prepared:
            step = p.step
            if not isinstance(step, Action) or p.status != "would change":
                continue
            if failed:
                p.status, p.says = "not done", f"not sent: an earlier step failed ({p.says})"
                continue
            try:
                self._perform(p, step)
            except remoting.RemotingError as exc:
                failed = True
                p.status = "refused"
                p.says = f"{step.target} refused it: {exc.remark or exc}"
            except OSError as exc:
                failed = True
                p.status = "not done"
                p.says = (
                    f"{step.target} did not answer ({exc}): whether it took the request is "
                    "unknown; the verification below says what the NameServers route"
                )
            else:
                p.sent_at = time.monotonic()

    def _perform(self, p: _Prepared, step: Action) -> None:
        creds, timeout = self.req.credentials, self.req.request_timeout_s
        if step.op == "delete_route":
            assert step.namesrv is not None
            remoting.delete_topic_in_namesrv(step.namesrv, step.topic, timeout=timeout)
            return
        assert step.addr is not None
        if step.op == "restore_template":
            assert p.queues is not None
            off = p.validate != "false"
            if off:
                remoting.update_broker_config(
                    step.addr, {VALIDATE_SYSTEM_TOPIC: "false"}, timeout=timeout, credentials=creds
                )
            try:
                remoting.update_topic_in_broker(
                    step.addr,
                    TBW102,
                    read_queues=p.queues,
                    write_queues=p.queues,
                    perm=PERM_TEMPLATE,
                    timeout=timeout,
                    credentials=creds,
                    keep=p.current,
                )
            finally:
                if off:
                    remoting.update_broker_config(
                        step.addr,
                        {VALIDATE_SYSTEM_TOPIC: p.validate},
                        timeout=timeout,
                        credentials=creds,
                    )
            return
        assert step.read_queues is not None and step.write_queues is not None
        remoting.update_topic_in_broker(
            step.addr,
            step.topic,
            read_queues=step.read_queues,
            write_queues=step.write_queues,
            perm=step.perm if step.perm is not None else 6,
            timeout=timeout,
            credentials=creds,
            keep=p.current,
        )

    def verify(self, prepared: list[_Prepared], started: float) -> None:
        """Re-read every NameServer until each sent step shows, or ``verify_timeout_s``."""
        pending = [p for p in prepared if p.sent_at]
        deadline = started + self.req.verify_timeout_s
        lacking: dict[int, str] = {}
        while pending:
            self.live.forget()
            for p in list(pending):
                try:
                    shown, lacking[p.n] = self._shows(p)
                except UnreachableError as exc:
                    shown, lacking[p.n] = False, str(exc)
                if shown:
                    pending.remove(p)
                    p.status = "done"
                    p.says += f" (seen {time.monotonic() - p.sent_at:.1f} s after it was sent)"
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        for p in pending:
            p.status = "not done"
            p.says += f" (sent, but within {self.req.verify_timeout_s:g} s {lacking.get(p.n, '')})"

    def _shows(self, p: _Prepared) -> tuple[bool, str]:
        step = p.step
        assert isinstance(step, Action)
        if step.op == "delete_route":
            assert step.namesrv is not None
            stale = {b for b, held in (self.plan.expects.get("held") or {}).items() if not held}
            route = self.live.route(step.namesrv, step.topic)
            left = sorted(stale & (route.broker_names if route else set()))
            return not left, f"{step.namesrv} still routed it on {', '.join(left)}"
        broker = str(step.broker)
        on = self.live.live_on(broker)
        if not on:
            return False, f"{broker} was live on no NameServer"
        if step.op == "restore_template":
            template = self.live.table(str(step.addr)).get(TBW102)
            if template is None or not template.perm & 1:
                return False, f"{broker}'s own TBW102 had no INHERIT"
            want = None
        else:
            want = (step.read_queues, step.write_queues, step.perm)
        behind = []
        for ns in on:
            route = self.live.route(ns, step.topic)
            q = route.queue(broker) if route else None
            if q is None or (
                (q.read_queue_nums, q.write_queue_nums, q.perm) != want
                if want is not None
                else not q.perm & 1
            ):
                behind.append(ns)
        return not behind, f"{', '.join(behind)} did not route it so"


def _check_dry_run(store: Store, req: Request, found: dict[str, Any]) -> None:
    """An apply runs the plan its actor's latest dry run showed, or none was run: a plan the
    job changed since (the cluster changed) is shown again before it is applied."""
    mine = [
        r
        for r in remedy_runs(store, alert_id=req.alert_id, limit=1000)
        if r["actor"] == req.actor and r["mode"] == "dry_run"
    ]
    if mine and mine[0]["plan"] != found["plan"]:
        raise RefusedError(
            f"The plan of alert {req.alert_id} changed since your dry run at "
            f"{iso_time(mine[0]['started_at'])} (the cluster changed): run the dry run again "
            "and check it before you apply."
        )


def run_remedy(
    store: Store, req: Request, *, audit: Callable[[dict[str, Any]], int] | None = None
) -> Report:
    """Run ``req`` against the store's alert and its live cluster; the report, audited (by
    ``audit``, or in ``store``). A refusal is a report with outcome ``refused`` and the
    sentence; an alert the store does not have is a :class:`RoutewatchError`."""
    found = stored_alert(store, req.alert_id)
    if found is None:
        raise RoutewatchError(
            f"there is no alert with id {req.alert_id} in the store: copy the id from "
            "routewatch alerts -o wide."
        )
    report = Report(
        alert_id=req.alert_id,
        cluster=found["cluster"],
        kind=found["kind"],
        mode="apply" if req.apply else "dry_run",
        alternative=req.alternative,
        actor=req.actor,
        started_at=_now(),
        plan=found.get("plan") or {},
    )
    started = time.monotonic()
    locked = False
    plan: Plan | None = None
    prepared: list[_Prepared] = []
    try:
        if found["state"] != "open":
            raise RefusedError(
                f"Alert {req.alert_id} was resolved at {iso_time(found['resolved_at'])}: there "
                "is nothing to remedy."
            )
        silences = found.get("silenced_by") or []
        if silences:
            s = silences[0]
            raise RefusedError(
                f"Alert {req.alert_id} is silenced until {iso_time(s['until'])} (by "
                f"{s.get('by') or s['source']}): lift the silence first (routewatch silence "
                f"{req.alert_id} --lift)."
            )
        if not found.get("plan"):
            raise RefusedError(
                f"Alert {req.alert_id} was written before alerts carried plans: it has none to "
                "run; its remedy says what to do."
            )
        if req.apply:
            _check_dry_run(store, req, found)
        plan = Plan.from_dict(found["plan"])
        if req.alternative and plan.alternative is None:
            raise RefusedError(
                f"The plan of alert {req.alert_id} has no alternative: run it without "
                "--alternative."
            )
        steps = plan.path(alternative=req.alternative)
        run = _Run(store, req, found, plan)
        run.check_seen(steps)
        run.check_expects()
        prepared = run.prepare(steps)
        run.check_loss(prepared)
        if req.apply:
            now = _now()
            expires = now + int(req.verify_timeout_s * 1000) + LOCK_MARGIN_MS
            held = take_lock(store, req.alert_id, req.actor, now, expires)
            if held is not None:
                raise RefusedError(
                    f"Another apply of alert {req.alert_id} is running (started at "
                    f"{iso_time(held['started_at'])} by {held['actor']}): wait for it to end."
                )
            locked, report.started_at = True, now
            run.apply(prepared)
            run.verify(prepared, started)
            actions = [p for p in prepared if isinstance(p.step, Action)]
            manual = [p for p in prepared if isinstance(p.step, Manual)]
            ok = all(p.status in ("done", "already so") for p in actions) and all(
                p.status == "manual: done" for p in manual
            )
            report.outcome = "done" if ok else "not done"
        else:
            report.outcome = "dry run"
    except RefusedError as exc:
        report.outcome, report.refusal = "refused", str(exc)
    except UnreachableError as exc:
        report.outcome = "refused"
        report.refusal = (
            f"{exc}: nothing was changed; run it again once every NameServer and broker of the "
            "plan answers."
        )
    finally:
        if locked:
            release_lock(store, req.alert_id, report.started_at)
        if plan is not None:
            report.steps = [p.report(plan) for p in prepared]
        report.ended_at = _now()
        report.seq = (audit or (lambda r: record_run(store, r)))(report.to_dict())
    return report
