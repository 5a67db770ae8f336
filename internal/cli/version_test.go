package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionString(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionString(info, true), "dev (commit 0123456789ab, modified, go1.26.0)"; got != want {
		t.Errorf("a local build: got %q, want %q", got, want)
	}
	info.Main.Version = "v1.4.0"
	info.Settings[1].Value = "false"
	if got, want := versionString(info, true), "v1.4.0 (commit 0123456789ab, go1.26.0)"; got != want {
		t.Errorf("go install of a tag: got %q, want %q", got, want)
	}
	if got, want := versionString(nil, false), "dev (commit unknown)"; got != want {
		t.Errorf("no build info: got %q, want %q", got, want)
	}
	Version, Commit = "v2.0.0", "feedface"
	defer func() { Version, Commit = "", "" }()
	if got, want := versionString(info, true), "v2.0.0 (commit feedface, go1.26.0)"; got != want {
		t.Errorf("stamped with -ldflags: got %q, want %q", got, want)
	}
}
