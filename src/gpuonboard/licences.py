"""Format checks for a Chinese vendor's value-added telecom licence and ICP filing numbers.

Pure functions. A malformed number is a *warning* (shown by `invoke inventory` and in the
acceptance report), never an error: the check only says the text does not look like such a
number, not that a well-formed one is genuine — look it up at https://beian.miit.gov.cn
(ICP filings) or https://tsm.miit.gov.cn (telecom licences) before signing.

Source of the formats: MIIT publishes no grammar; these patterns follow the numbers the
MIIT's lookup services above return and that Chinese sites show in their footers, as required
by the 《电信业务经营许可管理办法》 (MIIT Order No. 42, 2017) and the
《互联网信息服务管理办法》 (State Council Order No. 292):

* value-added telecom business licence (增值电信业务经营许可证编号):

      LICENCE_RE = ^(?:PROVINCE)?B[12](?:\\.B[12])?-(?:19|20)\\d{6}$

  an optional province abbreviation (absent on nationwide licences issued by the MIIT
  itself), the category (B1 = first class, B2 = second class of value-added services; a
  licence covering both reads `B1.B2`), a hyphen and eight digits that start with the issue
  year: `豫B2-20261089`, `B1.B2-20200000`, `京B2-20090059`.
* ICP filing (ICP备案号) or ICP licence (ICP经营许可证, `ICP证`):

      ICP_RE = ^PROVINCE ICP (?:备(?:\\d{8}|\\d{10})号(?:-\\d{1,3})? | 证\\d{6}号)$   (no spaces)

  the province abbreviation, `ICP备`, eight (older: `京ICP备05002571号`) or ten digits
  (year + six: `滇ICP备2020007656号`), `号`, optionally `-N` for the N-th site of the same
  filing (`京ICP备11017824号-4`); or `京ICP证030173号`.

PROVINCE is one of the 31 mainland provincial abbreviations, including the alternative ones
used by filings (滇 for 云, 黔 for 贵, 蜀 for 川, 陇 for 甘, 秦 for 陕). Full-width hyphens and
surrounding spaces are tolerated: the comparison normalises them first.
"""

from __future__ import annotations

from gpuonboard.once import lazy_re

PROVINCES = "京津沪渝冀豫云滇辽黑湘皖鲁新苏浙赣鄂桂甘陇晋蒙陕秦吉闽贵黔粤青藏川蜀宁琼"

LICENCE_RE = lazy_re(rf"^[{PROVINCES}]?B[12](?:\.B[12])?-(?:19|20)\d{{6}}$")
ICP_RE = lazy_re(rf"^[{PROVINCES}]ICP(?:备(?:\d{{8}}|\d{{10}})号(?:-\d{{1,3}})?|证\d{{6}}号)$")

LICENCE_EXAMPLE = "豫B2-20261089, B1.B2-20200000"  # (no words: shown in every language)
ICP_EXAMPLE = "滇ICP备2020007656号, 京ICP备11017824号-4"


def _normalise(value: str) -> str:
    return value.strip().replace("－", "-").replace("—", "-").replace("．", ".").replace(" ", "")


def licence_ok(value: str) -> bool:
    """True when `value` looks like a value-added telecom business licence number."""
    return bool(LICENCE_RE.match(_normalise(value)))


def icp_ok(value: str) -> bool:
    """True when `value` looks like an ICP filing (备) or ICP licence (证) number."""
    return bool(ICP_RE.match(_normalise(value)))


def warnings(licence: str | None, icp: str | None, lang: str = "en") -> list[str]:
    """One sentence per malformed number; an absent number is not checked (nothing to warn)."""
    from gpuonboard.i18n import t

    out = []
    if licence and not licence_ok(licence):
        out.append(t("w_licence", lang, value=licence, example=LICENCE_EXAMPLE))
    if icp and not icp_ok(icp):
        out.append(t("w_icp", lang, value=icp, example=ICP_EXAMPLE))
    return out
