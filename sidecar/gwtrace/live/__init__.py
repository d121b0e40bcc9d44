"""What is running now: live glideins from the sidecars' snapshots, and site health.

The phase each glidein is in is read when its snapshot is stored (``gwtrace.store.live_phase``: the
embedded store on a node reads it too).

``now``     the glideins alive per site/entry, stale ones flagged (``gwtrace now``, ``/now``)
``health``  failure rate of the last hour against each site's own baseline: the red lights
``cli``     ``gwtrace now [--alerts]``
"""
