"""One host's kernel log is read once for all its readers (facts/kernel_text.py by_text): gpu_xid
and nvswitch_sxid, the Oops reader, the sandbox question of gpu_health and nvidia_driver each read
it again before (issue 31, the check's CPU per host); a log of equal text of another host is read
apart, and the texts kept are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts import kernel_text
from gpuonboard.facts.kernel_log import parse_kernel_log, sandbox_of
from gpuonboard.facts.kernel_oops import nvidia_crashes
from gpuonboard.facts.kernel_text import by_text, kernel_lines, log_text
from gpuonboard.facts.probe import ProbeOutput

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GPF = (
    "dmesg__general-protection-fault-kmalloc-tainted-p-oe__rtx4090-driver555__trace-cut"
    "__k8s-device-plugin-941.txt"
)
GVISOR = "dmesg__gvisor-sandbox__emulated-kernel-log__k8s-image-builder-docs.txt"


def _reads(monkeypatch: pytest.MonkeyPatch, text: str) -> list[int]:
    """Counts how often `text` (its value) is made plain: once per reading of the log."""
    seen: list[int] = []
    real = kernel_text.plain_kernel_text

    def counted(given: str) -> str:
        if given == text:
            seen.append(id(given))
        return real(given)

    monkeypatch.setattr(kernel_text, "plain_kernel_text", counted)
    return seen


def test_a_hosts_log_is_read_once_by_its_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real k8s-device-plugin#941 log (an Oops, the proprietary taint): gpu_xid's reading, the
    Oops reader's lines and the sandbox question share one reading, and give what they gave."""
    text = (REAL / GPF).read_text()
    seen = _reads(monkeypatch, text)
    log = parse_kernel_log(text)
    crashes = nvidia_crashes(text)
    sandbox = sandbox_of({"kernel_log": ProbeOutput(text, "", 0)})
    assert parse_kernel_log(text) is log
    assert len(seen) == 1
    assert [c.process for c in crashes] == ["ufep"] and sandbox is None
    assert kernel_lines(text) == list(log_text(text).lines)


def test_a_checks_rules_read_the_log_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Judged as a saved log (every rule of the offline check), the Oops still warns gpu_xid and
    the log is made plain once for gpu_xid, nvswitch_sxid, the Oops reader and the sandbox's line."""
    text = (REAL / GPF).read_text()
    seen = _reads(monkeypatch, text)
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text, "gpu_model: RTX 4090\ngpu_count: 1\n")["gpu_xid"]
    assert verdict == "warn" and "(process ufep; kernel tainted P OE" in actual
    assert seen and len(set(seen)) == len(seen), "one text object read twice"


def test_an_equal_log_of_another_host_is_read_apart() -> None:
    """Keyed by the text object: another host's log of the same words is its own reading (the
    same result), never one host's kept value handed to another."""
    text = (REAL / GPF).read_text()
    other = "".join(list(text))
    assert other == text and other is not text
    first, second = parse_kernel_log(text), parse_kernel_log(other)
    assert second is not first and second == first


def test_a_sandboxs_log_still_names_its_sandbox() -> None:
    """The real gVisor sandbox log (kubernetes-sigs image-builder docs): its first line is the
    sandbox's, read from the shared reading as before."""
    text = (REAL / GVISOR).read_text()
    assert sandbox_of({"kernel_log": ProbeOutput(text, "", 0)}) == parse_kernel_log(text).sandbox
    assert parse_kernel_log(text).sandbox is not None


def test_the_texts_kept_are_bounded() -> None:
    """With room for two texts, a third drops the oldest: it is read again when asked, the same."""
    made: list[str] = []

    @by_text
    def upper(text: str) -> str:
        made.append(text)
        return text.upper()

    upper.kept = 2
    a, b, c = ("".join(["log ", w]) for w in "abc")
    assert [upper(a), upper(b), upper(a), upper(c), upper(b), upper(a)] == [
        "LOG A",
        "LOG B",
        "LOG A",
        "LOG C",
        "LOG B",
        "LOG A",
    ]
    assert made == [a, b, c, a]
    assert len(upper.values) == 2
