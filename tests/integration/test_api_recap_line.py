"""The line that ends every run, `reports: DIR  log: FILE`, as a user copies or greps it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gpuonboard import api


def _closed_loopback_port() -> int:
    with socket.socket() as s:  # a port nothing listens on once this closes: connection refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_reports_line_is_one_line_with_the_paths_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "experiments[v2]" / "a-long-project-directory-name-for-a-narrow-terminal"
    project.mkdir(parents=True)
    (project / "hosts.yml").write_text(
        f"hosts:\n  gone: {{address: 127.0.0.1, port: {_closed_loopback_port()}}}\n"
    )
    monkeypatch.setenv("COLUMNS", "60")
    settings = api.Settings(project=project, connect_retries=0, progress=False)
    code = api.provision(api.Selection("hosts.yml", ["gone"]), settings, "acceptance", check=True)
    assert code == 3  # unreachable
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("reports: ")]
    assert len(lines) == 1
    reports, _, log = lines[0].removeprefix("reports: ").partition("  log: ")
    assert Path(reports).is_dir() and Path(reports).parent == project / "reports"
    assert Path(log).is_file() and Path(log).parent == project / ".gpuonboard" / "logs"
