package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// Masked replaces secrets wherever they would be shown (logs, errors,
// request previews).
const Masked = "********"

// Secret is a credential that prints as Masked in every format (%v, %s, %#v,
// JSON), so that it cannot leak through a log line or an error message.
type Secret struct{ v string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{s} }

// Reveal returns the secret itself, only to put it in a request header.
func (s Secret) Reveal() string { return s.v }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.v != "" }

func (s Secret) String() string   { return Masked }
func (s Secret) GoString() string { return Masked }

// Decode lets envconfig read a Secret from the environment.
func (s *Secret) Decode(v string) error { s.v = v; return nil }

// MarshalJSON masks the secret.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(Masked) }

// ParseServerURL checks a Parse Server URL (PARSE_MCP_SERVER_URL): http or
// https, a host, no user info, query or fragment.
func ParseServerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", refusedURL(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q must start with http:// or https://", refusedURL(raw))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", refusedURL(raw))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q must not carry user info, a query or a fragment", refusedURL(raw))
	}
	return u, nil
}

// refusedURL is a URL as a refusal quotes it: everything up to its last @
// (user info, a password typically, which may hold a / or ? of its own)
// replaced by Masked, and so are its query and fragment (a token or a
// signature often travels there).
func refusedURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	} else {
		scheme += "://"
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = Masked + rest[i:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i+1] + Masked
	}
	return scheme + rest
}

// Secrets is every credential the configuration holds, for the process's one
// scrubber (internal/scrub): the value of each Secret field (or []Secret)
// and of each string field tagged secret:"true", every named API key, and the password
// of every setting that is a URL with user info (the MongoDB connection
// string, the limits store's), as written and percent-decoded. It is
// derived from the fields, so a Secret field added later is scrubbed
// without a list to update.
func (c *Config) Secrets() []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f, sf := v.Field(i), v.Type().Field(i)
			if !sf.IsExported() {
				continue
			}
			var value string
			switch {
			case sf.Type == reflect.TypeFor[Secret]():
				value = f.Interface().(Secret).Reveal()
				out = append(out, value)
			case f.Kind() == reflect.String:
				value = f.String()
				if sf.Tag.Get("secret") == "true" {
					out = append(out, value)
				}
			case f.Kind() == reflect.Struct:
				walk(f)
				continue
			case f.Kind() == reflect.Slice && sf.Type.Elem() == reflect.TypeFor[Secret]():
				for j := range f.Len() {
					out = append(out, f.Index(j).Interface().(Secret).Reveal())
				}
				continue
			}
			out = append(out, URIPassword(value)...)
		}
	}
	walk(reflect.ValueOf(c).Elem())
	if named, err := c.NamedAPIKeys(); err == nil {
		for _, k := range named {
			out = append(out, k.Key.Reveal())
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// URIPassword is the password of a URL's user info (raw and decoded), if
// any.
func URIPassword(uri string) []string {
	_, userinfo, _, _ := splitURI(uri)
	_, password, ok := strings.Cut(userinfo, ":")
	if !ok || password == "" {
		return nil
	}
	if decoded, err := url.PathUnescape(password); err == nil && decoded != password {
		return []string{password, decoded}
	}
	return []string{password}
}
