"""Turning span records into OpenTelemetry spans and delivering them (OTLP/HTTP or the store)."""
