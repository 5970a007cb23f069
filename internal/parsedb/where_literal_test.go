package parsedb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// wherefixSchema is hiddenSchema plus a Boolean field, for the typed-field
// (schema drift) table.
func wherefixSchema() *Schema {
	s := hiddenSchema()
	s.Classes["Song"].Fields["explicit"] = &Field{Name: "explicit", Type: TypeBoolean}
	return s
}

func translateJSON(t *testing.T, schema *Schema, src string) (string, error) {
	t.Helper()
	var where map[string]any
	if err := json.Unmarshal([]byte(src), &where); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	f, err := WhereToFilter(context.Background(), schema.Classes["Song"], where, WhereOptions{Schema: schema, Hidden: testHiddenRefs()})
	if err != nil {
		return "", err
	}
	b, _ := bson.MarshalExtJSON(f, false, false)
	return string(b), nil
}

// TestWhereWholeValueLiteralTable walks operator × literal shape × string
// form × path × class for a whole-value literal: a range over an object or
// array operand is refused whatever it holds (it orders field by field, so
// any string — "C$x~", even the bare class name — bisects what is stored
// below the path); equality, $ne, $in, $nin and $all with a literal naming
// a hidden or missing class in any form ("C$", "C$x~", a full reference, an
// embedded className) are refused; and a hidden class and a missing one get
// byte-identical answers in every cell.
func TestWhereWholeValueLiteralTable(t *testing.T) {
	schema := wherefixSchema()
	ops := []string{"equality", "$eq", "$ne", "$in", "$nin", "$all", "$lt", "$lte", "$gt", "$gte"}
	shapes := map[string]string{
		"object":  `{"ref":%s}`,
		"array":   `[%s]`,
		"nested":  `{"a":[{"b":{"ref":%s}}]}`,
		"pointer": `{"k":{"__type":"Pointer","className":"CLASS","objectId":"x"},"s":%s}`,
	}
	forms := []string{`"CLASS$"`, `"CLASS$wu1Jl~"`, `"CLASS$wu1JlVFHb8"`, `"CLASS"`, `"CLAS"`}
	paths := []string{"meta", "meta.wrapper", "tags", "unknownField", "plays", "explicit", "leak"}
	isRange := func(op string) bool { return strings.HasPrefix(op, "$l") || strings.HasPrefix(op, "$g") }
	for _, op := range ops {
		for shapeName, shape := range shapes {
			for _, form := range forms {
				for _, path := range paths {
					var answers [2]string
					for i, class := range []string{"VaultSecret", "NoSuchClass"} {
						lit := strings.ReplaceAll(fmt.Sprintf(shape, form), "CLASS", class)
						var src string
						switch op {
						case "equality":
							src = fmt.Sprintf(`{%q:%s}`, path, lit)
						case "$in", "$nin", "$all":
							src = fmt.Sprintf(`{%q:{%q:[%s]}}`, path, op, lit)
						default:
							src = fmt.Sprintf(`{%q:{%q:%s}}`, path, op, lit)
						}
						got, err := translateJSON(t, schema, src)
						namesRef := strings.Contains(form, "$") || shapeName == "pointer"
						switch {
						case isRange(op) && err == nil:
							t.Errorf("%s: a range over an object/array operand was accepted: %s", src, got)
						case namesRef && err == nil:
							t.Errorf("%s: a literal naming an invisible class was accepted: %s", src, got)
						}
						if err != nil {
							answers[i] = strings.ReplaceAll(err.Error(), class, "CLASS")
						} else {
							answers[i] = "accepted"
						}
					}
					if answers[0] != answers[1] {
						t.Errorf("%s %s %s %s: hidden and missing answer differently:\n hidden:  %s\n missing: %s", op, shapeName, form, path, answers[0], answers[1])
					}
				}
			}
		}
	}
}

// TestWhereRangeOperandScalars: ranges keep working on every scalar operand
// (numbers, strings, dates in both forms, a pointer on a Pointer field) and
// are refused, with Parse's "bad atom", for every object or array one.
func TestWhereRangeOperandScalars(t *testing.T) {
	schema := wherefixSchema()
	ok := []string{
		`{"plays":{"$lt":3}}`, `{"title":{"$gte":"m"}}`, `{"meta.k":{"$gt":"VaultSecres"}}`,
		`{"releasedAt":{"$lt":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"}}}`,
		`{"releasedAt":{"$lt":"2024-01-01T00:00:00.000Z"}}`, `{"meta.at":{"$lt":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"}}}`,
		`{"artist":{"$gt":{"__type":"Pointer","className":"Artist","objectId":"a"}}}`, `{"artist":{"$gt":"a"}}`,
		`{"blob":{"$gt":{"__type":"Bytes","base64":"AA=="}}}`,
	}
	for _, src := range ok {
		if _, err := translateJSON(t, schema, src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	bad := []string{
		`{"meta":{"$lt":{}}}`, `{"meta":{"$lt":{"k":1}}}`, `{"tags":{"$gte":{"k":"a"}}}`,
		`{"meta.credential":{"$lt":{"__type":"Pointer","className":"Artist","objectId":"a"}}}`,
		`{"loc":{"$gt":{"__type":"GeoPoint","latitude":1,"longitude":2}}}`,
		`{"meta":{"$lte":{"__type":"File","name":"f","url":"u"}}}`,
		`{"$or":[{"meta":{"$gt":{"k":1}}}]}`, `{"plays":{"$lt":{"k":1}}}`, `{"title":{"$gt":{"k":"a"}}}`,
	}
	for _, src := range bad {
		_, err := translateJSON(t, schema, src)
		if err == nil || !strings.Contains(err.Error(), "bad atom") {
			t.Errorf("%s: want a bad-atom refusal, got %v", src, err)
		}
	}
}

// TestWhereTypedFieldStringOperand walks every schema type × operator with
// a string operand (or a $regex): a typed field holds a "Hidden$id" string
// only when the data drifted from the schema, and then a string range,
// membership or $regex would bisect it, so each accepted constraint must
// carry the not-a-hidden-reference conjunct on its path. Pointer and Date
// fields encode a string operand (with the field's own visible target, as
// a date), so only their $regex can reach a stored string.
func TestWhereTypedFieldStringOperand(t *testing.T) {
	schema := wherefixSchema()
	song := schema.Classes["Song"]
	h := testHiddenRefs()
	types := map[string]string{
		"plays": "Number", "explicit": "Boolean", "releasedAt": "Date", "artist": "Pointer", "loc": "GeoPoint",
		"area": "Polygon", "blob": "Bytes", "cover": "File", "title": "String", "meta": "Object", "tags": "Array", "createdAt": "Date",
	}
	ops := []string{`"VaultSecret$wu1Jmwu1Jm"`, `{"$eq":"VaultSecret$wu1Jmwu1Jm"}`, `{"$ne":"VaultSecret$wu1Jmwu1Jm"}`,
		`{"$lt":"VaultSecret$wu1Jmwu1Jm"}`, `{"$lte":"VaultSecret$wu1Jmwu1Jm"}`, `{"$gt":"VaultSecret$wu1Jlwu1Jl"}`, `{"$gte":"VaultSecret$wu1Jlwu1Jl"}`,
		`{"$in":["VaultSecret$wu1JlVFHb8"]}`, `{"$nin":["VaultSecret$wu1JlVFHb8"]}`, `{"$all":["VaultSecret$wu1JlVFHb8"]}`,
		`{"$in":[1,"x"]}`, `{"$regex":"^VaultSecret\\$w"}`, `{"$regex":"^V","$options":"i"}`}
	for field, ty := range types {
		conj, _ := bson.MarshalExtJSON(bson.D{{Key: "$and", Value: h.NotHiddenRefAnyType(song, field)}}, false, false)
		inner := strings.TrimSuffix(strings.TrimPrefix(string(conj), `{"$and":[`), `]}`)
		for _, op := range ops {
			for _, wrap := range []string{"%s", `{"$or":[%s,{"title":"x"}]}`, `{"$nor":[%s]}`} {
				src := fmt.Sprintf(wrap, fmt.Sprintf(`{%q:%s}`, field, op))
				got, err := translateJSON(t, schema, src)
				if err != nil {
					continue // refused: nothing reaches the database
				}
				encoded := (ty == "Pointer" || ty == "Date") && !strings.Contains(op, "$regex")
				if encoded {
					if strings.Contains(got, `"VaultSecret$`) {
						t.Errorf("%s (%s): the caller's string reached the filter unencoded: %s", src, ty, got)
					}
					continue
				}
				if !strings.Contains(got, inner) {
					t.Errorf("%s (%s): no not-a-hidden-reference conjunct on %s:\n%s", src, ty, field, got)
				}
			}
		}
	}
	// A number or boolean operand cannot match a stored string: no conjunct,
	// so typed queries keep their plain filters.
	for _, src := range []string{`{"plays":{"$lt":3}}`, `{"explicit":true}`, `{"plays":{"$in":[1,2]}}`, `{"plays":{"$exists":true}}`} {
		got, err := translateJSON(t, schema, src)
		if err != nil || strings.Contains(got, "$not") {
			t.Errorf("%s: want a plain filter, got %s %v", src, got, err)
		}
	}
}
