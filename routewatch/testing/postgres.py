"""A real PostgreSQL server (Debian's ``postgresql`` package) on a free 127.0.0.1 port, for tests.

``.ci/install --test`` installs the package; ``ROUTEWATCH_TEST_PG_BIN`` points at another
directory of server binaries. initdb and the server refuse to run as root: when the tests run as
root, both run as the ``postgres`` system user in a directory that user owns; otherwise as the
tests' own user. The cluster trusts every connection from 127.0.0.1 as the superuser
``routewatch``, runs with ``fsync=off`` (a test's data may be lost in a power cut, not in a
restart) and is stopped by its own PID.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from routewatch.testing.processes import free_port, stop, wait_for

USER = "routewatch"  # the superuser initdb creates; trusted on 127.0.0.1
SYSTEM_USER = "postgres"  # the Unix user the server runs as
NEEDED = ("initdb", "postgres", "pg_isready")
# A Unix socket's path must fit in sun_path (108 bytes with the terminating NUL).
SOCKET_PATH_MAX = 107


def _has_server(bindir: Path) -> bool:
    return all((bindir / name).is_file() for name in NEEDED)


def _version(bindir: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", bindir.parent.name)) or (0,)


def pg_bindir() -> Path:
    """The directory of initdb, postgres and pg_isready; fails with a sentence on installing it."""
    override = os.environ.get("ROUTEWATCH_TEST_PG_BIN")
    if override:
        candidates = [Path(override)]
    else:
        candidates = []
        pg_config = shutil.which("pg_config")
        if pg_config:
            result = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=30, check=False
            )
            if result.returncode == 0 and result.stdout.strip():
                candidates.append(Path(result.stdout.strip()))
        candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
    for bindir in candidates:
        if _has_server(bindir):
            return bindir
    where = override or "pg_config --bindir or /usr/lib/postgresql/*/bin"
    raise RuntimeError(
        f"No PostgreSQL server (initdb, postgres, pg_isready) was found in {where}: run "
        "`bash .ci/install --test` (it installs Debian's postgresql package) or set "
        "ROUTEWATCH_TEST_PG_BIN to the directory of those binaries."
    )


def _as_root() -> bool:
    return os.geteuid() == 0


def _as_system_user(*argv: str) -> list[str]:
    return ["runuser", "-u", SYSTEM_USER, "--", *argv] if _as_root() else list(argv)


def _system_user_can_enter(directory: Path) -> bool:
    """True if the ``postgres`` user can reach ``directory`` (every parent searchable)."""
    result = subprocess.run(
        _as_system_user("test", "-x", str(directory)), capture_output=True, timeout=30, check=False
    )
    return result.returncode == 0


def _own_directory(path: Path) -> None:
    account = pwd.getpwnam(SYSTEM_USER)
    os.chown(path, account.pw_uid, account.pw_gid)
    path.chmod(0o700)


@dataclass
class Postgres:
    """One PostgreSQL cluster, created and started by :meth:`start`, stopped by :meth:`stop`.

    ``workdir`` keeps the server's log; the cluster itself lives in ``root`` (owned by
    ``postgres``): under ``workdir`` when that user can reach it, else in a fresh temporary
    directory, removed by :meth:`stop`.
    """

    workdir: Path
    port: int = 0
    bindir: Path = field(default_factory=pg_bindir)
    root: Path | None = None
    _own_root: bool = False
    _process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        assert self.root is not None, "the server has not been started"
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None, "the server has not been started"
        return self.root / "socket"

    @property
    def log(self) -> Path:
        return self.workdir / "postgres.log"

    @property
    def pid(self) -> int:
        assert self._process is not None, "the server is not running"
        return self._process.pid

    def url(self, dbname: str = "postgres") -> str:
        """The libpq URL of database ``dbname`` on this server, as the trusted superuser."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{dbname}"

    def _make_root(self) -> None:
        root = self.workdir / "pgcluster"
        socket_path = root / "socket" / f".s.PGSQL.{self.port}"
        if not _as_root() or (
            len(str(socket_path)) <= SOCKET_PATH_MAX and _system_user_can_enter(self.workdir)
        ):
            root.mkdir()
        else:
            # pytest's base temporary directory is 0700 root: use a directory postgres can reach.
            root = Path(tempfile.mkdtemp(prefix="routewatch-pg-"))
            self._own_root = True
        self.root = root
        (root / "socket").mkdir()
        if _as_root():
            _own_directory(root)
            _own_directory(root / "socket")

    def _initdb(self) -> None:
        result = subprocess.run(
            _as_system_user(
                str(self.bindir / "initdb"),
                f"--pgdata={self.data_dir}",
                f"--username={USER}",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ),
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"initdb failed with status {result.returncode}:\n{result.stdout}{result.stderr}"
            )

    def _run(self) -> None:
        # As root, started as the postgres user by Popen itself rather than through runuser:
        # runuser forwards a signal to its child but SIGKILLs it two seconds later, cutting a
        # shutdown short; and this way the PID held is the postmaster's own.
        uid: int | None = None
        gid: int | None = None
        groups: list[int] | None = None
        if _as_root():
            account = pwd.getpwnam(SYSTEM_USER)
            uid, gid = account.pw_uid, account.pw_gid
            groups = os.getgrouplist(SYSTEM_USER, account.pw_gid)
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [
                    str(self.bindir / "postgres"),
                    "-D",
                    str(self.data_dir),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.socket_dir),
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.root,
                user=uid,
                group=gid,
                extra_groups=groups,
                start_new_session=True,
            )

    def _ready(self) -> bool:
        assert self._process is not None
        if self._process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"PostgreSQL exited with status {self._process.returncode}:\n{tail}")
        result = subprocess.run(
            [
                str(self.bindir / "pg_isready"),
                "--host=127.0.0.1",
                f"--port={self.port}",
                f"--username={USER}",
                "--dbname=postgres",
                "--timeout=1",
            ],
            capture_output=True,
            timeout=30,
            check=False,
        )
        return result.returncode == 0

    def start(self, timeout: float = 60) -> None:
        """Create the cluster on first use, then start the server and wait until it accepts."""
        self.port = self.port or free_port()
        if self.root is None:
            self._make_root()
            self._initdb()
        self._run()
        wait_for(self._ready, timeout, f"PostgreSQL accepting connections on port {self.port}")

    def _shutdown(self, timeout: float) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        # SIGTERM is PostgreSQL's "smart" shutdown, which waits for every client to disconnect;
        # SIGINT is the "fast" one: it ends the sessions, checkpoints and exits.
        with contextlib.suppress(ProcessLookupError):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
        stop(process, timeout)  # SIGTERM, then SIGKILL, if it is still there

    def restart(self, timeout: float = 60) -> None:
        """Shut the server down (fast: open sessions are ended) and start it again on the same
        port and data directory, waiting until it accepts connections."""
        self._shutdown(timeout)
        self._run()
        wait_for(self._ready, timeout, f"PostgreSQL accepting again on port {self.port}")

    @contextlib.contextmanager
    def down(self, timeout: float = 60) -> Iterator[None]:
        """The server shut down (fast) for the duration of the block, then started again."""
        self._shutdown(timeout)
        try:
            yield
        finally:
            self._run()
            wait_for(self._ready, timeout, f"PostgreSQL accepting again on port {self.port}")

    def stop(self, timeout: float = 30) -> None:
        """Shut the server down by its PID and remove a temporary cluster directory."""
        self._shutdown(timeout)
        if self._own_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def create_database(self, name: str) -> str:
        """Create database ``name`` (owned by ``routewatch``); its URL."""
        with psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)


@contextlib.contextmanager
def running_postgres(workdir: Path) -> Iterator[Postgres]:
    """A started server with its cluster in (or beside) ``workdir``, stopped afterwards."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = Postgres(workdir=workdir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
