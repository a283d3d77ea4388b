"""The per-process shortcuts of a `check` (bench/fanout.py's CPU per host) give the same results
as the long way: rules computed once per host's facts (gather.memo), the HTML report from the
raw bytes just written (jsonfile.write_raw) rather than read back, nvidia-smi XML lookups by
plain paths, the fault screen of a GPU record, and the phase timings file."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpuonboard.connection.gather import _MEMO, memo, parse_facts
from gpuonboard.facts import nvidia_smi
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.report import jsonfile
from gpuonboard.report.render import render
from gpuonboard.results import HostResult, conclude
from gpuonboard.steps.checks import acceptance, gpu_health

REPO = Path(__file__).parents[2]
REAL = REPO / "tests" / "fixtures" / "real"
XML = "../derived/nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml"  # (the simulator's 8xA100)
RUN = "20261201-000000-aaaa"


def _facts() -> object:
    return parse_facts({"nvidia_smi": ProbeOutput((REAL / XML).read_text(), "", 0)})


def test_memo_computes_once_per_facts_object_and_key() -> None:
    facts, other = _facts(), _facts()
    calls: list[str] = []

    def compute(tag: str) -> tuple[str]:
        calls.append(tag)
        return (tag,)

    assert memo(facts, "k", lambda: compute("a")) == ("a",)
    assert memo(facts, "k", lambda: compute("b")) == ("a",)  # the same facts and key: cached
    assert memo(facts, "other key", lambda: compute("c")) == ("c",)
    assert memo(other, "k", lambda: compute("d")) == ("d",)  # equal facts, another object: its own
    assert calls == ["a", "c", "d"]
    assert memo(facts, ["unhashable"], lambda: compute("e")) == ("e",)  # never cached
    assert memo(facts, ["unhashable"], lambda: compute("f")) == ("f",)


def test_memo_forgets_facts_that_are_gone() -> None:
    facts = _facts()
    memo(facts, "k", lambda: 1)
    ident = id(facts)
    assert ident in _MEMO
    del facts
    gc.collect()
    assert ident not in _MEMO


def test_cached_rules_are_the_rules_and_cannot_be_changed_through_a_result() -> None:
    facts = _facts()
    order = OrderSpec(gpu_model="A100", gpu_count=8)
    first = acceptance.evaluated(order, facts)
    assert first == acceptance.evaluate(order, facts)
    first.clear()  # (a caller's own list: the cached rules stay whole)
    assert acceptance.evaluated(order, facts) == acceptance.evaluate(order, facts)
    assert acceptance.evaluated(order, facts, {"vram": 0.5}) == acceptance.evaluate(
        order, facts, {"vram": 0.5}
    )
    assert gpu_health.evaluated(facts, {}) == gpu_health.evaluate(facts, {})
    strict = {"temperature_warn": 1.0}
    assert gpu_health.evaluated(facts, strict) == gpu_health.evaluate(facts, strict)
    assert gpu_health.evaluated(facts, strict) != gpu_health.evaluated(facts, {})


def test_the_html_report_from_the_bytes_written_is_the_one_read_back(tmp_path: Path) -> None:
    outputs = {
        "nvidia_smi": ProbeOutput((REAL / XML).read_text(), "", 0),
        "free": ProbeOutput((REAL / "free__ubuntu-18.04-vm.txt").read_text(), "", 0),
        "container:5c59f674b1": ProbeOutput("sha256:0123abcd\n", "", 0),  # a hashed file name
        "nproc": ProbeOutput("", "", 127),  # an empty file
    }
    facts = dataclasses.replace(parse_facts(outputs), raw=outputs)
    results = [
        HostResult(Host(name=name, address="10.0.0.1"), "ok", "1 ok", facts=facts) for name in ("a", "武汉 1")
    ]
    out = tmp_path / RUN
    written = jsonfile.write_raw(out, results)
    on_disk = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*.txt")}
    assert written == on_disk and len(written) == 8
    meta = {"run_id": RUN, "playbook": "acceptance", "check_mode": True, "strict": False}
    doc = jsonfile.summary(conclude(results, False), meta)
    project = tmp_path / "project"
    project.mkdir()
    assert render(doc, out, "html", project, written=written) == render(doc, out, "html", project)
    # a file changed since (not by this run): read back, it is named, as before
    victim = next(iter(written))
    (out / victim).write_bytes(b"edited\n")
    assert "HASH MISMATCH" in render(doc, out, "json", project)
    # bytes handed over that are not the ones the summary hashed (their length differs): named too
    short = {**written, victim: written[victim][:-1]}
    assert "HASH MISMATCH" in render(doc, out, "json", project, written=short)


@pytest.mark.parametrize(
    "path", ["uuid", "pci/pci_bus_id", "a/b", "a/b/c", "missing/b", "a/*", ".//b", "a[1]/b"]
)
def test_xml_lookup_by_plain_path_is_elementtree_find(path: str) -> None:
    # the first <a> has no <b>: find("a/b") is the <b> of the second <a>
    root = ET.fromstring(
        "<gpu><uuid>U</uuid><a><x/></a><a><b>1<c>c1</c></b><b>2</b></a><pci><pci_bus_id>P</pci_bus_id></pci></gpu>"
    )
    assert nvidia_smi._xml_find(root, path) is root.find(path)


def _xml_documents() -> list[str]:
    """Every real and derived `-q -x` capture, and the 8xA100 one with its first GPU's sections
    doubled (a second <pci>, <ecc_errors>, link, volatile, retired and remapped block before the
    first, each emptied or changed), an element of a path printed empty and one left out."""
    paths = sorted(REAL.glob("nvidia-smi-q-x__*.xml")) + sorted(
        (REAL / "../derived").glob("nvidia-smi-q-x__*.xml")
    )
    # (not a document cut short, as SysMonTask#60's paste: no XML parser reads it whole)
    docs = [text for p in paths if "</nvidia_smi_log>" in (text := p.read_text())]
    base = (REAL / XML).read_text()
    doubled = base.replace(
        "<pci>",
        "<pci><pci_gpu_link_info><pcie_gen/></pci_gpu_link_info></pci><pci><replay_counter>7</replay_counter></pci><pci>",
        1,
    ).replace(
        "<ecc_errors>",
        "<ecc_errors><volatile><sram_correctable>3</sram_correctable></volatile></ecc_errors><ecc_errors>"
        "<retired_pages/>",
        1,
    )
    doubled = doubled.replace(
        "<remapped_rows>",
        "<remapped_rows><remapped_row_corr>2</remapped_row_corr></remapped_rows><remapped_rows>",
        1,
    )
    docs += [
        doubled,
        base.replace("<gpu_temp>", "<gpu_temp/><gpu_temp>", 1),
        base.replace("<uuid>", "<uuid_x>", 1).replace("</uuid>", "</uuid_x>", 1),
    ]
    return docs


def test_a_gpu_s_elements_found_in_one_walk_are_the_ones_elementtree_finds() -> None:
    """Each path of each reader's plan, below each <gpu> (and its link, ECC, retired and remapped
    sections) of every `-q -x` capture (see _xml_documents for the edits): the walk finds the
    element ElementTree's find does, and a path outside the plan is looked up all the same."""
    from gpuonboard.facts.nvidia_smi import xml_q

    checked = 0
    for doc in _xml_documents():
        body = doc[doc.index("<nvidia_smi_log") : doc.rindex("</nvidia_smi_log>") + len("</nvidia_smi_log>")]
        for gpu in ET.fromstring(body).iter("gpu"):
            sections = [(gpu, xml_q._GPU_PLAN)]
            for path, plan in (
                ("pci/pci_gpu_link_info", xml_q._LINK_PLAN),
                ("ecc_errors/volatile", xml_q._ECC_PLAN),
                ("ecc_errors/aggregate", xml_q._ECC_PLAN),
                ("retired_pages", xml_q._RETIRED_PLAN),
                ("remapped_rows", xml_q._REMAPPED_PLAN),
            ):
                sections += [(node, plan)] if (node := gpu.find(path)) is not None else []
            for node, (_trie, paths) in sections:
                found = xml_q._Found(node, (_trie, paths))
                for path in [*paths, "uuid", "pci/pci_bus_id/x", "clocks/graphics_clock", "nope"]:
                    assert found.find(path) is node.find(path), path
                    checked += 1
        assert xml_q._Found(None, xml_q._LINK_PLAN).raw("pcie_gen/max_link_gen") is None
    assert checked > 2000


@pytest.mark.parametrize(
    "value",
    ["ERR!", "err!", "GPU is lost", "gpu requires RESET", "[Unknown Error]", "GPU ıs loſt", "fine", "N/A"],
)
def test_the_fault_screen_passes_every_record_a_fault_rule_reads(value: str) -> None:
    words = nvidia_smi._ANY_FAULT
    assert nvidia_smi._may_fault(["ok", value]) == (words.search(value) is not None)
    assert nvidia_smi._may_fault(["x", value]) or nvidia_smi._field_faults([("p", value)], "name") == ((), ())


def test_phase_timings_are_written_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    code = "from gpuonboard import timings\ntimings.mark('start'); timings.mark('runner')\n"
    env = {**os.environ, "GPUONBOARD_TIMINGS": str(path), "PYTHONPATH": str(REPO / "src")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    doc = json.loads(path.read_text())
    assert [p["phase"] for p in doc["phases"]] == ["start", "runner"]
    assert all(p["wall"] >= 0 and p["cpu"] >= 0 for p in doc["phases"])
    env.pop("GPUONBOARD_TIMINGS")
    path.unlink()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    assert not path.exists()


@pytest.mark.parametrize(
    "text",
    [
        "Unable to determine the device handle for gpu 0000:9B:00.0: Unknown Error\n",
        "x\nunable to DETERMINE the device handle for GPU 00000000:02:00.0: GPU is lost\n",
        "Unable to determıne the device handle for gpu 0000:9B:00.0\n",  # (a dotless i: the regex's fold)
        "Unable to determine the device handle\n",
        "<gpu>\n<product_name>NVIDIA A100</product_name>\n</gpu>\n",
    ],
)
def test_the_unopened_gpu_screen_lets_through_every_text_a_line_names_one_in(text: str) -> None:
    from gpuonboard.facts import gpu_unopened

    named = any(gpu_unopened._NO_HANDLE.search(line) for line in text.splitlines())
    assert gpu_unopened._may_name_unopened(text) or not named
    assert gpu_unopened._may_name_unopened(text) == (gpu_unopened._NO_HANDLE_ANY.search(text) is not None)


def _split_line_by_line(stdout: str, stderr: str, token: str, names: list[str]) -> dict[str, ProbeOutput]:
    """probe.split_output as it was written before (every line looked at): the reference."""
    from gpuonboard.facts.probe import MAX_STDERR, _lines, _strip_one

    outs: dict[str, tuple[str, int]] = {}
    errs: dict[str, str] = {}
    prefix = token + " "
    current: str | None = None
    block: list[str] = []
    for line in _lines(stdout):
        if not line.startswith(prefix):
            if current is not None:
                block.append(line)
            continue
        kind, _, rest = line[len(prefix) :].strip().partition(" ")
        if kind == "begin":
            current, block = rest, []
        elif kind == "end" and current is not None:
            _, _, rc_text = rest.rpartition(" ")
            outs[current] = (_strip_one(block), int(rc_text) if rc_text.lstrip("-").isdecimal() else -1)
            current = None
    current = None
    for line in _lines(stderr):
        if line.startswith(prefix + "stderr "):
            if current is not None:
                errs[current] = _strip_one(block)
            current, block = line[len(prefix) + 7 :].strip(), []
        elif current is not None:
            block.append(line)
    if current is not None:
        errs[current] = _strip_one(block)
    return {
        name: ProbeOutput(outs[name][0], errs.get(name, "")[:MAX_STDERR], outs[name][1])
        if name in outs
        else ProbeOutput("", "probe produced no output", -1)
        for name in names
    }


def test_split_output_cuts_as_the_line_by_line_reading_did() -> None:
    import random

    from gpuonboard.facts.probe import split_output

    token = "@@gpuonboard-0123456789abcdef01234567"
    pieces = [
        f"{token} begin a\n", f"{token} begin b\n", f"{token} end a 0\n", f"{token} end b -3\n",
        f"{token} end b x\n", f"{token} other\n", f"{token} begin a", f"\n{token} stderr a\n",
        f"{token} stderr b\n", f"{token} stderr __end__", "x" + token + " begin a\n", "text\n",
        "\r\n", "\n", "no newline", " " + token + " begin b\n", "\u2028line\n", "<gpu>\n</gpu>\n",
    ]  # fmt: skip
    rng = random.Random(7)
    for _ in range(3000):
        out = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        err = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        names = ["a", "b", "c"]
        assert split_output(out, err, token, names) == _split_line_by_line(out, err, token, names), (out, err)


@pytest.mark.parametrize(
    "doc",
    [
        "<!ENTITY x 'y'>",
        "<!entity x 'y'>",
        "<!EnTıTy x 'y'>",  # (a dotless i upper-cases to an I: refused as upper() reads it)
        "<!<!ENTITY x>",
        "<!ENTI",
        "<!DOCTYPE nvidia_smi_log SYSTEM 'nvsmi_device_v12.dtd'>",
        "<!-- ENTITY --><!ENTITIES>",
        "no markup at all",
    ],
)
def test_the_entity_screen_reads_as_the_upper_cased_document_did(doc: str) -> None:
    from gpuonboard.facts.nvidia_smi.xml_q import _declares_entity

    assert _declares_entity(f"<?xml version='1.0'?>\n{doc}\n<nvidia_smi_log/>") == ("<!ENTITY" in doc.upper())


def test_the_head_lines_of_an_output_are_its_first_lines() -> None:
    from gpuonboard.facts.gpu_merge import _head_lines

    texts = ["", "a", "a\nb\nc", "a\r\nb\r\nc\r\nd\n", "ab\r\ncd\r\nef\r\ngh", "\n\n\n\n"]
    texts += [
        "a\u2028b\x85c\rd\ne",
        "x" * 9 + "\r\n" + "y" * 5,
        "aaa\nbbb\nccc\r\nddd",
        "a\nb\nc\n" + "d" * 30,
    ]
    for text in texts:
        for chunk in range(1, 14):
            assert _head_lines(text, 3, chunk) == text.splitlines()[:3], (text, chunk)


@pytest.mark.parametrize(
    "line",
    [
        "ERROR: nvidia-smi -q -x is disabled on this instance",
        "Disabled On This MACHINE by the provider",
        "blocked by POLICY",
        "Refused by the Administrator.",
        "by vendor",
        "Operation NOT ALLOWED",
        "this query Is Restricted",
    ],
)
def test_the_refusal_screen_lets_every_refusal_through(line: str) -> None:
    from gpuonboard.facts.gpu_merge import _REFUSAL, refusal_line

    assert _REFUSAL.search(line)
    for stdout, stderr in ((line, ""), ("<?xml version='1.0'?>\n" + line + "\n", ""), ("", "x\n" + line)):
        assert refusal_line(ProbeOutput(stdout, stderr, 0)) == line


def test_a_gpu_one_format_read_is_that_format_s_and_only_that_one_s() -> None:
    from gpuonboard.facts.gpu_fields import _merge_gpu

    report = nvidia_smi.parse_xml((REAL / XML).read_text())
    base = dataclasses.replace(report.gpus[0], name="NVIDIA A100-SXM...", processes_known=False)
    # the one copy is the base: the merge of every field from it is the base itself
    for label in ("xml", "text", "csv", "list", "table"):
        assert _merge_gpu(base, [(label, base)]) == _merge_gpu(base, [(label, dataclasses.replace(base))])
    # one copy that is another format's GPU (not the base): its fields, never the base's as is
    other = dataclasses.replace(base, temperature_c=99, faults=("ERR!",), processes_known=True)
    merged = _merge_gpu(base, [("csv", other)])
    assert (merged.temperature_c, merged.faults, merged.processes_known) == (99, ("ERR!",), True)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("<fan_speed>N/A</fan_speed>", "<fan_speed>ERR!</fan_speed>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed>&#69;RR&#33;</fan_speed>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed> [Unknown Error] </fan_speed>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed>Unknown&#32;Error</fan_speed>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed>GPU ıs loſt</fan_speed>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed><![CDATA[GPU requires reset]]></fan_speed>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed>timeout_x</fan_speed>"),
        ("<product_name>NVIDIA A100-SXM4-80GB</product_name>", "<product_name>ERR!</product_name>"),
        ("<graphics_clock>1275 MHz</graphics_clock>", "<graphics_clock>[Timeout]</graphics_clock>"),
        ("<fan_speed>N/A</fan_speed>", "<fan_speed>N/A</fan_speed><access_timeout_recovery/>"),
    ],
)
def test_the_document_s_fault_screen_lets_through_every_gpu_record_with_a_fault(old: str, new: str) -> None:
    """The derived 8xA100 `-q -x` with the first of `old` written as `new` (a fault marker in a
    value, written plainly, with character references, in CDATA, in a nested element, or as the
    product name; a word only in a tag): read as each GPU read with no screen of the document."""
    from gpuonboard.facts.nvidia_smi.xml_q import _xml_gpu

    text = (REAL / XML).read_text().replace(old, new, 1)
    report = nvidia_smi.parse_xml(text)
    root = ET.fromstring(text[text.index("<nvidia_smi_log>") :])
    unscreened = [_xml_gpu(gpu, i, [], True) for i, gpu in enumerate(root.findall("gpu"))]
    assert [(g.faults, g.cell_faults) for g in report.gpus] == [(g.faults, g.cell_faults) for g in unscreened]
    assert report.gpus == tuple(unscreened)


def test_a_value_cleaned_again_reads_as_it_read_the_first_time() -> None:
    """Every text of every real `-q -x` capture (and some spellings around them: padded, bracketed,
    upper-cased, empty) read by _clean twice, and after its answers were forgotten: each time as
    _clean_anew reads it; a full table is forgotten before it grows."""
    from gpuonboard.facts.nvidia_smi import values

    texts = [
        e.text or ""
        for doc in _xml_documents()[:-3]
        for e in ET.fromstring(
            doc[doc.index("<nvidia_smi_log") :].split("</nvidia_smi_log>")[0] + "</nvidia_smi_log>"
        ).iter()
    ]
    texts += [
        f"{w}{t}{w}"
        for t in ("N/A", "[N/A]", "ERR!", "Enabled", "0", "[GPU requires reset]")
        for w in ("", " ", "\t")
    ]
    texts += ["n/a".upper(), "x" * 65, "", " ", "[", "]", "[x"]
    for _round in range(2):
        assert [values._clean(t) for t in texts] == [values._clean_anew(t) for t in texts]
        assert [values._clean(t) for t in texts] == [values._clean_anew(t) for t in texts]
        values._CLEANED.clear()
    for n in range(values._CLEANED_MAX + 10):
        assert values._clean(f" {n} ") == str(n)
    assert 0 < len(values._CLEANED) <= values._CLEANED_MAX
    assert values._clean(None) is None


def test_a_value_read_again_reads_as_it_read_the_first_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """_int, _float, _on_off and _yes_no (kept by value: values._by_value) over every text of
    every real and derived `-q -x` capture, every value of every `-q` capture (after ` : `),
    every cell of the CSV captures, and spellings around them (padded, bracketed, upper-cased,
    annotated, 64 and 65 characters long): read twice, after the tables were emptied, and with
    tables of 20 values (emptied mid-way): each time as the reader without its table reads it."""
    from gpuonboard.facts.nvidia_smi import values

    texts = [
        e.text or ""
        for doc in _xml_documents()[:-3]
        for e in ET.fromstring(
            doc[doc.index("<nvidia_smi_log") :].split("</nvidia_smi_log>")[0] + "</nvidia_smi_log>"
        ).iter()
    ]
    for folder in (REAL, REAL / "../derived"):
        for path in sorted(folder.glob("nvidia-smi-q*.txt")):
            texts += [line.split(" : ", 1)[1] for line in path.read_text().splitlines() if " : " in line]
        for path in sorted(folder.glob("nvidia-smi-query*.csv")):
            texts += [cell for line in path.read_text().splitlines() for cell in line.split(",")]
    texts += [
        f"{w}{t}{w}"
        for t in ("N/A", "[N/A]", "ERR!", "Enabled", "On", "Off", "Yes", "No", "0", "1", "27 C", "26.78 W")
        for w in ("", " ", "\t")
    ]
    texts += ["YES", "No <== pending", "7" * 64, "7" * 65, "", " ", "[", "]", "1e3", "-5 C", "0x10"]
    readers = (values._int, values._float, values._on_off, values._yes_no)
    assert len(values._READ_TABLES) == len(readers)
    assert len(texts) > 20_000

    def read_each() -> list[object]:
        return [read(t) for read in readers for t in [*texts, None]]

    plain = [read.__wrapped__(t) for read in readers for t in [*texts, None]]  # type: ignore[attr-defined]
    for table in values._READ_TABLES:
        table.clear()
    assert read_each() == plain
    assert read_each() == plain
    assert all(0 < len(table) <= values._CLEANED_MAX for table in values._READ_TABLES)
    monkeypatch.setattr(values, "_CLEANED_MAX", 20)
    for table in values._READ_TABLES:
        table.clear()
    assert read_each() == plain
    assert all(len(table) <= 20 for table in values._READ_TABLES)


def _gpu_names() -> list[str]:
    """The GPU names of the real captures (`-q`'s Product Name, `-L`'s and the CSV's names) and
    of the rules' own tables, each as it is and cut as nvidia-smi's table cuts a long name."""
    from gpuonboard.steps.checks.nvlink_rules import load_nvlink_models

    names: list[str] = [m.match for m in load_nvlink_models()]
    for path in sorted(REAL.glob("*")):
        for line in path.read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() in ("Product Name", "GPU 0", "GPU 1"):
                names.append(value.split("(UUID")[0].strip())
    names += ["NVIDIA H100 P...", "NVIDIA H800 80G...", "NVIDIA GeForce RTX 4090 D", "GRID A100-40C", ""]
    return list(dict.fromkeys(names))


def test_the_memoised_gpu_name_lookups_answer_as_their_functions_do() -> None:
    """nvlink_model, variant_words, gpu_class, name_family and families are memoised (pure over
    the shipped tables, their values immutable); each answers for every name as the function
    itself does, from an empty table and from a full one, and the packaged NGC table's newest
    runnable release per driver and class is newest_runnable's over that table."""
    from gpuonboard.steps.checks import gpu_arch, model_match, ngc, nvlink_rules

    names = _gpu_names()
    assert len(names) > 40
    lookups = (nvlink_rules.nvlink_model, model_match.variant_words, ngc.gpu_class, gpu_arch.name_family)
    plain = [look.__wrapped__(n) for look in lookups for n in names]  # type: ignore[attr-defined]
    for look in lookups:
        look.cache_clear()  # type: ignore[attr-defined]
    assert [look(n) for look in lookups for n in names] == plain
    assert [look(n) for look in lookups for n in names] == plain
    assert gpu_arch.families() == tuple(f for f, _ in gpu_arch.name_families())
    table = ngc.load_releases()
    for driver in ("418.67", "470.82.01", "525.60.13", "535.161.08", "545.23.06", "550.90.07", "570.86.15"):
        for klass in ("datacenter", "professional", "consumer", "vgpu", "unknown"):
            assert ngc._packaged_newest(driver, klass) == ngc.newest_runnable(table, driver, klass)
