"""Vendor licence / ICP number format checks (warnings, never errors) and the en/zh catalogue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuonboard import i18n, licences
from gpuonboard.errors import UsageError
from gpuonboard.report import render

from .report.summaries import _host, _run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "value",
    [
        "豫B2-20261089",
        "B1.B2-20200000",
        "B1-20210000",
        "京B2-20090059",
        "沪B1.B2-20190000",
        " 粤B2－20180000 ",  # full-width hyphen and spaces tolerated
        "B2.B1-20100001",
    ],
)
def test_valid_licences(value: str) -> None:
    assert licences.licence_ok(value)


@pytest.mark.parametrize(
    "value",
    [
        "N/A (simulation)",
        "B3-20200000",  # no such category
        "A1-20200000",  # basic telecom, not value-added
        "豫B2-2026108",  # seven digits
        "豫B2-202610899",  # nine digits
        "豫B2 20261089",  # no hyphen (spaces are dropped, so it reads B220261089)
        "XB2-20261089",  # not a province abbreviation
        "豫B2-30261089",  # not a year
        "B1.B2.-20200000",
        "滇ICP备2020007656号",  # an ICP filing in the licence field
    ],
)
def test_malformed_licences(value: str) -> None:
    assert not licences.licence_ok(value)


@pytest.mark.parametrize(
    "value",
    [
        "滇ICP备2020007656号",
        "京ICP备11017824号-4",
        "鄂ICP备00000000号",
        "沪ICP备00000000号",
        "蜀ICP备2021000001号-12",
        "京ICP证030173号",
    ],
)
def test_valid_icp(value: str) -> None:
    assert licences.icp_ok(value)


@pytest.mark.parametrize(
    "value",
    [
        "ICP备2020007656号",  # no province
        "滇ICP备2020007656",  # no 号
        "滇ICP2020007656号",  # no 备
        "滇ICP备202000765号",  # nine digits
        "滇ICP备20200076560号",  # eleven digits
        "滇ICP备2020007656号-",  # dangling hyphen
        "滇ICP备2020007656号-1234",
        "X ICP备2020007656号",
        "豫B2-20261089",  # a licence in the ICP field
    ],
)
def test_malformed_icp(value: str) -> None:
    assert not licences.icp_ok(value)


def test_warnings_only_for_malformed_present_numbers() -> None:
    assert licences.warnings(None, None) == []
    assert licences.warnings("B1.B2-20200000", "鄂ICP备00000000号") == []
    ws = licences.warnings("N/A", "none")
    assert len(ws) == 2 and "'N/A'" in ws[0] and "tsm.miit.gov.cn" in ws[0] and "beian" in ws[1]
    zh = licences.warnings("N/A", None, "zh")
    assert zh[0].startswith("供应商许可证号 'N/A'")


def test_shipped_vendor_profiles_are_well_formed() -> None:
    for path in sorted((REPO / "inventory" / "vendors").glob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert licences.warnings(doc.get("licence"), doc.get("icp")) == [], path.name


# ---------------------------------------------------------------- i18n


def test_every_key_in_both_languages() -> None:
    assert set(i18n.CATALOGUE) == set(i18n.LANGS)
    en, zh = (set(i18n.CATALOGUE[lang]) for lang in ("en", "zh"))
    assert en == zh, f"only en: {sorted(en - zh)}; only zh: {sorted(zh - en)}"
    for key in en:  # same placeholders, non-empty texts
        a, b = i18n.CATALOGUE["en"][key], i18n.CATALOGUE["zh"][key]
        assert a and b
        fields = {name for name in ("value", "example", "n", "version", "schema", "file", "path")}
        assert {f for f in fields if "{" + f in a} == {f for f in fields if "{" + f in b}, key


def test_lang_names() -> None:
    assert i18n.check_lang("zh-CN") == "zh" and i18n.check_lang("") == "en"
    with pytest.raises(UsageError, match="--lang 'fr' is not one of en, zh."):
        i18n.check_lang("fr")
    assert i18n.verdict_word("fail", "zh") == "不通过" and i18n.verdict_word("odd") == "ODD"
    assert i18n.verdict_word(None) == "-"


def test_zh_report_has_chinese_headings_and_en_stays_english(tmp_path: Path) -> None:
    h = _host("gpu-1", "fail", "4")
    h["vendor_licence"] = "N/A (simulation)"
    h["benchmarks"] = [
        {"name": "matmul", "value": 200.0, "unit": "TFLOPS", "reference": 312, "verdict": "fail"}
    ]
    _run(tmp_path, [h])
    reports = tmp_path / "reports"
    out, _, go = render.report(reports, "20261129-000000-aaaa", "html", REPO, "zh")
    assert out.name == "report.zh.html" and not go
    html = out.read_text(encoding="utf-8")
    for heading in ("GPU 服务器验收报告", "订购与交付对比", "验收规则", "基准测试与参考值", "原始命令输出"):
        assert heading in html
    assert "验收不通过（NO-GO）" in html and "不通过" in html and "已校验" in html
    assert "规则 gpu_count 不通过：期望 8，实际 4" in html
    assert 'lang="zh-CN"' in html and "report.zh.html.sha256" in html
    assert "供应商许可证号 &#39;N/A (simulation)&#39;" in html  # the warning, escaped
    assert "Order vs delivered" not in html and "Rules</h3>" not in html
    md, _, _ = render.report(reports, "20261129-000000-aaaa", "md", REPO, "zh")
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# GPU 服务器验收报告: 验收不通过（NO-GO）")
    assert "| GPU 数量 | 8 | 4 |" in text and "**警告**" in text
    en, _, _ = render.report(reports, "20261129-000000-aaaa", "html", REPO)
    en_html = en.read_text(encoding="utf-8")
    assert en.name == "report.html" and "Order vs delivered" in en_html and "验收" not in en_html
    assert "does not look like a value-added telecom licence number" in en_html
    js, _, _ = render.report(reports, "20261129-000000-aaaa", "json", REPO, "zh")
    doc = json.loads(js.read_text(encoding="utf-8"))
    assert js.name == "report.json" and doc["verdict"] == "NO-GO"  # json stays machine-readable English
    assert doc["hosts"][0]["vendor_warnings"] and doc["warnings"][0].startswith("gpu-1: vendor licence")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_cli_report_lang_and_inventory_warning(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    (tmp_path / "reports" / "latest").symlink_to("20261129-000000-aaaa")
    done = _cli("report", "--lang", "zh", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "验收通过（GO）" in done.stdout and "report.zh.html" in done.stdout
    bad = _cli("report", "--lang", "fr", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --lang 'fr' is not one of en, zh."
    inv = tmp_path / "inventory"
    (inv / "vendors").mkdir(parents=True)
    (inv / "vendors" / "v.yml").write_text('name: V\nlicence: "B1.B2-2020"\nicp: "鄂ICP备00000000号"\n')
    (inv / "hosts.yml").write_text("hosts:\n  h1: {address: 10.0.0.9, vendor: v}\n")
    listed = _cli("inventory", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr  # a warning, never an error
    assert "warning: vendor v" in listed.stdout and "'B1.B2-2020' does not look like" in listed.stdout
    assert "ICP filing" not in listed.stdout


def test_terminal_tables_in_chinese() -> None:
    from rich.console import Console

    from gpuonboard.inventory import Host
    from gpuonboard.report.terminal import print_results
    from gpuonboard.results import HostResult, conclude
    from gpuonboard.steps.base import Check, StepResult

    check = Check("gpu_count", "8", "4", "fail")
    result = HostResult(
        Host(name="g", address="10.0.0.1"), "failed", "m", [StepResult("acceptance", "failed", "m", [check])]
    )
    for lang, words in (
        ("zh", ("规则", "期望值", "实际值", "结论", "不通过", "汇总", "主机", "失败")),
        ("en", ("rule", "expected", "actual", "verdict", "FAIL", "recap", "host", "failed")),
    ):
        con = Console(record=True, width=200)
        print_results(conclude([result]), con, lang=lang)
        text = con.export_text()
        assert all(w in text for w in words), (lang, text)
