package planfile

import (
	"reflect"
	"slices"
	"testing"

	"github.com/muster-run/muster"
)

// notContent are the Task fields that are not the plan's content: where
// it was written. Every other field must change the plan's hash.
var notContent = []string{"Line", "KeyLines", "ItemLines"}

// needs sets what a field counts only with (DelegateDepth is read only
// when Delegates is set), on both sides of the comparison.
var needs = map[string]func(*muster.Task){
	"DelegateDepth": func(t *muster.Task) { t.Delegates = true },
}

// TestCanonicalTaskHashCoversEveryField: each exported field of
// muster.Task, set to a sample value, changes the plan's hash, or is
// listed in notContent. A new plan key left out of canonTaskOf fails here
// (TestCoverageCheckCatchesALeftOutField shows it).
func TestCanonicalTaskHashCoversEveryField(t *testing.T) {
	t.Parallel()
	hash := func(v reflect.Value) string {
		task := v.Interface().(muster.Task)
		return Hash(&muster.Plan{Title: "p", Tasks: []*muster.Task{&task}})
	}
	for _, f := range uncovered(reflect.TypeFor[muster.Task](), hash) {
		t.Errorf("muster.Task.%s set to a sample value does not change the plan's hash: add it to canonTask and canonTaskOf (planfile/hash.go), or to notContent if it is not content", f)
	}
}

// TestCoverageCheckCatchesALeftOutField: a task type with one field more
// than its canonical form reads is caught, the others are not.
func TestCoverageCheckCatchesALeftOutField(t *testing.T) {
	t.Parallel()
	type taskPlus struct {
		muster.Task
		NewKey string // a plan key canonTaskOf does not know
	}
	hash := func(v reflect.Value) string {
		task := v.Interface().(taskPlus).Task
		return Hash(&muster.Plan{Title: "p", Tasks: []*muster.Task{&task}})
	}
	if got := uncovered(reflect.TypeFor[taskPlus](), hash); !slices.Equal(got, []string{"NewKey"}) {
		t.Errorf("uncovered = %v, want [NewKey]", got)
	}
}

// uncovered returns the exported fields of struct type typ (those of an
// embedded struct by their own names) that, set one at a time to a
// sample value, leave hash unchanged.
func uncovered(typ reflect.Type, hash func(reflect.Value) string) []string {
	var out []string
	var walk func(path []int, typ reflect.Type)
	walk = func(path []int, ft reflect.Type) {
		for i := range ft.NumField() {
			f := ft.Field(i)
			at := append(slices.Clone(path), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(at, f.Type)
				continue
			}
			if !f.IsExported() || slices.Contains(notContent, f.Name) {
				continue
			}
			base, with := reflect.New(typ).Elem(), reflect.New(typ).Elem()
			if set := needs[f.Name]; set != nil {
				for _, v := range []reflect.Value{base, with} {
					set(v.FieldByIndex(path).Addr().Interface().(*muster.Task))
				}
			}
			sample(with.FieldByIndex(at))
			if hash(base) == hash(with) {
				out = append(out, f.Name)
			}
		}
	}
	walk(nil, typ)
	return out
}

// sample sets v to a value other than its zero and any default.
func sample(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("sample")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		sample(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		sample(k)
		sample(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		sample(p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				sample(v.Field(i))
			}
		}
	}
}
