"""The sync progress line's ETA is the whole upload's (bytes left / rate): rsync's
`--info=progress2` time field counted down per file, so it read `0:00:01` with hours to go."""

from __future__ import annotations

from types import SimpleNamespace

from gpuonboard import transfer
from gpuonboard.steps.dataset import DatasetStep

MIB = 1 << 20


def test_upload_eta_is_bytes_left_over_the_rate() -> None:
    assert transfer.upload_eta(50 * MIB, 100 * MIB, "1.00MB/s") == "ETA 50 s"
    assert transfer.upload_eta(0, 10 * 1024 * MIB, "10.00MB/s") == "ETA 17 min"
    assert transfer.upload_eta(10, 100, "512.00kB/s") == "ETA 1 s"
    assert transfer.upload_eta(5, 100, "0.00kB/s") == ""  # no rate yet: no ETA
    assert transfer.upload_eta(5, 0, "1.00MB/s") == ""  # no total: no ETA


def _lines(update: transfer.ProgressUpdate, base: list[int] | None = None, total: int = 0) -> list[str]:
    out: list[str] = []
    ctx = SimpleNamespace(progress=out.append)
    show = DatasetStep._progress(SimpleNamespace(label="dataset"), ctx, base, total)  # type: ignore[arg-type]
    show(update)
    return out


def test_the_progress_line_shows_the_whole_uploads_eta() -> None:
    # rsync: half of 100 MiB sent at 1 MB/s, its time field 0:00:01 (the current file's)
    line = _lines(transfer.ProgressUpdate(50 * MIB, 50, "1.00MB/s", "0:00:01"))[0]
    assert line.endswith("1.00MB/s ETA 50 s"), line
    # batches (shards): the overall bytes give the ETA
    line = _lines(transfer.ProgressUpdate(10 * MIB, 20, "1.00MB/s", "0:00:01"), [40 * MIB], 100 * MIB)[0]
    assert line.endswith("1.00MB/s ETA 50 s"), line


def test_shard_mode_in_auto_mode_follows_the_threshold_a_step_argument_or_host_variable_sets() -> None:
    import pytest

    from gpuonboard.inventory import Host
    from gpuonboard.steps.base import StepArgsError
    from gpuonboard.steps.dataset.options import DatasetOptions

    def options(**args: object) -> DatasetOptions:
        return DatasetStep({"source": "/d", "dest": "/x", **args}).options

    host = Host(name="h", address="10.0.0.1")
    auto = options()
    assert auto.threshold(host) == 10_000
    assert not auto.sharded(host, 10_000) and auto.sharded(host, 10_001)
    assert options(shard_threshold=0).sharded(host, 1)
    assert options(shards=True).sharded(host, 1) and options(unpack=True).sharded(host, 1)
    assert not options(shards=False).sharded(host, 10**6)
    by_var = Host(name="h", address="10.0.0.1", vars={"shard_threshold": "500"})
    assert auto.threshold(by_var) == 500
    for same in ("10_000", " 10000 ", 10000.0, "+10000"):  # (as int() read them before)
        assert options(shard_threshold=same).threshold(host) == 10_000, same
    for bad in ("lots", "1e4", True, 2.5, "²", [1]):
        with pytest.raises(StepArgsError, match="shard_threshold must be a whole number of files"):
            options(shard_threshold=bad).threshold(host)


def test_a_copy_in_a_system_directory_of_the_host_is_refused_before_connecting() -> None:
    """`sync --dataset ./etc --dest /` planned "would send 1 of 1 files (2 B) to s1:/etc: hosts;
    1139 files on the host are not in the dataset and kept there" and would have merged into
    the host's /etc, replacing its `hosts` (rsync -a into a directory that exists). A copy, or
    the plaintext --decrypt-to makes, in one of the host's system trees is refused at the step's
    arguments; a data dir, /dev/shm's entries and a dir merely named like one are not."""
    import pytest

    from gpuonboard.steps.base import StepArgsError

    refused = [
        ({"source": "/local/etc", "dest": "/"}, "copy would be /etc, in the host's system directory /etc"),
        (
            {"source": "/d", "dest": "/usr/local"},
            "copy would be /usr/local/d, in the host's system directory /usr",
        ),
        (
            {"source": "/d", "dest": "/", "name": "boot"},
            "copy would be /boot, in the host's system directory /boot",
        ),
        (
            {
                "source": "/d",
                "dest": "/data",
                "encrypt": True,
                "decrypt_on_host": True,
                "decrypt_dir": "/lib",
            },
            "plaintext would be /lib/d, in the host's system directory /lib",
        ),
    ]
    for args, start in refused:
        with pytest.raises(StepArgsError) as caught:
            DatasetStep(args)
        assert str(caught.value).startswith(f"the dataset's {start}, which an upload never writes into"), args
    assert str(caught.value).endswith(
        "give --decrypt-to a data directory like /data or name the copy otherwise with --name"
    )
    for args in (
        {"source": "/d", "dest": "/data"},
        {"source": "/local/etc", "dest": "/data"},
        {"source": "/d", "dest": "/", "name": "etcetera"},
        {
            "source": "/d",
            "dest": "/data",
            "encrypt": True,
            "decrypt_on_host": True,
            "decrypt_dir": "/dev/shm",
        },
    ):
        assert DatasetStep(args).options.copy
