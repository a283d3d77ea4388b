"""cpu_cores on a virtual machine (steps/checks/host_rules.py `_hypervisor`): where lscpu says the
CPUs are a hypervisor's guest's, too few of them are the vCPUs the VM was given, not a smaller
CPU model or fewer sockets."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks.host_rules import rule_cpu

REAL = Path(__file__).parents[3] / "fixtures" / "real"
AZURE_VM = "lscpu__xeon-e5-2673-v4__2vcpu__hyperv-azure-vm__cut-in-flags__opennfs-17.txt"


def test_too_few_vcpus_of_a_vm_name_the_vm() -> None:
    """OpenNFS/OpenNFS#17: an Azure VM's lscpu (`Hypervisor vendor: Microsoft`, 2 CPUs), order 4:
    the fail stays; it said "a smaller CPU model or fewer sockets", now the VM's 2 vCPUs."""
    facts = parse_facts({"lscpu": ProbeOutput((REAL / AZURE_VM).read_text(), "", 0)})
    check = rule_cpu(OrderSpec(cpu_cores=4), facts)
    assert check.verdict == "fail"
    assert check.detail == (
        "fewer CPUs than ordered, hyperthreads included: a virtual machine (Microsoft hypervisor) given"
        " 2 vCPUs; ask the vendor for the size that was ordered"
    )


def test_a_vm_known_by_its_cpu_flag_alone_is_named_too() -> None:
    """The same lscpu with its `Hypervisor vendor:` line taken out by the test: its Flags line's
    `hypervisor` still says the CPUs are a guest's."""
    text = "".join(
        line for line in (REAL / AZURE_VM).read_text().splitlines(keepends=True) if "Hypervisor" not in line
    )
    check = rule_cpu(OrderSpec(cpu_cores=4), parse_facts({"lscpu": ProbeOutput(text, "", 0)}))
    assert "a virtual machine (a hypervisor) given 2 vCPUs" in check.detail
