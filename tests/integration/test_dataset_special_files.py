"""A dataset's fifos, sockets and device nodes (a job's named pipe, a socket a tool left, a `dev/`
copied from a root file system) hold no data to copy: no mode uploads them, and every message
says so. Plain mode's `rsync -a` made them on the host unannounced (the scan, and so the plan and
"N files verified", knew nothing of them): as root a device node of this machine's numbers, a
fifo on which a job reading every file of the copy blocks for ever, and entries in neither the
dataset nor a manifest, for which a later `--shards --unpack` refused to replace the tree. Real
sshd test host (logged in as root), real rsync."""

from __future__ import annotations

import os
import shutil
import socket
import stat
from pathlib import Path

import pytest
from conftest import Project
from test_dataset import setup, step

from gpuonboard.units import format_bytes

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")


def _special_files(src: Path) -> list[str]:
    """A fifo at the top, a dir holding only a fifo, a unix socket, and (where this machine lets
    us make one) a character device of /dev/null's numbers: their paths, sorted."""
    os.mkfifo(src / "pipe")
    (src / "only fifos").mkdir()
    os.mkfifo(src / "only fifos" / "q")
    made = ["only fifos/q", "pipe", "sock"]
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(src / "sock"))
    try:
        os.mknod(src / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        made.append("null")
    except PermissionError:
        pass
    return sorted(made)


def _specials_on_host(copy: Path) -> list[str]:
    found = []
    for d, dirs, files in os.walk(copy):
        for name in dirs + files:
            mode = os.lstat(Path(d, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                found.append(Path(d, name).relative_to(copy).as_posix())
    return found


def test_no_mode_uploads_fifos_sockets_or_device_nodes_and_every_message_says_so(
    project: Project, tmp_path: Path
) -> None:
    src, data_dir = setup(project, tmp_path)
    made = _special_files(src)
    note = (
        f"; {len(made)} fifos, sockets or device nodes of the dataset are not uploaded, as they hold no"
        f" data to copy (e.g. {made[0]!r})"
    )
    for args in (("--check",), (), ()):  # the plan, the final message, the up-to-date rerun
        r = project.cli("sync", "--host", "dataset", *args)
        s = step(project)
        assert r.returncode == 0 and note in s["msg"], (args, s)
    assert s["status"] == "ok" and s["msg"].startswith("dataset up to date at"), s
    copy = data_dir / "my data"
    assert _specials_on_host(copy) == []
    assert (copy / "only fifos").is_dir() and not any((copy / "only fifos").iterdir())
    assert (copy / "plain.txt").read_text() == "hello\n"
    # the tree on the host holds nothing the dataset's scan does not know: an unpack replaces it
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack")
    s = step(project)
    assert r.returncode == 0 and note in s["msg"], s
    assert _specials_on_host(copy) == [] and (copy / "only fifos").is_dir()
    for rel in made:  # (the dataset keeps them: nothing here is touched)
        assert not stat.S_ISREG(os.lstat(src / rel).st_mode)


def test_a_sparse_file_is_said_to_travel_and_land_whole(project: Project, tmp_path: Path) -> None:
    """A 2 GiB file holding 4 KiB of data (a preallocated image, a memmap made by truncate): rsync
    sends its holes as zeros and the host stores all of it; the plan said only `2.0 GiB`, as for
    any file, and the user learnt of the zeros from the ETA."""
    src, data_dir = setup(project, tmp_path)
    with open(src / "disk.img", "wb") as f:
        f.truncate(2 << 30)
        f.write(b"x" * 4096)
    on_disk = os.stat(src / "disk.img").st_blocks * 512
    if on_disk >= 1 << 30:
        pytest.skip("this file system does not keep holes")
    r = project.cli("sync", "--host", "dataset", "--check")
    s = step(project)
    assert r.returncode == 0 and "would send 7 of 7 files (2.0 GiB)" in s["msg"], s
    assert (
        f"; 'disk.img' is 2.0 GiB long but takes {format_bytes(on_disk, binary=True)} on this machine's"
        " disk (sparse): it is sent and stored on the host whole, 2.0 GiB, its holes as zeros"
    ) in s["msg"], s["msg"]
    assert not (data_dir / "my data").exists()


def test_encrypted_mode_says_a_directory_holding_only_a_fifo_is_not_uploaded_not_that_it_is_empty(
    project: Project, tmp_path: Path
) -> None:
    """Plain encrypted mode sends ciphertexts of files: a directory holding only a fifo goes
    with neither. It was said as `1 empty directory of the dataset is not uploaded` beside the
    fifo note, about a directory that is not empty here."""
    from test_dataset import _age_key

    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub])
    made = _special_files(src)
    (src / "empty").mkdir()
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert (
        "; 2 directories of the dataset empty or holding only fifos, sockets or device nodes are not"
        " uploaded in encrypted mode (e.g. 'empty'; --shards carries them)"
    ) in s["msg"], s["msg"]
    assert (
        f"device nodes of the dataset are not uploaded, as they hold no data to copy (e.g. {made[0]!r})"
        in s["msg"]
    )
    shutil.rmtree(src / "empty")
    for name in os.listdir(src):  # the dataset: only the directory holding a fifo
        if name != "only fifos":
            (shutil.rmtree if (src / name).is_dir() and not (src / name).is_symlink() else os.unlink)(
                src / name
            )
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    s = step(project)
    assert r.returncode == 0 and s["msg"].startswith(
        f"the dataset {src} holds no files, only directories holding only fifos, sockets or device"
        " nodes, which plain encrypted mode does not upload (--shards carries them); nothing sent"
    ), s["msg"]
