"""Sizes and durations as written in inventories: `80GB`, `80 GiB`, `81920MiB`, `1.5T`, `30s`."""

from __future__ import annotations

import re

import pytest

from gpuonboard.units import format_bytes, parse_duration, parse_size

GB = 1000**3
GIB = 1024**3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GB", 80 * GB),
        ("80gb", 80 * GB),
        ("80G", 80 * GB),
        ("80 GiB", 80 * GIB),
        ("80GiB", 80 * GIB),
        ("81920MiB", 80 * GIB),
        ("1.5T", 1_500_000_000_000),
        ("1TB", 1000**4),
        ("2TiB", 2 * 1024**4),
        ("512KB", 512_000),
        ("512KiB", 512 * 1024),
        ("  7TB ", 7 * 1000**4),
        ("0GB", 0),
        ("4096", 4096),
        ("4096B", 4096),
        (0, 0),
        (4096, 4096),
    ],
)
def test_parse_size_accepts(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("80GG", "'80GG' has an unknown unit 'GG'; use B, MB, GB, TB, MiB, GiB or TiB"),
        ("80 XB", "'80 XB' has an unknown unit 'XB'; use B, MB, GB, TB, MiB, GiB or TiB"),
        ("-5GB", "'-5GB' is negative; a size must be zero or more"),
        (-5, "-5 is negative; a size must be zero or more"),
        ("", "'' is not a size like 80GB, 80 GiB or 81920MiB"),
        ("   ", "'   ' is not a size like 80GB, 80 GiB or 81920MiB"),
        ("GB", "'GB' is not a size like 80GB, 80 GiB or 81920MiB"),
        ("eighty GB", "'eighty GB' is not a size like 80GB, 80 GiB or 81920MiB"),
        ("1e3GB", "'1e3GB' is not a size like 80GB, 80 GiB or 81920MiB"),
        (True, "True is not a size"),
        (False, "False is not a size"),
        (80.0, "80.0 has no unit; write e.g. 80GB or 80GiB"),
        (None, "None is not a size"),
        ([80, "GB"], "[80, 'GB'] is not a size"),
    ],
)
def test_parse_size_rejects(value: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_size(value)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("n", "binary", "expected"),
    [
        (None, True, "unknown"),
        (0, True, "0 B"),
        (1023, True, "1023 B"),
        (1024, True, "1.0 KiB"),
        (80 * GIB, True, "80.0 GiB"),
        (80 * GB, True, "74.5 GiB"),
        (80 * GB, False, "80.0 GB"),
        (7 * 1000**4, False, "7.0 TB"),
        (1536 * 1024**2, True, "1.5 GiB"),
        (2**60, True, "1024.0 PiB"),  # the largest unit absorbs anything bigger
    ],
)
def test_format_bytes(n: int | None, binary: bool, expected: str) -> None:
    assert format_bytes(n, binary=binary) == expected


def test_format_bytes_round_trips_through_parse_size() -> None:
    assert parse_size(format_bytes(80 * GIB)) == 80 * GIB
    assert parse_size(format_bytes(80 * GB, binary=False)) == 80 * GB


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1.5h", 5400.0),
        ("1d", 86400.0),
        ("250ms", 0.25),
        (" 10 s ", 10.0),
        ("45", 45.0),
        (45, 45.0),
        (2.5, 2.5),
        (0, 0.0),
    ],
)
def test_parse_duration_accepts(value: object, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5 minutes", "'5 minutes' is not a duration like 30s, 5m or 2h"),
        ("-5s", "'-5s' is not a duration like 30s, 5m or 2h"),
        ("", "'' is not a duration like 30s, 5m or 2h"),
        (-1, "-1 is negative"),
        (True, "True is not a duration"),
        (None, "None is not a duration"),
    ],
)
def test_parse_duration_rejects(value: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(value)
    assert str(info.value) == message


def test_rfc3339_is_utc_with_z_and_parses_back() -> None:
    """The one timestamp form of every file we write: RFC 3339 in UTC (`jq fromdateiso8601`
    reads only `Z`), read back by datetime.fromisoformat to the same second."""
    from datetime import datetime

    from gpuonboard.units import rfc3339

    stamp = rfc3339(1796195608.9)
    assert stamp == "2026-12-02T07:13:28Z"
    assert datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() == 1796195608
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rfc3339())


def test_finite_number_takes_only_finite_json_numbers() -> None:
    from gpuonboard.units import finite_number

    assert [finite_number(v) for v in (3, 2.5, 0, -1e3)] == [3.0, 2.5, 0.0, -1000.0]
    for bad in (None, True, False, "12", "n/a", float("nan"), float("inf"), -float("inf"), [1]):
        assert finite_number(bad) is None, bad
