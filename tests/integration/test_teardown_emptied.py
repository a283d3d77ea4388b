"""Teardown empties vars.dataset_dir and vars.decrypted_dir only of what uploads wrote there and
is unchanged: it removed them whole, and with them a job's checkpoint written into the dataset's
copy after the upload (`epoch9-ckpt.pt`), unpulled and unnamed, and a dir filled by scp that no
upload wrote. Real sshd test host, real rsync and a real `sync` upload, as in test_teardown.py
(whose fixtures this module uses)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project
from test_teardown import inventory, remote, steps
from test_teardown_uploads import _dataset

from gpuonboard.testing import TestHostPool
from gpuonboard.units import format_bytes

__all__ = ["remote"]  # the fixture, used by name


def test_what_no_upload_wrote_in_the_dataset_dir_stays_named(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, scp = remote["base"] / "disk", remote["base"] / "by-scp"
    disk.mkdir()
    copy = disk / "corpus"
    inventory(
        project,
        pool,
        remote,
        dataset=str(_dataset(tmp_path / "local" / "corpus", 4)),
        dataset_dir=str(copy),
        decrypted_dir=str(scp),
    )
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    r = project.cli("sync", "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr
    uploaded = sorted(str(p.relative_to(copy)) for p in copy.rglob("*.bin"))
    assert len(uploaded) == 4
    # the job writes its checkpoint into the dataset dir; a dir filled by scp, which no upload wrote
    (copy / "epoch9-ckpt.pt").write_bytes(b"W" * 1500)
    scp.mkdir()
    (scp / "train.txt").write_bytes(b"mine\n")

    for extra in (["--check"], []):
        r = project.cli(
            "teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "c"), *extra
        )
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        assert f"the 4 files uploads wrote in {copy}" in msg, msg
        assert (
            f"; kept in {copy}: 1 file no upload wrote (epoch9-ckpt.pt, 1.5 KiB): pull it or remove it"
            " yourself (the dir stays)"
        ) in msg, msg
        assert (
            f"; kept: {scp} as it is (1 file, 5 B, e.g. 'train.txt'): no upload listed what it wrote"
            " there (filled by other means, such as scp), so nothing in it was removed; pull what you"
            f" need, then remove it yourself (rm -rf -- {scp})"
        ) in msg, msg
    # the upload's files went, the checkpoint and the scp'd dir stayed
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*")) == ["epoch9-ckpt.pt"]
    assert (copy / "epoch9-ckpt.pt").read_bytes() == b"W" * 1500
    assert (scp / "train.txt").read_bytes() == b"mine\n"


@pytest.mark.parametrize("flags", [["--shards"], ["--shards", "--unpack"]])
def test_an_upload_store_in_the_dataset_dir_stays_named_as_the_uploads(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, flags: list[str]
) -> None:
    """vars.dataset_dir is the data dir itself, where `sync --shards` keeps its store (`corpus.shards`,
    which holds no list of what it wrote: it stays). Before, teardown named the store's files as
    ones no upload wrote: `kept: DIR as it is (2 files ...): no upload listed what it wrote there
    (filled by other means, such as scp)`, or, beside an unpacked tree, `3 files no upload wrote
    (corpus.shards/manifest.json, ...)`: a claim the upload's own record refutes."""
    disk = remote["base"] / "disk"
    disk.mkdir()
    inventory(
        project, pool, remote, dataset=str(_dataset(tmp_path / "local" / "corpus", 4)), dataset_dir=str(disk)
    )
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    r = project.cli("sync", "--host", "teardown", *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    store = disk / "corpus.shards"
    n = sum(1 for p in store.rglob("*") if not p.is_dir())
    size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "c"))
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["files"]["msg"]
    assert "scp" not in msg and "no upload wrote" not in msg, msg
    assert (
        f"; kept in {disk}: gpuonboard's upload store corpus.shards ({n} files, {format_bytes(size)}): a"
        " store holds no list of what the upload wrote in it, so a file of yours there cannot be told"
        f" from the upload's; remove it yourself once nothing there is needed (rm -rf -- {store})"
    ) in msg, msg
    assert store.is_dir()
    assert not (disk / "corpus").exists()  # (an unpacked tree, listed, went)
