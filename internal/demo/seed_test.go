package demo

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/embeddeddb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startDB starts an embedded FerretDB in a temp dir and returns a client.
func startDB(t testing.TB) *mongo.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping under -short (make check): seeding a fresh FerretDB takes seconds; make test runs it, and the e2e subset seeds the demo data too")
	}
	srv, err := embeddeddb.Start(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI))
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.Disconnect(context.Background())
		srv.Stop()
	})
	return client
}

var objectIDRe = regexp.MustCompile(`^[A-Za-z0-9]{10}$`)

// Top-level "_" keys Parse Server's storage format allows on class documents.
var allowedUnderscoreKeys = map[string]bool{
	"_id": true, "_rperm": true, "_wperm": true, "_acl": true, "_created_at": true, "_updated_at": true,
	"_hashed_password": true, "_email_verify_token": true, "_email_verify_token_expires_at": true,
	"_perishable_token": true, "_perishable_token_expires_at": true, "_password_changed_at": true,
	"_password_history": true, "_failed_login_count": true, "_account_lockout_expires_at": true,
	"_tombstone": true, "_session_token": true, "_expiresAt": true, "_last_used": true,
}

// walk calls fn for every value in v, at any depth.
func walk(v any, path string, fn func(path string, v any)) {
	fn(path, v)
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			walk(e.Value, path+"."+e.Key, fn)
		}
	case bson.A:
		for i, e := range x {
			walk(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

// TestGeneratedDocumentShapes checks the in-memory data set against the
// storage-format rules, without a database.
func TestGeneratedDocumentShapes(t *testing.T) {
	d := data()
	classes := map[string]bool{}
	for _, c := range AllClasses {
		classes[c] = true
	}
	for _, c := range d.collections {
		for _, raw := range c.docs {
			doc := raw.(bson.D)
			id := doc[0]
			if id.Key != "_id" {
				t.Fatalf("%s: first key %q, want _id", c.name, id.Key)
			}
			walk(doc, c.name, func(path string, v any) {
				switch x := v.(type) {
				case int, int64, uint, uint32, uint64, float32, nil, []string, bson.M, map[string]any:
					t.Errorf("%s: value %#v of Go type %T (Parse writes int32/double, bson.D, bson.A, no null)", path, v, v)
				case float64:
					if x == math.Trunc(x) && x >= math.MinInt32 && x <= math.MaxInt32 {
						t.Errorf("%s: %v stored as double, Parse stores it as int32", path, x)
					}
				case bson.D:
					for _, e := range x {
						if strings.ContainsAny(e.Key, "$.") && !strings.HasPrefix(path, "_SCHEMA") {
							t.Errorf("%s: key %q contains $ or .", path, e.Key)
						}
					}
				}
			})
			if !classes[c.name] {
				continue
			}
			if s, ok := id.Value.(string); !ok || !objectIDRe.MatchString(s) {
				t.Errorf("%s: _id %#v is not a 10-char Parse objectId", c.name, id.Value)
			}
			hasCreated, hasUpdated := false, false
			for _, e := range doc {
				switch {
				case e.Key == "objectId" || e.Key == "createdAt" || e.Key == "updatedAt" || e.Key == "ACL" ||
					e.Key == "sessionToken" || e.Key == "user" || e.Key == "artist" || e.Key == "authData":
					t.Errorf("%s %v: REST-shaped key %q in a stored document", c.name, id.Value, e.Key)
				case strings.HasPrefix(e.Key, "_auth_data_"):
					if c.name != ClassUser {
						t.Errorf("%s: %s outside _User", c.name, e.Key)
					}
				case strings.HasPrefix(e.Key, "_p_"):
					s, ok := e.Value.(string)
					if !ok || !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\$[A-Za-z0-9]{10}$`).MatchString(s) {
						t.Errorf("%s: %s = %#v is not \"Class$id\"", c.name, e.Key, e.Value)
					}
				case strings.HasPrefix(e.Key, "_") && !allowedUnderscoreKeys[e.Key]:
					t.Errorf("%s: top-level key %q is not one Parse recognises", c.name, e.Key)
				}
				if e.Key == "_created_at" || e.Key == "_updated_at" {
					if _, ok := e.Value.(time.Time); !ok {
						t.Errorf("%s: %s is %T", c.name, e.Key, e.Value)
					}
					hasCreated = hasCreated || e.Key == "_created_at"
					hasUpdated = hasUpdated || e.Key == "_updated_at"
				}
				if tm, ok := e.Value.(time.Time); ok && (tm.Location() != time.UTC || tm.Nanosecond()%int(time.Millisecond) != 0) {
					t.Errorf("%s: %s = %v not a UTC millisecond instant", c.name, e.Key, tm)
				}
			}
			if !hasCreated || !hasUpdated {
				t.Errorf("%s %v: missing _created_at/_updated_at", c.name, id.Value)
			}
		}
	}
	if t.Failed() {
		return
	}

	// Design constants are consistent.
	sum := 0
	for _, g := range Genres {
		sum += SongsPerGenre[g]
	}
	if sum != SongCount || len(SongsPerGenre) != len(Genres) {
		t.Errorf("SongsPerGenre sums to %d over %d genres", sum, len(SongsPerGenre))
	}
	if n := SongNoACLCount + SongPublicACLCount + SongModeratorOnlyCount + SongAdminOnlyCount +
		SongUserOnlyCount + SongMasterOnlyCount; n != SongCount {
		t.Errorf("Song ACL shapes sum to %d", n)
	}
	want := map[string]int{
		ClassUser: UserCount, ClassRole: RoleCount, ClassSession: SessionCount, ClassArtist: ArtistCount,
		ClassAlbum: AlbumCount, ClassSong: SongCount, ClassPlaylist: PlaylistCount, ClassInvoice: InvoiceCount,
		ClassVaultSecret: VaultSecretCount, ClassAuditLog: AuditLogCount, JoinRoleUsers: RoleUserJoinCount,
		JoinRoleRoles: RoleRoleJoinCount, JoinPlaylistSongs: PlaylistSongJoinCount, "_SCHEMA": SchemaCount,
	}
	if !reflect.DeepEqual(want, CollectionCounts) {
		t.Errorf("CollectionCounts = %v, want %v", CollectionCounts, want)
	}
	total := 0
	for _, n := range CollectionCounts {
		total += n
	}
	if total > 1500 {
		t.Errorf("%d documents; keep the demo ≤ 1500 rows (FerretDB-SQLite is slow)", total)
	}
	// Every exemplar id is set and the sets are consistent.
	for name, id := range map[string]string{
		"UserAliceID": UserAliceID, "UserFrankID": UserFrankID, "RoleAdminID": RoleAdminID,
		"RoleModeratorID": RoleModeratorID, "SongPublicID": SongPublicID, "SongStarACLID": SongStarACLID,
		"SongArchivedID": SongArchivedID, "SongModeratorOnlyID": SongModeratorOnlyID,
		"SongAdminOnlyID": SongAdminOnlyID, "SongMasterOnlyID": SongMasterOnlyID,
		"SongUserOnlyID": SongUserOnlyID, "SongWithLyricsID": SongWithLyricsID,
		"SongDoublePlaysID": SongDoublePlaysID, "SongNoMoodID": SongNoMoodID,
		"SongWithMetaID": SongWithMetaID, "SongTopPlaysID": SongTopPlaysID, "SongNewestID": SongNewestID,
		"SongOldestID": SongOldestID, "SongTZEdgeID": SongTZEdgeID, "SongEmbeddedSecretID": SongEmbeddedSecretID,
		"PlaylistFeaturedID": PlaylistFeaturedID, "TopArtistID": TopArtistID, "LargestAlbumID": LargestAlbumID,
	} {
		if !objectIDRe.MatchString(id) {
			t.Errorf("%s = %q", name, id)
		}
	}
	for _, tok := range []string{AliceSessionToken, BobSessionToken, CarolSessionToken, ExpiredSessionToken} {
		if !regexp.MustCompile(`^r:[0-9a-f]{32}$`).MatchString(tok) {
			t.Errorf("session token %q", tok)
		}
	}
	if SongReadableByPublic != SongNoACLCount+SongPublicACLCount {
		t.Errorf("SongReadableByPublic = %d", SongReadableByPublic)
	}
	if SongReadableByRoleModerator != SongReadableByPublic+SongModeratorOnlyCount ||
		SongReadableByRoleAdmin != SongReadableByRoleModerator+SongAdminOnlyCount {
		t.Errorf("role counts %d %d", SongReadableByRoleModerator, SongReadableByRoleAdmin)
	}
	if len(SongLeakIDs) != 2 || len(PlaylistFeaturedSongIDs) != 12 || SongUserOnlyOwner == "" {
		t.Errorf("leak ids %v, featured songs %d, user-only owner %q", SongLeakIDs, len(PlaylistFeaturedSongIDs), SongUserOnlyOwner)
	}
	if ActiveSongsReleasedPerMonth2020["2020-06"] == ActiveSongsReleasedPerMonth2020Plus9["2020-06"] {
		t.Errorf("the time-zone edge song does not move a month bucket")
	}
	if InvoiceReadable["alice"] != InvoiceCount || InvoiceReadable["public"] != 0 {
		t.Errorf("InvoiceReadable = %v", InvoiceReadable)
	}
}

// TestGeneratorDeterministic regenerates the data set (bypassing the cache)
// and compares every byte.
func TestGeneratorDeterministic(t *testing.T) {
	a, b := data(), generate()
	if a.fingerprint != b.fingerprint {
		t.Fatalf("fingerprints differ: %s vs %s", a.fingerprint, b.fingerprint)
	}
	if !reflect.DeepEqual(a.facts, b.facts) {
		t.Fatal("facts differ between two generations")
	}
}

func count(t *testing.T, ctx context.Context, c *mongo.Collection, filter any) int {
	t.Helper()
	n, err := c.CountDocuments(ctx, filter)
	if err != nil {
		t.Fatalf("count %s %v: %v", c.Name(), filter, err)
	}
	return int(n)
}

func rpermFilter(ids []string, active bool) bson.D {
	in := bson.A{nil}
	for _, id := range ids {
		in = append(in, id)
	}
	f := bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: in}}}}
	if active {
		f = append(f, bson.E{Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}})
	}
	return f
}

func TestSeedIntoFerretDB(t *testing.T) {
	client := startDB(t)
	ctx := context.Background()
	db := client.Database("tunebase")

	// How long seeding takes is BenchmarkSeed's business; this checks
	// what it did.
	start := time.Now()
	written, err := Seed(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fresh seed: %v", time.Since(start))
	if !written {
		t.Fatal("Seed into an empty database reports that it wrote nothing")
	}

	t.Run("every document reads back byte-identical", func(t *testing.T) {
		for _, c := range data().collections {
			cur, err := db.Collection(c.name).Find(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bson.Raw{}
			for cur.Next(ctx) {
				raw := slices.Clone(cur.Current)
				got[raw.Lookup("_id").String()] = raw
			}
			if err := cur.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.docs) || len(got) != CollectionCounts[c.name] {
				t.Errorf("%s: %d documents in the database, generated %d", c.name, len(got), len(c.docs))
			}
			for _, doc := range c.docs {
				want, _ := bson.Marshal(doc)
				id := bson.Raw(want).Lookup("_id").String()
				if !bytes.Equal(got[id], want) {
					t.Errorf("%s %s differs:\n got %v\nwant %v", c.name, id, got[id], bson.Raw(want))
				}
			}
		}
	})

	t.Run("Song storage shape", func(t *testing.T) {
		var raw bson.Raw
		if err := db.Collection(ClassSong).FindOne(ctx, bson.D{{Key: "_id", Value: SongWithMetaID}}).Decode(&raw); err != nil {
			t.Fatal(err)
		}
		if v, ok := raw.Lookup("_p_artist").StringValueOK(); !ok || !regexp.MustCompile(`^Artist\$[A-Za-z0-9]{10}$`).MatchString(v) {
			t.Errorf("_p_artist = %v", raw.Lookup("_p_artist"))
		}
		if !strings.HasPrefix(raw.Lookup("_p_album").StringValue(), "Album$") {
			t.Errorf("_p_album = %v", raw.Lookup("_p_album"))
		}
		for _, k := range []string{"_created_at", "_updated_at", "releasedAt"} {
			if tp := raw.Lookup(k).Type; tp != bson.TypeDateTime {
				t.Errorf("%s has BSON type %v", k, tp)
			}
		}
		if tp := raw.Lookup("meta", "importedAt").Type; tp != bson.TypeDateTime {
			t.Errorf("meta.importedAt has BSON type %v", tp)
		}
		elems, _ := raw.Lookup("meta", "originalArtist").Document().Elements()
		var keys []string
		for _, e := range elems {
			keys = append(keys, e.Key())
		}
		if !reflect.DeepEqual(keys, []string{"__type", "className", "objectId"}) {
			t.Errorf("embedded pointer keys %v", keys)
		}
		for _, k := range []string{"objectId", "createdAt", "updatedAt", "ACL", "artist", "album"} {
			if _, err := raw.LookupErr(k); err == nil {
				t.Errorf("stored document has REST key %q", k)
			}
		}
		if _, err := raw.LookupErr("_rperm"); err == nil {
			t.Errorf("SongWithMetaID should have no ACL fields")
		}
		var dbl bson.Raw
		_ = db.Collection(ClassSong).FindOne(ctx, bson.D{{Key: "_id", Value: SongDoublePlaysID}}).Decode(&dbl)
		if tp := dbl.Lookup("plays").Type; tp != bson.TypeDouble {
			t.Errorf("big plays stored as %v", tp)
		}
		if tp := raw.Lookup("plays").Type; tp != bson.TypeInt32 {
			t.Errorf("small plays stored as %v", tp)
		}
		if n := count(t, ctx, db.Collection(ClassSong), bson.D{{Key: "plays", Value: bson.D{{Key: "$type", Value: "double"}}}}); n != SongDoublePlaysCount {
			t.Errorf("%d double plays", n)
		}
		var master bson.Raw
		_ = db.Collection(ClassSong).FindOne(ctx, bson.D{{Key: "_id", Value: SongMasterOnlyID}}).Decode(&master)
		if vals, _ := master.Lookup("_rperm").Array().Values(); len(vals) != 0 {
			t.Errorf("master-only song _rperm = %v", master.Lookup("_rperm"))
		}
	})

	t.Run("counts match fixture", func(t *testing.T) {
		// The generator counted while it built the rows; recount here from
		// what the database returns, with an independent implementation of
		// the ACL rule, plus a few real _rperm queries. (FerretDB-SQLite
		// scans ~20k docs/s, so most counting is done client-side.)
		identities := map[string][]string{
			"public":         {"*"},
			"role:Moderator": {"*", "role:Moderator"},
			"role:Admin":     {"*", "role:Admin", "role:Moderator"},
			"alice":          {"*", UserAliceID, "role:Admin", "role:Moderator"},
			"bob":            {"*", UserBobID, "role:Moderator"},
		}
		for _, u := range []string{"carol", "dave", "erin", "frank"} {
			identities[u] = []string{"*", UserIDs[u]}
		}
		load := func(class string) []bson.M {
			cur, err := db.Collection(class).Find(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			var docs []bson.M
			if err := cur.All(ctx, &docs); err != nil {
				t.Fatal(err)
			}
			return docs
		}
		canRead := func(doc bson.M, ids []string) bool {
			rp, ok := doc["_rperm"]
			if !ok {
				return true
			}
			for _, e := range rp.(bson.A) {
				if slices.Contains(ids, e.(string)) {
					return true
				}
			}
			return false
		}
		readable := func(docs []bson.M, ids []string, active bool) int {
			n := 0
			for _, d := range docs {
				if canRead(d, ids) && (!active || d["archived"] != true) {
					n++
				}
			}
			return n
		}
		songs, invoices, playlists := load(ClassSong), load(ClassInvoice), load(ClassPlaylist)
		for k, ids := range identities {
			if got := readable(songs, ids, false); got != SongReadable[k] {
				t.Errorf("Song readable by %s: db %d, fixture %d", k, got, SongReadable[k])
			}
			if got := readable(songs, ids, true); got != ActiveSongReadable[k] {
				t.Errorf("active Song readable by %s: db %d, fixture %d", k, got, ActiveSongReadable[k])
			}
			if got := readable(invoices, ids, false); got != InvoiceReadable[k] {
				t.Errorf("Invoice readable by %s: db %d, fixture %d", k, got, InvoiceReadable[k])
			}
			if got := readable(playlists, ids, false); got != PlaylistReadable[k] {
				t.Errorf("Playlist readable by %s: db %d, fixture %d", k, got, PlaylistReadable[k])
			}
		}
		songColl := db.Collection(ClassSong)
		for _, c := range []struct {
			ids    []string
			active bool
			want   int
		}{
			{identities["public"], false, SongReadableByPublic},
			{identities["alice"], true, ActiveSongReadableByAlice},
			{identities["bob"], false, SongReadableByBob},
			{identities["carol"], true, ActiveSongReadableByCarol},
			{identities["role:Moderator"], false, SongReadableByRoleModerator},
		} {
			if got := count(t, ctx, songColl, rpermFilter(c.ids, c.active)); got != c.want {
				t.Errorf("_rperm $in %v (active %v): %d, fixture %d", c.ids, c.active, got, c.want)
			}
		}
		if n := count(t, ctx, songColl, bson.D{{Key: "_rperm", Value: bson.D{{Key: "$exists", Value: false}}}}); n != SongNoACLCount {
			t.Errorf("%d songs without ACL fields", n)
		}

		perGenre, activeGenre, perTag := map[string]int{}, map[string]int{}, map[string]int{}
		perYear, perMonth, perMonth9 := map[int]int{}, map[string]int{}, map[string]int{}
		plus9 := time.FixedZone("+09:00", 9*3600)
		archived, mood, lyrics, meta, doubles := 0, 0, 0, 0, 0
		var plays int64
		for _, d := range songs {
			g := d["genre"].(string)
			perGenre[g]++
			rel := d["releasedAt"].(bson.DateTime).Time().UTC()
			perYear[rel.Year()]++
			for _, tag := range d["tags"].(bson.A) {
				perTag[tag.(string)]++
			}
			if d["archived"] == true {
				archived++
			} else {
				activeGenre[g]++
				if rel.Year() == 2020 {
					perMonth[rel.Format("2006-01")]++
				}
				if r9 := rel.In(plus9); r9.Year() == 2020 {
					perMonth9[r9.Format("2006-01")]++
				}
			}
			if _, ok := d["mood"]; ok {
				mood++
			}
			if _, ok := d["lyrics"]; ok {
				lyrics++
			}
			if _, ok := d["meta"]; ok {
				meta++
			}
			switch p := d["plays"].(type) {
			case int32:
				plays += int64(p)
			case float64:
				plays += int64(p)
				doubles++
			default:
				t.Errorf("plays of type %T", p)
			}
		}
		for name, c := range map[string][2]any{
			"SongsPerGenre":                        {perGenre, SongsPerGenre},
			"ActiveSongsPerGenre":                  {activeGenre, ActiveSongsPerGenre},
			"SongsPerTag":                          {perTag, SongsPerTag},
			"SongsPerReleaseYear":                  {perYear, SongsPerReleaseYear},
			"ActiveSongsReleasedPerMonth2020":      {perMonth, ActiveSongsReleasedPerMonth2020},
			"ActiveSongsReleasedPerMonth2020Plus9": {perMonth9, ActiveSongsReleasedPerMonth2020Plus9},
			"counts": {[]int{archived, mood, lyrics, meta, doubles},
				[]int{SongArchivedCount, SongWithMoodCount, SongWithLyricsCount, SongWithMetaCount, SongDoublePlaysCount}},
			"SongPlaysTotal": {plays, SongPlaysTotal},
		} {
			if !reflect.DeepEqual(c[0], c[1]) {
				t.Errorf("%s: db %v, fixture %v", name, c[0], c[1])
			}
		}
		if n := count(t, ctx, songColl, bson.D{{Key: "genre", Value: "rock"}, {Key: "archived", Value: bson.D{{Key: "$ne", Value: true}}}}); n != ActiveSongsPerGenre["rock"] {
			t.Errorf("active rock: %d", n)
		}

		perStatus := map[string]int{}
		for _, d := range invoices {
			perStatus[d["status"].(string)]++
		}
		if !reflect.DeepEqual(perStatus, InvoicesPerStatus) {
			t.Errorf("InvoicesPerStatus: db %v, fixture %v", perStatus, InvoicesPerStatus)
		}
		if n := count(t, ctx, db.Collection(JoinPlaylistSongs), bson.D{{Key: "owningId", Value: PlaylistFeaturedID}}); n != len(PlaylistFeaturedSongIDs) {
			t.Errorf("featured playlist has %d songs", n)
		}
		if n := count(t, ctx, songColl, bson.D{{Key: "leak", Value: bson.D{{Key: "$regex", Value: "^VaultSecret\\$"}}}}); n != 2 {
			t.Errorf("%d leak rows", n)
		}
		secrets, err := db.Collection(ClassAuditLog).Distinct(ctx, "_p_secret", bson.D{}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if vals, _ := secrets.Values(); len(vals) != AuditLogDistinctSecretCount {
			t.Errorf("%d distinct AuditLog secrets", len(vals))
		}
	})

	t.Run("roles, hierarchy and sessions", func(t *testing.T) {
		ru := db.Collection(JoinRoleUsers)
		for _, m := range [][2]string{{RoleAdminID, UserAliceID}, {RoleModeratorID, UserBobID}} {
			var raw bson.Raw
			if err := ru.FindOne(ctx, bson.D{{Key: "owningId", Value: m[0]}, {Key: "relatedId", Value: m[1]}}).Decode(&raw); err != nil {
				t.Errorf("membership %v: %v", m, err)
				continue
			}
			if raw.Lookup("_id").Type != bson.TypeObjectID {
				t.Errorf("join _id has type %v", raw.Lookup("_id").Type)
			}
		}
		if n := count(t, ctx, db.Collection(JoinRoleRoles), bson.D{{Key: "owningId", Value: RoleModeratorID}, {Key: "relatedId", Value: RoleAdminID}}); n != 1 {
			t.Errorf("hierarchy doc count %d", n)
		}
		if n := count(t, ctx, db.Collection(ClassRole), bson.D{{Key: "name", Value: RoleAdmin}, {Key: "_id", Value: RoleAdminID}}); n != 1 {
			t.Error("Admin role missing")
		}
		sess := db.Collection(ClassSession)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for user, tok := range SessionTokens {
			var s struct {
				User    string    `bson:"_p_user"`
				Expires time.Time `bson:"expiresAt"`
			}
			if err := sess.FindOne(ctx, bson.D{{Key: "_session_token", Value: tok}}).Decode(&s); err != nil {
				t.Fatalf("%s session: %v", user, err)
			}
			if s.User != "_User$"+UserIDs[user] || !s.Expires.After(now) {
				t.Errorf("%s session: %+v", user, s)
			}
		}
		var expired struct {
			User    string    `bson:"_p_user"`
			Expires time.Time `bson:"expiresAt"`
		}
		if err := sess.FindOne(ctx, bson.D{{Key: "_session_token", Value: ExpiredSessionToken}}).Decode(&expired); err != nil {
			t.Fatal(err)
		}
		if expired.User != "_User$"+UserDaveID || !expired.Expires.Before(now) {
			t.Errorf("expired session: %+v", expired)
		}
	})

	t.Run("_SCHEMA and indexes", func(t *testing.T) {
		var song bson.Raw
		if err := db.Collection("_SCHEMA").FindOne(ctx, bson.D{{Key: "_id", Value: ClassSong}}).Decode(&song); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]string{"artist": "*Artist", "plays": "number", "releasedAt": "date", "tags": "array", "meta": "object", "objectId": "string"} {
			if got := song.Lookup(k).StringValue(); got != want {
				t.Errorf("_SCHEMA.Song.%s = %q", k, got)
			}
		}
		if !song.Lookup("_metadata", "fields_options", "title", "required").Boolean() {
			t.Error("Song.title not required")
		}
		if got := song.Lookup("_metadata", "class_permissions", "protectedFields", "*").String(); got != `["lyrics"]` {
			t.Errorf("protectedFields = %s", got)
		}
		var pl bson.Raw
		_ = db.Collection("_SCHEMA").FindOne(ctx, bson.D{{Key: "_id", Value: ClassPlaylist}}).Decode(&pl)
		if pl.Lookup("songs").StringValue() != "relation<Song>" || pl.Lookup("location").StringValue() != "geopoint" {
			t.Errorf("Playlist schema %v", pl)
		}
		for _, c := range data().collections {
			if len(c.indexes) == 0 {
				continue
			}
			specs, err := db.Collection(c.name).Indexes().ListSpecifications(ctx)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, s := range specs {
				names[s.Name] = true
			}
			for _, ix := range c.indexes {
				if !names[ix.name] && !ix.bestEffort {
					t.Errorf("%s: index %s missing (have %v)", c.name, ix.name, names)
				}
			}
		}
	})

	t.Run("second Seed is a no-op", func(t *testing.T) {
		// A sentinel row survives a no-op Seed and disappears on a reseed.
		sentinel := bson.D{{Key: "_id", Value: "SENTINEL00"}, {Key: "title", Value: "x"}}
		if _, err := db.Collection(ClassSong).InsertOne(ctx, sentinel); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		written, err := Seed(ctx, db, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("no-op seed: %v", time.Since(start))
		if written {
			t.Error("a second Seed reports that it wrote the data again")
		}
		if n := count(t, ctx, db.Collection(ClassSong), bson.D{}); n != SongCount+1 {
			t.Fatalf("no-op Seed rewrote Song (%d rows)", n)
		}
		// A stale marker version forces a rewrite.
		if _, err := db.Collection(MarkerCollection).UpdateOne(ctx, bson.D{{Key: "_id", Value: "version"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: int32(SeedVersion - 1)}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := Seed(ctx, db, ""); err != nil {
			t.Fatal(err)
		}
		if n := count(t, ctx, db.Collection(ClassSong), bson.D{}); n != SongCount {
			t.Fatalf("stale marker did not reseed (%d rows)", n)
		}
		// ForceSeed always rewrites.
		if _, err := db.Collection(ClassSong).InsertOne(ctx, sentinel); err != nil {
			t.Fatal(err)
		}
		if err := ForceSeed(ctx, db, ""); err != nil {
			t.Fatal(err)
		}
		if n := count(t, ctx, db.Collection(ClassSong), bson.D{}); n != SongCount {
			t.Fatalf("ForceSeed left %d rows", n)
		}
	})
}

func TestDeterministicAcrossDatabasesWithPrefix(t *testing.T) {
	client := startDB(t)
	ctx := context.Background()
	a, b := client.Database("tb_a"), client.Database("tb_b")
	for _, db := range []*mongo.Database{a, b} {
		if err := ForceSeed(ctx, db, "app1_"); err != nil {
			t.Fatal(err)
		}
	}
	names, err := a.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	for _, c := range data().collections {
		if !slices.Contains(names, "app1_"+c.name) {
			t.Errorf("collection app1_%s missing (have %v)", c.name, names)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "app1_") {
			t.Errorf("unprefixed collection %q", n)
		}
	}
	samples := map[string][]any{
		ClassSong:     {SongPublicID, SongWithMetaID, SongMasterOnlyID, SongLeakIDs[0], SongNewestID},
		ClassUser:     {UserAliceID, UserDaveID},
		ClassSession:  {SessionIDs["alice"]},
		ClassPlaylist: {PlaylistFeaturedID},
		ClassAlbum:    {LargestAlbumID},
		"_SCHEMA":     {ClassSong, ClassInvoice},
	}
	for coll, ids := range samples {
		for _, id := range ids {
			var ra, rb bson.Raw
			f := bson.D{{Key: "_id", Value: id}}
			if err := a.Collection("app1_"+coll).FindOne(ctx, f).Decode(&ra); err != nil {
				t.Fatalf("%s %v: %v", coll, id, err)
			}
			if err := b.Collection("app1_"+coll).FindOne(ctx, f).Decode(&rb); err != nil {
				t.Fatalf("%s %v: %v", coll, id, err)
			}
			if !bytes.Equal(ra, rb) {
				t.Errorf("%s %v differs between databases", coll, id)
			}
		}
	}
	if n := count(t, ctx, b.Collection("app1_"+JoinRoleRoles), bson.D{}); n != 1 {
		t.Errorf("prefixed hierarchy join: %d docs", n)
	}
}

// TestPolicyYAML checks the embedded policy against the demo's own schema
// (the policy package does the real parsing; this guards against typos that
// would make `parse-mcp --demo` fail its start-up validation).
func TestPolicyYAML(t *testing.T) {
	src := string(PolicyYAML)
	schemaFields := map[string]map[string]bool{}
	for _, raw := range data().collections[len(data().collections)-1].docs {
		doc := raw.(bson.D)
		fields := map[string]bool{}
		for _, e := range doc[1:] {
			fields[e.Key] = true
		}
		schemaFields[doc[0].Value.(string)] = fields
	}
	class := ""
	inFields := false
	for i, line := range strings.Split(src, "\n") {
		if strings.Contains(line, "\t") {
			t.Errorf("line %d: tab in YAML", i+1)
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		key, _, _ := strings.Cut(trimmed, ":")
		switch indent {
		case 2:
			class, inFields = key, false
			if class != "" && schemaFields[class] == nil {
				t.Errorf("line %d: class %q not in the demo _SCHEMA", i+1, class)
			}
		case 4:
			inFields = key == "fields"
		case 6:
			if inFields && !schemaFields[class][key] {
				t.Errorf("line %d: field %s.%s not in the demo _SCHEMA", i+1, class, key)
			}
		}
	}
	for _, want := range []string{"VaultSecret: {hidden: true}", "_Session: {hidden: except_master}",
		"large_fields: [lyrics]", "canonical_filter: {archived: {$ne: true}}"} {
		if !strings.Contains(src, want) {
			t.Errorf("policy.yaml lacks %q", want)
		}
	}
	for _, g := range Genres {
		if !strings.Contains(src, "          "+g+": ") {
			t.Errorf("genre %q missing from the Song.genre enum", g)
		}
	}
}

// TestFixtureSummary prints the derived fixture values (run with -v).
func TestFixtureSummary(t *testing.T) {
	t.Logf("users %v", UserIDs)
	t.Logf("roles Admin=%s Moderator=%s", RoleAdminID, RoleModeratorID)
	t.Logf("sessions %v expired(dave)=%s", SessionTokens, ExpiredSessionToken)
	t.Logf("Song readable %v", SongReadable)
	t.Logf("Song readable active %v", ActiveSongReadable)
	t.Logf("active per genre %v", ActiveSongsPerGenre)
	t.Logf("per org %v active %v", SongsPerOrg, ActiveSongsPerOrg)
	t.Logf("per year %v active %v", SongsPerReleaseYear, ActiveSongsPerReleaseYear)
	t.Logf("active 2020 months UTC %v", ActiveSongsReleasedPerMonth2020)
	t.Logf("active 2020 months +09:00 %v", ActiveSongsReleasedPerMonth2020Plus9)
	t.Logf("mood %v (%d) meta %d lyrics %d explicit %d", SongsPerMood, SongWithMoodCount, SongWithMetaCount, SongWithLyricsCount, SongExplicitCount)
	t.Logf("tags %v", SongsPerTag)
	t.Logf("plays total %d per genre %v", SongPlaysTotal, SongPlaysPerGenre)
	t.Logf("songs: public %s star %s archived %s moderator %s admin %s master %s user %s(%s) lyrics %s double %s nomood %s meta %s top %s newest %s oldest %s tz %s",
		SongPublicID, SongStarACLID, SongArchivedID, SongModeratorOnlyID, SongAdminOnlyID, SongMasterOnlyID,
		SongUserOnlyID, SongUserOnlyOwner, SongWithLyricsID, SongDoublePlaysID, SongNoMoodID, SongWithMetaID,
		SongTopPlaysID, SongNewestID, SongOldestID, SongTZEdgeID)
	t.Logf("leaks %v → %v; embedded %s → %s", SongLeakIDs, SongLeakSecretIDs, SongEmbeddedSecretID, SongEmbeddedSecretTarget)
	t.Logf("top artist %s (%d songs); largest album %s (%d tracks)", TopArtistID, TopArtistSongCount, LargestAlbumID, LargestAlbumTracks)
	t.Logf("playlists featured %s (%d songs), joins %d, public %d, per owner %v, readable %v, cover %d, location %d",
		PlaylistFeaturedID, len(PlaylistFeaturedSongIDs), PlaylistSongJoinCount, PlaylistPublicCount, PlaylistsPerOwner,
		PlaylistReadable, PlaylistWithCoverCount, PlaylistWithLocation)
	t.Logf("invoices status %v customer %v org %v readable %v", InvoicesPerStatus, InvoicesPerCustomer, InvoicesPerOrg, InvoiceReadable)
	t.Logf("audit %v distinct secrets %d", AuditLogPerAction, AuditLogDistinctSecretCount)
	t.Logf("collections %v", CollectionCounts)
}

// BenchmarkSeed measures a fresh seed of the demo data into the embedded
// FerretDB (README: "well under 2 s") and the check that skips it once the
// data is in place.
func BenchmarkSeed(b *testing.B) {
	client := startDB(b)
	ctx := context.Background()
	b.Run("fresh", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			db := client.Database(fmt.Sprintf("bench_seed_%d", i))
			if written, err := Seed(ctx, db, ""); err != nil || !written {
				b.Fatalf("written %v, err %v", written, err)
			}
		}
	})
	b.Run("already_seeded", func(b *testing.B) {
		db := client.Database("bench_seed_noop")
		if _, err := Seed(ctx, db, ""); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if written, err := Seed(ctx, db, ""); err != nil || written {
				b.Fatalf("written %v, err %v", written, err)
			}
		}
	})
}
