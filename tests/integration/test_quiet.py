"""`--quiet` prints nothing but errors: a failed or unreachable host is still named (on stderr),
an ok host is not, and stdout stays empty."""

from __future__ import annotations

from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def test_quiet_names_each_failed_and_unreachable_host_on_stderr_only(
    project: Project, pool: TestHostPool
) -> None:
    addr, port = pool.unreachable_address()
    project.write_inventory(
        {
            "good": host_entry(pool.hosts["good"], pool),
            "gone": {"address": addr, "port": port, "key_file": str(pool.client_key)},
            "rtx": host_entry(pool.hosts["rtx"], pool),
        }
    )
    r = project.cli("check", "--quiet", "--connect-retries", "0")
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert f"error: gone: unreachable: host gone ({addr}:{port}) is unreachable: connection refused;" in (
        r.stderr
    )
    rtx = [line for line in lines if line.startswith("error: rtx: ")]
    assert len(rtx) == 1 and rtx[0].startswith("error: rtx: acceptance: failed: "), lines
    assert "gpu_model" in rtx[0], rtx  # (the RTX 4090 box was ordered as an A100 box)
    assert not [line for line in lines if "good" in line.split(":")[1]], lines
    # the same run without --quiet: the step lines and the recap go to stdout, no error lines
    loud = project.cli("check", "--connect-retries", "0")
    assert loud.returncode == 1 and "error:" not in loud.stderr and "rtx" in loud.stdout
