"""`disk_speed` parsing of unusual tool output and its rules over the page-cache evidence."""

from __future__ import annotations

import json

from gpuonboard.steps.prove import disk_checks, disk_failure, parse_disk


def _fio(write: dict[str, object], read: dict[str, object], after_json: str = "") -> str:
    w = json.dumps({"jobs": [{"jobname": "write", "write": write}]}, indent=1)
    r = json.dumps({"jobs": [{"jobname": "read", "read": read}]}, indent=1)
    return (
        "FS xfs /dev/nvme1n1 /data\nSIZE 1073741824\nTOOL fio\nDIRECT 1\n"
        f"##FIO-WRITE\n{w}\n{after_json}DROPPED 1\n##FIO-READ\n{r}\n##FIO-END\n"
    )


def test_fio_2_json_has_bandwidth_in_kib_only() -> None:
    """fio 2.x (CentOS 7, Ubuntu 16.04) prints `bw` (KiB/s) and no `bw_bytes`: was a KeyError,
    "internal error in this step"."""
    d = parse_disk(_fio({"io_bytes": 1048576, "bw": 1464843}, {"io_bytes": 1048576, "bw": 2929687}))
    assert round(d["write_gbps"], 3) == 1.5 and round(d["read_gbps"], 3) == 3.0
    assert d["bytes"] == 1 << 30  # the file's size, not fio 2's io_bytes (KiB)


def test_fio_message_after_its_json_keeps_the_figure() -> None:
    """fio's stderr goes with its JSON; a warning after it made the figure `not measured`."""
    text = _fio(
        {"bw_bytes": 2_000_000_000}, {"bw_bytes": 3_000_000_000}, "fio: file hash not empty on exit\n"
    )
    d = parse_disk(text)
    assert d["write_gbps"] == 2.0 and d["read_gbps"] == 3.0


def test_a_read_from_the_page_cache_is_not_a_disk_figure() -> None:
    out = (
        "FS nfs4 nas:/export /data\nSIZE 1073741824\nTOOL dd\nDIRECT 0\nWRITE 1073741824 1000000000\n"
        "CACHED_AFTER_WRITE 1073741824\nDROPPED 1\nCACHED_BEFORE_READ 1073741824\nREAD 1073741824 100000000\n"
    )
    read = {c.name: c for c in disk_checks(parse_disk(out), None, 0.5, "/data", "/data")}["disk_read"]
    assert read.verdict == "warn"
    assert read.actual.endswith("; 100% of the file was in the page cache when the read began")
    assert read.detail.startswith("not a disk figure: the read came from memory")


def test_quota_stops_the_file_one_sentence() -> None:
    why = "write failed: dd: error writing '/data/.gpuonboard-disk.x': Disk quota exceeded"
    assert disk_failure("/data", why, 4 << 30) == (
        f"disk test in /data failed: a disk quota stopped the 4.0 GiB test file although df shows"
        f" enough free space ({why}); the test file was removed. Raise the quota or set"
        " vars.disk_test_size smaller"
    )
