"""The OpenTelemetry resource: who produced these spans.

``service.name`` defaults to ``glidein``; the standard OTEL_SERVICE_NAME and
OTEL_RESOURCE_ATTRIBUTES override it. When a ``glidein_config`` file is given
(``--glidein-config`` or GLIDEIN_CONFIG), the pilot's identity is added as
``glidein.*`` attributes so that a trace can be found by site, entry, factory
or the factory's job id. No cloud detectors run: on a worker node they only
cost time-outs.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Dict, Optional, Union

from opentelemetry.sdk.resources import OTELResourceDetector, Resource

log = logging.getLogger("gwtrace.export.resource")

DEFAULT_SERVICE = "glidein"

# glidein_config key -> (resource attribute, type)
GLIDEIN_KEYS = {
    "GLIDEIN_UUID": ("glidein.uuid", str),
    "GLIDEIN_Site": ("glidein.site", str),
    "GLIDEIN_Entry_Name": ("glidein.entry", str),
    "GLIDEIN_Factory": ("glidein.factory", str),
    "GLIDEIN_Name": ("glidein.name", str),
    "GLIDECLIENT_Name": ("glidein.client", str),
    "GLIDECLIENT_Group": ("glidein.client_group", str),
    "GLIDEIN_ResourceName": ("glidein.resource_name", str),
    "GLIDEIN_CredentialIdentifier": ("glidein.credential_id", str),
    "CONDORG_SCHEDD": ("glidein.schedd", str),
    "CONDORG_CLUSTER": ("glidein.cluster_id", int),
    "CONDORG_SUBCLUSTER": ("glidein.proc_id", int),
    "GLIDEIN_Gatekeeper": ("glidein.gatekeeper", str),
    "GLIDEIN_GridType": ("glidein.grid_type", str),
    "GLIDEIN_SiteWMS": ("glidein.sitewms", str),
    "GLIDEIN_SiteWMS_JobId": ("glidein.sitewms.job_id", str),
    "GLIDEIN_SiteWMS_Queue": ("glidein.sitewms.queue", str),
    "GLIDEIN_CPUS": ("glidein.cpus", int),
    "GLIDEIN_MaxMemMBs": ("glidein.memory_mb", int),
    "GLIDEIN_GPUS": ("glidein.gpus", int),
    "GLIDEIN_Max_Walltime": ("glidein.max_walltime", int),
    "DEBUG_MODE": ("glidein.debug_mode", int),
}


def read_glidein_config(path: str) -> Dict[str, str]:
    """Parse ``KEY value`` lines; the last occurrence of a key wins (as gconfig_get)."""
    values: Dict[str, str] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition(" ")
            values[key] = value
    return values


def glidein_attributes(config: Dict[str, str]) -> Dict[str, Union[str, int]]:
    attrs: Dict[str, Union[str, int]] = {}
    for key, (name, kind) in GLIDEIN_KEYS.items():
        raw = config.get(key, "").strip()
        if not raw:
            continue
        if kind is int:
            try:
                attrs[name] = int(raw)
            except ValueError:
                attrs[name] = raw
        else:
            attrs[name] = raw
    if "glidein.uuid" in attrs:
        attrs["service.instance.id"] = attrs["glidein.uuid"]
    return attrs


def build_resource(glidein_config: Optional[str] = None) -> Resource:
    """Resource for this sidecar: env (OTEL_*) > glidein_config > defaults."""
    attrs: Dict[str, Union[str, int]] = {"host.name": socket.gethostname()}
    if glidein_config:
        try:
            attrs.update(glidein_attributes(read_glidein_config(glidein_config)))
        except OSError as exc:
            log.warning("cannot read glidein_config %s: %s", glidein_config, exc)
    # SDK defaults (telemetry.sdk.*, maybe a random service.instance.id) lose
    # to the glidein's identity, which loses to what the operator set
    # explicitly in OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME.
    explicit = OTELResourceDetector().detect()
    resource = Resource.create({}).merge(Resource(attrs)).merge(explicit)
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE}))
    return resource


class GlideinIdentity:
    """The glidein's identity as ``glidein_config`` has it *now*.

    A glidein's set-up runs early (docs/deploy.md): the entry's constants
    (``GLIDEIN_Site``, ``GLIDEIN_ResourceName``...) and the CPUs and memory
    GlideinWMS works out are written to ``glidein_config`` after the sidecar
    started. The sidecar asks ``changed()`` before it exports or ships: a new
    resource when the file changed (size or mtime) and the identity with it,
    else None. One ``stat`` a call.
    """

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self._seen: Optional[tuple] = None
        self._attrs: Optional[Dict[str, Union[str, int]]] = None
        if path:
            self.changed()

    def changed(self) -> Optional[Resource]:
        if not self.path:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        seen = (st.st_size, st.st_mtime_ns)
        if seen == self._seen:
            return None
        self._seen = seen
        try:
            attrs = glidein_attributes(read_glidein_config(self.path))
        except OSError:
            return None
        if attrs == self._attrs:
            return None
        first, self._attrs = self._attrs is None, attrs
        return None if first else build_resource(self.path)
