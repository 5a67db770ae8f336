package confine

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/proc"
)

var nsProbes sync.Map // launcher -> string

// ProbeNamespaces tells whether the sandbox's namespaces can be built
// here: it starts launcher's ConfineCommand once per muster process (per
// launcher) in new namespaces, which mounts a tmpfs and a fresh /proc,
// brings up the loopback and exits. It returns "" when they can, or why
// not (user namespaces are often restricted: Ubuntu 24.04's AppArmor
// default, kernel.unprivileged_userns_clone=0, a container's seccomp
// profile).
func ProbeNamespaces(launcher string) string {
	if os.Getenv(NoUserNSEnv) == "1" {
		return "no user namespaces (simulated by " + NoUserNSEnv + "=1)"
	}
	if r, ok := nsProbes.Load(launcher); ok {
		return r.(string)
	}
	r := probeNamespaces(launcher)
	nsProbes.Store(launcher, r)
	return r
}

func probeNamespaces(launcher string) string {
	cmd := osexec.Command(launcher, muster.ConfineCommand, "--ns", "--probe", "--")
	cmd.SysProcAttr = proc.SandboxAttr(false)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	var ee *osexec.ExitError
	if msg := strings.TrimSpace(string(out)); msg != "" && errors.As(err, &ee) {
		return fmt.Sprintf("the sandbox's namespaces cannot be built here: %s", msg)
	}
	return fmt.Sprintf("the kernel refuses new user namespaces here (%v): muster confines with Landlock and the capability drop alone", err)
}
