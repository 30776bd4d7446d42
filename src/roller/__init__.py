"""roller: run coding-agent harnesses behind a recording gateway and capture every model call.

The package is layered (see docs/architecture.md); the import contract in pyproject.toml
enforces the direction cli -> collect/gateway -> proxy/finalize/export/view/mock ->
harnesses/identity -> wire/capture -> errors.
"""

__version__ = "0.1.0"
