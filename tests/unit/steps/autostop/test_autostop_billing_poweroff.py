"""A shutdown that stops the work but not the bill: several providers keep billing a box whose
OS powered it off (Azure's "Stopped" state until the VM is deallocated, instances billed until
they are terminated). A vendor profile says so in `billing.after_poweroff`; the install refuses
an OS power-off for a vendor that `continues` billing and says it where the profile is silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.steps.autostop import _Remote, parse_settings
from gpuonboard.steps.autostop.install import billing_note, install_problem, os_power_off


@pytest.mark.parametrize(
    ("command", "os_off"),
    [
        ("shutdown -h now", True),
        ("/sbin/shutdown -P +1", True),
        ("sudo -n poweroff", True),
        ("LANG=C sudo systemctl poweroff", True),
        ("FOO=1 halt -p", True),
        ("reboot", False),  # (the box comes back: not a power-off)
        ("aws ec2 stop-instances --instance-ids i-0abc", False),
        ("az vm deallocate -g rg -n gpu1", False),
        ("curl -fsS -X POST https://cloud.example/api/instances/terminate", False),
        ("shutdown 'unterminated", False),
    ],
)
def test_an_os_power_off_is_told_from_a_vendor_api_call(command: str, os_off: bool) -> None:
    assert os_power_off(command) is os_off


def root() -> _Remote:
    return _Remote(uid="0", user="root")


def test_an_os_power_off_for_a_vendor_that_keeps_billing_is_refused_before_install() -> None:
    settings = parse_settings(
        {
            "billing_vendor": "azure-nc",
            "billing_after_poweroff": "continues",
            "shutdown_command": "shutdown -h now",
        }
    )
    problem = install_problem("gpu1", settings, root())
    assert problem is not None
    assert problem.startswith("host gpu1: vendor 'azure-nc' keeps billing a box that is powered off")
    assert "'shutdown -h now' would stop the work but not the bill" in problem
    assert "--shutdown-command" in problem
    # the vendor's own API call is what such a profile needs: accepted
    api_call = parse_settings(
        {
            "billing_vendor": "azure-nc",
            "billing_after_poweroff": "continues",
            "shutdown_command": "az vm deallocate -n gpu1",
        }
    )
    assert install_problem("gpu1", api_call, root()) is None
    assert billing_note(api_call) is None


def test_a_profile_silent_on_billing_after_power_off_is_said_never_refused() -> None:
    silent = parse_settings({"billing_vendor": "wuhan-idc"})
    assert install_problem("gpu1", silent, root()) is None
    assert billing_note(silent) == (
        "vendor profile 'wuhan-idc' does not say whether billing stops once 'shutdown -h now' powers"
        " the box off (billing.after_poweroff): some providers bill a powered-off box until it is"
        " deleted or deallocated; check the vendor's terms and set it, or make shutdown_command the"
        " vendor's API call that stops the instance"
    )
    no_vendor = billing_note(parse_settings({}))
    assert no_vendor is not None and no_vendor.startswith("no vendor profile says whether billing stops")
    stops = parse_settings({"billing_vendor": "wuhan-idc", "billing_after_poweroff": "stops"})
    assert billing_note(stops) is None and install_problem("gpu1", stops, root()) is None


def test_the_step_argument_takes_only_the_profile_values() -> None:
    from gpuonboard.steps.base import StepArgsError

    with pytest.raises(StepArgsError, match="'billing_after_poweroff' must be stops, continues or empty"):
        parse_settings({"billing_after_poweroff": "sometimes"})


def _inventory(tmp_path: Path, billing: str) -> Path:
    (tmp_path / "vendors").mkdir(parents=True)
    (tmp_path / "vendors" / "cloud.yml").write_text(f"name: A Cloud\nbilling: {billing}\n")
    (tmp_path / "hosts.yml").write_text("hosts:\n  gpu1:\n    address: 10.0.0.1\n    vendor: cloud\n")
    return tmp_path


def test_the_vendor_profile_reads_after_poweroff_and_refuses_other_words(tmp_path: Path) -> None:
    inv = inventory.load(_inventory(tmp_path / "a", "{unit: hour, after_poweroff: continues}"))
    assert inv.vendors["cloud"].billing.after_poweroff == "continues"
    assert (
        inventory.load(_inventory(tmp_path / "b", "{unit: hour}")).vendors["cloud"].billing.after_poweroff
        == ""
    )
    with pytest.raises(InventoryError) as err:
        inventory.load(_inventory(tmp_path / "c", "{unit: hour, after_poweroff: yes}"))
    message = str(err.value)
    assert "vendor 'cloud' billing 'after_poweroff' must be one of stops, continues" in message
    assert "cloud.yml" in message and "not True" in message
