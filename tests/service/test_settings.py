"""Where the service may listen: loopback freely, anywhere else only with a token."""

from __future__ import annotations

import pytest

from metabo.cli.main import main
from metabo.exceptions import InputDataError
from metabo.service.settings import TOKEN_ENV, ServiceSettings, is_loopback


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.5.0.1", True), ("::1", True),
                                            ("localhost", True), ("0.0.0.0", False), ("192.168.1.4", False),
                                            ("::", False), ("example.org", False)])
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def test_a_non_loopback_host_needs_a_token_from_the_flag_or_the_environment():
    with pytest.raises(InputDataError, match="without a token"):
        ServiceSettings.resolve(host="0.0.0.0", environ={})
    assert ServiceSettings.resolve(host="0.0.0.0", token="t", environ={}).token == "t"
    assert ServiceSettings.resolve(host="0.0.0.0", environ={TOKEN_ENV: "e"}).token == "e"
    assert ServiceSettings.resolve(environ={}).token is None
    with pytest.raises(InputDataError, match="empty"):
        ServiceSettings(token=" ")
    with pytest.raises(InputDataError, match="port"):
        ServiceSettings(port=70000)
    assert ServiceSettings.resolve(environ={}, max_pending=7).max_pending == 7  # metabo serve --max-pending
    with pytest.raises(InputDataError, match="max_pending"):
        ServiceSettings.resolve(environ={}, max_pending=0)


def test_metabo_serve_refuses_to_start_off_loopback_without_a_token(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    kb = tmp_path / "kb.duckdb"
    assert main(["serve", "--host", "0.0.0.0", "--kb", str(kb)]) == 2
    assert "no knowledge base at" in capsys.readouterr().err and not kb.exists()  # a mistyped --kb: no new store
    assert main(["kb", "init", str(kb)]) == 0
    capsys.readouterr()
    made = kb.stat().st_mtime_ns
    assert main(["serve", "--host", "0.0.0.0", "--kb", str(kb)]) == 2
    assert "refusing to bind 0.0.0.0 without a token" in capsys.readouterr().err
    assert kb.stat().st_mtime_ns == made  # nothing was opened


def test_metabo_serve_on_a_store_or_port_in_use_says_so_in_one_line_before_serving(capsys, tmp_path):
    """A second ``metabo serve`` on a store another process holds (or on a taken port)
    prints one error line and no URL; it used to print the URL, then a traceback."""
    import socket
    import subprocess
    import sys

    kb = tmp_path / "kb.duckdb"
    script = f"from metabo.kb import KnowledgeBase; kb = KnowledgeBase({str(kb)!r}); print('open', flush=True); input()"
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert main(["serve", "--kb", str(kb), "--port", "0"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"in use by process {holder.pid}" in err and len(err.strip().splitlines()) == 1
    finally:
        holder.communicate("\n", timeout=60)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--kb", str(kb), "--port", str(port)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"cannot serve on 127.0.0.1:{port}" in err and len(err.strip().splitlines()) == 1
