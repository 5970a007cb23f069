package e2e

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsetest"
)

// TestAdvTrailingNewlineReferenceOracle: a string of the reference shape
// followed by a newline is text to the row codec and the write checkpoint
// (it is written, and read back verbatim, whatever class it names), so a
// constraint on it must answer alike for a hidden and a missing class. A
// regex anchored with "$" matches before a final newline on PCRE engines
// (MongoDB, DocumentDB), so the conjunct took "Vault$…\n" for a hidden
// reference and left the row out: counting rows equal to the written text
// named the hidden classes.
func TestAdvTrailingNewlineReferenceOracle(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "t"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	answers := map[string]string{}
	for _, class := range []string{"Vault", "Nowhere", "Memo"} {
		value := class + "$abcdefghij\n"
		callOK(t, c, "update_object", map[string]any{"class_name": "Memo", "object_id": "m1", "fields": map[string]any{"title": value}})
		got := callOK(t, c, "get_object", map[string]any{"class_name": "Memo", "object_id": "m1"})
		var shown string
		if o, ok := got["object"].(map[string]any); ok {
			shown = fmt.Sprint(o["title"])
		} else {
			shown = fmt.Sprint(got["title"])
		}
		var out []string
		for _, where := range []map[string]any{
			{"title": value},
			{"title": map[string]any{"$in": []any{value}}},
			{"title": map[string]any{"$ne": "x"}},
			{"title": map[string]any{"$regex": "^" + class}},
			{"title": map[string]any{"$gt": class}},
		} {
			res := callOK(t, c, "count_objects", map[string]any{"class_name": "Memo", "where": where})
			out = append(out, fmt.Sprint(res["count"]))
		}
		answers[class] = fmt.Sprintf("shown=%v counts=%v", shown == value, out)
	}
	t.Logf("%v", answers)
	if answers["Vault"] != answers["Nowhere"] || answers["Vault"] != answers["Memo"] {
		t.Errorf("a hidden class answers unlike a missing or visible one: %v", answers)
	}
}

// TestAdvDottedKeyNamesAReference: a segment of a dotted update key becomes
// an object key of the stored value, and the reader redacts an object key
// of the reference shape for a hidden class only. A segment naming a hidden
// class and one naming a missing class must get the same answer (dry run
// and write result), or the write names the hidden classes.
func TestAdvDottedKeyNamesAReference(t *testing.T) {
	db, uri := writeDB(t, writeOutSchemas()...)
	insert(t, db, "Doc", bson.D{{Key: "_id", Value: "d1"}, {Key: "title", Value: "t"}, {Key: "meta", Value: bson.D{{Key: "n", Value: int32(1)}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	for _, dry := range []bool{true, false} {
		answers := map[string]string{}
		for _, class := range []string{"Vault", "Nowhere"} {
			key := "meta.sub." + class + "$abcdefghij"
			res := call(t, c, "update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "dry_run": dry,
				"fields": map[string]any{key: 1}})
			answers[class] = fmt.Sprintf("error=%v %s", res.IsError, strings.ReplaceAll(text(res), class, "<C>"))
			callOK(t, c, "update_object", map[string]any{"class_name": "Doc", "object_id": "d1", "fields": map[string]any{"meta": map[string]any{"n": 1}}})
		}
		t.Logf("dry=%v %v", dry, answers)
		if answers["Vault"] != answers["Nowhere"] {
			t.Errorf("dry_run=%v: a hidden class answers\n%s\nwhere a missing one answers\n%s", dry, answers["Vault"], answers["Nowhere"])
		}
	}
}

// advPairSchemas: Box with a Pointer and a Relation into the hidden Vault
// and the same into the missing Nowhere, and Object fields.
func advPairSchemas() []bson.D {
	return append(writeOutSchemas(), bson.D{{Key: "_id", Value: "Box"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"},
		{Key: "vref", Value: "*Vault"}, {Key: "gref", Value: "*Nowhere"}, {Key: "vrel", Value: "relation<Vault>"}, {Key: "grel", Value: "relation<Nowhere>"},
		{Key: "meta", Value: "object"}, {Key: "list", Value: "array"}, {Key: "note", Value: "string"}})
}

// advPairAnswers runs each write for the hidden variant and the missing
// one (fields built by mk from the class, field suffix) and requires the
// same answer once the names are masked.
func advPairAnswers(t *testing.T, call1 func(fields map[string]any, dry bool) string, mks map[string]func(cls, f string) map[string]any) {
	t.Helper()
	for name, mk := range mks {
		for _, dry := range []bool{true, false} {
			h := call1(mk("Vault", "v"), dry)
			m := call1(mk("Nowhere", "g"), dry)
			h = strings.NewReplacer("Vault", "<C>", "vref", "<F>", "vrel", "<F>").Replace(h)
			m = strings.NewReplacer("Nowhere", "<C>", "gref", "<F>", "grel", "<F>").Replace(m)
			if h != m {
				t.Errorf("%s dry_run=%v: hidden answers\n%s\nmissing answers\n%s", name, dry, h, m)
			}
		}
	}
}

var advPointerWrites = map[string]func(cls, f string) map[string]any{
	"dotted":       func(_, f string) map[string]any { return map[string]any{f + "ref.x": 1} },
	"dotted index": func(_, f string) map[string]any { return map[string]any{f + "ref.0": 1} },
	"number":       func(_, f string) map[string]any { return map[string]any{f + "ref": 5} },
	"string":       func(_, f string) map[string]any { return map[string]any{f + "ref": "abcdefghij"} },
	"other class": func(_, f string) map[string]any {
		return map[string]any{f + "ref": map[string]any{"__type": "Pointer", "className": "Memo", "objectId": "m1"}}
	},
	"increment": func(_, f string) map[string]any {
		return map[string]any{f + "ref": map[string]any{"__op": "Increment", "amount": 1}}
	},
	"add": func(_, f string) map[string]any {
		return map[string]any{f + "ref": map[string]any{"__op": "Add", "objects": []any{1}}}
	},
	"delete": func(_, f string) map[string]any { return map[string]any{f + "ref": map[string]any{"__op": "Delete"}} },
	"unknown op": func(_, f string) map[string]any {
		return map[string]any{f + "ref": map[string]any{"__op": "Frobnicate"}}
	},
	"addrelation": func(_, f string) map[string]any {
		return map[string]any{f + "ref": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "Memo", "objectId": "m1"}}}}
	},
	"rel dotted": func(_, f string) map[string]any { return map[string]any{f + "rel.x": 1} },
	"rel set":    func(_, f string) map[string]any { return map[string]any{f + "rel": 1} },
	"rel add other": func(_, f string) map[string]any {
		return map[string]any{f + "rel": map[string]any{"__op": "AddRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "Memo", "objectId": "m1"}}}}
	},
	"rel remove other": func(_, f string) map[string]any {
		return map[string]any{f + "rel": map[string]any{"__op": "RemoveRelation", "objects": []any{map[string]any{"__type": "Pointer", "className": "Memo", "objectId": "m1"}}}}
	},
	"rel batch": func(_, f string) map[string]any {
		return map[string]any{f + "rel": map[string]any{"__op": "Batch", "ops": []any{map[string]any{"__op": "AddRelation", "objects": []any{}}}}}
	},
	"two keys": func(_, f string) map[string]any { return map[string]any{"title": "ok", f + "ref": 5} },
}

// TestAdvInvisibleTargetWrites: every write shape on a Pointer or Relation
// field whose target is hidden answers as the same on one whose target is
// missing, on a row holding no value and on one holding a stored pointer,
// for update and create.
func TestAdvInvisibleTargetWrites(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "t"}})
	insert(t, db, "Box", bson.D{{Key: "_id", Value: "empty"}, {Key: "title", Value: "t"}},
		bson.D{{Key: "_id", Value: "set"}, {Key: "_p_vref", Value: "Vault$vsecretid01"}, {Key: "_p_gref", Value: "Nowhere$vsecretid01"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	for _, id := range []string{"empty", "set", ""} {
		advPairAnswers(t, func(fields map[string]any, dry bool) string {
			args := map[string]any{"class_name": "Box", "fields": fields, "dry_run": dry}
			tool := "create_object"
			if id != "" {
				tool = "update_object"
				args["object_id"] = id
			}
			res := call(t, c, tool, args)
			return fmt.Sprintf("%s %v %s", id, res.IsError, text(res))
		}, advPointerWrites)
	}
}

// TestAdvWholeFieldOpsOnRedactedRows: every whole-field operation on a row
// holding typed references into a hidden class (dry run and not, with and
// without confirmation, direct path) answers without the hidden id or
// class, and with the same bytes as on the row holding the same references
// to a missing class.
func TestAdvWholeFieldOpsOnRedactedRows(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	insert(t, db, "Memo", bson.D{{Key: "_id", Value: "m1"}, {Key: "title", Value: "t"}})
	row := func(id, cls string) bson.D {
		ptr := bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cls}, {Key: "objectId", Value: "vsecretid01"}}
		return bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"},
			{Key: "meta", Value: bson.D{{Key: "ref", Value: ptr}, {Key: "n", Value: int32(1)}}},
			{Key: "list", Value: bson.A{ptr, bson.D{{Key: "k", Value: ptr}}, "a"}},
			{Key: "note", Value: ptr}}
	}
	ops := map[string]map[string]any{
		"add":          {"list": map[string]any{"__op": "Add", "objects": []any{"b"}}},
		"addunique":    {"list": map[string]any{"__op": "AddUnique", "objects": []any{"a", "b"}}},
		"remove":       {"list": map[string]any{"__op": "Remove", "objects": []any{"a"}}},
		"remove ptr":   {"list": map[string]any{"__op": "Remove", "objects": []any{map[string]any{"__type": "Pointer", "className": "Memo", "objectId": "vsecretid01"}}}},
		"delete":       {"list": map[string]any{"__op": "Delete"}},
		"increment":    {"note": map[string]any{"__op": "Increment", "amount": 1}},
		"incr meta":    {"meta": map[string]any{"__op": "Increment", "amount": 1}},
		"add note":     {"note": map[string]any{"__op": "Add", "objects": []any{"b"}}},
		"set meta":     {"meta": map[string]any{"n": 2}},
		"set note":     {"note": "x"},
		"unknown":      {"list": map[string]any{"__op": "Frob"}},
		"dotted index": {"list.2": "c"},
		"dotted far":   {"list.9.x": 1},
		"dotted new":   {"meta.fresh.k": 1},
		"dotted title": {"title.x": 1},
	}
	for _, conf := range []string{"never", "always"} {
		c := writeClient(t, uri, policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {confirm_writes: "+conf+", direct_schema_changes: true, rate_limit: {requests: 1000, window: 60s}}\n"))
		for name, fields := range ops {
			for _, dry := range []bool{true, false} {
				if conf == "always" && !dry {
					continue
				}
				var ans []string
				for _, cls := range []string{"Vault", "Nowhere"} {
					_, _ = db.Collection("Box").DeleteOne(t.Context(), bson.D{{Key: "_id", Value: "b1"}})
					insert(t, db, "Box", row("b1", cls))
					res := call(t, c, "update_object", map[string]any{"class_name": "Box", "object_id": "b1", "fields": fields, "dry_run": dry})
					out := text(res)
					if strings.Contains(out, "vsecretid01") && !strings.Contains(name, "ptr") {
						t.Errorf("%s dry=%v %s: the hidden id shows: %s", name, dry, cls, out)
					}
					out = strings.NewReplacer(cls, "<C>").Replace(out)
					out = timeRe.ReplaceAllString(out, "<time>")
					ans = append(ans, fmt.Sprintf("%v %s", res.IsError, out))
				}
				if ans[0] != ans[1] {
					t.Errorf("%s confirm=%s dry=%v: hidden answers\n%s\nmissing answers\n%s", name, conf, dry, ans[0], ans[1])
				}
			}
		}
	}
}

var timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// TestAdvCreateClassNamesAsData: names an admin chooses in create_class —
// CLP user keys, pointer-permission field lists, protectedFields lists and
// keys, default-value keys and strings — that have the reference shape
// "Class$id" answer alike for a hidden and a missing class, in the create
// (dry run and not) and in get_schema afterwards.
func TestAdvCreateClassNamesAsData(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	_ = db
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	ref := func(cls string) string { return cls + "$abcdefghij" }
	shapes := map[string]func(cls string) (map[string]any, map[string]any){
		"clp user key": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"title": map[string]any{"type": "String"}}, map[string]any{"find": map[string]any{ref(cls): true}}
		},
		"clp role key": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"title": map[string]any{"type": "String"}}, map[string]any{"get": map[string]any{"role:" + ref(cls): true}}
		},
		"clp pointer fields": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"title": map[string]any{"type": "String"}}, map[string]any{"readUserFields": []any{ref(cls)}}
		},
		"clp protected list": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"title": map[string]any{"type": "String"}}, map[string]any{"protectedFields": map[string]any{"*": []any{ref(cls)}}}
		},
		"clp protected key": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"title": map[string]any{"type": "String"}}, map[string]any{"protectedFields": map[string]any{ref(cls): []any{"title"}}}
		},
		"default string": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"title": map[string]any{"type": "String", "defaultValue": ref(cls) + "\n"}}, nil
		},
		"default object key": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"meta": map[string]any{"type": "Object", "defaultValue": map[string]any{cls: 1}}}, nil
		},
		"default untyped className": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"meta": map[string]any{"type": "Object", "defaultValue": map[string]any{"className": cls}}}, nil
		},
		"field named like class": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{cls: map[string]any{"type": "String"}}, nil
		},
		"pointer target": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"p": map[string]any{"type": "Pointer", "targetClass": cls}}, nil
		},
		"relation target": func(cls string) (map[string]any, map[string]any) {
			return map[string]any{"p": map[string]any{"type": "Relation", "targetClass": cls}}, nil
		},
	}
	n := 0
	for name, mk := range shapes {
		for _, dry := range []bool{true, false} {
			var ans []string
			for _, cls := range []string{"Vault", "Nowhere"} {
				n++
				className := fmt.Sprintf("K%d", n)
				fields, clp := mk(cls)
				args := map[string]any{"class_name": className, "fields": fields, "dry_run": dry}
				if clp != nil {
					args["permissions"] = clp
				}
				res := call(t, c, "create_class", args)
				out := fmt.Sprintf("%v %s", res.IsError, text(res))
				if !res.IsError && !dry {
					s := call(t, c, "get_schema", map[string]any{"class_name": className})
					out += " | " + text(s)
				}
				out = strings.NewReplacer(cls, "<C>", className, "<K>").Replace(out)
				ans = append(ans, timeRe.ReplaceAllString(out, "<time>"))
			}
			if ans[0] != ans[1] {
				t.Errorf("%s dry=%v: hidden answers\n%s\nmissing answers\n%s", name, dry, ans[0], ans[1])
			}
		}
	}
}

// TestAdvReadToolsOnRedactedPaths: a where at, below and beside a typed
// reference into a hidden class answers, in every read tool, exactly as
// the same where on a reference to a missing class, and a right guess of
// the hidden id answers as a wrong one.
func TestAdvReadToolsOnRedactedPaths(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	ptr := func(cls string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cls}, {Key: "objectId", Value: "vsecretid01"}}
	}
	for id, cls := range map[string]string{"rowhidden1": "Vault", "rowmissin1": "Nowhere"} {
		insert(t, db, "Box", bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"},
			{Key: "meta", Value: bson.D{{Key: "ref", Value: ptr(cls)}, {Key: "n", Value: int32(1)}}},
			{Key: "list", Value: bson.A{ptr(cls), "a"}}})
	}
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	wheres := map[string]func(g string) map[string]any{
		"eq id": func(g string) map[string]any { return map[string]any{"meta.ref.objectId": g} },
		"gt id": func(g string) map[string]any { return map[string]any{"meta.ref.objectId": map[string]any{"$gte": g}} },
		"lt id": func(g string) map[string]any { return map[string]any{"meta.ref.objectId": map[string]any{"$lte": g}} },
		"regex id": func(g string) map[string]any {
			return map[string]any{"meta.ref.objectId": map[string]any{"$regex": "^" + g[:4]}}
		},
		"in id": func(g string) map[string]any {
			return map[string]any{"meta.ref.objectId": map[string]any{"$in": []any{g, nil}}}
		},
		"nin id": func(g string) map[string]any {
			return map[string]any{"meta.ref.objectId": map[string]any{"$nin": []any{g}}}
		},
		"ne id": func(g string) map[string]any { return map[string]any{"meta.ref.objectId": map[string]any{"$ne": g}} },
		"all id": func(g string) map[string]any {
			return map[string]any{"list.objectId": map[string]any{"$all": []any{g}}}
		},
		"list id":   func(g string) map[string]any { return map[string]any{"list.objectId": g} },
		"list 0 id": func(g string) map[string]any { return map[string]any{"list.0.objectId": g} },
		"or id": func(g string) map[string]any {
			return map[string]any{"$or": []any{map[string]any{"meta.ref.objectId": g}, map[string]any{"title": "zz"}}}
		},
		"nor id": func(g string) map[string]any {
			return map[string]any{"$nor": []any{map[string]any{"meta.ref.objectId": g}}}
		},
		"exists ref": func(g string) map[string]any {
			return map[string]any{"meta.ref": map[string]any{"$exists": true}, "title": map[string]any{"$ne": g}}
		},
		"exists id": func(g string) map[string]any {
			return map[string]any{"meta.ref.objectId": map[string]any{"$exists": false}, "title": map[string]any{"$ne": g}}
		},
		"null id": func(g string) map[string]any {
			return map[string]any{"meta.ref.objectId": nil, "title": map[string]any{"$ne": g}}
		},
		"class": func(g string) map[string]any {
			return map[string]any{"meta.ref.className": map[string]any{"$gt": "A"}, "title": map[string]any{"$ne": g}}
		},
		"type": func(g string) map[string]any {
			return map[string]any{"meta.ref.__type": "Pointer", "title": map[string]any{"$ne": g}}
		},
		"contained": func(g string) map[string]any {
			return map[string]any{"meta.ref.objectId": map[string]any{"$containedBy": []any{g}}}
		},
		"meta n beside": func(g string) map[string]any { return map[string]any{"meta.n": 1, "title": map[string]any{"$ne": g}} },
	}
	type probe struct {
		tool string
		args func(id string, where map[string]any) map[string]any
	}
	withID := func(id string, w map[string]any) map[string]any {
		return map[string]any{"$and": []any{map[string]any{"objectId": id}, w}}
	}
	probes := []probe{
		{"count_objects", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "where": withID(id, w)}
		}},
		{"query_class", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "where": withID(id, w), "keys": []any{"title"}}
		}},
		{"explain_query", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "where": withID(id, w)}
		}},
		{"export_data", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "where": withID(id, w), "keys": []any{"title"}}
		}},
		{"distinct", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "field": "title", "where": withID(id, w)}
		}},
		{"group_by", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "field": "title", "where": withID(id, w)}
		}},
		{"aggregate", func(id string, w map[string]any) map[string]any {
			return map[string]any{"class_name": "Box", "pipeline": []any{map[string]any{"$match": withID(id, w)}, map[string]any{"$count": "n"}}}
		}},
	}
	mask := strings.NewReplacer("rowhidden1", "<id>", "rowmissin1", "<id>", "vsecretid01", "<g>", "wrongguess1", "<g>", "vsec", "<p>", "wron", "<p>")
	cases := 0
	for _, p := range probes {
		for name, w := range wheres {
			var first, firstWhat string
			for _, id := range []string{"rowhidden1", "rowmissin1"} {
				for _, g := range []string{"vsecretid01", "wrongguess1"} {
					res := call(t, c, p.tool, p.args(id, w(g)))
					out := fmt.Sprintf("%v %s", res.IsError, mask.Replace(timeRe.ReplaceAllString(text(res), "<time>")))
					what := id + "/" + g
					cases++
					if first == "" {
						first, firstWhat = out, what
						if name == "eq id" || name == "ne id" {
							t.Logf("%s %s: %.300s", p.tool, name, out)
						}
					} else if out != first {
						t.Errorf("%s %s: %s answers\n%s\nwhere %s answers\n%s", p.tool, name, what, out, firstWhat, first)
					}
				}
			}
		}
	}
	t.Logf("%d calls", cases)
}

// TestAdvBridgeNamesInKeys: through the Parse Server bridge, a dotted key
// or an object key of the reference shape naming a hidden class answers as
// one naming a missing class (Parse stores "$" inside a dotted segment, and
// the reader redacts such a key for a hidden class only), dry run or not,
// and the direct path agrees on the refusal.
func TestAdvBridgeNamesInKeys(t *testing.T) {
	ps := parsetest.Start(t, parsetest.Options{MongoURI: mongoURI})
	db := parseDatabase(t, ps)
	ps.CreateClass(t, "Vault", map[string]string{"key": "String"}, nil)
	ps.CreateClass(t, "Box", map[string]string{"title": "String", "meta": "Object"}, nil)
	insert(t, db, "Box", bson.D{{Key: "_id", Value: "boxrow0001"}, {Key: "title", Value: "t"}, {Key: "meta", Value: bson.D{{Key: "n", Value: int32(1)}}}})
	pol := policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {confirm_writes: never, rate_limit: {requests: 1000, window: 60s}}\n")
	c := stdioClient(t, append(bridgeEnv(ps, "PARSE_MCP_MASTER_KEY="+ps.MasterKey, pol), append(writeEnv, "PARSE_MCP_PERMISSIONS=write")...)...)
	shapes := map[string]func(cls string) map[string]any{
		"dotted segment": func(cls string) map[string]any { return map[string]any{"meta.seen." + cls + "$abcdefghij": true} },
		"dotted last":    func(cls string) map[string]any { return map[string]any{"meta." + cls + "$abcdefghij": 1} },
		"object key": func(cls string) map[string]any {
			return map[string]any{"meta": map[string]any{cls + "$abcdefghij": true}}
		},
		"dotted object key": func(cls string) map[string]any {
			return map[string]any{"meta.seen": map[string]any{cls + "$abcdefghij": true}}
		},
		"dotted newline":       func(cls string) map[string]any { return map[string]any{"meta.s": cls + "$abcdefghij\n"} },
		"dotted className key": func(cls string) map[string]any { return map[string]any{"meta.k": map[string]any{"className": cls}} },
	}
	for name, mk := range shapes {
		for _, dry := range []bool{true, false} {
			var ans []string
			for _, cls := range []string{"Vault", "Nowhere"} {
				res := call(t, c, "update_object", map[string]any{"class_name": "Box", "object_id": "boxrow0001", "fields": mk(cls), "dry_run": dry})
				out := fmt.Sprintf("%v %s", res.IsError, strings.ReplaceAll(text(res), cls, "<C>"))
				ans = append(ans, timeRe.ReplaceAllString(out, "<time>"))
				ps.MustDo(t, "PUT", "/classes/Box/boxrow0001", map[string]any{"meta": map[string]any{"n": 1}}, parsetest.AsMaster)
			}
			t.Logf("%s dry=%v: %.400s", name, dry, ans[0])
			if ans[0] != ans[1] {
				t.Errorf("%s dry=%v: hidden answers\n%s\nmissing answers\n%s", name, dry, ans[0], ans[1])
			}
		}
	}
}

// TestAdvObjectKeyReferenceOracle: an object key that is a reference to a
// hidden class is redacted with its member (shown as __redacted_n); no
// where may test it — not by a dotted path through the key, not by a whole
// object literal holding the key — so a right guess of the hidden id
// answers as a wrong one, and a hidden class as a missing one.
func TestAdvObjectKeyReferenceOracle(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	for id, cls := range map[string]string{"rowhidden1": "Vault", "rowmissin1": "Nowhere"} {
		insert(t, db, "Box", bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"},
			{Key: "meta", Value: bson.D{{Key: "seen", Value: bson.D{{Key: cls + "$vsecretid01", Value: true}}}}},
			{Key: "list", Value: bson.A{bson.D{{Key: cls + "$vsecretid01", Value: true}}}}})
	}
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	wheres := map[string]func(cls, g string) map[string]any{
		"whole eq": func(cls, g string) map[string]any {
			return map[string]any{"meta.seen": map[string]any{cls + "$" + g: true}}
		},
		"whole meta": func(cls, g string) map[string]any {
			return map[string]any{"meta": map[string]any{"seen": map[string]any{cls + "$" + g: true}}}
		},
		"whole in": func(cls, g string) map[string]any {
			return map[string]any{"meta.seen": map[string]any{"$in": []any{map[string]any{cls + "$" + g: true}}}}
		},
		"whole ne": func(cls, g string) map[string]any {
			return map[string]any{"meta.seen": map[string]any{"$ne": map[string]any{cls + "$" + g: true}}}
		},
		"whole nin": func(cls, g string) map[string]any {
			return map[string]any{"meta.seen": map[string]any{"$nin": []any{map[string]any{cls + "$" + g: true}}}}
		},
		"list elem": func(cls, g string) map[string]any { return map[string]any{"list": map[string]any{cls + "$" + g: true}} },
		"list all": func(cls, g string) map[string]any {
			return map[string]any{"list": map[string]any{"$all": []any{map[string]any{cls + "$" + g: true}}}}
		},
		"path exists": func(cls, g string) map[string]any {
			return map[string]any{"meta.seen." + cls + "$" + g: map[string]any{"$exists": true}}
		},
		"path eq": func(cls, g string) map[string]any { return map[string]any{"meta.seen." + cls + "$" + g: true} },
		"gt whole": func(cls, g string) map[string]any {
			return map[string]any{"meta.seen": map[string]any{"$gte": map[string]any{cls + "$" + g: true}}}
		},
		"contained by": func(cls, g string) map[string]any {
			return map[string]any{"list": map[string]any{"$containedBy": []any{map[string]any{cls + "$" + g: true}}}}
		},
	}
	mask := strings.NewReplacer("rowhidden1", "<id>", "rowmissin1", "<id>", "vsecretid01", "<g>", "wrongguess1", "<g>", "Vault", "<C>", "Nowhere", "<C>")
	for name, w := range wheres {
		for _, tool := range []string{"count_objects", "query_class"} {
			var first, firstWhat string
			for id, cls := range map[string]string{"rowhidden1": "Vault", "rowmissin1": "Nowhere"} {
				for _, g := range []string{"vsecretid01", "wrongguess1"} {
					res := call(t, c, tool, map[string]any{"class_name": "Box", "where": map[string]any{"$and": []any{map[string]any{"objectId": id}, w(cls, g)}}, "keys": []any{"title"}})
					out := fmt.Sprintf("%v %s", res.IsError, mask.Replace(text(res)))
					what := id + "/" + g
					if first == "" {
						first, firstWhat = out, what
						t.Logf("%s %s: %.300s", tool, name, out)
					} else if out != first {
						t.Errorf("%s %s: %s answers\n%s\nwhere %s answers\n%s", tool, name, what, out, firstWhat, first)
					}
				}
			}
		}
	}
}

// TestAdvObjectKeyPathsElsewhere: a path through a redacted object key in
// every other position (order, group_by, distinct, keys, pipelines) answers
// a right guess of the hidden id as a wrong one.
func TestAdvObjectKeyPathsElsewhere(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	insert(t, db, "Box", bson.D{{Key: "_id", Value: "rowhidden1"}, {Key: "title", Value: "t"},
		{Key: "meta", Value: bson.D{{Key: "seen", Value: bson.D{{Key: "Vault$vsecretid01", Value: int32(7)}}}}}},
		bson.D{{Key: "_id", Value: "rowplain01"}, {Key: "title", Value: "u"}, {Key: "meta", Value: bson.D{{Key: "seen", Value: bson.D{}}}}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	type probe struct {
		tool string
		args func(path string) map[string]any
	}
	probes := map[string]probe{
		"order": {"query_class", func(p string) map[string]any {
			return map[string]any{"class_name": "Box", "order": "-" + p, "keys": []any{"title"}}
		}},
		"keys":     {"query_class", func(p string) map[string]any { return map[string]any{"class_name": "Box", "keys": []any{p}} }},
		"group_by": {"group_by", func(p string) map[string]any { return map[string]any{"class_name": "Box", "field": p} }},
		"group value": {"group_by", func(p string) map[string]any {
			return map[string]any{"class_name": "Box", "field": "title", "operation": "sum", "value_field": p}
		}},
		"distinct":    {"distinct", func(p string) map[string]any { return map[string]any{"class_name": "Box", "field": p} }},
		"export cols": {"export_data", func(p string) map[string]any { return map[string]any{"class_name": "Box", "columns": []any{p}} }},
		"agg match": {"aggregate", func(p string) map[string]any {
			return map[string]any{"class_name": "Box", "pipeline": []any{map[string]any{"$match": map[string]any{p: map[string]any{"$exists": true}}}, map[string]any{"$count": "n"}}}
		}},
		"agg group": {"aggregate", func(p string) map[string]any {
			return map[string]any{"class_name": "Box", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$" + p, "n": map[string]any{"$sum": 1}}}}}
		}},
		"agg project": {"aggregate", func(p string) map[string]any {
			return map[string]any{"class_name": "Box", "pipeline": []any{map[string]any{"$project": map[string]any{"x": "$" + p}}}}
		}},
	}
	mask := strings.NewReplacer("vsecretid01", "<g>", "wrongguess1", "<g>")
	for name, p := range probes {
		var ans []string
		for _, g := range []string{"vsecretid01", "wrongguess1"} {
			res := call(t, c, p.tool, p.args("meta.seen.Vault$"+g))
			ans = append(ans, fmt.Sprintf("%v %s", res.IsError, mask.Replace(text(res))))
		}
		t.Logf("%s: %.250s", name, ans[0])
		if ans[0] != ans[1] {
			t.Errorf("%s: the right guess answers\n%s\nwhere a wrong one answers\n%s", name, ans[0], ans[1])
		}
	}
}

// TestAdvIncludesAndKeysOnRedacted: include and keys paths at, below and
// through a typed reference into a hidden class answer as the same paths
// on a reference to a missing class.
func TestAdvIncludesAndKeysOnRedacted(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	ptr := func(cls string) bson.D {
		return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: cls}, {Key: "objectId", Value: "vsecretid01"}}
	}
	for id, cls := range map[string]string{"rowhidden1": "Vault", "rowmissin1": "Nowhere"} {
		insert(t, db, "Box", bson.D{{Key: "_id", Value: id}, {Key: "title", Value: "t"},
			{Key: "meta", Value: bson.D{{Key: "ref", Value: ptr(cls)}, {Key: "deep", Value: bson.D{{Key: "k", Value: ptr(cls)}}}}},
			{Key: "list", Value: bson.A{ptr(cls), bson.D{{Key: "k", Value: ptr(cls)}}}}})
	}
	insert(t, db, "Vault", bson.D{{Key: "_id", Value: "vsecretid01"}, {Key: "key", Value: "SECRET"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	args := map[string]map[string]any{
		"include ref":      {"include": []any{"meta.ref"}},
		"include list":     {"include": []any{"list"}},
		"include deep":     {"include": []any{"meta.deep.k"}},
		"include list k":   {"include": []any{"list.k"}},
		"keys ref id":      {"keys": []any{"meta.ref.objectId"}},
		"keys ref class":   {"keys": []any{"meta.ref.className"}},
		"keys list id":     {"keys": []any{"list.objectId"}},
		"keys list 0":      {"keys": []any{"list.0"}},
		"keys list 1 k id": {"keys": []any{"list.1.k.objectId"}},
		"keys deep":        {"keys": []any{"meta.deep.k.objectId", "meta.deep"}},
		"include ref key":  {"include": []any{"meta.ref"}, "keys": []any{"meta.ref.key"}},
		"include ptr key":  {"include": []any{"vref"}, "keys": []any{"vref.key"}},
	}
	for name, a := range args {
		var ans []string
		for id, cls := range map[string]string{"rowhidden1": "Vault", "rowmissin1": "Nowhere"} {
			for _, tool := range []string{"query_class", "get_object", "export_data"} {
				m := map[string]any{"class_name": "Box"}
				maps.Copy(m, a)
				switch tool {
				case "get_object":
					m["object_id"] = id
				default:
					m["where"] = map[string]any{"objectId": id}
				}
				res := call(t, c, tool, m)
				out := text(res)
				if strings.Contains(out, "vsecretid01") || strings.Contains(out, "SECRET") {
					t.Errorf("%s %s %s: shows the hidden id or object: %s", name, tool, cls, out)
				}
				ans = append(ans, fmt.Sprintf("%s %v %s", tool, res.IsError, strings.NewReplacer(id, "<id>", cls, "<C>").Replace(out)))
			}
		}
		if strings.Join(ans[:3], "\n") != strings.Join(ans[3:], "\n") {
			t.Errorf("%s: hidden and missing differ:\n%s\n----\n%s", name, strings.Join(ans[:3], "\n"), strings.Join(ans[3:], "\n"))
		}
	}
}

// TestAdvPipelineOutputNames: a pipeline's output field names are keys of
// the rows it returns, and the row codec redacts a key of the reference
// shape for a hidden class only: a stage that names an output
// "Hidden$id" must answer as one naming "Missing$id".
func TestAdvPipelineOutputNames(t *testing.T) {
	db, uri := writeDB(t, advPairSchemas()...)
	insert(t, db, "Box", bson.D{{Key: "_id", Value: "rowplain01"}, {Key: "title", Value: "t"}})
	c := writeClient(t, uri, policyEnv(t, outputPolicy))
	stages := map[string]func(name string) []any{
		"project":   func(n string) []any { return []any{map[string]any{"$project": map[string]any{n: "$title"}}} },
		"addFields": func(n string) []any { return []any{map[string]any{"$addFields": map[string]any{n: "$title"}}} },
		"set":       func(n string) []any { return []any{map[string]any{"$set": map[string]any{n: 1}}} },
		"group": func(n string) []any {
			return []any{map[string]any{"$group": map[string]any{"_id": nil, n: map[string]any{"$sum": 1}}}}
		},
		"count": func(n string) []any { return []any{map[string]any{"$count": n}} },
		"sortByCount nested": func(n string) []any {
			return []any{map[string]any{"$project": map[string]any{"o": map[string]any{n: "$title"}}}}
		},
		"computed value": func(n string) []any {
			cls, id, _ := strings.Cut(n, "$")
			return []any{map[string]any{"$project": map[string]any{"x": map[string]any{"$concat": []any{cls, map[string]any{"$literal": "$"}, id}}}}}
		},
		"computed key": func(n string) []any {
			cls, id, _ := strings.Cut(n, "$")
			k := map[string]any{"$concat": []any{cls, map[string]any{"$literal": "$"}, id}}
			return []any{map[string]any{"$replaceWith": map[string]any{"$arrayToObject": []any{[]any{map[string]any{"k": k, "v": 1}}}}}}
		},
		"facet": func(n string) []any {
			return []any{map[string]any{"$facet": map[string]any{n: []any{map[string]any{"$limit": 1}}}}}
		},
		"unwind": func(n string) []any {
			return []any{map[string]any{"$unwind": map[string]any{"path": "$list", "includeArrayIndex": n}}}
		},
		"lookupAs": func(n string) []any {
			return []any{map[string]any{"$lookup": map[string]any{"from": "Memo", "localField": "title", "foreignField": "title", "as": n}}}
		},
	}
	for name, mk := range stages {
		var ans []string
		for _, cls := range []string{"Vault", "Nowhere"} {
			res := call(t, c, "aggregate", map[string]any{"class_name": "Box", "pipeline": mk(cls + "$abcdefghij")})
			ans = append(ans, fmt.Sprintf("%v %s", res.IsError, strings.ReplaceAll(text(res), cls, "<C>")))
		}
		t.Logf("%s: %.300s", name, ans[0])
		if ans[0] != ans[1] {
			t.Errorf("%s: hidden answers\n%s\nmissing answers\n%s", name, ans[0], ans[1])
		}
	}
}
