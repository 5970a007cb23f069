package parsedb

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestConfirmationLedger: two processes (two ledgers) on one database share
// the signing secret created once, a nonce is spent once across both, and
// expired records are swept where the server has no TTL index — never the
// secret, never a record whose token could still be accepted.
func TestConfirmationLedger(t *testing.T) {
	base := aclStore(t)
	store := NewStore(base.Client, "parsedb_acl_test", fmt.Sprintf("confirm_%d_", time.Now().UnixNano()))
	coll := store.Collection(ConfirmationCollection)
	t.Cleanup(func() { _ = coll.Drop(context.Background()) })
	ctx := context.Background()
	a, b := NewConfirmationLedger(store, ""), NewConfirmationLedger(store, "")

	sa, err := a.Secret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Secret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sa) != 32 || !bytes.Equal(sa, sb) {
		t.Fatalf("the two processes sign with different secrets (%d bytes)", len(sa))
	}
	fixed := NewConfirmationLedger(store, "a-configured-secret-0123456789abcdef")
	if s, _ := fixed.Secret(ctx); string(s) != "a-configured-secret-0123456789abcdef" {
		t.Fatalf("configured secret not used: %q", s)
	}

	now := time.Unix(1_900_000_000, 0)
	a.now, b.now = func() time.Time { return now }, func() time.Time { return now }
	spend := func(l *ConfirmationLedger, nonce string, expires time.Time) bool {
		t.Helper()
		fresh, err := l.Spend(ctx, []byte(nonce), expires)
		if err != nil {
			t.Fatal(err)
		}
		return fresh
	}
	if !spend(a, "n1", now.Add(time.Minute)) {
		t.Fatal("first spend refused")
	}
	if spend(b, "n1", now.Add(time.Minute)) || spend(a, "n1", now.Add(time.Minute)) {
		t.Fatal("a nonce was spent twice")
	}
	if !spend(b, "n2", now.Add(time.Minute)) {
		t.Fatal("another nonce refused")
	}

	// Past the retention of n1 and n2 (not of n3): the next spend sweeps them.
	now = now.Add(time.Minute + confirmationRetention + time.Second)
	if !spend(a, "n3", now.Add(time.Minute)) {
		t.Fatal("n3 refused")
	}
	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 { // the secret and n3
		var docs []bson.M
		cur, _ := coll.Find(ctx, bson.D{})
		_ = cur.All(ctx, &docs)
		t.Fatalf("after the sweep: %v", docs)
	}
	if s, err := NewConfirmationLedger(store, "").Secret(ctx); err != nil || !bytes.Equal(s, sa) {
		t.Fatalf("the secret did not survive the sweep: %v", err)
	}
}
