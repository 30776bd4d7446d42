"""`KeptFacts` keeps every call's facts small without changing one value.

Over every recorded fixture: each kept fact equals what decode gives (the emitted tool
calls without their arguments, which no stage after decode reads), a participant's equal
identities are one object, and an identity that differs is never replaced by another.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from tests.finalize.test_fixture_goldens import FIXTURES
from tests.harnesses.fixture_capture import fixture_dir, tape_of

from roller.capture.models import AttemptInputs
from roller.finalize.decode import decode_exchange
from roller.finalize.kept_facts import KeptFacts


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_kept_facts_equal_the_decoded_ones(harness: str, name: str, tmp_path: Path) -> None:
    inputs = AttemptInputs.model_validate_json(
        (fixture_dir(harness, name) / "attempt.json").read_bytes()
    )
    tape = tape_of(harness, name, tmp_path)
    kept = KeptFacts()
    decoded = [decode_exchange(n, ex, inputs.harness.name) for n, ex in enumerate(tape.exchanges)]
    for call in decoded:
        kept.add(call)
    assert len(kept) == len(decoded)
    for call, facts in zip(decoded, kept, strict=True):
        bare = tuple(replace(t, arguments=None) for t in call.emitted)
        assert facts == replace(call.facts, emitted=bare)
        assert [t.arguments for t in facts.emitted] == [None] * len(bare)
    by_key: dict[str | None, list[int]] = {}
    for i, facts in enumerate(kept):
        by_key.setdefault(facts.identity.participant_key, []).append(i)
    for calls in by_key.values():
        for a, b in pairwise(calls):
            same = kept[a].identity == kept[b].identity
            assert (kept[a].identity is kept[b].identity) == same


def test_a_changed_identity_is_kept_as_it_is(tmp_path: Path) -> None:
    harness, name = FIXTURES[0]
    inputs = AttemptInputs.model_validate_json(
        (fixture_dir(harness, name) / "attempt.json").read_bytes()
    )
    call = decode_exchange(0, tape_of(harness, name, tmp_path).exchanges[0], inputs.harness.name)
    other = replace(call, identity=replace(call.identity, agent_name="another"))
    kept = KeptFacts()
    for c in (call, other, call):
        kept.add(c)
    first, second, third = kept
    assert second.identity.agent_name == "another"
    assert first.identity is not second.identity
    assert third.identity == first.identity
