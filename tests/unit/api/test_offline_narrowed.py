"""A saved output whose copied command shows only part of the box (`df -h /workspace`,
`nvidia-smi -i 0`, `... | grep nvme`) is judged for what it shows; what it leaves out is not
known to be missing: data_disk and gpu_count are unverified there, never a fail. Real captures
(tests/fixtures/real/SOURCES.md, round 11); each test of a verdict fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.narrowed import narrowed

from ..offline_judge import details, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
DF_PATHS = "df-h__paths-given__trn2-container-overlay.txt"
SMI_I0 = "nvidia-smi-i0__a100-sxm4-40gb__1of8gpu__driver580.126.09__mig.txt"
IBSTAT_CA = "ibstat__one-ca-named-mlx5_7__port-down__sriov-pod.txt"


def pasted(name: str, prompt: str) -> str:
    """The real capture with the prompt line it was published under (SOURCES.md) put back."""
    return prompt + "\n" + (REAL / name).read_text()


@pytest.mark.parametrize(
    ("kind", "command", "narrows"),
    [
        ("df", "df -h", False),
        ("df", "df -hT", False),
        ("df", "df -P -k", False),
        ("df", "df -B 1", False),  # (`1` is -B's value, not a path)
        ("df", "df --block-size 1M", False),
        ("df", "df -h -x tmpfs -x devtmpfs", False),
        ("df", "df -h | less", False),
        ("df", "df -h /workspace /root/.cache/huggingface /dev/shm /tmp", True),
        ("df", "df -B1 /data", True),
        ("df", "ssh gpu-01 df -h /data", True),
        ("df", "df -t ext4", True),
        ("df", "df --type=xfs -h", True),
        ("df", "df -hl", True),  # (local filesystems only: an NFS /data left out)
        ("df", "df -h | grep nvme", True),
        ("df", "df -h | head -5", True),
        ("nvidia_smi_table", "nvidia-smi", False),
        ("nvidia_smi", "sudo nvidia-smi -q -x", False),
        ("nvidia_smi_list", "nvidia-smi -L", False),
        ("nvidia_smi_table", "nvidia-smi -i 0", True),
        ("nvidia_smi_q", "nvidia-smi -q -i 0,1", True),
        ("nvidia_smi_csv", "nvidia-smi --id=0 --query-gpu=name --format=csv", True),
        ("rdma_ports", "ibstat", False),
        ("rdma_ports", "ibv_devinfo -v", False),
        ("rdma_ports", "ibstat mlx5_7", True),
        ("rdma_ports", "ibstatus mlx5_0:1", True),
        ("rdma_ports", "ibv_devinfo -d mlx5_0", True),
        ("rdma_ports", "ibv_devinfo --ib-port=1", True),
        ("lscpu", "lscpu", False),
        ("lscpu", "lscpu | grep -v Flags", False),  # (drops no line a count is read from)
        ("lscpu", "lscpu | grep -vE '^(Flags|Vulnerability)'", False),
        ("lscpu", "lscpu | grep -v -e Flags -e NUMA", False),
        ("lscpu", "lscpu | grep -v 'Flags\\|L[123]'", False),
        ("lscpu", "lscpu | grep -v Off-line", True),
        ("lscpu", "lscpu | grep -v CPU", True),
        ("lscpu", "lscpu | grep -v 0-", True),  # (a CPU list's value)
        ("lscpu", "lscpu | grep -v -A1 Flags", True),  # (an option not read)
        ("lscpu", "lscpu | grep -v Flags other.txt", True),  # (grep reads the file)
        ("lscpu", "lscpu | grep Flags", True),
        ("lscpu", "cat /proc/cpuinfo", False),  # (a /proc/cpuinfo: read by the lscpu kind)
        ("lscpu", "less /proc/cpuinfo", False),
        ("lscpu", "python3 collect_env.py", False),  # (a command not known: says nothing)
        ("lscpu", "grep -E 'processor|core id' /proc/cpuinfo", True),
        ("lscpu", "sudo head -n 56 /proc/cpuinfo", True),
        ("lscpu", "sed -n 1,56p /proc/cpuinfo", True),
        ("lscpu", "cat /proc/cpuinfo | grep -v flags", True),
        ("df", "df -h | grep -v tmpfs", True),
        ("df", "docker run --rm -it alpine df -h", True),  # (a new container's mounts)
        ("df", "sudo podman container run alpine df", True),
        ("df", "docker exec -it box df -h", True),  # (a running container's mounts)
        ("df", "docker compose run app df -h", True),
        ("df", "kubectl run t --rm -it --image=alpine -- df -h", True),
        ("df", "kubectl exec -it pod -- df -h", True),
        ("df", "docker-compose run --rm app df -h", True),
        ("df", "docker run --rm alpine sh -c 'df -h'", True),
        ("df", "ssh box \"sudo docker exec app bash -lc 'df -h'\"", True),
        ("nvidia_smi_table", "docker exec trainer nvidia-smi", True),
        ("nvidia_smi_table", "kubectl exec pod -- nvidia-smi", True),
        ("nvidia_smi_table", "NV_GPU=0,1 nvidia-docker run IMG nvidia-smi", True),
        ("nvidia_smi_table", "docker-compose run app nvidia-smi", True),
        ("nvidia_smi_table", "docker run --gpus 1 IMG bash -c 'nvidia-smi'", True),
        (
            "nvidia_smi_table",
            "docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=0,1 IMG nvidia-smi",
            True,
        ),
        ("nvidia_smi_table", "podman run --device nvidia.com/gpu=0 IMG nvidia-smi", True),
        ("nvidia_smi_table", "docker run --device /dev/nvidia0 --device /dev/nvidiactl IMG nvidia-smi", True),
        ("nvidia_smi_table", "docker run --rm --gpus 1 nvidia/cuda nvidia-smi", True),
        ("nvidia_smi_table", "docker run --gpus '\"device=0\"' nvidia/cuda nvidia-smi", True),
        ("nvidia_smi_table", "docker run --rm --gpus all nvidia/cuda nvidia-smi", False),
        ("nvidia_smi_table", "docker run --rm --gpus=all nvidia/cuda nvidia-smi", False),
        ("nvidia_smi_table", "docker run --gpus all IMG bash -c 'nvidia-smi'", False),
        ("df", "", False),
    ],
)
def test_a_command_that_narrows_its_output_is_told(kind: str, command: str, narrows: bool) -> None:
    assert bool(narrowed(kind, command)) is narrows


def test_a_df_of_some_paths_leaves_other_mounts_unknown(tmp_path: Path) -> None:
    """Before: `$ df -h /workspace ...` (its prompt line dropped) was read as the box's mounts:
    /data "is not a mount point; it lives on the system disk /" (a fail, a hardware claim)."""
    text = pasted(DF_PATHS, "$ df -h /workspace /root/.cache/huggingface /dev/shm /tmp")
    verdict, actual = verdicts(tmp_path, DF_PATHS, text, "data_disk: {mount: /data, min_size: 2TB}")[
        "data_disk"
    ]
    assert verdict == "unverified"
    assert actual == "unknown: /data is not in the df output, which lists only some filesystems"
    # what it shows is judged: /workspace is there (on nvme0n1p1; / is an overlay, whose disk
    # df does not say), and too small for 3 TB
    order = "data_disk: {mount: /workspace, min_size: %s}"
    assert verdicts(tmp_path, DF_PATHS, text, order % "1TB")["data_disk"][0] == "warn"
    assert verdicts(tmp_path, DF_PATHS, text, order % "3TB")["data_disk"][0] == "fail"
    # the same rows without the prompt line: a whole df (as before)
    whole = text.split("\n", 1)[1]
    assert (
        verdicts(tmp_path, DF_PATHS, whole, "data_disk: {mount: /data, min_size: 2TB}")["data_disk"][0]
        == "fail"
    )


def test_an_nvidia_smi_of_one_gpu_is_no_one_gpu_box(tmp_path: Path) -> None:
    """Before: `$ nvidia-smi -i 0` of an 8-GPU box (the same guide's `nvidia-smi -L` lists 8)
    failed an order for 8 GPUs, "1 listed"; the GPU it shows is still judged."""
    text = pasted(SMI_I0, "$ nvidia-smi -i 0")
    got = verdicts(tmp_path, SMI_I0, text, "gpu_count: 8\ngpu_model: A100 SXM4 40GB")
    assert got["gpu_count"][0] == "unverified"
    assert "`nvidia-smi -i 0` shows only the GPUs it asked for" in got["gpu_count"][1]
    wrong = verdicts(tmp_path, SMI_I0, text, "gpu_model: A100 SXM4 80GB")["gpu_model"]
    assert wrong[0] == "fail"  # the GPU shown is a 40 GB one


def test_an_ibstat_of_one_device_leaves_the_other_ports_unknown(tmp_path: Path) -> None:
    """Before: `ibstat mlx5_7` (its port Down) failed an order for 1 port at 200G as "0 of 1
    port(s) ACTIVE": the box's other devices' ports were not asked for."""
    text = pasted(IBSTAT_CA, "root@test-sriov-ib-pod:~# ibstat mlx5_7")
    verdict, actual = verdicts(tmp_path, IBSTAT_CA, text, 'rdma: "1x200G"')["rdma_ports"]
    assert verdict == "unverified"
    assert "`ibstat mlx5_7` lists only the devices or ports it asked for" in actual
    # the same listing without the command: the box's whole listing, its one port down
    assert (
        verdicts(tmp_path, IBSTAT_CA, (REAL / IBSTAT_CA).read_text(), 'rdma: "1x200G"')["rdma_ports"][0]
        == "fail"
    )


def test_a_view_that_says_it_shows_every_gpu_is_whole(tmp_path: Path) -> None:
    """`nvidia-smi -q -i 0` of a box whose `Attached GPUs : 1` says GPU 0 is all of it: judged
    whole (a real 1-GPU capture under that prompt; before this, the view was an incomplete
    probe and every row unverified)."""
    name = "nvidia-smi-q__h200__1gpu__driver610.43.02.txt"
    text = pasted(name, "$ nvidia-smi -q -i 0")
    order = "gpu_model: H200\ngpu_count: 1"
    got = verdicts(tmp_path, name, text, order)
    assert got == verdicts(tmp_path, name, (REAL / name).read_text(), order)
    assert got["gpu_count"] == ("pass", "1")


def test_a_prompt_with_no_space_before_its_command_is_read(tmp_path: Path) -> None:
    """`...]$df -h /` (round 13): the prompt line was not recognised, so the file was refused;
    saved without it, `df -h /` read as the whole df and an ordered /data failed as "on the
    system disk"."""
    name = "df-h__root-lvm-name-wrapped__e6400.txt"
    text = "[root@e6400:/home/moon/ 503]$df -h /\n" + (REAL / name).read_text()
    assert verdicts(tmp_path, "df.txt", text, "data_disk: {mount: /data}")["data_disk"] == (
        "unverified",
        "unknown: /data is not in the df output, which lists only some filesystems",
    )


OFFLINE_CPUS = "lscpu__xeon-e5-2630v4__2socket__36-of-40-cpus-offline.txt"
EPYC = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"


@pytest.mark.parametrize(
    "command",
    [
        r"$ lscpu | grep -E '^(Architecture|CPU\(s\)|Thread|Core|Socket)'",
        r"root@node:~# lscpu | egrep '^(Architecture|CPU\(s\)|Thread|Core|Socket)'",
    ],
)
def test_a_grepped_lscpu_never_passes_on_the_lines_it_kept(tmp_path: Path, command: str) -> None:
    """The real 2-socket Xeon E5-2630 v4 whose lscpu says 40 CPUs, 36 of them offline (its whole
    output fails 16 cores ordered), cut in-test to the lines its copied `grep` keeps
    (Architecture, CPU(s), Thread(s) per core, Core(s) per socket, Socket(s): the Off-line
    CPU(s) list left out), that command above them: it passed as 20 cores / 40 threads."""
    whole = (REAL / OFFLINE_CPUS).read_text()
    assert verdicts(tmp_path, "lscpu.txt", whole, "cpu_cores: 16")["cpu_cores"][0] == "fail"
    kept = "".join(
        line
        for line in whole.splitlines(keepends=True)
        if line.startswith(("Architecture", "CPU(s)", "Thread", "Core", "Socket"))
    )
    verdict, actual = verdicts(tmp_path, "lscpu.txt", command + "\n" + kept, "cpu_cores: 16")["cpu_cores"]
    assert verdict == "unverified", actual
    assert actual.startswith("20 cores / 40 threads; `lscpu | ") and "keeps only the lines" in actual
    # (a fail the kept lines show still fails: a filter adds no CPU)
    assert verdicts(tmp_path, "lscpu.txt", command + "\n" + kept, "cpu_cores: 48")["cpu_cores"][0] == "fail"


HYPERV_CPUINFO = "proc-cpuinfo__amd-ryzen-3-4100__hyperv-vm-2socket-2core-smt__ollama-7287.txt"


def _cpuinfo_lines() -> list[str]:
    return (REAL / HYPERV_CPUINFO).read_text().splitlines(keepends=True)


def _topology_lines() -> str:
    return "".join(
        line for line in _cpuinfo_lines() if line.startswith(("processor", "physical id", "core id"))
    )


@pytest.mark.parametrize(
    ("text", "ordered"),
    [
        # `grep processor /proc/cpuinfo` saved alone
        ("".join(line for line in _cpuinfo_lines() if line.startswith("processor")), 8),
        # `grep -E 'processor|physical id|core id' /proc/cpuinfo`, alone and under its prompt
        (_topology_lines(), 8),
        ("$ grep -E 'processor|physical id|core id' /proc/cpuinfo\n" + _topology_lines(), 8),
        # `grep` of its first 2 CPUs' lines: what it left out is not known to be missing
        ("$ grep -E -m 6 'processor|physical id|core id' /proc/cpuinfo\n"
         + "".join(_topology_lines().splitlines(True)[:6]), 4),
        # `cat /proc/cpuinfo | head -n 56`: its first two whole blocks
        ("$ cat /proc/cpuinfo | head -n 56\n" + "".join(_cpuinfo_lines()[:56]), 4),
        # the top scrolled off: the text starts at `processor : 4`
        ("".join(_cpuinfo_lines()[4 * 28 :]), 8),
    ],
)  # fmt: skip
def test_a_cpuinfo_not_known_whole_never_fails_cpu_cores(tmp_path: Path, text: str, ordered: int) -> None:
    """The real HyperV /proc/cpuinfo (8 CPUs, 4 cores) cut or filtered in-test as each case
    says, saved as cpuinfo.txt: each failed cpu_cores (`1 cores / 1 threads`, `1 cores / 2
    threads`, `2 cores / 4 threads`); the CPUs a filter or a cut left out are not known to be
    missing: unverified."""
    assert verdicts(tmp_path, "cpuinfo.txt", text, f"cpu_cores: {ordered}")["cpu_cores"][0] == "unverified"


def test_a_grepped_cpuinfo_passes_on_the_cores_it_kept(tmp_path: Path) -> None:
    """`grep -E 'processor|physical id|core id' /proc/cpuinfo` of the real HyperV box (in-test),
    an order of 4 cores: /proc/cpuinfo lists the online CPUs only and a filter adds none, so the
    4 cores it shows pass."""
    text = "$ grep -E 'processor|physical id|core id' /proc/cpuinfo\n" + _topology_lines()
    assert verdicts(tmp_path, "cpuinfo.txt", text, "cpu_cores: 4")["cpu_cores"] == (
        "pass",
        "4 cores / 8 threads",
    )


def test_an_lscpu_without_its_flags_line_is_judged_whole(tmp_path: Path) -> None:
    """The real 2-socket Xeon E5-2630 v4 (40 CPUs, 36 offline) without its Flags line (in-test)
    under its copied `lscpu | grep -v Flags`, and the real 2-socket EPYC 9374F (64 cores) so: a
    grep -v that drops no line a count is read from shows every CPU and core; the Xeon's fail
    and the EPYC's pass stand (the pass was unverified, "keeps only the lines grep let
    through")."""
    for name, order, verdict in ((OFFLINE_CPUS, 16, "fail"), (EPYC, 64, "pass")):
        kept = "".join(ln for ln in (REAL / name).read_text().splitlines(True) if not ln.startswith("Flags"))
        text = "$ lscpu | grep -v Flags\n" + kept
        assert verdicts(tmp_path, "lscpu.txt", text, f"cpu_cores: {order}")["cpu_cores"][0] == verdict


DF_RUN = "df-h__busybox-alpine-container-none-root__docker-run__moby-22677.txt"
SMI_ONE = "nvidia-smi__l40s__1gpu__driver550.127.05.txt"


def test_a_tool_run_in_a_container_the_command_started_shows_that_container(tmp_path: Path) -> None:
    """moby/moby#22677's `docker run --rm -it alpine df -h` (its command line put back as
    pasted): a new container's mounts, read as the box's, failed `/data` as "not a mount point;
    it lives on the system disk /"; a mount not among them is now unknown. So is a GPU that
    `docker run --gpus 1 ... nvidia-smi` (a 1-GPU L40S table with that command line added in the
    test) does not show: an order for 2 GPUs failed "1 listed"; with `--gpus all` it still fails."""
    text = pasted(DF_RUN, "docker run --rm -it alpine df -h")
    verdict, actual = verdicts(tmp_path, DF_RUN, text, "data_disk: {mount: /data, min_size: 10GB}")[
        "data_disk"
    ]
    assert (verdict, actual) == (
        "unverified",
        "unknown: /data is not in the df output, which lists only some filesystems",
    )
    whole = (REAL / DF_RUN).read_text()
    assert (
        verdicts(tmp_path, DF_RUN, whole, "data_disk: {mount: /data, min_size: 10GB}")["data_disk"][0]
        == "fail"
    )
    one = pasted(SMI_ONE, "$ docker run --rm --gpus 1 nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi")
    got = verdicts(tmp_path, SMI_ONE, one, "gpu_count: 2")["gpu_count"]
    assert got[0] == "unverified" and "shows only the GPUs of a container it started" in got[1]
    every = pasted(SMI_ONE, "$ docker run --rm --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi")
    assert verdicts(tmp_path, SMI_ONE, every, "gpu_count: 2")["gpu_count"][0] == "fail"


CPUINFO_GREP = "proc-cpuinfo-grep-processor__lxd-container-limits-cpu-4__lxcfs-181.txt"


def test_a_grepped_cpuinfo_is_not_said_to_lack_the_core_lines_it_dropped(tmp_path: Path) -> None:
    """lxc/lxcfs#181's `cat /proc/cpuinfo |grep processor` (an LXD container of 4 CPUs on a
    Xeon E5-2660 host; its command line put back as pasted): cpu_cores was unverified saying the
    box's /proc/cpuinfo has no `physical id` and `core id` lines, "arm64, POWER and many VMs
    print none", where grep dropped them; it now names the filter."""
    text = pasted(CPUINFO_GREP, "$ cat /proc/cpuinfo |grep processor")
    verdict, actual = verdicts(tmp_path, CPUINFO_GREP, text, "cpu_cores: 4")["cpu_cores"]
    assert verdict == "unverified"
    assert (
        actual
        == "? cores / 4 threads; `cat /proc/cpuinfo |grep processor` keeps only the lines grep let through"
    )
    said = details(tmp_path, CPUINFO_GREP, text, "cpu_cores: 4")["cpu_cores"]
    assert "arm64" not in said and "left out the `physical id` and `core id` lines" in said
    # saved without the command, lines of one field alone are read as a grep's too
    whole = (REAL / CPUINFO_GREP).read_text()
    assert "arm64" not in details(tmp_path, CPUINFO_GREP, whole, "cpu_cores: 4")["cpu_cores"]


SMI_FOUR = "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt"


@pytest.mark.parametrize(
    "command",
    [
        "$ docker run --rm --runtime=nvidia nvidia/cuda nvidia-smi",
        "$ docker run --rm --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all nvidia/cuda nvidia-smi",
        "$ podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi",
        "$ docker run --rm --gpus all,capabilities=utility nvidia/cuda nvidia-smi",
        "$ docker run --rm --gpus '\"all,capabilities=utility\"' nvidia/cuda nvidia-smi",
        "$ docker run --rm --gpus count=all nvidia/cuda nvidia-smi",
        "$ docker run --rm nvidia/cuda nvidia-smi",
        "$ nvidia-docker run --rm nvidia/cuda nvidia-smi",
        "$ docker run --rm --gpus all --name oc nvidia/cuda:11.4.3-base-ubuntu20.04 nvidia-smi",
        "$ docker run --rm --gpus all --name k nvidia/cuda nvidia-smi",
        "$ docker run --rm --gpus all -v /srv/oc:/oc nvidia/cuda nvidia-smi",
        "$ docker run --rm --gpus all --name compose nvidia/cuda nvidia-smi",
    ],
)
def test_a_container_run_given_every_gpu_is_judged_as_the_box(tmp_path: Path, command: str) -> None:
    """The 4-GPU A100 table with an every-GPU container run added above it in the test (Docker
    reads `all` anywhere in --gpus' list, CDI's nvidia.com/gpu=all and NVIDIA_VISIBLE_DEVICES=all
    as every GPU; a run choosing none gets the CUDA image's NVIDIA_VISIBLE_DEVICES=all): an order
    for 8 GPUs failed "4" without the line, and was unverified ("shows only the GPUs of a
    container it started") with it, a 4-GPU box sold as 8 turned GO; it fails again. A container
    named or a volume mounted `oc`, `k` or `compose` is no Kubernetes CLI or compose (read as
    one, the shortfall was unverified)."""
    got = verdicts(tmp_path, SMI_FOUR, pasted(SMI_FOUR, command), "gpu_count: 8")["gpu_count"]
    assert got[0] == "fail", got


@pytest.mark.parametrize(
    "command",
    [
        "$ docker exec -it app df -h",
        "$ kubectl exec -it pod -- df -h",
        "$ docker-compose run --rm app df -h",
        "$ docker run --rm alpine sh -c 'df -h'",
    ],
)
def test_a_df_run_in_any_container_shows_that_container(tmp_path: Path, command: str) -> None:
    """moby/moby#22677's busybox df (a container's overlay root, no /data) saved under a command
    line that runs df in a container other than by `docker run IMAGE df` (set above it in the
    test): it failed "/data is not a mount point; it lives on the system disk /", the box's
    disks read from a container's mounts; /data is now unknown."""
    got = verdicts(tmp_path, DF_RUN, pasted(DF_RUN, command), "data_disk: {mount: /data, min_size: 10GB}")
    assert got["data_disk"][0] == "unverified", got["data_disk"]


@pytest.mark.parametrize(
    "command",
    [
        "$ docker exec trainer nvidia-smi",
        "$ kubectl exec pod -- nvidia-smi",
        "$ docker-compose run --rm app nvidia-smi",
        "$ docker compose run --rm app nvidia-smi",
        "$ docker --context gpu compose run --rm app nvidia-smi",
        "$ /usr/local/bin/kubectl run smi --rm -it --image=nvidia/cuda -- nvidia-smi",
        "$ NV_GPU=0 nvidia-docker run --rm nvidia/cuda nvidia-smi",
        "$ docker run --rm --gpus 1 nvidia/cuda bash -c 'nvidia-smi'",
    ],
)
def test_an_nvidia_smi_in_a_container_of_some_gpus_is_no_small_box(tmp_path: Path, command: str) -> None:
    """The 1-GPU L40S table saved under a command line that runs nvidia-smi in a container whose
    GPUs are chosen elsewhere or are some (set above it in the test): an order for 2 GPUs failed
    "1 listed", the container's GPUs read as the box's; it is now unverified."""
    got = verdicts(tmp_path, SMI_ONE, pasted(SMI_ONE, command), "gpu_count: 2")["gpu_count"]
    assert got[0] == "unverified" and "shows only the GPUs of" in got[1], got
