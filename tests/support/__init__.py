"""Shared test support: real servers on loopback, in a background event loop."""
