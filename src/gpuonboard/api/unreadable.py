"""Saved outputs of a kind known from their content that cannot be read as that kind (a df
without sizes, a p2p matrix for `topo -m`, a vGPU listing, a damaged lsblk table or nvidia-smi
XML): refused as bad input in one sentence naming the file and what to save (from api/offline.py)."""

from __future__ import annotations

import re
from pathlib import Path

from gpuonboard.errors import OtherOutputError, UsageError
from gpuonboard.facts.disks import df_lists_sizes

# `nvidia-smi vgpu`'s header row of each vGPU (a vGPU host's listing of its guests' vGPUs)
_VGPU_LISTING = re.compile(r"^\|\s+vGPU ID\s+Name\s+\|\s+VM ID\s+VM Name\s", re.M)


# nvidia-smi's date line above its table (`Tue Nov 1 12:06:50 2025`)
_DATE_LINE = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}")


def vgpu_listing_below(text: str) -> tuple[str, int] | None:
    """(the text above it, its first line, 0-based) where an `nvidia-smi vgpu` listing (its
    date line, border and banner above its `vGPU ID` header) follows another output in `text`
    (a README's `nvidia-smi -q` of the host, then the host's vGPU listing: measure35e 16, whose
    whole run was refused for the listing); None where there is none, or it is the text's top."""
    found = _VGPU_LISTING.search(text)
    if found is None:
        return None
    lines = text[: found.start()].split("\n")
    banner = next((i for i in range(len(lines) - 1, -1, -1) if "NVIDIA-SMI" in lines[i]), None)
    if banner is None:
        return None
    start = banner
    while start > 0 and (
        lines[start - 1].strip().startswith("+-") or _DATE_LINE.fullmatch(lines[start - 1].strip())
    ):
        start -= 1
    above = "\n".join(lines[:start])
    return (above.rstrip("\n") + "\n", start) if above.strip() else None


VGPU_LISTING_NOTE = (
    "`nvidia-smi vgpu`'s listing of the vGPUs a vGPU host runs for its VMs (vGPU ID, VM ID, VM"
    " Name), not nvidia-smi's GPU table: not read"
)


def refuse_unreadable(where: str, kind: str, text: str) -> None:
    """A saved output of a kind known from its content that cannot be read as that kind is a bad
    input (exit 2, naming the file and what to save), never a box without the fact."""
    if kind == "df" and not df_lists_sizes(text):
        raise UsageError(
            f"{where}: this df output has no size column (`df -i` counts inodes), so no disk size can"
            " be read from it; save `df -P -k` (or `df -h`) of the box instead."
        )
    if kind == "nvidia_topo":
        from gpuonboard.facts.topo import foreign_links, parse_topo

        if cells := foreign_links(parse_topo(text)):
            raise OtherOutputError(
                f"{where}: this GPU matrix's cells ({', '.join(cells)}) are not links that `nvidia-smi"
                " topo -m` prints (NV#, PIX, PXB, PHB, NODE, SYS): this looks like `nvidia-smi topo"
                " -p2p`'s peer-to-peer status (OK, NS, GNS, ...), which says nothing of NVLink or PCIe"
                " paths; save `nvidia-smi topo -m` of the box instead."
            )
    if kind.startswith("nvidia_smi") and _VGPU_LISTING.search(text):
        raise UsageError(
            f"{where}: this is `nvidia-smi vgpu`'s listing of the vGPUs a vGPU host runs for its"
            " VMs (vGPU ID, VM ID, VM Name), not nvidia-smi's GPU table; save `nvidia-smi` (or"
            " `nvidia-smi -q -x`) of the box you rent instead."
        )
    if kind == "lsblk":
        from gpuonboard.facts.lsblk_table import looks_like_lsblk_table, unread

        if (why := unread(text)) is not None:
            what = "lsblk table" if looks_like_lsblk_table(text) else "lsblk -J output"
            raise UsageError(
                f"{where}: this {what} cannot be read ({why}); the file is cut short or"
                " damaged: save `lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL` of the box again."
            )


def refuse_damaged_xml(path: Path | str, text: str) -> None:
    """An `nvidia-smi -q -x` file that is cut short or damaged is a bad input (exit 2, naming the
    file), not a box without GPUs: it passed with exit 0 and one warning line."""
    from gpuonboard.facts import nvidia_smi

    report = nvidia_smi.parse_any(text)
    if report.source == "xml" and not report.gpus and report.warnings:
        raise UsageError(f"{path}: this nvidia-smi XML cannot be read ({_xml_refusal(report.warnings)}.")


def _xml_refusal(warnings: tuple[str, ...]) -> str:
    """Why an XML was refused, as its reader found it: a cut (it ends before its closing tag, no
    fault found above the cut) is said as one; what the XML parser found (a mismatched tag, a
    text where XML allows none) or an entity declared is no cut, and is said as it was found
    (before, every refusal said "the file is cut short or damaged", a paste's text above its
    `<?xml` line too)."""
    from gpuonboard.facts.nvidia_smi.xml_q import XML_CUT

    if warnings[0] == XML_CUT:
        return f"{warnings[0]}); the file is cut short: save `nvidia-smi -q -x` again"
    found = warnings[0]
    if found.startswith(parsed := "XML not parseable: "):
        found = f"the XML parser found: {found.removeprefix(parsed)}"
    cut = ", then it ends before </nvidia_smi_log>" if XML_CUT in warnings[1:] else ""
    return (
        f"{found}{cut}); it is not XML as nvidia-smi prints it (edited or"
        " damaged): save `nvidia-smi -q -x` again and give the file as it was saved"
    )


def vgpu_apart(where: str, text: str, notes: list[str]) -> str:
    """`text` without an `nvidia-smi vgpu` listing below another output (vgpu_listing_below),
    the listing said in a note: the output above it read, never the whole run refused for it (a
    listing alone is still refused, saying what it is)."""
    if (apart := vgpu_listing_below(text)) is None:
        return text
    above, start = apart
    notes.append(f"{where}: from its line {start + 1}, {VGPU_LISTING_NOTE}.")
    return above
