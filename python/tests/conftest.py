"""Fixtures: a real tandemd from the build tree, in its own temporary data folder, listening on a
free loopback port and on a Unix socket in that folder, stopped at the end.

Where the programs are: TANDEMD_BIN, TANDEM_BIN (the ``tandem`` tool) and TANDEM_LIBRARY from the
environment (CTest passes them), else the repository's build/ folder."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy  # noqa: F401  (a missing numpy must fail the run here, loudly)
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))  # oracle.py; the package itself comes from PYTHONPATH (or is installed)


def _program(env: str, rel: str) -> str:
    path = os.environ.get(env) or str(REPO / "build" / rel)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is not an executable: build the project, or set {env}")
    return path


def tandemd_bin() -> str:
    return _program("TANDEMD_BIN", "daemon/tandemd")


def tandem_bin() -> str:
    return _program("TANDEM_BIN", "tools/tandem")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: the daemon is killed if the test process dies without stopping it
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _can_connect(family, addr) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        try:
            s.connect(addr)
            return True
        except OSError:
            return False


class Daemon:
    """One tandemd process. ``tcp`` and ``unix`` are its addresses as Client takes them."""

    def __init__(self, *flags: str):
        self.root = tempfile.mkdtemp(prefix="tandemd-py-")
        self.sock = os.path.join(self.root, "tandemd.sock")
        self.log_path = os.path.join(self.root, "tandemd.log")
        self.unix = "unix:" + self.sock
        self.flags = flags
        self.proc = None
        for attempt in range(5):
            self.port = _free_port()
            self.tcp = f"127.0.0.1:{self.port}"
            if self._start():
                return
        raise RuntimeError(f"tandemd could not take a port after 5 tries; its log:\n{self.log()}")

    def _start(self) -> bool:
        argv = [
            tandemd_bin(),
            "--data-dir", os.path.join(self.root, "data"),
            "--listen", self.tcp,
            "--listen", self.unix,
            "--threads", "2",
            "--engine-calibrate", "0",
            *self.flags,
        ]  # fmt: skip
        start = len(self.log())
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=_die_with_parent
            )
        t0 = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                text = self.log()[start:]
                if "address already in use" in text:
                    return False
                raise RuntimeError(f"tandemd exited during start-up ({self.proc.returncode}); its log:\n{text}")
            if (
                " ready\n" in self.log()[start:]
                and _can_connect(socket.AF_INET, ("127.0.0.1", self.port))
                and _can_connect(socket.AF_UNIX, self.sock)
            ):
                return True
            if time.monotonic() - t0 > 60:  # a GPU engine may take a while to start
                self.stop()
                raise RuntimeError(f"tandemd did not get ready in 60 s; its log:\n{self.log()}")
            time.sleep(0.01)

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def stop(self) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc

    def cleanup(self) -> None:
        self.stop()
        subprocess.run(["rm", "-rf", self.root], check=False)


# max-queries is lowered so that large queries are cut into several pipelined batches.
MAX_QUERIES = 1000


def serve():
    """For a fixture: a tandemd with the suites' flags; stopped afterwards, its exit status checked."""
    d = Daemon("--max-queries", str(MAX_QUERIES))
    yield d
    rc = d.stop()
    log = d.log()
    d.cleanup()
    assert rc == 0, f"tandemd exited with {rc}; its log:\n{log}"


@pytest.fixture(scope="session")
def daemon():
    yield from serve()


@pytest.fixture
def own_daemon():
    """A tandemd for one test alone: for what it counts server-wide (requests, connections)."""
    yield from serve()


@pytest.fixture
def client(daemon):
    import tandem

    with tandem.Client(daemon.tcp, timeout=10) as c:
        yield c
