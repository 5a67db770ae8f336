package cli

import (
	"runtime/debug"
	"strings"
)

// Version and Commit name the build. A release build stamps them:
//
//	go build -ldflags "-X github.com/muster-run/muster/internal/cli.Version=v1.2.3 -X github.com/muster-run/muster/internal/cli.Commit=abc123" ./cmd/muster
//
// Otherwise they come from the module's build info: the module version
// (a go install of a tagged version), and the VCS revision the binary
// was built from, marked modified when the work tree had changes.
var (
	Version = ""
	Commit  = ""
)

// versionString is what muster --version prints after "muster version ".
func versionString(info *debug.BuildInfo, ok bool) string {
	v, commit, modified := Version, Commit, false
	if ok && info != nil {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true" && Commit == ""
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	var extra []string
	switch {
	case commit != "":
		if len(commit) > 12 {
			commit = commit[:12]
		}
		c := "commit " + commit
		if modified {
			c += ", modified"
		}
		extra = append(extra, c)
	default:
		extra = append(extra, "commit unknown")
	}
	if ok && info != nil && info.GoVersion != "" {
		extra = append(extra, info.GoVersion)
	}
	return v + " (" + strings.Join(extra, ", ") + ")"
}

func buildVersion() string { return versionString(debug.ReadBuildInfo()) }
