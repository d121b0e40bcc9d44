"""Which rule decides, and why: the controller's precedence (docs/control.md, "Precedence").

1. Only rules whose scope matches the question (every field the rule names
   equals the question's) and that have not expired take part.
2. Each field (``level``, ``sample_ratio``) is decided on its own: among the
   rules that set it, the most specific scope wins (``rules.specificity``:
   trace > job > glidein > owner > entry > site > factory > frontend); equally
   specific rules: the newest wins.
3. Limits: a rule set by an admin or a site admin for a site (its scope names
   a site and no owner, job, glidein or trace) is a ceiling for users' rules:
   when the winner was set by a user and asks for more (a higher level, a
   higher ratio) than the lowest such ceiling, the ceiling's value is taken. So
   a site admin's ``off`` at their site binds every user's rule there, however
   specific. An admin's default for everything is a default, not a ceiling.

Pure functions over a list of rules: no store, no clock but the one passed in.
``RuleIndex`` keeps the rules bucketed by their most specific field so that a
question looks at the few rules that can match it, not all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .rules import LEVELS, SCOPE_FIELDS, Rule, level_rank

#: How long a node may keep a decision (seconds), unless a rule that took part expires sooner.
DEFAULT_TTL_S = 300

_LIMIT_ROLES = ("admin", "siteadmin")


@dataclass(frozen=True)
class FieldChoice:
    """How one field was decided: the value, the rule that gave it, the limit that cut it (if any)."""

    value: Any = None
    rule: Optional[Rule] = None
    capped_by: Optional[Rule] = None
    asked: Any = None                     # the winner's own value, before a limit


@dataclass(frozen=True)
class Decision:
    level: FieldChoice
    sample_ratio: FieldChoice
    ttl_s: int

    @property
    def rule(self) -> Optional[Rule]:
        """The deciding rule: the one that gave the level, else the one that gave the ratio."""
        choice = self.level if self.level.rule is not None else self.sample_ratio
        return choice.capped_by or choice.rule

    def reason(self) -> str:
        parts = []
        for name, choice in (("level", self.level), ("sample_ratio", self.sample_ratio)):
            if choice.rule is None:
                continue
            why = f"{name} {choice.value} from {choice.rule.id}"
            if choice.capped_by is not None:
                why += (f" (asked {choice.asked}; capped by {choice.capped_by.id}, a {choice.capped_by.role}'s "
                        f"limit)")
            if choice.rule.reason:
                why += f": {choice.rule.reason}"
            parts.append(why)
        return "; ".join(parts) or "no rule matches: use your own default"


class RuleIndex:
    """The rules, bucketed by their most specific scope field and its value."""

    def __init__(self, rules: Iterable[Rule]):
        self.rules = list(rules)
        self._global: List[Rule] = []
        self._buckets: Dict[Tuple[str, str], List[Rule]] = {}
        for rule in self.rules:
            first = next((k for k in SCOPE_FIELDS if k in rule.scope), None)
            if first is None:
                self._global.append(rule)
            else:
                self._buckets.setdefault((first, rule.scope[first]), []).append(rule)

    def candidates(self, query: Mapping[str, Any]) -> List[Rule]:
        """The rules whose scope matches the question (expired ones included)."""
        out = [r for r in self._global]
        for key in SCOPE_FIELDS:
            value = query.get(key)
            if value:
                out.extend(r for r in self._buckets.get((key, value), ()) if r.matches(query))
        return out


def _newest_most_specific(rules: List[Rule]) -> Optional[Rule]:
    return max(rules, key=lambda r: (r.specificity, r.created, r.id), default=None)


def _value(rule: Rule, name: str) -> Any:
    return rule.level if name == "level" else rule.sample_ratio


def _more(name: str, a: Any, b: Any) -> bool:
    """Whether value ``a`` asks for more tracing than ``b``."""
    return level_rank(a) > level_rank(b) if name == "level" else a > b


def _choose(name: str, live: List[Rule]) -> FieldChoice:
    setting = [r for r in live if _value(r, name) is not None]
    winner = _newest_most_specific(setting)
    if winner is None:
        return FieldChoice()
    asked = _value(winner, name)
    if winner.role == "user":
        limits = [r for r in setting if r.role in _LIMIT_ROLES and r.is_site_rule()]
        rank = (lambda r: level_rank(r.level)) if name == "level" else (lambda r: r.sample_ratio)
        lowest = min(limits, key=lambda r: (rank(r), -r.created), default=None)
        if lowest is not None and _more(name, asked, _value(lowest, name)):
            return FieldChoice(_value(lowest, name), winner, lowest, asked)
    return FieldChoice(asked, winner, None, asked)


def decide(index: RuleIndex, query: Mapping[str, Any], now: float) -> Decision:
    """The decision for one question (``query``: scope field -> value, the node's identity)."""
    live = [r for r in index.candidates(query) if not r.expired(now)]
    ttl = min([DEFAULT_TTL_S] + [max(1, int(r.expires - now)) for r in live if r.expires is not None])
    return Decision(_choose("level", live), _choose("sample_ratio", live), ttl)


def _status(rule: Rule, decision: Decision, now: float) -> str:
    if rule.expired(now):
        return "expired: ignored"
    said = []
    for name in ("level", "sample_ratio"):
        choice: FieldChoice = getattr(decision, name)
        value = _value(rule, name)
        if value is None:
            continue
        if choice.rule is rule:
            said.append(f"won {name}" + (f" but was capped by {choice.capped_by.id}" if choice.capped_by else ""))
        elif choice.capped_by is rule:
            said.append(f"capped {name} of {choice.rule.id} (a {rule.role}'s limit binds users' rules)")
        elif choice.rule is not None:
            winner = choice.rule
            why = ("less specific" if rule.specificity < winner.specificity else "older") + f" than {winner.id}"
            said.append(f"lost {name}: {why}")
    return "; ".join(said)


def explain(index: RuleIndex, query: Mapping[str, Any], now: float) -> Dict[str, Any]:
    """The decision, which rule gave each field and why, and every other matching rule and why it lost."""
    decision = decide(index, query, now)
    matched = sorted(index.candidates(query), key=lambda r: (-r.specificity, -r.created, r.id))
    return {
        "question": {k: query[k] for k in SCOPE_FIELDS if query.get(k)},
        "level": decision.level.value,
        "sample_ratio": decision.sample_ratio.value,
        "rule": decision.rule.id if decision.rule else None,
        "why": decision.reason(),
        "ttl_s": decision.ttl_s,
        "matched": [{"rule": r.to_dict(), "status": _status(r, decision, now)} for r in matched],
        "levels": list(LEVELS),
    }
