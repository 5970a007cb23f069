package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// TestInvisibleTargetFieldsNameNoClass: a field whose Pointer or Relation
// target is hidden or missing is refused without naming the target, the
// same bytes for both, in writes (the caller named the field, not the
// class), in includes and in pipeline references; schema display masks both.
func TestInvisibleTargetFieldsNameNoClass(t *testing.T) {
	schema := secSchema()
	song := schema.Class("Song")
	song.Fields["ghostRef"] = &parsedb.Field{Name: "ghostRef", Type: parsedb.TypePointer, TargetClass: "NoSuchClzz"}
	song.Fields["secretRel"] = &parsedb.Field{Name: "secretRel", Type: parsedb.TypeRelation, TargetClass: "VaultSecret"}
	song.Fields["ghostRel"] = &parsedb.Field{Name: "ghostRel", Type: parsedb.TypeRelation, TargetClass: "NoSuchClzz"}
	e := secEngine(t, "", withTenant("org1"))
	type probe struct {
		name string
		run  func(field string) error
	}
	probes := []probe{
		{"write create", func(f string) error {
			_, _, err := e.CheckObjectWrite(context.Background(), schema, song, ObjectWrite{Op: OpCreate, Fields: map[string]any{f: "v1"}})
			return err
		}},
		{"write relation op", func(f string) error {
			_, _, err := e.CheckObjectWrite(context.Background(), schema, song, ObjectWrite{Op: OpUpdate, Fields: map[string]any{f: map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "Song", "objectId": "s1"}}}}})
			return err
		}},
		{"include", func(f string) error {
			_, err := e.CheckInclude(context.Background(), schema, song, f)
			return err
		}},
	}
	for _, pair := range [][2]string{{"secretRef", "ghostRef"}, {"secretRel", "ghostRel"}} {
		for _, p := range probes {
			var msgs []string
			for _, f := range pair {
				err := p.run(f)
				if err == nil {
					t.Errorf("%s %s: accepted", p.name, f)
					continue
				}
				if strings.Contains(err.Error(), "VaultSecret") || strings.Contains(err.Error(), "NoSuchClzz") {
					t.Errorf("%s %s names the target: %v", p.name, f, err)
				}
				msgs = append(msgs, outcome(err)+": "+strings.ReplaceAll(err.Error(), f, "F"))
			}
			if len(msgs) == 2 && msgs[0] != msgs[1] {
				t.Errorf("%s %v: hidden and missing differ:\n%s\n%s", p.name, pair, msgs[0], msgs[1])
			}
		}
		for _, f := range pair {
			if got := e.DisplayType(schema, song.Field(f)); !strings.HasSuffix(got, "<<targetClass>>") {
				t.Errorf("display type of %s: %s", f, got)
			}
		}
	}
}
