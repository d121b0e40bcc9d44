"""The sidecar daemon: reads the event log, assembles spans, keeps the state directory, delivers."""
