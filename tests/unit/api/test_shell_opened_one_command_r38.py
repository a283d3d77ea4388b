"""One command typed at the prompt of a shell a command above opened in a container (`kubectl exec
-it POD -- bash`, then `root@POD:/workspace# nvidia-smi`) is that container's view, as two or more
are (api/transcript.sections, api/shell_opened.py; measure38e 03: with one command the session was
read as the box's bare table, gpu_count FAIL "7 of the 8 ordered GPUs missing", no note)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline

from ..offline_judge import verdicts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
POD = (
    FIXTURES
    / "real"
    / (
        "session__kubectl-exec-it-bash-pod-shell-ONE-command__nvidia-smi-rtx-pro-6000-blackwell"
        "-1-mig-1g.24gb-kmd610__hami-blog-zh.txt"
    )
)
BASH_POD = (
    FIXTURES
    / "sessions"
    / (
        "transcript__kubectl-exec-it-bash-OPENS-POD-SHELL+nvidia-smi-at-pod-prompt-460.73-CUT__k8s-device-plugin-257.txt"
    )
)
ORDER = "gpu_model: RTX PRO 6000 Blackwell\ngpu_count: 8\n"


def _said(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    notes: list[str] = []
    offline.load_outputs([str(path)], notes)
    return " ".join(notes)


def test_one_command_at_the_pods_prompt_is_the_pods_view(tmp_path: Path) -> None:
    text = POD.read_text(encoding="utf-8")
    got = verdicts(tmp_path, POD.name, text, ORDER)
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    assert "shows only the GPUs of the container it ran in" in got["gpu_count"][1]
    said = _said(tmp_path / "pod.txt", text)
    assert "(`kubectl exec -it pytorch-mig-demo-c9f7c8b49-sl5qh -- bash`) opened a shell" in said, said


def test_a_docker_exec_shell_with_one_command_alike(tmp_path: Path) -> None:
    """The family: the same session through `docker exec -it CTR bash` (the container's prompt)."""
    text = POD.read_text(encoding="utf-8")
    docker = text.replace(
        "kubectl exec -it pytorch-mig-demo-c9f7c8b49-sl5qh -- bash", "docker exec -it 1c49a3fcece6 bash"
    )
    docker = docker.replace("root@pytorch-mig-demo-c9f7c8b49-sl5qh:", "root@1c49a3fcece6:")
    assert docker.count("1c49a3fcece6") == 2
    got = verdicts(tmp_path, POD.name, docker, ORDER)
    assert (
        got["gpu_count"][0] == "unverified"
        and "`docker exec -it 1c49a3fcece6 nvidia-smi`" in got["gpu_count"][1]
    )


def test_the_device_plugin_sessions_pod_command_alone(tmp_path: Path) -> None:
    """The family: the device plugin session cut to its opener and the one command at the pod's
    prompt (the commands above it gone) reads the table as the pod's view, as the whole does."""
    lines = BASH_POD.read_text(encoding="utf-8").split("\n")
    cut = "\n".join(lines[3:])
    assert cut.startswith("Abhisheks-MacBook-Pro:~ abhishekacharya$ kubectl -n kube-system exec -it")
    said = _said(tmp_path / "cut.txt", cut)
    assert "opened a shell in the container" in said, said
    notes: list[str] = []
    table = offline.load_outputs([str(tmp_path / "cut.txt")], notes)["nvidia_smi_table"]
    assert "shows only the GPUs of the container it ran in" in table.partial, table.partial


def test_kubectls_own_notice_under_the_opener_is_no_output(tmp_path: Path) -> None:
    """kubectl's own stderr lines under `kubectl exec -it POD -- bash` (`Defaulted container ...`
    of a pod with sidecars, `Unable to use a TTY ...`), as a pull line or a WARNING is: the shell
    still opened (review S F2: the pod's table was judged the box's, gpu_count FAIL). One list
    of the engines' and kubectl's own lines (api/command_line.py ENGINE_OWN_LINE) serves both."""
    text = POD.read_text(encoding="utf-8")
    opener = "kubectl exec -it pytorch-mig-demo-c9f7c8b49-sl5qh -- bash"
    plain = verdicts(tmp_path, POD.name, text, ORDER)
    for notice in (
        'Defaulted container "pytorch" out of: pytorch, istio-proxy, istio-init (init)',
        "Unable to use a TTY - input is not a terminal or the right kind of file",
        "Defaulting container name to pytorch.",
    ):
        lines = text.split("\n")
        at = next(i for i, line in enumerate(lines) if opener in line)
        noticed = "\n".join([*lines[: at + 1], notice, *lines[at + 1 :]])
        got = verdicts(tmp_path, POD.name, noticed, ORDER)
        assert got["gpu_count"] == plain["gpu_count"] and got["gpu_count"][0] == "unverified", (notice, got)
        said = _said(tmp_path / "pod.txt", noticed)
        assert f"(`{opener}`) opened a shell in the container" in said, said
