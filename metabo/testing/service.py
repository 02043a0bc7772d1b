"""The service as a real process, for the end-to-end test and the benchmark.

:class:`ServerProcess` runs ``metabo serve`` on a free loopback port in a subprocess,
waits until it answers, reads its peak memory (``VmHWM`` of ``/proc/<pid>/status``) and
stops it with SIGTERM (uvicorn's graceful shutdown, which closes the store). Run as a
module, this file is a worker: ``python -m metabo.testing.service URL STUDY N [START]`` asks
and tells ``N`` trials of a study with a deterministic objective, from the Unix time
``START`` on (so that several workers start together), and prints them as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from metabo.exceptions import MetaboError


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command() -> list[str]:
    """``metabo`` of this environment (its console script, else ``python -m``)."""
    script = Path(sys.executable).with_name("metabo")
    return [str(script)] if script.exists() else [sys.executable, "-m", "metabo.cli.main"]


class ServerProcess:
    """``metabo serve --port <free> --kb <kb_path>`` in a subprocess (module docstring).

    Args:
        kb_path: the store served.
        token: passed as ``--token`` if given.
        startup_timeout: seconds to wait for ``/health``.
    """

    def __init__(self, kb_path: str | Path, *, token: str | None = None, startup_timeout: float = 30.0) -> None:
        self.kb_path, self.token, self.startup_timeout = Path(kb_path), token, startup_timeout
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # the server's stderr (a pipe could fill and block it)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        self.port = free_port()
        command = [*serve_command(), "serve", "--port", str(self.port), "--kb", str(self.kb_path)]
        if self.token:
            command += ["--token", self.token]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise MetaboError(f"metabo serve exited with {self.process.returncode}: {self.stderr()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise MetaboError(f"metabo serve did not answer on {self.url} within {self.startup_timeout} s")

    def peak_memory_mb(self) -> float:
        """The server's peak resident memory (VmHWM), in MiB."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise MetaboError("no VmHWM in /proc/<pid>/status")

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait (SIGKILL after ``timeout``); the exit code."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        code, self.process = self.process.returncode, None
        return int(code)

    def stderr(self) -> str:
        """What the server wrote to stderr so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def objective(config_id: str) -> float:
    """A deterministic value in [0, 1) per configuration."""
    return int(config_id[:8], 16) / 16**8


def work(url: str, study_id: str, n: int, token: str | None = None) -> list[dict[str, object]]:
    """Ask and tell ``n`` trials of ``study_id``; the trials told (number, config id, value)."""
    from metabo.service.client import RemoteOptimizer

    told = []
    with RemoteOptimizer(url, study_id, token=token) as opt:
        for _ in range(n):
            trial = opt.ask()
            value = objective(trial.config_id)
            opt.tell(trial, value)
            told.append({"number": trial.number, "config_id": trial.config_id, "value": value, "pid": os.getpid()})
    return told


if __name__ == "__main__":  # pragma: no cover - run by the end-to-end test
    import metabo.service.client  # noqa: F401 - imported before START, so that neither worker starts late
    if len(sys.argv) > 4:
        time.sleep(max(0.0, float(sys.argv[4]) - time.time()))
    print(json.dumps(work(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
