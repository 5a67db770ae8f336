//go:build !linux && !darwin

package git

import "os"

// readGitSig: no record here (fileID has none either), so the clone's
// .git is made afresh at every reset.
func readGitSig(*os.Root) (gitDirSig, bool) { return nil, false }
