"""The invariants every `WireIdentity` keeps, checked after every derivation in the tests."""

from __future__ import annotations

import json

from roller.identity import WireIdentity, valid_id


def assert_invariants(identity: WireIdentity) -> None:
    keys = (identity.session_key, identity.participant_key, identity.parent_key)
    for key in keys:
        assert key is None or valid_id(key) == key, key
    if identity.participant_key is not None:
        assert identity.parent_key != identity.participant_key, "a participant is its own parent"
        assert identity.session_key is not None, "a participant without a session"
    if identity.parent_key is not None:
        assert identity.participant_key is not None, "a parent link with no child end"
        assert identity.is_child is True
    if identity.is_child is False:
        assert identity.participant_key == identity.session_key, "a root that is not its session"
        assert identity.parent_key is None
    if identity.rule == "none":
        assert keys == (None, None, None)
    for field, value in identity.evidence.items():
        assert isinstance(field, str) and isinstance(value, str)
    for rejection in identity.rejected:
        assert isinstance(rejection.field, str) and isinstance(rejection.reason, str)
    # The call record stores this; it must be plain JSON.
    json.dumps(identity.native_identity())


def rejected_fields(identity: WireIdentity) -> dict[str, str]:
    return {r.field: r.reason for r in identity.rejected}
