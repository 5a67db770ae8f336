// Package config reads muster.toml. TEMPORARY SHIM until the config
// package lands; it will be replaced.
package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/muster-run/muster"
)

type fileExec struct {
	Kind    string            `toml:"kind"`
	Clones  int               `toml:"clones"`
	Roles   []string          `toml:"roles"`
	Model   string            `toml:"model"`
	Command []string          `toml:"command"`
	Seed    int64             `toml:"seed"`
	Env     map[string]string `toml:"env"`
	Timeout string            `toml:"timeout"`
}

type file struct {
	Run struct {
		MaxParallel int     `toml:"max_parallel"`
		OnFailure   string  `toml:"on_failure"`
		BudgetUSD   float64 `toml:"budget_usd"`
	} `toml:"run"`
	Executors map[string]fileExec `toml:"executors"`
	Gates     map[string]string   `toml:"gates"`
}

// Load reads a config file.
func Load(path string) (*muster.Config, error) {
	var f file
	md, err := toml.DecodeFile(path, &f)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: path + ": " + err.Error()}
	}
	cfg := &muster.Config{Source: path}
	cfg.Run.MaxParallel = f.Run.MaxParallel
	cfg.Run.OnFailure = f.Run.OnFailure
	cfg.Run.BudgetUSDMicros = muster.MicrosFromUSD(f.Run.BudgetUSD)
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "executors" {
			e := f.Executors[k[1]]
			spec := &muster.ExecutorSpec{Name: k[1], Kind: e.Kind, Clones: e.Clones, Roles: e.Roles, Model: e.Model, Command: e.Command, Seed: e.Seed, Env: e.Env}
			if spec.Clones == 0 {
				spec.Clones = 1
			}
			if e.Timeout != "" {
				spec.Timeout, _ = time.ParseDuration(e.Timeout)
			}
			cfg.Executors = append(cfg.Executors, spec)
		}
		if len(k) == 2 && k[0] == "gates" {
			cfg.Gates = append(cfg.Gates, muster.GateSpec{Name: k[1], Command: f.Gates[k[1]]})
		}
	}
	return cfg, nil
}

// Default is the config without a muster.toml.
func Default() *muster.Config { return &muster.Config{} }

// ParseCrew parses NAME=KIND[:CLONES].
func ParseCrew(s string) (*muster.ExecutorSpec, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok {
		return nil, fmt.Errorf("--crew %q: want NAME=KIND[:CLONES]", s)
	}
	kind, n, _ := strings.Cut(rest, ":")
	clones := 1
	if n != "" {
		v, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("--crew %q: bad clones", s)
		}
		clones = v
	}
	return &muster.ExecutorSpec{Name: name, Kind: kind, Clones: clones}, nil
}

// Merge adds or overrides executors.
func Merge(cfg *muster.Config, crew []*muster.ExecutorSpec) {
	for _, c := range crew {
		replaced := false
		for i, e := range cfg.Executors {
			if e.Name == c.Name {
				cfg.Executors[i] = c
				replaced = true
			}
		}
		if !replaced {
			cfg.Executors = append(cfg.Executors, c)
		}
	}
}
