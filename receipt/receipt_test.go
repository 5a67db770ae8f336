package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

const journal = `{"seq":1,"type":"RunStarted","run":"r1","base":"b0","branch":"muster/r1"}
{"seq":2,"type":"TasksPlanned","tasks":[{"id":"a","title":"A"},{"id":"b","title":"B","after":["a"]}]}
{"seq":3,"type":"TaskStarted","task":"a","attempt":1}
{"seq":4,"type":"TokensUsed","task":"a","input_tokens":10,"cost_micros":5}
{"seq":5,"type":"GateRan","task":"a","gate":"test","passed":true}
{"seq":6,"type":"Integrated","task":"a","commit":"c1"}
{"seq":7,"type":"TaskSucceeded","task":"a","attempt":1,"commit":"c1"}
{"seq":8,"type":"TaskStarted","task":"b","attempt":1}
{"seq":9,"type":"TaskFailed","task":"b","attempt":1,"reason":"gate test failed"}
{"seq":10,"type":"RunFinished","state":"failed"}
`

func TestChainIsTheDocumentedChain(t *testing.T) {
	h := make([]byte, 32)
	for _, l := range strings.Split(strings.TrimSuffix(journal, "\n"), "\n") {
		s := sha256.Sum256(append(append([]byte(nil), h...), l...))
		h = s[:]
	}
	c := ChainOf([]byte(journal + `{"seq":11,"type":"Warn`)) // a torn tail is not sealed
	if c.Lines != 10 || c.Hash != hex.EncodeToString(h) {
		t.Errorf("chain %d lines %s, want 10 lines %x", c.Lines, c.Hash, h)
	}
}

func TestSealFoldsOutcomes(t *testing.T) {
	r, err := Seal([]byte(journal), Input{PlanHash: "p", Final: "c1", Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "failed" || len(r.Tasks) != 2 || r.Usage.CostMicros != 5 {
		t.Fatalf("receipt %+v", r)
	}
	a, b := r.Tasks[0], r.Tasks[1]
	if a.State != "succeeded" || a.Commit != "c1" || a.Attempts != 1 || len(a.Gates) != 1 || !a.Gates[0].Passed || a.Usage.InputTokens != 10 {
		t.Errorf("task a: %+v", a)
	}
	if b.State != "failed" || b.Reason != "gate test failed" {
		t.Errorf("task b: %+v", b)
	}
}

func TestVerify(t *testing.T) {
	r, err := Seal([]byte(journal), Input{PlanHash: "p", Final: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	good := Branch{Tip: "c1", Commits: []Commit{{ID: "c1", Task: "a"}}}
	if got := Verify(r, []byte(journal), "p", good); len(got) != 0 {
		t.Fatalf("untouched: %v", got)
	}
	cases := []struct {
		name    string
		journal string
		plan    string
		branch  Branch
		want    string
	}{
		{"edited line", strings.Replace(journal, `"input_tokens":10`, `"input_tokens":1`, 1), "p", good, "journal line 4: differs"},
		{"cut", strings.Join(strings.SplitAfter(journal, "\n")[:8], ""), "p", good, "lines 9 to 10 are missing"},
		{"appended", journal + `{"seq":11,"type":"Warning"}` + "\n", "p", good, "lines 11 to 11 were appended"},
		{"deleted", strings.Replace(journal, strings.SplitAfter(journal, "\n")[4], "", 1), "p", good, "journal: line 5 was deleted (the receipt sealed 10 lines"},
		{"inserted", strings.Replace(journal, strings.SplitAfter(journal, "\n")[2], strings.SplitAfter(journal, "\n")[2]+`{"seq":3,"type":"Warning"}`+"\n", 1), "p", good, "journal: line 4 was inserted"},
		{"torn tail", journal + `{"seq":11,"type":"TaskFailed","task":"a"}`, "p", good, "journal: 41 bytes after line 10 are not a complete line"},
		{"plan", journal, "q", good, "plan: its hash is q"},
		{"moved", journal, "p", Branch{Tip: "c2", Commits: good.Commits}, "at c2, the receipt sealed c1"},
		{"missing commit", journal, "p", Branch{Tip: "c1"}, "task a: its commit c1 is not on the run branch"},
		{"no trailer", journal, "p", Branch{Tip: "c1", Commits: []Commit{{ID: "c1"}}}, "task a: its commit c1 is on the run branch but has no Muster-Task trailer"},
		// A commit on the branch that the journal does not record is
		// foreign, whatever its trailer claims.
		{"foreign commit", journal, "p", Branch{Tip: "c1", Commits: []Commit{{ID: "c9", Task: "b"}, {ID: "c1", Task: "a"}}},
			"commit c9 on the run branch (its trailer claims task b) was not made by muster: no journal event records it"},
		{"gone", journal, "p", Branch{}, "missing"},
	}
	for _, c := range cases {
		got := strings.Join(Verify(r, []byte(c.journal), c.plan, c.branch), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	// An edited receipt: the outcome no longer matches the journal.
	r.Tasks[1].State = "succeeded"
	if got := strings.Join(Verify(r, []byte(journal), "p", good), "\n"); !strings.Contains(got, "task b: the receipt says succeeded") {
		t.Errorf("edited receipt: %q", got)
	}
}

// A journal and receipt forged to give task a the commit of another task
// (b): the commit is on the run branch, and verify says whose it is
// rather than that it is missing.
func TestVerifyNamesAnotherTasksCommit(t *testing.T) {
	forged := strings.ReplaceAll(journal, `"commit":"c1"`, `"commit":"c2"`)
	r, err := Seal([]byte(forged), Input{PlanHash: "p", Final: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Verify(r, []byte(forged), "p", Branch{Tip: "c2", Commits: []Commit{{ID: "c2", Task: "b"}}}), "\n")
	if want := "task a: its commit c2 is on the run branch but is task b's commit (Muster-Task: b)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A receipt tells a pre-existing gate failure (not the task's) and a run
// on the integrated tree from the task's own gate runs.
func TestSealMarksGatesNotChargedAndIntegration(t *testing.T) {
	j := `{"seq":1,"type":"RunStarted","run":"r1","base":"b0","branch":"muster/r1"}
{"seq":2,"type":"TasksPlanned","tasks":[{"id":"a","title":"A"}]}
{"seq":3,"type":"TaskStarted","task":"a","attempt":1}
{"seq":4,"type":"GateRan","task":"a","attempt":1,"gate":"pre","passed":false,"baseline":"fail","reason":"pre-existing: it fails on the base too"}
{"seq":5,"type":"GateRan","task":"a","attempt":1,"gate":"test","passed":false,"phase":"integration"}
{"seq":6,"type":"GateRan","task":"a","attempt":1,"gate":"test","passed":true,"round":1}
{"seq":7,"type":"Integrated","task":"a","commit":"c1"}
{"seq":8,"type":"TaskSucceeded","task":"a","attempt":1,"commit":"c1"}
{"seq":9,"type":"RunFinished","state":"succeeded"}
`
	r, err := Seal([]byte(j), Input{PlanHash: "p", Final: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Tasks[0].Gates
	if len(g) != 3 || !g[0].NotCharged || g[0].Phase != "" || g[1].NotCharged || g[1].Phase != "integration" || g[2].NotCharged || !g[2].Passed {
		t.Fatalf("gates %+v", g)
	}
}

// TestSealHashesThePlanWithTheRecordedForm: a run records the version of
// the plan's canonical form in TasksPlanned; the receipt hashes the plan
// in that version (1 for journals older than the record), so a muster
// whose current form is newer still seals and verifies old runs.
func TestSealHashesThePlanWithTheRecordedForm(t *testing.T) {
	hash := func(v int) string { return "form" + string(rune('0'+v)) }
	r, err := Seal([]byte(journal), Input{HashPlan: hash, Final: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.PlanCanon != 0 || r.Canon() != 1 || r.PlanHash != "form1" {
		t.Errorf("old journal: canon %d (%d), hash %q; want version 1", r.PlanCanon, r.Canon(), r.PlanHash)
	}
	j := strings.Replace(journal, `"type":"TasksPlanned",`, `"type":"TasksPlanned","canon":2,`, 1)
	if r, err = Seal([]byte(j), Input{HashPlan: hash, Final: "c1"}); err != nil {
		t.Fatal(err)
	}
	if r.PlanCanon != 2 || r.PlanHash != "form2" {
		t.Errorf("canon %d, hash %q; want version 2", r.PlanCanon, r.PlanHash)
	}
	// A delegated fragment's TasksPlanned does not change the version.
	j += `{"seq":11,"type":"TasksPlanned","task":"a","canon":9,"tasks":[{"id":"c","title":"C"}]}` + "\n"
	if r, _ = Seal([]byte(j), Input{HashPlan: hash}); r.PlanCanon != 2 {
		t.Errorf("a fragment set the version to %d", r.PlanCanon)
	}
}
