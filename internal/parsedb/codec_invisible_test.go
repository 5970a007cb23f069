package parsedb

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A hidden class and a class that does not exist must give the same bytes
// in every position that is a reference by type (SECURITY.md "Hidden
// references"): the marker names no class, and references to a missing
// class are redacted like references to a hidden one.

// invisibleRow stores references to target in every reference position: a
// pointer column, an embedded pointer, an embedded {__type:"Object"}, a
// relation marker, pointers as array elements and in nested arrays and
// objects, and (free strings) a top-level "Class$id" string and one inside
// an array.
func invisibleRow(target string) bson.D {
	ptr := func(id string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: target}, {Key: "objectId", Value: id}}
	}
	return bson.D{
		{Key: "_id", Value: "s1"},
		{Key: "_p_ghost", Value: target + "$ghostId001"},
		{Key: "_p_artist", Value: "Artist$a1"},
		{Key: "meta", Value: bson.D{
			{Key: "credential", Value: ptr("credId0001")},
			{Key: "obj", Value: bson.D{{Key: "__type", Value: "Object"}, {Key: "className", Value: target}, {Key: "objectId", Value: "objId00001"}, {Key: "apiKey", Value: "k-123"}}},
			{Key: "rel", Value: bson.D{{Key: "__type", Value: "Relation"}, {Key: "className", Value: target}}},
			{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: ptr("deepId0001")}}}},
			{Key: "visible", Value: bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Artist"}, {Key: "objectId", Value: "a2"}}},
		}},
		{Key: "refs", Value: bson.A{ptr("arrId00001"), bson.A{ptr("arrId00002")}, "rock"}},
	}
}

func invisibleClass() *Class {
	return ClassFromSchemaDoc(bson.M{"_id": "Song", "ghost": "*Ghost", "artist": "*Artist", "meta": "object", "refs": "array", "leak": "string", "tags": "array"})
}

func TestHiddenAndMissingReferencesGiveTheSameBytes(t *testing.T) {
	hidden := func(c string) bool { return c == "VaultSecret" }
	known := map[string]bool{"Song": true, "Artist": true, "VaultSecret": true}
	missing := func(c string) bool { return !known[c] }
	cls := invisibleClass()
	// The pointer column's schema target is each case's class, so compact
	// mode would show a bare id and a pointer_classes entry if it were not
	// redacted.
	withTarget := func(target string) *Class {
		c := *cls
		c.Fields = map[string]*Field{}
		for k, f := range cls.Fields {
			ff := *f
			c.Fields[k] = &ff
		}
		c.Fields["ghost"].TargetClass = target
		return &c
	}
	type variant struct {
		name    string
		keys    []string
		compact bool
	}
	variants := []variant{
		{"whole row", nil, false},
		{"whole row compact", nil, true},
		{"pointer column", []string{"ghost"}, true},
		{"embedded pointer path", []string{"meta.credential.objectId"}, false},
		{"embedded object path", []string{"meta.obj.apiKey"}, false},
		{"relation path", []string{"meta.rel.className"}, false},
		{"nested array path", []string{"meta.a.b.objectId"}, false},
		{"array elements", []string{"refs"}, true},
		{"array element paths", []string{"refs.objectId"}, false},
	}
	render := func(target string, v variant) (string, *Legend) {
		enc := &RowEncoder{Class: withTarget(target), HiddenClass: hidden, MissingClass: missing, Compact: v.compact}
		if v.compact {
			enc.Legend = &Legend{}
		}
		enc.SelectKeys(v.keys)
		out, err := enc.AppendRow(nil, mustRaw(t, invisibleRow(target)))
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		return string(out), enc.Legend
	}
	for _, v := range variants {
		h, hl := render("VaultSecret", v)
		m, ml := render("NoSuchClass", v)
		if h != m {
			t.Errorf("%s: hidden and missing differ:\nhidden:  %s\nmissing: %s", v.name, h, m)
		}
		for _, out := range []string{h, m} {
			for _, leak := range []string{"VaultSecret", "NoSuchClass", "ghostId001", "credId0001", "objId00001", "k-123", "deepId0001", "arrId0000"} {
				if strings.Contains(out, leak) {
					t.Errorf("%s: output names %q: %s", v.name, leak, out)
				}
			}
		}
		if !strings.Contains(h, RedactedMarker) {
			t.Errorf("%s: no redaction marker: %s", v.name, h)
		}
		for _, l := range []*Legend{hl, ml} {
			if l == nil {
				continue
			}
			for f, c := range l.PointerClasses {
				if c == "VaultSecret" || c == "NoSuchClass" {
					t.Errorf("%s: pointer_classes names the invisible class for %s", v.name, f)
				}
			}
		}
	}
	// Visible references are left alone.
	whole, _ := render("NoSuchClass", variants[0])
	if !strings.Contains(whole, `"artist":{"__type":"Pointer","className":"Artist","objectId":"a1"}`) ||
		!strings.Contains(whole, `"visible":{"__type":"Pointer","className":"Artist","objectId":"a2"}`) {
		t.Errorf("a visible pointer was redacted: %s", whole)
	}
	want := `{"objectId":"s1","ghost":{"__redacted":true},"artist":{"__type":"Pointer","className":"Artist","objectId":"a1"},` +
		`"meta":{"credential":{"__redacted":true},"obj":{"__redacted":true},"rel":{"__redacted":true},"a":[{"b":{"__redacted":true}}],` +
		`"visible":{"__type":"Pointer","className":"Artist","objectId":"a2"}},"refs":[{"__redacted":true},[{"__redacted":true}],"rock"]}`
	if whole != want {
		t.Errorf("whole row:\n got %s\nwant %s", whole, want)
	}
}

// Free "Class$id" strings and untyped objects with a className key are
// user data: they are redacted for hidden classes only, so a string that
// merely looks like a reference ("Ke$ha") is never corrupted. This is the
// documented residual (SECURITY.md "Hidden references").
func TestFreeStringsAreRedactedForHiddenClassesOnly(t *testing.T) {
	hidden := func(c string) bool { return c == "VaultSecret" }
	missing := func(c string) bool { return c != "Song" && c != "VaultSecret" }
	cls := invisibleClass()
	cases := []struct {
		value any
		want  string
	}{
		{"VaultSecret$wu1JlVFHb8", RedactedMarker},
		{"Ke$ha", `"Ke$ha"`},
		{"NoSuchClass$wu1JlVFHb8", `"NoSuchClass$wu1JlVFHb8"`},
		{bson.A{"VaultSecret$x1x1x1x1x1", "Ke$ha"}, `[` + RedactedMarker + `,"Ke$ha"]`},
		{bson.D{{Key: "className", Value: "VaultSecret"}}, RedactedMarker},
		{bson.D{{Key: "className", Value: "Teacher"}}, `{"className":"Teacher"}`},
		{bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Teacher"}, {Key: "objectId", Value: "t1"}}, RedactedMarker},
		{bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Song"}, {Key: "objectId", Value: "t1"}}, `{"__type":"Pointer","className":"Song","objectId":"t1"}`},
	}
	for _, c := range cases {
		enc := &RowEncoder{Class: cls, HiddenClass: hidden, MissingClass: missing}
		out, err := enc.AppendRow(nil, mustRaw(t, bson.D{{Key: "_id", Value: "s1"}, {Key: "leak", Value: c.value}}))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"objectId":"s1","leak":` + c.want + `}`; string(out) != want {
			t.Errorf("%v:\n got %s\nwant %s", c.value, out, want)
		}
	}
}

// FuzzHiddenEqualsMissingPaths: whatever keys are requested, in either row
// shape, a row referring to a hidden class and the same row referring to a
// missing class encode to the same bytes and show no class name or id.
func FuzzHiddenEqualsMissingPaths(f *testing.F) {
	for _, seed := range []string{"", "ghost", "meta.credential.objectId", "meta.obj.apiKey,refs", "meta.a.b.className", "refs.objectId", "meta.rel", "meta.visible.objectId,artist"} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	hidden := func(c string) bool { return c == "VaultSecret" }
	known := map[string]bool{"Song": true, "Artist": true, "VaultSecret": true}
	missing := func(c string) bool { return !known[c] }
	f.Fuzz(func(t *testing.T, keyList string, compact bool) {
		var keys []string
		if keyList != "" {
			keys = strings.Split(keyList, ",")
		}
		render := func(target string) string {
			cls := invisibleClass()
			cls.Fields["ghost"].TargetClass = target
			enc := &RowEncoder{Class: cls, HiddenClass: hidden, MissingClass: missing, Compact: compact}
			if compact {
				enc.Legend = &Legend{}
			}
			enc.SelectKeys(keys)
			out, err := enc.AppendRow(nil, mustRaw(t, invisibleRow(target)))
			if err != nil {
				t.Fatalf("%q: %v", keyList, err)
			}
			if compact {
				for _, c := range enc.Legend.PointerClasses {
					if c == target {
						t.Fatalf("%q: pointer_classes names %s", keyList, c)
					}
				}
			}
			return string(out)
		}
		h, m := render("VaultSecret"), render("NoSuchClass")
		if h != m {
			t.Fatalf("keys %q: hidden %s, missing %s", keyList, h, m)
		}
		for _, leak := range []string{"VaultSecret", "NoSuchClass", "secret", "Id0", "k-123"} {
			if strings.Contains(h, leak) {
				t.Fatalf("keys %q show %q: %s", keyList, leak, h)
			}
		}
	})
}
