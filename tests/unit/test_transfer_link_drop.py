"""A dropped link (issue 26), the pure parts: keepalives on every SSH transport an upload opens,
the host's rsync giving a silent link up by itself, rsync's temp and partial files in the
listing, what the rerun resumes from or removes, and the room it needs on the host's disk."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard import transfer
from gpuonboard.connection import ConnectOptions, openssh
from gpuonboard.inventory import Host
from gpuonboard.steps import dataset
from gpuonboard.transfer import uploadlock


@pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH client not installed")
def test_every_openssh_hop_the_upload_opens_has_keepalives(tmp_path: Path) -> None:
    """What ssh itself reads from the generated config (ssh -G), for the target and each jump
    host: a dead link is given up after 15 s x 4 unanswered keepalives, as the paramiko
    connection's LinkWatch does."""
    host = Host(name="h", address="127.0.0.5", port=2222, user="root", jump=("u@bastion:2200",))
    text, alias = openssh.config_text(host, None, tmp_path / "known_hosts")
    cfg = tmp_path / "cfg"
    cfg.write_text(text)
    options = ConnectOptions()
    for name in (alias, "gpuonboard-hop0"):
        got = subprocess.run(["ssh", "-G", "-F", str(cfg), name], capture_output=True, text=True, check=True)
        seen = dict(line.split(" ", 1) for line in got.stdout.splitlines() if " " in line)
        assert seen["serveraliveinterval"] == str(options.keepalive), name
        assert seen["serveralivecountmax"] == str(options.keepalive_count), name


def test_the_hosts_rsync_gives_a_silent_link_up_by_itself_and_carries_the_runs_mark(tmp_path: Path) -> None:
    """rsync --timeout reaches the host's rsync too: its receiver ends (keeping what arrived as
    a partial file) when the link went silent, after ssh's own keepalive window here; and the
    host's rsync carries the run's mark in its environment, for a rerun to find it."""
    mark = uploadlock.mark("0123abcd", "feedbeef0001")
    argv = transfer.rsync_argv(tmp_path, "/data/x", tmp_path / "cfg", "gpuonboard-target", marker=mark)
    timeouts = [a for a in argv if a.startswith("--timeout=")]
    assert timeouts == [f"--timeout={transfer.RSYNC_TIMEOUT_S}"], argv
    options = ConnectOptions()
    assert options.keepalive * options.keepalive_count < transfer.RSYNC_TIMEOUT_S <= 300
    assert "--rsync-path=cd -- /data/x && env GPUONBOARD_UPLOAD=0123abcd-feedbeef0001 rsync" in argv


def test_the_listing_reports_partial_files_apart_from_the_copys_files() -> None:
    out = (
        "##gpuonboard-dataset rsync /usr/bin/rsync\n##gpuonboard-dataset df\n"
        "/dev/x 1000 10 990 1% /data\n##gpuonboard-dataset list\n"
        "f 10 1.0 a.bin\0P 7 2.0 .gpuonboard-rsync-partial/big.bin\0"
        "P 3 2.0 sub/.gpuonboard-rsync-partial/c.bin\0f 5 3.0 .big.bin.Ab12Cd\0d 0 1.0 sub\0"
    )
    state = transfer.parse_listing(out)
    assert state.partials == {"big.bin": 7, "sub/c.bin": 3}
    assert set(state.files) == {"a.bin", ".big.bin.Ab12Cd"}
    assert state.dirs == frozenset({"sub"})


def test_rsync_temp_names() -> None:
    assert transfer.rsync_temp_of("d/.big.bin.age.Xy12Z9") == "d/big.bin.age"
    assert transfer.rsync_temp_of(".a.Xy12Z9") == "a"
    assert transfer.rsync_temp_of("big.bin") is None and transfer.rsync_temp_of(".big.bin.Xy1") is None
    # six letters of one kind: a user's name (`.notes.backup`), not mkstemp's random ones
    assert transfer.rsync_temp_of(".notes.backup") is None and transfer.rsync_temp_of(".a.202401") is None
    got = transfer.parse_temps(".big.bin.Ab12Cd\0d/.x.Qq11Qq\0.other.Ab12Cd\0", ["big.bin", "d/x"])
    assert got == [".big.bin.Ab12Cd", "d/.x.Qq11Qq"]


def _state(files: dict[str, tuple[str, int, int]], partials: dict[str, int]) -> transfer.RemoteState:
    return transfer.RemoteState("/usr/bin/rsync", 10**9, files, partials=partials)


def test_what_interrupted_uploads_left_is_resumed_from_or_removed() -> None:
    """A temp file of a file to send (a dropped link's receiver kept it, not a partial file) is
    resumed from; the temp and partial files of files that are not sent go; a temp-like name of
    no dataset file is the user's, never touched."""
    remote = _state(
        {
            ".big.bin.Ab12Cd": ("f", 60, 0),  # a file to send: resumed from (bigger than its partial)
            ".done.bin.Zz99Zz": ("f", 5, 0),  # a file already there: removed
            ".theirs.Ab12Cd": ("f", 9, 0),  # no dataset file: kept, not ours
            "done.bin": ("f", 10, 0),
        },
        {"big.bin": 40, "gone.bin": 7},
    )
    resume, remove, basis, freed = dataset._interrupted(remote, {"big.bin", "done.bin"}, {"big.bin"})
    assert resume == [".big.bin.Ab12Cd"]
    assert remove == [".done.bin.Zz99Zz", ".gpuonboard-rsync-partial/gone.bin"]
    assert basis == {"big.bin": 60}
    assert freed == 40 + 5 + 7  # (the smaller partial of big.bin goes too)


def test_the_room_an_upload_needs_counts_what_is_already_there() -> None:
    """Issue 26's case: a 121.6 MiB file with 114 MiB of it there as a partial file, then 169.7
    MiB of small files; 286.1 MiB free was refused as 291.3 MiB needed. At most the big file's
    whole temp file beside its partial, then what the rest adds."""
    mib = 1024 * 1024
    big, small = int(121.6 * mib), int(169.7 * mib)
    peak, grown = dataset._room([(big, 114 * mib), (small, 0)])
    assert peak == big + small - 114 * mib and grown == peak
    assert peak < 286.1 * mib < big + small
    # the big file last: its whole temp file sits beside its partial and everything else
    peak, grown = dataset._room([(small, 0), (big, 114 * mib)])
    assert peak == small + big and grown == small + big - 114 * mib


def test_the_stop_script_is_posix_sh() -> None:
    """`kill -- -PGID` is refused by dash (the host's /bin/sh on Debian): the process group
    must be written as one argument after the signal."""
    assert not re.search(r"kill -\w+ --", uploadlock.STOP_FN)
    if shutil.which("dash"):
        r = subprocess.run(["dash", "-n", "-c", uploadlock.TAKE_SCRIPT], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_the_take_commands_stdin_and_answer() -> None:
    assert uploadlock.tidy_stdin(["a/.x.Ab12Cd"], ["b"]) == b"Aa/.x.Ab12Cd\0Rb\0"
    got = uploadlock.parse_stopped("stopped 2\ntidied A\ntidied R\ntidied R\ntook /d/.x.gpuonboard-upload\n")
    assert got == uploadlock.Stopped(2, 1, 2)
    assert uploadlock.parse_take("stopped 0\ntook /d/.x.gpuonboard-upload\n") == "/d/.x.gpuonboard-upload"
