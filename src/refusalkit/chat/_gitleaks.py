"""gitleaks' default secret rules, compiled with RE2 and run the way gitleaks runs them.

The rule file ships unmodified as package data (``rules/gitleaks.toml``, MIT, with its LICENSE and
ATTRIBUTION.txt) and loads only with the SHA-256 pinned here, so a changed file is noticed. Each
rule (docs/design/chat.md, "Secret rules") has a regex in RE2 syntax, lower-case keywords, an
optional Shannon-entropy floor for the captured secret and optional allowlists; the matching
semantics follow gitleaks' detector:

* keywords are a prefilter: one RE2 set over the text names the keywords that occur, and only the
  rules with one of them (or with none) run their regex: a few regexes per turn, not 222;
* the secret is the rule's ``secretGroup``, else its first non-empty capture group, else the
  whole match;
* a rule with an entropy floor keeps a secret only above it; ``generic-*`` rules also need a digit;
* the global allowlist (regexes and stopwords on the secret) and each rule's allowlists (target
  ``secret``, ``match`` or ``line``; ``OR`` or ``AND``) drop known false positives. Path criteria
  cannot apply to a chat turn: an ``AND`` allowlist that needs a path never matches, and rules
  that only apply to certain paths are not loaded.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import re2

from refusalkit.chat._cues import matches, search_set
from refusalkit.chat._pinned import read_pinned
from refusalkit.chat._screen import screen

__all__ = ["RULES_PATH", "RULES_SHA256", "GitleaksRules", "Leak", "load_rules", "shannon_entropy"]

RULES_PATH = Path(__file__).resolve().parent / "rules" / "gitleaks.toml"
RULES_SHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"
_MAX_MEM = 64 << 20  # a few rules (generic-api-key) need more than RE2's default 8 MiB


class Leak(NamedTuple):
    """One rule's finding: the rule id, the character span of the secret, and where the whole
    match starts (the text between is the secret's label, e.g. ``api_key = ``)."""

    rule: str
    start: int
    end: int
    match_start: int


def shannon_entropy(text: str) -> float:
    """Shannon entropy in bits per character (gitleaks' ``shannonEntropy``)."""
    if not text:
        return 0.0
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in Counter(text).values())


def _compile(pattern: str) -> Any:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    return re2.compile(pattern, options)


@dataclass(frozen=True, slots=True)
class Allowlist:
    """gitleaks ``[[rules.allowlists]]`` (or the global ``[allowlist]``) for a chat turn."""

    regexes: tuple[Any, ...]
    stopwords: tuple[str, ...]
    target: str
    conjunctive: bool
    needs_path: bool

    @classmethod
    def from_toml(cls, table: Mapping[str, Any]) -> Allowlist:
        """From the TOML table."""
        return cls(
            tuple(_compile(rx) for rx in table.get("regexes", ())),
            tuple(w.lower() for w in table.get("stopwords", ())),
            str(table.get("regexTarget", "secret")),
            str(table.get("condition", "OR")).upper() == "AND",
            bool(table.get("paths")),
        )

    def allows(self, secret: str, match: str, line: str) -> bool:
        """Whether this allowlist drops the finding."""
        subject = {"match": match, "line": line}.get(self.target, secret)
        checks = []
        if self.regexes:
            checks.append(any(rx.search(subject) for rx in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        if self.conjunctive:
            return not self.needs_path and bool(checks) and all(checks)
        return any(checks)


@dataclass(frozen=True, slots=True)
class Rule:
    """One gitleaks rule, compiled."""

    id: str
    rx: Any
    secret_group: int
    entropy: float
    keywords: tuple[str, ...]
    allowlists: tuple[Allowlist, ...]

    def secret_span(self, m: Any) -> tuple[int, int]:
        """The span of the secret within match ``m`` (gitleaks' choice of group)."""
        if self.rx.groups and self.secret_group:
            if self.secret_group > self.rx.groups:
                return -1, -1
            start, end = m.span(self.secret_group)
            return start, end
        for group in range(1, self.rx.groups + 1):
            start, end = m.span(group)
            if end > start:
                return start, end
        start, end = m.span()
        return start, end

    def keeps(self, secret: str) -> bool:
        """The entropy floor (and, for ``generic-*`` rules, a digit)."""
        if not self.entropy:
            return True
        if shannon_entropy(secret) <= self.entropy:
            return False
        return not self.id.startswith("generic") or any(c.isdigit() for c in secret)


class GitleaksRules:
    """The compiled rules and their keyword prefilter (one RE2 set pass per text)."""

    def __init__(self, rules: Sequence[Rule], allowlist: Allowlist) -> None:
        self.rules = tuple(rules)
        self.allowlist = allowlist
        keywords = sorted({k for r in self.rules for k in r.keywords})
        self._keywords = keywords
        self._by_keyword = {
            k: [i for i, r in enumerate(self.rules) if k in r.keywords] for k in keywords
        }
        self._always = [i for i, r in enumerate(self.rules) if not r.keywords]
        options = re2.Options()
        options.case_sensitive = False
        options.max_mem = _MAX_MEM
        self._prefilter = search_set((re2.escape(k) for k in keywords), options)
        # Rules with a one- or two-letter keyword ("ey", "s.", "sk") and the generic rule (its
        # keywords "key", "api", "token" are in most prose) are candidates in nearly every text:
        # one set pass over their screens says which of them can match at all.
        self._confirmable = [
            i
            for i, r in enumerate(self.rules)
            if r.id.startswith("generic") or any(len(k) <= 2 for k in r.keywords)
        ]
        self._confirm = search_set(screen(self.rules[i].rx.pattern) for i in self._confirmable)

    def candidates(self, text: str, *, confirm: bool = True) -> list[Rule]:
        """The rules whose keywords occur in ``text`` (and those without keywords); with
        ``confirm``, less those of the common-keyword rules whose regex matches nowhere in it
        (a rule without a match finds nothing, so the findings are the same)."""
        chosen = set(self._always)
        for hit in matches(self._prefilter, text):
            chosen.update(self._by_keyword[self._keywords[hit]])
        common = chosen.intersection(self._confirmable) if confirm else set()
        if common:
            matched = {self._confirmable[j] for j in matches(self._confirm, text)}
            chosen -= common - matched
        return [self.rules[i] for i in sorted(chosen)]

    def scan(self, text: str, *, confirm: bool = True) -> Iterator[Leak]:
        """Every finding in ``text`` that survives entropy floors and allowlists (``confirm``:
        see ``candidates``; without it, the reference)."""
        for rule in self.candidates(text, confirm=confirm):
            for m in rule.rx.finditer(text):
                start, end = rule.secret_span(m)
                if start < 0:
                    continue
                secret = text[start:end]
                if not rule.keeps(secret) or self._allowed(rule, secret, m, text):
                    continue
                yield Leak(rule.id, start, end, m.start())

    def _allowed(self, rule: Rule, secret: str, m: Any, text: str) -> bool:
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start : line_end if line_end >= 0 else len(text)]
        lists = (self.allowlist, *rule.allowlists)
        return any(a.allows(secret, m.group(0), line) for a in lists)


def _rule(table: Mapping[str, Any]) -> Rule | None:
    if "regex" not in table or "path" in table:  # path-scoped rules need a file path
        return None
    return Rule(
        str(table["id"]),
        _compile(table["regex"]),
        int(table.get("secretGroup", 0)),
        float(table.get("entropy", 0.0)),
        tuple(k.lower() for k in table.get("keywords", ())),
        tuple(Allowlist.from_toml(a) for a in table.get("allowlists", ())),
    )


@functools.cache
def load_rules(path: Path | None = None) -> GitleaksRules:
    """Load, verify (pinned SHA-256) and compile the rule file; a changed file is fatal."""
    raw = read_pinned(path or RULES_PATH, RULES_SHA256, "the secret rules")
    data = tomllib.loads(raw.decode("utf-8"))
    rules = [r for r in map(_rule, data["rules"]) if r is not None]
    return GitleaksRules(rules, Allowlist.from_toml(data.get("allowlist", {})))
