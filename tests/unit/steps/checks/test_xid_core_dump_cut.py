"""A kernel log that ends inside the driver's core dump of a GPU microcontroller (`NVRM:
kflcnCoreDumpNondestructive_IMPL: TRACE: NN = 0x...`, open-gpu-kernel-modules#446's shape, lines
written by the test): since round 40 the dump itself is a fault (the driver prints it in its GSP
timeout report: measure40c 13), so gpu_xid fails, and its sentence still says the log is cut."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import verdicts

DUMP = (
    "".join(
        f"[ 8123.29{n:04d}] NVRM: kflcnCoreDumpNondestructive_IMPL: TRACE: {n:02d} = 0x0000000005c3{n:04x}\n"
        for n in range(8, 17)
    )
    + "[ 8123.291791] NVRM: kflcnCoreDumpNondestructive_IMPL: TRACE: 17 = 0x0000000"
)


def test_a_log_cut_inside_a_gsp_core_dump_names_it(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "dmesg.txt", DUMP)["gpu_xid"]
    assert verdict == "fail", actual
    assert "GSP firmware timeout (the GSP's core dump" in actual
    assert "the log ends inside a line, cut short: 'NVRM: kflcnCoreDumpNondestructive_IMPL: TRACE: 17" in (
        actual
    )
