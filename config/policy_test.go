package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// TestPolicyKeys: each string policy of [run] accepts exactly the values
// of its list in the root package, and a bad value's message names them
// all.
func TestPolicyKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key   string
		valid []string
		got   func(*muster.Config) string
	}{
		{"on_failure", names(muster.OnFailurePolicies), func(c *muster.Config) string { return string(c.Run.OnFailure) }},
		{"on_violation", names(muster.OnViolationPolicies), func(c *muster.Config) string { return string(c.Run.OnViolation) }},
		{"noop", names(muster.NoopPolicies), func(c *muster.Config) string { return string(c.Run.Noop) }},
		{"review_partial", names(muster.ReviewPartialPolicies), func(c *muster.Config) string { return string(c.Run.ReviewPartial) }},
		{"guard", names(muster.GuardPolicies), func(c *muster.Config) string { return string(c.Run.Guard) }},
		{"confine", names(muster.ConfineModes), func(c *muster.Config) string { return string(c.Run.Confine) }},
		{"network", muster.NetworkPolicies, func(c *muster.Config) string { return string(c.Run.Network) }},
	} {
		for _, v := range c.valid {
			cfg, probs := Parse("m.toml", fmt.Appendf(nil, "[run]\n%s = %q\n", c.key, v))
			if len(probs) != 0 || c.got(cfg) != v {
				t.Errorf("%s = %q: read %q, problems %v", c.key, v, c.got(cfg), probs)
			}
		}
		_, probs := Parse("m.toml", fmt.Appendf(nil, "[run]\n%s = \"sometimes\"\n", c.key))
		if len(probs) != 1 {
			t.Errorf("%s = \"sometimes\": problems %v, want one", c.key, probs)
			continue
		}
		for _, v := range c.valid {
			if msg := probs.Error(); !strings.Contains(msg, fmt.Sprintf("%q", v)) || !strings.Contains(msg, "m.toml:2") {
				t.Errorf("%s = \"sometimes\": %q names neither the line nor %q", c.key, msg, v)
			}
		}
	}
}

func names[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}
