package redact

import (
	"strings"
	"testing"
)

func TestKeyShaped(t *testing.T) {
	for _, in := range []string{
		"sk-ant-api03-abcdefghijklmnopqrstuvwx",
		"sk-proj-abcdefghijklmnopqrstuvwx",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"gho_abcdefghijklmnopqrstuvwxyz0123456789",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
		"glpat-abcdefghijklmnopqrstuv",
		"xoxb-1234567890-abcdefghij",
		"xoxp-1234567890-abcdefghij",
		"AKIAIOSFODNN7EXAMPLE",
		"ASIAIOSFODNN7EXAMPLE",
		"AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"sk_live_abcdefghijklmnop",
	} {
		got := Keys("before " + in + " after")
		if strings.Contains(got, in) || got != "before "+Mark+" after" {
			t.Errorf("Keys(%q) = %q, want the key redacted", in, got)
		}
	}
	if got := Keys("Authorization: Bearer abcdefghijklmnop0123"); strings.Contains(got, "abcdefghijklmnop0123") {
		t.Errorf("bearer token kept: %q", got)
	}
	// Ordinary text stays as it is.
	for _, in := range []string{"sk-learn", "the task-key is ok", "AKIA", "ghp_short", "eyJ only", "go test ./...", "https://example.com/x?y=1"} {
		if got := Keys(in); got != in {
			t.Errorf("Keys(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestUserInfo(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h/db":                  "postgres://" + Mark + "@h/db",
		"clone https://x-token@github.com/a/b":  "clone https://" + Mark + "@github.com/a/b",
		"DB_URL=mysql://root:hunter22@db:3306/": "DB_URL=mysql://" + Mark + "@db:3306/",
		"see https://example.com/a@b":           "see https://example.com/a@b",
	} {
		if got := Keys(in); got != want {
			t.Errorf("Keys(%q) = %q, want %q", in, got, want)
		}
	}
	if !HasUserInfo("postgres://u:pw@h/db") || HasUserInfo("https://h/db") {
		t.Error("HasUserInfo is wrong")
	}
}

func TestIsSecretName(t *testing.T) {
	for _, n := range []string{"OPENAI_API_KEY", "GH_TOKEN", "AWS_SECRET", "DB_PASSWORD", "my_passwd", "FOOAPIKEY", "GITHUB_PAT",
		"SENTRY_DSN", "GOOGLE_APPLICATION_CREDENTIALS", "KEY", "token", "X_API_KEY_FILE"} {
		if !IsSecretName(n) {
			t.Errorf("IsSecretName(%q) = false, want true", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "KEYBOARD", "TOKENIZER_MODE", "PATHEXT", "GOPATH", "EDITOR", "DB_URL"} {
		if IsSecretName(n) {
			t.Errorf("IsSecretName(%q) = true, want false", n)
		}
	}
	if !IsSecret("DB_URL", "postgres://u:pw@h/db") || IsSecret("DB_URL", "postgres://h/db") {
		t.Error("IsSecret misjudges a URL with user-info")
	}
}

func TestRedactor(t *testing.T) {
	r := New(Environ([]string{
		"MY_API_KEY=plainvalue123",
		"DB_URL=postgres://admin:s3cretpw@h/db",
		"PUBLIC_KEY=notasecret99",
		"SHORT_TOKEN=ab",
		"PATH=/usr/bin",
	}, "PUBLIC_KEY")...)
	in := "key plainvalue123, pw s3cretpw, url postgres://admin:s3cretpw@h/db, public notasecret99, short ab, /usr/bin"
	got := r.String(in)
	for _, bad := range []string{"plainvalue123", "s3cretpw", "admin"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q kept in %q", bad, got)
		}
	}
	for _, good := range []string{"notasecret99", "short ab", "/usr/bin"} {
		if !strings.Contains(got, good) {
			t.Errorf("%q lost from %q", good, got)
		}
	}
	// Idempotent: redacting twice changes nothing more.
	if again := r.String(got); again != got {
		t.Errorf("second pass changed %q to %q", got, again)
	}
	// A longer secret that contains a shorter one goes whole.
	r2 := New("abcdef", "abcdefghijkl")
	if got := r2.String("x abcdefghijkl y"); got != "x "+Mark+" y" {
		t.Errorf("got %q", got)
	}
	var nilR *Redactor
	if got := nilR.String("sk-abcdefghijklmnopqrstu"); got != Mark {
		t.Errorf("nil redactor: got %q", got)
	}
}
