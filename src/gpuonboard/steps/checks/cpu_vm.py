"""Signs that the CPUs cpu_cores read are a virtual machine's vCPUs, not a CPU model's or its
sockets' count: lscpu's `Hypervisor vendor:` line, the `hypervisor` CPU flag, or a CPU model
named for more cores per socket than lscpu shows (`AMD EPYC 9645 96-Core Processor` with
`Core(s) per socket: 1` and `Socket(s): 12`: a KVM guest's 12 vCPUs, measure33b 01)."""

from __future__ import annotations

import re

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.cpu import CpuInfo
from gpuonboard.once import lazy_re

# lscpu's `Hypervisor vendor:` line (KVM, Microsoft, VMware, Xen ...), and the `hypervisor` CPU flag
# a guest's CPUs carry (lscpu's Flags, /proc/cpuinfo's flags)
_HYPERVISOR_VENDOR = lazy_re(r"^[^\S\n]*Hypervisor vendor:\s*(\S.*?)\s*$", re.M)
_HYPERVISOR_FLAG = lazy_re(r"^[^\S\n]*flags\s*:.*\bhypervisor\b", re.M | re.I)
# a CPU model named for its cores per socket (AMD's: `AMD EPYC 9354 32-Core Processor`)
_MODEL_CORES = re.compile(r"\b(\d{1,3})-Core Processor\b", re.I)


def hypervisor_said(facts: Facts) -> str:
    """'Microsoft hypervisor' where the saved lscpu (or /proc/cpuinfo) says the CPUs are a
    virtual machine's, 'a hypervisor' where only its CPU flag does; "" otherwise."""
    out = facts.raw.get("lscpu")
    text = out.stdout if out is not None else ""
    if vendor := _HYPERVISOR_VENDOR.search(text):
        return f"{vendor.group(1)} hypervisor"
    return "a hypervisor" if _HYPERVISOR_FLAG.search(text) else ""


def model_cores_unshown(cpu: CpuInfo | None) -> str:
    """Where the CPU model's name says more cores per socket than lscpu shows, those two said
    (`the AMD EPYC 9645 96-Core Processor holds 96 cores a socket, lscpu shows 1`); "" otherwise."""
    if cpu is None or cpu.model_name is None or cpu.cores_per_socket is None:
        return ""
    named = _MODEL_CORES.search(cpu.model_name)
    if named is None or int(named.group(1)) <= cpu.cores_per_socket:
        return ""
    return (
        f"the {cpu.model_name} holds {named.group(1)} cores a socket, lscpu shows"
        f" {cpu.cores_per_socket} per socket ({cpu.sockets or '?'} socket(s))"
    )
