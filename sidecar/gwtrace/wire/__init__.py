"""The event-line format and ship-home blocks: what producers write and readers parse."""
