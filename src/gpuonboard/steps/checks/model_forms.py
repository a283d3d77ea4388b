"""The forms one GPU model was sold in, each named by a letter joined to its number (data/
gpu_name_markers.yml `forms`: the 'Tesla K40m' passive module and 'Tesla K40c' card of the K40),
as `match_model` (steps/checks/model_match.py) weighs an ordered word against a name's words:
an ordered model is met by any of its forms, an ordered form by that form only, and a name
without the form cannot tell it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuonboard.model_names import _name_tokens
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.checks.once import loaded_once

MARKERS_FILE = DATA_DIR / "gpu_name_markers.yml"


@dataclass(frozen=True)
class FormJudged:
    """What the ordered words that are a model's form say against a name: the words left to
    judge as any other, the problems (another form delivered) and why a form cannot be told."""

    want: list[str]
    problems: list[str]
    untold: str | None


@loaded_once
def model_forms(path: str = str(MARKERS_FILE)) -> dict[str, tuple[str, str]]:
    """Each form's normalised word -> (its model's word, the form as nvidia-smi writes it):
    {'K40M': ('K40', 'K40m'), ...} from the rows of data/gpu_name_markers.yml `forms`."""
    out: dict[str, tuple[str, str]] = {}
    for row in table_rows(Path(path), "forms"):
        model = _name_tokens(str(row.get("model") or "")).tokens
        forms = row.get("forms")
        if len(model) != 1 or not isinstance(forms, list) or not forms:
            raise ValueError(f"{path}: forms row {row.get('model')!r} needs one model word and its forms")
        for form in forms:
            word = _name_tokens(str(form)).tokens
            if len(word) != 1 or word[0] == model[0]:
                raise ValueError(f"{path}: form {form!r} of {model[0]} is not one word of its own")
            out[word[0]] = (model[0], str(form))
    return out


def is_form_of(token: str, have: frozenset[str]) -> bool:
    """Whether the name holds a form of the ordered model word: 'K40' by 'Tesla K40m'."""
    forms = model_forms()
    return any(forms.get(w, ("",))[0] == token for w in have)


def forms_judged(want: list[str], have: frozenset[str]) -> FormJudged:
    """The ordered forms ('K40m') the name does not hold: another form of the model delivered
    ('Tesla K40c') is a problem naming both; the model named without its form ('Tesla K40') cannot
    tell it. Other ordered words are left to judge."""
    forms = model_forms()
    left: list[str] = []
    problems: list[str] = []
    untold: str | None = None
    for token in want:
        model, shown = forms.get(token, ("", ""))
        if not model or token in have:
            left.append(token)
            continue
        other = sorted(forms[w][1] for w in have if forms.get(w, ("",))[0] == model)
        if other:
            problems.append(f"'{shown}' ordered, the name says '{other[0]}': another form of the {model}")
        elif model in have:
            untold = untold or (
                f"'{shown}' ordered, and the name says '{model}', which does not tell which form of"
                f" the {model} it is"
            )
        else:
            left.append(token)
    return FormJudged(left, problems, untold)
