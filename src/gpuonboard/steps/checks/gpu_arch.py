"""GPU architecture families (Volta, Ampere, Blackwell...) and the family a GPU name tells
(data/gpu_architectures.yml): read by gpu_family (an NGC release's support) and by model_match
(an order's model naming the family: AWS lists 'NVIDIA B200 Blackwell')."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from gpuonboard.model_names import FAMILIES_FILE as FAMILIES_FILE
from gpuonboard.model_names import GRACE as GRACE
from gpuonboard.model_names import family_words as family_words
from gpuonboard.resources import table_rows
from gpuonboard.steps.checks.once import loaded_once


@loaded_once
def name_families(path: str = str(FAMILIES_FILE)) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each family of data/gpu_architectures.yml (oldest first) with one pattern of its names."""
    out = []
    for row in table_rows(Path(path), "families"):
        family, names = row.get("family"), row.get("names")
        if not isinstance(family, str) or not isinstance(names, list) or not names:
            raise ValueError(f"{path}: each family needs its name and a list of name patterns")
        out.append((family, re.compile("|".join(f"(?:{n})" for n in names))))
    return tuple(out)


@loaded_once
def families(path: str = str(FAMILIES_FILE)) -> tuple[str, ...]:
    """The known families, oldest first."""
    return tuple(f for f, _ in name_families(path))


@functools.lru_cache(maxsize=256)  # (pure over the shipped table: each GPU of a host asks it)
def name_family(name: str) -> str | None:
    """The family a GPU name tells: a family's word in it ('NVIDIA RTX PRO 6000D Blackwell
    Workstation Edition', 'NVIDIA RTX 6000 Ada Generation'), else the first family whose pattern
    matches it in upper case; None: unknown."""
    upper = name.upper()
    words = set(re.split(r"[^A-Z0-9]+", upper))
    said = next((family for word, family in family_words().items() if word in words), None)
    return said or next((family for family, names in name_families() if names.search(upper)), None)


def architecture_problem(
    words: list[str], family: str | None, superchip: bool, cut: bool
) -> tuple[list[str], list[str], str | None]:
    """The ordered architecture words a GPU name does not hold ('NVIDIA B200 Blackwell', as AWS
    lists it, against 'NVIDIA B200'), judged by the GPU's `family`: (problems, words the cut tail
    of the name may hold, why the family cannot be told); 'Grace' is met by a Grace superchip."""
    problems: list[str] = []
    unseen: list[str] = []
    untold = None
    wrong: dict[str, list[str]] = {}  # the family of ordered words it is not -> those words
    for word in words:
        if word == GRACE:
            if cut and not superchip:
                unseen.append(word)
            elif not superchip:
                problems.append("'Grace' ordered, the name is no Grace superchip (GH200, GB200, GB300)")
        elif family is None and cut:
            unseen.append(word)
        elif family is None:
            untold = (
                f"'{word.title()}' ordered, and neither the GPU's name nor the output tells its"
                " architecture (`nvidia-smi -q` prints its Product Architecture)"
            )
        elif family != family_words()[word]:
            wrong.setdefault(family_words()[word], []).append(word.title())
    # (one sentence a family: 'Ada Lovelace' ordered is one word of the order)
    problems += [f"'{' '.join(said)}' ordered, this GPU is {family}" for said in wrong.values()]
    return problems, unseen, untold
