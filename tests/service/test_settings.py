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


def test_metabo_serve_refuses_to_start_off_loopback_without_a_token(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--kb", str(tmp_path / "kb.duckdb")]) == 2
    assert "refusing to bind 0.0.0.0 without a token" in capsys.readouterr().err
    assert not (tmp_path / "kb.duckdb").exists()  # nothing was opened
