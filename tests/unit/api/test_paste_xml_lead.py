"""An `nvidia-smi -q -x` with white space above its `<?xml` line (a blank line a page needs after
a `<details>` section's `</summary>`, a session's blank line after the prompt, a `\\r`, an indent,
a byte-order mark) is read as the XML itself (facts/nvidia_smi/xml_q.py `_declaration_dropped`);
an XML the parser cannot read is refused with what the parser found, and "cut short" only for a
cut (api/unreadable.py `_xml_refusal`).

Found by the truth sweep, round 32 (measure32a 12): netdata/netdata#2759's `-q -x` of a GeForce
8800 GT, pasted inside `<details>` with the blank line GitHub needs, was refused: "this nvidia-smi
XML cannot be read (XML not parseable: XML or text declaration not at start of entity: line 2,
column 0); the file is cut short or damaged"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NETDATA = (
    REAL
    / "nvidia-smi-q-x__geforce-8800-gt__1gpu__driver340.102__details-blank-line-fence__cut__netdata-2759.xml"
)
H200 = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
# every real -q -x that opens with its declaration (a stray backtick's and the netdata paste's
# have their own tests)
XMLS = sorted(
    p.name for p in REAL.glob("nvidia-smi-q-x__*.xml") if p.read_text(encoding="utf-8").startswith("<?xml")
)
ORDER = "gpu_count: 1\nmin_driver: '470.57'\ninterconnect: nvlink\n"

LEADS: dict[str, Callable[[str], str]] = {
    "blank-line": lambda t: "\n" + t,
    "blank-lines-with-spaces-and-a-tab": lambda t: "  \n\t\n" + t,
    "indented-declaration": lambda t: "   " + t,
    "bom-then-blank-line": lambda t: "\ufeff\n" + t,
    "crlf-then-blank-line": lambda t: "\r\n" + t.replace("\n", "\r\n"),
    "prompt-then-blank-line": lambda t: "$ nvidia-smi -q -x\n\n" + t,
    "details-blank-line-fence":
        lambda t: "<details>\n <summary>XML output</summary>\n\n```xml\n" + t + "```\n</details>\n",
    "session-then-blank-line": lambda t: "user@gpu01:~$ nvidia-smi -q -x\n\n" + t + "user@gpu01:~$ exit\n",
}  # fmt: skip


def _judged(folder: Path, name: str, text: str, order: str) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of `text` saved byte for byte as `name` (a UsageError raised)."""
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8", newline="")
    (folder / "order.yml").write_text(order)
    facts = offline.parse_facts(offline.load_outputs([str(folder / name)]))
    spec = offline.load_order(str(folder / "order.yml"))
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, spec)}


def test_the_netdata_xml_pasted_in_details_with_a_blank_line_is_read_as_cut(tmp_path: Path) -> None:
    """The real paste as the pull request stores it (`<details>`, the summary, the blank line, the
    fence, cut after `<pci_device_id>`): the GPU is read (driver, model, count), not refused."""
    got = verdicts(
        tmp_path,
        "nvidia-smi.xml",
        NETDATA.read_text(),
        "gpu_model: 8800 GT\ngpu_count: 1\nmin_driver: '340'\n",
    )
    assert got["nvidia_driver"][0] == "pass", got["nvidia_driver"]
    assert got["gpu_model"] == ("pass", "1 x GeForce 8800 GT")
    assert got["gpu_count"] == ("pass", "1")
    assert got["min_driver"] == ("pass", "340.102")


@pytest.mark.parametrize("lead", sorted(LEADS))
def test_every_real_xml_with_white_space_above_its_declaration_is_judged_as_itself(
    tmp_path: Path, lead: str
) -> None:
    """Every real -q -x with a blank line (spaces, a tab, a BOM, a CRLF's `\\r`, an indent, a
    prompt or a `<details>` section above it) before `<?xml`: every verdict and actual as the
    file's own. Before, each was refused as an XML "cut short or damaged" (exit 2)."""
    moved = []
    for name in XMLS:
        text = (REAL / name).read_text(encoding="utf-8")
        whole = _judged(tmp_path / "whole", name, text, ORDER)
        pasted = _judged(tmp_path / lead, name, LEADS[lead](text), ORDER)
        moved += [
            f"{name}: {rule} {whole.get(rule)} -> {got}"
            for rule, got in pasted.items()
            if whole.get(rule) != got
        ]
    assert not moved, "\n".join(moved)
    assert len(XMLS) >= 15


def test_a_damaged_xml_is_refused_with_what_the_parser_found_not_as_cut(tmp_path: Path) -> None:
    """A -q -x whole to its closing tag with a mismatched tag (an edit) is refused naming what the
    parser found, not "cut short"; a text above the declaration no paste puts there is the same.
    A cut before any GPU record is still said as a cut."""
    text = H200.read_text(encoding="utf-8")
    line = text[: text.index("</uuid>")].count("\n") + 1
    damaged = tmp_path / "edited.xml"
    damaged.write_text(text.replace("</uuid>", "</uuix>", 1))
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(damaged)])
    said = str(refused.value)
    assert said.startswith(
        f"{damaged}: this nvidia-smi XML cannot be read (the XML parser found: mismatched tag: line {line},"
    )
    assert "it is not XML as nvidia-smi prints it (edited or damaged)" in said
    assert "cut short" not in said
    cut = tmp_path / "cut.xml"
    cut.write_text(text[: text.index("<gpu id=") + 20])
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(cut)])
    assert "(mid-record): incomplete probe, rerun); the file is cut short: save" in str(refused.value)
