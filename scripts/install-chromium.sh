#!/bin/sh
# Debian's Chromium for the web console's browser tests (tests/browser): installed with apt, as a user's
# machine would, because test tools may not download browsers here. Does nothing when it is already there.
# Needs root or sudo. Other systems: install Chromium yourself and set REVERIE_CHROMIUM to its path.
set -eu
if command -v chromium >/dev/null 2>&1 || [ -n "${REVERIE_CHROMIUM:-}" ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo"; fi
$as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium >/dev/null
