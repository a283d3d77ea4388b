"""What the teardown pull takes from a (possibly compromised) host: data, not privileges.

rsync receives without device nodes, fifos, sockets, owners, groups, setuid/setgid/sticky bits
or group/other write; the host's special files are named in the message; an unverified copy
keeps no symlink pointing out of itself. The rsync flags run here against local dirs.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from gpuonboard.steps.teardown import (
    RECEIVE_SAFELY,
    TreeChecks,
    drop_links_out,
    links_out_of,
    manifest_command,
    parse_pull_output,
    pull_probe_command,
    records,
)


@pytest.mark.skipif(os.geteuid() != 0, reason="device nodes and foreign owners need root")
def test_the_flags_drop_devices_fifos_setuid_and_owners(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "d").mkdir(parents=True)
    os.mknod(src / "disk", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkfifo(src / "pipe")
    tool = src / "tool"
    tool.write_bytes(b"x")
    os.chown(tool, 4321, 4321)
    tool.chmod(0o6777)
    (src / "d").chmod(0o3777)
    r = subprocess.run(["rsync", "-a", *RECEIVE_SAFELY, f"{src}/", f"{dst}/"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in dst.iterdir()) == ["d", "tool"]
    st = (dst / "tool").lstat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o755, 0, 0)
    assert stat.S_IMODE((dst / "d").stat().st_mode) == 0o755


def test_special_files_are_listed_by_the_host_commands(tmp_path: Path) -> None:
    res = tmp_path / "res"
    (res / "run").mkdir(parents=True)
    (res / "a.pt").write_bytes(b"a")
    os.mkfifo(res / "run" / "pipe")
    for command in (manifest_command(str(res)), pull_probe_command(str(res))):
        script = shlex.split(command)[2] if command.startswith("sh -c") else command
        out = subprocess.run(["sh", "-c", script], cwd=res, capture_output=True, check=True).stdout.decode()
        assert ("special", "p ./run/pipe") in records(out)
    _, checks, sums = parse_pull_output(
        subprocess.run(
            ["sh", "-c", shlex.split(manifest_command(str(res)))[2]], capture_output=True
        ).stdout.decode()
    )
    assert checks.specials == (("run/pipe", "p"),) and list(sums) == ["a.pt"]
    assert checks.problem("h:/r", "/r") is None  # not a refusal: said, not pulled


def test_the_specials_note() -> None:
    assert TreeChecks().specials_note() == ""
    fifos = TreeChecks(specials=(("run/a.sock", "s"), ("run/p", "p")))
    assert fifos.specials_note() == (
        "; not pulled: 2 fifos or sockets (first: run/a.sock, a socket), which hold no data to copy"
    )
    dev = TreeChecks(specials=(("dev/sda", "b"), ("run/p", "p")))
    assert dev.specials_note() == (
        "; not pulled: 1 device node (first: dev/sda, a block device) and 1 fifo or socket (first: run/p,"
        " a fifo), which hold no data to copy (a device node in results is suspicious: check what on"
        " the host made it)"
    )


def test_links_out_of_the_copy_are_found_and_dropped(tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    (dest / "ckpt").mkdir(parents=True)
    (dest / "ckpt" / "model.pt").write_bytes(b"m")
    (dest / "best.pt").symlink_to("ckpt/model.pt")  # inside
    (dest / "gone.pt").symlink_to("ckpt/never.pt")  # dangling, inside
    (dest / "self").symlink_to(".")  # the copy itself
    (dest / "python").symlink_to("/usr/bin/env")
    (dest / "ckpt" / "up").symlink_to("../..")
    (dest / "ckpt" / "via").symlink_to("../self/../python")  # out through other links
    (dest / "etc").symlink_to("/etc")  # a dir: never walked into
    assert links_out_of(dest) == [
        ("ckpt/up", "../.."),
        ("ckpt/via", "../self/../python"),
        ("etc", "/etc"),
        ("python", "/usr/bin/env"),
    ]
    assert drop_links_out(dest) == (
        f"; the 4 pulled symlinks pointing out of {dest} were removed from it (first: ckpt/up -> ../..)"
    )
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == [
        "best.pt",
        "ckpt",
        "ckpt/model.pt",
        "gone.pt",
        "self",
    ]
    assert Path("/etc").is_dir() and Path("/usr/bin/env").exists()
    assert drop_links_out(dest) == "" and drop_links_out(tmp_path / "missing") == ""
