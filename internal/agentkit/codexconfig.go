package agentkit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/muster-run/muster"
)

// CodexConfig is a Codex clone's config.toml (codex and codex-acp): with
// a base URL, a custom provider named providerID speaking the Responses
// API whose key is read from keyName.
func CodexConfig(spec *muster.ExecutorSpec, keyName, providerID string) string {
	var b strings.Builder
	b.WriteString("# Written by muster for this executor clone; rewritten on each run.\n")
	// No background traffic: it would stall behind muster's endpoint or
	// flood Blocked (docs/agents.md).
	b.WriteString("check_for_update_on_startup = false\n\n")
	if spec.BaseURL != "" {
		writeCodexProvider(&b, spec, keyName, providerID)
	}
	b.WriteString("[analytics]\nenabled = false\n")
	return b.String()
}

// writeCodexProvider is the custom provider: the executor's base URL,
// speaking the Responses API, its key read from keyName.
func writeCodexProvider(b *strings.Builder, spec *muster.ExecutorSpec, keyName, providerID string) {
	fmt.Fprintf(b, "model_provider = %s\n\n", TOMLString(providerID))
	fmt.Fprintf(b, "[model_providers.%s]\n", providerID)
	fmt.Fprintf(b, "name = %s\n", TOMLString("muster: "+spec.Name))
	fmt.Fprintf(b, "base_url = %s\n", TOMLString(spec.BaseURL))
	fmt.Fprintf(b, "env_key = %s\n", TOMLString(keyName))
	b.WriteString("wire_api = \"responses\"\n")
	b.WriteString("request_max_retries = 1\nstream_max_retries = 1\n\n")
}

// tomlString quotes s as a TOML basic string (JSON's escapes are valid).
func TOMLString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
