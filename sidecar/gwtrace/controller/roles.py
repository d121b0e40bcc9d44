"""Who may do what: the four roles of people, the pilots' token, and the checks that keep each within its bounds.

A ``Principal`` is made by the server from a verified token (``tokens``) or
the pilots' static token, or by the CLI for an admin on the store's own
machine; nothing a client sends can name its own role. Each check answers
None (allowed) or the one line that says why not.

| role      | rules it may set or remove                         | commands it may queue          |
|-----------|----------------------------------------------------|--------------------------------|
| admin     | any                                                | any                            |
| shifter   | any; removes any but an admin's                    | any                            |
| siteadmin | scopes naming one of their sites; removes those,   | glideins at their sites        |
|           | but not an admin's or shifter's                    |                                |
| user      | scopes naming themselves as owner; removes their   | their own running jobs         |
|           | own (and ``decide`` caps them: decide.py)          |                                |
| pilot     | none: asks (decide) and answers (results) only     | none                           |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Optional

from .rules import Rule

PERSON_ROLES = ("admin", "shifter", "siteadmin", "user")


@dataclass(frozen=True)
class Principal:
    """Who is asking: a name (a token's subject or username claim), one role and, for a site admin, sites."""

    name: str
    role: str
    sites: FrozenSet[str] = field(default_factory=frozenset)

    @property
    def is_person(self) -> bool:
        return self.role in PERSON_ROLES


#: The pilots' static token (``GWTRACE_SERVER_TOKEN``): may ask for decisions and send results.
PILOT = Principal("pilot", "pilot")


def may_set(who: Principal, rule: Rule) -> Optional[str]:
    """Why ``who`` may not set ``rule``, or None."""
    if who.role in ("admin", "shifter"):
        return None
    if who.role == "siteadmin":
        site = rule.scope.get("site")
        if site is None or site not in who.sites:
            mine = ", ".join(sorted(who.sites)) or "none"
            return f"a site admin sets rules only for their sites (scope site=...; yours: {mine})"
        return None
    if who.role == "user":
        if rule.scope.get("owner") != who.name:
            return f"a user sets rules only for their own jobs (scope owner={who.name})"
        return None
    return f"the {who.role} token may ask for decisions and send results, not change rules"


def may_remove(who: Principal, rule: Rule) -> Optional[str]:
    """Why ``who`` may not remove ``rule``, or None."""
    if who.role == "admin":
        return None
    if who.role == "shifter":
        return None if rule.role != "admin" else f"{rule.id} is an admin's rule: only an admin removes it"
    if who.role == "siteadmin":
        if rule.scope.get("site") not in who.sites:
            return f"{rule.id} is not about one of your sites"
        if rule.role in ("admin", "shifter"):
            return f"{rule.id} is a{'n' if rule.role == 'admin' else ''} {rule.role}'s rule: you cannot remove it"
        return None
    if who.role == "user":
        if rule.role != "user" or rule.set_by != who.name:
            return f"{rule.id} is not your rule: a user removes only their own"
        return None
    return f"the {who.role} token may not remove rules"


def may_command(who: Principal, site: Optional[str], job: Optional[str], job_owner: Optional[str]) -> Optional[str]:
    """Why ``who`` may not send a command to a glidein at ``site`` (about ``job``, owned by ``job_owner``)."""
    if who.role in ("admin", "shifter"):
        return None
    if who.role == "siteadmin":
        return None if site is not None and site in who.sites else "a site admin commands only glideins at their sites"
    if who.role == "user":
        if job is None:
            return "a user commands only their own jobs (give the job)"
        if job_owner != who.name:
            return f"job {job} is not yours (or is not running on that glidein)"
        return None
    return f"the {who.role} token may not queue commands"


def may_read_audit(who: Principal) -> bool:
    return who.role in ("admin", "shifter", "siteadmin")
