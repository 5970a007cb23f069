package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestColumnarRows(t *testing.T) {
	tests := []struct {
		name    string
		objects string
		columns []string
		rows    string
		n       int
	}{
		{"empty", ``, nil, ``, 0},
		{"one row", `{"objectId":"a","n":1}`, []string{"objectId", "n"}, `["a",1]`, 1},
		{"union in first-seen order, null where missing",
			`{"objectId":"a","x":1},{"objectId":"b","y":"q"},{"objectId":"c","y":null,"x":3}`,
			[]string{"objectId", "x", "y"}, `["a",1,null],["b",null,"q"],["c",3,null]`, 3},
		{"nested values copied byte for byte",
			`{"objectId":"a","o":{"k":[1,{"z":"}]\"{"}],"e":{}},"s":"a,b]}\\\"","t":true,"f":-1.5e3}`,
			[]string{"objectId", "o", "s", "t", "f"}, `["a",{"k":[1,{"z":"}]\"{"}],"e":{}},"a,b]}\\\"",true,-1.5e3]`, 1},
		{"escaped key", `{"objectId":"a","k\u00e9y":2}`, []string{"objectId", "kéy"}, `["a",2]`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cols, rows, n, err := columnarRows([]byte(tc.objects))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cols, tc.columns) || string(rows) != tc.rows || n != tc.n {
				t.Errorf("got %q %s %d, want %q %s %d", cols, rows, n, tc.columns, tc.rows, tc.n)
			}
			if !json.Valid([]byte("[" + string(rows) + "]")) {
				t.Errorf("rows are not valid JSON: %s", rows)
			}
		})
	}
	for _, bad := range []string{`[1,2]`, `"s"`, `{"a":1`, `{"a"}`, `{"a":"x}`} {
		if _, _, _, err := columnarRows([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestColumnsOfFallsBackWhenSparse: columns are used unless they cost more
// than the objects (very sparse rows).
func TestColumnsOfFallsBackWhenSparse(t *testing.T) {
	dense := `{"objectId":"a","title":"x","plays":1},{"objectId":"b","title":"y","plays":2}`
	for _, tc := range []struct {
		shape         rowShape
		objects, want string
	}{
		{shapeColumns, dense, `["objectId","title","plays"] ["a","x",1],["b","y",2]`},
		{shapeColumns, "", `[] `},
		{shapeObjects, dense, "objects"},
		{shapeColumns, strings.Repeat(`{"a":1},{"b":1},{"c":1},{"d":1},{"e":1},{"f":1},`, 5) + `{"g":1}`, "objects"},
	} {
		got := "objects"
		if cols, rows, ok := columnsOf(tc.shape, "results", []byte(tc.objects)); ok {
			got = string(cols) + " " + string(rows)
		}
		if got != tc.want {
			t.Errorf("%.40s: got %s, want %s", tc.objects, got, tc.want)
		}
	}
}

// FuzzColumnarRows: for any rows the encoders could write (JSON objects),
// the columnar form holds the same values.
func FuzzColumnarRows(f *testing.F) {
	f.Add(`{"objectId":"a","x":1},{"objectId":"b","y":[1,{"q":"]"}]}`)
	f.Add(`{"s":"\"}{"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var objs []map[string]json.RawMessage
		if json.Unmarshal([]byte("["+in+"]"), &objs) != nil {
			return
		}
		// Our encoders never write duplicate keys or whitespace.
		compact, _ := json.Marshal(objs)
		body := compact[1 : len(compact)-1]
		cols, rows, n, err := columnarRows(body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var grid [][]json.RawMessage
		if err := json.Unmarshal([]byte("["+string(rows)+"]"), &grid); err != nil {
			t.Fatalf("rows %s: %v", rows, err)
		}
		if n != len(objs) || len(grid) != len(objs) {
			t.Fatalf("%d rows for %d objects", len(grid), len(objs))
		}
		for i, o := range objs {
			for c, name := range cols {
				v, ok := o[name]
				if !ok {
					v = json.RawMessage("null")
				}
				var want, got any
				_ = json.Unmarshal(v, &want)
				_ = json.Unmarshal(grid[i][c], &got)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("row %d column %s: %s, want %s", i, name, grid[i][c], v)
				}
			}
			if len(o) > len(cols) {
				t.Fatalf("row %d lost a field", i)
			}
		}
	})
}

// TestColumnsByIDFallsBackWhenSparse: get_objects keeps its keyed object
// layout when columns would be larger (30 sparse rows cost 6× their
// objects as columns, past the byte cap).
func TestColumnsByIDFallsBackWhenSparse(t *testing.T) {
	var rows, byID []string
	for i := range 30 {
		r := fmt.Sprintf(`{"objectId":"id%02d","f%02d":1}`, i, i)
		rows = append(rows, r)
		byID = append(byID, fmt.Sprintf(`"id%02d":%s`, i, r))
	}
	if _, _, ok, err := columnsByID([]byte(strings.Join(rows, ",")), []byte("{"+strings.Join(byID, ",")+"}")); err != nil || ok {
		t.Errorf("sparse rows were not kept as objects (err %v)", err)
	}
	dense := `{"objectId":"a","t":"x"},{"objectId":"b","t":"y"}`
	cols, got, ok, err := columnsByID([]byte(dense), []byte(`{"a":{"objectId":"a","t":"x"},"b":{"objectId":"b","t":"y"}}`))
	if err != nil || !ok || string(cols) != `["objectId","t"]` || string(got) != `["a","x"],["b","y"]` {
		t.Errorf("dense: %s %s %v %v", cols, got, ok, err)
	}
}
