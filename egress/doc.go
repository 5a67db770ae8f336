// Package egress is the network of a confined invocation beyond its own
// loopback (ARCHITECTURE.md §8.5, docs/security.md): muster's model
// endpoint and its HTTP proxy, served together on one listener (the
// bridge listener the confinement step hands over, or a listener on the
// host's loopback where there is no network namespace).
//
// The model endpoint is a net/http/httputil.ReverseProxy that forwards
// only the kind's inference requests, for the executor's models, to the
// executor's real endpoint, adding the real credential the agent never
// holds; responses stream through unbuffered while the provider's own
// usage fields are read from them. The proxy (CONNECT and plain HTTP)
// lets an invocation reach the hosts its policy allows; it resolves
// names itself and refuses loopback, link-local, private and
// unique-local addresses unless allow_hosts names the literal address.
// Every refusal is reported as a blocked record.
package egress
