"""A box whose /etc/machine-id changes (a transient id per boot: systemd with an empty or
read-only /etc/machine-id; a container recreated with the same host name and a persistent
home) names its record of uploads `uploads.<host>@<id12>` with another id each time: before,
its earlier record read as another machine's to teardown, so its uploads were never removed.
Where no record of the current name exists, a `uploads.<host>@*` record of the same host name,
on a local filesystem of the allowlist with its recorded paths, last written before this boot,
is adopted as this machine's (renamed to the current id). Real sshd test host, real `sync` and
teardown; the earlier boot's record is a real `sync`'s, renamed as an earlier machine id would
have named it and its mtime set back before this boot (it was written by the earlier boot)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import Project
from test_teardown import inventory, remote, steps
from test_teardown_uploads import _dataset

from gpuonboard.testing import TestHostPool
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

__all__ = ["remote"]  # the fixture, used by name

MY_RECORD = this_machines_record()


@pytest.mark.skipif("@" not in MY_RECORD, reason="this machine has no /etc/machine-id")
def test_teardown_adopts_this_hosts_record_of_an_earlier_machine_id(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    scratch = remote["base"] / "scratch"
    scratch.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 3)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None)
    cache = pool.hosts["teardown"].home / ".cache" / "gpuonboard"
    shutil.rmtree(cache, ignore_errors=True)  # (another test's upload records: not this test's)
    mine = MY_RECORD[len(uploadlock.RECORD_PREFIX) :]
    earlier = mine.split("@")[0] + "@" + ("a" if mine[-1] != "a" else "b") * 12
    try:
        r = project.cli("sync", "--dest", str(scratch), "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
        # the next boot: another machine id, so the record and lists above are an earlier id's
        (cache / MY_RECORD).rename(cache / f"uploads.{earlier}")
        (cache / f"written.{mine}").rename(cache / f"written.{earlier}")
        os.utime(cache / f"uploads.{earlier}", (1_000_000, 1_000_000))  # (written before this boot)

        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        assert not (scratch / "corpus").exists(), msg
        assert "other machines" not in msg, msg
        assert not cache.exists() or list(cache.iterdir()) == [], msg
    finally:  # (the test host's home is shared by the tests)
        shutil.rmtree(cache, ignore_errors=True)
