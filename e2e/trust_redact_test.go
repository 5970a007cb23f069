package e2e

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTrustHiddenAndMissingReadTheSame: a row referring to the hidden class
// Vault and a row referring to the class Ghost, which does not exist, in
// every reference position (pointer column, embedded pointer, embedded
// {__type:"Object"}, relation marker, pointers in arrays and nested
// objects) read the same through every read tool, once the row id
// and the pointer column's name are masked: the class-free marker
// everywhere, no class name, no id, no pointer_classes entry (SECURITY.md
// "Hidden references").
func TestTrustHiddenAndMissingReadTheSame(t *testing.T) {
	row := func(id, class, column string) bson.D {
		ptr := func(oid string) bson.D {
			return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: oid}}
		}
		return bson.D{{Key: "_id", Value: id}, {Key: "label", Value: "x"},
			{Key: "_p_" + column, Value: class + "$v1secret"},
			{Key: "meta", Value: bson.D{
				{Key: "credential", Value: ptr("v2secret")},
				{Key: "obj", Value: bson.D{{Key: "__type", Value: "Object"}, {Key: "className", Value: class}, {Key: "objectId", Value: "v3secret"}, {Key: "key", Value: "k-secret"}}},
				{Key: "rel", Value: bson.D{{Key: "__type", Value: "Relation"}, {Key: "className", Value: class}}},
				{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: ptr("v4secret")}}}},
			}},
			{Key: "tags", Value: bson.A{ptr("v5secret"), bson.D{{Key: "in", Value: bson.A{ptr("v6secret")}}}, "rock"}}, // FerretDB stores no array directly in an array
		}
	}
	r := trackServer(t, row("hid0000001", "Vault", "secret"), row("mis0000001", "Ghost", "ghost"))
	calls := []string{
		`get_object {"class_name":"Track","object_id":"%s"}`,
		`get_object {"class_name":"Track","object_id":"%s","keys":["meta.credential.objectId","meta.obj.key","meta.a.b","tags.objectId","%s"]}`,
		`get_objects {"class_name":"Track","ids":["%s"]}`,
		`query_class {"class_name":"Track","where":{"objectId":"%s"}}`,
		`query_class {"class_name":"Track","where":{"objectId":"%s"},"format":"csv"}`,
		`aggregate {"class_name":"Track","pipeline":[{"$match":{"objectId":"%s"}}]}`,
	}
	n := 0
	read := func(call, id, column string) string {
		n++
		tool, args, _ := strings.Cut(call, " ")
		if strings.Count(args, "%s") == 2 {
			args = fmt.Sprintf(args, id, column)
		} else {
			args = fmt.Sprintf(args, id)
		}
		return answer(aggRPC(r, fmt.Sprint("r", n), tool, args))
	}
	for _, call := range calls {
		h := read(call, "hid0000001", "secret")
		m := read(call, "mis0000001", "ghost")
		for _, leak := range []string{"Vault", "Ghost", "v1secret", "v2secret", "v3secret", "k-secret", "v4secret", "v5secret", "v6secret"} {
			if strings.Contains(h, leak) || strings.Contains(m, leak) {
				t.Errorf("%s shows %q:\nhidden  %s\nmissing %s", call, leak, h, m)
			}
		}
		if !strings.Contains(h, "redacted") {
			t.Errorf("%s: no marker: %s", call, h)
		}
		if strings.Contains(call, "csv") {
			// The header lists both pointer columns, in name order: compare
			// the cells that differ only by the column's place.
			if strings.Count(h, "redacted") != strings.Count(m, "redacted") {
				t.Errorf("%s: hidden and missing differ:\nhidden  %s\nmissing %s", call, h, m)
			}
			continue
		}
		if mm := strings.ReplaceAll(strings.ReplaceAll(m, "mis0000001", "hid0000001"), "ghost", "secret"); mm != h {
			t.Errorf("%s: hidden and missing differ:\nhidden  %s\nmissing %s", call, h, mm)
		}
	}
}
