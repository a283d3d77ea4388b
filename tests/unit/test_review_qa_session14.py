"""Review of this session's changes: a host that is a hop in its own flattened chain, a jump
host's own literal hop (it would take the target's key), an unreadable inventory directory,
`mark_stale` given names from the host that lead out of the copy, the tag target of a
`registry-1.docker.io/...` reference, a YAML file mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.steps.container import parse_ref
from gpuonboard.steps.teardown import mark_stale
from gpuonboard.yamlload import parse_yaml


@pytest.fixture(autouse=True)
def no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", str(tmp_path / "no-such-ssh-config"))


def _error(tmp_path: Path, hosts: str) -> str:
    (tmp_path / "hosts.yml").write_text(hosts)
    with pytest.raises(InventoryError) as exc:
        inventory.load(tmp_path / "hosts.yml")
    return str(exc.value)


def test_a_host_in_its_own_flattened_chain_is_a_loop(tmp_path: Path) -> None:
    msg = _error(
        tmp_path,
        "hosts:\n  a: {address: 10.0.0.1, jump: b}\n  b: {address: 10.0.0.2, jump: [c, a]}\n"
        "  c: {address: 10.0.0.3}\n",
    )
    assert "makes a loop of jump hosts (c -> a -> b -> a)" in msg, msg


def test_a_jump_hosts_own_literal_hop_is_refused_not_given_the_targets_key(tmp_path: Path) -> None:
    msg = _error(
        tmp_path,
        "hosts:\n  bastion: {address: 10.0.0.2, jump: 'ops@198.51.100.9:2200'}\n"
        "  inner: {address: 10.0.0.3, jump: bastion}\n",
    )
    assert msg.endswith(
        "host 'inner' jumps through 'bastion', whose own jump 'ops@198.51.100.9:2200' is not an inventory"
        " host, so it would be reached with 'inner''s key and user; add 'ops@198.51.100.9:2200' as an"
        " inventory host (with its address, user and key_file) and name it in 'bastion''s jump."
    ), msg
    # the bastion alone still jumps through it (it gets the bastion's own key there)
    (tmp_path / "hosts.yml").write_text(
        "hosts:\n  bastion: {address: 10.0.0.2, jump: 'ops@198.51.100.9:2200'}\n"
    )
    assert inventory.load(tmp_path / "hosts.yml").hosts["bastion"].jump == ("ops@198.51.100.9:2200",)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_inventory_directory_is_one_sentence(tmp_path: Path) -> None:
    d = tmp_path / "inv"
    d.mkdir()
    (d / "hosts.yml").write_text("hosts: {}\n")
    d.chmod(0o111)
    try:
        with pytest.raises(InventoryError, match="cannot read this inventory directory"):
            inventory.load(d)
    finally:
        d.chmod(0o755)


def test_mark_stale_never_touches_a_file_outside_the_copy(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    (dest / "sub").mkdir(parents=True)
    victim, inside = tmp_path / "victim", dest / "sub" / "a.txt"
    victim.write_text("x")
    inside.write_text("y")
    (dest / "out").symlink_to(tmp_path)  # a dir link in the copy leading out of it
    for p in (victim, inside):
        os.utime(p, (1000, 1000))
    names = ["../victim", str(victim), "out/victim", "sub/a.txt"]
    listing = [f"f 1 5000 ./{n}" for n in names]
    mark_stale(dest, names, listing)
    assert victim.stat().st_mtime == 1000  # not through `..`, an absolute path or a link
    assert inside.stat().st_mtime == 4999  # the copy's own file: one second off the host's


@pytest.mark.parametrize(
    ("image", "target"),
    [
        ("registry-1.docker.io/library/ubuntu:22.04", "registry-1.docker.io/library/ubuntu:22.04"),
        ("index.docker.io/library/ubuntu:22.04", "index.docker.io/library/ubuntu:22.04"),
        ("docker.io/ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
        ("ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
    ],
)
def test_the_tag_target_is_a_name_the_probe_finds(image: str, target: str) -> None:
    assert parse_ref(image).tag_target == target


def test_a_yaml_file_mode_is_told_to_be_quoted() -> None:
    with pytest.raises(InventoryError) as exc:
        parse_yaml("mode: 0644", Path("p.yml"), InventoryError)
    assert 'quote it ("0644") where it is meant as written (a file mode, a time)' in str(exc.value)


def test_invokes_dry_flag_is_refused_by_monitor_too(tmp_path: Path) -> None:
    import subprocess
    import sys

    cli = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-c", cli, "--dry", "monitor", "--host", "nope"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--dry (-R) is Invoke's own flag" in r.stderr, r.stderr
