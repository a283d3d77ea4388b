"""The name a user knows each kind of saved output by, for a sentence: a refusal names the command
the user ran (`nvidia-smi --query-gpu` CSV), never an internal probe name (`nvidia_smi_csv`)."""

from __future__ import annotations

__all__ = ["SAVED_OUTPUTS", "SHOWN_KINDS", "expected_outputs", "kind_name"]

# outputs shown in the report, not judged: their kinds and what each is
SHOWN_KINDS = {
    "docker_info": "docker info",
    "docker_version": "docker version",
    "podman_info": "podman info",
    "iperf3": "iperf3 -J (network throughput JSON)",
    "numactl": "numactl --hardware (NUMA nodes)",
    "ibdev2netdev": "ibdev2netdev (RDMA devices' net devices)",
}

# the user-known name of each kind of saved output (the live probe's name otherwise)
_KIND_NAMES = {
    "nvidia_smi": "nvidia-smi (`-q -x`, or its failure)",
    "nvidia_smi_q": "`nvidia-smi -q`",
    "nvidia_smi_csv": "`nvidia-smi --query-gpu` CSV",
    "nvidia_smi_table": "plain `nvidia-smi` table",
    "nvidia_smi_list": "`nvidia-smi -L`",
    "nvidia_smi_apps": "`nvidia-smi --query-compute-apps`",
    "nvidia_topo": "`nvidia-smi topo -m`",
    "nvidia_nvlink": "`nvidia-smi nvlink -s`",
    "nvidia_nvlink_errors": "`nvidia-smi nvlink -e`",
    "kernel_log": "kernel log",
    "rdma_ports": "RDMA port listing",
    "fabric_manager": "fabric manager state",
    "lscpu": "`lscpu`",
    "free": "`free`",
    "df": "`df`",
    "lsblk": "`lsblk`",
    "mounts": "`/proc/mounts`",
    "os_release": "`/etc/os-release`",
    "nvcc": "`nvcc --version`",
    "nproc": "`nproc`",
}


# Every kind of saved output the offline readers read, with what to save for it: the one registry
# a refusal's "expected ..." list is written from (api/saved_forms.py), so that no reader is left
# out of it (tests/unit/api/test_expected_outputs.py checks each kind the readers give is here).
SAVED_OUTPUTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("nvidia_smi", "nvidia_smi_q", "nvidia_smi_csv", "nvidia_smi_table"),
        "nvidia-smi -q -x / -q / --query-gpu CSV / table or its failure message",
    ),
    (("nvidia_topo",), "nvidia-smi topo -m"),
    (("nvidia_smi_list",), "nvidia-smi -L"),
    (("nvidia_smi_apps",), "--query-compute-apps"),
    (("nvidia_nvlink", "nvidia_nvlink_errors"), "nvidia-smi nvlink -s / -e"),
    (("kernel_log",), "dmesg / journalctl -k"),
    (("rdma_ports",), "ibv_devinfo / ibstat / ibstatus"),
    (("docker_info", "docker_version", "podman_info"), "docker info / docker version / podman info"),
    (("iperf3",), "iperf3 -J"),
    (("numactl",), "numactl --hardware"),
    (("ibdev2netdev",), "ibdev2netdev"),
    (("lscpu",), "lscpu or /proc/cpuinfo"),
    (("free",), "free or /proc/meminfo"),
    (("df",), "df"),
    (("lsblk",), "lsblk (its table, -J or -P)"),
    (("mounts",), "/proc/mounts"),
    (
        ("cgroup_limits",),
        "a container's cgroup limit files saved on the box with their names (`grep ."
        " /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpuset.cpus.effective`,"
        " cgroup v1's memory.limit_in_bytes and cpu.cfs_quota_us / cpu.cfs_period_us)",
    ),
    (("os_release",), "/etc/os-release"),
    (("nvcc",), "nvcc --version"),
    (("nproc",), "nproc in a file named nproc*"),
    (("fabric_manager",), "systemctl is-active in a file named *fabric*"),
)


def expected_outputs() -> str:
    """'nvidia-smi -q -x / ..., nvidia-smi topo -m, ..., or systemctl is-active in a file named
    *fabric*': what the readers read, from SAVED_OUTPUTS, for a refusal's sentence."""
    said = [text for _kinds, text in SAVED_OUTPUTS]
    return ", ".join(said[:-1]) + f", or {said[-1]}"


def kind_name(kind: str) -> str:
    """The name a user knows a saved output's kind by ('`nvidia-smi --query-gpu` CSV' for
    nvidia_smi_csv), for a sentence; the kind itself, its underscores as spaces, otherwise."""
    return _KIND_NAMES.get(kind) or SHOWN_KINDS.get(kind) or kind.replace("_", " ")
