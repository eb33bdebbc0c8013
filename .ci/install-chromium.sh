#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver from Debian's packages
# (`chromium`, `chromium-driver`) when either is missing, so the browser test
# of the web console (tests/serve_console.rs) really runs in CI.
#
# Does nothing when /usr/bin/chromium and /usr/bin/chromedriver are both
# there. Non-interactive (DEBIAN_FRONTEND=noninteractive, no prompts); uses
# sudo only when not already root. Needs apt-get (Debian or Ubuntu).
set -euo pipefail

if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
    echo "chromium and chromedriver already installed"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: apt-get not found; install chromium and chromium-driver yourself" >&2
    exit 1
fi

sudo_cmd=()
if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-chromium: not root and no sudo; cannot install chromium" >&2
        exit 1
    fi
    sudo_cmd=(sudo -n)
fi

export DEBIAN_FRONTEND=noninteractive
echo "== installing chromium chromium-driver (apt-get)"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends chromium chromium-driver
/usr/bin/chromium --version
/usr/bin/chromedriver --version
