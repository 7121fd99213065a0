#!/usr/bin/env bash
# The agent CLIs (Claude Code, Codex, opencode from npm, pinned by
# images/agents/package-lock.json) for the agent tests: images/agents-image.sh
# installs them (skipped when already as pinned) into PADDOCK_AGENTS_DIR,
# default /usr/local/lib/paddock-agents, under /usr so that native sandboxes,
# which see the host's /usr read-only, can exec them; entry points in
# DIR/bin/{claude,codex,opencode}. With docker and the sandbox image there, it
# also builds paddock-agents:bookworm (the sandbox image plus DIR) for the
# docker and gvisor backends, so run it after scripts/container-setup.sh.
# Progress goes to stderr; stdout is one line, the directory, for
# scripts/test.sh to export as PADDOCK_AGENTS_DIR:
#   PADDOCK_AGENTS_DIR=$(bash scripts/agents-setup.sh)
# Needs root (it writes under /usr/local and talks to dockerd).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${PADDOCK_AGENTS_DIR:-/usr/local/lib/paddock-agents}
bash images/agents-image.sh "$dir" >&2
echo "$dir"
