package journal

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
)

// TestEncoderCoversEvent fails when muster.Event's fields are no longer
// the ones the fast encoder writes (journal/encode.go): update the
// encoder and eventShape together.
func TestEncoderCoversEvent(t *testing.T) {
	if got := shapeOf(reflect.TypeFor[muster.Event]()); got != eventShape {
		t.Fatalf("muster.Event's JSON shape changed; the journal's encoder falls back to encoding/json for every event until appendEvent and eventShape follow it:\n got %s\nwant %s", got, eventShape)
	}
}

// stdLine is the journal line as encoding/json writes it.
func stdLine(e *muster.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(e)
	return buf.Bytes(), err
}

// oddString draws strings with what JSON encoders get wrong: HTML
// characters, quotes and backslashes, control characters, DEL, U+2028
// and U+2029, invalid and truncated UTF-8, and arbitrary text.
func oddString(t *rapid.T, label string) string {
	if rapid.IntRange(0, 4).Draw(t, label+"-empty") == 0 {
		return ""
	}
	chunks := rapid.SliceOfN(rapid.OneOf(
		rapid.SampledFrom([]string{"<", ">", "&", `"`, `\`, "/", "\u2028", "\u2029", "\x7f", "\xff", "\xc3", "\xe2\x80",
			"\xed\xa0\x80", "é", "日本", "😀", "\ufffd", "\u0085", "\u00a0", "</script>", "a", " ", "t00001", "\x00"}),
		rapid.Map(rapid.ByteRange(0, 0x1f), func(b byte) string { return string([]byte{b}) }),
		rapid.String(),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 8), func(b []byte) string { return string(b) }),
	), 1, 6).Draw(t, label)
	return strings.Join(chunks, "")
}

// randTime draws times the encoder must write as time.Time does, or
// refuse where it refuses: zones with odd offsets, years out of range.
func randTime(t *rapid.T, label string) time.Time {
	if rapid.IntRange(0, 5).Draw(t, label+"-zero") == 0 {
		return time.Time{}
	}
	sec := rapid.OneOf(
		rapid.Int64Range(1_600_000_000, 1_900_000_000),
		rapid.Int64Range(-70_000_000_000, 260_000_000_000),
	).Draw(t, label+"-sec")
	tm := time.Unix(sec, rapid.Int64Range(0, 999_999_999).Draw(t, label+"-ns"))
	if rapid.IntRange(0, 3).Draw(t, label+"-edge") == 0 {
		// Years at and past the ends of RFC 3339's range.
		year := rapid.SampledFrom([]int{-1, 0, 1, 9998, 9999, 10000, 12345}).Draw(t, label+"-year")
		tm = time.Date(year, time.Month(rapid.IntRange(1, 12).Draw(t, label+"-month")), 1, 0, 0, 0,
			rapid.IntRange(0, 999_999_999).Draw(t, label+"-nanos"), time.UTC)
	}
	switch rapid.IntRange(0, 3).Draw(t, label+"-zone") {
	case 0:
		return tm.UTC()
	case 1:
		return tm.In(time.FixedZone("z", rapid.IntRange(-30*3600, 30*3600).Draw(t, label+"-off")))
	case 2:
		return tm.In(time.FixedZone("h", 3600*rapid.IntRange(-25, 25).Draw(t, label+"-hours")))
	}
	return tm
}

var timeType = reflect.TypeFor[time.Time]()

// fill gives v (settable) a random value, by reflection, so that a
// field added to muster.Event is drawn too and the comparison with
// encoding/json fails until the encoder writes it.
func fill(t *rapid.T, v reflect.Value, label string, depth int) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(randTime(t, label)))
		return
	case v.Type() == reflect.TypeFor[muster.Config]() || v.Type() == reflect.TypeFor[muster.Task]() || v.Type() == reflect.TypeFor[muster.ExecutorSpec]():
		// Covered by encoding/json (the fallback); a few fields suffice.
		if v.Type() == reflect.TypeFor[muster.Task]() {
			v.FieldByName("ID").SetString(oddString(t, label+"-id"))
		}
		if v.Type() == reflect.TypeFor[muster.ExecutorSpec]() {
			v.FieldByName("Name").SetString(oddString(t, label+"-name"))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(oddString(t, label))
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, label))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(rapid.OneOf(rapid.Int64Range(-3, 3), rapid.Int64()).Draw(t, label))
	case reflect.Uint64, reflect.Uint, reflect.Uint32:
		v.SetUint(rapid.OneOf(rapid.Uint64Range(0, 3), rapid.Uint64()).Draw(t, label))
	case reflect.Pointer:
		if depth > 3 || rapid.Bool().Draw(t, label+"-nil") {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), label, depth+1)
		v.Set(p)
	case reflect.Slice:
		switch rapid.IntRange(0, 3).Draw(t, label+"-kind") {
		case 0:
			return // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		n := rapid.IntRange(1, 3).Draw(t, label+"-len")
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fill(t, s.Index(i), label, depth+1)
		}
		v.Set(s)
	case reflect.Map:
		// Covered by encoding/json (the fallback), as Tasks is.
		if rapid.Bool().Draw(t, label+"-nil") {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := range rapid.IntRange(0, 3).Draw(t, label+"-len") {
			k := reflect.New(v.Type().Key()).Elem()
			fill(t, k, label+"-key", depth+1)
			m.SetMapIndex(k, reflect.ValueOf(float64(i)+0.5).Convert(v.Type().Elem()))
		}
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				// Each field empty half the time, so omitempty is exercised.
				if rapid.Bool().Draw(t, f.Name+"-set") {
					fill(t, v.Field(i), f.Name, depth+1)
				}
			}
		}
	default:
		t.Fatalf("fill: no generator for %s (%s)", v.Type(), label)
	}
}

// TestEncoderMatchesEncodingJSON: the journal's line for any event is
// byte for byte encoding/json's, or both refuse it.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	fast := 0
	rapid.Check(t, func(t *rapid.T) {
		var e muster.Event
		fill(t, reflect.ValueOf(&e).Elem(), "event", 0)
		want, werr := stdLine(&e)
		prefix := []byte("earlier line\n")
		got, gerr := appendLine(append([]byte(nil), prefix...), &e)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("encoding/json: %v; journal: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if !bytes.HasPrefix(got, prefix) {
			t.Fatalf("the line does not follow what the buffer held: %q", got)
		}
		if got = got[len(prefix):]; !bytes.Equal(got, want) {
			t.Fatalf("lines differ\n got %s\nwant %s", got, want)
		}
		if _, ok := appendEvent(nil, &e); ok {
			fast++
		}
	})
	if fast == 0 {
		t.Fatal("the fast encoder covered no event")
	}
}

// TestEncoderOddStrings pins the escapes one by one.
func TestEncoderOddStrings(t *testing.T) {
	for _, s := range []string{"<a href=\"x\">&amp;</a>", "\u2028\u2029", "\xff\xfe", "\xe2\x80", "\x00\x01\x1f\x7f",
		"\b\f\n\r\t", `\"`, "日本😀", "\ud7ff", string([]byte{0xed, 0xa0, 0x80})} {
		e := &muster.Event{Seq: 1, Time: time.Date(2026, 12, 2, 9, 0, 0, 120, time.UTC), Type: muster.EvMessage, Message: s, Paths: []string{s}}
		want, _ := stdLine(e)
		got, ok := appendEvent(nil, e)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%q: ok %v\n got %s\nwant %s", s, ok, got, want)
		}
	}
}

// BenchmarkEncodeEvent: one typical journal line (a Phase and an
// Integrating of a batch of 8) by the fast encoder and by encoding/json.
func BenchmarkEncodeEvent(b *testing.B) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 123456789, time.UTC)
	chain := make([]muster.ChainLink, 8)
	for i := range chain {
		chain[i] = muster.ChainLink{Task: muster.TaskID("t0000" + string(rune('0'+i))), Commit: strings.Repeat("c", 40)}
	}
	evs := []*muster.Event{
		{Seq: 12345, Time: now, Type: muster.EvPhase, Task: "t00001", Attempt: 1, Phase: "integrating"},
		{Seq: 12346, Time: now, Type: muster.EvIntegrating, Task: "t00001", Attempt: 1, Commit: strings.Repeat("m", 40), Tip: strings.Repeat("a", 40), Chain: chain},
	}
	b.Run("fast", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			for _, e := range evs {
				buf, _ = appendLine(buf[:0], e)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			for _, e := range evs {
				buf, _ = appendEventStd(buf[:0], e)
			}
		}
	})
}
