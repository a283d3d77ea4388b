"""End to end over real SSH: acceptance verdicts, host keys, jump chains, check mode, idempotency, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml
from conftest import REPO, LongJob, Project, host_entry, wait_for

from gpuonboard.testing import TestHostPool


def test_correct_a100_box_passes_every_rule(project: Project, pool: TestHostPool) -> None:
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool)})
    r = project.cli("check", "--host", "good")
    assert r.returncode == 0, r.stderr + r.stdout
    rules = project.rules("good")
    verdicts = {n: x["verdict"] for n, x in rules.items()}
    acceptance_rules = ["nvidia_driver", "gpu_model", "gpu_count", "vram", "cpu_cores", "ram", "data_disk"]
    assert all(verdicts[n] == "pass" for n in [*acceptance_rules, "interconnect", "min_driver"])
    # the real capture behind this box has MIG enabled and persistence off: degraded, not failed;
    # an 8-GPU NVSwitch board whose fabric manager no output shows (the test host has no systemd,
    # the A100 XML reports no fabric state) is unverified, never a pass; so are NVLink error
    # counters no capture of this box gives (`nvlink -e` is not replayed)
    assert {n: v for n, v in verdicts.items() if v != "pass"} == {
        "mig_mode": "warn",
        "persistence_mode": "warn",
        "fabric_manager": "unverified",
        "nvlink_errors": "unverified",
        "memory_repair": "unverified",  # MIG on: <remapped_rows>N/A</remapped_rows>, not read
    }
    assert rules["nvlink_links"]["actual"] == "all links active on 8 GPU(s) at 25 GB/s"
    # the profile's replayed kernel log (a real boot's, from its banner; read over SSH by the probe)
    assert (rules["gpu_xid"]["verdict"], rules["gpu_xid"]["actual"]) == ("pass", "no Xid in the kernel log")
    assert rules["ngc_driver"]["actual"] == (
        "535.54.03 on datacenter GPU (NVIDIA A100-SXM4-80GB): compatible"
    )
    assert rules["gpu_model"]["actual"] == "8 x NVIDIA A100-SXM4-80GB"
    assert rules["interconnect"]["actual"] == "nvlink (weakest GPU link NV18)"
    doc = project.summary()
    assert doc["schema"] == "gpuonboard.summary/1"
    assert doc["hosts"][0]["host_key_fingerprint"] == pool.hosts["good"].fingerprint
    assert doc["exit_code"] == 0
    junit = (project.root / "reports" / "latest" / "junit.xml").read_text()
    assert junit.count("<testcase") == len(rules) and "<failure" not in junit
    assert "PASS" in r.stdout and "good" in r.stdout


def test_misdelivered_box_fails_with_expected_and_actual(project: Project, pool: TestHostPool) -> None:
    project.write_inventory({"misdelivered": host_entry(pool.hosts["misdelivered"], pool)})
    r = project.cli("check", "--host", "misdelivered")
    assert r.returncode == 1, r.stderr + r.stdout
    rules = project.rules("misdelivered")
    assert rules["gpu_count"] == {
        "name": "gpu_count",
        "expected": "8",
        "actual": "4 (MIG on: 16 slices)",
        "verdict": "fail",
        "detail": "4 of the 8 ordered GPUs missing; ask the vendor to install them or for the box that"
        " was ordered",
    }
    assert rules["ram"]["expected"] == ">= 1.0 TiB"
    assert rules["ram"]["actual"] == "1.9 GiB (2.1 GB)"
    assert rules["ram"]["verdict"] == "fail"
    assert rules["interconnect"]["expected"] == "nvlink"
    assert rules["interconnect"]["actual"] == "pcie (weakest GPU link SYS)"
    assert rules["interconnect"]["verdict"] == "fail"
    assert rules["gpu_model"]["verdict"] == "pass"
    assert rules["vram"]["verdict"] == "pass"
    junit = (project.root / "reports" / "latest" / "junit.xml").read_text()
    assert junit.count("<failure") == 3
    assert "FAIL" in r.stdout


def test_box_without_driver_fails_with_nvidia_smi_not_found(project: Project, pool: TestHostPool) -> None:
    project.write_inventory({"nodriver": host_entry(pool.hosts["nodriver"], pool)})
    r = project.cli("check", "--host", "nodriver")
    assert r.returncode == 1
    rules = project.rules("nodriver")
    assert rules["nvidia_driver"]["actual"] == "nvidia-smi not found"
    assert rules["nvidia_driver"]["verdict"] == "fail"
    assert rules["gpu_count"]["actual"] == "unknown: nvidia-smi not found"
    # the rest of the box is still judged from real facts
    assert rules["cpu_cores"]["verdict"] == "pass"
    assert rules["data_disk"]["verdict"] == "pass"


def test_unreachable_host_is_reported_while_others_complete(project: Project, pool: TestHostPool) -> None:
    addr, port = pool.unreachable_address()
    project.write_inventory(
        {
            "good": host_entry(pool.hosts["good"], pool),
            "gone": {"address": addr, "port": port, "key_file": str(pool.client_key)},
            "rtx": host_entry(pool.hosts["rtx"], pool),
        }
    )
    r = project.cli("check", "--connect-retries", "0")
    assert r.returncode == 1, r.stdout  # rtx fails its (A100) order; gone is unreachable
    hosts = {h["name"]: h for h in project.summary()["hosts"]}
    assert hosts["good"]["status"] == "ok"
    assert hosts["rtx"]["status"] == "failed"
    assert hosts["gone"]["status"] == "unreachable"
    assert hosts["gone"]["msg"] == (
        f"host gone ({addr}:{port}) is unreachable: connection refused; check the address, port and"
        " firewall, or whether the server is up."
    )
    # only unreachable: exit code 3
    project.write_inventory({"gone": {"address": addr, "port": port, "key_file": str(pool.client_key)}})
    assert project.cli("check", "--connect-retries", "0").returncode == 3


def test_unknown_host_key_refused_then_trusted_and_recorded(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool, pin=False)})
    r = project.cli("check")
    assert r.returncode == 4
    msg = project.summary()["hosts"][0]["msg"]
    assert msg == (
        f"host good ({h.address}) has an unknown host key {h.fingerprint}; confirm it with the vendor,"
        " then rerun with --trust-new-hosts or pin it as host_key in the inventory."
    )
    known = project.root / ".gpuonboard" / "known_hosts"
    assert not known.exists()
    assert project.cli("check", "--trust-new-hosts").returncode == 0
    assert h.host_key_pub.split()[1] in known.read_text()
    assert project.cli("check").returncode == 0  # now known: accepted without the flag


def test_changed_host_key_is_refused(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["keyed"]
    project.write_inventory({"keyed": host_entry(h, pool, pin=False)})
    assert project.cli("check", "--trust-new-hosts").returncode == 0
    old = h.fingerprint
    h.regenerate_host_key()
    r = project.cli("check", "--trust-new-hosts")
    assert r.returncode == 4
    msg = project.summary()["hosts"][0]["msg"]
    assert f"presented a DIFFERENT host key ({h.fingerprint})" in msg
    assert f"({old})" in msg and "man-in-the-middle" in msg
    # pinning the new key does not override the recorded old one silently (it was accepted, and
    # a second line appended on every run): one sentence, known_hosts unchanged
    known = project.root / ".gpuonboard" / "known_hosts"
    lines = known.read_text()
    project.write_inventory({"keyed": host_entry(h, pool, pin=False, host_key=h.fingerprint)})
    for _ in range(2):
        assert project.cli("check").returncode == 4
        assert project.summary()["hosts"][0]["msg"] == (
            f"host keyed ({h.address}) presented the host key the inventory pins ({h.fingerprint}), but"
            f" {known} records another one for it ({old}); the connection was refused. If the vendor"
            " reinstalled the server and the pin is the new key, delete the old line there, then rerun."
        )
        assert known.read_text() == lines
    known.unlink()  # the old line deleted: the pin alone decides, and is recorded once
    for _ in range(2):
        assert project.cli("check").returncode == 0
    assert known.read_text().count(h.host_key_pub.split()[1]) == 1
    # a pinned fingerprint that does not match is refused too
    project.write_inventory({"keyed": host_entry(h, pool, pin=False, host_key=old)})
    (project.root / ".gpuonboard" / "known_hosts").unlink()
    assert project.cli("check").returncode == 4
    assert "but the inventory pins" in project.summary()["hosts"][0]["msg"]


def test_two_hop_jump_chain(project: Project, pool: TestHostPool) -> None:
    b1, b2, target = pool.hosts["bastion1"], pool.hosts["bastion2"], pool.hosts["behind"]
    before = {n: pool.log_counts(n)["logins"] for n in ("bastion1", "bastion2", "behind")}
    project.write_inventory(
        {
            "bastion1": host_entry(b1, pool),
            "bastion2": host_entry(b2, pool, jump="bastion1"),
            "behind": host_entry(target, pool, jump=["bastion1", "bastion2"]),
        }
    )
    r = project.cli("check", "--host", "behind")
    assert r.returncode == 0, r.stdout + r.stderr
    after = {n: pool.log_counts(n)["logins"] for n in before}
    assert {n: after[n] - before[n] for n in before} == {"bastion1": 1, "bastion2": 1, "behind": 1}
    assert project.rules("behind")["gpu_count"]["verdict"] == "pass"


def _provision_inventory(project: Project, pool: TestHostPool) -> Path:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    return h.home / "gpuonboard-state" / "acceptance.env"


def test_check_mode_changes_nothing(project: Project, pool: TestHostPool) -> None:
    dest = _provision_inventory(project, pool)
    dest.unlink(missing_ok=True)
    # container: the "good" box has GPUs but no NVIDIA container toolkit (test_container.py)
    r = project.cli("provision", "--check", "--skip", "container")
    assert r.returncode == 0, r.stdout + r.stderr
    steps = {s["step"]: s for s in project.summary()["hosts"][0]["steps"]}
    record = steps["record-acceptance"]
    assert record["status"] == "changed" and record["msg"].startswith("would create")
    assert not dest.exists() and not dest.parent.exists()


def test_second_run_changes_nothing(project: Project, pool: TestHostPool) -> None:
    dest = _provision_inventory(project, pool)
    dest.unlink(missing_ok=True)
    assert project.cli("provision", "--skip", "container").returncode == 0  # see test_container.py
    first = project.summary()["hosts"][0]
    assert first["status"] == "changed"
    content, stat = dest.read_text(), dest.stat()
    assert "DELIVERED_GPU_COUNT=8" in content
    assert oct(stat.st_mode & 0o777) == "0o644"
    before = pool.log_counts("good")
    assert project.cli("provision", "--skip", "container").returncode == 0
    second = project.summary()["hosts"][0]
    assert second["status"] == "ok"
    assert [s["status"] for s in second["steps"]] == ["ok", "ok", "ok", "ok", "ok"]
    # every rule the same, but the GPU ledger's, which now knows this box's GPUs
    assert [r for r in first["rules"] if r["name"] != "gpu_identity"] == [
        r for r in second["rules"] if r["name"] != "gpu_identity"
    ]
    identity = next(r for r in second["rules"] if r["name"] == "gpu_identity")
    assert identity["verdict"] == "pass" and identity["actual"].startswith("same 8 GPUs as on ")
    assert dest.stat().st_mtime_ns == stat.st_mtime_ns and dest.read_text() == content
    log = (project.root / ".gpuonboard" / "logs" / f"{project.summary()['run_id']}.log").read_text()
    assert "good: $ sh -c 'export LC_ALL=C ... -> exit 0" in log
    assert "good: step record-acceptance: ok:" in log and "-> exit" in log
    after = pool.log_counts("good")
    # the no-change run: one connection, one session (the batched probe)
    assert after["connections"] - before["connections"] == 1
    assert after["sessions"] - before["sessions"] == 1


def test_resume_continues_at_the_failed_step(project: Project, pool: TestHostPool, tmp_path: Path) -> None:
    h = pool.hosts["good"]
    marker = tmp_path / "marker"
    ran = tmp_path / "ran.log"
    project.write_inventory({"good": host_entry(h, pool)})
    book = {
        "name": "resumable",
        "steps": [
            {"step": "command", "name": "first", "args": {"argv": ["sh", "-c", f"echo first >> {ran}"]}},
            {"step": "command", "name": "flaky", "args": {"argv": ["test", "-e", str(marker)]}},
            {"step": "command", "name": "last", "args": {"argv": ["sh", "-c", f"echo last >> {ran}"]}},
        ],
    }
    pb = project.root / "resumable.yml"
    pb.write_text(yaml.safe_dump(book))
    r = project.cli("provision", "--playbook", str(pb))
    assert r.returncode == 1
    steps = project.summary()["hosts"][0]["steps"]
    assert [s["status"] for s in steps] == ["changed", "failed", "skipped"]
    assert steps[2]["msg"] == "not run: step flaky failed"
    assert steps[1]["msg"] == f"command test -e {marker} exited 1"
    marker.touch()
    assert project.cli("provision", "--playbook", str(pb), "--resume").returncode == 0
    steps = project.summary()["hosts"][0]["steps"]
    assert [(s["step"], s["status"]) for s in steps] == [
        ("first", "skipped"),
        ("flaky", "changed"),
        ("last", "changed"),
    ]
    assert ran.read_text() == "first\nlast\n"  # `first` did not run again


def test_resume_after_ctrl_c_continues_at_the_interrupted_step(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    """A Ctrl-C in the middle of a step (one host: the step runs in the main thread) leaves a
    journal naming that step, so --resume skips the steps done before it (it started afresh)."""
    job = LongJob.write(project, tmp_path)
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool)})
    proc = project.start("provision", "--playbook", str(job.playbook))
    try:
        wait_for(job.started, 30)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in out + err, out + err
    job.assert_resumes(project)


def test_only_and_skip_select_steps(project: Project, pool: TestHostPool) -> None:
    dest = _provision_inventory(project, pool)
    dest.unlink(missing_ok=True)
    assert project.cli("provision", "--skip", "record-acceptance,container").returncode == 0
    steps = [s["step"] for s in project.summary()["hosts"][0]["steps"]]
    assert steps == ["acceptance", "gpu_health", "gpu_identity", "driver_compat"]
    assert not dest.exists()
    r = project.cli("provision", "--only", "nope")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"error: {REPO / 'playbooks' / 'provision.yml'} has no step named 'nope'; its steps are:"
        " acceptance, gpu_health, gpu_identity, driver_compat, container, record-acceptance."
    ).replace(str(REPO / "playbooks"), str(project.root / "playbooks"))


def test_hostile_values_never_execute(project: Project, pool: TestHostPool, tmp_path: Path) -> None:
    h = pool.hosts["good"]
    pwned = tmp_path / "pwned"
    evil = f"; touch {pwned}1; $(touch {pwned}2) `touch {pwned}3` '\"{pwned}4 & | > <"
    out_dir = tmp_path / "dir with spaces; $(touch x)"
    entry = host_entry(h, pool)
    entry["vars"].update({"evil": evil, "state_dir": str(out_dir)})
    project.write_inventory({"good": entry})
    book = {
        "name": "hostile",
        "steps": [
            {
                "step": "command",
                "name": "echo",
                "args": {
                    "argv": [
                        "sh",
                        "-c",
                        'printf %s "$1" > "$2"',
                        "sh",
                        "{{ vars.evil }}",
                        str(tmp_path / "o"),
                    ]
                },
            },
            {
                "step": "template",
                "name": "file",
                "args": {"src": "remote/acceptance.env.j2", "dest": "{{ vars.state_dir }}/a b.env"},
            },
        ],
    }
    pb = project.root / "hostile.yml"
    pb.write_text(yaml.safe_dump(book))
    r = project.cli("provision", "--playbook", str(pb))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "o").read_text() == evil
    assert (out_dir / "a b.env").is_file()
    assert not any(p.name.startswith("pwned") for p in tmp_path.iterdir())
    assert not (project.root / "x").exists()


def test_local_connection_runs_on_this_machine(project: Project, pool: TestHostPool) -> None:
    project.write_inventory({"localhost": {"connection": "local", "order": {"cpu_cores": 1}}})
    r = project.cli("check", "--host", "localhost")
    rules = project.rules("localhost")
    # this machine has no GPU driver, but its CPU is real
    assert rules["nvidia_driver"]["verdict"] == "fail"
    assert rules["cpu_cores"]["verdict"] in ("pass", "warn")
    assert r.returncode == 1
    assert project.summary()["hosts"][0]["host_key_fingerprint"] is None


def test_ssh_config_alias_and_ansible_inventory(project: Project, pool: TestHostPool) -> None:
    h = pool.hosts["good"]
    cfg = project.root / "ssh_config"
    cfg.write_text(
        "\n".join(
            ["Host a100-alias", f"  HostName {h.address}", f"  Port {h.port}", "  User root"]
            + [f"  IdentityFile {pool.client_key}", ""]
        )
    )
    inv = project.write_inventory({"a100-alias": {"host_key": h.fingerprint}}, ssh_config=str(cfg))
    assert project.cli("check").returncode == 0
    assert project.summary()["hosts"][0]["address"] == h.address
    ini = project.root / "ansible.ini"
    ini.write_text(
        "[gpu]\n"
        f"a100 ansible_host={h.address} ansible_port={h.port} ansible_user=root"
        f" ansible_ssh_private_key_file={pool.client_key}\n"
        "[gpu:vars]\n"
        f"gpuonboard_host_key={h.fingerprint}\n"
        "container_image=nvcr.io/nvidia/pytorch:23.10-py3\n"
    )
    r = project.cli("check", "--inventory", str(ini))
    # no order in the Ansible inventory: no order rule runs; driver, health and compat do
    assert r.returncode == 0, r.stdout + r.stderr
    names = [x["name"] for x in project.summary()["hosts"][0]["rules"]]
    assert names[0] == "nvidia_driver" and "gpu_count" not in names and "ngc_driver" in names
    assert inv.exists() and os.access(ini, os.R_OK)


def test_template_modes_are_applied_and_idempotent(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    out = tmp_path / "new dir"
    book = {
        "name": "modes",
        "steps": [
            {
                "step": "template",
                "name": f"m{mode}",
                "args": {"src": "remote/acceptance.env.j2", "dest": str(out / mode), "mode": mode},
            }
            for mode in ("0755", "0600", "0640")
        ],
    }
    pb = project.root / "modes.yml"
    pb.write_text(yaml.safe_dump(book))
    assert project.cli("provision", "--playbook", str(pb)).returncode == 0
    assert {p.name: oct(p.stat().st_mode & 0o7777) for p in out.iterdir()} == {
        "0755": "0o755",
        "0600": "0o600",
        "0640": "0o640",
    }
    (out / "0640").chmod(0o666)  # drift: the mode alone differs
    assert project.cli("provision", "--playbook", str(pb)).returncode == 0
    statuses = [s["status"] for s in project.summary()["hosts"][0]["steps"]]
    assert statuses == ["ok", "ok", "changed"]
    assert oct((out / "0640").stat().st_mode & 0o777) == "0o640"
    assert not [p for p in out.iterdir() if p.name.startswith(".gpuonboard")]  # no temp file left


def test_wrong_or_missing_key_is_one_clear_sentence(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["rtx"]
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    project.write_inventory({"rtx": host_entry(h, pool, key_file=str(other))})
    r = project.cli("check", "--connect-retries", "0")
    assert r.returncode == 3
    msg = project.summary()["hosts"][0]["msg"]
    assert msg == (
        f"host rtx (root@{h.address}:{h.port}) refused the login (Authentication failed.);"
        f" check user and key_file {other}."
    )
    assert "Traceback" not in r.stdout + r.stderr
    # a key file that is not there: an input error before any connection (exit 2), naming where
    path = project.write_inventory({"rtx": host_entry(h, pool, key_file=str(tmp_path / "nope"))})
    r = project.cli("check")
    assert r.returncode == 2, r.stdout + r.stderr
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "key_file:" in text)
    assert r.stderr.strip().endswith(
        f"{path}, line {line}: host 'rtx' field 'key_file' names {tmp_path / 'nope'}, which does not"
        " exist; fix the path, or remove key_file to log in with the SSH agent and the default keys."
    ), r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_connect_retries_with_backoff_reach_a_host_that_comes_back(
    project: Project, pool: TestHostPool
) -> None:
    h = pool.hosts["rtx"]
    rtx_order = {"gpu_model": "RTX 4090", "gpu_count": 1, "vram": "24GB"}
    project.write_inventory({"rtx": host_entry(h, pool, order=rtx_order)})
    h.stop()
    try:
        proc = subprocess.Popen(
            [*project.cli_argv(), "check", "--connect-retries", "3"],
            cwd=project.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=project.env(),
        )
        time.sleep(0.6)  # the first attempt and the first backoff (0.5 s) have passed
        h.start()
        out, err = proc.communicate(timeout=30)
    finally:
        h.start()
    assert proc.returncode == 0, out + err
    assert project.summary()["hosts"][0]["status"] == "ok"


def test_target_unreachable_behind_a_jump_host_is_one_sentence(project: Project, pool: TestHostPool) -> None:
    addr, port = pool.unreachable_address()
    project.write_inventory(
        {
            "bastion1": host_entry(pool.hosts["bastion1"], pool),
            "hidden": {"address": addr, "port": port, "key_file": str(pool.client_key), "jump": "bastion1"},
        }
    )
    r = project.cli("check", "--host", "hidden", "--connect-retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr
    msg = project.summary()["hosts"][0]["msg"]
    assert msg.startswith(f"host hidden ({addr}:{port}) is unreachable: ")
    assert msg.endswith("check the address, port and firewall, or whether the server is up.")
    assert "Traceback" not in r.stdout + r.stderr


def test_ctrl_c_stops_at_once_with_exit_130(project: Project, pool: TestHostPool) -> None:
    from gpuonboard.testing.toolbox import add_executable

    h = pool.hosts["slow"]
    add_executable(h.bin_dir, "nvidia-smi", "#!/bin/sh\nsleep 15\n")  # a GPU that never answers
    project.write_inventory({"slow": host_entry(h, pool), "good": host_entry(pool.hosts["good"], pool)})
    proc = subprocess.Popen(
        [*project.cli_argv(), "check"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=project.env(),
    )
    # "good" is done (its raw outputs are written as soon as it is, while "slow" still runs);
    # "slow" waits in its probe
    reports = project.root / "reports"
    deadline = time.monotonic() + 10
    while not list(reports.glob("*/raw/good")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(reports.glob("*/raw/good")), "the raw outputs of a host that is done are written at once"
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    out, err = proc.communicate(timeout=20)
    assert time.monotonic() - start < 5, "Ctrl-C must not wait for the hung host"
    assert proc.returncode == 130, out + err
    assert err.strip().endswith("interrupted") and "Traceback" not in out + err
    # an interrupted run leaves no report: not even those raw outputs
    assert not (reports.exists() and any(reports.iterdir())), sorted(reports.rglob("*"))


# Every answer the box gives, over real SSH: a provider's policy block, an output cut short,
# unverified as a verdict of its own, --strict, and the verdict and exit code computed once.

H200_ORDER = {"gpu_model": "H200", "gpu_count": 1, "vram": "141GB"}
H100_ORDER = {"gpu_model": "H100 80GB", "gpu_count": 8, "vram": "80GB", "interconnect": "nvlink"}


def check(
    project: Project, pool: TestHostPool, name: str, *flags: str, **extra: Any
) -> tuple[int, dict[str, dict[str, str]], str]:
    project.write_inventory({name: host_entry(pool.hosts[name], pool, **extra)})
    r = project.cli("check", "--host", name, *flags)
    assert "Traceback" not in r.stdout + r.stderr
    return r.returncode, project.rules(name), r.stdout


def test_a_policy_blocked_xml_is_said_and_the_csv_shows_the_gpu_busy(
    project: Project, pool: TestHostPool
) -> None:
    """-q -x and -q refused by the provider's policy, the CSV under someone's load: the refusal is
    a fact in the report (never "repair the driver"), the GPU is read from the CSV, and 100 %
    utilisation with 31.6 GiB used is a busy GPU although the CSV lists no process (it got GO)."""
    code, rules, out = check(project, pool, "blocked", order=H200_ORDER)
    assert code == 1, out
    driver = rules["nvidia_driver"]
    assert driver["verdict"] == "pass", driver
    assert driver["actual"] == "driver 590.48.01, CUDA unknown"
    assert (
        "the host refuses nvidia-smi -q -x: ERROR: nvidia-smi XML output (-x) is disabled" in driver["detail"]
    )
    assert "the provider blocks these formats by policy" in driver["detail"]
    assert "repair" not in driver["detail"].lower()
    assert [rules[n]["verdict"] for n in ("gpu_model", "gpu_count", "vram")] == ["pass", "pass", "pass"]
    busy = rules["foreign_processes"]
    assert busy["verdict"] == "fail", busy
    assert "100 % utilisation" in busy["actual"] and "no process list was read" in busy["actual"]
    facts = project.summary()["hosts"][0]["facts"]
    assert facts["nvidia_smi_formats"] == ["csv"]
    assert facts["nvidia_smi_refused"][0].startswith("the host refuses nvidia-smi -q -x: ERROR:")
    line = " ".join(out.split())
    assert "verdict for blocked: NO-GO, failed: " in line and "foreign_processes" in line
    # (the test host's own CPU, RAM and disk are this machine's, below the vendor's default order)


def test_a_cut_off_probe_is_unverified_never_missing_gpus(project: Project, pool: TestHostPool) -> None:
    """ "Attached GPUs : 8" and one GPU half listed: no rule claims 7 GPUs are missing; the GPU
    rules are unverified (counted, not failed), and --strict fails them."""
    code, rules, out = check(project, pool, "cutprobe", order=H100_ORDER)
    count = rules["gpu_count"]
    assert count["verdict"] == "unverified", count
    assert "incomplete probe" in count["actual"] and "missing" not in count["actual"] + count["detail"]
    assert "rerun" in count["detail"]
    # (nvidia-smi answered with its driver and GPU 0's record read past its UUID: judged on
    # what was printed, round 32)
    driver = rules["nvidia_driver"]
    assert driver["verdict"] == "pass" and "nvidia-smi answered" in driver["actual"], driver
    assert rules["interconnect"]["verdict"] == "unverified"  # no topo -m: neither PCIe nor NVLink seen
    host = project.summary()["hosts"][0]
    gpu_rules = {"gpu_model", "gpu_count", "vram", "interconnect"}
    assert gpu_rules <= set(host["verdict"]["unverified"])
    assert not gpu_rules & set(host["verdict"]["failed"])  # (this machine's CPU/RAM/disk fail the order)
    assert code == (1 if host["verdict"]["failed"] else 0)
    junit = ET.parse(project.root / "reports" / "latest" / "junit.xml").getroot()
    case = junit.find(".//testcase[@name='gpu_count']")
    assert case is not None and case.find("skipped") is not None and case.find("failure") is None

    strict_code, strict_rules, strict_out = check(project, pool, "cutprobe", "--strict", order=H100_ORDER)
    assert strict_code == 1, strict_out
    assert strict_rules["gpu_count"]["verdict"] == "unverified"  # the fact is the same
    doc = project.summary()
    assert doc["strict"] is True and doc["exit_code"] == 1
    assert doc["hosts"][0]["verdict"]["word"] == "NO-GO"
    assert gpu_rules <= set(doc["hosts"][0]["verdict"]["failed"])
    junit = ET.parse(project.root / "reports" / "latest" / "junit.xml").getroot()
    case = junit.find(".//testcase[@name='gpu_count']")
    assert case is not None and case.find("failure") is not None


def test_a_gpu_only_order_is_go_with_the_unverified_rules_named(project: Project, pool: TestHostPool) -> None:
    """An order of GPU rules only, on the cut-off box: GO with 3 unverified (nothing failed),
    exit 0; the terminal, summary.json and `invoke report` say the same."""
    order = {"gpu_model": "H100 80GB", "gpu_count": 8, "interconnect": "nvlink"}
    entry = host_entry(pool.hosts["cutprobe"], pool, order=order)
    project.write_inventory({"cutprobe": entry}, defaults={"vendor": "demo-idc"})
    r = project.cli("provision", "--host", "cutprobe", "--only", "acceptance")
    assert r.returncode == 0, r.stdout + r.stderr
    line = " ".join(r.stdout.split())
    assert "verdict for cutprobe: GO with 3 unverified: gpu_model, gpu_count, interconnect" in line
    doc = json.loads((project.root / "reports" / "latest" / "summary.json").read_text())
    assert doc["exit_code"] == 0 and doc["hosts"][0]["verdict"]["word"] == "GO"
    rep = project.cli("report", "--format", "md")
    assert rep.returncode == 0, rep.stderr
    text = (project.root / "reports" / "latest" / "report.md").read_text()
    assert "with 3 unverified: gpu_model, gpu_count, interconnect" in text
    assert "UNVERIFIED" in text
