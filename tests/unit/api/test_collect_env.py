"""A saved PyTorch / vLLM / ScaleLLM collect_env report and SGLang's check_env are read as the
outputs they hold (api/collect_env.py): their GPU lines as a listing, their lscpu block and
topology matrix, and a note on stderr of what is not judged (real captures)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.api import collect_env
from gpuonboard.facts.gpu_probes import ENV_DRIVER_PROBE

REAL = Path(__file__).parents[2] / "fixtures" / "real"
VLLM = REAL / "collect_env__8x-h20__driver550.144.03__cut-in-lscpu__vllm-25015.txt"
SGLANG = REAL / "sglang-check_env__8x-b200__driver590.48.01__topo-cut__sglang-24834.txt"
SGLANG_16NIC = REAL / "sglang-check_env__8x-b200-16nic__driver570.172.08__topo-cut__sglang-19404.txt"
SCALELLM = REAL / "collect_env__1x-a100-80gb-pcie__driver550.90.07__scalellm-288.txt"


def facts(tmp_path: Path, text: str, order: str) -> tuple[dict[str, dict[str, str]], str, int]:
    """`gpuonboard facts` of one saved file with an order: (rules by name, stderr, exit code)."""
    saved, order_file = tmp_path / "env.txt", tmp_path / "order.yml"
    saved.write_text(text)
    order_file.write_text(order)
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json"]
    r = subprocess.run(
        [*cmd, "--order", str(order_file), str(saved)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode in (0, 1), r.stderr
    return {c["name"]: c for c in json.loads(r.stdout)["rules"]}, r.stderr, r.returncode


def test_collect_env_gpu_lines_are_read_as_the_box_listing(tmp_path: Path) -> None:
    """vllm#25015's report: 8 x H20 under `GPU models and configuration:` (nvidia-smi -L's lines
    with the UUIDs taken out); before, only its lscpu block was read and every GPU rule said "no
    nvidia-smi output was given"."""
    rules, err, _ = facts(tmp_path, VLLM.read_text(), "gpu_model: H20\ngpu_count: 8\ncpu_cores: 112\n")
    assert rules["gpu_model"]["verdict"] == "pass", rules["gpu_model"]
    assert rules["gpu_count"]["verdict"] == "pass" and rules["gpu_count"]["actual"] == "8"
    # the lscpu block, cut in the report, is still read as cut
    assert rules["cpu_cores"]["verdict"] == "unverified" and "cut short" in rules["cpu_cores"]["actual"]
    # the driver it names is nvidia-smi's banner value as collect_env read it: judged (round 28;
    # before, "not judged" and nvidia_driver unverified)
    assert (rules["nvidia_driver"]["verdict"], rules["nvidia_driver"]["actual"]) == (
        "pass",
        "driver 550.144.03, CUDA unknown",
    )
    assert "collect_env report, read as its GPU list, lscpu" in err
    assert "driver line (nvidia-smi's, as collect_env read it)" in err and "not judged" not in err


def test_collect_env_driver_line_is_the_box_driver_answer(tmp_path: Path) -> None:
    """ScaleLLM#288's report (torch's collect_env: `Nvidia driver version: 550.90.07`, read by
    collect_env from the box's `nvidia-smi` banner, beside `GPU 0: NVIDIA A100 80GB PCIe`).
    Before: nvidia_driver and min_driver unverified ("the outputs given name no driver
    version"), the line only noted. Now: the driver is the box's answer, its origin named in the
    note: nvidia_driver passes, min_driver 550.54 passes and 555.42 fails on 550.90.07."""
    text = SCALELLM.read_text()
    rules, err, _ = facts(tmp_path, text, "gpu_model: A100 80GB PCIe\nmin_driver: '550.54'\n")
    assert rules["nvidia_driver"]["verdict"] == rules["min_driver"]["verdict"] == "pass", rules
    assert "driver line (nvidia-smi's, as collect_env read it)" in err
    (tmp_path / "again").mkdir()
    rules, _, code = facts(tmp_path / "again", text, "gpu_model: A100 80GB PCIe\nmin_driver: '555.42'\n")
    assert rules["min_driver"]["verdict"] == "fail" and code == 1, rules["min_driver"]


def test_collect_env_cut_inside_its_driver_line_is_no_driver(tmp_path: Path) -> None:
    """Edit: ScaleLLM#288's report cut after its first 30 lines plus `Nvidia driver version:
    550.9` (550.90.07 cut inside its value) with no final newline, or cut to `550.90.0`. Before:
    `550.9` was read as the box's driver (min_driver 550.54 failed: a false NO-GO) and `550.90.0`
    passed showing a wrong value. Now the line the text ends inside is cut: no driver, unverified,
    the note says so."""
    lines = SCALELLM.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("Nvidia driver version"))
    assert at >= 30
    for value in ("550.9", "550.90.0"):
        text = "\n".join(lines[:30]) + f"\nNvidia driver version: {value}"
        found, said = collect_env.parts(text)
        assert "collect_env_driver" not in [p.kind for p in found]
        assert any("ends the text without a line end: cut short" in s for s in said), said
        out = tmp_path / value
        out.mkdir()
        rules, _, _ = facts(out, text, "gpu_model: A100 80GB PCIe\nmin_driver: '550.54'\n")
        assert rules["min_driver"]["verdict"] == "unverified", rules["min_driver"]
    # the same line ended (the report goes on) is still the box's driver
    found, _ = collect_env.parts("\n".join(lines[:30]) + "\nNvidia driver version: 550.90.07\n")
    assert ("collect_env_driver", "550.90.07\n") in [(p.kind, p.text) for p in found]


def test_collect_env_driver_line_not_a_version_stays_a_note(tmp_path: Path) -> None:
    """Edit: ScaleLLM#288's driver line as torch prints one it could not read (`Nvidia driver
    version: Could not collect`): no version, never a driver; nvidia_driver stays unverified
    and the note quotes the line."""
    text = SCALELLM.read_text().replace(
        "Nvidia driver version: 550.90.07", "Nvidia driver version: Could not collect"
    )
    rules, err, _ = facts(tmp_path, text, "gpu_model: A100 80GB PCIe\n")
    assert rules["nvidia_driver"]["verdict"] == "unverified"
    assert "Nvidia driver version: Could not collect" in err and "not judged" in err


def test_collect_env_driver_beside_another_drivers_q_disagrees(tmp_path: Path) -> None:
    """ScaleLLM#288's report (driver 550.90.07) and the real H200 `-q` (580.159.04) in one
    folder: two drivers, each named with its source, never one of them kept as the box's."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "collect_env.txt").write_text(SCALELLM.read_text())
    (folder / "nvidia-smi-q.txt").write_text(
        (REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt").read_text()
    )
    report = parse_facts(offline.load_outputs([str(folder)])).gpu
    assert report is not None
    assert any(
        "580.159.04 in -q, 550.90.07 in collect_env's driver line" in d for d in report.disagreements
    ), report.disagreements


def test_collect_env_fewer_gpus_than_ordered_fail_as_missing(tmp_path: Path) -> None:
    """collect_env's list is nvidia-smi -L's, every GPU of the box (CUDA_VISIBLE_DEVICES does not
    narrow it): ScaleLLM#288's 1 x A100 80GB PCIe against an order of 2 is one GPU missing."""
    rules, _, code = facts(tmp_path, SCALELLM.read_text(), "gpu_model: A100 80GB PCIe\ngpu_count: 2\n")
    assert rules["gpu_model"]["verdict"] == "pass", rules["gpu_model"]
    assert rules["gpu_count"]["verdict"] == "fail" and code == 1


def test_check_env_gpus_are_those_torch_sees(tmp_path: Path) -> None:
    """sglang#24834's check_env: `GPU 0,1,2,3,4,5,6,7: NVIDIA B200` is torch's view of the GPUs
    (torch.cuda.device_count), which CUDA_VISIBLE_DEVICES narrows: its count is of the visible
    GPUs, never a claim that the box has no others (unverified, the reason said). (The report cut
    before its `NVIDIA Topology:`, whose whole header listing the same 8 would make the list the
    box's whole set: round 39.)"""
    text = SGLANG.read_text()
    rules, err, _ = facts(
        tmp_path, text[: text.index("NVIDIA Topology:")], "gpu_model: B200\ngpu_count: 16\n"
    )
    count = rules["gpu_count"]
    assert count["verdict"] == "unverified" and "8 listed" in count["actual"]
    assert "CUDA_VISIBLE_DEVICES" in count["actual"]
    # (its `CUDA Driver Version:` is nvidia-smi's driver_version: read as the driver, round 33)
    assert "driver line (nvidia-smi --query-gpu=driver_version's, as check_env read it)" in err


@pytest.mark.parametrize(
    ("name", "driver"),
    [
        ("sglang-check_env__8x-b200__driver590.48.01__topo-cut__sglang-24834.txt", "590.48.01"),
        ("sglang-check_env__8x-b200-16nic__driver570.172.08__topo-cut__sglang-19404.txt", "570.172.08"),
        ("sglang-check_env__8x-h200__driver575.57.08__topo-cut-in-gpu1-row__sglang-9812.txt", "575.57.08"),
    ],
)
def test_check_env_s_cuda_driver_version_is_the_driver_s(tmp_path: Path, name: str, driver: str) -> None:
    """sglang's `CUDA Driver Version:` is the value of the box's `nvidia-smi
    --query-gpu=driver_version` (sglang/check_env.py _get_cuda_driver_version): min_driver was
    unverified, "the driver version was not reported", beside that line (measure33b 33); it is
    judged, both ways, its source named."""
    major = int(driver.split(".")[0])
    rules, err, _ = facts(tmp_path, (REAL / name).read_text(), f'min_driver: "{major}"\n')
    assert rules["min_driver"]["verdict"] == "pass", rules["min_driver"]
    assert rules["min_driver"]["actual"].startswith(driver)
    assert "was not reported" not in rules["min_driver"]["actual"]
    rules, _, code = facts(tmp_path, (REAL / name).read_text(), f'min_driver: "{major + 1}"\n')
    assert rules["min_driver"]["verdict"] == "fail" and code == 1, rules["min_driver"]


def test_check_env_s_several_driver_versions_are_not_read_as_one() -> None:
    """`CUDA Driver Versions: a, b` (GPUs answering several) and `Not Available` are no version."""
    text = SGLANG.read_text()
    for line in ("CUDA Driver Versions: 570.172.08, 590.48.01", "CUDA Driver Version: Not Available"):
        found, said = collect_env.parts(text.replace("CUDA Driver Version: 590.48.01", line))
        assert not any(part.kind == ENV_DRIVER_PROBE for part in found)
        assert any(f"its driver line ({line}) is not judged" in clause for clause in said), said


def test_check_env_group_line_is_one_gpu_per_index() -> None:
    """sglang#19404: one line names the 8 GPUs of one name; its `... Compute Capability: 10.0`
    line is no GPU; its topology matrix (cut short in the report) and NVCC line are read too. The
    matrix's header is whole and lists GPU0 to GPU7, as many as torch's list: the box's whole set
    (round 39), not torch's narrowed view."""
    found, _ = collect_env.parts(SGLANG_16NIC.read_text())
    kinds = {part.kind: part for part in found}
    assert kinds["nvidia_smi_list"].text.splitlines() == [f"GPU {i}: NVIDIA B200" for i in range(8)]
    assert kinds["nvidia_smi_list"].partial == ""
    assert kinds["nvidia_topo"].text.splitlines()[1].startswith("GPU0     X      NV18")
    assert kinds["nvcc"].text == "Cuda compilation tools, release 13.1, V13.1.115\n"


def test_collect_env_without_cuda_is_no_evidence_of_no_gpu(tmp_path: Path) -> None:
    """vllm#25015's report edited in-test as on a box where torch found no CUDA: `Is CUDA
    available: False`, `GPU models and configuration: Could not collect` (its 8 GPU lines and
    the driver line removed). No GPU rule fails; the note says the report lists no GPU."""
    lines = VLLM.read_text().split("\n")
    kept = [line for line in lines if not re.match(r"GPU \d|Nvidia driver", line)]
    text = "\n".join(kept).replace("Is CUDA available: True", "Is CUDA available: False")
    text = text.replace(
        "GPU models and configuration: \n", "GPU models and configuration: Could not collect\n"
    )
    rules, err, _ = facts(tmp_path, text, "gpu_model: H20\ngpu_count: 8\n")
    for name in ("nvidia_driver", "gpu_model", "gpu_count"):
        assert rules[name]["verdict"] == "unverified", rules[name]
    assert (
        "lists no GPU by index (`GPU models and configuration: Could not collect`) and torch found no CUDA"
        in err
    )


def test_vllm_padded_labels_are_read() -> None:
    """vLLM's newer collect_env pads its labels (`GPU models and configuration : `, as in
    vllm-project/vllm-omni#241): vllm#25015's report with its labels so padded in-test."""
    text = VLLM.read_text()
    for label in (
        "Is CUDA available",
        "GPU models and configuration",
        "Nvidia driver version",
        "PyTorch version",
    ):
        text = text.replace(f"{label}:", f"{label:<29}:")
    assert collect_env.looks_like_collect_env(text)
    found, said = collect_env.parts(text)
    kinds = ["nvidia_smi_list", "lscpu", "collect_env_driver", "collect_env_platform"]
    assert [p.kind for p in found] == kinds
    assert found[0].text.count("NVIDIA H20") == 8 and not found[0].partial
    # the padded driver line is read too (round 28: the box's driver, no longer a note)
    assert found[2].text == "550.144.03\n" and not said


def test_collect_env_mig_lines_stay_under_their_gpu(tmp_path: Path) -> None:
    """collect_env prints `nvidia-smi -L` with the UUIDs taken out, so a MIG box shows an
    indented `  MIG 7g.96gb     Device  0:` under each GPU: vllm#25015's report edited in-test
    to 4 GPUs (GPU 4-7 removed), each with such a MIG line. Before, the MIG line ended the GPU
    block, the later GPU lines were read as check_env's torch view (count unverified, blamed on
    CUDA_VISIBLE_DEVICES) and MIG was "not reported"; now 4 of 8 is a shortfall, MIG enabled."""
    text = re.sub(r"GPU [4-7]: NVIDIA H20\n", "", VLLM.read_text())
    text = re.sub(r"(GPU [0-3]: NVIDIA H20\n)", r"\1  MIG 7g.96gb     Device  0:\n", text)
    found, _ = collect_env.parts(text)
    listing = found[0]
    assert listing.kind == "nvidia_smi_list" and not listing.partial
    assert listing.text.count("  MIG 7g.96gb     Device  0:") == 4
    rules, _, code = facts(tmp_path, text, "gpu_model: H20\ngpu_count: 8\n")
    assert rules["gpu_model"]["verdict"] == "pass", rules["gpu_model"]
    assert rules["gpu_count"]["verdict"] == "fail" and rules["gpu_count"]["actual"] == "4 (MIG on: 4 slices)"
    assert rules["mig_mode"]["verdict"] == "warn" and "Enabled" in rules["mig_mode"]["actual"]
    assert code == 1


def test_check_env_mig_slice_name_is_the_gpu_with_mig(tmp_path: Path) -> None:
    """torch names a MIG slice `<GPU name> MIG <profile>`: sglang#24834's check_env edited
    in-test to one such GPU (`GPU 0: NVIDIA B200 MIG 3g.90gb`, its Compute Capability line to
    `GPU 0`). Before, "MIG" in the name failed gpu_model as another product; now the name is the
    GPU's (never a fail), MIG is enabled (warn) and the count is torch's view: at least the one GPU
    it lists, a pass of an order of 1 (round 34: a view hides GPUs, never makes them up)."""
    text = SGLANG.read_text().replace("GPU 0,1,2,3,4,5,6,7: NVIDIA B200", "GPU 0: NVIDIA B200 MIG 3g.90gb")
    text = text.replace("GPU 0,1,2,3,4,5,6,7 Compute", "GPU 0 Compute")
    found, _ = collect_env.parts(text)
    assert found[0].text.splitlines()[:2] == ["GPU 0: NVIDIA B200", "  MIG 3g.90gb     Device  0:"]
    rules, _, _ = facts(tmp_path, text, "gpu_model: B200\ngpu_count: 1\n")
    assert rules["gpu_model"]["verdict"] != "fail", rules["gpu_model"]
    assert "MIG" not in rules["gpu_model"]["actual"]
    assert rules["mig_mode"]["verdict"] == "warn", rules["mig_mode"]
    assert (
        rules["gpu_count"]["verdict"] == "pass" and "CUDA_VISIBLE_DEVICES" in rules["gpu_count"]["actual"]
    ), rules["gpu_count"]


def test_collect_env_in_a_container_given_some_gpus_lists_only_those(tmp_path: Path) -> None:
    """vLLM's report prints the NVIDIA_* variables of where it ran; in a container or pod given
    some GPUs (`NVIDIA_VISIBLE_DEVICES=GPU-<uuid>`, a device plugin's value) nvidia-smi -L lists
    only those: ScaleLLM#288's 1 x A100 report with such an env section appended in-test (a
    blank line, `Environment Variables:`, that line). One of 2 ordered is unverified, never a
    missing GPU; with `NVIDIA_VISIBLE_DEVICES=all` it stays a shortfall fail."""
    env = (
        "\n\nEnvironment Variables:\nNVIDIA_VISIBLE_DEVICES={}\nNVIDIA_DRIVER_CAPABILITIES=compute,utility\n"
    )
    some = SCALELLM.read_text() + env.format("GPU-5da6e67e-fd5a-88fb-7a0e-109c3284f7bf")
    rules, _, _ = facts(tmp_path, some, "gpu_model: A100 80GB PCIe\ngpu_count: 2\n")
    count = rules["gpu_count"]
    assert count["verdict"] == "unverified" and "NVIDIA_VISIBLE_DEVICES=GPU-5da6e67e" in count["actual"]
    rules, _, code = facts(tmp_path, SCALELLM.read_text() + env.format("all"), "gpu_count: 2\n")
    assert rules["gpu_count"]["verdict"] == "fail" and code == 1


def test_collect_env_mig_lines_pasted_without_their_indent() -> None:
    """A paste that loses the indent of collect_env's MIG lines: vllm#25015's report edited
    in-test with `MIG 7g.96gb     Device  0:` unindented under each of its 8 GPU lines. Each GPU
    keeps its MIG line, and the report stays collect_env's (the box's listing, not partial)."""
    text = re.sub(r"(GPU \d: NVIDIA H20\n)", r"\1MIG 7g.96gb     Device  0:\n", VLLM.read_text())
    found, _ = collect_env.parts(text)
    assert found[0].text.count("MIG 7g.96gb") == 8 and found[0].text.count("GPU ") == 8
    assert not found[0].partial


def test_a_report_cut_before_its_gpu_section_is_refused_as_that_report() -> None:
    """vllm#21310's sectioned report under its prompt, cut by the post before its CUDA / GPU
    Info: refused before as "not a recognised command output" (one sign line only); its first
    line, `Collecting environment information...`, says what it is, and the refusal says that
    it names no GPU."""
    from .test_offline_refusals_r13 import refused

    session = (
        REAL.parent
        / "sessions"
        / "collect_env-CUT-before-its-GPU-section__vllm-sectioned-format-rhel8-prompt__vllm-21310.txt"
    )
    said = refused(session)
    assert "this collect_env report holds no output that is judged (it lists no GPU by index" in said, said


POD = (
    Path(__file__).parents[2]
    / "fixtures"
    / "sessions"
    / "collect_env-IN-A-POD-el9-kernel-under-ubuntu-CUT__L40S-openshift-vllm-4462.txt"
)


def test_collect_env_whose_os_is_not_its_kernels_ran_in_a_container(tmp_path: Path) -> None:
    """vllm#4462, as posted: collect_env run inside a vllm/vllm-openai pod (OpenShift), `OS:
    Ubuntu 22.04.3 LTS` on the host's RHEL 9 kernel (`Linux-5.14.0-284.59.1.el9_2.x86_64-...`),
    one L40S. It was read as the box's listing (1 of 1 passed; 1 of 2 a missing GPU); a container
    shares its host's kernel, so a userland of another distribution is a container's view: the
    count is a floor (round 34: a view hides GPUs, never makes them up: 1 of 1 passes, saying
    so), 1 of 2 unverified, a wrong model still fails."""
    rules, _, _ = facts(tmp_path, POD.read_text(), "gpu_model: L40S\ngpu_count: 1\n")
    count = rules["gpu_count"]
    assert count["verdict"] == "pass", count
    assert count["actual"].startswith("1 listed; at least 1 on the box: "), count
    assert "(5.14.0-284.59.1.el9_2.x86_64) was built for: it ran in a container" in count["actual"]
    rules, _, _ = facts(tmp_path, POD.read_text(), "gpu_model: H100\ngpu_count: 2\n")
    assert rules["gpu_model"]["verdict"] == "fail" and rules["gpu_count"]["verdict"] == "unverified"


# vllm#4462's platform line edited to an Ubuntu kernel's, so that only the copied command tells
_UBUNTU_KERNEL = "Linux-5.15.0-136-generic-x86_64-with-glibc2.35"


def _pod_report(command: str) -> str:
    """vllm#4462's report, its words line (`However, Inside of a ... pod, I ran the
    collect_env.py`) and opening fence replaced by `$ COMMAND`, its platform line's kernel an
    Ubuntu one (_UBUNTU_KERNEL)."""
    body = POD.read_text().split("\n", 2)[2]
    body = re.sub(r"Linux-5\.14\.0-\S+", _UBUNTU_KERNEL, body)
    return f"$ {command}\n{body}"


def test_collect_env_exec_d_in_a_pod_is_a_view_of_its_gpus(tmp_path: Path) -> None:
    """The same report under `$ kubectl exec -it vllm-openai-0 -- python collect_env.py` (an edit,
    _pod_report): nvidia-smi -L ran in the pod, so 1 of 2 ordered is unverified, naming the
    command, as round 28 reads nvidia-smi exec'd there (it failed "1 of the 2 ordered GPUs
    missing"). Under `docker run --gpus all ...` the container sees every GPU: still a fail."""
    text = _pod_report("kubectl exec -it vllm-openai-0 -- python collect_env.py")
    rules, _, _ = facts(tmp_path, text, "gpu_model: L40S\ngpu_count: 2\n")
    count = rules["gpu_count"]
    assert count["verdict"] == "unverified", count
    assert (
        "`kubectl exec -it vllm-openai-0 -- python collect_env.py` shows only the GPUs of" in count["actual"]
    )
    text = _pod_report("docker run --rm --gpus all vllm/vllm-openai python3 collect_env.py")
    rules, _, code = facts(tmp_path, text, "gpu_model: L40S\ngpu_count: 2\n")
    assert rules["gpu_count"]["verdict"] == "fail" and code == 1, rules["gpu_count"]


FREE_B = REAL / "free-b__h200-vm.txt"


def _session(report: str, before: bool) -> str:
    """A terminal session pasting `report` under its prompt line, `free -b` (h200-vm's real
    output) before or after it, and a bare prompt at the end."""
    env = "root@gpu:~# python -m torch.utils.collect_env\n" + report.rstrip("\n") + "\n"
    free = "root@gpu:~# free -b\n" + FREE_B.read_text()
    return (free + env if before else env + free) + "root@gpu:~# \n"


@pytest.mark.parametrize("before", [True, False])
def test_collect_env_among_session_commands_is_read_as_the_report(tmp_path: Path, before: bool) -> None:
    """ScaleLLM#288's report pasted as one command's output of a session, `free -b` before or
    after it (edit: the prompt lines and h200-vm's free added). Before, the whole report was
    read as one `topo -m` output (its matrix's header) and its GPU line and driver line were
    not read: gpu_model, gpu_count and min_driver "not judged: no nvidia-smi output was given".
    Now it is read as the report's outputs, named by its prompt line, and merged with free's."""
    rules, err, _ = facts(
        tmp_path,
        _session(SCALELLM.read_text(), before),
        "gpu_model: A100 80GB PCIe\ngpu_count: 1\nmin_driver: '550.54'\nram: 8GB\n",
    )
    assert rules["gpu_model"]["verdict"] == rules["gpu_count"]["verdict"] == "pass", rules["gpu_model"]
    assert (rules["min_driver"]["verdict"], rules["min_driver"]["actual"]) == ("pass", "550.90.07")
    assert rules["ram"]["verdict"] == "pass", rules["ram"]
    assert "(`python -m torch.utils.collect_env`): a collect_env report, read as its GPU list" in err


def test_collect_env_among_session_commands_keeps_its_cut_lscpu(tmp_path: Path) -> None:
    """vllm#25015's report (its lscpu block cut) as a session's command output before `free -b`
    (edit: the prompt lines and h200-vm's free added): its 8 GPU lines are read as the box's
    listing (before: the whole report was read as one output and gpu_count was not judged), and
    its lscpu, cut inside the report, is still unverified, never a pass."""
    rules, err, _ = facts(
        tmp_path, _session(VLLM.read_text(), False), "gpu_model: H20\ngpu_count: 8\ncpu_cores: 112\n"
    )
    assert (rules["gpu_count"]["verdict"], rules["gpu_count"]["actual"]) == ("pass", "8"), rules["gpu_count"]
    assert rules["cpu_cores"]["verdict"] == "unverified" and "cut short" in rules["cpu_cores"]["actual"]


GO_DCGM_L = REAL / "nvidia-smi-L__a100-80gb-pcie__1gpu-1mig-2g.20gb__go-dcgm.txt"
GTX_L = Path(__file__).parents[2] / "fixtures" / "public" / "nvidia-smi-L__gtx-1650__1gpu.txt"


def test_nvidia_smi_l_beside_a_collect_env_of_the_same_gpus_is_read_once(tmp_path: Path) -> None:
    """go-dcgm's real `nvidia-smi -L` of one A100 80GB PCIe (edit: its MIG line left out) and
    ScaleLLM#288's collect_env (`GPU 0: NVIDIA A100 80GB PCIe`, -L's line without the UUID) in
    one session. Before: refused, "a second nvidia_smi_list output ... pass one file per command"
    (exit 2), nothing judged. Now one answer of the box: -L's (with UUIDs) is read, noted; the
    GTX 1650's -L beside the same report (other GPUs: two boxes) is still refused."""
    smi_l = GO_DCGM_L.read_text().splitlines(True)[0]
    text = "$ nvidia-smi -L\n" + smi_l + "$ python -m torch.utils.collect_env\n" + SCALELLM.read_text()
    rules, err, _ = facts(tmp_path, text, "gpu_model: A100 80GB PCIe\ngpu_count: 1\nmin_driver: '550.54'\n")
    assert rules["gpu_model"]["verdict"] == rules["gpu_count"]["verdict"] == "pass", rules["gpu_model"]
    assert rules["min_driver"]["verdict"] == "pass", rules["min_driver"]
    assert "the same GPUs once -L's UUIDs are taken out, the one with UUIDs judged" in err
    other = (
        "$ nvidia-smi -L\n"
        + GTX_L.read_text()
        + "$ python -m torch.utils.collect_env\n"
        + SCALELLM.read_text()
    )
    (tmp_path / "env.txt").write_text(other)
    cmd = [
        sys.executable,
        "-c",
        "from gpuonboard.cli import main; main()",
        "facts",
        str(tmp_path / "env.txt"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    # (refused as a session's two outputs of one kind, each named: never "pass one file per command")
    assert done.returncode == 2 and "are two `nvidia-smi -L` outputs" in done.stderr, done.stderr
    assert "line 1 (`nvidia-smi -L`) and line " in done.stderr and "pass one file" not in done.stderr


A100_TABLE = REAL / "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt"


def _vllm_to_gpu(n: int) -> str:
    """vllm#25015's report cut after its line `GPU {n}: NVIDIA H20` (its other GPUs and every
    line after them gone), with its line end."""
    lines = VLLM.read_text().split("\n")
    return "\n".join(lines[: lines.index(f"GPU {n}: NVIDIA H20") + 1]) + "\n"


def _vllm_elided() -> str:
    """vllm#25015's report with its lines `GPU 4:` to `GPU 7:` replaced by a paste's `...`."""
    lines = VLLM.read_text().split("\n")
    start = lines.index("GPU 4: NVIDIA H20")
    return "\n".join([*lines[:start], "...", *lines[start + 4 :]])


_UNAME = "user@host:~$ uname -r\n5.15.0-105-generic\n"
_CUT_LISTS = {
    # `| head -21` of the report, the next prompt after it
    "head": _UNAME + "user@host:~$ python collect_env.py | head -21\n" + _vllm_to_gpu(3) + "user@host:~$ \n",
    # the file ends inside the report's GPU list (no next prompt)
    "session-ends": _UNAME + "user@host:~$ python collect_env.py\n" + _vllm_to_gpu(3),
    # the report stopped by Ctrl-C (`^C`), then another command (h200-vm's real `free -b`)
    "ctrl-c": _UNAME
    + "user@host:~$ python collect_env.py\n"
    + _vllm_to_gpu(3)
    + "^C\nuser@host:~$ free -b\n"
    + FREE_B.read_text(),
    "elided-session": _UNAME + "user@host:~$ python collect_env.py\n" + _vllm_elided(),
    "single-file-ends": _vllm_to_gpu(3),
    "elided-single-file": _vllm_elided(),
}


@pytest.mark.parametrize("shape", sorted(_CUT_LISTS))
def test_collect_env_gpu_list_cut_short_is_a_partial_listing(tmp_path: Path, shape: str) -> None:
    """vllm#25015's report (8 x H20) with its GPU list cut after `GPU 3:` (edits: the report cut
    there, under `python collect_env.py | head -21` with a next prompt; in a session that ends
    there; followed by `^C` and h200-vm's real `free -b` under its prompt; alone in a file) or
    its `GPU 4:` to `GPU 7:` lines replaced by `...` (in a session, alone): 4 GPUs listed of a
    report whose next line is missing. Before, gpu_count failed "4 of the 8 ordered GPUs
    missing" (a hardware claim from a list cut short); now it is unverified, as `nvidia-smi -L |
    head -4` is."""
    rules, err, _ = facts(tmp_path, _CUT_LISTS[shape], "gpu_model: H20\ngpu_count: 8\n")
    count = rules["gpu_count"]
    assert count["verdict"] == "unverified" and "missing" not in count["detail"], count
    assert "incomplete probe" in count["actual"] and "other GPUs may" in count["actual"], count


def test_collect_env_gpu_list_followed_by_its_next_field_is_whole() -> None:
    """vllm#25015's and ScaleLLM#288's reports as captured: their GPU lines are followed by the
    report's next field (`Nvidia driver version:`, `GPU topology:`), so the list is whole."""
    for text in (VLLM.read_text(), SCALELLM.read_text()):
        found, _ = collect_env.parts(text)
        assert [p.partial for p in found if p.kind == "nvidia_smi_list"] == [""]


def _refused(tmp_path: Path, text: str) -> str:
    """stderr of `gpuonboard facts` refusing one saved file (exit code 2)."""
    (tmp_path / "env.txt").write_text(text)
    cmd = [
        sys.executable,
        "-c",
        "from gpuonboard.cli import main; main()",
        "facts",
        str(tmp_path / "env.txt"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    return done.stderr


@pytest.mark.parametrize("other", ["report", "table"])
def test_collect_env_of_one_host_beside_another_hosts_output_is_refused(tmp_path: Path, other: str) -> None:
    """ScaleLLM#288's report under `user@a:~$ python collect_env.py`, then under `user@b:~$` the
    same report again or a real A100 `nvidia-smi` table (edits: the prompt lines added). Before,
    the report's outputs were read outside the session's checks: the two hosts were judged as
    one box (the table) or refused with "pass one file per command" (the report twice); now
    refused as a session of two hosts, as two `nvidia-smi -L` of two hosts are."""
    second = (
        "user@b:~$ python collect_env.py\n" + SCALELLM.read_text()
        if other == "report"
        else "user@b:~$ nvidia-smi\n" + A100_TABLE.read_text()
    )
    err = _refused(tmp_path, "user@a:~$ python collect_env.py\n" + SCALELLM.read_text() + second)
    assert "ran commands on 2 hosts (a, b)" in err and "pass one file" not in err, err


def test_collect_env_printed_twice_in_a_session_is_read_once(tmp_path: Path) -> None:
    """ScaleLLM#288's report printed twice by `python collect_env.py` in one session (edit: the
    prompt lines added, the report pasted twice). Before: refused, "a second nvidia_smi_list
    output ... pass one file per command"; now read once, the second said to be the same."""
    run = "user@host:~$ python collect_env.py\n" + SCALELLM.read_text()
    rules, err, _ = facts(tmp_path, run + run + "user@host:~$ \n", "gpu_model: A100\ngpu_count: 1\n")
    assert rules["gpu_count"]["verdict"] == "pass", rules["gpu_count"]
    # (of the same answer twice, the later is judged: the box now)
    assert "(collect_env: GPU list): the same output as line " in err and "which is judged" in err, err


def test_two_collect_env_reports_of_a_session_that_differ_are_refused_named(tmp_path: Path) -> None:
    """vllm#25015's report (8 x H20) and ScaleLLM#288's (1 x A100) printed by two commands of
    one session (edit: the prompt lines added). Before: "pass one file per command", a sentence
    for files; now the two outputs are named by their lines and one is to be kept."""
    text = (
        "user@host:~$ python collect_env.py\n"
        + VLLM.read_text()
        + "\nuser@host:~$ python -m torch.utils.collect_env\n"
        + SCALELLM.read_text()
    )
    err = _refused(tmp_path, text)
    assert "(`python collect_env.py`) (collect_env: GPU list) and line " in err, err
    assert "are two `nvidia-smi -L` outputs" in err and "pass one file" not in err, err


def test_collect_env_holding_nothing_judged_beside_a_table_is_a_note(tmp_path: Path) -> None:
    """A real A100 `nvidia-smi` table, then ScaleLLM#288's report cut before its topology and
    edited as on a box where torch found no CUDA (`Is CUDA available: False`, `GPU models and
    configuration: Could not collect`; edit: the prompt lines added). Before: the whole session
    was refused ("this collect_env report holds no output that is judged"); now the report is
    said in a note and the table judged."""
    lines = SCALELLM.read_text().split("\n")
    report = "\n".join(
        lines[: lines.index("GPU topology: GPU0      CPU Affinity    NUMA Affinity   GPU NUMA ID")]
    )
    report = report.replace("Is CUDA available: True", "Is CUDA available: False").replace(
        "GPU models and configuration: GPU 0: NVIDIA A100 80GB PCIe",
        "GPU models and configuration: Could not collect",
    )
    text = (
        "root@box:~# nvidia-smi\n"
        + A100_TABLE.read_text()
        + "root@box:~# python -m torch.utils.collect_env\n"
        + report
        + "\nNvidia driver version: 550.90.07\nroot@box:~# \n"
    )
    rules, err, _ = facts(tmp_path, text, "gpu_model: A100\ngpu_count: 1\n")
    assert rules["gpu_count"]["verdict"] == rules["gpu_model"]["verdict"] == "pass", rules["gpu_count"]
    assert "this collect_env report holds no output that is judged" in err and "not read" in err, err
