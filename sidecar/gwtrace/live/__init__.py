"""What is running now: live glideins from the sidecars' snapshots, and site health.

``phase``   the phase a glidein is in, from its open spans (used at snapshot time)
``now``     the glideins alive per site/entry, stale ones flagged (``gwtrace now``, ``/now``)
``health``  failure rate of the last hour against each site's own baseline: the red lights
``cli``     ``gwtrace now [--alerts]``
"""

from gwtrace.store import parts as _store_parts

from .phase import classify, root_of

_store_parts.register(_store_parts.SnapshotRules(root_of=root_of, classify=classify))
