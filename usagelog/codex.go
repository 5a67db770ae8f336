package usagelog

import (
	"context"

	"github.com/muster-run/muster"
)

// ScanCodex reads Codex rollout logs under DIR/sessions.
func ScanCodex(ctx context.Context, opts Options) (*Result, error) {
	return nil, muster.Errorf(muster.CodeInternal, "codex: not implemented yet")
}
