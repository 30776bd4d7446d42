"""The attribute stage's outputs the later stages read: owners and the unattributed error.

(Attribution rules themselves: test_wire_attribution.py, test_parent_cross_check.py and
the per-harness capture tests.)
"""

from __future__ import annotations

from pathlib import Path

from tests.finalize.synthetic import Exchange, decoded, session
from tests.support.tapes import anthropic_reply

from roller.finalize.attribute import attribute, unattributed_calls


def test_owners_follow_the_calls_and_unattributed_ones_are_counted(tmp_path: Path) -> None:
    calls = decoded(
        tmp_path,
        [
            Exchange(reply=anthropic_reply("msg_a"), roller=session("s1")),
            Exchange(reply=anthropic_reply("msg_b")),  # no identity evidence at all
            Exchange(reply=anthropic_reply("msg_c"), roller=session("s1")),
        ],
    )
    result = attribute(calls, None)
    (key,) = {o for o in result.owners if o is not None}
    assert result.owners == [key, None, key]
    assert [p.key for p in result.participants] == [key]
    assert unattributed_calls(calls, result) == [
        "1 generation call(s) could not be attributed by evidence"
    ]


def test_side_requests_without_identity_are_not_unattributed_calls(tmp_path: Path) -> None:
    count = Exchange(path="/v1/messages/count_tokens", reply=b'{"input_tokens": 3}')
    calls = decoded(tmp_path, [Exchange(roller=session("s1")), count])
    result = attribute(calls, None)
    assert result.calls[1].status == "unattributed"
    assert unattributed_calls(calls, result) == []
