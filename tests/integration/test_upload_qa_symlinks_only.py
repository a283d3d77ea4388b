"""Plain encrypted mode uploads each regular file's ciphertext: a dataset that holds only
symlinks (and perhaps empty directories) said `dataset up to date at H:/x.encrypted (1 entry,
0 B)`, naming a copy the host did not have. Now it says there is nothing that mode uploads,
makes nothing on the host, and `--shards` still carries the links."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import Project, host_entry
from test_dataset import _age_key, needs_age, step

from gpuonboard.testing import TestHostPool

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")


@needs_age
def test_a_dataset_of_only_symlinks_is_said_so_in_encrypted_mode(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    key, pub = _age_key(tmp_path)
    src = tmp_path / "local" / "links"
    (src / "sub").mkdir(parents=True)
    (src / "latest").symlink_to("/nowhere/ckpt.pt")
    data_dir = tmp_path / "remote data"
    entry = host_entry(pool.hosts["dataset"], pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_recipients": [pub], "age_identity_file": str(key)})
    project.write_inventory({"dataset": entry})
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--encrypt", *args)
        s = step(project)
        assert r.returncode == 0 and s["status"] == "ok", (args, s)
        assert s["msg"] == (
            f"the dataset {src} holds no regular file, the only kind plain encrypted mode uploads (its"
            " 1 symlink and its empty directories are not; --shards carries them); nothing sent (what"
            f" dataset:{data_dir}/links.encrypted holds is left as it is)"
        ), s["msg"]
    assert not data_dir.exists()
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--shards")
    assert r.returncode == 0 and step(project)["status"] == "changed", step(project)
