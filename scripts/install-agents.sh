#!/usr/bin/env bash
# install-agents.sh installs the pinned versions of the agent CLIs that
# muster drives into .cache/agents at the repository root (ignored by git).
# It is idempotent: when every package is already at its pinned version it
# does nothing. Usage: scripts/install-agents.sh [DIR]
#
# Pitfalls on Node 20 (see docs/agents.md):
#   - Claude Code's newest releases declare engines.node >= 22, so the
#     exact version is pinned; 2.1.197 runs on Node 20.
#   - Claude Code, Codex, codex-acp, Copilot and opencode ship a native
#     binary as an optional per-platform dependency; optional dependencies
#     must not be omitted.
#   - Qwen Code's releases after 0.15.10 declare engines.node >= 22.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/.cache/agents}"

pins=(
	"@anthropic-ai/claude-code@2.1.197"
	"@openai/codex@0.171.0"
	"@google/gemini-cli@0.61.0"
	"opencode-ai@1.18.33"
	"@zed-industries/claude-agent-acp@0.23.1"
	"@zed-industries/codex-acp@0.16.0"
	"@qwen-code/qwen-code@0.15.10"
	"@github/copilot@1.0.102"
	"@mariozechner/pi-coding-agent@0.73.1"
)

if ! command -v npm >/dev/null 2>&1; then
	echo "install-agents: npm not found; install Node.js 20 or newer" >&2
	exit 3
fi

mkdir -p "$dir"
if [ ! -f "$dir/package.json" ]; then
	printf '{"name":"muster-agents","private":true}\n' >"$dir/package.json"
fi

# installed NAME prints the installed version of NAME, or nothing.
installed() {
	local pj="$dir/node_modules/$1/package.json"
	[ -f "$pj" ] || return 0
	node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj"
}

missing=()
for pin in "${pins[@]}"; do
	name="${pin%@*}"
	want="${pin##*@}"
	have="$(installed "$name")"
	if [ "$have" != "$want" ]; then
		missing+=("$pin")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-agents: all pinned agent CLIs present in $dir"
	exit 0
fi

echo "install-agents: installing ${missing[*]} into $dir"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
npm install --prefix "$dir" --save-exact --include=optional --engine-strict=false \
	--loglevel=error "${pins[@]}"

for bin in claude codex gemini opencode claude-agent-acp codex-acp qwen copilot pi; do
	if [ ! -x "$dir/node_modules/.bin/$bin" ]; then
		echo "install-agents: $bin missing after install" >&2
		exit 3
	fi
done
echo "install-agents: done"
