package parsedb

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// authProviderRe is what an auth provider name may be: a plain name, so that
// "_auth_data_<provider>.id" is one field path (no dots, no $).
var authProviderRe = NewNamePattern("", "A-Za-z0-9_-", "A-Za-z0-9_-", 64)

// ErrAmbiguousUser: more than one _User carries the same authData id.
var ErrAmbiguousUser = errors.New("more than one _User has this authData id")

// UserIDByAuth returns the objectId of the _User that id names: with a
// provider, the user whose authData.<provider>.id is id (Parse stores it as
// _auth_data_<provider>.id, the key Parse's own auth adapters log in by);
// without one, the user whose objectId is id. "" (and no error) when no user
// matches; ErrAmbiguousUser when two do, rather than picking one.
func (s *Store) UserIDByAuth(ctx context.Context, provider, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	filter := bson.D{{Key: "_id", Value: id}}
	if provider != "" {
		if !authProviderRe.MatchString(provider) {
			return "", fmt.Errorf("auth provider %q is not a plain name", provider)
		}
		filter = bson.D{{Key: "_auth_data_" + provider + ".id", Value: id}}
	}
	opts := options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(2)
	cur, err := s.Collection("_User").Find(ctx, filter, opts)
	if err != nil {
		return "", fmt.Errorf("reading _User: %w", err)
	}
	var rows []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		return "", fmt.Errorf("reading _User: %w", err)
	}
	switch len(rows) {
	case 0:
		return "", nil
	case 1:
		return rows[0].ID, nil
	}
	return "", ErrAmbiguousUser
}
