#!/usr/bin/env python3
"""The shared subagent acceptance entry point (issue 4).

    scripts/test_subagents_e2e.py --harness claude-code [--scenario S ...] [--keep DIR]
    scripts/test_subagents_e2e.py --harness claude-code --api-base https://api.anthropic.com \\
        --credential-env ANTHROPIC_API_KEY

Installs the pinned harness if needed, runs each scenario with `roller collect` against
the built-in mock model (or the provider at --api-base), checks the capture against what
the scenario implies, and prints one line per scenario: PASS, FAIL (with the reasons) or
NOT_APPLICABLE (the harness cannot express it; never counted as passed). Exit status 1
when any scenario failed, 2 on a usage error. The logic lives in `roller.acceptance`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from roller.acceptance.profiles import profiles
from roller.acceptance.runner import Plan, failed, run_acceptance, summary_line
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.errors import RollerError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", required=True)
    # the common scenarios, and those only some harness runs (e.g. Hermes's `batched`)
    extra = sorted({s.name for p in profiles() for s in p.extra_scenarios})
    parser.add_argument(
        "--scenario", action="append", choices=[*SCENARIO_NAMES, *extra], default=[]
    )
    parser.add_argument("--keep", type=Path, help="keep every run under DIR (must not exist)")
    parser.add_argument("--api-base", help="a real provider instead of the mock model")
    parser.add_argument(
        "--credential-env",
        action="append",
        default=[],
        metavar="NAME",
        help="environment variable holding the provider key (with --api-base)",
    )
    parser.add_argument(
        "--mode",
        action="append",
        default=[],
        help="run only this mode of a harness run several ways (e.g. codex: function-tools, "
        "code-mode); default: every mode",
    )
    parser.add_argument("--harness-version", help="run this version instead of the pin")
    parser.add_argument("--model", help="model name to ask the harness for")
    parser.add_argument("--jobs", type=int, default=4, help="scenarios run at once")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="harness launch option for every scenario (e.g. pi's api=anthropic-messages)",
    )
    args = parser.parse_args()
    if args.credential_env and not args.api_base:
        parser.error("--credential-env goes with --api-base (the mock gets test values)")
    if any("=" not in o for o in args.option):
        parser.error("--option takes KEY=VALUE")
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: already exists")

    work = args.keep or Path(tempfile.mkdtemp(prefix="roller-e2e-"))
    plan = Plan(
        harness=args.harness,
        work_dir=work,
        scenarios=tuple(args.scenario),
        api_base=args.api_base,
        credential_env=tuple(args.credential_env),
        harness_version=args.harness_version,
        model=args.model,
        jobs=args.jobs,
        options=dict(o.split("=", 1) for o in args.option),
        modes=tuple(args.mode),
    )
    try:
        outcomes = run_acceptance(
            plan,
            on_outcome=lambda o: print(summary_line(o), flush=True),
            log=lambda m: print(m, file=sys.stderr, flush=True),
        )
    except RollerError as exc:
        print(f"test_subagents_e2e: error: {exc}", file=sys.stderr)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        return 2
    if failed(outcomes) or args.keep:
        print(f"runs kept at {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed(outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
