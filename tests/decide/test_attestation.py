"""The ``@attestation`` stage: compact JWS (RFC 7515), EdDSA (RFC 8037), real Ed25519 keys."""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any

import pytest

from refusalkit.decide import DecisionPoint, Pack, mint_token, public_key_from_seed
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode

SEED = os.urandom(32)
OTHER = os.urandom(32)
FUTURE = time.time() + 3600


@pytest.fixture
def dp(keyring: Keyring) -> DecisionPoint:
    pub = base64.b64encode(public_key_from_seed(SEED)).decode()
    data = {
        "policy": "t",
        "version": "1",
        "default": "allow",
        "attestation": {"trusted_keys": {"k1": pub}},
        "rules": [],
    }
    return DecisionPoint(Pack.from_mapping(data), keyring)


def decide(dp: DecisionPoint, token: Any, agent: Any = "coder") -> Any:
    caller: dict[str, Any] = {"agent": agent}
    if token is not None:
        caller["token"] = token
    return dp.decide({"tool": "fs.read", "caller": caller})


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_a_valid_token_passes(dp: DecisionPoint, keyring: Keyring) -> None:
    token = mint_token(SEED, "k1", "coder", FUTURE)
    d = decide(dp, token)
    assert d.action is Action.ALLOW
    step = d.why_trail[0]
    assert (step.rule, step.matched, step.field) == ("@attestation", False, "caller.token")
    assert step.value == keyring.redactor().token("attestation-token", token)
    assert token not in json.dumps(d.to_dict())


@pytest.mark.parametrize(
    ("make", "agent", "detail"),
    [
        (lambda: None, "coder", "no caller.token"),
        (lambda: 12345, "coder", "not a string"),
        (lambda: "not-a-jws", "coder", "compact JWS"),
        (lambda: mint_token(SEED, "k1", "coder", time.time() - 5), "coder", "expired"),
        (lambda: mint_token(OTHER, "k1", "coder", FUTURE), "coder", "signature"),
        (lambda: mint_token(SEED, "k9", "coder", FUTURE), "coder", "kid"),
        (lambda: mint_token(SEED, "k1", "coder", FUTURE), "researcher", "sub"),
        (lambda: mint_token(SEED, "k1", "coder", FUTURE), None, "sub"),
        (lambda: mint_token(SEED, "k1", "coder", FUTURE, extra={"nbf": FUTURE}), "coder", "nbf"),
        (lambda: mint_token(SEED, "k1", "coder", "soon"), "coder", "exp"),  # type: ignore[arg-type]
        (
            lambda: (
                b64({"alg": "HS256", "kid": "k1"})
                + "."
                + mint_token(SEED, "k1", "coder", FUTURE).split(".", 1)[1]
            ),
            "coder",
            "alg",
        ),
        (
            lambda: (
                b64({"alg": "none", "kid": "k1"}) + "." + b64({"sub": "coder", "exp": FUTURE}) + "."
            ),
            "coder",
            "alg",
        ),
    ],
)
def test_bad_tokens_fail_attestation(dp: DecisionPoint, make: Any, agent: Any, detail: str) -> None:
    d = decide(dp, make(), agent)
    assert (d.action, d.reason_code, d.matched_rule) == (
        Action.DENY,
        ReasonCode.ATTESTATION_FAILED,
        "@attestation",
    )
    assert d.retryable
    (step,) = d.why_trail
    assert step.decisive
    assert detail in (step.detail or ""), step.detail


def test_a_cached_verification_still_checks_claims(dp: DecisionPoint) -> None:
    token = mint_token(SEED, "k1", "coder", FUTURE)
    assert decide(dp, token).action is Action.ALLOW
    assert decide(dp, token, "intruder").reason_code is ReasonCode.ATTESTATION_FAILED
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert decide(dp, tampered).reason_code is ReasonCode.ATTESTATION_FAILED


def test_example_tokens_verify_with_the_example_key() -> None:
    key = json.loads(example_path("example-attestation-key.json").read_text())
    assert "EXAMPLE ONLY" in key["warning"]
    seed = base64.b64decode(key["private_seed_b64"])
    assert base64.b64encode(public_key_from_seed(seed)).decode() == key["public_key_b64"]


def sign_raw(payload: str, seed: bytes = SEED, kid: str = "k1") -> str:
    """A compact EdDSA JWS over exactly ``payload`` (for payloads ``json.dumps`` won't write)."""
    from joserfc import jws  # noqa: PLC0415
    from joserfc.jwk import OKPKey  # noqa: PLC0415

    def b64u(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    key = OKPKey.import_key(
        {"kty": "OKP", "crv": "Ed25519", "x": b64u(public_key_from_seed(seed)), "d": b64u(seed)}
    )
    import warnings  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jws.serialize_compact(
            {"alg": "EdDSA", "kid": kid}, payload, key, algorithms=["EdDSA"]
        )


LATER = int(FUTURE)


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ('{"sub":"coder","exp":NaN}', "non-finite"),
        ('{"sub":"coder","exp":1e999}', "non-finite"),
        ('{"sub":"coder","exp":Infinity}', "non-finite"),
        (f'{{"sub":"coder","exp":{LATER}.5}}', "exp is not an integer"),
        ('{"sub":"coder","exp":99999999999999}', "exp is not an integer"),
        (f'{{"sub":"coder","exp":{LATER},"nbf":false}}', "nbf is not an integer"),
        (f'{{"sub":"coder","exp":{LATER},"iat":"yesterday"}}', "iat is not an integer"),
        (f'{{"sub":"coder","exp":{LATER},"exp":99999999999}}', "duplicate claim"),
        (f'{{"sub":"intruder","sub":"coder","exp":{LATER}}}', "duplicate claim"),
        ('{"sub":"coder","exp":true}', "exp is not an integer"),
        ('{"sub":"coder"}', "no exp"),
    ],
)
def test_claims_are_strict(dp: DecisionPoint, payload: str, detail: str) -> None:
    d = decide(dp, sign_raw(payload))
    assert (d.action, d.reason_code) == (Action.DENY, ReasonCode.ATTESTATION_FAILED)
    assert detail in (d.why_trail[0].detail or "")


def test_integer_claims_in_range_pass(dp: DecisionPoint) -> None:
    payload = f'{{"sub":"coder","exp":{LATER},"nbf":0,"iat":{LATER - 7200}}}'
    assert decide(dp, sign_raw(payload)).action is Action.ALLOW
