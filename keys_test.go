package muster

import (
	"slices"
	"testing"
)

func TestScopeKeys(t *testing.T) {
	c := &Config{Run: RunConfig{EnvAllow: []string{"ALPHA", "PLAIN"}}, Executors: []*ExecutorSpec{
		{Name: "a", APIKeyEnv: "ALPHA", EnvAllow: []string{"BRAVO", "ALPHA"}},
		{Name: "b", APIKeyEnv: "BRAVO"},
		{Name: "c", EnvAllow: []string{"ALPHA"}},
	}}
	if got := c.KeyVars(); !slices.Equal(got, []string{"ALPHA", "BRAVO"}) {
		t.Errorf("key vars %q", got)
	}
	w := c.ScopeKeys()
	if !slices.Equal(c.Run.EnvAllow, []string{"PLAIN"}) || !slices.Equal(c.Executors[0].EnvAllow, []string{"ALPHA"}) || len(c.Executors[2].EnvAllow) != 0 {
		t.Errorf("scoped: run %q a %q c %q", c.Run.EnvAllow, c.Executors[0].EnvAllow, c.Executors[2].EnvAllow)
	}
	if len(w) != 3 || w[0] != "[run] env_allow names ALPHA, the api_key_env of executor a: only that executor's agents get it" {
		t.Errorf("warnings %q", w)
	}
}
