"""Every input is bounded (issue 26), the SSH side, against real sshd test hosts: a key file of
random bytes, a 1,200-hop jump chain, a connect timeout of 1e300 s, a known_hosts that cannot
be written. Each was a traceback, an "internal error" or a silent no-op; each is now one
sentence (or simply works), and the host is never dialled when the input cannot work."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import Project, host_entry

from gpuonboard.connection import (
    ConnectOptions,
    KnownHosts,
    Preconnect,
    known_hosts_name,
    open_runner,
    openssh,
)
from gpuonboard.errors import ConnectError, HostKeyError
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHostPool

NOOP = {"name": "noop", "steps": [{"step": "command", "name": "noop", "args": {"argv": ["true"]}}]}


def _provision(project: Project, *argv: str) -> subprocess.CompletedProcess[str]:
    book = project.root / "noop.yml"
    book.write_text(yaml.safe_dump(NOOP))
    env = {k: v for k, v in Project.env().items() if k != "SSH_AUTH_SOCK"}
    return subprocess.run(
        [*Project.cli_argv(), "provision", "--playbook", str(book), "--connect-retries", "0", *argv],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_a_key_file_of_random_bytes_is_one_sentence_naming_it_and_the_formats(
    project: Project, pool: TestHostPool
) -> None:
    key = project.root / "random.key"
    key.write_bytes(bytes(range(256)) * 12 + os.urandom(1000))  # (no UTF-8: UnicodeDecodeError)
    project.write_inventory({"box": host_entry(pool.hosts["bastion1"], pool, key_file=str(key))})
    r = _provision(project)
    assert r.returncode == 3, r.stdout + r.stderr
    msg = json.loads((project.root / "reports" / "latest" / "summary.json").read_text())["hosts"][0]["msg"]
    assert msg == (
        f"host box: key file {key} is not a private key that can be read (it is in no private key"
        " format that can be read: OpenSSH's BEGIN OPENSSH PRIVATE KEY, or PEM's BEGIN RSA, EC, DSA"
        " or BEGIN PRIVATE KEY); key_file must name the private key (e.g. ~/.ssh/id_ed25519, not the"
        " .pub file)."
    )
    assert "internal error" not in r.stdout + r.stderr and "Traceback" not in r.stderr


def test_a_1200_hop_jump_chain_is_refused_before_any_hop_is_dialled(
    pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["bastion1"]
    hops = tuple(f"root@192.0.2.{i % 250 + 1}:{1000 + i}" for i in range(1200))  # (TEST-NET)
    host = Host(name="box", address=h.address, port=h.port, user="root", jump=hops, connect_timeout=1)
    known = tmp_path / "known"
    with pytest.raises(ConnectError) as err:
        open_runner(host, ConnectOptions(known_hosts=known, retries=0), KnownHosts(known))
    assert str(err.value) == (
        "host box: its jump chain has 1,200 hops, and gpuonboard opens at most 16 (OpenSSH's"
        " ProxyJump chains are a few hops); shorten the host's 'jump' in the inventory."
    )
    assert not getattr(err.value, "retryable", False)
    with pytest.raises(ValueError, match="at most 16"):
        openssh.config_text(host, None, known)  # (rsync's OpenSSH config: the same limit)


def test_a_connect_timeout_of_1e300_is_waited_as_the_longest_sane_one(
    pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["bastion1"]
    host = Host(
        name="box",
        address=h.address,
        port=h.port,
        user="root",
        key_file=str(pool.client_key),
        host_key=h.fingerprint,
        connect_timeout=1e300,
    )
    early = Preconnect([host])  # (its thread raised OverflowError in select)
    known = tmp_path / "known"
    runner = open_runner(host, ConnectOptions(known_hosts=known, preconnect=early), KnownHosts(known))
    try:
        assert runner.run("echo ok").stdout == "ok\n"
    finally:
        runner.close()
        early.close()


def test_a_host_key_that_cannot_be_recorded_is_refused_not_retried_into_a_pass(
    pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["bastion1"]
    host = Host(name="box", address=h.address, port=h.port, user="root", key_file=str(pool.client_key))
    known = tmp_path / "known"
    store = KnownHosts(known)
    known.mkdir()  # (made a directory after the store was read: the write fails)
    with pytest.raises(HostKeyError) as err:
        open_runner(host, ConnectOptions(known_hosts=known, trust_new_hosts=True), store)
    assert str(err.value) == (
        f"the host key of host box ({known_hosts_name(h.address, h.port)}) could not be recorded in {known}"
        " (Is a directory);"
        " make that file writable (or pass --known-hosts a file you can write to), then rerun."
    )
    assert isinstance(err.value, ConnectError) and store.lookup(known_hosts_name(h.address, h.port)) == {}


def _template_project(project: Project, pool: TestHostPool, body: str | bytes) -> Path:
    """templates/runaway.j2 holding `body`, and a playbook with one template step writing it."""
    project.write_inventory({"box": host_entry(pool.hosts["bastion1"], pool)})
    (project.root / "templates").unlink()  # (the fixture's link to the repo's templates)
    (project.root / "templates").mkdir()
    src = project.root / "templates" / "runaway.j2"
    src.write_bytes(body if isinstance(body, bytes) else body.encode())
    dest = pool.hosts["bastion1"].home / "bounded-runaway.conf"
    book = {"steps": [{"step": "template", "name": "conf", "args": {"src": "runaway.j2", "dest": str(dest)}}]}
    path = project.root / "runaway.yml"
    path.write_text(yaml.safe_dump(book))
    return path


def test_a_runaway_template_file_fails_its_step_naming_file_and_limit(
    project: Project, pool: TestHostPool
) -> None:
    book = _template_project(project, pool, "{% for i in range(1000) %}{{ 'x' * 100000 }}{% endfor %}\n")
    r = project.cli("provision", "--host", "box", "--playbook", str(book), timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    step = project.summary()["hosts"][0]["steps"][0]
    assert (step["status"], step["msg"]) == (
        "failed",
        "template 'runaway.j2' cannot be rendered (its output is longer than 4 MiB, the most one"
        " rendering may write; simplify the template)",
    )


def test_a_template_file_past_the_size_limit_is_refused_before_it_is_read(
    project: Project, pool: TestHostPool
) -> None:
    book = _template_project(project, pool, b"x" * (5 << 20))
    r = project.cli("provision", "--host", "box", "--playbook", str(book), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    src = project.root / "templates" / "runaway.j2"
    assert r.stderr.strip() == (
        f"error: the template file {src} is larger than 4 MiB, the most a template may be; simplify"
        " the template."
    )
