package parsedb

import (
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestAppendRowCompact pins the compact shape of every value type next to
// the legend that lets a reader (and where) take it back.
func TestAppendRowCompact(t *testing.T) {
	song := songClass()
	cases := []struct {
		name        string
		keys        []string
		doc         bson.D
		want        string
		wantPtr     map[string]string
		wantDates   []string
		wantRESTHas string // a fragment the REST shape of the same row has
	}{
		{
			name: "pointer as bare id, dates as ISO strings, file by name, GeoPoint as [lat, lng]",
			doc: bson.D{
				{Key: "_id", Value: "s1"}, {Key: "_created_at", Value: tCreated}, {Key: "_updated_at", Value: tUpdated},
				{Key: "_rperm", Value: bson.A{"*"}}, {Key: "_p_artist", Value: "Artist$a1"},
				{Key: "releasedAt", Value: tReleased}, {Key: "cover", Value: "f1_cover.png"},
				{Key: "loc", Value: bson.A{2.35, 48.85}},
			},
			want:        `{"objectId":"s1","createdAt":"` + isoCreated + `","updatedAt":"` + isoUpdated + `","artist":"a1","releasedAt":"` + isoReleased + `","cover":"f1_cover.png","loc":[48.85,2.35]}`,
			wantPtr:     map[string]string{"artist": "Artist"},
			wantDates:   []string{"createdAt", "updatedAt", "releasedAt"},
			wantRESTHas: `"loc":{"__type":"GeoPoint","latitude":48.85,"longitude":2.35}`,
		},
		{
			name:      "keys without createdAt/updatedAt leave them out",
			keys:      []string{"title"},
			doc:       bson.D{{Key: "_id", Value: "s1"}, {Key: "_created_at", Value: tCreated}, {Key: "_updated_at", Value: tUpdated}, {Key: "title", Value: "Blue"}},
			want:      `{"objectId":"s1","title":"Blue"}`,
			wantDates: nil,
		},
		{
			name:      "keys naming updatedAt keep it",
			keys:      []string{"title", "updatedAt"},
			doc:       bson.D{{Key: "_id", Value: "s1"}, {Key: "_created_at", Value: tCreated}, {Key: "_updated_at", Value: tUpdated}, {Key: "title", Value: "Blue"}},
			want:      `{"objectId":"s1","updatedAt":"` + isoUpdated + `","title":"Blue"}`,
			wantDates: []string{"updatedAt"},
		},
		{
			name: "nested dates (BSON and legacy typed) become strings with dotted paths",
			doc: bson.D{{Key: "_id", Value: "s1"}, {Key: "meta", Value: bson.D{
				{Key: "at", Value: tReleased},
				{Key: "legacy", Value: bson.D{{Key: "__type", Value: "Date"}, {Key: "iso", Value: tUpdated}}},
				{Key: "history", Value: bson.A{bson.D{{Key: "when", Value: tCreated}}}},
			}}},
			want:      `{"objectId":"s1","meta":{"at":"` + isoReleased + `","legacy":"` + isoUpdated + `","history":[{"when":"` + isoCreated + `"}]}}`,
			wantDates: []string{"meta.at", "meta.history.when", "meta.legacy"},
		},
		{
			name:        "a pointer of another class than the field's target stays a REST pointer",
			doc:         bson.D{{Key: "_id", Value: "s1"}, {Key: "_p_artist", Value: "Band$b1"}},
			want:        `{"objectId":"s1","artist":{"__type":"Pointer","className":"Band","objectId":"b1"}}`,
			wantRESTHas: `"artist":{"__type":"Pointer","className":"Band","objectId":"b1"}`,
		},
		{
			name: "a pointer field missing from the schema stays a REST pointer",
			doc:  bson.D{{Key: "_id", Value: "s1"}, {Key: "_p_label", Value: "Label$l1"}},
			want: `{"objectId":"s1","label":{"__type":"Pointer","className":"Label","objectId":"l1"}}`,
		},
		{
			name: "redaction is the same in both shapes and names no class in the legend",
			doc: bson.D{{Key: "_id", Value: "s1"}, {Key: "_p_secret", Value: "StudentSSN$x1x1x1x1x1"},
				{Key: "meta", Value: bson.D{{Key: "ref", Value: "StudentSSN$x2x2x2x2x2"}, {Key: "_hashed_password", Value: "h"}}}},
			want:        `{"objectId":"s1","secret":{"__redacted":true},"meta":{"ref":{"__redacted":true}}}`,
			wantRESTHas: `"secret":{"__redacted":true}`,
		},
		{
			name: "session legacy dates",
			doc:  bson.D{{Key: "_id", Value: "r1"}, {Key: "_expiresAt", Value: tReleased}, {Key: "_last_used", Value: tUpdated}},
			want: `{"objectId":"r1","expiresAt":"` + isoReleased + `","lastUsed":"` + isoUpdated + `"}`, wantDates: []string{"expiresAt", "lastUsed"},
		},
		{
			name: "unset pointer omitted, nested pointers and other types unchanged",
			doc: bson.D{{Key: "_id", Value: "s1"}, {Key: "_p_album", Value: nil},
				{Key: "tags", Value: bson.A{bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: "Tag"}, {Key: "objectId", Value: "t1"}}}},
				{Key: "plays", Value: 3.5}},
			want: `{"objectId":"s1","tags":[{"__type":"Pointer","className":"Tag","objectId":"t1"}],"plays":3.5}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			legend := &Legend{}
			enc := RowEncoder{Class: song, HiddenClass: hideSSN, Compact: true, Legend: legend}
			if len(tc.keys) > 0 {
				enc.Keys = KeyRoots(tc.keys)
			}
			got, err := enc.AppendRow(nil, mustRaw(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("compact\n got %s\nwant %s", got, tc.want)
			}
			if !reflect.DeepEqual(legend.PointerClasses, tc.wantPtr) && (len(legend.PointerClasses) != 0 || len(tc.wantPtr) != 0) {
				t.Errorf("pointer classes %v, want %v", legend.PointerClasses, tc.wantPtr)
			}
			if !reflect.DeepEqual(legend.Dates(), tc.wantDates) {
				t.Errorf("date fields %v, want %v", legend.Dates(), tc.wantDates)
			}
			// The same encoder without Legend writes the same bytes.
			plain := enc
			plain.Legend = nil
			if again, _ := plain.AppendRow(nil, mustRaw(t, tc.doc)); string(again) != string(got) {
				t.Errorf("without a legend: %s", again)
			}
			if tc.wantRESTHas != "" {
				rest := RowEncoder{Class: song, HiddenClass: hideSSN}
				r, _ := rest.AppendRow(nil, mustRaw(t, tc.doc))
				if !strings.Contains(string(r), tc.wantRESTHas) {
					t.Errorf("REST shape %s lacks %s", r, tc.wantRESTHas)
				}
			}
		})
	}
}

func TestAppendRowCompactNoAllocs(t *testing.T) {
	enc := RowEncoder{Class: songClass(), HiddenClass: hideSSN, Compact: true}
	doc := mustRaw(t, bson.D{{Key: "_id", Value: "s1"}, {Key: "_created_at", Value: tCreated}, {Key: "_p_artist", Value: "Artist$a1"}, {Key: "releasedAt", Value: tReleased}, {Key: "loc", Value: bson.A{2.35, 48.85}}})
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf, _ = enc.AppendRow(buf[:0], doc) }); n > 0 {
		t.Errorf("%v allocations per compact row", n)
	}
}
