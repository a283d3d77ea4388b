"""What an encrypted upload leaves the vendor's host to read: real sshd test host, real age.

With `--encrypt --decrypt-on-host --decrypt-to /dev/shm/...` the plaintext (and its file
names) must live only in the tmpfs; the data disk holds ciphertexts and hex shard names.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, age_key, host_entry

pytestmark = [
    pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed"),
    pytest.mark.skipif(shutil.which("age") is None, reason="Debian `age` not installed"),
]

SECRET_NAME = "patient-jane-doe-4711.dcm"  # a file name that is itself private


def _setup(project: Project, tmp_path: Path, **vars_: Any) -> tuple[Path, Path]:
    src = tmp_path / "local" / "scans"
    (src / "ward 7").mkdir(parents=True)
    (src / "ward 7" / SECRET_NAME).write_bytes(os.urandom(9000))
    (src / "index.txt").write_text("x\n")
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), **vars_})
    project.write_inventory({"dataset": entry})
    return src, data_dir


def _step(project: Project) -> dict[str, Any]:
    return project.summary()["hosts"][0]["steps"][0]


def test_decrypt_to_tmpfs_writes_no_plaintext_file_name_to_the_data_disk(
    project: Project, tmp_path: Path
) -> None:
    """The closing command compares the old and new tree's path lists before the swap: those
    lists (every plaintext path) were written into the shard store on the data disk, beside the
    ciphertexts, while the tree itself was in /dev/shm (and left there by a run killed then).
    A `comm` spy first on the host's PATH snapshots the data disk at that moment."""
    from gpuonboard.testing.toolbox import add_executable

    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    key, pub = age_key(tmp_path / "keys")
    src, data_dir = _setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    shm = Path(f"/dev/shm/gpuonboard-test-{os.getpid()}-{tmp_path.name}")
    flags = ["--encrypt", "--decrypt-on-host", "--shards", "--decrypt-to", str(shm)]
    h = project.pool.hosts["dataset"]
    seen = tmp_path / "spy.txt"
    real = shutil.which("comm")
    spy = (
        "#!/bin/sh\n"
        f"grep -rl -a -F -e {SECRET_NAME!r} -- {str(data_dir)!r} >> {str(seen)!r} 2>/dev/null\n"
        f"echo ran >> {str(seen)!r}\n"
        f'exec {real} "$@"\n'
    )
    try:
        r = project.cli("sync", "--host", "dataset", *flags)
        assert r.returncode == 0, r.stdout + r.stderr
        (src / "index.txt").write_text("changed\n")  # the second run swaps an old tree: compares
        fake = add_executable(h.bin_dir, "comm", spy)
        try:
            r = project.cli("sync", "--host", "dataset", *flags)
        finally:
            fake.unlink()
        assert r.returncode == 0 and _step(project)["status"] == "changed", _step(project)
        assert (shm / "scans" / "ward 7" / SECRET_NAME).is_file()
        lines = seen.read_text().splitlines()
        assert "ran" in lines, lines  # (the spy ran: the comparison happened)
        assert [ln for ln in lines if ln != "ran"] == [], lines  # no data-disk file named it
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def _dec_temps(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob(".gpuonboard-dec.*"))


@pytest.mark.parametrize("killed", ["the command", "age alone"])
def test_a_decryption_killed_on_the_host_is_named_and_its_temp_plaintext_removed(
    project: Project, tmp_path: Path, killed: str
) -> None:
    """The host kills the decryption (the OOM killer, a reboot) while age writes a file: the
    step said "wrong identity, or tampered/truncated ciphertext" (the key and the files were
    fine), and the temp file holding the partial plaintext stayed in the plaintext dir for good,
    reported by every later run as the user's own file "kept there"."""
    from gpuonboard.testing.toolbox import add_executable

    key, pub = age_key(tmp_path / "keys")
    src, data_dir = _setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    h = project.pool.hosts["dataset"]
    real = shutil.which("age")
    victims = "kill -9 0" if killed == "the command" else "kill -9 $$"  # (0: its process group)
    spy = (  # the first file written (-o): half of it there, then the kill
        "#!/bin/sh\n"
        'case " $* " in *" -o "*)\n'
        f'  {real} "$@" || exit $?\n'
        '  while [ "$1" != -o ]; do shift; done\n'
        '  truncate -s 4000 "$2"; ' + victims + " ;;\nesac\n"
        f'exec {real} "$@"\n'
    )
    fake = add_executable(h.bin_dir, "age", spy)
    try:
        r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    finally:
        fake.unlink()
    msg = _step(project)["msg"]
    assert r.returncode == 1, r.stdout + r.stderr
    assert msg.startswith("the decryption on the host was stopped by a signal ("), msg
    assert "not by a wrong key or a damaged file; rerun to decrypt the rest" in msg, msg
    assert "wrong identity" not in msg, msg
    plain = data_dir / "scans"
    left = _dec_temps(plain)
    if killed == "age alone":  # (the script itself cleaned up after age)
        assert left == [], left
    else:
        assert left, "the kill left no temp file: the test proves nothing"
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    s = _step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert _dec_temps(plain) == [], _dec_temps(plain)
    assert "kept there" not in s["msg"], s["msg"]
    if left:
        assert f"; removed {len(left)} temp file" in s["msg"], s["msg"]
    assert (plain / "ward 7" / SECRET_NAME).read_bytes() == (src / "ward 7" / SECRET_NAME).read_bytes()
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0 and _step(project)["status"] == "ok", _step(project)


def _without_dac_override(project: Project) -> list[str]:
    """The CLI as root without CAP_DAC_OVERRIDE: a dir of mode 0555 is read-only to it too."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to make a dir read-only to the CLI")
    return [
        "setpriv",
        "--inh-caps=-all",
        "--bounding-set=-dac_override,-dac_read_search",
        *project.cli_argv(),
    ]


def test_a_read_only_ciphertext_cache_is_one_sentence_in_shard_mode(project: Project, tmp_path: Path) -> None:
    """The ciphertext cache cannot be written (a read-only mount, another user's project dir):
    shard mode failed with "internal error in this step (PermissionError ...); report it", both
    when a shard was to be encrypted and when only the manifest (of a dataset that lost a file
    which travelled alone) was; plain mode said one sentence already."""
    key, pub = age_key(tmp_path / "keys")
    src, data_dir = _setup(
        project, tmp_path, age_recipients=[pub], age_identity_file=str(key), shard_size="64KiB"
    )
    (src / "big.bin").write_bytes(os.urandom(200_000))  # (half a shard or more: alone in its shard)
    argv = _without_dac_override(project)
    cache = project.root / ".gpuonboard" / "cache" / "encrypted"

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, "sync", "--host", "dataset", "--encrypt", "--shards"],
            cwd=project.root,
            env=project.env(),
            capture_output=True,
            text=True,
        )

    cache.mkdir(parents=True)
    cache.chmod(0o555)
    try:
        r = run()
        msg = _step(project)["msg"]
        assert r.returncode == 1 and "internal error" not in msg, msg
        assert msg.startswith(
            f"cannot write the encrypted copy of shard 1 under {cache}: Permission denied;"
        ), msg
        assert msg.endswith("then rerun: 0 of 2 shards arrived, only the rest is sent"), msg
        cache.chmod(0o755)
        r = run()
        assert r.returncode == 0 and _step(project)["status"] == "changed", _step(project)
        (src / "big.bin").unlink()  # its shard goes: no shard to send, a new manifest to encrypt
        cache.chmod(0o555)
        r = run()
        msg = _step(project)["msg"]
        assert r.returncode == 1 and "internal error" not in msg, msg
        assert msg.startswith(f"cannot write the encrypted manifest under {cache}: Permission denied;"), msg
        cache.chmod(0o755)
        r = run()
        assert r.returncode == 0 and _step(project)["status"] == "changed", _step(project)
        assert "manifest updated" in _step(project)["msg"], _step(project)
    finally:
        cache.chmod(0o755)


def test_a_decrypted_file_that_differs_from_the_source_is_decrypted_again_by_the_rerun(
    project: Project, tmp_path: Path
) -> None:
    """The host's plaintext of one file differs from the source after decryption (a host that
    flips a bit after age wrote it, or swaps what it decrypts): the step fails naming it, but the
    file had the source's size and mtime, so the rerun's quick check said "up to date" and the
    wrong plaintext stayed, called verified."""
    from gpuonboard.testing.toolbox import add_executable

    key, pub = age_key(tmp_path / "keys")
    src, data_dir = _setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    # its first byte is never the \377 the spy writes (random data began with it once in 256
    # runs, and the "flipped" file then matched the source)
    (src / "ward 7" / SECRET_NAME).write_bytes(b"\0" + os.urandom(8999))
    h = project.pool.hosts["dataset"]
    real = shutil.which("age")
    spy = (  # the dataset's one big file: decrypted, then its first byte flipped
        "#!/bin/sh\n"
        'case " $* " in *" -o "*" -- "*.dcm.age" ")\n'
        f'  {real} "$@" || exit $?\n'
        '  while [ "$1" != -o ]; do shift; done\n'
        '  { printf \'\\377\'; tail -c +2 "$2"; } > "$2.x" && cat "$2.x" > "$2" && rm -f "$2.x"; exit 0 ;;\n'
        "esac\n"
        f'exec {real} "$@"\n'
    )
    fake = add_executable(h.bin_dir, "age", spy)
    try:
        r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    finally:
        fake.unlink()
    msg = _step(project)["msg"]
    assert r.returncode == 1 and msg == f"decrypted files differ from the source: ward 7/{SECRET_NAME}", msg
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    s = _step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert "decrypted 1 into" in s["msg"], s["msg"]
    assert (data_dir / "scans" / "ward 7" / SECRET_NAME).read_bytes() == (
        src / "ward 7" / SECRET_NAME
    ).read_bytes()


@pytest.mark.parametrize("mode", [[], ["--shards"]])
def test_decrypt_on_host_with_a_passphrase_says_what_to_do(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    monkeypatch.setenv("GPOB_TEST_PASS", "correct horse battery staple")
    _, data_dir = _setup(project, tmp_path, age_passphrase_env="GPOB_TEST_PASS")
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", *mode)
    assert r.returncode == 1, r.stdout + r.stderr
    assert _step(project)["msg"] == (
        "--decrypt-on-host needs vars.age_recipients and their identity (vars.age_identity_file or"
        " vars.age_identity_env), not a passphrase (vars.age_passphrase_env, which is never sent to the"
        " host): use recipients, or upload without --decrypt-on-host (nothing was sent)"
    ), _step(project)
    assert not data_dir.exists()


@pytest.mark.parametrize("mode", ["plain", "shards"])
def test_a_decrypt_to_disk_filled_during_the_decryption_is_named_as_full(
    project: Project, tmp_path: Path, mode: str
) -> None:
    """Another writer fills --decrypt-to's tmpfs after the plan checked its room. Plain mode
    said "decryption on the host failed (wrong identity, or tampered/truncated ciphertext): ..."
    with age's reason lost (its stderr went to a file on that full disk); shard mode told the
    user to free space under the data dir, whose disk was not the full one. Once there is room
    the rerun decrypts, nothing sent again."""
    from gpuonboard.testing.toolbox import add_executable

    shm = tmp_path / "shm"
    shm.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(shm)], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        key, pub = age_key(tmp_path / "keys")
        src, _ = _setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
        shard = ["--shards"] if mode == "shards" else []
        if mode == "shards":  # the shards on the host first: the decryption runs in the closing command
            assert project.cli("sync", "--host", "dataset", "--encrypt", "--shards").returncode == 0
        real = shutil.which("age")
        filler = shm / "filler"
        spy = (  # another writer takes the rest of the disk just before age decrypts
            "#!/bin/sh\n"
            f'case " $* " in *" -d "*) dd if=/dev/zero of={str(filler)!r} bs=4k 2>/dev/null ;; esac\n'
            f'exec {real} "$@"\n'
        )
        fake = add_executable(project.pool.hosts["dataset"].bin_dir, "age", spy)
        flags = ["--encrypt", "--decrypt-on-host", *shard, "--decrypt-to", str(shm)]
        try:
            r = project.cli("sync", "--host", "dataset", *flags)
        finally:
            fake.unlink()
        msg = _step(project)["msg"]
        assert r.returncode == 1 and "wrong identity" not in msg, msg
        if mode == "plain":
            assert msg.startswith("the plaintext's disk on the host is full ("), msg
            assert "no space left on device" in msg.lower(), msg
            assert msg.endswith(
                f"): free space under {shm} there, then rerun (the ciphertexts are on the host: nothing is"
                " sent again)"
            ), msg
        else:
            assert msg.startswith(
                "finishing the upload on the host failed: the remote disk is full (tar: "
            ), msg
            assert msg.endswith(f"); free space under {shm}, then rerun: the 1 shard there is kept"), msg
        filler.unlink()
        r = project.cli("sync", "--host", "dataset", *flags)
        s = _step(project)
        assert r.returncode == 0 and s["status"] == "changed", s
        assert (shm / "scans" / "ward 7" / SECRET_NAME).read_bytes() == (
            src / "ward 7" / SECRET_NAME
        ).read_bytes()
    finally:
        subprocess.run(["umount", "-l", str(shm)], check=False)
