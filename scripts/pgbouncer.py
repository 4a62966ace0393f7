"""Start Debian's PgBouncer in front of a PostgreSQL server, for tests and benchmarks.

    with PgBouncer("postgresql://postgres@127.0.0.1:5432/db", pool_size=2) as bouncer:
        psycopg.connect(bouncer.url)           # same user and database, through the pool
        bouncer.show("SERVERS")                # the admin console's SHOW, as dicts

    python scripts/pgbouncer.py [--pool-size N] [--pool-mode MODE] -- COMMAND [ARG...]

The command form runs COMMAND with ``PGBOUNCER_URL`` set to the pooled URL of
``DATABASE_URL`` and stops PgBouncer when it ends; the exit status is the
command's.

PgBouncer runs as a subprocess in a fresh temporary folder (configuration,
log, auth file), listens on 127.0.0.1 on a free port (no Unix socket), and
forwards every database name to the upstream server as the connecting user
(``auth_type = trust``; the upstream password, if the URL has one, is what
PgBouncer logs in with). PgBouncer refuses to run as root, so a root caller
runs it as an unprivileged user (``nobody`` unless ``WORKHORSE_PGBOUNCER_USER``
names another). Nothing here resets server connections between clients
(transaction mode never does): whatever session state a client leaves on a
server connection, the next client sees, as in production.

Only the standard library and psycopg are used, so scripts and tests can load
this file by path.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

DEBIAN_BINARY = "/usr/sbin/pgbouncer"
INSTALL_HINT = (
    "PgBouncer is not installed: install Debian's package as root "
    "(`apt-get install -y pgbouncer`, or `make pgbouncer`), or put a pgbouncer "
    "binary on the PATH"
)
STARTUP_TIMEOUT = 15.0


def pgbouncer_binary() -> str:
    """The pgbouncer executable's path; raises RuntimeError saying how to install it."""
    found = shutil.which("pgbouncer") or (
        DEBIAN_BINARY if os.access(DEBIAN_BINARY, os.X_OK) else None
    )
    if found is None:
        raise RuntimeError(INSTALL_HINT)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _quote(value: str) -> str:
    """A value for the auth file, whose strings are double-quoted with "" for "."""
    return '"' + value.replace('"', '""') + '"'


def _conninfo_value(value: str) -> str:
    """A value inside a [databases] line (libpq style: quote when needed)."""
    if value and all(ch.isalnum() or ch in "._-/" for ch in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class PgBouncer:
    """One PgBouncer in front of ``upstream_url``; a context manager, or start()/stop()."""

    def __init__(
        self,
        upstream_url: str,
        *,
        pool_size: int = 2,
        max_client_conn: int = 500,
        pool_mode: str = "transaction",
        port: int | None = None,
    ) -> None:
        if pool_mode not in ("session", "transaction", "statement"):
            raise ValueError(
                f"pool_mode={pool_mode!r}: PgBouncer knows 'session', 'transaction' and 'statement'"
            )
        if pool_size < 1:
            raise ValueError(f"pool_size={pool_size!r}: a pool needs at least 1 connection")
        self.upstream = conninfo_to_dict(upstream_url)
        self.pool_size = pool_size
        self.max_client_conn = max_client_conn
        self.pool_mode = pool_mode
        self.port = port or 0
        self.user = str(self.upstream.get("user") or pwd.getpwuid(os.getuid()).pw_name)
        self.dbname = str(self.upstream.get("dbname") or self.user)
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------
    # Where to connect

    @property
    def url(self) -> str:
        """The upstream URL's user and database, at PgBouncer's host and port."""
        return self.url_for(self.dbname)

    def url_for(self, dbname: str) -> str:
        """A URL for another database of the same upstream server, through the pool."""
        if not self.port:
            raise RuntimeError(
                "PgBouncer is not started: use it as a context manager or call start()"
            )
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def show(self, what: str) -> list[dict[str, Any]]:
        """``SHOW <what>`` on the admin console (POOLS, SERVERS, CLIENTS, ...), as dicts."""
        if not what.replace("_", "").isalnum():
            raise ValueError(f"SHOW {what!r}: expected one word such as POOLS or SERVERS")
        with psycopg.connect(
            self.url_for("pgbouncer"),
            autocommit=True,
            cursor_factory=psycopg.ClientCursor,  # the console speaks the simple protocol only
            prepare_threshold=None,
        ) as conn:
            cursor = conn.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def command(self, text: str) -> None:
        """Run an admin console command (``KILL db``, ``RESUME db``, ``RECONNECT``)."""
        with psycopg.connect(
            self.url_for("pgbouncer"),
            autocommit=True,
            cursor_factory=psycopg.ClientCursor,
            prepare_threshold=None,
        ) as conn:
            conn.execute(text)

    def drop_server_connections(self, dbname: str) -> None:
        """Close every client and server connection of ``dbname`` now, and
        take new ones again: what the server connections carried is gone."""
        self.command(f"KILL {dbname}")
        self.command(f"RESUME {dbname}")

    # ------------------------------------------------------------------
    # Life cycle

    def __enter__(self) -> PgBouncer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Write the configuration, start pgbouncer and wait until it answers."""
        if self._process is not None:
            raise RuntimeError("PgBouncer is already started")
        binary = pgbouncer_binary()
        self._dir = Path(tempfile.mkdtemp(prefix="workhorse-pgbouncer-"))
        run_as = self._run_as()
        if not self.port:
            self.port = _free_port()
        self._write_config()
        if run_as is not None:
            entry = pwd.getpwnam(run_as)
            for path in [self._dir, *self._dir.iterdir()]:
                os.chown(path, entry.pw_uid, entry.pw_gid)
        command = [binary, *(["-u", run_as] if run_as else []), str(self._dir / "pgbouncer.ini")]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C meant for the tests is ours to pass on
        )
        try:
            self._wait_until_answering()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop pgbouncer (its clients are cut off) and delete its folder."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)  # immediate shutdown
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def log(self) -> str:
        """PgBouncer's log so far (for a failing test's message)."""
        if self._dir is None:
            return ""
        try:
            return (self._dir / "pgbouncer.log").read_text(errors="replace")
        except OSError:
            return ""

    # ------------------------------------------------------------------

    @staticmethod
    def _run_as() -> str | None:
        if os.getuid() != 0:
            return None
        name = os.environ.get("WORKHORSE_PGBOUNCER_USER") or "nobody"
        try:
            pwd.getpwnam(name)
        except KeyError:
            raise RuntimeError(
                f"PgBouncer refuses to run as root and there is no user {name!r} to run "
                "it as: set WORKHORSE_PGBOUNCER_USER to an unprivileged user"
            ) from None
        return name

    def _write_config(self) -> None:
        assert self._dir is not None
        upstream = {
            key: value
            for key, value in self.upstream.items()
            if key in ("host", "port", "sslmode") and value
        }
        upstream.setdefault("host", "127.0.0.1")
        forward = " ".join(
            f"{key}={_conninfo_value(str(value))}" for key, value in upstream.items()
        )
        password = str(self.upstream.get("password") or "")
        (self._dir / "users.txt").write_text(f"{_quote(self.user)} {_quote(password)}\n")
        (self._dir / "pgbouncer.ini").write_text(
            "\n".join(
                [
                    "[databases]",
                    f"* = {forward}",
                    "",
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {self.port}",
                    "unix_socket_dir =",
                    "auth_type = trust",
                    f"auth_file = {self._dir / 'users.txt'}",
                    f"admin_users = {self.user}",
                    f"stats_users = {self.user}",
                    f"pool_mode = {self.pool_mode}",
                    f"default_pool_size = {self.pool_size}",
                    "min_pool_size = 0",
                    "reserve_pool_size = 0",
                    f"max_client_conn = {self.max_client_conn}",
                    "ignore_startup_parameters = extra_float_digits",
                    f"logfile = {self._dir / 'pgbouncer.log'}",
                    f"pidfile = {self._dir / 'pgbouncer.pid'}",
                    "",
                ]
            )
        )

    def _wait_until_answering(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"pgbouncer exited with status {self._process.returncode} "
                    f"at start:\n{self.log()}"
                )
            try:
                self.show("VERSION")
                return
            except psycopg.OperationalError as error:
                last = error
                time.sleep(0.05)
        raise RuntimeError(
            f"pgbouncer did not answer on 127.0.0.1:{self.port} within "
            f"{STARTUP_TIMEOUT:.0f} s ({last}):\n{self.log()}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pool-size", type=int, default=2)
    parser.add_argument("--pool-mode", default="transaction")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command to run after --")
    upstream = os.environ.get("DATABASE_URL")
    if not upstream:
        parser.error("DATABASE_URL is not set (run under scripts/with_database.py)")
    try:
        bouncer = PgBouncer(upstream, pool_size=args.pool_size, pool_mode=args.pool_mode)
        bouncer.start()
    except (RuntimeError, ValueError) as error:
        print(f"pgbouncer: {error}", file=sys.stderr)
        return 2
    try:
        with contextlib.suppress(KeyboardInterrupt):
            return subprocess.call(command, env={**os.environ, "PGBOUNCER_URL": bouncer.url})
        return 130
    finally:
        bouncer.stop()


if __name__ == "__main__":
    sys.exit(main())
