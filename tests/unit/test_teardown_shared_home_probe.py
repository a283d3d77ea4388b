"""The files step's probe of gpuonboard's cache dir in a home shared between machines, and the
per-machine name of the record of uploads, run with this machine's sh, uname and coreutils."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpuonboard.steps.teardown import OwnCache, shared_cache_note
from gpuonboard.transfer import uploadlock

from .test_teardown_own_cache import probe

MY_RECORD = uploadlock.record_name(os.uname().nodename)


def test_the_record_is_named_after_this_machine_as_the_host_names_it(tmp_path: Path) -> None:
    echo = f"echo {uploadlock.MACHINE_SH}"
    out = subprocess.run(["sh", "-c", echo], capture_output=True, text=True, check=True)
    assert uploadlock.RECORD_PREFIX + out.stdout.strip() == MY_RECORD
    assert uploadlock.record_name("gpu-node-01.cluster") == "uploads.gpu-node-01.cluster"
    assert uploadlock.record_name("a/b c\n") == "uploads.abc"  # (never a path separator)
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
