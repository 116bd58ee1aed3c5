"""The job's stop path: a stop that hangs does not keep the process alive."""

from __future__ import annotations

import subprocess
import sys

STUCK = """
import logging, threading
from streaming.jobs import exit_unless_stopped_within
logging.basicConfig(level=logging.INFO)
exit_unless_stopped_within(0.5)
threading.Event().wait()  # a stop that never returns
"""

DONE = """
from streaming.jobs import exit_unless_stopped_within
exit_unless_stopped_within(30)
print("stopped")
"""


def test_a_stop_that_hangs_exits_after_the_deadline_saying_why_and_where() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", STUCK], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1
    assert "the job did not stop within 0.5 s of the signal, so it exits" in proc.stderr
    # and where it was: every thread's stack, the main thread's in the wait that hung
    assert "Current thread" in proc.stderr or "Thread 0x" in proc.stderr
    assert 'File "<string>", line 6' in proc.stderr


def test_a_stop_that_ends_in_time_exits_normally() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", DONE], capture_output=True, text=True, timeout=60, check=False
    )
    assert (proc.returncode, proc.stdout) == (0, "stopped\n")
