// Package usagelog reads coding agents' own usage logs (Claude Code's
// projects/**/*.jsonl, Codex's sessions/**/*.jsonl) in a streaming,
// parallel pass and aggregates tokens and cost by day, month or session,
// matching ccusage 20.0.24's figures.
//
// Files are read with a bounded buffer and big files are split into byte
// ranges at line boundaries, so memory stays flat whatever the file
// sizes. Only lines that can hold usage are parsed, by a small JSON
// walker that skips what it does not need. Malformed lines are counted
// by reason (Stats.Skipped), never fatal.
package usagelog
