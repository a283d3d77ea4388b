"""Teardown's pure parts: cost rounding per billing unit, path safety, manifests, command lines."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from gpuonboard.connection import openssh
from gpuonboard.inventory import Host
from gpuonboard.runner import journal
from gpuonboard.steps.teardown import (
    RECORD,
    Record,
    TreeChecks,
    compare_manifests,
    describe_problems,
    journal_start,
    listing_changes,
    listing_digest,
    local_manifest,
    manifest_command,
    parse_manifest,
    parse_pull_output,
    parse_since,
    path_problem,
    read_record,
    rental_cost,
    rsync_argv,
    run_id_time,
    write_record,
)

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


def test_rsync_pull_command_line(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh cfg"
    rs = rsync_argv("gpuonboard-target", cfg, "/data/results/", tmp_path / "out")
    assert rs[:5] == ["rsync", "-a", "--protect-args", "--partial", "--partial-dir=.gpuonboard-rsync-partial"]
    # data, not privileges: no device node, fifo, owner, group, setuid bit or group/other write
    assert rs[5:10] == ["--no-devices", "--no-specials", "--no-owner", "--no-group", "--chmod=ugo-st,go-w"]
    assert rs[10] == "--timeout=120"  # the host's sender gives a silent (dropped) link up
    assert rs[11] == "-e" and shlex.split(rs[12]) == ["ssh", "-F", str(cfg)]
    assert rs[13:] == [
        "--rsync-path=cd -- /data/results && rsync",
        "gpuonboard-target:./",
        f"{tmp_path / 'out'}/",
    ]


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
