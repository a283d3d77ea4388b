"""The name a user knows each kind of saved output by, for a sentence: a refusal names the command
the user ran (`nvidia-smi --query-gpu` CSV), never an internal probe name (`nvidia_smi_csv`)."""

from __future__ import annotations

__all__ = ["SHOWN_KINDS", "kind_name"]

# outputs shown in the report, not judged: their kinds and what each is
SHOWN_KINDS = {
    "docker_info": "docker info",
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


def kind_name(kind: str) -> str:
    """The name a user knows a saved output's kind by ('`nvidia-smi --query-gpu` CSV' for
    nvidia_smi_csv), for a sentence; the kind itself, its underscores as spaces, otherwise."""
    return _KIND_NAMES.get(kind) or SHOWN_KINDS.get(kind) or kind.replace("_", " ")
