// Package demo is "Tunebase", a deterministic sample Parse app (a music
// streaming service) written exactly in Parse Server's MongoDB storage format. It backs `parse-mcp --demo` and is the fixture
// set of the end-to-end tests.
//
// Everything is generated from fixed math/rand/v2 PCG streams (seed 42/7, one
// stream per class so that a change to one class leaves the others' ids
// intact) and from fixed dates — never time.Now — so the data is byte-identical
// on every run and on every machine. fixture.go exports the numbers and ids the
// tests assert on; they are computed by the generator while it builds the rows,
// so they are exactly right by construction (seed_test.go re-checks them
// against the database anyway).
//
// Classes (collection names get the Parse collectionPrefix in front):
//
//	_User (6)         alice…frank, two orgs, credential columns, ACL = the user
//	_Role (2)         Admin, Moderator; Admin members also hold Moderator
//	_Session (4)      valid sessions for alice, bob, carol; an expired one for dave
//	Artist (30)       pointer target of Album/Song
//	Album (80)        → Artist; no _metadata at all in _SCHEMA (CLP "none" = public)
//	Song (600)        the big class: every storage shape, mixed ACLs, large field
//	Playlist (40)     → _User owner, relation songs → Song, File, GeoPoint
//	Invoice (120)     ACL customer + role:Admin, CLP requiresAuthentication
//	VaultSecret (10)  the hidden class: fake API keys
//	AuditLog (20)     pointers into the hidden class (redaction attack fixture)
//
// plus _Join:users:_Role, _Join:roles:_Role, _Join:songs:Playlist, the
// _SCHEMA documents of all ten classes, real MongoDB indexes matching
// _SCHEMA._metadata.indexes, and the marker collection "_parse_mcp_demo".
package demo

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/parse-mcp/parse-mcp/internal/embed"
)

// PolicyYAML is the policy file `parse-mcp --demo` runs with.
//
//go:embed policy.yaml
var PolicyYAML []byte

// Seed writes the sample app into db, every collection name prefixed with
// prefix (Parse Server's collectionPrefix).
//
// It is idempotent: when the marker document {_id:"version"} in
// prefix+MarkerCollection carries the current SeedVersion and the fingerprint
// of the generated data, Seed returns after that single read. Otherwise it
// drops the demo's collections, removes the demo classes' _SCHEMA documents
// (other _SCHEMA entries are left alone) and writes everything again; the
// marker is written last, so an interrupted seed is redone on the next call.
// Written reports whether it wrote the data (false: already in place).
func Seed(ctx context.Context, db *mongo.Database, prefix string) (written bool, err error) {
	d := data()
	var marker struct {
		V           int32  `bson:"v"`
		Fingerprint string `bson:"fingerprint"`
	}
	err = db.Collection(prefix+MarkerCollection).FindOne(ctx, bson.D{{Key: "_id", Value: "version"}}).Decode(&marker)
	switch {
	case err == nil:
		if marker.V == SeedVersion && marker.Fingerprint == d.fingerprint {
			return false, nil
		}
	case errors.Is(err, mongo.ErrNoDocuments):
	default:
		return false, fmt.Errorf("demo: reading seed marker: %w", err)
	}
	return true, write(ctx, db, prefix, d)
}

// ForceSeed always drops and rewrites the demo's collections (tests use it).
func ForceSeed(ctx context.Context, db *mongo.Database, prefix string) error {
	return write(ctx, db, prefix, data())
}

// ---------------------------------------------------------------------------
// Writing

func write(ctx context.Context, db *mongo.Database, prefix string, d *dataset) error {
	// The marker goes first so that a half-written demo is never trusted.
	if err := db.Collection(prefix + MarkerCollection).Drop(ctx); err != nil {
		return fmt.Errorf("demo: dropping %s: %w", prefix+MarkerCollection, err)
	}
	for _, c := range d.collections {
		if c.name == "_SCHEMA" {
			continue
		}
		if err := db.Collection(prefix + c.name).Drop(ctx); err != nil {
			return fmt.Errorf("demo: dropping %s: %w", prefix+c.name, err)
		}
	}
	if _, err := db.Collection(prefix+"_SCHEMA").DeleteMany(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: demoClasses()}}}}); err != nil {
		return fmt.Errorf("demo: clearing _SCHEMA: %w", err)
	}
	for _, c := range d.collections {
		coll := db.Collection(prefix + c.name)
		if _, err := coll.InsertMany(ctx, c.docs); err != nil {
			return fmt.Errorf("demo: inserting %s: %w", prefix+c.name, err)
		}
		if len(c.indexes) > 0 {
			models := make([]mongo.IndexModel, 0, len(c.indexes))
			var optional []mongo.IndexModel
			for _, ix := range c.indexes {
				o := options.Index().SetName(ix.name)
				if ix.unique {
					o.SetUnique(true)
				}
				if ix.sparse {
					o.SetSparse(true)
				}
				if ix.bestEffort {
					optional = append(optional, mongo.IndexModel{Keys: ix.keys, Options: o})
				} else {
					models = append(models, mongo.IndexModel{Keys: ix.keys, Options: o})
				}
			}
			if len(models) > 0 {
				if _, err := coll.Indexes().CreateMany(ctx, models); err != nil {
					return fmt.Errorf("demo: indexing %s: %w", prefix+c.name, err)
				}
			}
			for _, m := range optional {
				if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
					if _, ok := errors.AsType[mongo.CommandError](err); !ok {
						return fmt.Errorf("demo: indexing %s: %w", prefix+c.name, err)
					}
				}
			}
		}
	}
	marker := bson.D{
		{Key: "_id", Value: "version"},
		{Key: "v", Value: int32(SeedVersion)},
		{Key: "fingerprint", Value: d.fingerprint},
		{Key: "app", Value: AppName},
	}
	if _, err := db.Collection(prefix+MarkerCollection).InsertOne(ctx, marker); err != nil {
		return fmt.Errorf("demo: writing seed marker: %w", err)
	}
	return nil
}

func demoClasses() bson.A {
	a := bson.A{}
	for _, c := range AllClasses {
		a = append(a, c)
	}
	return a
}

// ---------------------------------------------------------------------------
// The generated data set

type indexSpec struct {
	name           string
	keys           bson.D
	unique, sparse bool
	// bestEffort indexes are not in _SCHEMA and may be refused by the
	// server: Parse Server creates the 2d index of a GeoPoint field lazily
	// (when a $nearSphere query first fails), so it is not part of the app's
	// declared indexes; it is created here so that geo queries run against a
	// real MongoDB. FerretDB refuses 2d indexes (IndexNotFound), which is
	// fine: it cannot run $nearSphere either.
	bestEffort bool
}

type collectionData struct {
	name    string // without prefix
	docs    []any  // bson.D, in insertion order
	indexes []indexSpec
}

type dataset struct {
	collections []collectionData
	fingerprint string // sha256 over every document, hex
	facts       facts
}

var (
	dataOnce sync.Once
	dataSet  *dataset
)

// data returns the (immutable, cached) generated data set.
func data() *dataset {
	dataOnce.Do(func() { dataSet = generate() })
	return dataSet
}

// facts are the numbers fixture.go exports; the generator fills them in while
// it assigns values, so they cannot drift from the data.
type facts struct {
	userIDs, userOrgs, sessionTokens map[string]string
	roleAdminID, roleModeratorID     string
	expiredSessionToken              string
	sessionIDs                       map[string]string

	songReadable, activeSongReadable map[string]int // key: "public", username, "role:Name"
	activeSongsPerGenre              map[string]int
	songsPerOrg, activeSongsPerOrg   map[string]int
	songsPerYear, activeSongsPerYear map[int]int
	activePerMonth2020UTC            map[string]int
	activePerMonth2020Plus9          map[string]int
	songsPerMood                     map[string]int
	songsWithMood, songsWithMeta     int
	songsWithLyrics, songsExplicit   int
	songsPerTag, activeSongsPerTag   map[string]int
	playsTotal                       int64
	playsPerGenre, activePlaysGenre  map[string]int64
	songIDs                          map[string]string // exemplar name → id
	songUserOnlyOwner                string
	songLeakIDs, songLeakSecretIDs   []string
	songEmbeddedSecretID             string
	songEmbeddedSecretTarget         string
	songNewestID, songOldestID       string
	songTopPlaysID                   string
	songTZEdgeID                     string

	artistIDs        []string
	topArtistID      string
	topArtistSongs   int
	albumIDs         []string
	featuredAlbumID  string
	featuredAlbumTrk int

	playlistFeaturedID      string
	playlistFeaturedSongIDs []string
	playlistSongJoins       int
	playlistPublic          int
	playlistsPerOwner       map[string]int
	playlistReadable        map[string]int
	playlistWithCover       int
	playlistWithLocation    int
	invoicesPerStatus       map[string]int
	invoicesPerCustomer     map[string]int
	invoicesPerOrg          map[string]int
	invoiceReadable         map[string]int
	vaultSecretIDs          []string
	auditLogPerAction       map[string]int
	auditLogDistinctSecrets int
	collectionCounts        map[string]int
}

// ---------------------------------------------------------------------------
// Deterministic primitives

const objectIDChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// stream returns the RNG of one class. Seed (42, 7) as documented; the stream
// number is mixed into the second word so classes do not share a sequence.
func stream(n uint64) *rand.Rand {
	return rand.New(rand.NewPCG(42, 7^(n*0x9E3779B97F4A7C15)))
}

type gen struct {
	ids map[string]bool
}

// objectID is Parse's randomString(10): each char is alphabet[byte % 62].
func (g *gen) objectID(r *rand.Rand) string {
	for {
		var b [10]byte
		for i := range b {
			b[i] = objectIDChars[byte(r.Uint32())%62]
		}
		id := string(b[:])
		if !g.ids[id] {
			g.ids[id] = true
			return id
		}
	}
}

func randHex(r *rand.Rand, nBytes int) string {
	b := make([]byte, nBytes)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

func uuid4(r *rand.Rand) string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

const bcryptChars = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// fakeBcrypt looks like a bcrypt hash ("$2b$10$" + 22 salt + 31 hash chars)
// but hashes nothing: no demo password can be recovered or used.
func fakeBcrypt(r *rand.Rand) string {
	var sb strings.Builder
	sb.WriteString("$2b$10$")
	for range 53 {
		sb.WriteByte(bcryptChars[r.IntN(len(bcryptChars))])
	}
	return sb.String()
}

func alnum(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = objectIDChars[r.IntN(62)]
	}
	return string(b)
}

// joinID is a deterministic bson.ObjectID shaped like a server-generated one:
// 4-byte big-endian seconds of t, then an 8-byte counter unique per dataset.
func joinID(t time.Time, n uint64) bson.ObjectID {
	var id bson.ObjectID
	binary.BigEndian.PutUint32(id[0:4], uint32(t.Unix()))
	binary.BigEndian.PutUint64(id[4:12], n)
	return id
}

func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

// between is a uniformly random instant in [from, to), millisecond precision
// (BSON dates hold milliseconds).
func between(r *rand.Rand, from, to time.Time) time.Time {
	span := to.Sub(from).Milliseconds()
	return from.Add(time.Duration(r.Int64N(span)) * time.Millisecond)
}

func days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// num stores a number the way Parse Server (Node's BSON serializer) does:
// int32 when it is an integer within int32 range, else double.
func num(f float64) any {
	if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 {
		return int32(f)
	}
	return f
}

func ptr(class, id string) string { return class + "$" + id }

// embeddedPointer is a pointer inside an Object/Array value, key order fixed.
func embeddedPointer(class, id string) bson.D {
	return bson.D{{Key: "__type", Value: "Pointer"}, {Key: "className", Value: class}, {Key: "objectId", Value: id}}
}

func strArray(s []string) bson.A {
	a := bson.A{}
	for _, v := range s {
		a = append(a, v)
	}
	return a
}

// acl is a Parse ACL. nil *acl = no ACL fields at all (public).
type acl struct {
	read, write []string
}

// appendACL appends _rperm, _wperm and _acl as Parse's transformACL and
// addLegacyACL write them. Entry order: read entries, then write-only ones.
func appendACL(d bson.D, a *acl) bson.D {
	if a == nil {
		return d
	}
	entries := slices.Clone(a.read)
	for _, w := range a.write {
		if !slices.Contains(entries, w) {
			entries = append(entries, w)
		}
	}
	legacy := bson.D{}
	for _, e := range entries {
		perm := bson.D{}
		if slices.Contains(a.read, e) {
			perm = append(perm, bson.E{Key: "r", Value: true})
		}
		if slices.Contains(a.write, e) {
			perm = append(perm, bson.E{Key: "w", Value: true})
		}
		legacy = append(legacy, bson.E{Key: e, Value: perm})
	}
	return append(d,
		bson.E{Key: "_rperm", Value: strArray(a.read)},
		bson.E{Key: "_wperm", Value: strArray(a.write)},
		bson.E{Key: "_acl", Value: legacy},
	)
}

// readable reports whether an identity holding the entries in ids (always
// including "*") may read a row with ACL a: no _rperm = public.
func readable(a *acl, ids []string) bool {
	if a == nil {
		return true
	}
	for _, e := range a.read {
		if slices.Contains(ids, e) {
			return true
		}
	}
	return false
}

func timestamps(d bson.D, created, updated time.Time) bson.D {
	return append(d, bson.E{Key: "_created_at", Value: created}, bson.E{Key: "_updated_at", Value: updated})
}

// maybeUpdated returns created, or (with probability p) a later instant.
func maybeUpdated(r *rand.Rand, created time.Time, p float64, maxDays int) time.Time {
	if r.Float64() < p {
		return created.Add(time.Duration(1+r.Int64N(int64(maxDays)*86400000)) * time.Millisecond)
	}
	return created
}

// ---------------------------------------------------------------------------
// Vocabulary

var (
	adjectives = []string{"Electric", "Golden", "Broken", "Silent", "Neon", "Velvet", "Paper", "Midnight",
		"Crystal", "Hollow", "Summer", "Winter", "Lonely", "Wild", "Burning", "Distant", "Silver",
		"Fading", "Endless", "Violet", "Northern", "Quiet", "Restless", "Lunar"}
	nouns = []string{"Heart", "Sky", "River", "Dream", "Highway", "Ocean", "Fire", "Mirror", "Garden",
		"Signal", "Shadow", "Morning", "City", "Light", "Echo", "Storm", "Train", "Window", "Radio",
		"Horizon", "Harbor", "Lantern", "Satellite", "Machine"}
	firstNames = []string{"Mira", "Jonah", "Ines", "Tariq", "Linnea", "Kofi", "Sade", "Ruben", "Yuki", "Ada",
		"Marlow", "Priya"}
	lastNames = []string{"Solace", "Vance", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Reyes", "Hart",
		"Albescu", "Novak", "Quill", "Sato"}
	countries = []string{"US", "GB", "DE", "FR", "SE", "JP", "BR", "NG", "CA", "AU", "KR", "NO"}
	labels    = []string{"Northside Records", "Blue Heron", "Atlas Sound", "Self-released", "Paper Lantern Music",
		"Harbor Lights", "Static Bloom", "Greywater"}
	moods    = []string{"chill", "energetic", "melancholic", "happy", "dark"}
	songTags = []string{"live", "remastered", "acoustic", "remix", "single", "cover", "instrumental",
		"radio-edit", "deluxe", "demo"}
	lyricLines = []string{
		"I saw the %s in the %s %s", "we were running from the %s under a %s %s",
		"hold on to the %s, the %s %s is calling", "nobody told me the %s would turn %s like the %s",
		"sing it back to the %s, %s as the %s", "all night long the %s keeps a %s %s",
	}
	playlistNames = []string{"Late Night Coding", "Sunday Morning", "Gym Rotation", "Rainy Day", "Deep Focus",
		"Summer Anthems", "Kitchen Disco", "Throwbacks", "Wind Down", "Commute", "Indie Finds",
		"Study Beats", "Party Starters", "Sad Bangers", "Jazz Evenings", "Lo-fi Loops",
		"Sunset Drive", "Coffee Shop", "Weekend Warmup", "Quiet Storm"}
	cities = [][2]float64{ // {longitude, latitude}
		{13.4050, 52.5200}, {-0.1276, 51.5072}, {2.3522, 48.8566}, {-73.9857, 40.7484},
		{139.6917, 35.6895}, {-122.4194, 37.7749}, {18.0686, 59.3293}, {-43.1729, -22.9068},
		{3.3792, 6.5244}, {151.2093, -33.8688},
	}
	vaultServices = []string{"stripe", "sendgrid", "twilio", "aws-s3", "github", "slack", "mailgun",
		"openai", "algolia", "sentry"}
	auditActions = []string{"secret.read", "secret.rotate", "secret.create"}
)

// ---------------------------------------------------------------------------
// Generation

type user struct {
	name, id, org string
	created       time.Time
}

type artist struct {
	id, name, country, website string
	formed, created            time.Time
	verified                   bool
}

type album struct {
	id, title, label            string
	artist                      int // index into builder.artists
	released, created, modified time.Time
}

type song struct {
	id, title         string
	album             int
	genre             string
	plays             float64
	duration          int
	released          time.Time
	tags              []string
	explicit, archive bool
	lyrics, org, mood string
	meta              bson.D
	acl               *acl
	aclKind           string
	leak              string
	created, updated  time.Time
}

// builder carries the state shared between the per-class generation steps.
// Each step draws from its own RNG stream.
type builder struct {
	*gen
	f          facts
	cols       []collectionData
	joinSeq    uint64
	usernames  []string
	users      []user
	identities map[string][]string // identity key (see fixture.go) → _rperm entries held
	vaultDocs  []any
	artists    []artist
	albums     []album
	songs      []song
}

func (b *builder) add(c collectionData) { b.cols = append(b.cols, c) }

func (b *builder) byName(n string) user { return b.users[slices.Index(b.usernames, n)] }

// joinDoc is a relation row {_id: ObjectId, owningId, relatedId}.
func (b *builder) joinDoc(t time.Time, owning, related string) bson.D {
	b.joinSeq++
	id := joinID(t, 0x7475_6e65_0000_0000|b.joinSeq) // "tune" + sequence
	return bson.D{{Key: "_id", Value: id}, {Key: "owningId", Value: owning}, {Key: "relatedId", Value: related}}
}

// generate builds the whole data set. The order of the steps only matters
// for references (ids must exist before they are pointed to); the order of
// b.cols is the order Seed writes the collections in.
func generate() *dataset {
	b := &builder{gen: &gen{ids: map[string]bool{}}}
	b.genUsers()
	b.genRoles()
	b.genSessions()
	b.genVaultSecrets() // ids needed by the Song attack fixtures; written later
	b.genArtists()
	b.genAlbums()
	b.genSongs()
	b.genCatalogDocs()
	b.genPlaylists()
	b.genInvoices()
	b.add(collectionData{name: ClassVaultSecret, docs: b.vaultDocs})
	b.genAuditLogs()
	b.add(collectionData{name: "_SCHEMA", docs: schemaDocs(b.cols)})
	return b.finish()
}

// genUsers builds _User: six users in two orgs, each carrying one kind of
// credential column (see fixture.go), ACL = the user itself.
func (b *builder) genUsers() {
	f, g := &b.f, b.gen
	r := stream(1)
	usernames := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	displayNames := []string{"Alice Martin", "Bob Okoro", "Carol Reyes", "Dave Lindqvist", "Erin Walsh", "Frank Moreau"}
	plans := []string{"premium", "family", "free", "premium", "free", "family"}
	users := make([]user, len(usernames))
	f.userIDs, f.userOrgs = map[string]string{}, map[string]string{}
	userDocs := []any{}
	for i, name := range usernames {
		u := user{name: name, id: g.objectID(r), org: OrgNorth}
		if i >= 3 {
			u.org = OrgSouth
		}
		u.created = baseDate.Add(days(i * 9)).Add(time.Duration(r.Int64N(86400000)) * time.Millisecond)
		users[i] = u
		f.userIDs[name], f.userOrgs[name] = u.id, u.org
		d := bson.D{
			{Key: "_id", Value: u.id},
			{Key: "username", Value: name},
			{Key: "email", Value: name + "@tunebase.example"},
			{Key: "emailVerified", Value: name != "erin"},
			{Key: "displayName", Value: displayNames[i]},
			{Key: "plan", Value: plans[i]},
			{Key: "orgId", Value: u.org},
			{Key: "_hashed_password", Value: fakeBcrypt(r)},
		}
		switch name {
		case "alice":
			d = append(d, bson.E{Key: "_password_changed_at", Value: u.created.Add(days(400))})
		case "bob":
			d = append(d, bson.E{Key: "_failed_login_count", Value: int32(2)})
		case "carol":
			d = append(d, bson.E{Key: "_password_history", Value: bson.A{fakeBcrypt(r), fakeBcrypt(r)}})
		case "dave":
			d = append(d, bson.E{Key: "_auth_data_github", Value: bson.D{
				{Key: "id", Value: "48151623"},
				{Key: "access_token", Value: "gho_FAKE" + alnum(r, 28)},
			}})
		case "erin":
			d = append(d,
				bson.E{Key: "_email_verify_token", Value: alnum(r, 25)},
				bson.E{Key: "_email_verify_token_expires_at", Value: utc(2099, 1, 1, 0, 0)})
		case "frank":
			d = append(d,
				bson.E{Key: "_perishable_token", Value: alnum(r, 25)},
				bson.E{Key: "_perishable_token_expires_at", Value: utc(2099, 1, 1, 0, 0)},
				bson.E{Key: "_failed_login_count", Value: int32(1)})
		}
		d = appendACL(d, &acl{read: []string{u.id}, write: []string{u.id}})
		d = timestamps(d, u.created, maybeUpdated(r, u.created, 0.5, 600))
		userDocs = append(userDocs, d)
	}
	b.usernames, b.users = usernames, users
	b.add(collectionData{name: ClassUser, docs: userDocs, indexes: []indexSpec{
		{name: "username_1", keys: bson.D{{Key: "username", Value: int32(1)}}, unique: true},
		{name: "email_1", keys: bson.D{{Key: "email", Value: int32(1)}}, unique: true, sparse: true},
	}})
}

// genRoles builds _Role (public-read ACL), the memberships, the hierarchy, and
// the identity table used to count what each identity can read.
func (b *builder) genRoles() {
	f, g := &b.f, b.gen
	r := stream(2)
	roleCreated := baseDate.Add(days(1))
	f.roleAdminID, f.roleModeratorID = g.objectID(r), g.objectID(r)
	publicRead := &acl{read: []string{"*"}, write: []string{}}
	roleDocs := []any{}
	for _, rl := range []struct{ id, name string }{{f.roleAdminID, RoleAdmin}, {f.roleModeratorID, RoleModerator}} {
		d := bson.D{{Key: "_id", Value: rl.id}, {Key: "name", Value: rl.name}}
		d = appendACL(d, publicRead)
		roleDocs = append(roleDocs, timestamps(d, roleCreated, roleCreated))
	}
	b.add(collectionData{name: ClassRole, docs: roleDocs, indexes: []indexSpec{
		{name: "name_1", keys: bson.D{{Key: "name", Value: int32(1)}}, unique: true},
	}})
	b.add(collectionData{name: JoinRoleUsers, docs: []any{
		b.joinDoc(roleCreated, f.roleAdminID, b.byName("alice").id),
		b.joinDoc(roleCreated, f.roleModeratorID, b.byName("bob").id),
	}})
	// Hierarchy: owningId = parent (Moderator), relatedId = child (Admin):
	// members of Admin also hold Moderator.
	b.add(collectionData{name: JoinRoleRoles, docs: []any{
		b.joinDoc(roleCreated, f.roleModeratorID, f.roleAdminID),
	}})
	roleOf := map[string][]string{ // username → roles held, hierarchy expanded
		"alice": {"role:" + RoleAdmin, "role:" + RoleModerator},
		"bob":   {"role:" + RoleModerator},
	}
	identity := func(username string) []string {
		return append([]string{"*", f.userIDs[username]}, roleOf[username]...)
	}
	identities := map[string][]string{
		"public":                {"*"},
		"role:" + RoleModerator: {"*", "role:" + RoleModerator},
		"role:" + RoleAdmin:     {"*", "role:" + RoleAdmin, "role:" + RoleModerator},
	}
	for _, u := range b.usernames {
		identities[u] = identity(u)
	}
	b.identities = identities
}

// genSessions builds _Session: valid tokens for alice, bob and carol, an
// expired one for dave. Sessions carry no ACL fields.
func (b *builder) genSessions() {
	f, g := &b.f, b.gen
	r := stream(3)
	f.sessionTokens, f.sessionIDs = map[string]string{}, map[string]string{}
	sessionDocs := []any{}
	for _, s := range []struct {
		user, provider string
		created        time.Time
		expires        time.Time
	}{
		{"alice", "password", utc(2024, 3, 1, 9, 15), utc(2099, 12, 31, 0, 0)},
		{"bob", "password", utc(2024, 3, 2, 18, 40), utc(2099, 12, 31, 0, 0)},
		{"carol", "password", utc(2024, 3, 3, 7, 5), utc(2099, 12, 31, 0, 0)},
		{"dave", "github", utc(2019, 6, 1, 12, 0), utc(2020, 6, 1, 12, 0)},
	} {
		id, token := g.objectID(r), "r:"+randHex(r, 16)
		f.sessionIDs[s.user] = id
		if s.user == "dave" {
			f.expiredSessionToken = token
		} else {
			f.sessionTokens[s.user] = token
		}
		d := bson.D{
			{Key: "_id", Value: id},
			{Key: "_session_token", Value: token},
			{Key: "_p_user", Value: ptr(ClassUser, b.byName(s.user).id)},
			{Key: "createdWith", Value: bson.D{{Key: "action", Value: "login"}, {Key: "authProvider", Value: s.provider}}},
			{Key: "installationId", Value: uuid4(r)},
			{Key: "expiresAt", Value: s.expires},
		}
		sessionDocs = append(sessionDocs, timestamps(d, s.created, s.created))
	}
	b.add(collectionData{name: ClassSession, docs: sessionDocs})
}

// genVaultSecrets builds the hidden class (fake keys). Its ids are referenced
// by Song and AuditLog, so it is generated early and written late.
func (b *builder) genVaultSecrets() {
	f, g := &b.f, b.gen
	r := stream(9)
	vaultDocs := []any{}
	for i := range VaultSecretCount {
		id := g.objectID(r)
		f.vaultSecretIDs = append(f.vaultSecretIDs, id)
		created := between(r, utc(2019, 2, 1, 0, 0), utc(2021, 1, 1, 0, 0))
		d := bson.D{
			{Key: "_id", Value: id},
			{Key: "service", Value: vaultServices[i]},
			{Key: "apiKey", Value: "sk_test_FAKE_" + alnum(r, 24)},
			{Key: "note", Value: "FAKE demo credential for " + vaultServices[i] + "; not a real key"},
			{Key: "rotatedAt", Value: created.Add(days(30 + r.IntN(700)))},
		}
		d = appendACL(d, &acl{read: []string{"role:" + RoleAdmin}, write: []string{"role:" + RoleAdmin}})
		vaultDocs = append(vaultDocs, timestamps(d, created, created))
	}
	b.vaultDocs = vaultDocs
}

// genArtists picks the artists' scalar fields; genres are derived from the
// songs in genCatalogDocs.
func (b *builder) genArtists() {
	f, g := &b.f, b.gen
	r := stream(4)
	artists := make([]artist, ArtistCount)
	seenNames := map[string]bool{}
	for i := range artists {
		a := artist{id: g.objectID(r)}
		for a.name == "" || seenNames[a.name] {
			if r.IntN(3) == 0 {
				a.name = firstNames[r.IntN(len(firstNames))] + " " + lastNames[r.IntN(len(lastNames))]
			} else {
				a.name = "The " + adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))] + "s"
			}
		}
		seenNames[a.name] = true
		a.country = countries[r.IntN(len(countries))]
		a.formed = between(r, utc(1968, 1, 1, 0, 0), utc(2017, 1, 1, 0, 0))
		a.verified = r.Float64() < 0.6
		if r.Float64() < 0.7 {
			slug := strings.ToLower(strings.NewReplacer("The ", "", " ", "-").Replace(a.name))
			a.website = "https://" + slug + ".example.com"
		}
		a.created = between(r, baseDate.Add(days(2)), baseDate.Add(days(180)))
		artists[i] = a
		f.artistIDs = append(f.artistIDs, a.id)
	}
	b.artists = artists
}

// genAlbums gives every artist one album, then spreads the rest at random.
func (b *builder) genAlbums() {
	f, g := &b.f, b.gen
	r := stream(5)
	artists := b.artists
	albums := make([]album, AlbumCount)
	for i := range albums {
		al := album{id: g.objectID(r), artist: i % ArtistCount}
		if i >= ArtistCount {
			al.artist = r.IntN(ArtistCount)
		}
		switch r.IntN(3) {
		case 0:
			al.title = adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))] + "s"
		case 1:
			al.title = nouns[r.IntN(len(nouns))] + " & " + nouns[r.IntN(len(nouns))]
		default:
			al.title = "Songs from the " + nouns[r.IntN(len(nouns))]
		}
		al.label = labels[r.IntN(len(labels))]
		al.released = between(r, utc(2018, 1, 15, 0, 0), utc(2023, 12, 15, 0, 0))
		created := al.released.Add(-days(30))
		if a := artists[al.artist].created; created.Before(a) {
			created = a
		}
		al.created = created.Add(time.Duration(r.Int64N(10*86400000)) * time.Millisecond)
		al.modified = maybeUpdated(r, al.created, 0.3, 300)
		albums[i] = al
		f.albumIDs = append(f.albumIDs, al.id)
	}
	b.albums = albums
}

// genSongs builds the songs: exact genre/archived/ACL splits (shuffled), the
// optional fields, and the attack/edge fixtures on plain public rows.
func (b *builder) genSongs() {
	g := b.gen
	users, artists, albums := b.users, b.artists, b.albums
	r := stream(6)
	genreList := []string{}
	for _, gname := range Genres {
		for range SongsPerGenre[gname] {
			genreList = append(genreList, gname)
		}
	}
	r.Shuffle(len(genreList), func(i, j int) { genreList[i], genreList[j] = genreList[j], genreList[i] })
	archived := make([]bool, SongCount)
	for i := range SongArchivedCount {
		archived[i] = true
	}
	r.Shuffle(len(archived), func(i, j int) { archived[i], archived[j] = archived[j], archived[i] })
	aclKinds := []string{}
	for _, k := range []struct {
		kind string
		n    int
	}{
		{"none", SongNoACLCount}, {"public", SongPublicACLCount}, {"moderator", SongModeratorOnlyCount},
		{"admin", SongAdminOnlyCount}, {"user", SongUserOnlyCount}, {"master", SongMasterOnlyCount},
	} {
		for range k.n {
			aclKinds = append(aclKinds, k.kind)
		}
	}
	r.Shuffle(len(aclKinds), func(i, j int) { aclKinds[i], aclKinds[j] = aclKinds[j], aclKinds[i] })
	doublePlays := r.Perm(SongCount)[:SongDoublePlaysCount]

	songs := make([]song, SongCount)
	for i := range songs {
		s := song{id: g.objectID(r), genre: genreList[i], archive: archived[i], aclKind: aclKinds[i]}
		s.album = i
		if i >= AlbumCount {
			s.album = r.IntN(AlbumCount)
		}
		al := albums[s.album]
		s.title = songTitle(r)
		if slices.Contains(doublePlays, i) {
			s.plays = float64(2_200_000_000 + r.Int64N(2_000_000_000))
		} else {
			s.plays = math.Min(math.Floor(math.Exp(9+1.6*r.NormFloat64())), 1_900_000_000)
		}
		s.duration = 95 + r.IntN(330)
		s.released = al.released
		if r.Float64() < 0.3 { // a pre-release single
			if early := al.released.Add(-days(1 + r.IntN(120))); early.Year() >= 2018 {
				s.released = early.Add(time.Duration(r.Int64N(86400000)) * time.Millisecond)
			}
		}
		for _, ti := range r.Perm(len(songTags))[:r.IntN(4)] {
			s.tags = append(s.tags, songTags[ti])
		}
		explicitP := 0.08
		if s.genre == "hiphop" {
			explicitP = 0.4
		}
		s.explicit = r.Float64() < explicitP
		if s.genre != "classical" && s.genre != "ambient" && r.Float64() < 0.13 {
			s.lyrics = makeLyrics(r)
		}
		s.org = OrgNorth
		if r.Float64() < 0.42 {
			s.org = OrgSouth
		}
		if r.Float64() < 0.75 {
			s.mood = moods[r.IntN(len(moods))]
		}
		if r.Float64() < 0.15 {
			s.meta = bson.D{
				{Key: "source", Value: "import"},
				{Key: "importedAt", Value: between(r, utc(2019, 1, 1, 0, 0), utc(2022, 1, 1, 0, 0))},
				{Key: "originalArtist", Value: embeddedPointer(ClassArtist, artists[r.IntN(ArtistCount)].id)},
				{Key: "bpm", Value: int32(60 + r.IntN(120))},
			}
		}
		s.acl = songACL(s.aclKind, r, users)
		s.created = al.created.Add(time.Duration(r.Int64N(2*3600000)) * time.Millisecond)
		s.updated = maybeUpdated(r, s.created, 0.25, 400)
		songs[i] = s
	}
	b.plantSongFixtures(songs)
	b.songs = songs
}

// songTitle draws a song's title.
func songTitle(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))]
	}
	return "The " + nouns[r.IntN(len(nouns))] + " of " + adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))] + "s"
}

// songACL is the ACL of a song of kind (nil: none; a user-only song draws
// its user).
func songACL(kind string, r *rand.Rand, users []user) *acl {
	switch kind {
	case "public":
		return &acl{read: []string{"*"}, write: []string{"role:" + RoleModerator}}
	case "moderator":
		return &acl{read: []string{"role:" + RoleModerator}, write: []string{"role:" + RoleModerator}}
	case "admin":
		return &acl{read: []string{"role:" + RoleAdmin}, write: []string{"role:" + RoleAdmin}}
	case "user":
		uid := users[r.IntN(len(users))].id
		return &acl{read: []string{uid}, write: []string{uid}}
	case "master":
		return &acl{read: []string{}, write: []string{}}
	}
	return nil
}

// plantSongFixtures puts the attack fixtures and edge rows on public,
// non-archived songs, chosen by index order so they are stable.
func (b *builder) plantSongFixtures(songs []song) {
	f := &b.f
	var plain []int
	for i, s := range songs {
		if s.aclKind == "none" && !s.archive && s.meta == nil && s.leak == "" {
			plain = append(plain, i)
		}
	}
	songs[plain[0]].leak = ptr(ClassVaultSecret, f.vaultSecretIDs[0])
	songs[plain[1]].leak = ptr(ClassVaultSecret, f.vaultSecretIDs[3])
	f.songLeakIDs = []string{songs[plain[0]].id, songs[plain[1]].id}
	f.songLeakSecretIDs = []string{f.vaultSecretIDs[0], f.vaultSecretIDs[3]}
	songs[plain[2]].meta = bson.D{
		{Key: "source", Value: "vault-sync"},
		{Key: "importedAt", Value: utc(2021, 5, 4, 3, 2)},
		{Key: "credential", Value: embeddedPointer(ClassVaultSecret, f.vaultSecretIDs[5])},
		{Key: "bpm", Value: int32(128)},
	}
	f.songEmbeddedSecretID, f.songEmbeddedSecretTarget = songs[plain[2]].id, f.vaultSecretIDs[5]
	// The time-zone edge: 20:00 UTC on 30 June 2020 is already July in +09:00.
	songs[plain[3]].released = utc(2020, 6, 30, 20, 0)
	f.songTZEdgeID = songs[plain[3]].id
}

// genCatalogDocs derives Artist.genres and Album.tracks from the songs and
// writes Artist, Album and Song.
func (b *builder) genCatalogDocs() {
	f := &b.f
	artists, albums, songs := b.artists, b.albums, b.songs
	artistGenre := make([]map[string]int, ArtistCount)
	for i := range artistGenre {
		artistGenre[i] = map[string]int{}
	}
	tracks := make([]int, AlbumCount)
	artistSongs := make([]int, ArtistCount)
	for _, s := range songs {
		a := albums[s.album].artist
		artistGenre[a][s.genre]++
		tracks[s.album]++
		artistSongs[a]++
	}
	artistDocs := []any{}
	r := stream(4 + 100)
	for i, a := range artists {
		gs := make([]string, 0, len(artistGenre[i]))
		for gname := range artistGenre[i] {
			gs = append(gs, gname)
		}
		sort.Slice(gs, func(x, y int) bool {
			if artistGenre[i][gs[x]] != artistGenre[i][gs[y]] {
				return artistGenre[i][gs[x]] > artistGenre[i][gs[y]]
			}
			return gs[x] < gs[y]
		})
		if len(gs) > 3 {
			gs = gs[:3]
		}
		d := bson.D{
			{Key: "_id", Value: a.id},
			{Key: "name", Value: a.name},
			{Key: "country", Value: a.country},
			{Key: "genres", Value: strArray(gs)},
			{Key: "formedAt", Value: a.formed},
			{Key: "verified", Value: a.verified},
		}
		if a.website != "" {
			d = append(d, bson.E{Key: "website", Value: a.website})
		}
		artistDocs = append(artistDocs, timestamps(d, a.created, maybeUpdated(r, a.created, 0.3, 500)))
		if artistSongs[i] > f.topArtistSongs {
			f.topArtistID, f.topArtistSongs = a.id, artistSongs[i]
		}
	}
	b.add(collectionData{name: ClassArtist, docs: artistDocs, indexes: []indexSpec{
		{name: "name_1", keys: bson.D{{Key: "name", Value: int32(1)}}},
	}})
	albumDocs := []any{}
	for i, al := range albums {
		d := bson.D{
			{Key: "_id", Value: al.id},
			{Key: "title", Value: al.title},
			{Key: "_p_artist", Value: ptr(ClassArtist, artists[al.artist].id)},
			{Key: "releasedAt", Value: al.released},
			{Key: "label", Value: al.label},
			{Key: "tracks", Value: num(float64(tracks[i]))},
		}
		albumDocs = append(albumDocs, timestamps(d, al.created, al.modified))
		if tracks[i] > f.featuredAlbumTrk {
			f.featuredAlbumID, f.featuredAlbumTrk = al.id, tracks[i]
		}
	}
	b.add(collectionData{name: ClassAlbum, docs: albumDocs})

	songDocs := []any{}
	for _, s := range songs {
		songDocs = append(songDocs, songDocument(s, artists, albums))
	}
	b.add(collectionData{name: ClassSong, docs: songDocs, indexes: []indexSpec{
		{name: "genre_1", keys: bson.D{{Key: "genre", Value: int32(1)}}},
		{name: "_created_at_-1", keys: bson.D{{Key: "_created_at", Value: int32(-1)}}},
		{name: "_p_artist_1", keys: bson.D{{Key: "_p_artist", Value: int32(1)}}},
		{name: "releasedAt_1", keys: bson.D{{Key: "releasedAt", Value: int32(1)}}},
	}})
	songFacts(f, songs, b.usernames, b.identities)
}

// songDocument is a song's stored document.
func songDocument(s song, artists []artist, albums []album) bson.D {
	d := bson.D{
		{Key: "_id", Value: s.id},
		{Key: "title", Value: s.title},
		{Key: "_p_artist", Value: ptr(ClassArtist, artists[albums[s.album].artist].id)},
		{Key: "_p_album", Value: ptr(ClassAlbum, albums[s.album].id)},
		{Key: "genre", Value: s.genre},
		{Key: "plays", Value: num(s.plays)},
		{Key: "durationSec", Value: num(float64(s.duration))},
		{Key: "releasedAt", Value: s.released},
		{Key: "tags", Value: strArray(s.tags)},
		{Key: "explicit", Value: s.explicit},
		{Key: "archived", Value: s.archive},
		{Key: "orgId", Value: s.org},
	}
	if s.mood != "" {
		d = append(d, bson.E{Key: "mood", Value: s.mood})
	}
	if s.lyrics != "" {
		d = append(d, bson.E{Key: "lyrics", Value: s.lyrics})
	}
	d = append(d, bson.E{Key: SongVectorField, Value: songVector(s.title, s.lyrics)})
	if s.meta != nil {
		d = append(d, bson.E{Key: "meta", Value: s.meta})
	}
	if s.leak != "" {
		d = append(d, bson.E{Key: "leak", Value: s.leak})
	}
	d = appendACL(d, s.acl)
	return timestamps(d, s.created, s.updated)
}

// genPlaylists builds Playlist and its songs relation (_Join:songs:Playlist).
func (b *builder) genPlaylists() {
	f, g := &b.f, b.gen
	users, songs, identities := b.users, b.songs, b.identities
	r := stream(7)
	playlistDocs, playlistJoins := []any{}, []any{}
	f.playlistsPerOwner, f.playlistReadable = map[string]int{}, map[string]int{}
	for i := range PlaylistCount {
		id := g.objectID(r)
		owner := users[r.IntN(len(users))]
		name := playlistNames[r.IntN(len(playlistNames))]
		isPublic := r.Float64() < 0.7
		nSongs := 3 + r.IntN(13)
		if i == 0 { // the featured playlist: alice's, public, 12 songs
			owner, name, isPublic, nSongs = b.byName("alice"), "Alice's Road Trip", true, 12
			f.playlistFeaturedID = id
		}
		created := between(r, owner.created.Add(days(1)), utc(2024, 6, 1, 0, 0))
		d := bson.D{
			{Key: "_id", Value: id},
			{Key: "name", Value: name},
			{Key: "_p_owner", Value: ptr(ClassUser, owner.id)},
			{Key: "isPublic", Value: isPublic},
			{Key: "followers", Value: num(float64(r.IntN(5000)))},
		}
		if i == 0 || r.Float64() < 0.6 {
			d = append(d, bson.E{Key: "cover", Value: "tfss-" + uuid4(r) + "-cover.jpg"})
			f.playlistWithCover++
		}
		if i == 0 || r.Float64() < 0.5 {
			c := cities[r.IntN(len(cities))]
			lng := math.Round((c[0]+(r.Float64()-0.5)*0.2)*1e4) / 1e4
			lat := math.Round((c[1]+(r.Float64()-0.5)*0.2)*1e4) / 1e4
			d = append(d, bson.E{Key: "location", Value: bson.A{lng, lat}})
			f.playlistWithLocation++
		}
		if r.Float64() < 0.4 {
			d = append(d, bson.E{Key: "description", Value: "Songs for " + strings.ToLower(name)})
		}
		a := &acl{read: []string{owner.id}, write: []string{owner.id}}
		if isPublic {
			a.read = []string{"*", owner.id}
			f.playlistPublic++
		}
		d = appendACL(d, a)
		playlistDocs = append(playlistDocs, timestamps(d, created, maybeUpdated(r, created, 0.4, 200)))
		f.playlistsPerOwner[owner.name]++
		for k, ids := range identities {
			if readable(a, ids) {
				f.playlistReadable[k]++
			}
		}
		for _, si := range r.Perm(SongCount)[:nSongs] {
			playlistJoins = append(playlistJoins, b.joinDoc(created, id, songs[si].id))
			if i == 0 {
				f.playlistFeaturedSongIDs = append(f.playlistFeaturedSongIDs, songs[si].id)
			}
		}
	}
	f.playlistSongJoins = len(playlistJoins)
	b.add(collectionData{name: ClassPlaylist, docs: playlistDocs, indexes: []indexSpec{
		{name: "_p_owner_1", keys: bson.D{{Key: "_p_owner", Value: int32(1)}}},
		{name: "location_2d", keys: bson.D{{Key: "location", Value: "2d"}}, bestEffort: true},
	}})
	b.add(collectionData{name: JoinPlaylistSongs, docs: playlistJoins})
}

// genInvoices builds Invoice: readable by the customer and role:Admin,
// writable by role:Admin.
func (b *builder) genInvoices() {
	f, g := &b.f, b.gen
	users, identities := b.users, b.identities
	r := stream(8)
	invoiceDocs := []any{}
	f.invoicesPerStatus, f.invoicesPerCustomer = map[string]int{}, map[string]int{}
	f.invoicesPerOrg, f.invoiceReadable = map[string]int{}, map[string]int{}
	for i := range InvoiceCount {
		id := g.objectID(r)
		cust := users[r.IntN(len(users))]
		due := between(r, utc(2023, 1, 1, 0, 0), utc(2025, 1, 1, 0, 0))
		status := "paid"
		switch {
		case due.After(InvoiceAsOf):
			status = "open"
			if r.Float64() < 0.3 {
				status = "paid"
			}
		case r.Float64() < 0.2:
			status = "overdue"
		}
		var amount float64
		if r.Float64() < 0.4 {
			amount = float64(10 * (1 + r.IntN(90)))
		} else {
			amount = math.Round((5+r.Float64()*995)*100) / 100
		}
		currency := "USD"
		if cust.org == OrgSouth {
			currency = "EUR"
		}
		d := bson.D{
			{Key: "_id", Value: id},
			{Key: "number", Value: fmt.Sprintf("INV-%d-%04d", due.Year(), i+1)},
			{Key: "_p_customer", Value: ptr(ClassUser, cust.id)},
			{Key: "amount", Value: num(amount)},
			{Key: "currency", Value: currency},
			{Key: "status", Value: status},
			{Key: "dueDate", Value: due},
		}
		if status == "paid" {
			d = append(d, bson.E{Key: "paidAt", Value: due.Add(-days(r.IntN(20))).Add(time.Duration(r.Int64N(86400000)) * time.Millisecond)})
		}
		d = append(d, bson.E{Key: "orgId", Value: cust.org})
		a := &acl{read: []string{cust.id, "role:" + RoleAdmin}, write: []string{"role:" + RoleAdmin}}
		d = appendACL(d, a)
		created := due.Add(-days(30))
		invoiceDocs = append(invoiceDocs, timestamps(d, created, maybeUpdated(r, created, 0.5, 40)))
		f.invoicesPerStatus[status]++
		f.invoicesPerCustomer[cust.name]++
		f.invoicesPerOrg[cust.org]++
		for k, ids := range identities {
			if readable(a, ids) {
				f.invoiceReadable[k]++
			}
		}
	}
	b.add(collectionData{name: ClassInvoice, docs: invoiceDocs, indexes: []indexSpec{
		{name: "status_1_dueDate_1", keys: bson.D{{Key: "status", Value: int32(1)}, {Key: "dueDate", Value: int32(1)}}},
	}})

}

// genAuditLogs builds AuditLog, whose secret pointers target the hidden class.
func (b *builder) genAuditLogs() {
	f, g := &b.f, b.gen
	users := b.users
	r := stream(10)
	auditDocs := []any{}
	f.auditLogPerAction = map[string]int{}
	secretsSeen := map[string]bool{}
	for range AuditLogCount {
		id := g.objectID(r)
		secret := f.vaultSecretIDs[r.IntN(VaultSecretCount)]
		actor := users[r.IntN(2)] // alice or bob
		action := auditActions[r.IntN(len(auditActions))]
		created := between(r, utc(2021, 1, 1, 0, 0), utc(2024, 6, 1, 0, 0))
		d := bson.D{
			{Key: "_id", Value: id},
			{Key: "action", Value: action},
			{Key: "_p_secret", Value: ptr(ClassVaultSecret, secret)},
			{Key: "_p_actor", Value: ptr(ClassUser, actor.id)},
			{Key: "details", Value: action + " by " + actor.name},
		}
		auditDocs = append(auditDocs, timestamps(d, created, created))
		f.auditLogPerAction[action]++
		secretsSeen[secret] = true
	}
	f.auditLogDistinctSecrets = len(secretsSeen)
	b.add(collectionData{name: ClassAuditLog, docs: auditDocs})
}

// finish counts the collections and fingerprints the whole data set.
func (b *builder) finish() *dataset {
	f := &b.f
	f.collectionCounts = map[string]int{}
	h := sha256.New()
	for _, c := range b.cols {
		f.collectionCounts[c.name] = len(c.docs)
		h.Write([]byte(c.name))
		for _, doc := range c.docs {
			raw, err := bson.Marshal(doc)
			if err != nil {
				panic("demo: marshalling generated document: " + err.Error())
			}
			h.Write(raw)
		}
		for _, ix := range c.indexes {
			fmt.Fprintf(h, "%s%v%v%v", ix.name, ix.keys, ix.unique, ix.sparse)
		}
	}
	return &dataset{collections: b.cols, fingerprint: hex.EncodeToString(h.Sum(nil)), facts: *f}
}

func makeLyrics(r *rand.Rand) string {
	target := 1000 + r.IntN(1000)
	var sb strings.Builder
	for sb.Len() < target {
		line := lyricLines[r.IntN(len(lyricLines))]
		fmt.Fprintf(&sb, line, strings.ToLower(nouns[r.IntN(len(nouns))]),
			strings.ToLower(adjectives[r.IntN(len(adjectives))]), strings.ToLower(nouns[r.IntN(len(nouns))]))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// songFacts computes every Song number fixture.go exports.
func songFacts(f *facts, songs []song, usernames []string, identities map[string][]string) {
	f.songReadable, f.activeSongReadable = map[string]int{}, map[string]int{}
	f.activeSongsPerGenre = map[string]int{}
	f.songsPerOrg, f.activeSongsPerOrg = map[string]int{}, map[string]int{}
	f.songsPerYear, f.activeSongsPerYear = map[int]int{}, map[int]int{}
	f.activePerMonth2020UTC, f.activePerMonth2020Plus9 = map[string]int{}, map[string]int{}
	f.songsPerMood = map[string]int{}
	f.songsPerTag, f.activeSongsPerTag = map[string]int{}, map[string]int{}
	f.playsPerGenre, f.activePlaysGenre = map[string]int64{}, map[string]int64{}
	f.songIDs = map[string]string{}
	plus9 := time.FixedZone("+09:00", 9*3600)
	var maxPlays float64 = -1
	var newest, oldest time.Time
	for _, s := range songs {
		active := !s.archive
		for k, ids := range identities {
			if readable(s.acl, ids) {
				f.songReadable[k]++
				if active {
					f.activeSongReadable[k]++
				}
			}
		}
		countSong(f, s)
		if active {
			countActiveSong(f, s, plus9)
		}
		if s.plays > maxPlays {
			maxPlays, f.songTopPlaysID = s.plays, s.id
		}
		if f.songNewestID == "" || s.created.After(newest) {
			f.songNewestID, newest = s.id, s.created
		}
		if f.songOldestID == "" || s.created.Before(oldest) {
			f.songOldestID, oldest = s.id, s.created
		}
		songExemplars(f, s, usernames, identities)
	}
}

// countSong counts one song into the facts of every song.
func countSong(f *facts, s song) {
	f.songsPerOrg[s.org]++
	f.songsPerYear[s.released.Year()]++
	if s.mood != "" {
		f.songsWithMood++
		f.songsPerMood[s.mood]++
	}
	if s.meta != nil {
		f.songsWithMeta++
	}
	if s.lyrics != "" {
		f.songsWithLyrics++
	}
	if s.explicit {
		f.songsExplicit++
	}
	for _, t := range s.tags {
		f.songsPerTag[t]++
	}
	f.playsTotal += int64(s.plays)
	f.playsPerGenre[s.genre] += int64(s.plays)
}

// countActiveSong counts a song that is not archived into the active facts.
func countActiveSong(f *facts, s song, plus9 *time.Location) {
	f.activeSongsPerGenre[s.genre]++
	f.activeSongsPerOrg[s.org]++
	f.activeSongsPerYear[s.released.Year()]++
	if s.released.Year() == 2020 {
		f.activePerMonth2020UTC[s.released.Format("2006-01")]++
	}
	if t := s.released.In(plus9); t.Year() == 2020 {
		f.activePerMonth2020Plus9[t.Format("2006-01")]++
	}
	for _, t := range s.tags {
		f.activeSongsPerTag[t]++
	}
	f.activePlaysGenre[s.genre] += int64(s.plays)
}

// songExemplars records s as the exemplar of each kind it is the first
// song (in generation order) of.
func songExemplars(f *facts, s song, usernames []string, identities map[string][]string) {
	active := !s.archive
	setOnce := func(name string, cond bool) {
		if cond && f.songIDs[name] == "" {
			f.songIDs[name] = s.id
		}
	}
	plain := s.leak == "" && s.id != f.songEmbeddedSecretID && s.id != f.songTZEdgeID
	setOnce("public", active && plain && s.aclKind == "none")
	setOnce("star", active && plain && s.aclKind == "public")
	setOnce("archived", s.archive && s.aclKind == "none")
	setOnce("moderator", active && s.aclKind == "moderator")
	setOnce("admin", active && s.aclKind == "admin")
	setOnce("master", active && s.aclKind == "master")
	setOnce("lyrics", active && s.aclKind == "none" && s.lyrics != "")
	setOnce("double", math.Trunc(s.plays) == s.plays && s.plays > math.MaxInt32)
	setOnce("nomood", active && s.aclKind == "none" && s.mood == "")
	setOnce("meta", active && s.aclKind == "none" && plain && s.meta != nil)
	if active && s.aclKind == "user" && f.songIDs["user"] == "" {
		f.songIDs["user"] = s.id
		f.songUserOnlyOwner = songOwner(s, usernames, identities)
	}
}

// songOwner is the user a user-only song's ACL names ("" if none).
func songOwner(s song, usernames []string, identities map[string][]string) string {
	owner := ""
	for _, u := range usernames {
		if s.acl.read[0] == identities[u][1] {
			owner = u
		}
	}
	return owner
}

// ---------------------------------------------------------------------------
// _SCHEMA

func clp(find, count, get, create, update, del, addField bson.D, protected bson.D) bson.D {
	return bson.D{
		{Key: "find", Value: find}, {Key: "count", Value: count}, {Key: "get", Value: get},
		{Key: "create", Value: create}, {Key: "update", Value: update}, {Key: "delete", Value: del},
		{Key: "addField", Value: addField}, {Key: "protectedFields", Value: protected},
	}
}

func perm(entries ...string) bson.D {
	d := bson.D{}
	for _, e := range entries {
		d = append(d, bson.E{Key: e, Value: true})
	}
	return d
}

// defaultCLP is what Parse Server writes for a class created without
// explicit permissions: everything public, nothing protected.
func defaultCLP() bson.D {
	p := perm("*")
	return clp(p, p, p, p, p, p, p, bson.D{{Key: "*", Value: bson.A{}}})
}

func schemaDocs(cols []collectionData) []any {
	indexesOf := func(name string) bson.D {
		ix := bson.D{{Key: "_id_", Value: bson.D{{Key: "_id", Value: int32(1)}}}}
		for _, c := range cols {
			if c.name == name {
				for _, spec := range c.indexes {
					if spec.bestEffort {
						continue
					}
					ix = append(ix, bson.E{Key: spec.name, Value: spec.keys})
				}
			}
		}
		return ix
	}
	schema := func(class string, fields bson.D, metadata bson.D) bson.D {
		d := bson.D{
			{Key: "_id", Value: class},
			{Key: "objectId", Value: "string"},
			{Key: "updatedAt", Value: "date"},
			{Key: "createdAt", Value: "date"},
		}
		d = append(d, fields...)
		if metadata != nil {
			d = append(d, bson.E{Key: "_metadata", Value: metadata})
		}
		return d
	}
	meta := func(class string, permissions bson.D, extra ...bson.E) bson.D {
		m := bson.D{{Key: "class_permissions", Value: permissions}, {Key: "indexes", Value: indexesOf(class)}}
		return append(m, extra...)
	}
	f := func(kv ...string) bson.D {
		d := bson.D{}
		for i := 0; i < len(kv); i += 2 {
			d = append(d, bson.E{Key: kv[i], Value: kv[i+1]})
		}
		return d
	}
	none := bson.D{}
	auth := bson.D{{Key: "requiresAuthentication", Value: true}}
	admin := perm("role:" + RoleAdmin)
	owner := bson.D{{Key: "pointerFields", Value: bson.A{"owner"}}}
	public := perm("*")
	return []any{
		schema(ClassUser, f("username", "string", "email", "string", "emailVerified", "boolean",
			"authData", "object", "displayName", "string", "plan", "string", "orgId", "string"),
			meta(ClassUser, defaultCLP())),
		schema(ClassRole, f("name", "string", "users", "relation<_User>", "roles", "relation<_Role>"),
			meta(ClassRole, defaultCLP())),
		schema(ClassSession, f("user", "*_User", "installationId", "string", "sessionToken", "string",
			"expiresAt", "date", "createdWith", "object"),
			meta(ClassSession, defaultCLP())),
		schema(ClassArtist, f("name", "string", "country", "string", "genres", "array", "formedAt", "date",
			"verified", "boolean", "website", "string"),
			meta(ClassArtist, defaultCLP())),
		// Album deliberately has no _metadata (an old class): no CLP = public.
		schema(ClassAlbum, f("title", "string", "artist", "*Artist", "releasedAt", "date", "label", "string",
			"tracks", "number"), nil),
		schema(ClassSong, f("title", "string", "artist", "*Artist", "album", "*Album", "genre", "string",
			"plays", "number", "durationSec", "number", "releasedAt", "date", "tags", "array",
			"explicit", "boolean", "archived", "boolean", "orgId", "string", "mood", "string",
			"lyrics", "string", "meta", "object", "leak", "string", SongVectorField, "array"),
			meta(ClassSong,
				clp(public, public, public, auth, auth, perm("role:"+RoleModerator), none,
					bson.D{{Key: "*", Value: bson.A{ProtectedField}}}),
				bson.E{Key: "fields_options", Value: bson.D{
					{Key: "title", Value: bson.D{{Key: "required", Value: true}}},
				}})),
		schema(ClassPlaylist, f("name", "string", "owner", "*_User", "songs", "relation<Song>",
			"isPublic", "boolean", "followers", "number", "cover", "file", "location", "geopoint",
			"description", "string"),
			meta(ClassPlaylist, clp(public, public, public, auth, owner, owner, none, bson.D{{Key: "*", Value: bson.A{}}}))),
		schema(ClassInvoice, f("number", "string", "customer", "*_User", "amount", "number",
			"currency", "string", "status", "string", "dueDate", "date", "paidAt", "date", "orgId", "string"),
			meta(ClassInvoice, clp(auth, auth, auth, admin, admin, admin, none, bson.D{{Key: "*", Value: bson.A{}}}))),
		schema(ClassVaultSecret, f("service", "string", "apiKey", "string", "note", "string", "rotatedAt", "date"),
			meta(ClassVaultSecret, clp(none, none, none, none, none, none, none, bson.D{{Key: "*", Value: bson.A{}}}))),
		schema(ClassAuditLog, f("action", "string", "secret", "*VaultSecret", "actor", "*_User", "details", "string"),
			meta(ClassAuditLog, clp(public, public, public, none, none, none, none, bson.D{{Key: "*", Value: bson.A{}}}))),
	}
}

// songVector is a song's fixture vector: the deterministic hashing embedding
// (package embed, not semantic) of its title and lyrics, one per line, as
// parse-mcp embed computes it from the demo policy's embed_from.
func songVector(title, lyrics string) bson.A {
	text := title
	if lyrics != "" {
		text += "\n" + lyrics
	}
	v := embed.FixtureVector(text)
	out := make(bson.A, len(v))
	for i, x := range v {
		out[i] = num(x) // as Parse stores numbers: whole ones as int32
	}
	return out
}
