//go:build !linux

package confine

import "errors"

func probe() Status {
	return Status{Reason: "kernel confinement (Landlock) is only available on Linux"}
}

func exec(string, []string, []string, []string) (int, error) {
	return 125, errors.New("cannot confine: kernel confinement is only available on Linux")
}

func runAlone(Options, string) (int, error) {
	return 125, errors.New("cannot confine: kernel confinement is only available on Linux")
}

func stageOne(Options, string) error {
	return errors.New("cannot confine: namespaces are only available on Linux")
}

func runStageOne(Options, string) (int, error) {
	return 125, errors.New("cannot confine: namespaces are only available on Linux")
}

// ReadRoots is "/" here: there is no Landlock to narrow.
func ReadRoots(hide, keep []string) []string { return []string{"/"} }
