"""Two hosts torn down together whose vars.results_dest names the same local dir (a group or
defaults var without `{host}`): their pulls ran side by side into one copy, where one could
replace the other's files of the same names; one host's pull was refused halfway through the
run, and two pulls that both started before either marked the dir wrote into the same files.
Now a usage error before any connection. Real sshd test hosts and real rsync."""

from __future__ import annotations

from pathlib import Path

from conftest import Project, host_entry

from gpuonboard.steps.teardown import read_record
from gpuonboard.testing import TestHostPool


def two_hosts(project: Project, pool: TestHostPool, tmp_path: Path, dest: str) -> dict[str, Path]:
    """Hosts `teardown` and `dataset`, each with results/ckpt/model.pt of its own (same size)."""
    hosts, results = {}, {}
    for name, letter in (("teardown", b"A"), ("dataset", b"B")):
        res = tmp_path / name / "results"
        (res / "ckpt").mkdir(parents=True)
        (res / "ckpt" / "model.pt").write_bytes(letter * 100_000)
        entry = host_entry(pool.hosts[name], pool)
        entry["vars"].update(results_dir=str(res), state_dir=str(tmp_path / name / "state"))
        hosts[name], results[name] = entry, res
    project.write_inventory(hosts, defaults={"vars": {"results_dest": dest}})
    return results


def test_two_hosts_never_pull_into_one_local_dir(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    dest = tmp_path / "exp7"
    results = two_hosts(project, pool, tmp_path, str(dest))
    for check in (("--check",), ()):
        r = project.cli("teardown", "--host", "teardown,dataset", *check)
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr.strip().endswith(
            f"hosts teardown and dataset would pull their results into the same local dir {dest}"
            " (vars.results_dest), where one pull could overwrite the other's files; put {host} in"
            " vars.results_dest, or give --dest (each host then gets its own subdirectory), then rerun."
        ), r.stderr
        assert "Traceback" not in r.stdout + r.stderr
    assert not dest.exists()
    assert all((res / "ckpt" / "model.pt").exists() for res in results.values())

    # `{host}` in the var: each host its own verified copy
    two_hosts(project, pool, tmp_path / "again", str(tmp_path / "runs" / "{host}"))
    r = project.cli("teardown", "--host", "teardown,dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    for name, letter in (("teardown", b"A"), ("dataset", b"B")):
        copy = tmp_path / "runs" / name
        assert (copy / "ckpt" / "model.pt").read_bytes() == letter * 100_000
        record = read_record(copy)
        assert record is not None and record.host == name
