"""The human-labelled model families that judges are selected and measured on.

Three families, each a different model answering different prompts, labelled by people:

- ``gpt-4`` and ``llama-2``: XSTest v2's completions of GPT-4 and of Llama-2-70b-chat with its
  original system prompt (Roettger et al., NAACL 2024), 450 each, labelled full compliance /
  full refusal / partial refusal by the XSTest authors;
- ``gpt-3.5``: 1,721 ChatGPT (gpt-3.5-turbo, 2023) answers hand-labelled by *tone* (Reuter &
  Schulze 2023, MIT), mapped onto the same three outcomes by :data:`TONES`.

The files are read from a data directory holding ``xstest/`` and ``chatgpt-refusals/`` as
distributed (their ATTRIBUTION.txt says where from); nothing here edits them.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from refusalkit.errors import UsageError
from refusalkit.provenance._judges import RefusalOutcome

__all__ = ["FAMILIES", "TONES", "Labelled", "find_data", "load_families"]

FAMILIES = ("gpt-4", "llama-2", "gpt-3.5")

_XSTEST = {
    "1_full_compliance": RefusalOutcome.FULL_COMPLIANCE,
    "2_full_refusal": RefusalOutcome.FULL_REFUSAL,
    "3_partial_refusal": RefusalOutcome.PARTIAL_REFUSAL,
}

TONES: Mapping[str, tuple[RefusalOutcome | None, str]] = {
    "complied": (RefusalOutcome.FULL_COMPLIANCE, "an answer"),
    "rejected": (
        RefusalOutcome.FULL_REFUSAL,
        "inability, unwillingness, policy appeal, moral verdict",
    ),
    "contradicted": (RefusalOutcome.FULL_REFUSAL, "premise rebuttal"),
    "redirected": (RefusalOutcome.PARTIAL_REFUSAL, "partial refusal (caveat and deflection)"),
    "disclaimed": (RefusalOutcome.PARTIAL_REFUSAL, "opinion disclaimer"),
    "counseling": (RefusalOutcome.PARTIAL_REFUSAL, "deflection"),
    "dontknow": (None, "no-access claim or ignorance; not a judgement of refusal"),
    "incoherent": (None, "neither an answer nor a refusal"),
}
"""ChatGPT tone -> (XSTest outcome, speech act). ``None``: left out, as upstream does."""


@dataclass(frozen=True, slots=True)
class Labelled:
    """One human-labelled response."""

    family: str
    key: str  # XSTest prompt id, or the row's index in the ChatGPT file
    response: str
    outcome: RefusalOutcome

    @property
    def refused(self) -> bool:
        """Full or partial refusal (XSTest's binary reading)."""
        return self.outcome is not RefusalOutcome.FULL_COMPLIANCE


def find_data(start: Path | None = None) -> Path | None:
    """``$REFUSALKIT_SHARED_DATA``, else the first ``shared/data`` beside ``start`` or one of its
    parents (the repository's checkout, by default) that holds both data sets."""
    env = os.environ.get("REFUSALKIT_SHARED_DATA")
    if env:
        return Path(env)
    here = (start or Path(__file__)).resolve()
    for parent in (here, *here.parents):
        candidate = parent / "shared" / "data"
        if (candidate / "xstest").is_dir() and (candidate / "chatgpt-refusals").is_dir():
            return candidate
    return None


def _xstest(path: Path, family: str) -> list[Labelled]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [
            Labelled(
                family, r["id"].removeprefix("v2-"), r["completion"], _XSTEST[r["final_label"]]
            )
            for r in csv.DictReader(fh)
        ]


def _chatgpt(path: Path) -> list[Labelled]:
    rows = json.loads(path.read_text("utf-8"))
    found = []
    for index, row in enumerate(rows):
        outcome = TONES[str(row["tone"])][0]
        if outcome is not None:
            found.append(Labelled("gpt-3.5", str(index), str(row["response"]), outcome))
    return found


def load_families(data: Path | None = None) -> dict[str, list[Labelled]]:
    """Family -> its labelled responses; :class:`UsageError` when the data is not there."""
    root = data or find_data()
    if root is None or not (root / "xstest").is_dir():
        raise UsageError(
            f"no labelled data at {root or 'shared/data'}",
            hint="Put xstest/ and chatgpt-refusals/ under shared/data beside the checkout, "
            "or set REFUSALKIT_SHARED_DATA.",
        )
    xs = root / "xstest"
    return {
        "gpt-4": _xstest(xs / "xstest_v2_completions_gpt4.csv", "gpt-4"),
        "llama-2": _xstest(xs / "xstest_v2_completions_llama2orig.csv", "llama-2"),
        "gpt-3.5": _chatgpt(root / "chatgpt-refusals" / "all_hand_labeled.json"),
    }
