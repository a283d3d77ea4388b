"""A jump host that has a jump host of its own is reached through it, over real SSH: the
bastion behind an outer gateway is logged in to through that gateway (before, its own `jump`
was skipped and its address dialled directly, which a private address never answers)."""

from __future__ import annotations

from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def test_a_jump_hosts_own_jump_host_is_used(project: Project, pool: TestHostPool) -> None:
    outer, mid, target = pool.hosts["bastion1"], pool.hosts["bastion2"], pool.hosts["behind"]
    before = {n: pool.log_counts(n)["logins"] for n in ("bastion1", "bastion2", "behind")}
    project.write_inventory(
        {
            "bastion1": host_entry(outer, pool),
            "bastion2": host_entry(mid, pool, jump="bastion1"),
            "behind": host_entry(target, pool, jump="bastion2"),  # only the next hop is written
        }
    )
    r = project.cli("check", "--host", "behind")
    assert r.returncode == 0, r.stdout + r.stderr
    after = {n: pool.log_counts(n)["logins"] for n in before}
    assert {n: after[n] - before[n] for n in before} == {"bastion1": 1, "bastion2": 1, "behind": 1}


def test_a_jump_host_named_by_the_ssh_config_is_reached_with_its_config_entry(
    project: Project, pool: TestHostPool
) -> None:
    """`ProxyJump edge`, where `edge` is a Host of the same SSH config (its HostName, Port, User
    and IdentityFile there): the login to the jump host uses that entry, as `ssh -F CONFIG
    behind` does (before: refused as "neither an inventory host nor an address")."""
    outer, target = pool.hosts["bastion1"], pool.hosts["behind"]
    before = {n: pool.log_counts(n)["logins"] for n in ("bastion1", "behind")}
    cfg = project.root / "ssh_config"
    cfg.write_text(
        f"Host behind\n  HostName {target.address}\n  Port {target.port}\n  User root\n"
        f"  IdentityFile {pool.client_key}\n  ProxyJump edge\n"
        f"Host edge\n  HostName {outer.address}\n  Port {outer.port}\n  User root\n"
        f"  IdentityFile {pool.client_key}\n"
    )
    project.write_inventory({"behind": {"host_key": target.fingerprint}}, ssh_config=str(cfg))
    r = project.cli("check", "--host", "behind", "--trust-new-hosts")
    assert r.returncode == 0, r.stdout + r.stderr
    after = {n: pool.log_counts(n)["logins"] for n in before}
    assert {n: after[n] - before[n] for n in before} == {"bastion1": 1, "behind": 1}
