"""Host outputs a launcher ran (`srun -p a64fx lscpu`, `pdsh -w n[1-4] free -g`: api/narrowed.py
ran_elsewhere, steps/checks/launched.py): another node's answer, never the box's (measure38d 05),
as nvidia-smi's already were; and a `free` table whose Swap total, read as MiB, is over 256 GiB:
KiB stays a reading, even below the RAM floor, but never the only one (facts/memory.py
_free_unit; measure38d 22, review S F1)."""

from __future__ import annotations

from pathlib import Path

from ..offline_judge import checks, verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
SRUN_05 = "session__srun-p-a64fx-lscpu__quoted-cluster-node__libxsmm-737.txt"
FREE_22 = "free__old-pc-245mib-kib-swap-561mib__unit-flag-only-in-prose__rpimonitor-89.txt"
FREE_M = "free-m__devcontainer-110gib__vit-notes.txt"


def _unquoted(text: str) -> str:
    return "\n".join(line.removeprefix("> ") for line in text.splitlines()) + "\n"


def test_srun_lscpu_is_a_node_slurm_chose_not_the_box(tmp_path: Path) -> None:
    text = (REAL / SRUN_05).read_text(encoding="utf-8")
    for copy in (text, _unquoted(text)):
        got = {c.name: c for c in checks(tmp_path, "lscpu.txt", copy, "cpu_cores: 48\n")}
        cpu = got["cpu_cores"]
        assert cpu.verdict == "unverified", cpu
        assert "ran on a node Slurm chose" in cpu.actual and "lscpu" in cpu.actual, cpu
        assert "save `lscpu` run in the box's own shell" in cpu.detail, cpu


def test_each_launcher_and_host_output_is_that_calls_own(tmp_path: Path) -> None:
    lscpu = _unquoted((REAL / SRUN_05).read_text(encoding="utf-8")).split("\n", 1)[1]
    free = (REAL / FREE_M).read_text(encoding="utf-8")
    cases = [
        (f"[u@login01 ~]$ pdsh -w node01 lscpu\n{lscpu}", "cpu_cores: 48\n", "cpu_cores", "pdsh"),
        (f"[u@login01 ~]$ salloc -N1 lscpu\n{lscpu}", "cpu_cores: 48\n", "cpu_cores", "Slurm"),
        (f"[u@login01 ~]$ srun -p gpu free -m\n{free}", "ram: 100GB\n", "ram", "Slurm"),
        (f"[u@login01 ~]$ apptainer exec img.sif free -m\n{free}", "ram: 100GB\n", "ram", "container"),
    ]
    for text, order, rule, said in cases:
        got = verdicts(tmp_path, "session.txt", text, order)
        assert got[rule][0] == "unverified" and said in got[rule][1], (text[:40], got[rule])
    # (the login's own shell: judged as the box's)
    own = verdicts(tmp_path, "session.txt", f"[u@login01 ~]$ free -m\n{free}", "ram: 100GB\n")
    assert own["ram"][0] == "pass", own


def test_srun_lscpu_beside_the_boxs_own_is_a_note(tmp_path: Path) -> None:
    lscpu = _unquoted((REAL / SRUN_05).read_text(encoding="utf-8")).split("\n", 1)[1]
    own = lscpu.replace("CPU(s):              48", "CPU(s):              16").replace(
        "Core(s) per cluster: 12", "Core(s) per cluster: 4"
    )
    text = f"[u@a64n97 ~]$ lscpu\n{own}[u@a64n97 ~]$ srun -p a64fx lscpu\n{lscpu}"
    got = verdicts(tmp_path, "session.txt", text, "cpu_cores: 48\n")
    assert got["cpu_cores"][0] == "fail" and got["cpu_cores"][1].startswith("16 cores"), got["cpu_cores"]


def test_a_plain_free_whose_swap_and_ram_floor_disagree_is_both_readings(tmp_path: Path) -> None:
    """measure38d 22: `Mem: 251348` is below the RAM floor in KiB (245.5 MiB), its `Swap: 574552`
    over 256 GiB of swap in MiB. Neither reading is ruled out, so the RAM is the range between
    them under any name (review S F1): a fail only where both fail, never a guess."""
    text = (REAL / FREE_22).read_text(encoding="utf-8")
    table = text.split("\n", 1)[1]
    respaced = table.replace("      ", "   ")
    copies = (("free-arch.txt", text), ("mem.txt", table), ("free.txt", table), ("out.txt", respaced))
    for name, copy in copies:
        verdict, actual = verdicts(tmp_path, name, copy, "ram: 1GB\n")["ram"]
        assert verdict == "unverified", (name, actual)
        assert actual.startswith("245.5 MiB (257.4 MB) as plain free (KiB), 245.5 GiB as free -m"), (
            name,
            actual,
        )
        assert verdicts(tmp_path, name, copy, "ram: 512GB\n")["ram"][0] == "fail", name
        assert verdicts(tmp_path, name, copy, "ram: 200MB\n")["ram"][0] == "pass", name
    # (its flag named: each reading as it is)
    assert verdicts(tmp_path, "free-k.txt", table, "ram: 1GB\n")["ram"][0] == "fail"
    assert verdicts(tmp_path, "free-m.txt", table, "ram: 1GB\n")["ram"][0] == "pass"


def test_a_real_free_m_with_big_swap_is_never_read_in_kib(tmp_path: Path) -> None:
    """A `free -m` saved without its command whose Swap total is over 256 GiB (a big box given swap
    equal to its RAM): its MiB reading is kept, the RAM unverified where the readings disagree
    (review S F1: it failed 195.3 MiB / 1007.5 MiB)."""
    free_m = (REAL / FREE_M).read_text(encoding="utf-8")
    header = free_m.splitlines()[0]
    tables = {
        "192GB": f"{header}\nMem: 200000 60264 14892 204 124844 136928\nSwap: 300000 1560 298440\n",
        "1TB": f"{header}\nMem: 1031710 60264 14892 204 124844 136928\nSwap: 1048575 1560 1047015\n",
    }
    for order, table in tables.items():
        for name in ("mem.txt", "free.txt"):
            verdict, actual = verdicts(tmp_path, name, table, f"ram: {order}\n")["ram"]
            assert verdict == "unverified" and "GiB as free -m" in actual, (name, order, actual)
        assert verdicts(tmp_path, "free-m.txt", table, f"ram: {order}\n")["ram"][0] == "pass", order
