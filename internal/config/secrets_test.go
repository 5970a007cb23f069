package config

import (
	"reflect"
	"regexp"
	"slices"
	"testing"
)

// TestSecretsDerived: every credential of the configuration reaches the
// scrubber — Secret fields, tagged strings, named keys, URL passwords (raw
// and decoded) — and nothing else does.
func TestSecretsDerived(t *testing.T) {
	c := valid()
	c.MongoDBURI = "mongodb://app:p%40ss-mongo-1@db:27017/app"
	c.SessionToken = "r:session-token-0001"
	c.APIKey = "plain-api-key-0001"
	c.APIKeys = NewSecret("alice:named-key-alice-01,bob:named-key-bob-0001")
	c.ConfirmSecret = NewSecret("confirm-secret-0001")
	c.JWTSecret = NewSecret("jwt-secret-0001")
	c.LimitsURI = NewSecret("mongodb://lim:limits-pass-01@db/x")
	c.MasterKey = NewSecret("master-key-0001")
	c.EmbeddingsAPIKey = NewSecret("emb-key-0001")
	c.EmbeddingsURL = "https://u:emb-url-pass-01@emb.example/v1"
	got := c.Secrets()
	for _, want := range []string{"p%40ss-mongo-1", "p@ss-mongo-1", "r:session-token-0001", "plain-api-key-0001",
		"alice:named-key-alice-01,bob:named-key-bob-0001", "named-key-alice-01", "named-key-bob-0001",
		"confirm-secret-0001", "jwt-secret-0001", "mongodb://lim:limits-pass-01@db/x", "limits-pass-01",
		"master-key-0001", "emb-key-0001", "emb-url-pass-01"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets() lacks %q: %q", want, got)
		}
	}
	for _, notSecret := range []string{"app", "db", "info", c.MongoDBURI, c.EmbeddingsURL} {
		if slices.Contains(got, notSecret) {
			t.Errorf("Secrets() holds %q", notSecret)
		}
	}
}

// TestEveryCredentialFieldIsScrubbed: a setting named like a credential is a
// Secret or a string tagged secret:"true", so Secrets() cannot miss it — a
// field added as a plain string fails here.
func TestEveryCredentialFieldIsScrubbed(t *testing.T) {
	credential := regexp.MustCompile(`KEY|TOKEN|SECRET|PASSWORD|PASSPHRASE`)
	for f := range reflect.TypeFor[Config]().Fields() {
		if !credential.MatchString(f.Tag.Get("envconfig")) {
			continue
		}
		if f.Type != reflect.TypeFor[Secret]() && f.Tag.Get("secret") != "true" {
			t.Errorf("%s (%s) is a credential but neither a Secret nor tagged secret:\"true\"", f.Name, f.Tag.Get("envconfig"))
		}
	}
}
