package egress_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// Issue 22, item 3: the proxy resolves names itself and refuses loopback,
// link-local (cloud metadata included), private and unique-local
// addresses unless allow_hosts names the literal address, even under
// "open" (TestProxyAllowlist covers loopback and the literal exception).
// Each refusal is a Blocked record naming the kind of address; nothing is
// dialled, so the test needs no route to those networks.
func TestProxyRefusesInnerAddresses(t *testing.T) {
	cases := []struct{ hostport, kind string }{
		{"169.254.169.254:80", "link-local"}, // cloud metadata
		{"[fe80::1]:443", "link-local"},
		{"10.1.2.3:443", "private"},
		{"172.16.0.1:443", "private"},
		{"192.168.1.1:443", "private"},
		{"100.64.0.1:443", "private"}, // shared address space (CGNAT)
		{"[fd00::1]:443", "unique-local"},
		{"[::1]:443", "loopback"},
		{"127.0.0.2:443", "loopback"},
		{"0.0.0.0:443", "reserved"},
	}
	for _, pol := range []muster.NetworkPolicy{muster.NetOpen} {
		netw := muster.Network{Policy: pol}
		s, recs := serve(t, nil, netw, nil)
		for _, c := range cases {
			if code := connect(t, s.URL(), c.hostport); code == http.StatusOK {
				t.Errorf("%s: CONNECT %s was tunnelled", pol, c.hostport)
			}
		}
		got := map[string]string{}
		for _, r := range recs.Of(muster.RecBlocked) {
			got[net.JoinHostPort(r.Host, fmt.Sprint(r.Port))] = r.Text
		}
		for _, c := range cases {
			h, p, _ := net.SplitHostPort(c.hostport)
			why, ok := got[net.JoinHostPort(h, p)]
			if !ok {
				t.Errorf("%s: no Blocked record for %s (records %v)", pol, c.hostport, got)
				continue
			}
			if !strings.Contains(why, c.kind) {
				t.Errorf("%s: %s refused with %q, want it named a %s address", pol, c.hostport, why, c.kind)
			}
		}
	}
}

// connect sends CONNECT hostport to the proxy at proxyURL and returns the
// status code of its answer.
func connect(t *testing.T, proxyURL, hostport string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(proxyURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", hostport, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
