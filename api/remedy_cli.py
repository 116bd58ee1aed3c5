"""``routewatch remedy``: an alert's plan, run against its live cluster — a dry run by default,
``--apply`` to perform and verify it; audited either way (docs/remedies.md).

It acts directly: it reads the store of ``ROUTEWATCH_STORE_URL`` (or ``ROUTEWATCH_DATA_DIR``),
speaks RocketMQ's admin protocol to the cluster itself and is audited as the OS user. With
``--api`` it goes through a running API instead, with the token of ``ROUTEWATCH_API_TOKEN``.
"""

from __future__ import annotations

import argparse
import getpass
import socket
import sys
import urllib.parse
from typing import Any

import orjson

from api.client import no_store, post
from routewatch.errors import RoutewatchError
from routewatch.remedy.run import run_remedy
from routewatch.remedy.settings import RemedySettings
from routewatch.settings import load
from routewatch.store import StoreError, open_store
from routewatch.store.backend import locate

__all__ = ["os_actor", "register", "render"]

# exit statuses: a dry run or an apply done; an apply not done; a refusal
EXIT = {"dry run": 0, "done": 0, "not done": 1, "refused": 2}


def os_actor() -> str:
    """Who runs a remedy from the command line, as the audit names them."""
    return f"os:{getpass.getuser()}@{socket.gethostname()}"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "remedy",
        help="show what an alert's plan would change on the live cluster (a dry run), or "
        "--apply it and verify it",
        description="Run an alert's plan against its live cluster. By default a dry run: it "
        "reads every NameServer's route and the brokers' own tables, checks that the cluster "
        "is still as the plan assumes, and prints what each step would change, sending nothing "
        "that changes the cluster. --apply performs the actions, then re-reads every "
        "NameServer until the routes show them (ROUTEWATCH_REMEDY_VERIFY_TIMEOUT_S, 60 s). "
        "Every run is audited in the store (GET /remedies). Exit status: 0 for a dry run or an "
        "apply done, 1 for an apply not done, 2 for a refusal.",
    )
    parser.add_argument("alert_id", metavar="ID", help="the alert's id")
    parser.add_argument("--apply", action="store_true", help="perform the plan and verify it")
    parser.add_argument(
        "--alternative", action="store_true", help="run the plan's alternative instead"
    )
    parser.add_argument(
        "--allow-loss",
        action="store_true",
        help="perform steps that could lose data or routes (the plan says which)",
    )
    parser.add_argument("--json", action="store_true", help="print the run as JSON")
    parser.add_argument("--api", metavar="URL", help="go through a running API")
    parser.set_defaults(handler=_remedy)


def _remedy(args: argparse.Namespace) -> int:
    if args.api:
        query = urllib.parse.urlencode(
            {
                "apply": str(args.apply).lower(),
                "alternative": str(args.alternative).lower(),
                "allow_loss": str(args.allow_loss).lower(),
            }
        )
        path = f"/alerts/{urllib.parse.quote(args.alert_id)}/remedy?{query}"
        doing = "applying a remedy" if args.apply else "a remedy's dry run"
        _, body = post(args.api, path, "the remedy", doing, timeout=900)
        run = body.get("run") or body
    else:
        settings = load(RemedySettings)
        file = locate(settings.store_url).file
        if file is not None and not file.exists():
            raise no_store(settings)
        try:
            store = open_store(settings.store_url)
        except StoreError as exc:
            raise RoutewatchError(f"cannot open the store: {str(exc).rstrip('.')}.") from None
        try:
            request = settings.request(
                args.alert_id,
                os_actor(),
                apply=args.apply,
                alternative=args.alternative,
                allow_loss=args.allow_loss,
            )
            run = run_remedy(store, request).to_dict()
        finally:
            store.close()
    if args.json:
        sys.stdout.write(orjson.dumps(run, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render(run), end="")
    if run["outcome"] == "refused":
        print(f"routewatch: {run['refusal']}", file=sys.stderr)
    return EXIT[run["outcome"]]


def render(run: dict[str, Any]) -> str:
    """A run for a terminal: the alert, each step with what it would change or did, its shell
    form, the plan's notes, and what to type next."""
    plan = run["plan"] or {}
    mode = "apply" if run["mode"] == "apply" else "dry run"
    path = "alternative" if run["alternative"] else "plan"
    lines = [f"{run['kind']} {run['alert_id']} (cluster {run['cluster']}): {mode} of its {path}"]
    if run["mode"] == "dry_run" and run["outcome"] != "refused":
        lines[0] += "; nothing that changes the cluster was sent"
    if run["alternative"] and plan.get("alternative"):
        lines.append(f"  {plan['alternative']['why']}")
    for s in run["steps"]:
        step = s["step"]
        what = (
            f"{step['op']} on {step['broker'] or step['namesrv']}"
            if step["type"] == "action"
            else f"by hand: {step['do']}"
        )
        lines.append(f"  {s['n']}. [{s['status']}] {what}")
        lines.append(f"       {s['says']}")
        if step["type"] == "action" and step.get("shell"):
            lines.append(f"       $ {step['shell']}")
        if step["type"] == "action" and step.get("loses"):
            lines.append(f"       could lose: {step['loses']} (needs --allow-loss)")
    for note in plan.get("notes") or []:
        lines.append(f"  note: {note}")
    if run["outcome"] == "refused":
        lines.append(f"  refused: {run['refusal']}")
    elif run["mode"] == "dry_run":
        flags = " --alternative" if run["alternative"] else ""
        lines.append(f"  to apply it: routewatch remedy {run['alert_id']}{flags} --apply")
        if not run["alternative"] and plan.get("alternative"):
            lines.append(
                f"  or instead: routewatch remedy {run['alert_id']} --alternative "
                f"({plan['alternative']['why']})"
            )
    else:
        lines.append(f"  outcome: {run['outcome']}")
    lines.append(f"  audited as run {run['seq']} by {run['actor']} (GET /remedies)")
    return "\n".join(lines) + "\n"
