"""Another tool's own lines stamped with an ISO time (Go's zap logger under `olares-cli gpu
status`, `docker logs -t`, `kubectl logs --timestamps`, an application's log) are no kernel log:
an ISO time is no kernel's mark; dmesg's own (`--time-format=iso`, a comma and six digits) or an
ISO time before a line of the kernel's shape is. Before, a session holding such lines beside
nvidia-smi's passed gpu_xid and nvswitch_sxid on a log that was never given (measure32c 10).

Real captures: tests/fixtures/sessions/SOURCES.md (beclab/Olares#2398) and
tests/fixtures/real/SOURCES.md (the A16's `nvidia-smi -L`, gpud's dmesg in ISO time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.offline import detect_kind

from ..offline_judge import verdicts

FIXTURES = Path(__file__).parents[2] / "fixtures"
OLARES = (
    FIXTURES
    / "sessions"
    / (
        "transcript__olares-cli-gpu-status-ISO-STAMPED-LINES+nvidia-smi-CUT-in-header__wsl-591.74-olares-2398.txt"
    )
)
LISTING = (FIXTURES / "real" / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt").read_text()
DMESG_ISO = FIXTURES / "real" / "dmesg-time-format-iso__xid-48-63-94__peermem__gpud.txt"
ORDER = "gpu_model: A16\ngpu_count: 4\n"

# other tools' lines of the class, each under its command (test inputs of their documented shapes)
OTHER_TOOLS = {
    # the real capture's olares-cli lines (zap: milliseconds, an offset without its colon)
    "olares-cli": ("olares-cli gpu status", OLARES.read_text().split("\n")[2:10]),
    # `docker logs -t`: RFC 3339 with nanoseconds, `Z`
    "docker-logs-t": (
        "docker logs -t trainer",
        [
            "2024-05-01T12:00:00.123456789Z epoch 1 step 100 loss 2.31",
            "2024-05-01T12:00:05.223456789Z epoch 1 step 200 loss 2.02",
            "2024-05-01T12:00:10.323456789Z saved checkpoint /ckpt/step200.pt",
        ],
    ),
    # `kubectl logs --timestamps`, the device plugin's own lines (klog after the stamp)
    "kubectl-logs": (
        "kubectl logs --timestamps nvidia-device-plugin-daemonset-x7k2p -n kube-system",
        [
            "2024-05-01T12:00:00.123456789Z I0501 12:00:00.123456       1 main.go:256] Retreiving plugins.",
            "2024-05-01T12:00:00.223456789Z I0501 12:00:00.223456       1 server.go:216] Starting GRPC",
            "2024-05-01T12:00:00.323456789Z I0501 12:00:00.323456       1 server.go:147] Registered",
        ],
    ),
    # an application's own log with ISO times and offsets
    "app-log": (
        "tail -3 /var/log/app/train.log",
        [
            "2024-05-01T12:00:00+02:00 INFO worker 0 started on cuda:0",
            "2024-05-01T12:00:01+02:00 WARNING NCCL_P2P_DISABLE is set",
            "2024-05-01T12:00:02+02:00 ERROR rank 3 timed out after 1800 s",
        ],
    ),
}


def test_the_olares_session_passes_no_kernel_log_rule(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "session.txt", OLARES.read_text())
    assert "gpu_xid" not in got and "nvswitch_sxid" not in got, got


@pytest.mark.parametrize("tool", sorted(OTHER_TOOLS))
def test_iso_stamped_lines_of_another_tool_are_no_kernel_log(tool: str) -> None:
    assert detect_kind("\n".join(OTHER_TOOLS[tool][1]) + "\n") != "kernel_log"


@pytest.mark.parametrize("tool", sorted(OTHER_TOOLS))
def test_iso_stamped_lines_beside_nvidia_smi_pass_no_xid_rule(tmp_path: Path, tool: str) -> None:
    """The tool's lines under their prompt, then `nvidia-smi -L` under its: the listing is read,
    the tool's lines are said not read, and no Xid rule is judged on them."""
    command, lines = OTHER_TOOLS[tool]
    text = "\n".join([f"root@box:~# {command}", *lines, "root@box:~# nvidia-smi -L", LISTING.rstrip("\n")])
    got = verdicts(tmp_path, "session.txt", text + "\n", ORDER)
    assert "gpu_xid" not in got and "nvswitch_sxid" not in got, got
    assert got["gpu_count"][0] == "pass", got


def test_dmesg_in_iso_time_is_still_a_kernel_log(tmp_path: Path) -> None:
    assert detect_kind(DMESG_ISO.read_text()) == "kernel_log"
    assert verdicts(tmp_path, "dmesg.txt", DMESG_ISO.read_text())["gpu_xid"][0] == "fail"


def test_iso_stamped_kernel_shaped_lines_are_a_kernel_log() -> None:
    """Edit: gpud's dmesg lines with zap's stamp instead of dmesg's: the NVRM and nvidia-peermem
    lines are the kernel's by their shape, whatever the stamp."""
    lines = [line.split(" ", 1)[1] for line in DMESG_ISO.read_text().splitlines() if " " in line]
    text = "".join(f"2024-11-15T05:39:15.491-0600 {line}\n" for line in lines)
    assert detect_kind(text) == "kernel_log"
