"""A WSL2 guest found by its signs (guest.wsl_sign): foreign_processes reads no list there, since
its memory and utilisation count the Windows host's own use of the card and it lists none of the
host's processes (measure40d 20: microsoft/WSL #9962's Quadro RTX 4000 at P8 with 2 GiB used
failed foreign_processes); and a collect_env report's `Python platform:` line names the kernel, a
WSL2 guest's (measure40d 04: vLLM #9293's report, virtualization "not reported")."""

from __future__ import annotations

from pathlib import Path

from ....offline_judge import checks, verdicts

REAL = Path(__file__).parents[4] / "fixtures" / "real"
WSL_TABLE = (
    "session__wsl-version-then-docker-run-gpus-nvidia-smi__quadro-rtx4000-driver527.27-smi525.60.07"
    "-2gib-used-no-processes__cut__wsl-9962.txt"
)
WSL_ENV = (
    "collect_env__rtx4070-laptop__driver551.88__platform-microsoft-standard-wsl2__lscpu-cut__vllm-9293.txt"
)
H100_ENV = "collect_env__1x-h100-pcie__driver535.230.02__flat-lscpu-cut-in-core-count__vllm-16905.txt"
TABLE_ORDER = "gpu_model: Quadro RTX 4000\ngpu_count: 1\nvram: 8GB\n"


def test_the_windows_hosts_use_on_a_wsl2_guest_is_no_foreign_job(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "s.txt", (REAL / WSL_TABLE).read_text(), TABLE_ORDER)
    assert got["virtualization"][0] == "warn" and "WSL2 guest" in got["virtualization"][1]
    assert got["foreign_processes"][0] == "unverified"
    assert "2.0 GiB used, no process listed, on a WSL2 guest (driver 527.27" in got["foreign_processes"][1]


def test_the_same_table_of_a_linux_driver_still_fails(tmp_path: Path) -> None:
    """The same figures under a Linux driver (nvidia-smi's and the driver's version one): no WSL2
    sign, a GPU driving no display with 2 GiB held, its list cut away: fails as before."""
    linux = "Driver Version: 525.60.07  "
    text = (REAL / WSL_TABLE).read_text().replace("Driver Version: 527.27      ", linux)
    assert "Driver Version: 525.60.07" in text
    got = verdicts(tmp_path, "s.txt", text, TABLE_ORDER)
    assert got["virtualization"][0] != "warn"
    assert got["foreign_processes"][0] == "fail"


def test_a_wsl2_collect_env_reports_its_kernel_and_warns(tmp_path: Path) -> None:
    order = "gpu_model: RTX 4070 Laptop\ngpu_count: 1\n"
    got = verdicts(tmp_path, "env.txt", (REAL / WSL_ENV).read_text(), order)
    assert got["virtualization"] == ("warn", "WSL2 guest (kernel 5.15.153.1-microsoft-standard-WSL2)")
    assert got["gpu_count"][0] == "pass"


def test_another_collect_envs_platform_line_reads_as_its_kernel(tmp_path: Path) -> None:
    """vLLM #16905's H100 report: its platform line's release is read (no WSL2 sign); the same
    report with a WSL2 kernel's release warns."""
    text = (REAL / H100_ENV).read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("Python platform:"))
    release = line.split("Linux-", 1)[1].rsplit("-x86_64", 1)[0]
    order = "gpu_model: H100\ngpu_count: 1\n"
    got = {c.name: c for c in checks(tmp_path, "env.txt", text, order)}
    assert "WSL2" not in got["virtualization"].actual
    wsl = text.replace(release, "5.15.167.4-microsoft-standard-WSL2")
    assert verdicts(tmp_path, "env.txt", wsl, order)["virtualization"] == (
        "warn",
        "WSL2 guest (kernel 5.15.167.4-microsoft-standard-WSL2)",
    )
