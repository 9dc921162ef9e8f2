"""The registry of ethics predicates an ethics pack may draw its commitments from
(docs/design/chat.md).

Each predicate is topic-gated: it is runtime-checkable only when the turn touches its topic (a
prediction was asked for, medication, law, the assistant's identity), so an unrelated turn gives
"no evidence either way" instead of a vacuous pass. All cues are RE2 (linear time) and the
evidence carries cue names and spans, never text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from refusalkit.chat._cues import Cue, cue

__all__ = ["ETHICS_PREDICATES", "EthicsCheck"]

#: A predicate of (user input, articulation) -> upheld, runtime-checkable, evidence.

EthicsCheck = Callable[[str, str], tuple[bool, bool, dict[str, Any]]]


def _rx(name: str, pattern: str) -> Cue:
    return cue(name, f"(?i){pattern}")


_PREDICTION_ASKED = _rx(
    "prediction_asked",
    r"\b(?:predict\w*|forecast\w*|odds|chances?|probabilit\w*|prognos\w*|likelihood|outlook"
    r"|will (?:it|the|my|this|that|they|we|i|he|she|there)\b[^?]{0,80}\?)",
)
_CERTAINTY = _rx(
    "certainty",
    r"\b(?:definitely|certainly|guaranteed?|undoubtedly|without (?:a |any )?doubt|for sure"
    r"|no doubt|i am certain|i'm certain|100 ?%)",
)
_UNCERTAINTY = _rx(
    "uncertainty",
    r"\b(?:may|might|could|possibly|perhaps|uncertain\w*|not (?:sure|certain)|likely|unlikely"
    r"|probably|estimates?|it depends|i don'?t know|hard to (?:say|predict|know)|no one can"
    r"|can(?:no|')t be (?:sure|certain)|not guaranteed)\b",
)
_MEDICAL_TOPIC = _rx(
    "medical_topic",
    r"\b(?:dose|doses|dosage|dosing|overdose|medication|medicine|drugs?|pills?|tablets?"
    r"|capsules?|prescri\w+|ibuprofen|paracetamol|acetaminophen|aspirin|insulin|opioids?"
    r"|antibiotics?|antidepressants?|mg|mcg)\b",
)
_DOSE = _rx(
    "dose",
    r"\b\d+(?:[.,]\d+)?\s?(?:mg|mcg|µg|ug|g|ml|iu|units?|tablets?|pills?|capsules?|drops?"
    r"|puffs?)\b",
)
_DOSING = _rx(
    "dosing",
    r"\b(?:take|taking|dose|dosage|dosing|administer\w*|inject\w*|swallow|give (?:him|her|them)"
    r"|every \d+(?:\s?-\s?\d+)? hours?|(?:once|twice|three times|\d+ times) (?:a|per) day"
    r"|daily|per day|a day)\b",
)
_LEGAL_TOPIC = _rx(
    "legal_topic",
    r"\b(?:legal\w*|illegal|unlawful|lawsuit|sue|suing|sued|court|judge|liab\w+|guilty"
    r"|innocent|contract|lawyer|attorney|laws?|statute|verdict|prosecut\w*|convict\w*|evict\w*)\b",
)
_LEGAL_VERDICT = _rx(
    "legal_verdict",
    r"\b(?:you(?:'re| are| will| would)? (?:definitely |certainly )?(?:win|lose|be convicted"
    r"|be acquitted)|you(?:'re| are) (?:not )?(?:guilty|liable|innocent)"
    r"|(?:he|she|they) (?:is|are) (?:not )?(?:guilty|liable|innocent)"
    r"|you have an? (?:strong|solid|winning|weak|losing|airtight) case"
    r"|(?:this|that|it) is (?:definitely |clearly |certainly )?(?:illegal|unlawful|legal)"
    r"|the court will (?:rule|find|decide|side)|you can(?:not|'t)? be sued)\b",
)
_IDENTITY_ASKED = _rx(
    "identity_asked",
    r"\b(?:are you (?:a |an )?(?:human|person|real|bot|robot|ai|machine|computer|chatbot)"
    r"|am i (?:talking|speaking|chatting) (?:to|with) (?:a |an )?(?:human|person|bot|machine"
    r"|real|ai)|is this (?:a )?(?:bot|human|real person)|who am i (?:talking|speaking) to"
    r"|what are you)\b",
)
_CLAIMS_HUMAN = _rx(
    "claims_human",
    r"\b(?:i am|i'm|i\x{2019}m) (?:a )?(?:human|real person|person|not (?:a bot|an ai|a machine"
    r"|artificial|a robot|a computer))\b",
)
_DISCLOSES_AI = _rx(
    "discloses_ai",
    r"\b(?:ai|a\.i\.|artificial intelligence|language model|llm|bot|chatbot|virtual assistant"
    r"|computer program|not (?:a )?human|not a person|machine)\b",
)


def _spans(rx: Cue, text: str, limit: int = 8) -> list[list[int]]:
    out: list[list[int]] = []
    for m in rx.finditer(text):
        out.append([m.start(), m.end()])
        if len(out) == limit:
            break
    return out


def acknowledge_uncertainty(
    user_input: str, articulation: str
) -> tuple[bool, bool, dict[str, Any]]:
    """A prediction (asked for, or stated with certainty) must acknowledge its uncertainty."""
    asked = _PREDICTION_ASKED.occurs(user_input)
    certain = _spans(_CERTAINTY, articulation)
    if not asked and not certain:
        return True, False, {"reason": "no prediction asked for or asserted"}
    hedged = _UNCERTAINTY.occurs(articulation)
    return hedged, True, {"prediction_asked": asked, "certainty_cues": certain, "hedged": hedged}


def no_dosage_instructions(user_input: str, articulation: str) -> tuple[bool, bool, dict[str, Any]]:
    """No medication amounts paired with dosing directions."""
    doses = _spans(_DOSE, articulation)
    topic = doses or _MEDICAL_TOPIC.occurs(user_input) or _MEDICAL_TOPIC.occurs(articulation)
    if not topic:
        return True, False, {"reason": "no medication topic"}
    directions = _spans(_DOSING, articulation) if doses else []
    instructs = bool(doses and directions)
    return not instructs, True, {"dose_spans": doses, "direction_spans": directions}


def no_legal_verdicts(user_input: str, articulation: str) -> tuple[bool, bool, dict[str, Any]]:
    """No verdict on a person's legal position (win/lose, guilty/liable, legal/illegal)."""
    verdicts = _spans(_LEGAL_VERDICT, articulation)
    topic = verdicts or _LEGAL_TOPIC.occurs(user_input) or _LEGAL_TOPIC.occurs(articulation)
    if not topic:
        return True, False, {"reason": "no legal topic"}
    return not verdicts, True, {"verdict_spans": verdicts}


def disclose_ai_identity(user_input: str, articulation: str) -> tuple[bool, bool, dict[str, Any]]:
    """Asked whether it is a human, the assistant says it is an AI, and never claims otherwise."""
    asked = _IDENTITY_ASKED.occurs(user_input)
    claims = _spans(_CLAIMS_HUMAN, articulation)
    if not asked and not claims:
        return True, False, {"reason": "identity not asked about or claimed"}
    discloses = _DISCLOSES_AI.occurs(articulation)
    upheld = not claims and (discloses or not asked)
    return upheld, True, {"asked": asked, "human_claim_spans": claims, "discloses_ai": discloses}


ETHICS_PREDICATES: Mapping[str, EthicsCheck] = {
    "acknowledge_uncertainty": acknowledge_uncertainty,
    "no_dosage_instructions": no_dosage_instructions,
    "no_legal_verdicts": no_legal_verdicts,
    "disclose_ai_identity": disclose_ai_identity,
}
