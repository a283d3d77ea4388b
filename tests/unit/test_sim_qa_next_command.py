"""`sim.up` ends with the command to run next, ready to paste."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.testing.sim import next_command


def test_the_next_command_names_the_sims_inventory_relative_and_quoted() -> None:
    cwd = Path("/home/me/my project")
    inv = cwd / ".gpuonboard" / "sim" / "inventory"
    assert (
        next_command("demo-a100", inv, cwd)
        == "invoke check --host demo-a100 --inventory .gpuonboard/sim/inventory"
    )
    assert next_command("h1", Path("/tmp/my sims/inventory"), cwd, "gpuonboard") == (
        "gpuonboard check --host h1 --inventory '/tmp/my sims/inventory'"
    )
