"""gwtrace: distributed tracing for GlideinWMS pilots and the user jobs they run.

Data path: bash event (bash/gwtrace.sh) -> event log in the sidecar's private
directory -> sidecar (tail -> protocol -> assembler -> outbox) -> exporter
(OTLP/HTTP, or the embedded SQLite store that `gwtrace show` and
`gwtrace serve` read).
"""

__version__ = "0.1.0"
