"""`Harness`: one harness as a declared unit — everything roller knows about it, as data.

Each harness package (`roller.harnesses.<name>`) declares one `Harness` named `HARNESS`
and `roller.harnesses.registry` lists it once; every other table keyed by harness (the
names the gateway accepts, the identity gate, the mock's tool roles, export's injection
wrappers, the acceptance profiles) is derived from the registry.

- `name`: the declared harness name (`--harness`, a gateway credential's `harness`);
- `package`: the module that declares it (`__name__`), for the layer contract's
  independence list;
- `wire`: its identity facts on the wire (`roller.identity.WireProfile`);
- `tools`: its tool names per mock role (`roller.harnesses.tools.ToolHints`);
- `injections`: its injected-message wrappers (`roller.harnesses.wrappers`);
- `private_fields`: request body fields of its own that the training exports leave out
  (field -> why; `roller.export.private_fields`): bulk it adds next to the conversation
  that the provider ignores;
- `adapter`: how roller launches it and reads its native logs, or None for a harness seen
  only on the wire (through the gateway), which has a profile and nothing else;
- `acceptance`: how it runs the shared acceptance scenarios, or None;
- `collect_aliases`: older names of `roller collect` flags this harness keeps (alias ->
  the flag it stands for), accepted only with `--harness` naming this harness.
A record whose parts name another harness is a programming error (`ValueError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roller.harnesses.acceptance import AcceptanceProfile
from roller.harnesses.base import HarnessAdapter
from roller.harnesses.tools import ToolHints
from roller.harnesses.wrappers import InjectionWrappers
from roller.identity import WireProfile


@dataclass(frozen=True, eq=False)
class Harness:
    name: str
    package: str
    wire: WireProfile
    tools: ToolHints = field(default_factory=ToolHints)
    injections: InjectionWrappers = field(default_factory=InjectionWrappers)
    private_fields: Mapping[str, str] = field(default_factory=dict)
    adapter: HarnessAdapter | None = None
    acceptance: AcceptanceProfile | None = None
    collect_aliases: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        named = {
            "wire profile": self.wire.harness,
            "adapter": self.adapter.name if self.adapter is not None else self.name,
            "acceptance profile": (
                self.acceptance.harness if self.acceptance is not None else self.name
            ),
        }
        for part, name in named.items():
            if name != self.name:
                raise ValueError(f"harness {self.name!r}: its {part} is for {name!r}")
