"""Round 33's host-side captures (measure33b): each output of the box read as what it is, and
each sentence true of the output given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
KATA = SESSIONS / (
    "page__docker-version-LABELLED+docker-info-LABELLED-CUT__18.03-kata-runtime__kata-tests-754.txt"
)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _said(r: subprocess.CompletedProcess[str]) -> str:
    return " ".join(r.stderr.split())


def test_a_docker_version_and_a_docker_info_in_one_file_are_each_read(tmp_path: Path) -> None:
    """kata-containers/tests#754 pastes `docker version` then `docker info` under labels: refused,
    exit 2, as "two docker info outputs" (measure33b 39); each is now read as itself."""
    r = cli(str(KATA))
    said = _said(r)
    assert r.returncode == 0, said
    assert "two docker info outputs" not in said
    assert "docker version: client 18.03.0-ce, engine 18.03.0-ce; it lists no runtime" in said
    assert "docker info: docker 18.03.0-ce; runtimes kata-runtime, runc (default kata-runtime)" in said


def test_a_docker_version_and_a_docker_info_in_two_files_are_each_read(tmp_path: Path) -> None:
    """The same two outputs split into two files were refused as "a second docker info output"."""
    lines = KATA.read_text().splitlines(keepends=True)
    info = next(i for i, line in enumerate(lines) if "`docker info`" in line)
    (tmp_path / "docker-version.txt").write_text("".join(lines[1:info]))
    (tmp_path / "docker-info.txt").write_text("".join(lines[info + 1 :]) + "\n")
    r = cli(f"{tmp_path / 'docker-version.txt'},{tmp_path / 'docker-info.txt'}")
    said = _said(r)
    assert r.returncode == 0, said
    assert "second docker info output" not in said
    assert "docker version: client 18.03.0-ce" in said and "docker info: docker 18.03.0-ce" in said


def test_two_docker_versions_are_still_two_outputs_of_one_kind(tmp_path: Path) -> None:
    """Two `docker version` outputs in one folder stay refused as two of one kind (one may be
    another box's): only docker version beside docker info is two commands."""
    lines = KATA.read_text().splitlines(keepends=True)
    info = next(i for i, line in enumerate(lines) if "`docker info`" in line)
    version = "".join(lines[1:info])
    (tmp_path / "a-docker-version.txt").write_text(version)
    (tmp_path / "b-docker-version.txt").write_text(version.replace("18.03.0-ce", "18.06.1-ce"))
    r = cli(str(tmp_path))
    assert r.returncode == 2, _said(r)
    assert "docker version" in _said(r)


SI16 = SESSIONS / (
    "transcript__lsblk-version+lsblk-bo-ONE-COLUMN-PER-COMMAND-CUT__util-linux-ng-2.17.2__systeminformation-16.txt"
)


def test_each_command_of_an_lsblk_session_is_said_as_what_it_printed() -> None:
    """systeminformation#16's session, one `lsblk -bo COLUMN` per command on util-linux-ng 2.17.2:
    refused rightly, but "no output below it" was said of `lsblk --version` (its version line is
    below it) and of `lsblk -bo TRAN` (`lsblk: unknown column: TRAN` is), and the ROTA column's
    eight `   1` were "line number(s) alone: a CI log viewer's gutter" (measure33b 19)."""
    r = cli(str(SI16))
    said = _said(r)
    assert r.returncode == 2, said
    assert "no output below it" not in said and "gutter" not in said, said
    assert "lsblk's version line (`lsblk from util-linux-ng 2.17.2`)" in said
    assert (
        "line 84 (`lsblk -bo TRAN`): a copied command line (`lsblk -bo TRAN`) whose output is only the"
        " tool's own message (`lsblk: unknown column: TRAN`)"
    ) in said
    assert "line 64 (`lsblk -bo ROTA`): this tool reads lsblk's output but could not read" in said


def test_a_tool_s_message_alone_is_said_as_such(tmp_path: Path) -> None:
    """The same message saved without its command was "an empty file"."""
    (tmp_path / "lsblk.txt").write_text("lsblk: unknown column: TRAN\n")
    said = _said(cli(str(tmp_path / "lsblk.txt")))
    assert "an empty file" not in said
    assert "only the tool's own message (`lsblk: unknown column: TRAN`)" in said


def test_lscpu_s_numa_section_alone_names_the_whole_lscpu_to_save(tmp_path: Path) -> None:
    """xpu-perf#129 pastes a GH200's lscpu `NUMA:` section alone: "not a recognised command
    output", where the documented sentence names the whole `lscpu` to save (measure33b 25)."""
    name = "lscpu-numa-section-only__gh200-9-nodes-8-cpu-less__xpu-perf-129.txt"
    (tmp_path / "lscpu.txt").write_text((REAL / name).read_text())
    r = cli(str(tmp_path / "lscpu.txt"))
    said = _said(r)
    assert r.returncode == 2
    assert "an `lscpu` without its first lines" in said and "save the whole `lscpu` of the box" in said


def test_a_flat_lscpu_cut_before_its_core_count_is_worded_for_its_layout(tmp_path: Path) -> None:
    """vllm#16905's collect_env holds the flat lscpu (`Thread(s) per core:` at the margin), cut in
    `Core(s) per s`: unverified rightly, but said to end "inside a CPU type's block", which a flat
    lscpu does not print (measure33b 30, 32)."""
    name = "collect_env__1x-h100-pcie__driver535.230.02__flat-lscpu-cut-in-core-count__vllm-16905.txt"
    (tmp_path / "collect_env.txt").write_text((REAL / name).read_text())
    spec = tmp_path / "order.yml"
    spec.write_text("cpu_cores: 64\n")
    r = cli(str(tmp_path / "collect_env.txt"), "--order", str(spec), "--json")
    cores = {c["name"]: c for c in json.loads(r.stdout)["rules"]}["cpu_cores"]
    assert cores["verdict"] == "unverified", cores
    assert "CPU type's block" not in cores["detail"], cores
    assert "it ends among the lines lscpu prints after a Model name line" in cores["detail"], cores


def test_free_s_header_words_are_read_in_any_case(tmp_path: Path) -> None:
    """Hyperflex-Hypercheck#10's `free -m` with the poster's capitalised `Total` (and bold markers,
    under a prompt with no `$`/`#`) was "not a recognised command output"; with `total` the same
    file was read (measure33b 29): header words are free's in any case."""
    name = "free-m__old-procps-capitalised-total-header__bold-markers-no-swap__hyperflex-hypercheck-10.txt"
    (tmp_path / "free.txt").write_text(
        "root@SpringpathControllerOKDOHIFZYH:free -m\n" + (REAL / name).read_text()
    )
    spec = tmp_path / "order.yml"
    spec.write_text("ram: 48GB\n")
    r = cli(str(tmp_path / "free.txt"), "--order", str(spec), "--json")
    assert r.stdout, _said(r)
    ram = {c["name"]: c for c in json.loads(r.stdout)["rules"]}["ram"]
    assert ram["verdict"] == "pass" and ram["actual"].startswith("47.2 GiB"), ram


def test_two_nvcc_outputs_in_one_file_are_both_said() -> None:
    """pytorch/builder#580 pastes `nvcc --version` of CUDA 11.1 and of 11.0: read silently as
    cuda_toolkit 11.1.105, the second dropped (measure33b 23); both are said. Since round 39 each
    is under its label line naming the command in inline code (`Output of `nvcc --version` on
    CUDA 11.1:`), a session of two such outputs: refused naming both lines, one to keep."""
    r = cli(str(SESSIONS / "page__nvcc-version-x2-LABELLED__cuda-11.1+11.0__pytorch-builder-580.txt"))
    assert r.returncode == 2, _said(r)
    said = _said(r)
    assert "line 1 (`nvcc --version`) and line 9 (`nvcc --version`) are two `nvcc --version` outputs" in said
    assert "keep one of them in the file" in said


def test_a_vm_slice_of_a_many_core_model_is_advised_as_one(tmp_path: Path) -> None:
    """cpufetch#365: a KVM guest's lscpu (12 vCPUs of an AMD EPYC 9645 96-Core, 1 core a socket,
    12 sockets), its Hypervisor vendor line cut away: the FAIL for 96 cores advised "a smaller CPU
    model or fewer sockets", of the 96-core model (measure33b 01); the model's cores and lscpu's
    are named, as a VM's vCPUs (or cores disabled)."""
    name = "lscpu__amd-epyc-9645-kvm-12vcpu-1-core-per-socket__cut-after-bogomips__cpufetch-365.txt"
    (tmp_path / "lscpu.txt").write_text((REAL / name).read_text())
    spec = tmp_path / "order.yml"
    spec.write_text("cpu_cores: 96\n")
    r = cli(str(tmp_path / "lscpu.txt"), "--order", str(spec), "--json")
    cores = {c["name"]: c for c in json.loads(r.stdout)["rules"]}["cpu_cores"]
    assert cores["verdict"] == "fail" and r.returncode == 1, cores
    assert "a smaller CPU model" not in cores["detail"], cores
    assert (
        "the AMD EPYC 9645 96-Core Processor holds 96 cores a socket, lscpu shows 1 per socket"
        in (cores["detail"])
    )
    assert "a virtual machine given 12 vCPUs" in cores["detail"], cores
