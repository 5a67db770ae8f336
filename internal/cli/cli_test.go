package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/cli"
)

func TestMain(m *testing.M) {
	// The test binary is the launcher the [userns] condition probes
	// (os.Executable): without this it ran the tests instead of the
	// sandbox, the probe failed and every [!userns] script skipped.
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(cli.Main())
	}
	testscript.Main(m, map[string]func(){
		// The real entry point, signals included.
		"muster": func() { os.Exit(cli.Main()) },
	})
}

// TestScripts runs the command-line scripts in testdata/script: each
// drives the real muster binary against real git in a temp directory.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			gitconfig := filepath.Join(env.WorkDir, ".gitconfig")
			if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
				return err
			}
			env.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			// muster's clones go to a cache of the script's own, beside
			// its work directory (not inside: scripts use $WORK as a repository).
			cache := env.WorkDir + ".cache"
			env.Setenv("XDG_CACHE_HOME", cache)
			env.Defer(func() { forceRemove(cache) })
			env.Setenv("NO_COLOR", "1")
			env.Setenv("CI", "true")
			// Many scripts' agents record what they saw in $WORK, outside
			// their clone: these scripts run unconfined, as on a system
			// without Landlock. testdata/confine holds the confined ones.
			env.Setenv(confine.NoLandlockEnv, "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsonkeys":  cmdJSONKeys,
			"jsonget":   cmdJSONGet,
			"jsonlines": cmdJSONLines,
			"waitfile":  cmdWaitFile,
		},
	})
}

// cmdJSONKeys prints, one a line on stdout, the sorted keys of the JSON
// object at a dotted path (such as "tasks.0" or "." for the top) of a
// file:
//
//	jsonkeys FILE PATH
func cmdJSONKeys(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonkeys FILE PATH")
	}
	obj, ok := jsonAt(ts, args[0], args[1]).(map[string]any)
	if !ok {
		ts.Fatalf("%s: not an object", args[1])
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ts.Stdout().Write([]byte(strings.Join(keys, "\n") + "\n"))
}

// cmdJSONGet prints the value at a dotted path of a JSON file: a string
// as is, anything else as JSON:
//
//	jsonget FILE PATH
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonget FILE PATH")
	}
	v := jsonAt(ts, args[0], args[1])
	if s, ok := v.(string); ok {
		ts.Stdout().Write([]byte(s + "\n"))
		return
	}
	b, _ := json.Marshal(v)
	ts.Stdout().Write(append(b, '\n'))
}

// jsonAt decodes a JSON file and walks a dotted path ("." is the top).
func jsonAt(ts *testscript.TestScript, file, path string) any {
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(file)), &v); err != nil {
		ts.Fatalf("%s: %v", file, err)
	}
	if path != "." {
		for _, part := range strings.Split(path, ".") {
			switch x := v.(type) {
			case map[string]any:
				v = x[part]
			case []any:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(x) {
					ts.Fatalf("%s: no element %s", path, part)
				}
				v = x[i]
			default:
				ts.Fatalf("%s: %s is not in an object or array", path, part)
			}
		}
	}
	return v
}

// cmdJSONLines fails unless every line of a file is a JSON object with a
// string "type" (the journal's events):
//
//	jsonlines FILE
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonlines FILE")
	}
	sc := bufio.NewScanner(bytes.NewReader([]byte(ts.ReadFile(args[0]))))
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		n++
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Type == "" {
			ts.Fatalf("%s:%d: not a JSON event: %q", args[0], n, sc.Text())
		}
	}
	if n == 0 {
		ts.Fatalf("%s: no lines", args[0])
	}
}

// cmdWaitFile waits (up to a minute) until a file exists:
//
//	waitfile FILE
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear", args[0])
}

// forceRemove removes a directory tree, read-only directories included.
func forceRemove(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
