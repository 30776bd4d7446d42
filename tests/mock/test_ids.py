from __future__ import annotations

import re
from typing import get_args

import pytest

from roller.mock.ids import IdKind, IdMint

SHAPES = {
    "anthropic-message": r"msg_01[0-9A-Za-z]{22}",
    "anthropic-tool-use": r"toolu_01[0-9A-Za-z]{22}",
    "anthropic-request": r"req_011C[0-9A-Za-z]{20}",
    "chat-completion": r"chatcmpl-[0-9A-Za-z]{29}",
    "chat-tool-call": r"call_[0-9A-Za-z]{24}",
    "responses-response": r"resp_[0-9a-f]{48}",
    "responses-message": r"msg_[0-9a-f]{48}",
    "responses-function-call": r"fc_[0-9a-f]{48}",
    "responses-call": r"call_[0-9A-Za-z]{24}",
    "responses-custom-tool-call": r"ctc_[0-9a-f]{48}",
    "responses-tool-search-call": r"tsc_[0-9a-f]{48}",
    "gemini-response": r"[0-9A-Za-z]{23}",
    "gemini-call": r"gcall_[0-9A-Za-z]{16}",
    "openai-request": r"req_[0-9a-f]{32}",
}


def test_every_kind_has_a_shape_under_test() -> None:
    assert set(SHAPES) == set(get_args(IdKind))


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_ids_have_the_protocol_prefix_alphabet_and_length(kind: IdKind) -> None:
    mint = IdMint()
    for _ in range(200):
        assert re.fullmatch(SHAPES[kind], mint.mint(kind))


def test_ids_are_unique_within_an_instance() -> None:
    mint = IdMint()
    kinds = sorted(SHAPES)
    minted = [mint.mint(kinds[i % len(kinds)]) for i in range(60_000)]  # type: ignore[arg-type]
    assert len(set(minted)) == len(minted)


def test_same_namespace_gives_the_same_sequence_another_gives_another() -> None:
    first = [IdMint("a").mint("chat-tool-call") for _ in range(1)]
    a, b, c = IdMint("a"), IdMint("a"), IdMint("b")
    seq_a = [a.mint("anthropic-tool-use") for _ in range(50)]
    assert seq_a == [b.mint("anthropic-tool-use") for _ in range(50)]
    seq_c = [c.mint("anthropic-tool-use") for _ in range(50)]
    assert not set(seq_a) & set(seq_c)
    assert first[0] != seq_a[0]


def test_consecutive_ids_do_not_share_an_obvious_counter_tail() -> None:
    mint = IdMint()
    ids = [mint.mint("responses-function-call") for _ in range(20)]
    assert len({i[-6:] for i in ids}) == 20
    assert len({i[3:12] for i in ids}) == 20
