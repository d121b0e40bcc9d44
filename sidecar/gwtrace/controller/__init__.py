"""Who traces what: rules, decisions, roles and the back channel to running glideins (docs/control.md).

``rules`` is the rule model, ``decide`` the precedence (pure functions),
``roles`` who may do what, ``tokens`` bearer-token verification (pyjwt),
``table`` the store tables, ``book`` the controller over a store (cached
rules, audit), ``commands`` the back channel's commands and results,
``sampling`` the Jaeger remote-sampling answer derived from the rules.
"""

from gwtrace.store import parts as _store_parts

from .table import SCHEMA, VERSION, migrate

_store_parts.register(_store_parts.StorePart("controller", version=VERSION, schema=SCHEMA,
                                                migrate=migrate))
