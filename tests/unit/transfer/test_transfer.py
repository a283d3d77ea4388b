"""Pure parts of the dataset transfer, on real rsync output captured here."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gpuonboard import transfer
from gpuonboard.connection import ConnectOptions, openssh
from gpuonboard.inventory import Host
from gpuonboard.steps import dataset
from gpuonboard.transfer import uploadlock

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rsync" / "progress2-stats__rsync-3.5.0.txt"


def test_progress2_updates_from_real_output() -> None:
    text = FIXTURE.read_text()
    updates = [u for part in text.replace("\r", "\n").split("\n") if (u := transfer.parse_progress(part))]
    assert updates[0] == transfer.ProgressUpdate(32768, 0, "0.00kB/s", "0:00:00")
    assert updates[1] == transfer.ProgressUpdate(2326528, 46, "2.00MB/s", "0:00:01")
    assert updates[-1].bytes == 5003000 and updates[-1].percent == 100
    assert transfer.parse_progress("Number of files: 3 (reg: 2, dir: 1)") is None


def test_stats_from_real_output() -> None:
    stats = transfer.parse_stats(FIXTURE.read_text())
    assert stats == transfer.RsyncStats(
        files_transferred=2, created=3, literal_bytes=5003000, bytes_sent=5004386, total_size=5003000
    )
    assert transfer.parse_stats("") == transfer.RsyncStats()


def test_listing_probe_runs_and_parses(tmp_path: Path) -> None:
    target = tmp_path / "data" / "set"
    (target / ".gpuonboard-rsync-partial").mkdir(parents=True)
    (target / ".gpuonboard-rsync-partial" / "half").write_bytes(b"h")
    (target / "sub dir" / ".rsync-partial").mkdir(parents=True)  # a user's own rsync runs': listed
    (target / "sub dir" / ".rsync-partial" / "ckpt.pt").write_bytes(b"c")
    (target / "-dash name 'q'").write_bytes(b"abc")
    (target / "link").symlink_to("-dash name 'q'")
    (target / "sub dir" / "deeper").mkdir(parents=True)
    os.utime(target / "-dash name 'q'", (1_700_000_000, 1_700_000_000))
    out = subprocess.run(
        ["sh", "-c", transfer.listing_command(str(target), str(tmp_path / "data" / "missing" / "x"))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    state = transfer.parse_listing(out)
    assert state.rsync and state.free_bytes and state.free_bytes > 0
    assert state.files == {
        "-dash name 'q'": ("f", 3, 1_700_000_000),
        "link": ("l", len("-dash name 'q'"), state.files["link"][2]),
        "sub dir/.rsync-partial/ckpt.pt": ("f", 1, state.files["sub dir/.rsync-partial/ckpt.pt"][2]),
    }
    # directories kept apart; our partial dir left out
    assert state.dirs == {"sub dir", "sub dir/deeper", "sub dir/.rsync-partial"}
    assert state.empty_dirs == {"sub dir/deeper"}
    assert not state.not_dir and state.manifest_sha is None

    def probe(target: Path, manifest: str = "") -> transfer.RemoteState:
        cmd = transfer.listing_command(str(target), str(tmp_path), manifest)
        run = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=True)
        return transfer.parse_listing(run.stdout)

    (target / "manifest.json").write_bytes(b'{"shards": []}')
    assert probe(target, "manifest.json").manifest_sha == hashlib.sha256(b'{"shards": []}').hexdigest()
    assert probe(target, "missing.json").manifest_sha is None
    (tmp_path / "a file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert probe(tmp_path / "a file").not_dir and probe(tmp_path / "dangling").not_dir
    assert not probe(tmp_path / "absent").not_dir


def test_to_send_quick_check() -> None:
    a = transfer.Entry("a", "f", 3, 100, "h")
    b = transfer.Entry("b", "f", 3, 100, "h")
    c = transfer.Entry("c", "l", 0, 100, "h", "a")
    remote = {"a": ("f", 3, 100), "b": ("f", 4, 100), "c": ("l", 1, 100)}
    assert transfer.to_send([a, b, c], remote) == [b]
    assert transfer.to_send([a], {}) == [a]
    # a symlink pointed elsewhere (`ln -sfn`): another target length, or a new link's mtime
    assert transfer.to_send([c], {"c": ("l", 2, 100)}) == [c]
    assert transfer.to_send([c], {"c": ("l", 1, 5)}) == [c]


def test_hash_command_with_awkward_names(tmp_path: Path) -> None:
    names = ["sp ace", "q'uote\"", "ünï", "-lead", "new\nline"]
    for n in names:
        (tmp_path / n).write_text(n)
    (tmp_path / "ln").symlink_to("sp ace")
    rels = [*names, "ln", "absent"]
    r = subprocess.run(
        ["sh", "-c", transfer.hash_command(str(tmp_path))],
        input=transfer.hash_stdin(rels),
        capture_output=True,
    )
    got = transfer.parse_hashes(rels, r.stdout.decode())
    tree = transfer.scan_source(tmp_path)
    for n in names:
        assert got[n] == tree.entries[n].sha256
    assert got["ln"] == tree.entries["ln"].sha256 == transfer.link_hash("sp ace")
    assert got["absent"] is None


def _rsync_path_command(argv: list[str]) -> str:
    """The command in the --rsync-path wrapper (shell.login_neutral_prefix), its octal escapes read."""
    (path,) = [a.removeprefix("--rsync-path=") for a in argv if a.startswith("--rsync-path=")]
    assert path.startswith("sh -c '") and path.endswith("' gpo"), path
    printed = path.split('printf "', 1)[1].split('_"', 1)[0]
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), printed)


def test_ssh_config_and_rsync_argv(tmp_path: Path) -> None:
    host = Host(
        name="h", address="127.0.0.5", port=2222, user="root", key_file="/k dir/id", jump=("u@bastion:2200",)
    )
    text, alias = openssh.config_text(host, None, tmp_path / "known_hosts")
    assert alias == "gpuonboard-target"
    assert 'IdentityFile "/k dir/id"' in text and "StrictHostKeyChecking yes" in text
    assert "ProxyJump gpuonboard-hop0" in text and 'HostName "bastion"' in text and "Port 2200" in text
    assert f'UserKnownHostsFile "{tmp_path / "known_hosts"}"' in text
    argv = transfer.rsync_argv(tmp_path, "/data/my set", tmp_path / "c f", alias, bwlimit="5m")
    assert argv[-1] == "gpuonboard-target:./" and "--bwlimit=5m" in argv
    assert _rsync_path_command(argv) == "cd -- '/data/my set' && rsync \"$@\""  # (no wildcard to expand)
    assert (
        "--partial-dir=.gpuonboard-rsync-partial" in argv
        and argv[argv.index("-e") + 1] == f"ssh -F '{tmp_path}/c f'"
    )


def test_rsync_failure_sentence() -> None:
    run = transfer.RsyncRun(11, transfer.RsyncStats(), "rsync: write failed: No space left on device (28)\n")
    assert "remote disk is full" in transfer.explain_rsync_failure(run)
    assert "dropped" in transfer.explain_rsync_failure(transfer.RsyncRun(255, transfer.RsyncStats(), ""))


def test_listing_reports_zstd() -> None:
    out = "##gpuonboard-dataset rsync /usr/bin/rsync\n##gpuonboard-dataset zstd /usr/bin/zstd\n"
    assert transfer.parse_listing(out).zstd
    assert not transfer.parse_listing(out.replace("/usr/bin/zstd", "absent")).zstd


def test_rsync_argv_master(tmp_path: Path) -> None:
    opts = transfer.master_options(Path("/p/.gpuonboard/ssh/cm-1"))  # nothing is created
    assert opts == ["-o", "ControlMaster=no", "-o", "ControlPath=/p/.gpuonboard/ssh/cm-1/%C"]
    argv = transfer.rsync_argv(tmp_path, "/data/x", tmp_path / "c", "gpuonboard-target", ssh_options=opts)
    ssh = argv[argv.index("-e") + 1]
    assert "ControlMaster=no" in ssh and "-z" not in argv
    assert transfer.master_options(Path("/" + "d" * 80)) == []  # unix socket path too long


def test_scan_without_hashes_then_hash_tree(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"abc")
    (tmp_path / "l").symlink_to("a")
    tree = transfer.scan_source(tmp_path, hashes=False)
    assert tree.entries["a"].sha256 == "" and tree.entries["l"].sha256
    transfer.hash_tree(tree)
    assert tree.entries["a"] == transfer.scan_source(tmp_path).entries["a"]


def test_hash_script_uses_openssl_or_falls_back_to_sha256sum(tmp_path: Path) -> None:
    """The host-side hash loop gives the same sha256 with OpenSSL and with coreutils only."""
    import hashlib
    import shutil
    import subprocess

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a b").write_bytes(b"x" * 70000)
    (tmp_path / "d" / "l").symlink_to("a b")
    rels = ["a b", "l", "missing"]
    want = {"a b": hashlib.sha256(b"x" * 70000).hexdigest(), "l": transfer.link_hash("a b"), "missing": None}
    for tools in (
        ("sh", "xargs", "readlink", "sha256sum", "openssl", "cut"),
        ("sh", "xargs", "readlink", "sha256sum"),
    ):
        bin_dir = tmp_path / f"bin{len(tools)}"
        bin_dir.mkdir()
        for t in tools:
            found = shutil.which(t)
            assert found, t
            (bin_dir / t).symlink_to(found)
        out = subprocess.run(
            ["/bin/sh", "-c", transfer.hash_command(str(tmp_path / "d"))],
            input=transfer.hash_stdin(rels),
            capture_output=True,
            env={"PATH": str(bin_dir)},
            check=True,
        ).stdout.decode()
        assert transfer.parse_hashes(rels, out) == want, (tools, out)


def test_sync_flag_combinations_are_one_sentence() -> None:
    """`invoke sync` flags that do not go together: the exact sentence (the CLI exits 2 on it)."""
    import pytest

    from gpuonboard.api.sync import SyncOptions, build_spec
    from gpuonboard.errors import UsageError

    cases = [
        (SyncOptions(decrypt_on_host=True), "--decrypt-on-host needs --encrypt."),
        (SyncOptions(encrypt=True, decrypt_to="/dev/shm"), "--decrypt-to needs --decrypt-on-host."),
        (
            SyncOptions(encrypt=True, decrypt_on_host=True, decrypt_to="shm"),
            "--decrypt-to must be an absolute path on the host, not 'shm'.",
        ),
    ]
    for opts, sentence in cases:
        with pytest.raises(UsageError) as err:
            build_spec(opts)
        assert str(err.value) == sentence
    spec = build_spec(SyncOptions(encrypt=True, decrypt_on_host=True, decrypt_to="/dev/shm"))
    assert str(spec.args["decrypt_dir"]) == "/dev/shm"


def test_prescan_gives_the_same_tree_once(tmp_path: Path) -> None:
    """`prescan` (started before the login) finds what scan_source finds, handed over once;
    a source that cannot be scanned gives None, so the caller scans and reports it itself."""
    from gpuonboard import transfer

    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.bin").write_bytes(b"x" * 10)
    (tmp_path / "d" / "sub" / "b.bin").write_bytes(b"y" * 3)
    transfer.prescan(tmp_path / "d")
    transfer.prescan(tmp_path / "d")  # once per root
    got = transfer.take_prescan(tmp_path / "d")
    assert got is not None and got.entries == transfer.scan_source(tmp_path / "d", hashes=False).entries
    assert set(got.entries) == {"a.bin", "sub/b.bin"}
    assert transfer.take_prescan(tmp_path / "d") is None
    transfer.prescan(tmp_path / "missing")
    assert transfer.take_prescan(tmp_path / "missing") is None


def test_marking_unverified_files_never_follows_a_symlink(tmp_path: Path) -> None:
    """A path that failed verification gets mtime 0 on the host; a symlink among them gets it
    itself, and the file it points to (outside the data dir) keeps its own."""
    import subprocess

    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x")
    before = outside.stat().st_mtime
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "latest").symlink_to(outside)
    (copy / "f.bin").write_bytes(b"y")
    cmd = transfer.unverified_command(str(copy))
    subprocess.run(["sh", "-c", cmd], input=transfer.hash_stdin(["latest", "f.bin"]), check=True)
    assert outside.stat().st_mtime == before
    assert (copy / "latest").lstat().st_mtime == 0 and (copy / "f.bin").stat().st_mtime == 0


def test_the_kept_note_leaves_out_rsync_temp_names() -> None:
    from gpuonboard.steps.dataset import _kept_on_host

    host = {"d/.big.bin.7wZleE": ("f", 9, 1), "d/.notes.txt.Ab12Cd": ("f", 1, 1), "d/old.txt": ("f", 1, 1)}
    note = _kept_on_host(host, {"d/big.bin", "d/new.txt"})
    assert note == "; 2 files on the host are not in the dataset and kept there (e.g. 'd/.notes.txt.Ab12Cd')"


def test_sweep_removes_only_old_empty_control_dirs(tmp_path: Path) -> None:
    """What a run killed with SIGKILL left in /tmp (220 found here after many test runs): empty
    `gpob-cm-*` dirs older than ten minutes go; a young one, one holding a socket or file, a
    file of that name, the caller's own and other names stay."""
    import time

    from gpuonboard.transfer import sweep_control_dirs

    old = time.time() - 3600
    for name in ("gpob-cm-old", "gpob-cm-young", "gpob-cm-busy", "gpob-cm-mine", "other-old"):
        (tmp_path / name).mkdir()
    (tmp_path / "gpob-cm-busy" / "socket").write_text("")
    (tmp_path / "gpob-cm-file").write_text("")
    for name in ("gpob-cm-old", "gpob-cm-busy", "gpob-cm-mine", "other-old", "gpob-cm-file"):
        os.utime(tmp_path / name, (old, old))
    assert sweep_control_dirs(tmp_path, keep=tmp_path / "gpob-cm-mine") == 1
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["gpob-cm-busy", "gpob-cm-file", "gpob-cm-mine", "gpob-cm-young", "other-old"]
    assert sweep_control_dirs(tmp_path / "missing") == 0


# A dropped link (issue 26), the pure parts: keepalives on every SSH transport an upload opens,
# the host's rsync giving a silent link up by itself, rsync's temp and partial files in the
# listing, what the rerun resumes from or removes, and the room it needs on the host's disk.


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
    assert (
        _rsync_path_command(argv) == 'cd -- /data/x && env GPUONBOARD_UPLOAD=0123abcd-feedbeef0001 rsync "$@"'
    )


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


def test_a_process_that_exited_is_not_running_even_unreaped() -> None:
    """stop_master waits for the master's process to end; an exited child its parent has not
    reaped yet (a zombie) has ended, a live one has not."""
    from gpuonboard.transfer.master import _running

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert _running(child.pid)
    finally:
        child.kill()
    deadline = time.monotonic() + 10
    while _running(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running(child.pid)  # a zombie still: not reaped until wait()
    assert Path(f"/proc/{child.pid}").exists()
    child.wait()
    assert not _running(child.pid)
