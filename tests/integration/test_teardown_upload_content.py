"""Teardown removes an upload's tree whole only while it holds what the uploads wrote there, by
the list `sync` keeps on the host: the user's own dir of the dataset's name that `sync` merged
into (`1 file on the host is not in the dataset and kept there`), and a recorded copy a job wrote
its checkpoint into, were removed whole, unpulled and unnamed; the user's own `X.shards` dir
holding a manifest.json of another tool was removed as a shard store. Real sshd test host, real
rsync and real `sync` uploads, as in test_teardown.py (whose fixtures this module uses)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Project
from test_teardown import inventory, remote, steps
from test_teardown_uploads import _dataset

from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name


def test_what_no_upload_wrote_keeps_its_tree_on_the_host(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, other = remote["base"] / "disk", remote["base"] / "scratch"
    (disk / "corpus" / "prev-run").mkdir(parents=True)
    (disk / "corpus" / "prev-run" / "model-final.pt").write_bytes(b"M" * 8192)  # the user's, from before
    mine = disk / "llama-ft.shards"  # another tool's sharded checkpoint
    mine.mkdir()
    (mine / "manifest.json").write_text(json.dumps({"shards": ["shard-00000.bin"], "tool": "my-own"}))
    (mine / "shard-00000.bin").write_bytes(b"W" * 4096)
    other.mkdir()
    inventory(
        project, pool, remote, dataset=str(_dataset(tmp_path / "local" / "corpus", 3)), dataset_dir=None
    )
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    images = _dataset(tmp_path / "local" / "images", 4)
    notes = _dataset(tmp_path / "local" / "notes", 2)
    for argv in (
        ["sync"],
        ["sync", "--dest", str(other), "--dataset", str(images)],
        ["sync", "--dataset", str(notes)],
    ):
        r = project.cli(*argv, "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
    # the job writes its checkpoint into the copy it read (its results dir is elsewhere)
    (other / "images" / "checkpoints").mkdir()
    (other / "images" / "checkpoints" / "epoch9.pt").write_bytes(b"W" * 5000)

    for extra in (["--check"], ["--dest", str(tmp_path / "copy")]):
        r = project.cli("teardown", "--host", "teardown", "--keep-image", *extra)
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        assert (
            f"; left on the host: {other}/images (e.g. 'checkpoints/epoch9.pt'), gpuonboard's upload"
            " holding what no upload wrote there (a job's output, a file of yours, or a dataset file"
            " changed since): pull what you need, then delete it yourself; left on the host:"
            f" {disk}/corpus, named or marked as an upload's copy, but no upload listed what it wrote"
            " there (a dir of yours that an upload merged into, or one an older gpuonboard uploaded):"
            " delete it yourself once nothing there is needed"
        ) in msg, msg
        assert f"{disk}/llama-ft.shards" in msg.split("; left on the host: ", 1)[1], msg
        assert f"{disk}/notes (gpuonboard's uploads in {disk})" in msg, msg
    assert (disk / "corpus" / "prev-run" / "model-final.pt").read_bytes() == b"M" * 8192
    assert (other / "images" / "checkpoints" / "epoch9.pt").read_bytes() == b"W" * 5000
    assert (mine / "shard-00000.bin").is_file() and not (disk / "notes").exists()
    assert "gpuonboard's cache" in msg and "is left too: it records the uploads left above" in msg, msg
    # the checkpoint moved out: the rerun finds the copy by the record kept, and removes it whole
    (other / "images" / "checkpoints" / "epoch9.pt").unlink()
    (other / "images" / "checkpoints").rmdir()
    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        not (other / "images").exists()
        and not (pool.hosts["teardown"].home / ".cache" / "gpuonboard").exists()
    )
