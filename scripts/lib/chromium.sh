# Sourced by scripts/test: Debian's chromium for the HTML viewer's browser test.
#
# Playwright's own browser download cannot work here (only package registries are
# reachable), so the test drives /usr/bin/chromium through Playwright's Python package
# (`executable_path`). Idempotent: when /usr/bin/chromium exists nothing is installed;
# otherwise the Debian `chromium` package is (as root, non-interactive). A failure stops
# the test run with a clear message: the browser test never skips.

roller_chromium_fail() {
  echo "chromium.sh: $*" >&2
  echo "chromium.sh: tests/view/test_html_browser.py needs /usr/bin/chromium; it does not skip" >&2
  return 1
}

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" != "0" ]; then
    roller_chromium_fail "/usr/bin/chromium is missing and installing it needs root (apt-get install chromium)"
  fi
  echo "chromium.sh: installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || roller_chromium_fail "apt-get update failed"
  apt-get install -y -qq chromium >/dev/null || roller_chromium_fail "apt-get install chromium failed"
fi
/usr/bin/chromium --version || roller_chromium_fail "/usr/bin/chromium does not run"
export ROLLER_CHROMIUM=/usr/bin/chromium
