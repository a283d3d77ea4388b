"""Teardown's pure parts: cost rounding per billing unit, path safety, manifests, command lines."""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shlex
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from gpuonboard.api.teardown import shared_dest
from gpuonboard.connection import openssh
from gpuonboard.inventory import Host
from gpuonboard.runner import journal
from gpuonboard.steps import teardown
from gpuonboard.steps.teardown import (
    PARTIAL_DIR,
    RECEIVE_SAFELY,
    RECORD,
    OwnCache,
    Owner,
    Record,
    TeardownFilesStep,
    TreeChecks,
    Uploads,
    classify_uploads,
    compare_manifests,
    describe_problems,
    drop_links_out,
    exposed_dest,
    foreign_dest,
    held_bytes,
    journal_start,
    links_out_of,
    listing_changes,
    listing_digest,
    local_manifest,
    manifest_command,
    mark_pulling,
    own_cache,
    parse_manifest,
    parse_pull_output,
    parse_recorded,
    parse_since,
    path_problem,
    plaintext_note,
    pull_probe_command,
    read_owner,
    read_record,
    recorded_probe_command,
    records,
    rental_cost,
    room_problem,
    rsync_argv,
    run_id_time,
    shared_cache_note,
    uploads_probe_command,
    write_record,
)
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock
from gpuonboard.transfer.uploadlock import RECORD_FN

H = 3600.0


@pytest.mark.parametrize(
    ("unit", "elapsed", "units", "amount"),
    [
        ("hour", 1, 1, 58.0),  # a started hour is paid
        ("hour", H, 1, 58.0),
        ("hour", H + 1, 2, 116.0),
        ("hour", 0, 1, 58.0),  # started just now: the first hour has started
        ("minute", 61, 2, round(120 / H * 58.0, 2)),
        ("minute", 60, 1, round(60 / H * 58.0, 2)),
        ("minute", 2.5 * H, 150, 145.0),
        ("second", 90.2, 91, round(91 / H * 58.0, 2)),
        ("second", 2 * H, 7200, 116.0),
    ],
)
def test_cost_rounds_up_by_the_billing_unit(unit: str, elapsed: float, units: int, amount: float) -> None:
    start = 1_700_000_000.0
    cost = rental_cost(start, start + elapsed, unit, 58.0, "CNY", "test")
    assert cost.billed_units == units
    assert cost.amount == amount
    assert cost.to_json()["billed_s"] == units * {"hour": 3600, "minute": 60, "second": 1}[unit]
    assert cost.text().endswith(f"= {amount:.2f} CNY")


def test_cost_without_rate_and_with_a_clock_behind() -> None:
    cost = rental_cost(100.0, 50.0, "hour", None, "", "x")
    assert cost.elapsed == 0 and cost.billed_units == 1 and cost.amount is None
    assert "no billing rate" in cost.text()
    with pytest.raises(ValueError):
        rental_cost(0, 1, "day", 1.0)


def test_rented_since_and_run_id_times() -> None:
    assert parse_since(None) is None and parse_since("") is None
    assert parse_since(1700000000) == 1700000000.0
    assert parse_since("1700000000") == 1700000000.0
    assert parse_since("2023-11-14T22:13:20+00:00") == 1700000000.0
    assert parse_since("2023-11-14T22:13:20Z") == 1700000000.0
    with pytest.raises(ValueError):
        parse_since("yesterday")
    for bad in ("1e400", 1e400, float("nan"), "-5", "9999-01-01T00:00:00"):  # (1e400 crashed the run)
        with pytest.raises(ValueError, match="is not a time between the years 2000 and 2100"):
            parse_since(bad)
    t = run_id_time("20261129-173501-3fa2")
    assert t == time.mktime((2026, 11, 29, 17, 35, 1, 0, 0, -1))
    assert run_id_time("garbage") is None


def test_journal_start_is_the_first_provision_run(tmp_path: Path) -> None:
    first, second = "20261129-100000-aaaa", "20261130-120000-bbbb"
    journal.save(tmp_path, journal.Journal("h1", "provision", first, {"acceptance": {"run_id": first}}))
    journal.save(tmp_path, journal.Journal("h1", "provision", second, {"acceptance": {"run_id": second}}))
    assert json.loads((tmp_path / "h1__provision.json").read_text())["first_run_id"] == first
    journal.save(tmp_path, journal.Journal("h1", "autostop", "20250101-000000-cccc"))
    journal.save(tmp_path, journal.Journal("h2", "provision", "20240101-000000-dddd"))
    assert journal_start(tmp_path, "h1") == (run_id_time(first), "the provision journal")
    journal.save(tmp_path, journal.Journal("h3", "container", "20261201-000000-eeee"))
    assert journal_start(tmp_path, "h3") == (run_id_time("20261201-000000-eeee"), "the container journal")
    assert journal_start(tmp_path, "nobody") is None


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("", "an empty path"),
        ("   ", "an empty path"),
        ("/", "the root directory"),
        ("//", "the root directory"),
        ("/root", "a top-level directory"),
        ("/root/", "a top-level directory"),
        ("/home", "a top-level directory"),
        ("/home/alice", "a home directory"),
        ("/home/alice/", "a home directory"),
        ("/data", "a top-level directory"),
        ("/etc/ssh", "a system directory"),
        ("/etc", "a system directory"),
        ("/usr", "a system directory"),
        ("/usr/local/share/x", "a system directory"),
        ("/var/lib", "a system directory"),
        ("data/x", "not an absolute path"),
        ("/data/../etc", "a path with '..'"),
        ("/srv/x\nrm", "a path with a line break"),
        ("/srv/work", "the login user's home directory"),
        ("/srv", "a top-level directory"),
        ("/opt/users", "a directory holding the login user's home directory"),
    ],
)
def test_unsafe_paths_are_refused(path: str, why: str) -> None:
    home = "/srv/work" if path.startswith("/srv/work") else "/opt/users/bob"
    assert path_problem(path, home) == why


@pytest.mark.parametrize(
    "path", ["/data/dataset", "/var/lib/gpuonboard", "/home/alice/results", "/mnt/nvme0n1p1", "/tmp/x y;z"]
)
def test_safe_paths(path: str) -> None:
    assert path_problem(path, "/root") is None


def test_manifest_parsing_and_comparison(tmp_path: Path) -> None:
    def sha(b: bytes) -> str:
        return hashlib.sha256(b).hexdigest()

    text = (
        f"{sha(b'a')}  ./a.txt\n"
        f"{sha(b'b')}  ./ckpt/b.pt\n"
        f"\\{sha(b'n')}  ./odd\\nname\\\\x\n"
        f"{sha(b'p')}  ./run/.rsync-partial/a.txt\n"  # a result like any other (not ours)
        f"{sha(b'c')}  ./c.bin\n"
    )
    remote = parse_manifest(text)
    assert sorted(remote) == ["a.txt", "c.bin", "ckpt/b.pt", "odd\nname\\x", "run/.rsync-partial/a.txt"]
    (tmp_path / "run" / ".rsync-partial").mkdir(parents=True)
    (tmp_path / "run" / ".rsync-partial" / "a.txt").write_bytes(b"p")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "ckpt" / "b.pt").write_bytes(b"B")  # corrupt
    (tmp_path / "odd\nname\\x").write_bytes(b"n")
    (tmp_path / "extra").write_bytes(b"local only: ignored")
    local = local_manifest(tmp_path, remote)
    missing, corrupt = compare_manifests(remote, local)
    assert (missing, corrupt) == (["c.bin"], ["ckpt/b.pt"])
    assert describe_problems(missing, corrupt, 5) == (
        "2 of 5 files not verified: missing 1 (c.bin); corrupt 1 (ckpt/b.pt)"
    )
    many = [f"f{i}" for i in range(7)]
    assert describe_problems(many, [], 9) == "7 of 9 files not verified: missing 7 (f0, f1, f2 (+4 more))"
    assert compare_manifests(remote, {k: v for k, v in remote.items()}) == ([], [])


def test_manifest_command_quotes_the_dir() -> None:
    cmd = manifest_command("/data/res; rm -rf /")
    inner = shlex.split(cmd)
    assert inner[:2] == ["sh", "-c"]
    assert inner[2].startswith("export LC_ALL=C; cd -- '/data/res; rm -rf /' && root=$(pwd -P) && find .")


def _rsync_path_command(argv: list[str]) -> str:
    """The command in the --rsync-path wrapper (shell.login_neutral_prefix), its octal escapes read."""
    (path,) = [a.removeprefix("--rsync-path=") for a in argv if a.startswith("--rsync-path=")]
    assert path.startswith("sh -c '") and path.endswith("' gpo"), path
    printed = path.split('printf "', 1)[1].split('_"', 1)[0]
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), printed)


def test_rsync_pull_command_line(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh cfg"
    rs = rsync_argv("gpuonboard-target", cfg, "/data/results/", tmp_path / "out")
    assert rs[:5] == ["rsync", "-a", "--protect-args", "--partial", "--partial-dir=.gpuonboard-rsync-partial"]
    # data, not privileges: no device node, fifo, owner, group, setuid bit or group/other write
    assert rs[5:10] == ["--no-devices", "--no-specials", "--no-owner", "--no-group", "--chmod=ugo-st,go-w"]
    assert rs[10] == "--timeout=120"  # the host's sender gives a silent (dropped) link up
    assert rs[11] == "-e" and shlex.split(rs[12]) == ["ssh", "-F", str(cfg)]
    assert rs[14:] == ["gpuonboard-target:./", f"{tmp_path / 'out'}/"]
    assert _rsync_path_command(rs) == 'cd -- /data/results && rsync "$@"'


def test_pull_uses_the_shared_openssh_config_with_jump_chain(tmp_path: Path) -> None:
    kh = tmp_path / "kh"
    target = Host(
        name="t", address="10.0.0.9", jump=("jump@203.0.113.5:22", "10.0.0.1:2200"), key_file="/k/id"
    )
    text, alias = openssh.config_text(target, None, kh)
    assert alias == "gpuonboard-target"
    assert 'Host gpuonboard-hop0\n  HostName "203.0.113.5"\n  Port 22\n  User "jump"' in text
    assert 'Host gpuonboard-hop1\n  HostName "10.0.0.1"\n  Port 2200' in text
    assert text.count("StrictHostKeyChecking yes") == 3
    assert text.rstrip().endswith("ProxyJump gpuonboard-hop1")
    path = openssh.write_config(tmp_path, target, text)
    assert path.read_text() == text and oct(path.stat().st_mode & 0o777) == "0o600"


def _host_sh(script: str, cwd: Path) -> str:
    """Run a remote command line with this machine's sh, find and coreutils (as on a host)."""
    out = subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, check=True).stdout
    return out.decode("utf-8", "surrogateescape")


def test_manifest_command_lists_checks_and_hashes(tmp_path: Path) -> None:
    res = tmp_path / "res"
    (res / "ckpt").mkdir(parents=True)
    (res / "ckpt" / "a.pt").write_bytes(b"a")
    (res / "odd\nname").write_bytes(b"n")
    with open(os.fsencode(res) + b"/caf\xe9.pt", "wb") as f:
        f.write(b"c")
    (tmp_path / "outside.bin").write_bytes(b"o")
    (res / "in.pt").symlink_to("ckpt/a.pt")
    (res / "up.pt").symlink_to("../outside.bin")
    (res / "zz-gone.pt").symlink_to("nothing")
    (res / "sub" / ".gpuonboard-rsync-partial").mkdir(parents=True)
    (res / ".rsync-partial").mkdir()
    (res / ".rsync-partial" / "p").write_bytes(b"p")
    listing, checks, sums = parse_pull_output(_host_sh(shlex.split(manifest_command(str(res)))[2], tmp_path))
    assert sorted(sums) == [".rsync-partial/p", "caf\udce9.pt", "ckpt/a.pt", "odd\nname"]
    assert sums["ckpt/a.pt"] == hashlib.sha256(b"a").hexdigest()
    outside = str(tmp_path / "outside.bin")
    # the removed dirs not known (the step without them): every link out of the results is bad
    bad = (("up.pt", outside), ("zz-gone.pt", "nothing"))
    assert checks == TreeChecks(("sub/.gpuonboard-rsync-partial",), bad, (), strict=True)
    assert len(listing) == 7 and {e[0] for e in listing} == {"f", "l"}  # 4 files, 3 symlinks
    what, _ = checks.problem("h:/r", "/r") or ("", "")
    assert what.startswith("h:/r holds sub/.gpuonboard-rsync-partial, a name teardown keeps")
    what, fix = TreeChecks((), checks.bad_links, strict=True).problem("h:/r", "/r") or ("", "")
    assert what == (
        f"h:/r holds 2 symlinks whose target is outside it or missing (first: up.pt -> {outside}), so the"
        " copy would not hold that data"
    )
    assert fix == "copy the targets into /r (or delete the links) on the host, then rerun"

    # the digest the removal script compares equals the host's `find | sort -z | sha256sum`
    ls = "find . \\( -type f -o -type l \\) -printf '%y %s %T@ %p\\0' | LC_ALL=C sort -z | sha256sum"
    assert _host_sh(f"cd {shlex.quote(str(res))} && {ls}", tmp_path).split()[0] == listing_digest(listing)
    assert listing_changes(listing, listing) == []
    (res / "ckpt" / "b.pt").write_bytes(b"b")
    os.utime(res / "ckpt" / "a.pt", (1, 1))
    (res / "odd\nname").unlink()
    after, _, _ = parse_pull_output(_host_sh(shlex.split(manifest_command(str(res)))[2], tmp_path))
    assert listing_changes(listing, after) == ["ckpt/a.pt", "ckpt/b.pt", "odd\nname"]


def test_the_record_names_host_and_dir_and_is_all_or_nothing(tmp_path: Path) -> None:
    host = Host(name="h1", address="10.0.0.9", port=2222)
    sums = {"a.txt": "a" * 64, "odd\nname\\x": "b" * 64, "caf\udce9.pt": "c" * 64}
    rec = Record("h1", "10.0.0.9", 2222, "/data/run-23", ("f 1 2.0 ./a.txt",), sums)
    assert write_record(tmp_path, rec) is None
    assert [p.name for p in tmp_path.iterdir()] == [RECORD]  # no temp file left
    back = read_record(tmp_path)
    assert back == rec and back.of(host, "/data/run-23")
    assert not back.of(host, "/data/run-24")
    assert not back.of(Host(name="h1", address="10.0.0.8", port=2222), "/data/run-23")
    data = (tmp_path / RECORD).read_bytes()
    assert data.splitlines()[0].startswith(b"# gpuonboard-verified {")
    for bad in (b"", data[:-1], data.rsplit(b"\n", 2)[0] + b"\n", data.split(b"\n", 1)[1]):
        assert Record.parse(bad) is None
    # a failed write leaves no record at all (not the older one either)
    assert write_record(tmp_path / "missing", rec) == "No such file or directory"
    assert read_record(tmp_path / "missing") is None


def test_links_are_judged_by_the_dirs_teardown_removes(tmp_path: Path) -> None:
    # only a link whose target teardown deletes loses data; a dangling link (a rotated
    # checkpoint) or one to a system file is copied as a link and its target stays
    res, data = tmp_path / "res", tmp_path / "data"
    (res / "wandb").mkdir(parents=True)
    (data / "set").mkdir(parents=True)
    (data / "set" / "train.bin").write_bytes(b"t")
    (tmp_path / "data-link").symlink_to(data)  # a removed dir given through a symlink
    (res / "ckpt-5.pt").write_bytes(b"c")
    (res / "latest.pt").symlink_to("ckpt-4.pt")  # dangling after rotation
    (res / "wandb" / "python").symlink_to("/usr/bin/env")
    (res / "train.bin").symlink_to(data / "set" / "train.bin")
    (res / "best.pt").symlink_to("ckpt-5.pt")  # inside: not a concern
    removed = [str(tmp_path / "data-link"), "", str(tmp_path / "no such dir")]
    script = shlex.split(manifest_command(str(res), removed))[2]
    _, checks, _ = parse_pull_output(_host_sh(script, tmp_path))
    assert checks.bad_links == (("train.bin", str(data / "set" / "train.bin")),)
    assert checks.kept_links == (("latest.pt", "ckpt-4.pt"), ("wandb/python", "/usr/bin/env"))
    assert not checks.strict
    what, _ = checks.problem("h:/r", "/r") or ("", "")
    assert what == (
        f"h:/r holds 1 symlink whose target lies in a directory teardown deletes (first: train.bin ->"
        f" {data / 'set' / 'train.bin'}), so the copy would not hold that data"
    )
    assert checks.kept_note() == (
        "; 2 symlinks copied as links, not their targets (missing, or outside every directory teardown"
        " removes, so they stay; first: latest.pt -> ckpt-4.pt)"
    )
    (res / "train.bin").unlink()
    _, checks, _ = parse_pull_output(_host_sh(script, tmp_path))
    assert checks.problem("h:/r", "/r") is None and len(checks.kept_links) == 2


def test_image_refs_name_the_mirror_copy_as_the_container_step_tagged_it() -> None:
    """The mirror's copy is `<host[:port][/prefix]>/<path>:<tag>`, host lowercased, scheme
    dropped (as container.parse_mirror names it); a malformed mirror has no copy to remove."""
    from gpuonboard.steps.teardown import _image_refs

    image = "nvcr.io/nvidia/pytorch:24.08-py3"
    assert _image_refs(image, "https://Mirror.Example.CN:5000/ngc/") == [
        image,
        "mirror.example.cn:5000/ngc/nvidia/pytorch:24.08-py3",
    ]
    assert _image_refs(image, "https://robot:pw@harbor.cn") == [image]
    assert _image_refs(image, "") == [image]
    # a list of mirrors, as the playbook renders it: each one's copy
    assert _image_refs(image, "('a.example.cn', 'b.example.cn:5000')")[1:] == [  # (a vendor's)
        "a.example.cn/nvidia/pytorch:24.08-py3",
        "b.example.cn:5000/nvidia/pytorch:24.08-py3",
    ]
    assert _image_refs(image, "['https://a.example.cn/', 'b.example.cn:5000']") == [
        image,
        "a.example.cn/nvidia/pytorch:24.08-py3",
        "b.example.cn:5000/nvidia/pytorch:24.08-py3",
    ]


# The local copy's record and the mark of a pull are written through a new temp file, never
# through a name planted there (a symlink to another file of this user), and a --dest another
# user owns, or anyone may write, is refused: they could swap what the pull writes into.


def test_a_planted_temp_name_is_never_written_through(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (dest / f"{RECORD}.{os.getpid()}.tmp").symlink_to(victim)
    assert mark_pulling(dest, Owner("h", "127.0.0.1", 22, "/data/runs", False)) is None
    assert victim.read_text() == "mine\n"
    assert (dest / RECORD).read_text().startswith("# gpuonboard-pulling ")
    assert not (dest / RECORD).is_symlink()


def test_a_dest_others_can_change_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    assert exposed_dest(dest) is None  # (made by the pull, this user's)
    dest.mkdir()
    assert exposed_dest(dest) is None
    dest.chmod(0o1777)
    assert exposed_dest(dest) == "is writable by every user (mode 1777)"
    dest.chmod(0o755)
    if os.getuid() != 0:
        pytest.skip("needs root to give the dir to another user")
    os.chown(dest, 65534, 65534)
    assert exposed_dest(dest) == "belongs to another user (uid 65534)"


def test_a_copy_of_another_box_at_the_same_address_is_not_this_hosts(tmp_path: Path) -> None:
    """Rented addresses are reused: the mark and the record keep the host key, so a new box on
    the old one's address, port and results dir does not pull into (and overwrite) its copy."""
    from gpuonboard.inventory import Host
    from gpuonboard.steps.teardown import Record, foreign_dest, read_owner

    host = Host("gpu-1", "127.0.0.9", port=2222)
    dest = tmp_path / "dest"
    dest.mkdir()
    old = Owner("gpu-1", "127.0.0.9", 2222, "/data/runs", False, "SHA256:old-box")
    assert mark_pulling(dest, old) is None
    (dest / "ckpt.pt").write_bytes(b"the old box's")
    owner = read_owner(dest)
    assert owner is not None and owner.key == "SHA256:old-box"
    assert foreign_dest(dest, host, "/data/runs", "SHA256:old-box") is None  # (a rerun resumes)
    held = foreign_dest(dest, host, "/data/runs", "SHA256:new-box")
    assert held == "an unfinished pull of /data/runs from gpu-1 (127.0.0.9:2222)"
    # a record keeps it too; one written before keys were kept still counts (no key to compare)
    rec = Record("gpu-1", "127.0.0.9", 2222, "/data/runs", (), {}, "SHA256:old-box")
    again = Record.parse(rec.to_bytes())
    assert again is not None and again.key == "SHA256:old-box"
    assert not again.of(host, "/data/runs", "SHA256:new-box") and again.of(
        host, "/data/runs", "SHA256:old-box"
    )
    keyless = Record.parse(Record("gpu-1", "127.0.0.9", 2222, "/data/runs", (), {}).to_bytes())
    assert keyless is not None and keyless.of(host, "/data/runs", "SHA256:new-box")


# teardown's listing of a dir holding uploads comes from the host, which is not trusted: a
# lease age that is not a plain number (a hostile or broken host's `lease --5`, `lease ²`) is no
# lease age, never a ValueError that ends teardown with a traceback.


WRITTEN = "written " + "0" * 64 + "\0"  # (the probe's record: uploads listed what they wrote in it)


@pytest.mark.parametrize("age", ["--5", "²", "٣", "5-", "- 5", ""])
def test_a_lease_age_that_is_not_a_number_is_ignored(age: str) -> None:
    out = f"dir /data\0uid 1000\0d - 1000 ds\0{WRITTEN}lease {age}\0"
    found = teardown.classify_uploads(out, "ds")
    assert found is not None
    assert found.ours == ("ds",)
    assert found.live_leases == ()


@pytest.mark.parametrize(("age", "live"), [("5", True), ("-3", True), ("600", False)])
def test_a_lease_age_in_plain_digits_still_counts(age: str, live: bool) -> None:
    out = f"dir /data\0uid 1000\0d - 1000 ds\0{WRITTEN}lease {age}\0"
    found = teardown.classify_uploads(out, "ds")
    assert found is not None
    assert found.live_leases == (("ds",) if live else ())


def test_the_recorded_listing_of_a_hostile_host_parses() -> None:
    out = "record\0rec /scratch/ds\0section /scratch\0dir /scratch\0uid 1000\0d - 1000 ds\0"
    out += f"{WRITTEN}lease --1\0"
    parsed = teardown.parse_recorded(out)
    assert parsed is not None
    names, listings = parsed
    found = teardown.classify_uploads(listings["/scratch"], "", (), names, only_recorded=True)
    assert found is not None and found.ours == ("ds",) and found.live_leases == ()


# What an interrupted or encrypted upload left in the data dir: the probe runs with this
# machine's sh over a real directory.


def _probe(d: Path) -> str:
    """The probe of the dir d, HOME beside it (where uploads list what they wrote: _written)."""
    env = {"HOME": str(d.parent / "home"), "PATH": "/usr/bin:/bin"}
    command = uploads_probe_command(str(d))
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env).stdout


def _written(tree: Path, listing: bytes | None = None) -> None:
    """What `sync` lists on the host for a tree it writes (uploadlock.write_listing_command);
    no listing: an upload that wrote nothing there."""
    env = {"HOME": str(tree.parent.parent / "home"), "PATH": "/usr/bin:/bin"}
    command = uploadlock.write_listing_command(str(tree))
    stdin = uploadlock.listing_stdin([]) if listing is None else listing
    subprocess.run(["sh", "-c", command], input=stdin, env=env, check=True)


# a shard store's manifest.json as gpuonboard writes it (transfer/shards.py manifest_pieces)
OWN_MANIFEST = '{"format": "gpuonboard-shards/3", "shard_size": 268435456, "shards": []}'


def test_a_shard_store_an_interrupted_upload_left_is_gpuonboards(tmp_path: Path) -> None:
    """A `--shards` upload killed before its closing command leaves `X.shards` with no manifest,
    only `.incoming-N` (and its `.sum`, and the shards already named): teardown removed its lease
    but left the half-sent store, saying it could not tell it for an upload."""
    disk = tmp_path / "data"
    killed = disk / "big.shards"
    killed.mkdir(parents=True)
    (killed / ".incoming-000001").write_bytes(b"x" * 100)
    (killed / ".incoming-000001.sum").write_text("0" * 64 + "\n")
    (killed / ("ab" * 16 + ".tar.zst.age")).write_bytes(b"age")
    (disk / ".big.gpuonboard-upload").write_text("token\n")
    job = disk / "mine.shards"  # the same shape, plus a file no upload writes: the user's
    job.mkdir()
    (job / ".incoming-000000").write_bytes(b"x")
    (job / "notes.txt").write_text("mine\n")
    (disk / "empty.shards").mkdir()  # nothing in it says an upload made it
    found = classify_uploads(_probe(disk), "")
    assert found is not None
    assert found.ours == (".big.gpuonboard-upload", "big.shards")
    assert found.others == ("empty.shards", "mine.shards")
    assert found.ciphertexts == ("big.shards",)


def test_the_plaintext_of_encrypted_uploads_is_named_as_left(tmp_path: Path) -> None:
    """`sync --decrypt-on-host --decrypt-to /dev/shm` puts the plaintext outside the data dir,
    where teardown never looks: its message said nothing of it."""
    disk = tmp_path / "data"
    (disk / "corpus.encrypted").mkdir(parents=True)
    (disk / "imgs.shards").mkdir()
    (disk / "imgs.shards" / "manifest.json").write_text("{}\n")
    (disk / "imgs.shards" / ("cd" * 16 + ".tar.zst.age")).write_bytes(b"age")
    (disk / "plain.shards").mkdir()
    (disk / "plain.shards" / "manifest.json").write_text("{}\n")
    (disk / "plain.shards" / ("ef" * 16 + ".tar.zst")).write_bytes(b"tar")
    found = classify_uploads(_probe(disk), "")
    assert found is not None and found.ciphertexts == ("corpus.encrypted", "imgs.shards")
    note = plaintext_note(str(disk), found.ciphertexts)
    assert f"held age ciphertexts ({disk}/corpus.encrypted, {disk}/imgs.shards)" in note
    assert "--decrypt-to DIR` put in DIR/<name> is not looked for and stays on the host" in note
    assert plaintext_note(str(disk), ()) == ""


# Whose copy a local dir is: the record of a verified pull or the mark of one in progress; a dir
# holding anything else is not pulled into (rsync would replace its files of the same names).

HOST = Host(name="h1", address="10.0.0.9", port=2222)


def test_an_empty_or_missing_dest_or_our_own_copy_is_pulled_into(tmp_path: Path) -> None:
    assert foreign_dest(tmp_path / "missing", HOST, "/data/run") is None
    assert foreign_dest(tmp_path, HOST, "/data/run") is None
    (tmp_path / PARTIAL_DIR).mkdir()  # rsync's partial dir alone
    assert foreign_dest(tmp_path, HOST, "/data/run") is None
    (tmp_path / "notes.txt").write_text("mine\n")
    assert foreign_dest(tmp_path, HOST, "/data/run") == (
        "1 entry no pull of /data/run from it put there (first: notes.txt)"
    )
    assert mark_pulling(tmp_path, Owner("h1", "10.0.0.9", 2222, "/data/run", False)) is None
    assert foreign_dest(tmp_path, HOST, "/data/run") is None  # an interrupted pull of it: resumed
    assert read_record(tmp_path) is None  # the mark is no record
    assert foreign_dest(tmp_path, HOST, "/data/run2") == (
        "an unfinished pull of /data/run from h1 (10.0.0.9:2222)"
    )
    rec = Record("h1", "10.0.0.9", 2222, "/data/run", ("f 1 2.0 ./a.txt",), {"a.txt": "a" * 64})
    assert write_record(tmp_path, rec) is None
    assert read_owner(tmp_path) == Owner("h1", "10.0.0.9", 2222, "/data/run", True)
    assert foreign_dest(tmp_path, HOST, "/data/run") is None
    other = Host(name="h1", address="10.0.0.10", port=2222)  # the name reused for another rental
    assert foreign_dest(tmp_path, other, "/data/run") == (
        "the verified copy of /data/run from h1 (10.0.0.9:2222)"
    )


def test_a_record_that_cannot_be_written_keeps_the_mark_of_the_pull(tmp_path: Path) -> None:
    owner = Owner("h1", "10.0.0.9", 2222, "/data/run", False)
    assert mark_pulling(tmp_path, owner) is None
    rec = Record("h1", "10.0.0.9", 2222, "/data/run", (), {})
    # a write that fails half-way (here: the file size limit, EFBIG; as a full disk would)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, old_limit[1]))
    try:
        failed = write_record(tmp_path, rec)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert failed == "File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == [RECORD]  # (no temp file left)
    assert read_owner(tmp_path) == owner and read_record(tmp_path) is None


# The files step's probe of gpuonboard's cache dir on the host, run with this machine's sh and
# coreutils: where `${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard` is, and when it is left alone.


def probe(env: dict[str, str], cwd: Path) -> tuple[str | None, OwnCache | None]:
    command = TeardownFilesStep({"paths": [], "own_cache": True}).probe.command
    base = {"PATH": os.environ["PATH"]}
    out = subprocess.run(["sh", "-c", command], env={**base, **env}, cwd=cwd, capture_output=True, check=True)
    lines = out.stdout.decode().splitlines()
    home = lines[0][5:] if lines[0].startswith("home ") else None
    return home, own_cache(lines[1:], home)


def test_the_cache_dir_follows_xdg_cache_home_and_is_removed_only_when_present(tmp_path: Path) -> None:
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found == OwnCache(str(home / ".cache" / "gpuonboard"))  # absent: nothing to remove
    (home / ".cache" / "gpuonboard").mkdir(parents=True)
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found == OwnCache(str(home / ".cache/gpuonboard"), str(home / ".cache/gpuonboard"))
    xdg = tmp_path / "xdg"
    (xdg / "gpuonboard").mkdir(parents=True)
    _, found = probe({"HOME": str(home), "XDG_CACHE_HOME": str(xdg)}, tmp_path)
    assert found is not None and found.target == str(xdg / "gpuonboard")


def test_an_odd_cache_place_is_left_and_said_never_a_failure(tmp_path: Path) -> None:
    home = tmp_path / "home" / "u"
    home.mkdir(parents=True)
    # a relative XDG_CACHE_HOME (against the spec): the host would resolve it from its cwd
    (tmp_path / "rel" / "gpuonboard").mkdir(parents=True)
    _, found = probe({"HOME": str(home), "XDG_CACHE_HOME": "rel"}, tmp_path)
    assert found == OwnCache("rel/gpuonboard", problem="not an absolute path")
    # the cache dir a symlink to a system dir: never removed
    (home / ".cache").mkdir()
    (home / ".cache" / "gpuonboard").symlink_to("/etc")
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found is not None and not found.target
    assert found.problem == "resolved to /etc, a system directory"
    # a symlink to a dir of ours: its target goes too, and the message says so
    (home / ".cache" / "gpuonboard").unlink()
    (tmp_path / "elsewhere" / "gpuonboard").mkdir(parents=True)
    (home / ".cache" / "gpuonboard").symlink_to(tmp_path / "elsewhere" / "gpuonboard")
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found is not None and found.link and found.target == str(tmp_path / "elsewhere" / "gpuonboard")
    assert found.link_note() == f"; a symlink: its target {found.target} is removed too"


def _files_plan(paths: list[str], cwd: Path) -> str:
    """The files step's plan message over its probe run with this machine's sh and coreutils."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.base import StepContext

    step = TeardownFilesStep({"paths": paths})
    out = subprocess.run(["sh", "-c", step.probe.command], cwd=cwd, capture_output=True, check=True)
    facts = parse_facts({step.probe.name: ProbeOutput(out.stdout.decode(), "", 0)})
    host = Host(name="h", address="127.0.0.1")
    ctx = StepContext(host=host, runner=None, facts=facts, check=True, project=cwd)  # type: ignore[arg-type]
    return step.plan(ctx).msg


@pytest.mark.parametrize("slash", ["/", "//"])
def test_a_configured_link_given_with_a_trailing_slash_is_refused(tmp_path: Path, slash: str) -> None:
    """`dataset_dir: /x/link/`: `[ -L link/ ]` is false (the shell follows the link), so the link's
    target, a team's shared dir, was planned for removal; the slashes are stripped first, and it is
    refused as the same path without them is."""
    shared = tmp_path / "nfs" / "team-shared"
    shared.mkdir(parents=True)
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "link").symlink_to(shared)
    msg = _files_plan([f"{tmp_path}/box/link{slash}"], tmp_path)
    assert msg.startswith("refusing to delete unsafe paths: ") and f"a symlink now, to {shared}" in msg, msg
    assert f"(rm {tmp_path}/box/link)" in msg


def test_a_configured_dir_under_a_parent_that_became_a_link_is_refused(tmp_path: Path) -> None:
    """`/x/plink/d` where `/x/plink` became a link to a shared dir: `d` itself is no link, so the
    shared dir's `d` was planned for removal; it is refused, naming where it resolves. The same
    dir under a real parent is planned as before."""
    shared = tmp_path / "nfs" / "team-shared"
    (shared / "d").mkdir(parents=True)
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "plink").symlink_to(shared)
    msg = _files_plan([f"{tmp_path}/box/plink/d"], tmp_path)
    assert msg.startswith("refusing to delete unsafe paths: "), msg
    assert f"under a symlink now: it resolves to {shared}/d" in msg
    msg = _files_plan([f"{shared}/d"], tmp_path)
    assert msg == f"remove {shared}/d", msg


def test_the_step_without_own_cache_probes_no_cache() -> None:
    step = TeardownFilesStep({"paths": ["/data/x"]})
    assert "XDG_CACHE_HOME" not in step.probe.command
    assert TeardownFilesStep({"paths": []}).probes() == []


# Pure helpers of teardown's local-side checks: the room a pull still needs, and two hosts
# whose vars.results_dest names one local dir.


def test_room_problem_counts_what_an_interrupted_pull_already_brought() -> None:
    assert room_problem(10_000, 0, 9_999) == 10_000
    assert room_problem(10_000, 4_000, 5_999) == 6_000
    assert room_problem(10_000, 4_000, 6_000) is None  # (a lower bound: never a false refusal)
    assert room_problem(10_000, 20_000, 0) is None
    assert room_problem(10_000, 0, None) is None  # free space unknown: rsync says it, if ever


def test_held_bytes_counts_regular_files_only(tmp_path: Path) -> None:
    (tmp_path / "d" / ".gpuonboard-rsync-partial").mkdir(parents=True)
    (tmp_path / "d" / "a").write_bytes(b"x" * 10)
    (tmp_path / "d" / ".gpuonboard-rsync-partial" / "b").write_bytes(b"y" * 5)
    outside = tmp_path / "big"
    outside.write_bytes(b"z" * 1000)
    (tmp_path / "d" / "link").symlink_to(outside)
    assert held_bytes(tmp_path / "d") == 15
    assert held_bytes(tmp_path / "missing") == 0


def test_shared_dest_names_the_two_hosts_and_the_dir(tmp_path: Path) -> None:
    assert shared_dest({"a": "/r/{host}", "b": "/r/{host}", "c": ""}, tmp_path) is None
    assert shared_dest({"a": "/r", "b": "/s", "c": "", "d": ""}, tmp_path) is None
    clash = shared_dest({"a": "", "b": "runs", "c": f"{tmp_path}/runs/"}, tmp_path)
    assert clash is not None and clash.startswith(
        f"hosts b and c would pull their results into the same local dir {tmp_path}/runs "
    )


def test_a_results_dest_naming_another_hosts_default_dir_is_a_clash(tmp_path: Path) -> None:
    """gpu1's vars.results_dest `results/gpu2` is gpu2's default copy (results/<host>)."""
    clash = shared_dest({"gpu1": "results/gpu2", "gpu2": ""}, tmp_path)
    assert clash is not None and clash.startswith(
        f"hosts gpu1 and gpu2 would pull their results into the same local dir {tmp_path}/results/gpu2 "
    ), clash
    assert shared_dest({"gpu1": "results/gpu1", "gpu2": ""}, tmp_path) is None


# What the teardown pull takes from a (possibly compromised) host: data, not privileges.
#
# rsync receives without device nodes, fifos, sockets, owners, groups, setuid/setgid/sticky bits
# or group/other write; the host's special files are named in the message; an unverified copy
# keeps no symlink pointing out of itself. The rsync flags run here against local dirs.


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


# The record of uploads `sync` keeps on the host (uploadlock.RECORD_FN) and how teardown reads
# it (recorded_probe_command, parse_recorded): the scripts run with this machine's sh over real
# directories; and /dev/shm's entries (where --decrypt-to puts plaintext in RAM) may be removed.

# this machine's record of uploads (the test hosts are this machine)
MY_RECORD = this_machines_record()


def _sh(script: str, home: Path, *args: str, cache: str | None = None) -> str:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    if cache is not None:
        env["XDG_CACHE_HOME"] = cache
    return subprocess.run(["sh", "-c", script, "sh", *args], capture_output=True, text=True, env=env).stdout


def test_each_path_is_recorded_once_and_read_back_with_its_dirs_entries(tmp_path: Path) -> None:
    home, data, shm = tmp_path / "home", tmp_path / "data", tmp_path / "shm"
    for d in (home, data / "corpus", shm / "corpus"):
        d.mkdir(parents=True)
    (shm / "corpus" / ".gpuonboard-copy").write_text(f"{shm}/corpus\n")
    odd = f"{data}/two words 'quoted'"
    for _ in range(2):
        _sh(RECORD_FN + 'record "$@"', home, f"{data}/corpus", f"{shm}/corpus", "", odd)
    record = home / ".cache" / "gpuonboard" / MY_RECORD
    assert record.read_bytes().split(b"\0")[:-1] == [
        f"{data}/corpus".encode(),
        f"{shm}/corpus".encode(),
        odd.encode(),
    ]
    assert (record.parent.stat().st_mode & 0o777) == 0o700

    found = parse_recorded(_sh(recorded_probe_command(), home))
    assert found is not None
    names, listings = found
    assert names == {str(data): {"corpus", "two words 'quoted'"}, str(shm): {"corpus"}}
    assert sorted(listings) == [str(data), str(shm)]
    assert listings[str(shm)].startswith(f"dir {shm}\0uid ")
    assert "\0d c " in listings[str(shm)] and f"mark {shm}/corpus" in listings[str(shm)]


def test_no_record_and_a_relative_cache_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert parse_recorded(_sh(recorded_probe_command(), home)) is None
    # a relative $XDG_CACHE_HOME names no one place: nothing is written (and the upload goes on)
    _sh(RECORD_FN + 'record "$@"', home, "/data/corpus", cache="rel")
    assert not (tmp_path / "rel").exists() and not (home / ".cache").exists()
    # a record holding a relative path (not one `sync` writes) is never read as a place
    (home / ".cache" / "gpuonboard").mkdir(parents=True)
    (home / ".cache" / "gpuonboard" / MY_RECORD).write_bytes(b"corpus\0/\0")
    assert parse_recorded(_sh(recorded_probe_command(), home)) == ({}, {})


def test_dev_shm_entries_may_be_removed_but_not_dev_shm_itself() -> None:
    assert path_problem("/dev/shm/corpus") is None
    assert path_problem("/dev/shm/a/b") is None
    assert path_problem("/dev/shm") == "a system directory"
    assert path_problem("/dev/shm/") == "a system directory"
    assert path_problem("/dev/sda1") == "a system directory"
    assert path_problem("/dev/shmx/corpus") == "a system directory"


def test_a_path_with_a_line_break_is_never_recorded(tmp_path: Path) -> None:
    """Read back line by line, `/x/a\\n/etc/name` would name `/x/a`, a path no upload made."""
    home = tmp_path / "home"
    home.mkdir()
    _sh(RECORD_FN + 'record "$@"', home, f"{tmp_path}/a\n/etc/name", f"{tmp_path}/b")
    record = home / ".cache" / "gpuonboard" / MY_RECORD
    assert record.read_bytes() == f"{tmp_path}/b\0".encode()


def test_decrypt_to_with_a_control_character_is_refused() -> None:
    import pytest

    from gpuonboard.steps.base import StepArgsError
    from gpuonboard.steps.dataset import DatasetStep

    args = {"source": "/d/corpus", "dest": "/data", "encrypt": True, "decrypt_on_host": True}
    for bad in ("/tmp/a\n/etc", "/dev/shm/\x1b[2J"):
        with pytest.raises(StepArgsError, match="decrypt_dir must not hold a line break"):
            DatasetStep({**args, "decrypt_dir": bad})
    assert DatasetStep({**args, "decrypt_dir": "/dev/shm"}).decrypt_dir == "/dev/shm"


def test_a_lease_inside_the_copy_is_a_running_upload_too(tmp_path: Path) -> None:
    """A data dir the login may not write keeps the upload's lease inside the copy: teardown
    must see that one too, or it removes the copy under a running upload."""
    import os

    from gpuonboard.steps.teardown import classify_uploads, uploads_probe_command

    disk = tmp_path / "data"
    for name in ("corpus", ".hidden", "old"):
        (disk / name).mkdir(parents=True)
        (disk / name / ".gpuonboard-upload").write_text("token aaaa\n")
    os.utime(disk / "old" / ".gpuonboard-upload", (1_000_000_000, 1_000_000_000))  # (long over)
    (disk / "linked").mkdir()
    (disk / "linked" / ".gpuonboard-upload").symlink_to(disk / "corpus" / ".gpuonboard-upload")
    probe = subprocess.run(["sh", "-c", uploads_probe_command(str(disk))], capture_output=True, text=True)
    found = classify_uploads(probe.stdout, "corpus")
    assert found is not None and found.live_leases == (".hidden", "corpus")


# The files step's probe of gpuonboard's cache dir in a home shared between machines, and the
# per-machine name of the record of uploads, run with this machine's sh, uname and coreutils.


def test_the_record_is_named_after_this_machine_as_the_host_names_it(tmp_path: Path) -> None:
    """Its host name and machine id: two machines given one host name (nodes cloned from one
    image) keep a record each in a home they share. Before, the name alone: they shared one, and
    the teardown of one removed the other's upload in a dir they share and lost its record."""
    echo = f"echo {uploadlock.MACHINE_SH}"
    out = subprocess.run(["sh", "-c", echo], capture_output=True, text=True, check=True)
    assert uploadlock.RECORD_PREFIX + out.stdout.strip() == MY_RECORD
    assert uploadlock.record_name("gpu-node-01.cluster") == "uploads.gpu-node-01.cluster"
    assert uploadlock.record_name("a/b c\n") == "uploads.abc"  # (never a path separator)
    mid = "3d1219c7c4c5404aaa1f6d2a48adfda4\n"
    assert uploadlock.record_name("gpu-node", mid) == "uploads.gpu-node@3d1219c7c4c5"
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run(["sh", "-c", uploadlock.RECORD_FN + 'record "$@"', "sh", "/data/x"], env=env, check=True)
    assert (home / ".cache" / "gpuonboard" / MY_RECORD).read_bytes() == b"/data/x\0"


def test_a_cache_dir_holding_other_machines_records_stays_and_only_this_ones_record_goes(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home" / "u"
    cache = home / ".cache" / "gpuonboard"
    cache.mkdir(parents=True)
    (cache / "uploads.node2").write_bytes(b"/nfs/corpus\0")
    (cache / "uploads.node3").write_bytes(b"/nfs/imgs\0")
    _, found = probe({"HOME": str(home)}, tmp_path)
    # no record of this machine: nothing of the dir is removed
    assert found == OwnCache(str(cache), others=("uploads.node2", "uploads.node3"))
    (cache / MY_RECORD).write_bytes(b"/data/corpus\0")
    _, found = probe({"HOME": str(home)}, tmp_path)
    others = ("uploads.node2", "uploads.node3")
    assert found == OwnCache(str(cache), others=others, record=f"{cache}/{MY_RECORD}")
    assert shared_cache_note(found) == (
        f" (gpuonboard's cache {cache} is left: it holds the upload records of other machines sharing this"
        " home (uploads.node2, uploads.node3); the teardown of each removes its own)"
    )
    # this machine's record alone: the whole dir goes, as before
    for other in ("uploads.node2", "uploads.node3"):
        (cache / other).unlink()
    _, found = probe({"HOME": str(home)}, tmp_path)
    assert found == OwnCache(str(cache), str(cache))
    assert shared_cache_note(found) == ""


# Which entries of the data dir are gpuonboard's uploads (removed by teardown) and which are
# not (left, and named): the probe runs with this machine's sh over a real directory.


def test_uploads_are_told_from_the_users_entries(tmp_path: Path) -> None:
    disk = tmp_path / "data disk"
    for name in (
        "imagenet",  # the configured dataset's copy
        "imagenet.encrypted",
        "docs",  # a copy a decryption marked
        "docs.encrypted",
        "imgs.shards",  # a shard store (its manifest) ...
        "imgs",  # ... and its unpacked tree
        ".imgs.gpuonboard-unpack-0123abcd-0123456789ab",  # an interrupted unpack
        "runs-old",  # the user's
        "other.shards",  # no manifest: not a store gpuonboard made
        "lost+found",
        "two\nlines",
    ):
        (disk / name).mkdir(parents=True)
    (disk / "docs" / ".gpuonboard-copy").write_text(f"{disk}/docs\n")
    (disk / "imgs.shards" / "manifest.json").write_text(OWN_MANIFEST)
    (disk / "imgs.shards" / "manifest.unpacked.json").write_text("{}\n")  # (a tree was unpacked)
    for tree in ("imagenet", "docs", "imgs"):  # (uploads listed what they wrote in them: nothing)
        _written(disk / tree)
    # a job's `cp -a docs docs-resized` carries the mark, which names the original: not ours
    (disk / "docs-resized").mkdir()
    (disk / "docs-resized" / ".gpuonboard-copy").write_text(f"{disk}/docs\n")
    # a store nothing was unpacked from says nothing of the dir beside it
    (disk / "checkpoints").mkdir()
    (disk / "checkpoints.shards").mkdir()
    (disk / "checkpoints.shards" / "manifest.json").write_text(OWN_MANIFEST)
    (disk / ".imgs.gpuonboard-upload").write_text("token\n")  # a lease
    (disk / "notes.txt").write_text("mine\n")
    (disk / "imagenet.shards").symlink_to(disk / "runs-old")  # a link: never ours to judge
    found = classify_uploads(_probe(disk), "imagenet", skip={"results"})
    assert found == Uploads(
        str(disk),
        (
            ".imgs.gpuonboard-unpack-0123abcd-0123456789ab",
            ".imgs.gpuonboard-upload",
            "checkpoints.shards",
            "docs",
            "docs.encrypted",
            "imagenet",
            "imagenet.encrypted",
            "imgs",
            "imgs.shards",
        ),
        (
            "checkpoints",
            "docs-resized",
            "imagenet.shards",
            "notes.txt",
            "other.shards",
            "runs-old",
            "two\nlines",
        ),
    )
    # without a configured dataset its copy is the user's; a skipped name is neither
    found = classify_uploads(_probe(disk), "", skip={"runs-old"})
    assert found is not None and "imagenet" in found.others and "runs-old" not in found.others
    assert "imagenet" not in found.ours and "docs" in found.ours
    assert classify_uploads(_probe(tmp_path / "missing"), "imagenet") is None


def test_an_entry_another_user_owns_is_never_ours(tmp_path: Path) -> None:
    """Another user cannot make an entry this login owns: one they made, named as the
    dataset's copy or marked, stays."""
    if os.getuid() != 0:
        pytest.skip("needs root to give an entry to another user")
    disk = tmp_path / "disk"
    (disk / "imagenet").mkdir(parents=True)
    (disk / "imagenet.shards").mkdir()
    (disk / "imagenet.shards" / "manifest.json").write_text("{}\n")
    for p in (disk / "imagenet", disk / "imagenet.shards"):
        os.chown(p, 65534, 65534)
    found = classify_uploads(_probe(disk), "imagenet")
    assert found is not None and found.ours == () and found.others == ("imagenet", "imagenet.shards")


def test_a_lease_refreshed_within_a_minute_is_a_running_upload(tmp_path: Path) -> None:
    """An upload refreshes its lease every 15 s: one younger than uploadlock.STALE_S means an
    upload runs now, and removing its copy under it failed that upload (a rerun put it back)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    lease = disk / ".imgs.gpuonboard-upload"
    lease.write_text("token\n")
    found = classify_uploads(_probe(disk), "imgs")
    assert found is not None and found.live_leases == (".imgs.gpuonboard-upload",)
    os.utime(lease, (os.path.getmtime(lease) - 120,) * 2)
    found = classify_uploads(_probe(disk), "imgs")
    assert found is not None and found.live_leases == () and found.ours == (".imgs.gpuonboard-upload",)


def test_the_shared_cache_note_says_when_a_record_is_this_host_names_with_another_machine_id() -> None:
    """A record `uploads.<this host>@<other id>` left for another machine: said that it is this
    box's own from an earlier machine id only where it is adopted (none of the current id, its
    uploads on a local disk), and that nodes sharing the home need host names of their own."""
    cache = OwnCache("/home/u/.cache/gpuonboard", others=("uploads.vm@aaaaaaaaaaaa",), record="")
    note = shared_cache_note(cache)
    assert "another machine id" in note and "host names of their own" in note, note
    plain = OwnCache("/home/u/.cache/gpuonboard", others=("uploads.node2",), record="")
    assert "machine id" not in shared_cache_note(plain)
