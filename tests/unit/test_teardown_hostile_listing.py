"""teardown's listing of a dir holding uploads comes from the host, which is not trusted: a
lease age that is not a plain number (a hostile or broken host's `lease --5`, `lease ²`) is no
lease age, never a ValueError that ends teardown with a traceback."""

from __future__ import annotations

import pytest

from gpuonboard.steps import teardown


@pytest.mark.parametrize("age", ["--5", "²", "٣", "5-", "- 5", ""])
def test_a_lease_age_that_is_not_a_number_is_ignored(age: str) -> None:
    out = f"dir /data\0uid 1000\0d - 1000 ds\0lease {age}\0"
    found = teardown.classify_uploads(out, "ds")
    assert found is not None
    assert found.ours == ("ds",)
    assert found.live_leases == ()


@pytest.mark.parametrize(("age", "live"), [("5", True), ("-3", True), ("600", False)])
def test_a_lease_age_in_plain_digits_still_counts(age: str, live: bool) -> None:
    out = f"dir /data\0uid 1000\0d - 1000 ds\0lease {age}\0"
    found = teardown.classify_uploads(out, "ds")
    assert found is not None
    assert found.live_leases == (("ds",) if live else ())


def test_the_recorded_listing_of_a_hostile_host_parses() -> None:
    out = "record\0rec /scratch/ds\0section /scratch\0dir /scratch\0uid 1000\0d - 1000 ds\0lease --1\0"
    parsed = teardown.parse_recorded(out)
    assert parsed is not None
    names, listings = parsed
    found = teardown.classify_uploads(listings["/scratch"], "", (), names, only_recorded=True)
    assert found is not None and found.ours == ("ds",) and found.live_leases == ()
