"""nvidia-smi run in a container through a Kubernetes or container CLI other than docker,
podman, nerdctl and kubectl: OpenShift's `oc exec`, `k exec` (the alias kubectl's documentation
sets up), `microk8s kubectl` / `k3s kubectl` / `minikube kubectl --`, `crictl exec`, LXD's and
Incus's `lxc|incus exec ... --`. Each shows the GPUs of the container it ran in, not the box's:
a count short of the order is unverified, never "GPUs missing".

Real captures (tests/fixtures/real, SOURCES.md), edited in memory only where a test says."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.narrowed import narrowed

from ..offline_judge import checks, judged_box, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
K_EXEC = (
    "nvidia-smi__a10g__1gpu__driver535.129.03__k-exec-pod__table-without-processes__bottlerocket-3718.txt"
)
OC_EXEC = (
    "nvidia-smi__a100-80gb-pcie-mig__1gpu__driver550.54.14__cuda-na__"
    "oc-exec-driver-daemonset__k8s-dra-driver.txt"
)
PROCESSES_NONE = (
    "\n+---------------------------------------------------------------------------------------+\n"
    "| Processes:                                                                            |\n"
    "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n"
    "|        ID   ID                                                             Usage      |\n"
    "|=======================================================================================|\n"
    "|  No running processes found                                                           |\n"
    "+---------------------------------------------------------------------------------------+\n"
)


@pytest.mark.parametrize(
    "command",
    [
        "k exec gpu-tests-2-87rnk -- nvidia-smi",
        "k -n ai exec gpu-pod -- nvidia-smi",
        "oc exec -ti nvidia-driver-daemonset-abc -n nvidia-gpu-operator -- nvidia-smi",
        "oc run smi --rm -it --image=nvidia/cuda -- nvidia-smi",
        "microk8s kubectl exec -it gpu-pod -- nvidia-smi",
        "k3s kubectl exec gpu-pod -- nvidia-smi",
        "minikube kubectl -- exec gpu-pod -- nvidia-smi",
        "crictl exec -it 4a3b2c nvidia-smi",
        "lxc exec gpu-ctr -- nvidia-smi",
        "incus exec gpu-ctr -- nvidia-smi",
        "crictl -r unix:///run/containerd/containerd.sock exec -it 4a3b2c nvidia-smi",
        "crictl --runtime-endpoint unix:///run/containerd/containerd.sock exec 4a3b2c nvidia-smi",
        "microk8s.kubectl exec -it gpu-pod -- nvidia-smi",
        "k3s crictl exec -it 4a3b2c nvidia-smi",
        "oc rsh gpu-pod nvidia-smi",
        "oc rsh -c cuda gpu-pod nvidia-smi",
        "ctr run -t --rm --gpus 0 nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda10.2 sample nvidia-smi",
        "ctr -n k8s.io run --rm --gpus 0 docker.io/nvidia/cuda:12.2.0-base-ubuntu22.04 t1 nvidia-smi -L",
        "ctr task exec --exec-id smi -t sample nvidia-smi",
        "ctr -a /run/containerd/containerd.sock t exec --exec-id=smi sample nvidia-smi",
    ],
)
def test_container_clis_show_the_container_gpus(command: str) -> None:
    """Each command line runs nvidia-smi in a container: a view of its GPUs (it was none; crictl
    given its runtime endpoint, the microk8s snap's `microk8s.kubectl`, `k3s crictl` and
    OpenShift's `oc rsh POD cmd` too; containerd's `ctr run IMAGE ID cmd` and `ctr task exec`,
    which were no prompt's command and no container view before)."""
    assert "shows only the GPUs of" in narrowed("nvidia_smi_table", command), command


@pytest.mark.parametrize(
    "command",
    ["k get pods", "crictl run ctr.json pod.json", "lxc launch ubuntu:22.04 c1", "ctr task ls", "ctr logs x"],
)
def test_their_other_verbs_run_no_nvidia_smi(command: str) -> None:
    """Verbs that run no command in a container are no container view."""
    assert narrowed("nvidia_smi_table", command) == ""


def test_k_exec_pod_of_one_gpu_is_no_short_box(tmp_path: Path) -> None:
    """bottlerocket #3718's real A10G table under its `k exec gpu-tests-2-87rnk -- nvidia-smi`
    line, with a Processes section reading "No running processes found" appended in memory (the
    comment's table ends at the GPU row's border, which leaves it unverified as cut): an order for
    4 GPUs failed "3 of the 4 ordered GPUs missing" from the pod's one GPU; it is now unverified,
    naming the command."""
    text = "❯ k exec gpu-tests-2-87rnk -- nvidia-smi\n" + (REAL / K_EXEC).read_text() + PROCESSES_NONE
    got = verdicts(tmp_path, "nvidia-smi.txt", text, "gpu_model: A10G\ngpu_count: 4\n")
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    assert (
        "`k exec gpu-tests-2-87rnk -- nvidia-smi` shows only the GPUs of the container it ran in"
        in (got["gpu_count"][1])
    )


def test_oc_exec_driver_daemonset_is_no_short_box(tmp_path: Path) -> None:
    """NVIDIA's OpenShift DRA demo's real A100 80GB PCIe table under its `oc exec -ti
    nvidia-driver-daemonset-<suffix> -n nvidia-gpu-operator -- nvidia-smi` line, a Processes
    section appended in memory: an order for 2 GPUs failed "1 of the 2 ordered GPUs missing";
    it is now unverified."""
    text = (
        "$ oc exec -ti nvidia-driver-daemonset-<suffix> -n nvidia-gpu-operator -- nvidia-smi\n"
        + (REAL / OC_EXEC).read_text()
        + PROCESSES_NONE
    )
    got = verdicts(tmp_path, "nvidia-smi.txt", text, "gpu_model: A100 80GB PCIe\ngpu_count: 2\n")
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]


def test_no_cuda_in_a_container_entered_by_exec_is_not_the_box_s(tmp_path: Path) -> None:
    """NVIDIA's OpenShift DRA demo's real table, verbatim under its `oc exec -ti
    nvidia-driver-daemonset-<suffix> -n nvidia-gpu-operator -- nvidia-smi` line: the GPU
    Operator's driver container reads `CUDA Version: N/A`; nvidia_driver failed "no CUDA driver
    ... ask the vendor for the compute driver on the box" from that container's view; it is now
    unverified, saying the container was given no compute capability."""
    text = "$ oc exec -ti nvidia-driver-daemonset-<suffix> -n nvidia-gpu-operator -- nvidia-smi\n"
    found = {
        c.name: c
        for c in checks(tmp_path, "nvidia-smi.txt", text + (REAL / OC_EXEC).read_text(), "gpu_count: 1\n")
    }
    assert found["nvidia_driver"].verdict == "unverified", found["nvidia_driver"]
    assert found["nvidia_driver"].actual.startswith("driver 550.54.14, CUDA N/A; incomplete probe: `oc exec")
    assert "that container was given no `compute` driver capability" in found["nvidia_driver"].detail


def test_no_cuda_in_a_container_started_without_compute_still_fails(tmp_path: Path) -> None:
    """The same table under a `docker run` of every GPU (edited in memory: the command line put
    above it): a container the command started shows the box's driver as that run gets it, so its
    missing CUDA driver still fails (a container started with NVIDIA_DRIVER_CAPABILITIES=utility)."""
    text = "$ docker run --rm --gpus all -e NVIDIA_DRIVER_CAPABILITIES=utility ubuntu nvidia-smi\n"
    found = {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text + (REAL / OC_EXEC).read_text())}
    assert found["nvidia_driver"].verdict == "fail", found["nvidia_driver"]


V100_8C = "nvidia-smi__grid-v100-8c-vgpu__1gpu__driver470.63.01__half-v100-pcie-16gb__nrec.txt"


@pytest.mark.parametrize(
    "listing",
    ["docker exec trainer nvidia-smi -L", "k exec gpu-tests-2-87rnk -- nvidia-smi -L"],
)
def test_no_cuda_of_the_box_s_own_table_fails_beside_an_exec(tmp_path: Path, listing: str) -> None:
    """A session (made in memory) of the real NREC GRID V100-8C table under `user@box:~$
    nvidia-smi`, its banner edited to `CUDA Version: N/A` and cut after its GPU rows, then
    `user@box:~$ LISTING` printing its one GPU as `-L` does: the N/A is the box's own banner, so
    nvidia_driver fails "no CUDA driver"; another command's exec demoted it to unverified ("that
    container was given no `compute` driver capability")."""
    table = (REAL / V100_8C).read_text().replace("CUDA Version: 11.4  ", "CUDA Version: N/A   ")
    table = "\n".join(table.splitlines()[:11]) + "\n"
    text = (
        "user@box:~$ nvidia-smi\n"
        + table
        + f"user@box:~$ {listing}\n"
        + "GPU 0: GRID V100-8C (UUID: GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9)\n"
    )
    assert "CUDA Version: N/A" in text
    found = {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text, "gpu_count: 1\n")}
    assert found["nvidia_driver"].verdict == "fail", found["nvidia_driver"]
    assert "ran in a container already running" not in found["nvidia_driver"].detail


EKS_POD_LOG = "nvidia-smi__kubectl-logs-pod-stray-fence__a10g__driver550.144.03__eks-notes.txt"
# its copied command as the notes show it, above the log (the capture leaves it out)
EKS_PROMPT = "ganeshkinkargiri.@M7QJY5-A67EFC4A ~ % kubectl logs -n nvidia-gpu-smi nvidia-smi\n"
EKS_NODE = "nvidia-smi__banner-only-eks-node__a10g__driver550.144.03__eks-notes.txt"


@pytest.mark.parametrize(
    "command",
    [
        "kubectl logs -n nvidia-gpu-smi nvidia-smi",
        "kubectl -n gpu-test logs gpu-check",
        "k logs smi",
        "oc logs pod/smi",
        "microk8s kubectl logs smi",
        "docker logs smi",
        "docker container logs smi",
        "podman logs --tail 40 smi",
        "docker compose logs app",
        "crictl -r unix:///run/containerd/containerd.sock logs 3f2a",
    ],
)
def test_a_containers_log_shows_the_container_gpus(command: str) -> None:
    """A container's or a pod's log (`kubectl logs POD`, `docker logs CTR`, ...) is what that
    container's own command printed there: a view of its GPUs, never the box's (it was read as
    the box's own nvidia-smi)."""
    assert "shows only the GPUs of the container it ran in" in narrowed("nvidia_smi_table", command)


def test_a_pods_logged_table_alone_is_no_reading_of_the_box(tmp_path: Path) -> None:
    """The EKS notes' `kubectl logs -n nvidia-gpu-smi nvidia-smi` (a pod given one GPU, running
    nvidia-smi; its zsh prompt line put back above it, a stray fence line kept): the pod's view
    of one A10G. It passed gpu_count and gpu_model as the box's; now unverified, naming the
    pod's log."""
    _, got = judged_box(tmp_path, {"pod-log.txt": EKS_PROMPT + (REAL / EKS_POD_LOG).read_text()}, ORDER_A10G)
    for rule in ("gpu_count", "gpu_model"):
        assert got[rule].verdict == "unverified", got[rule]
        assert "`kubectl logs -n nvidia-gpu-smi nvidia-smi` shows only the GPUs of" in got[rule].actual


ORDER_A10G = "gpu_model: A10G\ngpu_count: 1\n"


@pytest.mark.parametrize("names", [("node-nvidia-smi.txt", "pod-log.txt"), ("b-node.txt", "a-pod-log.txt")])
def test_the_nodes_own_table_beside_a_pods_log_judges_the_nodes(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    """The same notes' node `nvidia-smi` (its banner alone, cut after it) and the pod's logged
    table saved in one folder, in either order: two places, not one command twice. They were
    refused "a second nvidia_smi_table output ... pass one file per command"; the node's own
    output is judged as the box's (cut: no GPU row read, unverified) and the pod's noted as a
    container's view."""
    node, pod = names
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / node).write_text((REAL / EKS_NODE).read_text())
    (folder / pod).write_text(EKS_PROMPT + (REAL / EKS_POD_LOG).read_text())
    (tmp_path / "order.yml").write_text(ORDER_A10G)
    notes: list[str] = []
    facts = offline.parse_facts(offline.load_outputs([str(folder)], notes))
    got = {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}
    assert facts.gpu is not None and facts.gpu.driver_version == "550.144.03" and not facts.gpu.gpus
    assert got["gpu_count"].verdict == "unverified" and "no GPU row" in got["gpu_count"].actual
    assert any(
        "the box's own plain `nvidia-smi` table output and a container's view of its GPUs" in note
        and "kubectl logs -n nvidia-gpu-smi nvidia-smi" in note
        for note in notes
    ), notes


A100_TABLE = "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt"


@pytest.mark.parametrize(
    "command",
    [
        "kubectl logs nvidia-smi-pod",
        "oc logs gpu-pod",
        "k logs gpu-pod",
        "crictl logs 3f2a9c",
        "nerdctl logs smi",
        "k3s kubectl logs gpu-pod",
        "microk8s kubectl logs gpu-pod",
        "microk8s.kubectl logs gpu-pod",
        "minikube kubectl -- logs gpu-pod",
        "docker compose -f compose.yml logs app",
    ],
)
def test_a_saved_containers_log_under_its_prompt_is_a_view(tmp_path: Path, command: str) -> None:
    """One saved file: `$ COMMAND` then the real 1-GPU A100 table that pod or container printed,
    ordered 8 GPUs. The prompt line was not read as a command (the transcript knew only docker and
    podman of these CLIs; compose's own `-f` hid its `logs`), so the table was the box's: a false
    "7 of the 8 ordered GPUs missing"; it is a container's view, unverified."""
    got = verdicts(tmp_path, "smi.txt", f"$ {command}\n" + (REAL / A100_TABLE).read_text(), "gpu_count: 8\n")
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    assert "shows only the GPUs of the container it ran in" in got["gpu_count"][1]
