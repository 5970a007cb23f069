package pipelinestage

import (
	"strings"
	"testing"
)

// TestTableConsistent: each stage once, named as an operator, with an
// argument grammar, and with the facts its grammar implies.
func TestTableConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, st := range All() {
		if seen[st.Name] {
			t.Errorf("%s twice", st.Name)
		}
		seen[st.Name] = true
		if !strings.HasPrefix(st.Name, "$") || len(st.Name) < 2 {
			t.Errorf("%q is not a stage operator", st.Name)
		}
		if got, ok := Of(st.Name); !ok || got.Name != st.Name {
			t.Errorf("Of(%s) = %v, %v", st.Name, got, ok)
		}
		if st.Arg == ArgNone {
			t.Errorf("%s has no argument grammar", st.Name)
		}
		join := st.Arg == ArgLookup || st.Arg == ArgUnionWith || st.Arg == ArgGraphLookup
		if join != (st.Join.From != "") {
			t.Errorf("%s: grammar %d but join %+v", st.Name, st.Arg, st.Join)
		}
		subs := map[Arg]SubPipelines{ArgFacets: EachValue, ArgLookup: PipelineOption, ArgUnionWith: PipelineOption}[st.Arg]
		if st.SubPipelines != subs {
			t.Errorf("%s: sub-pipelines %d, its grammar has %d", st.Name, st.SubPipelines, subs)
		}
	}
	if len(Names()) != len(seen) {
		t.Errorf("Names() lists %d stages, the table %d", len(Names()), len(seen))
	}
	if _, ok := Of("$out"); ok {
		t.Error("$out is in the table")
	}
}
