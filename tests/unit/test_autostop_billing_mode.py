"""Billing-aware autostop only when the vendor profile names its billing unit (issue 26).

The vendor loader says whether `billing.unit` was given (an absent one is assumed hourly for
cost figures, never for autostop); the watcher's settings turn billing-aware on only for a
named hourly unit or `--billing-aware`, and its `status` (the real script, run with /bin/sh
and a controlled clock) says which mode is in force and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.inventory import load_vendor
from gpuonboard.steps.autostop import parse_settings
from gpuonboard.steps.base import StepArgsError

from .test_autostop_script import T0, Box


@pytest.mark.parametrize(
    ("text", "given"),
    [
        ("name: X\n", False),
        ("name: X\nbilling: {rate: 5, currency: CNY}\n", False),
        ("name: X\nbilling: {unit: hour}\n", True),
        ("name: X\nbilling: {unit: second, rate: 9.8}\n", True),
    ],
)
def test_the_vendor_loader_says_whether_the_billing_unit_was_given(
    tmp_path: Path, text: str, given: bool
) -> None:
    path = tmp_path / "v.yml"
    path.write_text(text)
    billing = load_vendor(path).billing
    assert billing.unit_given is given
    assert billing.unit in ("hour", "second")  # cost figures still round by an hour when unnamed


@pytest.mark.parametrize(
    ("args", "aware", "mode"),
    [
        ({"billing_unit": ""}, False, "auto"),
        ({}, False, "auto"),
        ({"billing_unit": "hour"}, True, "auto"),
        ({"billing_unit": "minute"}, False, "auto"),
        ({"billing_unit": "", "billing_aware": "true"}, True, "on"),
        ({"billing_unit": "hour", "billing_aware": False}, False, "off"),
    ],
)
def test_billing_aware_only_for_a_named_hourly_unit_or_when_asked(
    args: dict[str, object], aware: bool, mode: str
) -> None:
    settings = parse_settings(args)
    assert settings.billing_aware is aware
    assert f"BILLING_SET={mode}\n" in settings.conf_text()


def test_a_billing_unit_that_is_not_one_is_named() -> None:
    with pytest.raises(StepArgsError, match="argument 'billing_unit' must be one of second, minute, hour"):
        parse_settings({"billing_unit": "fortnight"})


def test_status_names_the_mode_and_why(tmp_path: Path) -> None:
    cases = {
        "a": (
            {"billing_unit": "", "billing_vendor": "nobill"},
            "mode: idle (billing unit unknown: add `billing: {unit: hour}` (or minute, second) to vendor"
            " profile nobill, or pass --billing-aware, for billing-aware shutdown): acts after idle + grace",
        ),
        "b": (
            {"billing_unit": ""},
            "mode: idle (billing unit unknown: add `billing: {unit: hour}` (or minute, second) to a vendor"
            " profile for this host, or pass --billing-aware, for billing-aware shutdown): acts after"
            " idle + grace",
        ),
        "c": (
            {"billing_unit": "hour", "billing_vendor": "wuhan-idc"},
            "mode: billing-aware (hourly billing, per vendor profile wuhan-idc): acts in the last 5m00s of"
            " a started hour, hours counted from 2027-01-15T08:00:00Z",
        ),
        "d": (
            {"billing_unit": "hour", "billing_vendor": "v\x1b]0;x\x07"},
            "mode: billing-aware (hourly billing, per vendor profile v\\x1b]0;x\\x07): acts in the last"
            " 5m00s of a started hour, hours counted from 2027-01-15T08:00:00Z",
        ),
    }
    for name, (args, line) in cases.items():
        (tmp_path / name).mkdir()
        box = Box(tmp_path / name, idle="30m", **args)
        status = box.run(T0 + 60, "status").stdout
        assert [ln for ln in status.splitlines() if ln.startswith("mode: ")] == [line]


def test_status_of_a_config_from_an_older_gpuonboard_gives_the_mode(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", billing_aware="true")
    conf = box.dir / "autostop.conf"
    conf.write_text("".join(ln for ln in conf.read_text().splitlines(True) if not ln.startswith("BILLING_S")))
    status = box.run(T0 + 60, "status").stdout
    assert "mode: billing-aware: acts in the last 5m00s of a started hour" in status
