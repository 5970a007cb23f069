package demo

import (
	"testing"
	"time"
)

// This file is the contract between the demo data and the tests that use it.
//
// Constants are design inputs the generator obeys (counts, genre split, ACL
// split). Variables are computed by the generator while it builds the rows
// (package initialisation runs it once, in a few milliseconds), so ids,
// tokens and every derived count are exactly what Seed writes.
// `go test ./demo -run TestFixtureSummary -v` prints all of them.
//
// Vocabulary used below:
//   - "active" = not archived, i.e. what the demo policy's Song
//     canonical_filter {archived: {$ne: true}} lets through (the default of
//     query_class / count_objects / aggregate / group_by…);
//   - "readable by X" = rows matching _rperm {$in: [null, "*", X's user id,
//     X's roles…]}; identity keys of the Readable maps are "public" (no
//     user), a username ("alice"…"frank"), or "role:Admin"/"role:Moderator"
//     (PARSE_MCP_ACL_ROLE; "role:Admin" expands to Admin+Moderator).

// SeedVersion is stored in the marker document; bump it on any change to the
// generator (the marker also stores a fingerprint of the data, so a forgotten
// bump still triggers a reseed).
const SeedVersion = 2

// SongVectorField holds each song's fixture vector (search.vector_field in
// the demo policy).
const SongVectorField = "lyricsEmbedding"

// AppName is the sample app's name.
const AppName = "Tunebase"

// MarkerCollection (prefixed like every other collection) holds the single
// document {_id: "version", v: SeedVersion, fingerprint, app}.
const MarkerCollection = "_parse_mcp_demo"

// Class names.
const (
	ClassUser        = "_User"
	ClassRole        = "_Role"
	ClassSession     = "_Session"
	ClassArtist      = "Artist"
	ClassAlbum       = "Album"
	ClassSong        = "Song"
	ClassPlaylist    = "Playlist"
	ClassInvoice     = "Invoice"
	ClassVaultSecret = "VaultSecret"
	ClassAuditLog    = "AuditLog"

	// HiddenClassName is the class the demo policy hides (hidden: true). It
	// holds fake API keys ("sk_test_FAKE_…"); Song.leak, Song.meta.credential
	// and AuditLog.secret point into it.
	HiddenClassName = ClassVaultSecret
)

// AllClasses are the ten classes, in the order Seed writes them.
var AllClasses = []string{ClassUser, ClassRole, ClassSession, ClassArtist, ClassAlbum, ClassSong,
	ClassPlaylist, ClassInvoice, ClassVaultSecret, ClassAuditLog}

// CustomClasses are the non-built-in classes.
var CustomClasses = []string{ClassArtist, ClassAlbum, ClassSong, ClassPlaylist, ClassInvoice,
	ClassVaultSecret, ClassAuditLog}

// Join collections (relation storage).
const (
	JoinRoleUsers     = "_Join:users:_Role"    // {owningId: roleId, relatedId: userId}
	JoinRoleRoles     = "_Join:roles:_Role"    // {owningId: Moderator, relatedId: Admin}
	JoinPlaylistSongs = "_Join:songs:Playlist" // Playlist.songs relation<Song>
)

// Roles. alice is Admin (and, through the hierarchy, Moderator); bob is
// Moderator; carol, dave, erin, frank hold no role.
const (
	RoleAdmin     = "Admin"
	RoleModerator = "Moderator"
)

// Organisations (orgId on _User, Song, Invoice): alice, bob, carol are in
// OrgNorth; dave, erin, frank in OrgSouth.
const (
	OrgNorth = "org_north"
	OrgSouth = "org_south"
)

// Usernames, in creation order. Every user's email is <username>@tunebase.example.
var Usernames = []string{"alice", "bob", "carol", "dave", "erin", "frank"}

// Row counts per class.
const (
	UserCount         = 6
	RoleCount         = 2
	SessionCount      = 4 // 3 valid + 1 expired
	ValidSessionCount = 3
	ArtistCount       = 30
	AlbumCount        = 80
	SongCount         = 600
	PlaylistCount     = 40
	InvoiceCount      = 120
	VaultSecretCount  = 10
	AuditLogCount     = 20
	RoleUserJoinCount = 2 // alice→Admin, bob→Moderator
	RoleRoleJoinCount = 1 // Admin ⊂ Moderator
	SchemaCount       = 10
)

// User credential columns, one user each (so redaction tests know where they
// are): alice _password_changed_at; bob _failed_login_count 2; carol
// _password_history; dave _auth_data_github (and the expired session); erin
// emailVerified false + _email_verify_token(+_expires_at); frank
// _perishable_token(+_expires_at) and _failed_login_count 1. Every user has
// _hashed_password, a fixed bcrypt-looking string that hashes nothing.
// _User rows carry ACL {self: rw}: any user identity reads exactly 1 user.

// Song: the genre split is exact (distinct counts, so sorted group_by output
// has no ties).
var Genres = []string{"rock", "pop", "electronic", "hiphop", "jazz", "ambient", "folk", "classical"}

// SongsPerGenre is the number of songs per genre (all songs, archived
// included).
var SongsPerGenre = map[string]int{
	"rock": 130, "pop": 115, "electronic": 95, "hiphop": 80,
	"jazz": 65, "ambient": 50, "folk": 40, "classical": 25,
}

// Song design counts.
const (
	SongArchivedCount = 60                            // archived: true; the rest have archived: false
	SongActiveCount   = SongCount - SongArchivedCount // pass the canonical filter

	// ACL shapes on Song (they add up to SongCount):
	SongNoACLCount         = 250 // no _rperm/_wperm/_acl at all (public)
	SongPublicACLCount     = 220 // _rperm ["*"], _wperm ["role:Moderator"]
	SongModeratorOnlyCount = 60  // _rperm/_wperm ["role:Moderator"]
	SongAdminOnlyCount     = 18  // _rperm/_wperm ["role:Admin"]
	SongUserOnlyCount      = 40  // _rperm/_wperm [one user id]
	SongMasterOnlyCount    = 12  // _rperm [], _wperm [], _acl {} (master only)

	// SongDoublePlaysCount songs have plays > 2^31-1, stored as BSON double
	// (integer-valued); all other plays are int32.
	SongDoublePlaysCount = 6
)

// Song fields that are sometimes missing: mood (~25% missing); lyrics (the
// large field, 1–2 KB, ~9%, never on ambient or classical); meta (~15%, an
// object with an embedded BSON date importedAt and an embedded pointer
// originalArtist {__type, className, objectId}); leak (2 rows). tags is always
// present (possibly []). Sizes of the optional sets are in the vars below.

// ProtectedField of ProtectedFieldsClass is listed in
// _SCHEMA._metadata.class_permissions.protectedFields {"*": ["lyrics"]}: it
// must be stripped for every scoped identity (master still sees it). It is
// also the policy's large field.
const (
	ProtectedFieldsClass = ClassSong
	ProtectedField       = "lyrics"
)

// Class-level permissions written to _SCHEMA (find/count/get; create/update/
// delete; addField is master-only wherever not noted):
//
//	_User, _Role, _Session, Artist  Parse's default CLP: everything {"*":true}
//	Album        no _metadata at all → no CLP → public
//	Song         read {"*"}; create/update requiresAuthentication; delete {"role:Moderator"}
//	Playlist     read {"*"}; create requiresAuthentication; update/delete pointerFields ["owner"]
//	Invoice      read requiresAuthentication; writes {"role:Admin"}
//	VaultSecret  {} everywhere (master only)
//	AuditLog     read {"*"}; writes master only; rows have no ACL (public)

// InvoiceAsOf is the "today" of the invoice data: open invoices are due after
// it; overdue ones were due before it.
var InvoiceAsOf = time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)

// baseDate is when Tunebase launched: the first _created_at.
var baseDate = time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)

// BaseDate is the earliest _created_at in the data set.
var BaseDate = baseDate

// fx is computed at package initialisation from a fresh generation whose
// documents are then dropped. Only test binaries compute it: the facts exist
// for tests to assert on, and generating them costs the server binary (which
// imports this package for Seed) tens of milliseconds and megabytes at every
// start-up. Seed never reads them.
var fx = factsForTests()

func factsForTests() facts {
	if !testing.Testing() {
		return facts{}
	}
	return generate().facts
}

// Users and roles.
var (
	UserAliceID = fx.userIDs["alice"]
	UserBobID   = fx.userIDs["bob"]
	UserCarolID = fx.userIDs["carol"]
	UserDaveID  = fx.userIDs["dave"]
	UserErinID  = fx.userIDs["erin"]
	UserFrankID = fx.userIDs["frank"]
	// UserIDs maps username → objectId; UserOrg username → orgId.
	UserIDs = fx.userIDs
	UserOrg = fx.userOrgs

	RoleAdminID     = fx.roleAdminID
	RoleModeratorID = fx.roleModeratorID
)

// Sessions: "r:" + 32 hex. alice, bob, carol: login/password, expiresAt
// 2099-12-31. dave: login/github, expired 2020-06-01 (must be refused).
var (
	AliceSessionToken   = fx.sessionTokens["alice"]
	BobSessionToken     = fx.sessionTokens["bob"]
	CarolSessionToken   = fx.sessionTokens["carol"]
	ExpiredSessionToken = fx.expiredSessionToken
	// SessionTokens maps username → valid token (alice, bob, carol).
	SessionTokens = fx.sessionTokens
	// SessionIDs maps username → _Session objectId (dave's is the expired one).
	SessionIDs = fx.sessionIDs
)

// Song visibility. All* count every row, Active* only non-archived rows.
var (
	SongReadableByPublic        = fx.songReadable["public"]
	SongReadableByAlice         = fx.songReadable["alice"]
	SongReadableByBob           = fx.songReadable["bob"]
	SongReadableByCarol         = fx.songReadable["carol"]
	SongReadableByRoleModerator = fx.songReadable["role:"+RoleModerator]
	SongReadableByRoleAdmin     = fx.songReadable["role:"+RoleAdmin]

	ActiveSongReadableByPublic        = fx.activeSongReadable["public"]
	ActiveSongReadableByAlice         = fx.activeSongReadable["alice"]
	ActiveSongReadableByBob           = fx.activeSongReadable["bob"]
	ActiveSongReadableByCarol         = fx.activeSongReadable["carol"]
	ActiveSongReadableByRoleModerator = fx.activeSongReadable["role:"+RoleModerator]
	ActiveSongReadableByRoleAdmin     = fx.activeSongReadable["role:"+RoleAdmin]

	// SongReadable / ActiveSongReadable: identity key → count (see top).
	SongReadable       = fx.songReadable
	ActiveSongReadable = fx.activeSongReadable
)

// Song aggregates (the expected answers of count/group_by/distinct calls).
var (
	ActiveSongsPerGenre = fx.activeSongsPerGenre
	SongsPerOrg         = fx.songsPerOrg
	ActiveSongsPerOrg   = fx.activeSongsPerOrg
	// By releasedAt year (UTC).
	SongsPerReleaseYear       = fx.songsPerYear
	ActiveSongsPerReleaseYear = fx.activeSongsPerYear
	// Active songs per releasedAt month ("2020-01"…) for year 2020, bucketed in
	// UTC and in +09:00 (SongTZEdgeID moves from June to July in +09:00).
	ActiveSongsReleasedPerMonth2020      = fx.activePerMonth2020UTC
	ActiveSongsReleasedPerMonth2020Plus9 = fx.activePerMonth2020Plus9

	SongsPerMood        = fx.songsPerMood // songs that have a mood
	SongWithMoodCount   = fx.songsWithMood
	SongWithMetaCount   = fx.songsWithMeta
	SongWithLyricsCount = fx.songsWithLyrics
	SongExplicitCount   = fx.songsExplicit
	// Songs containing each tag (= group_by tags with flatten_arrays).
	SongsPerTag       = fx.songsPerTag
	ActiveSongsPerTag = fx.activeSongsPerTag
	// Sum of plays (exact; int32 and double values mixed).
	SongPlaysTotal          = fx.playsTotal
	SongPlaysPerGenre       = fx.playsPerGenre
	ActiveSongPlaysPerGenre = fx.activePlaysGenre
)

// Specific songs (the first of each kind in generation order).
var (
	SongPublicID        = fx.songIDs["public"]    // no ACL fields, active, nothing special
	SongStarACLID       = fx.songIDs["star"]      // _rperm ["*"], active
	SongArchivedID      = fx.songIDs["archived"]  // no ACL, archived (hidden by the canonical filter)
	SongModeratorOnlyID = fx.songIDs["moderator"] // _rperm ["role:Moderator"], active
	SongAdminOnlyID     = fx.songIDs["admin"]     // _rperm ["role:Admin"], active
	SongMasterOnlyID    = fx.songIDs["master"]    // _rperm [], active
	SongUserOnlyID      = fx.songIDs["user"]      // _rperm [<SongUserOnlyOwner's id>], active
	SongUserOnlyOwner   = fx.songUserOnlyOwner    // username
	SongWithLyricsID    = fx.songIDs["lyrics"]    // public, active, has lyrics
	SongDoublePlaysID   = fx.songIDs["double"]    // plays stored as double
	SongNoMoodID        = fx.songIDs["nomood"]    // public, active, mood missing
	SongWithMetaID      = fx.songIDs["meta"]      // public, active, meta with embedded date + Artist pointer
	SongTopPlaysID      = fx.songTopPlaysID       // highest plays
	SongNewestID        = fx.songNewestID         // latest _created_at
	SongOldestID        = fx.songOldestID         // earliest _created_at
	// SongTZEdgeID: releasedAt 2020-06-30T20:00:00Z (public, active).
	SongTZEdgeID = fx.songTZEdgeID

	// Redaction attack fixtures (public, active rows): SongLeakIDs[i] has
	// leak: "VaultSecret$<SongLeakSecretIDs[i]>"; SongEmbeddedSecretID has
	// meta.credential = {__type:"Pointer", className:"VaultSecret",
	// objectId: SongEmbeddedSecretTarget}.
	SongLeakIDs              = fx.songLeakIDs
	SongLeakSecretIDs        = fx.songLeakSecretIDs
	SongEmbeddedSecretID     = fx.songEmbeddedSecretID
	SongEmbeddedSecretTarget = fx.songEmbeddedSecretTarget
)

// Artists and albums.
var (
	ArtistIDs = fx.artistIDs // in creation order
	// TopArtistID has the most songs (TopArtistSongCount).
	TopArtistID        = fx.topArtistID
	TopArtistSongCount = fx.topArtistSongs
	AlbumIDs           = fx.albumIDs
	// LargestAlbumID has the most songs; its tracks field = LargestAlbumTracks.
	LargestAlbumID     = fx.featuredAlbumID
	LargestAlbumTracks = fx.featuredAlbumTrk
)

// Playlists. Public playlists have _rperm ["*", owner], private ones
// [owner]; _wperm is always [owner]. Featured: "Alice's Road Trip", owned by
// alice, public, 12 songs, has cover and location.
var (
	PlaylistFeaturedID      = fx.playlistFeaturedID
	PlaylistFeaturedSongIDs = fx.playlistFeaturedSongIDs
	PlaylistSongJoinCount   = fx.playlistSongJoins // rows in _Join:songs:Playlist
	PlaylistPublicCount     = fx.playlistPublic
	PlaylistsPerOwner       = fx.playlistsPerOwner // username → count
	PlaylistReadable        = fx.playlistReadable  // identity key → count
	PlaylistWithCoverCount  = fx.playlistWithCover
	PlaylistWithLocation    = fx.playlistWithLocation
)

// Invoices: _rperm [customer, "role:Admin"], _wperm ["role:Admin"]; status
// paid|open|overdue; currency USD (org_north) / EUR (org_south); paidAt only
// on paid ones.
var (
	InvoicesPerStatus   = fx.invoicesPerStatus
	InvoicesPerCustomer = fx.invoicesPerCustomer // username → count
	InvoicesPerOrg      = fx.invoicesPerOrg
	InvoiceReadable     = fx.invoiceReadable // identity key → count (public 0, alice all)
)

// Hidden class and its references.
var (
	VaultSecretIDs              = fx.vaultSecretIDs
	AuditLogPerAction           = fx.auditLogPerAction
	AuditLogDistinctSecretCount = fx.auditLogDistinctSecrets // distinct _p_secret values
)

// CollectionCounts maps every collection the demo writes (unprefixed, joins
// and _SCHEMA included, marker excluded) to its document count.
var CollectionCounts = fx.collectionCounts
