"""An earlier revision of routewatch, run beside this checkout in the same benchmark run.

Issue 38's figures are each measured "beside today's design, in the same run": the design of
the day the issue was filed, not this checkout with a setting turned down. :data:`BASELINE` is
that design — the last commit before issue 38 changed the job (c062ce8, 2026-11-28: the whole
stream in one stateful group, one task). Its packages (``routewatch``, ``streaming``,
``emitter``, ``api``, ``dashboards``; not ``benchmarks``) are written once by ``git archive``
into ``.cache/revisions/<commit>/``, and a process runs them with that directory as its working
directory and first on its ``PYTHONPATH``, ahead of this checkout's editable install (whose
finder Python asks last). Spark's Python workers start in the driver's working directory with
its ``PYTHONPATH``, so they import the same code; :func:`check_workers` makes sure of it. This
checkout's root follows on the path, so that ``python -m benchmarks.<name>`` is still this
checkout's benchmark, running the revision's job.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from benchmarks.fleet_realtime import spark_processes

__all__ = ["BASELINE", "ROOT", "check_workers", "checkout", "environment", "stream_command"]

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "c062ce8"
PACKAGES = ("routewatch", "streaming", "emitter", "api", "dashboards")


class RevisionError(Exception):
    """A revision that cannot be checked out, or a process that did not run it."""


def _commit(revision: str) -> str:
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode:
        raise RevisionError(
            f"the revision {revision!r} is not in this clone's history: fetch it (a shallow "
            "clone lacks the older commits) or name another one"
        )
    return found.stdout.strip()


def checkout(revision: str, cache: Path = ROOT / ".cache" / "revisions") -> Path:
    """The directory holding ``revision``'s packages (in ``cache``), written on first use."""
    commit = _commit(revision)
    tree = cache / commit
    if tree.is_dir():
        return tree
    partial = tree.with_name(f"{commit}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, *PACKAGES],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(tree)  # (whole or not at all)
    return tree


def environment(tree: Path | None) -> tuple[dict[str, str], Path]:
    """The environment and working directory of a process that runs ``tree``'s packages
    (``None``: this checkout's)."""
    env = dict(os.environ)
    paths = [str(tree)] if tree is not None else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT)])
    env["PYSPARK_PYTHON"] = sys.executable
    return env, tree if tree is not None else ROOT


# A revision's ``routewatch stream``, without its command line's discovery: ``routewatch.cli``
# loads the entry point of every subcommand installed (this checkout's), and an earlier
# revision lacks the modules or functions of the ones added since (``reset``, say). The
# launcher registers the revision's own ``stream`` subcommand alone, and runs it as its
# ``routewatch.cli.main`` would.
_REVISION_STREAM = """
import argparse, sys
from routewatch.errors import RoutewatchError
from streaming.job.cli import register_stream
parser = argparse.ArgumentParser(prog="routewatch")
register_stream(parser.add_subparsers())
args = parser.parse_args(sys.argv[1:])
try:
    sys.exit(int(args.handler(args)))
except RoutewatchError as exc:
    print(f"routewatch: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def stream_command(tree: Path | None, *args: str) -> list[str]:
    """The command that runs ``routewatch stream *args`` of ``tree`` (``None``: this checkout),
    in :func:`environment`'s process."""
    if tree is None:
        return [sys.executable, "-m", "routewatch.cli", "stream", *args]
    return [sys.executable, "-c", _REVISION_STREAM, "stream", *args]


def check_workers(tree: Path | None) -> int:
    """Raise unless every Spark Python worker runs in ``tree`` (``None``: this checkout) with it
    first on its path; the number of workers checked."""
    expected = tree if tree is not None else ROOT
    checked = 0
    for group, pid, proc in spark_processes():
        if group != "python":
            continue
        try:
            cwd = Path(os.readlink(proc / "cwd"))
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # (ended meanwhile)
        path = next((v[11:].decode() for v in environ if v.startswith(b"PYTHONPATH=")), "")
        ours = [p for p in path.split(os.pathsep) if p in (str(ROOT), str(tree))]
        if cwd != expected or not ours or ours[0] != str(expected):
            raise RevisionError(
                f"the Spark Python worker {pid} runs in {cwd} with PYTHONPATH {path!r}, not "
                f"the code of {expected}: stop other Spark jobs on this machine and run again"
            )
        checked += 1
    return checked
