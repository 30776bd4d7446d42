"""The one exception tree of roller.

Every error roller raises on purpose is a `RollerError`. Foreign exceptions (OSError,
aiohttp, pydantic, sqlite) are translated into one of these at the boundary where they
enter roller, so the CLI can print a clear one-line message and choose an exit code
without ever showing a traceback to the user.
"""

from __future__ import annotations


class RollerError(Exception):
    """Base of every error roller raises deliberately. `exit_code` is what the CLI returns."""

    exit_code = 1


class UsageError(RollerError):
    """The user asked for something inconsistent (bad flag combination, bad value)."""

    exit_code = 2


class ConfigError(RollerError):
    """A configuration file or scenario is malformed or refers to something missing."""

    exit_code = 2


class CaptureFormatError(RollerError):
    """A capture, tape or record on disk cannot be read as the protocol says."""

    exit_code = 2


class IntegrityError(RollerError):
    """A capture was read but fails an integrity rule (hash, reference, status consistency)."""

    exit_code = 1


class HarnessError(RollerError):
    """Installing, launching or reading the native logs of a harness failed."""

    exit_code = 1
