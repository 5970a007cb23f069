package parsedb

// Identity resolution (SECURITY.md "Identity, ACL and CLP"):
// a session token, a user id or a role name becomes the set of ACL entries
// Parse Server would put in the request's aclGroup — "*", the user id and
// "role:<name>" for every role the identity holds, the role hierarchy walked
// upward. The policy turns that set into the _rperm constraint injected into
// every read.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Identity kinds.
const (
	IdentityMaster  = "master"
	IdentitySession = "session_token"
	IdentityUser    = "acl_user"
	IdentityRole    = "acl_role"
)

// Identity is a resolved identity scope.
type Identity struct {
	Kind string
	// UserID is the _User objectId (session token and ACL user identities).
	UserID string
	// Roles are the names of every role the identity holds, the hierarchy
	// expanded, sorted.
	Roles []string
	// ExpiresAt is the session's expiry (zero: never, or not a session).
	ExpiresAt time.Time
}

// Master reports whether the identity is the master posture (no scope).
func (id *Identity) Master() bool { return id == nil || id.Kind == IdentityMaster || id.Kind == "" }

// Authenticated reports whether the identity is more than the public "*":
// Parse Server's requiresAuthentication accepts any aclGroup holding more
// than "*".
func (id *Identity) Authenticated() bool {
	return !id.Master() && (id.UserID != "" || len(id.Roles) > 0)
}

// Entries is the aclGroup: "*", the user id, then "role:<name>" for each
// role, in that order.
func (id *Identity) Entries() []string {
	out := make([]string, 0, 2+len(id.Roles))
	out = append(out, "*")
	if id.UserID != "" {
		out = append(out, id.UserID)
	}
	for _, r := range id.Roles {
		out = append(out, "role:"+r)
	}
	return out
}

// ReadACLFilter is the read constraint for this identity:
// {_rperm: {$in: [null, "*", userId, "role:…"]}} — null matches rows
// without ACL fields (public); an empty _rperm ([], master only) matches
// nothing. It returns nil in master posture.
func (id *Identity) ReadACLFilter() bson.D {
	if id.Master() {
		return nil
	}
	in := bson.A{nil}
	for _, e := range id.Entries() {
		in = append(in, e)
	}
	return bson.D{{Key: "_rperm", Value: bson.D{{Key: "$in", Value: in}}}}
}

// Expired reports whether a session identity has expired at now.
func (id *Identity) Expired(now time.Time) bool {
	return id != nil && !id.ExpiresAt.IsZero() && !now.Before(id.ExpiresAt)
}

// IdentityError is an identity that cannot be resolved: an unknown or
// expired session token, an unknown user or role. Variable names the
// environment variable that configured it.
type IdentityError struct {
	Variable string
	Problem  string
}

func (e *IdentityError) Error() string { return e.Variable + ": " + e.Problem }

// MaxRoles bounds the role hierarchy walk (a cycle is cut anyway; this
// guards against a pathological _Join:roles:_Role).
const MaxRoles = 10000

// ResolveSessionToken resolves a session token through _Session: the
// session must exist and not be expired (expiresAt missing = never expires)
// and its user must exist.
func ResolveSessionToken(ctx context.Context, s *Store, token string, now time.Time) (*Identity, error) {
	const v = "PARSE_MCP_SESSION_TOKEN"
	var doc bson.M
	err := s.Collection("_Session").FindOne(ctx, bson.D{{Key: "_session_token", Value: token}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, &IdentityError{v, "unknown session token (no _Session has it; log in again and use the new token)"}
	}
	if err != nil {
		return nil, fmt.Errorf("reading _Session: %w", err)
	}
	expires := sessionExpiry(doc)
	if !expires.IsZero() && !now.Before(expires) {
		return nil, &IdentityError{v, fmt.Sprintf("the session token expired at %s (log in again and use the new token)", expires.Format(time.RFC3339))}
	}
	ptr, _ := doc["_p_user"].(string)
	userID := ""
	if len(ptr) > len("_User$") && ptr[:len("_User$")] == "_User$" {
		userID = ptr[len("_User$"):]
	}
	if userID == "" {
		return nil, &IdentityError{v, "the session has no user (only user sessions can scope parse-mcp)"}
	}
	id, err := resolveUser(ctx, s, userID, v)
	if err != nil {
		return nil, err
	}
	id.Kind = IdentitySession
	id.ExpiresAt = expires
	return id, nil
}

// SessionExpiry is the expiresAt of the _Session holding token (zero when
// it has none, or no _Session holds it): what bounds caching a session that
// Parse Server's GET /users/me accepted, since that answer does not say.
func SessionExpiry(ctx context.Context, s *Store, token string) (time.Time, error) {
	var doc bson.M
	err := s.Collection("_Session").FindOne(ctx, bson.D{{Key: "_session_token", Value: token}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading _Session: %w", err)
	}
	return sessionExpiry(doc), nil
}

// sessionExpiry reads a _Session document's expiry (zero: none).
func sessionExpiry(doc bson.M) time.Time {
	for _, k := range []string{"expiresAt", "_expiresAt"} {
		switch t := doc[k].(type) {
		case bson.DateTime:
			return t.Time().UTC()
		case time.Time:
			return t.UTC()
		case string:
			if p, err := time.Parse(time.RFC3339Nano, t); err == nil {
				return p.UTC()
			}
		}
	}
	return time.Time{}
}

// ResolveUser resolves a _User objectId (PARSE_MCP_ACL_USER).
func ResolveUser(ctx context.Context, s *Store, userID string) (*Identity, error) {
	return resolveUser(ctx, s, userID, "PARSE_MCP_ACL_USER")
}

func resolveUser(ctx context.Context, s *Store, userID, variable string) (*Identity, error) {
	n, err := s.Collection("_User").CountDocuments(ctx, bson.D{{Key: "_id", Value: userID}})
	if err != nil {
		return nil, fmt.Errorf("reading _User: %w", err)
	}
	if n == 0 {
		return nil, &IdentityError{variable, "no _User has this objectId"}
	}
	direct, err := s.joinOwners(ctx, "users", []string{userID})
	if err != nil {
		return nil, err
	}
	roles, err := s.expandRoles(ctx, direct)
	if err != nil {
		return nil, err
	}
	return &Identity{Kind: IdentityUser, UserID: userID, Roles: roles}, nil
}

// ResolveRole resolves a role name (PARSE_MCP_ACL_ROLE): the role itself
// plus every role it inherits through the hierarchy.
func ResolveRole(ctx context.Context, s *Store, name string) (*Identity, error) {
	var doc bson.M
	err := s.Collection("_Role").FindOne(ctx, bson.D{{Key: "name", Value: name}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, &IdentityError{"PARSE_MCP_ACL_ROLE", "no _Role has this name"}
	}
	if err != nil {
		return nil, fmt.Errorf("reading _Role: %w", err)
	}
	rid, ok := doc["_id"].(string)
	if !ok {
		return nil, &IdentityError{"PARSE_MCP_ACL_ROLE", "the role has no string objectId"}
	}
	roles, err := s.expandRoles(ctx, []string{rid})
	if err != nil {
		return nil, err
	}
	return &Identity{Kind: IdentityRole, Roles: roles}, nil
}

// joinOwners returns the distinct owningId of _Join:<field>:_Role rows whose
// relatedId is in related.
func (s *Store) joinOwners(ctx context.Context, field string, related []string) ([]string, error) {
	in := bson.A{}
	for _, r := range related {
		in = append(in, r)
	}
	coll := s.JoinCollection(field, "_Role")
	cur, err := coll.Find(ctx, bson.D{{Key: "relatedId", Value: bson.D{{Key: "$in", Value: in}}}})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", coll.Name(), err)
	}
	defer cur.Close(ctx)
	var out []string
	for cur.Next(ctx) {
		if id, ok := cur.Current.Lookup("owningId").StringValueOK(); ok {
			out = append(out, id)
		}
	}
	return out, cur.Err()
}

// expandRoles walks the hierarchy upward from the given role ids (members of
// a child role hold its parents: _Join:roles:_Role {owningId: parent,
// relatedId: child}) until no new role appears, cutting cycles, and returns
// the roles' names, sorted.
func (s *Store) expandRoles(ctx context.Context, start []string) ([]string, error) {
	seen := map[string]bool{}
	frontier := []string{}
	for _, id := range start {
		if !seen[id] {
			seen[id] = true
			frontier = append(frontier, id)
		}
	}
	for len(frontier) > 0 {
		if len(seen) > MaxRoles {
			return nil, fmt.Errorf("role hierarchy has more than %d roles", MaxRoles)
		}
		parents, err := s.joinOwners(ctx, "roles", frontier)
		if err != nil {
			return nil, err
		}
		frontier = frontier[:0]
		for _, p := range parents {
			if !seen[p] {
				seen[p] = true
				frontier = append(frontier, p)
			}
		}
	}
	if len(seen) == 0 {
		return nil, nil
	}
	ids := bson.A{}
	for id := range seen {
		ids = append(ids, id)
	}
	cur, err := s.Collection("_Role").Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, fmt.Errorf("reading _Role: %w", err)
	}
	defer cur.Close(ctx)
	var names []string
	for cur.Next(ctx) {
		if n, ok := cur.Current.Lookup("name").StringValueOK(); ok && n != "" {
			names = append(names, n)
		}
	}
	if err := cur.Err(); err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// UserTenant is the tenant a user belongs to: the value of field on its
// _User row (a String, or a Pointer's objectId); "" when the row has none.
func UserTenant(ctx context.Context, s *Store, userID, field string) (string, error) {
	var doc bson.M
	err := s.Collection("_User").FindOne(ctx, bson.D{{Key: "_id", Value: userID}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading _User: %w", err)
	}
	if v, ok := doc[field].(string); ok {
		return v, nil
	}
	if p, ok := doc["_p_"+field].(string); ok {
		if _, id, found := strings.Cut(p, "$"); found {
			return id, nil
		}
	}
	return "", nil
}
