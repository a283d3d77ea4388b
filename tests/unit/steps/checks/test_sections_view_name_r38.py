"""A `nvidia-smi -q -d SECTION` view (measure38b 09: `-q -d PERFORMANCE`) prints only the
sections asked for, never the GPU's name: gpu_model stays unverified, saying the view prints no
name and what to save beside it (`nvidia-smi -L`), never an incomplete probe to rerun with a
look at `dmesg` for Xid errors. The family: the kept `-q -d ECC` of 2 A100s, and the same view
as `-q -x -d PERFORMANCE`. Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
PERFORMANCE = (
    "nvidia-smi-q-d-performance__geforce-rtx-3080__1gpu__driver495.44__copied-command-idle-active"
    "__mangohud-636.txt"
)
ECC = "nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt"


def _model(tmp_path: Path, name: str, order: str, text: str | None = None) -> tuple[str, str, str]:
    text = (REAL / name).read_text(encoding="utf-8") if text is None else text
    [c] = [c for c in checks(tmp_path, name, text, order) if c.name == "gpu_model"]
    return c.verdict, c.actual, c.detail


def _says_view(row: tuple[str, str, str], sections: str) -> None:
    verdict, actual, detail = row
    assert verdict == "unverified", actual
    assert (
        f"a view of some sections of `nvidia-smi -q` (`-q -d ...`: {sections}), which prints no GPU name"
        in actual
    )
    assert "`nvidia-smi -L`" in detail, detail
    assert "Xid" not in detail and "incomplete probe" not in actual, (actual, detail)


def test_a_performance_view_says_it_prints_no_name(tmp_path: Path) -> None:
    row = _model(tmp_path, PERFORMANCE, "gpu_model: GeForce RTX 3080\ngpu_count: 1\n")
    _says_view(row, "Performance State, Clocks Throttle Reasons")


def test_the_family_an_ecc_view_of_two_gpus(tmp_path: Path) -> None:
    _says_view(_model(tmp_path, ECC, "gpu_model: A100\ngpu_count: 2\n"), "ECC Mode, ECC Errors")


def test_the_same_view_as_xml(tmp_path: Path) -> None:
    xml = (
        '<?xml version="1.0" ?>\n<nvidia_smi_log>\n\t<driver_version>495.44</driver_version>\n'
        "\t<attached_gpus>1</attached_gpus>\n"
        '\t<gpu id="00000000:0E:00.0">\n\t\t<performance_state>P0</performance_state>\n'
        "\t\t<clocks_throttle_reasons>\n"
        "\t\t\t<clocks_throttle_reason_gpu_idle>Active</clocks_throttle_reason_gpu_idle>\n"
        "\t\t</clocks_throttle_reasons>\n\t</gpu>\n</nvidia_smi_log>\n"
    )
    row = _model(tmp_path, "perf.xml", "gpu_model: GeForce RTX 3080\ngpu_count: 1\n", xml)
    _says_view(row, "performance_state, clocks_throttle_reasons")


def test_a_record_that_names_its_gpu_is_judged(tmp_path: Path) -> None:
    """The view with the whole -q's Product Name line in its record: judged, no view said."""
    text = (
        (REAL / PERFORMANCE)
        .read_text(encoding="utf-8")
        .replace(
            "    Performance State",
            "    Product Name                          : NVIDIA GeForce RTX 3080\n    Performance State",
        )
    )
    verdict, actual, _ = _model(tmp_path, "named.txt", "gpu_model: GeForce RTX 3080\ngpu_count: 1\n", text)
    assert verdict == "pass" and "view" not in actual, actual


A10 = "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"


def test_a_whole_record_without_its_name_is_no_sections_view(tmp_path: Path) -> None:
    """Review N F4: the real A10 `-q` with its `Product Name` left blank, or its line dropped:
    the whole record (brand, architecture, PCI ...), its name not read, never a `-q -d` view."""
    text = (REAL / A10).read_text(encoding="utf-8")
    name = next(line for line in text.splitlines() if line.strip().startswith("Product Name"))
    for edited in (text.replace(name, name.split(":")[0] + ":"), text.replace(name + "\n", "")):
        verdict, actual, detail = _model(tmp_path, A10, "gpu_model: A10\ngpu_count: 1\n", edited)
        assert verdict == "unverified", actual
        assert "the name of 1 GPU(s) was not read" in actual, actual
        assert "a view of some sections" not in actual and "prints no GPU name" not in actual, actual
