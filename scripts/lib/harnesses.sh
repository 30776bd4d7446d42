# Sourced by scripts/test: install every pinned harness binary into roller's cache.
# Idempotent: an intact install (its roller-install.json marker present) is reused, so a CI
# cache of ~/.cache/roller (or $ROLLER_CACHE) makes this a no-op; without one it downloads
# each pinned package from npm/PyPI.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "Node.js and npm are required for the harness binaries (Node >= 20)" >&2
  exit 1
fi
.venv/bin/roller harness install --all
.venv/bin/roller harness list
