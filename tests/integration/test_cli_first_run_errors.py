"""Issue 27's first-hour stumbles, on real sshd test hosts: `sync --encrypt` without keys is
refused before any connection with a key recipe; a failed `prove` step has a line of its own;
every run writes its HTML report and prints its path; the output reads at 80 columns."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import Project, host_entry, wait_for

from gpuonboard import shell


def _connections(project: Project, name: str) -> int:
    return project.pool.log_counts(name)["connections"]


def test_encrypt_without_keys_is_refused_before_connecting(project: Project, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"x" * 100)
    entry = host_entry(project.pool.hosts["dataset"], project.pool)
    entry["vars"]["dataset"] = str(data)
    project.write_inventory({"dataset": entry})
    before = _connections(project, "dataset")
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert err.count("\n") == 0 and err.startswith("error: dataset: --encrypt needs vars.age_recipients"), err
    assert "gpuonboard keys.new" in err, err  # the recipe
    assert "Traceback" not in r.stderr
    assert _connections(project, "dataset") == before  # refused before any connection


def test_keys_new_writes_a_key_pair_the_upload_takes(project: Project, tmp_path: Path) -> None:
    """The recipe works: `keys.new` writes an identity file (0600) and prints the recipient and
    the inventory lines; with them `sync --encrypt --decrypt-on-host` uploads."""
    key = tmp_path / "keys" / "age-key.txt"
    r = project.cli("keys.new", "--file", str(key))
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert key.stat().st_mode & 0o777 == 0o600
    recipient = next(w for w in r.stdout.split() if w.startswith("age1"))
    assert f"age_identity_file: {key}" in r.stdout and f"age_recipients: [{recipient}]" in r.stdout
    again = project.cli("keys.new", "--file", str(key))  # never overwrites a key
    assert again.returncode == 2 and "already exists" in again.stderr, again.stderr
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"x" * 100)
    entry = host_entry(project.pool.hosts["dataset"], project.pool)
    entry["vars"].update({"dataset": str(data), "age_recipients": [recipient], "age_identity_file": str(key)})
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--check")
    assert r.returncode == 0, (r.stdout, r.stderr)


def test_a_failed_prove_step_has_its_own_line_and_a_short_verdict(project: Project, tmp_path: Path) -> None:
    """A prove run whose network step has rules (so a verdict line is printed) and whose
    disk_speed step fails: the failure had no line of its own, only a clause of the verdict."""
    entry = host_entry(project.pool.hosts["prove"], project.pool)
    disk = str(tmp_path / "no such dir")
    entry["vars"].update({"disk_test_dir": disk, "network_upload": False, "rtt_count": 2})
    project.write_inventory({"prove": entry})
    r = project.cli("provision", "--host", "prove", "--playbook", "prove", "--only", "network,disk_speed")
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    failed = [ln for ln in lines if ln.startswith("prove: disk_speed: failed: ")]
    assert len(failed) == 1, r.stdout
    verdict = next(ln for ln in lines if ln.startswith("verdict for prove: "))
    assert verdict == "verdict for prove: NO-GO, failed: step disk_speed", verdict


def test_every_run_writes_its_html_report_and_prints_its_path(project: Project) -> None:
    project.write_inventory({"good": host_entry(project.pool.hosts["good"], project.pool)})
    r = project.cli("check", "--host", "good")
    assert r.returncode in (0, 1), (r.stdout, r.stderr)
    run = project.root / "reports" / project.summary()["run_id"]
    html = run / "report.html"
    assert html.is_file() and "verdict" in html.read_text().lower()
    assert f"report: {html}" in r.stdout.splitlines()[-2:][0] + r.stdout.splitlines()[-1], r.stdout


def test_the_terminal_report_reads_at_80_columns(project: Project) -> None:
    """The mis-delivered box's NO-GO, at 80 columns: no line wider than the terminal, and
    the advice printed under the table as full-width lines, not squeezed into a column."""
    project.write_inventory({"misdelivered": host_entry(project.pool.hosts["misdelivered"], project.pool)})
    env = {**project.env(), "COLUMNS": "80"}
    r = subprocess.run(
        [*project.cli_argv(), "check", "--host", "misdelivered"],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    table = [ln for ln in lines if ln.startswith(("│", "┃", "┡", "├", "└", "┏", "╭", "|"))]
    assert all(len(ln) <= 80 for ln in table), "\n".join(ln for ln in table if len(ln) > 80)
    # the rows a terminal shows (a long advice line wraps there; the closing path lines left
    # out, as long as the temp dir's name): 142 before
    shown = [ln for ln in lines if not ln.startswith(("report: ", "reports: "))]
    rows = sum(max(1, -(-len(ln.rstrip()) // 80)) for ln in shown)
    # (the kernel-log rules read the profile's replayed log, which reaches back to boot: never
    # this machine's own dmesg, whose note "the log read starts after boot" wrapped their rows)
    assert not any(ln.rstrip().endswith("after boot)") for ln in shown), r.stdout
    assert rows <= 80, f"{rows} rows:\n{r.stdout}"
    notes = [ln for ln in lines if ln.startswith("  gpu_count (FAIL): 4 of the 8 ordered GPUs missing")]
    assert len(notes) == 1, r.stdout  # the advice: one full-width line under the table


def test_ctrl_c_of_check_mode_says_nothing_of_resuming(project: Project, tmp_path: Path) -> None:
    """Ctrl-C of `check` (check mode: it keeps no journal and uploads nothing) printed "to
    resume, rerun the same command: steps that finished are kept and skipped, and files already
    uploaded are not sent again": only commands that change the host (provision, prove, sync)
    say it now; `interrupted` stays the last word."""
    import signal

    from gpuonboard.testing.toolbox import add_executable

    h = project.pool.hosts["slow"]
    asked = tmp_path / "asked"
    # a GPU that never answers (and says it was asked: before, a fixed 1.5 s stood for "connected;
    # waiting in its probe", and a loaded machine's Ctrl-C came before the CLI had started)
    add_executable(h.bin_dir, "nvidia-smi", f"#!/bin/sh\ntouch {shell.quote(str(asked))}\nsleep 15\n")
    project.write_inventory({"slow": host_entry(h, project.pool)})
    proc = project.start("check", "--host", "slow")
    wait_for(asked, 60)  # connected; waiting in its probe
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, out + err
    lines = err.strip().splitlines()
    assert lines[-1] == "interrupted", err  # (the last word, as before)
    assert "to resume" not in err, err


def test_help_opens_with_the_tools_usage_and_commands() -> None:
    r = subprocess.run([*Project.cli_argv(), "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Usage: gpuonboard COMMAND [--OPTIONS]"), lines[:3]
    commands = r.stdout.index("Commands:")
    assert commands < r.stdout.index("\n  check ") < r.stdout.index("Invoke's core options")
    assert "gpuonboard --help COMMAND" in "\n".join(lines[:3])
