"""An earlier revision's packages, and a process that runs them instead of this checkout's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.revisions import (
    BASELINE,
    ROOT,
    RevisionError,
    checkout,
    environment,
    stream_command,
)


def _show(revision: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "show", f"{revision}:{path}"], cwd=ROOT, capture_output=True, check=True
    ).stdout


def test_a_revision_is_its_packages_as_committed(tmp_path: Path) -> None:
    tree = checkout("HEAD", tmp_path)

    assert (tree / "streaming" / "job" / "stream.py").read_bytes() == _show(
        "HEAD", "streaming/job/stream.py"
    )
    assert {p.name for p in tree.iterdir()} == {
        "routewatch", "streaming", "emitter", "api", "dashboards"
    }  # fmt: skip
    assert checkout("HEAD", tmp_path) == tree  # (written once)


def test_a_revision_not_in_the_history_is_refused_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(RevisionError, match="is not in this clone's history: fetch it"):
        checkout("no-such-revision", tmp_path)


def test_a_process_imports_the_revision_before_this_checkout(tmp_path: Path) -> None:
    tree = checkout("HEAD", tmp_path)
    (tree / "streaming" / "marker_of_the_revision.py").write_text("")
    env, cwd = environment(tree)
    code = "import streaming.marker_of_the_revision, streaming, benchmarks; "
    code += "print(streaming.__file__); print(benchmarks.__file__)"

    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.split()

    assert out == [str(tree / "streaming" / "__init__.py"), str(ROOT / "benchmarks/__init__.py")]


def test_the_baseline_runs_its_own_stream_command_beside_this_checkouts_subcommands(
    tmp_path: Path,
) -> None:
    """The baseline's command line would load every subcommand this checkout installs, some of
    which it lacks (``reset``): its ``stream`` is started on its own."""
    tree = checkout(BASELINE, tmp_path)
    env, cwd = environment(tree)
    env["ROUTEWATCH_DATA_DIR"] = str(tmp_path / "data")

    done = subprocess.run(
        stream_command(tree, "--help"), env=env, cwd=cwd, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr
    assert "--source" in done.stdout
    assert stream_command(None, "--help")[1:] == ["-m", "routewatch.cli", "stream", "--help"]
