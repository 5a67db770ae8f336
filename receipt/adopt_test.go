package receipt

import (
	"strings"
	"testing"
)

// A resume that adopted an edited plan: the receipt seals the new
// version's file and hash, and the task the version added.
const adopted = journal + `{"seq":11,"type":"RunResumed"}
{"seq":12,"type":"PlanAdopted","plan":"plan-2.md","plan_hash":"h2","tasks":[{"id":"b","title":"B fixed","after":["a"]},{"id":"c","title":"C","after":["b"]}]}
{"seq":13,"type":"TaskStarted","task":"b","attempt":2}
{"seq":14,"type":"Integrated","task":"b","commit":"c2"}
{"seq":15,"type":"TaskSucceeded","task":"b","attempt":2,"commit":"c2"}
{"seq":16,"type":"TaskStarted","task":"c","attempt":1}
{"seq":17,"type":"TaskSucceeded","task":"c","attempt":1,"reason":"no change"}
{"seq":18,"type":"RunFinished","state":"succeeded"}
`

func TestSealCoversAdoptedPlans(t *testing.T) {
	r, err := Seal([]byte(adopted), Input{PlanHash: "p", Final: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Plans) != 1 || r.Plans[0] != (PlanVersion{File: "plan-2.md", Hash: "h2"}) {
		t.Fatalf("plans %+v", r.Plans)
	}
	if len(r.Tasks) != 3 || r.Tasks[2].ID != "c" || r.Tasks[2].State != "succeeded" || r.Tasks[1].State != "succeeded" {
		t.Fatalf("tasks %+v", r.Tasks)
	}
	good := Branch{Tip: "c2", Commits: []Commit{{ID: "c2", Task: "b"}, {ID: "c1", Task: "a"}}}
	if got := Verify(r, []byte(adopted), "p", good); len(got) != 0 {
		t.Fatalf("untouched: %v", got)
	}
	hashes := map[string]string{"plan-2.md": "h2"}
	hashOf := func(f string) string { return hashes[f] }
	if got := VerifyPlans(r, hashOf); len(got) != 0 {
		t.Fatalf("untouched versions: %v", got)
	}
	hashes["plan-2.md"] = "tampered"
	if got := VerifyPlans(r, hashOf); len(got) != 1 || !strings.Contains(got[0], "plan plan-2.md: its hash is") {
		t.Fatalf("tampered version: %v", got)
	}
	delete(hashes, "plan-2.md")
	if got := VerifyPlans(r, hashOf); len(got) != 1 || !strings.Contains(got[0], "plan-2.md") || !strings.Contains(got[0], "missing") {
		t.Fatalf("missing version: %v", got)
	}
	// A receipt whose list of versions was edited (one dropped, so that
	// verify would not look at its file) disagrees with its journal.
	r.Plans = nil
	if got := Verify(r, []byte(adopted), "p", good); len(got) != 1 || !strings.Contains(got[0], "plan versions none; the journal adopted plan-2.md") {
		t.Fatalf("edited receipt: %v", got)
	}
}

// A receipt sealed before adopted versions existed has no plans key and
// still verifies.
func TestOldReceiptHasNoPlans(t *testing.T) {
	r, err := Seal([]byte(journal), Input{PlanHash: "p", Final: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Plans != nil || len(VerifyPlans(r, func(string) string { return "" })) != 0 {
		t.Fatalf("plans %+v", r.Plans)
	}
}
