"""Round 37 (measure37e 04): a name nvidia-smi's table cut to `NVIDIA RTX PRO 6000 Blac...` may
be the Max-Q Workstation Edition, a 300 W card (its power limit reaches 325 W at most: the real
-q -x of one), or the 600 W Workstation Edition: the power cap in the same row tells them apart.
A 600 W cap passes an 'RTX PRO 6000 Blackwell' order; a 300 W cap (a real 2-GPU vLLM box's table)
still warns "may be Max-Q"; a cap not read warns as before."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import checks

FIXTURES = Path(__file__).parents[3] / "fixtures"
SESSION_600W = (
    FIXTURES / "sessions" / "page__venv-python+lsb_release+uname+pip+nvidia-smi__vastai-container-prompt__"
    "rtx-pro-6000-blac-name-cut-600W-580.95.05__krea-report.txt"
)
SESSION_300W = (
    FIXTURES
    / "sessions"
    / "page__nvidia-smi+top-b__rtx-pro-6000-blac-name-cut-2gpu-300W-max-q-580.95.05-vllm-workers__"
    "vllm-failure-analysis.txt"
)
ORDER = "gpu_model: RTX PRO 6000 Blackwell\n"
MAXQ = "may be Max-Q"


def test_a_600w_cap_is_no_max_q(tmp_path: Path) -> None:
    by_rule = {c.name: c for c in checks(tmp_path, SESSION_600W.name, SESSION_600W.read_text(), ORDER)}
    model = by_rule["gpu_model"]
    assert model.verdict == "pass", model
    assert MAXQ not in model.detail


def test_a_300w_cap_may_still_be_the_max_q(tmp_path: Path) -> None:
    by_rule = {c.name: c for c in checks(tmp_path, SESSION_300W.name, SESSION_300W.read_text(), ORDER)}
    assert by_rule["gpu_model"].verdict == "warn"
    assert MAXQ in by_rule["gpu_model"].detail


def test_the_cap_decides_by_the_max_q_cards_highest_limit() -> None:
    name = "NVIDIA RTX PRO 6000 Blac..."
    assert match_model("RTX PRO 6000 Blackwell", name).verdict == "warn"  # (no cap read)
    assert match_model("RTX PRO 6000 Blackwell", name, power_cap_w=325.0).verdict == "warn"
    assert match_model("RTX PRO 6000 Blackwell", name, power_cap_w=600.0).verdict == "pass"
