"""Regression tests for security and robustness fixes found in review."""

from __future__ import annotations

from pathlib import Path

import paramiko
import pytest
from rich.console import Console

from gpuonboard.connection import HostKeyPolicy, KnownHosts, fingerprint
from gpuonboard.errors import HostKeyError, PlaybookError
from gpuonboard.inventory import Host
from gpuonboard.report.terminal import print_results
from gpuonboard.results import HostResult, conclude
from gpuonboard.runner.playbook import Playbook, StepSpec, instantiate
from gpuonboard.steps.base import Check, StepResult


def test_a_key_of_another_type_for_a_known_host_is_refused(tmp_path: Path) -> None:
    store = KnownHosts(tmp_path / "known_hosts")
    ed = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, "ed25519")))
    ec = paramiko.ECDSAKey.generate()
    store.add("[10.0.0.1]:2222", ed)
    policy = HostKeyPolicy("gpu-1", None, KnownHosts(tmp_path / "known_hosts"), trust_new=True)
    with pytest.raises(HostKeyError, match="DIFFERENT host key"):
        policy.missing_host_key(None, "[10.0.0.1]:2222", ec)
    # pinned to exactly that new key: accepted
    pinned = HostKeyPolicy("gpu-1", fingerprint(ec), KnownHosts(tmp_path / "known_hosts"), trust_new=False)
    pinned.missing_host_key(None, "[10.0.0.1]:2222", ec)


def _keygen(tmp_path: Path, kind: str) -> Path:
    import subprocess

    key = tmp_path / f"id_{kind}"
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)], check=True)
    return key


def test_template_probes_are_never_rendered_from_host_values() -> None:
    host = Host(name="g", address="10.0.0.1", vars={"f": "a; touch /tmp/pwn $(id)"})
    spec = StepSpec(
        "template", "t", {"src": "x.j2", "dest": "/tmp/x", "probes": {"p": "cat {{ vars.f }}"}}, 3
    )
    step = instantiate(Playbook(Path("p.yml"), "p", (spec,)), spec, host)
    assert [p.command for p in step.probes()][1] == "cat {{ vars.f }}"


def test_unquoted_mode_is_refused_before_connecting() -> None:
    host = Host(name="g", address="10.0.0.1")
    spec = StepSpec("template", "t", {"src": "x.j2", "dest": "/tmp/x", "mode": 420}, 7)
    with pytest.raises(PlaybookError, match=r"line 7: step 't': argument 'mode' must be quoted"):
        instantiate(Playbook(Path("p.yml"), "p", (spec,)), spec, host)


def test_host_text_is_not_rich_markup() -> None:
    host = Host(name="g[/x]", address="10.0.0.1")
    check = Check("foreign_processes", "none", "GPU 0: pid 1 [/x] (10 MiB)", "fail", "[bold]advice")
    result = HostResult(host, "failed", "step [/red]: x", [StepResult("gpu_health", "failed", "m", [check])])
    con = Console(record=True, width=200)
    print_results(conclude([result]), con)
    text = con.export_text()
    assert "pid 1 [/x]" in text and "[bold]advice" in text


def test_an_early_upload_connection_needs_a_recorded_key_matching_the_pin(tmp_path: Path) -> None:
    """The dataset step may open its OpenSSH master before our login only when that login's
    check would pass anyway: the key is recorded, matches the pin if one is set, and no jump
    host is involved (their keys are checked hop by hop by our login)."""
    from gpuonboard.steps.base import Warm

    store = KnownHosts(tmp_path / "known_hosts")
    ed = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, "ed25519")))

    def warm(**kw: object) -> Warm:
        host = Host(name="gpu-1", address="10.0.0.1", port=2222, **kw)  # type: ignore[arg-type]
        return Warm(host, None, tmp_path, tmp_path / "known_hosts", False, store=store)

    assert not warm().key_known()  # first contact: wait for our login
    store.add("[10.0.0.1]:2222", ed)
    assert warm().key_known()
    assert warm(host_key=fingerprint(ed)).key_known()
    assert not warm(host_key="SHA256:" + "A" * 43).key_known()  # the pin says another key
    assert not warm(jump=("bastion",)).key_known()
    no_store = Warm(Host(name="gpu-1", address="10.0.0.1", port=2222), None, tmp_path, None, False)
    assert not no_store.key_known()
