"""--host/--group/--limit given with nothing in them (`--host "$UNSET"`, `--host ,`) are usage
errors, never "no filter" (which selected every host of the inventory, and teardown then
deleted data on all of them); teardown refuses to run without an explicit selection."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpuonboard import api
from gpuonboard.errors import UsageError
from gpuonboard.inventory import Host
from gpuonboard.report import junit
from gpuonboard.results import HostResult, conclude
from gpuonboard.runner import RunOptions
from gpuonboard.runner.runlog import RunLog
from gpuonboard.steps.base import Check, StepResult


def test_selection_keeps_names_and_refuses_a_flag_given_empty() -> None:
    sel = api.selection("inv", "a, b", "gpu", "rack*")
    assert (list(sel.hosts), sel.group, sel.limit) == (["a", "b"], "gpu", "rack*")
    assert list(api.selection("inv", None).hosts) == []  # not given: no filter
    for kw, flag, what in (
        ({"host": ""}, "--host", "host"),
        ({"host": " , "}, "--host", "host"),
        ({"host": None, "group": ""}, "--group", "group"),
        ({"host": None, "limit": ","}, "--limit", "pattern"),
    ):
        with pytest.raises(UsageError) as err:
            api.selection("inv", **kw)  # type: ignore[arg-type]
        value = next(v for v in kw.values() if v is not None)
        assert err.value.message == (
            f"{flag} {value!r} names no {what}; give one (see `invoke inventory`), or leave {flag} out."
        )


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "inventory"
    inv.mkdir(exist_ok=True)
    # an address nothing listens on: a run that got past the selection would say unreachable
    (inv / "hosts.yml").write_text(
        "hosts:\n  a: {address: 127.0.0.1, port: 9}\n  b: {address: 127.0.0.1, port: 9}\n"
    )
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args, "--inventory", str(inv)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null"},
    )


def test_teardown_with_an_empty_or_no_selection_stops_before_connecting(tmp_path: Path) -> None:
    r = _cli(tmp_path, "teardown", "--host", "", "--check")
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: --host '' names no host; give one (see `invoke inventory`), or leave --host out."
    ), r.stderr
    r = _cli(tmp_path, "teardown", "--check")
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: teardown deletes data on the hosts it selects: name them with --host (or --group or"
        " --limit); it never takes every host of the inventory by default."
    ), r.stderr
    r = _cli(tmp_path, "check", "--group", "")
    assert r.returncode == 2 and "--group '' names no group" in r.stderr, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not (tmp_path / "reports").exists()


# What a first-time user sees from `invoke inventory`: the inventory's own words, as written.


def _inventory(tmp_path: Path, vendor_name: str, gpu_model: str) -> Path:
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "acme.yml").write_text(f"name: {vendor_name!r}\n")
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "hosts:\n"
        f"  g1: {{address: 10.0.0.1, vendor: acme, order: {{gpu_model: {gpu_model!r}, gpu_count: 1}}}}\n"
    )
    return hosts


@pytest.mark.parametrize(
    ("vendor_name", "gpu_model"),
    [
        ("Acme [cn/gpu] Cloud", "A100 [sxm4]"),  # (rich markup took these for styles and dropped them)
        ("Acme [/cn] Cloud", "A100 SXM"),  # (a closing tag that matches none: internal error, 70)
    ],
)
def test_the_inventory_table_shows_brackets_in_names_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    vendor_name: str,
    gpu_model: str,
) -> None:
    hosts = _inventory(tmp_path, vendor_name, gpu_model)
    monkeypatch.setenv("COLUMNS", "200")
    assert api.list_inventory(api.Selection(str(hosts)), api.Settings(project=tmp_path)) == 0
    out = capsys.readouterr().out
    assert vendor_name in out
    assert f"1 x {gpu_model}" in out


# QA round 3 (reports): junit.xml stays well-formed XML whatever text the hosts send back; an
# interrupted run ends its log saying so.


def test_junit_is_well_formed_with_control_characters_from_the_host() -> None:
    # a command's stderr with colour codes, a NUL and a lone surrogate (non-UTF-8 byte)
    nasty = "\x1b[31mboom\x01\x00\x1b[0m \udcff"
    host = Host(name="gpu\x07-1", address="10.0.0.1")
    results = [
        HostResult(
            host,
            "failed",
            f"step cmd: {nasty}",
            [
                StepResult("cmd", "failed", nasty),
                StepResult("acceptance", "failed", "x", [Check("gpu_model", "A100", nasty, "fail", nasty)]),
            ],
        ),
        HostResult(Host(name="gpu-2", address="10.0.0.2"), "unreachable", nasty),
    ]
    text = junit.render(conclude(results), "gpuonboard provision")
    root = ET.fromstring(text.encode("utf-8", "backslashreplace"))  # what write_atomic writes
    failures = [f.get("message") for f in root.iter("failure")]
    assert "\\x1b[31mboom\\x01\\x00\\x1b[0m \\udcff" in failures
    suite, error = root.find("testsuite"), root.find(".//error")
    assert suite is not None and suite.get("name") == "gpu\\x07-1"
    assert error is not None and (error.text or "").startswith("\\x1b[31mboom")
    assert junit._NOT_XML.sub("", "a\tb\nc\r") == "a\tb\nc\r"


def test_interrupted_run_says_so_in_its_log_and_late_writes_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuonboard import api
    from gpuonboard.inventory import Inventory
    from gpuonboard.runner import playbook

    seen: dict[str, RunLog] = {}

    def interrupted(hosts: object, book: object, inv: object, options: RunOptions) -> None:
        assert options.log is not None
        seen["log"] = options.log
        raise KeyboardInterrupt

    class NoPreconnect:
        def __init__(self, hosts: object) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(api, "run", interrupted)
    monkeypatch.setattr(api, "Preconnect", NoPreconnect)
    (tmp_path / "b.yml").write_text("steps:\n  - step: acceptance\n")
    host = Host(name="gpu-1", address="192.0.2.1")
    inv = Inventory(tmp_path / "hosts.yml", {"gpu-1": host}, {}, {})
    with pytest.raises(KeyboardInterrupt):
        api.execute(
            inv, [host], playbook.load(tmp_path / "b.yml"), api.Settings(project=tmp_path, quiet=True)
        )
    log = seen["log"]
    seen["log"].write("gpu-1", "a host thread ending after the run closed")  # no ValueError
    lines = log.path.read_text().splitlines()
    assert lines[-1].endswith("interrupted (Ctrl-C) after 0.0s; no report was written")
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    "payload",
    [
        '{"steps": [1, 2]}',
        '{"steps": {"a": 5}, "failed_step": "a"}',
        '{"steps": "xx"}',
        '{"failed_step": [1]}',
    ],
)
def test_a_journal_of_the_wrong_shape_is_unreadable_not_a_crash(tmp_path: Path, payload: str) -> None:
    from gpuonboard.runner import journal

    (tmp_path / "gpu-1__provision.json").write_text(payload)
    assert journal.load(tmp_path, "gpu-1", "provision") is None
    journal.save(tmp_path, journal.Journal("gpu-1", "provision", "20261130-000000-abcd"))  # overwrites it
    loaded = journal.load(tmp_path, "gpu-1", "provision")
    assert loaded is not None and loaded.run_id == "20261130-000000-abcd"


def test_inventory_table_never_cuts_an_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuonboard import api

    (tmp_path / "hosts.yml").write_text(
        "hosts:\n  sh-4090-1: {address: 198.51.100.23, port: 2222, user: ubuntu,"
        " order: {gpu_model: RTX 4090, gpu_count: 1, cpu_cores: 16, ram: 64GB}}\n"
    )
    monkeypatch.setenv("COLUMNS", "60")
    assert api.list_inventory(api.Selection(str(tmp_path / "hosts.yml")), api.Settings(project=tmp_path)) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    cells = "".join(line.split("│")[2].strip() for line in out.splitlines() if line.count("│") > 2)
    assert "ubuntu@198.51.100.23:2222" in cells


def test_recap_on_a_narrow_terminal_names_every_host_in_full() -> None:
    from rich.console import Console

    from gpuonboard.report import terminal

    results = [
        HostResult(
            Host(name=f"wuhan-a100-80g-nvlink-rack7-node-000{i}", address="x"),
            "failed",
            "step acceptance: gpu_count",
            [
                StepResult("acceptance", "failed", "x"),
                StepResult("record-acceptance-file-on-host", "skipped", "z"),
            ],
        )
        for i in (1, 2)
    ]
    con = Console(width=80, record=True, highlight=False)
    terminal.print_results(conclude(results), con)
    text = con.export_text()
    assert "…" not in text
    flat = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    assert "wuhan-a100-80g-nvlink-rack7-node-0001" in flat and "wuhan-a100-80g-nvlink-rack7-node-0002" in flat


def test_two_hosts_with_one_host_key_are_named_even_when_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuonboard import api
    from gpuonboard.inventory import Inventory
    from gpuonboard.runner import playbook

    a, b, c = (Host(name=n, address="10.0.0.1" if n != "c" else "10.0.0.2") for n in "abc")
    key = "SHA256:5IJwaZ54bD4TBvDUjT5xn4Bcfgdie4D97VJt4buhpOQ"

    def run(hosts: object, book: object, inv: object, options: object) -> list[HostResult]:
        return [
            HostResult(a, "ok", "1 ok", fingerprint=key),
            HostResult(b, "ok", "1 ok", fingerprint=key),
            HostResult(c, "ok", "1 ok", fingerprint="SHA256:other"),
        ]

    class NoPreconnect:
        def __init__(self, hosts: object) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(api, "run", run)
    monkeypatch.setattr(api, "Preconnect", NoPreconnect)
    (tmp_path / "b.yml").write_text("steps:\n  - step: acceptance\n")
    inv = Inventory(tmp_path / "hosts.yml", {"a": a, "b": b, "c": c}, {}, {})
    settings = api.Settings(project=tmp_path, quiet=True)
    assert api.execute(inv, [a, b, c], playbook.load(tmp_path / "b.yml"), settings) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"warning: hosts a, b presented the same host key ({key}): the same machine")
    assert err.count("warning:") == 1
