"""The forms one model was sold in (data/gpu_name_markers.yml `forms`): the Kepler Teslas' 'c'
card, 'm' module and OEM forms are the same GPU, so an order for the model is met by any of
them; an order naming a form is met by that form only; a name without the form cannot tell it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.model_names import _name_tokens
from gpuonboard.steps.checks.model_forms import model_forms
from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
K20M = "nvidia-smi__tesla-k20m__1gpu__driver361.93.02.txt"  # one 'Tesla K20m', 4799MiB


def _judge(tmp_path: Path, order: str) -> tuple[str, str]:
    text = (REAL / K20M).read_text(encoding="utf-8")
    return verdicts(tmp_path, K20M, text, order)["gpu_model"][0], details(tmp_path, K20M, text, order)[
        "gpu_model"
    ]


@pytest.mark.parametrize("model", ["K20", "Tesla K20", "NVIDIA Tesla K20 5GB", "K20m"])
def test_the_k20m_is_a_k20(tmp_path: Path, model: str) -> None:
    """The real 'Tesla K20m' table: an order for the K20 failed ("'K20' ordered, the name says
    'K20M', another model"); the K20m is the K20's passive server module."""
    assert _judge(tmp_path, f"gpu_model: '{model}'\n")[0] == "pass"


def test_another_form_of_the_k20_fails_naming_both(tmp_path: Path) -> None:
    verdict, detail = _judge(tmp_path, "gpu_model: K20c\n")
    assert verdict == "fail"
    assert "'K20c' ordered, the name says 'K20m': another form of the K20" in detail


def test_the_k20x_is_no_form_of_the_k20(tmp_path: Path) -> None:
    """The K20X has more cores than the K20: still another model on the K20m box."""
    assert _judge(tmp_path, "gpu_model: K20X\n")[0] == "fail"


@pytest.mark.parametrize(
    ("ordered", "delivered", "verdict"),
    [
        # 'Product Name : Tesla K40c' (`nvidia-smi -q`, https://github.com/NVIDIA/k8s-device-plugin/issues/265)
        ("K40", "Tesla K40c", "pass"),
        ("Tesla K40 12GB", "Tesla K40c", "pass"),
        ("K40c", "Tesla K40c", "pass"),
        ("K40m", "Tesla K40c", "fail"),
        ("K40m", "Tesla K40", "unverified"),
        ("K20", "Tesla K20Xm", "fail"),
        ("K20X", "Tesla K20Xm", "pass"),
        ("K40", "Tesla K80", "fail"),
    ],
)
def test_forms_by_name(ordered: str, delivered: str, verdict: str) -> None:
    assert match_model(ordered, delivered, 11441).verdict == verdict


def test_a_name_without_the_form_says_why_it_is_untold() -> None:
    why = match_model("K40m", "Tesla K40", 11441).why
    assert why == "'K40m' ordered, and the name says 'K40', which does not tell which form of the K40 it is"


def test_every_form_is_one_word_of_its_own_model() -> None:
    """Each row's forms read as one word that starts with its model's (a suffix the name
    normalisation splits off, as 'D' of 'K40d', would be read as a product marker instead)."""
    forms = model_forms()
    assert forms
    for word, (model, shown) in forms.items():
        assert _name_tokens(shown).tokens == (word,) and word.startswith(model) and word != model
