#!/usr/bin/env bash
# Runs a command with a Node >= 22.19 on PATH (fetched by ensure-node.sh when the one on PATH is
# older), so `npm start` and `npm test` work on a machine whose Node is 20 with nothing run first.
set -euo pipefail
env_lines="$(bash "$(dirname "${BASH_SOURCE[0]}")/ensure-node.sh")"
eval "$env_lines"
exec "$@"
