package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

// Policy variants are overlays on the demo policy (internal/demo/policy.yaml):
// testdata/policies/<name>.yaml holds only what the variant changes, so a
// change to the demo policy reaches every variant. The merge rule:
//
//   - a mapping merges into the demo's mapping key by key, recursively;
//   - a key whose overlay value is null (`key: null` or `key: ~`) is removed;
//   - any other value (a scalar, a list, a mapping where the demo has none)
//     replaces the demo's value whole; lists are never merged item by item;
//   - a key the demo does not have is appended after the demo's keys.
//
// An overlay's first line is a comment saying why it exists; every key it
// sets must change the demo (TestPolicyVariantFiles), so a variant never
// silently pins a copy of a demo value.

// policyVariant returns the demo policy with the overlay testdata/policies/
// <name>.yaml merged onto it, as YAML.
func policyVariant(name string) ([]byte, error) {
	overlay, err := os.ReadFile(filepath.Join("testdata", "policies", name+".yaml"))
	if err != nil {
		return nil, err
	}
	return mergePolicyYAML(demo.PolicyYAML, overlay)
}

// mergePolicyYAML merges overlay onto base by the rule above.
func mergePolicyYAML(base, overlay []byte) ([]byte, error) {
	var b, o yaml.Node
	if err := yaml.Unmarshal(base, &b); err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	if err := yaml.Unmarshal(overlay, &o); err != nil {
		return nil, fmt.Errorf("overlay: %w", err)
	}
	if len(o.Content) == 0 {
		return nil, fmt.Errorf("overlay: empty")
	}
	if len(b.Content) == 0 || b.Content[0].Kind != yaml.MappingNode || o.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("base and overlay must both be mappings")
	}
	mergeMapping(b.Content[0], o.Content[0])
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func mergeMapping(base, overlay *yaml.Node) {
	for i := 0; i+1 < len(overlay.Content); i += 2 {
		key, val := overlay.Content[i], overlay.Content[i+1]
		at := mappingIndex(base, key.Value)
		switch {
		case isNull(val):
			if at >= 0 {
				base.Content = append(base.Content[:at], base.Content[at+2:]...)
			}
		case at < 0:
			base.Content = append(base.Content, key, val)
		case val.Kind == yaml.MappingNode && base.Content[at+1].Kind == yaml.MappingNode:
			mergeMapping(base.Content[at+1], val)
		default:
			base.Content[at+1] = val
		}
	}
}

// mappingIndex is the index of key's key node in a mapping node, or -1.
func mappingIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// overlayRestates lists the paths where overlay sets a value the base already
// has (an overlay must only hold differences) and where it removes a key the
// base does not have.
func overlayRestates(base, overlay []byte) ([]string, error) {
	var b, o yaml.Node
	if err := yaml.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(overlay, &o); err != nil {
		return nil, err
	}
	var out []string
	var walk func(base, overlay *yaml.Node, path string)
	walk = func(base, overlay *yaml.Node, path string) {
		for i := 0; i+1 < len(overlay.Content); i += 2 {
			key, val := overlay.Content[i], overlay.Content[i+1]
			p := strings.TrimPrefix(path+"."+key.Value, ".")
			at := -1
			if base != nil {
				at = mappingIndex(base, key.Value)
			}
			switch {
			case at < 0:
				if isNull(val) {
					out = append(out, p+" (removes a key the demo policy does not have)")
				}
			case val.Kind == yaml.MappingNode && base.Content[at+1].Kind == yaml.MappingNode:
				walk(base.Content[at+1], val, p)
			case sameYAML(base.Content[at+1], val):
				out = append(out, p+" (same value as the demo policy)")
			}
		}
	}
	walk(b.Content[0], o.Content[0], "")
	return out, nil
}

func sameYAML(a, b *yaml.Node) bool {
	var x, y any
	if a.Decode(&x) != nil || b.Decode(&y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// TestPolicyOverlayMerge pins the merge rule on small documents.
func TestPolicyOverlayMerge(t *testing.T) {
	base := "a: 1\nm:\n  x: 1\n  y: [1, 2]\n  z: {p: 1}\nlast: 1\n"
	for _, tc := range []struct{ name, overlay, want string }{
		{"scalar replaced", "a: 2\n", "a: 2\nm:\n  x: 1\n  y: [1, 2]\n  z: {p: 1}\nlast: 1\n"},
		{"mapping merged key by key", "m: {x: 2, w: 3}\n", "a: 1\nm:\n  x: 2\n  y: [1, 2]\n  z: {p: 1}\n  w: 3\nlast: 1\n"},
		{"list replaced whole", "m: {y: [3]}\n", "a: 1\nm:\n  x: 1\n  y: [3]\n  z: {p: 1}\nlast: 1\n"},
		{"null removes", "m: {x: null, z: ~}\n", "a: 1\nm:\n  y: [1, 2]\nlast: 1\n"},
		{"new key appended", "n: {q: 1}\n", "a: 1\nm:\n  x: 1\n  y: [1, 2]\n  z: {p: 1}\nlast: 1\nn: {q: 1}\n"},
		{"mapping over scalar replaces", "a: {b: 1}\n", "a: {b: 1}\nm:\n  x: 1\n  y: [1, 2]\n  z: {p: 1}\nlast: 1\n"},
	} {
		got, err := mergePolicyYAML([]byte(base), []byte(tc.overlay))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
	if _, err := mergePolicyYAML([]byte(base), []byte("# only a comment\n")); err == nil {
		t.Error("an empty overlay merged without error")
	}
	restated, err := overlayRestates([]byte(base), []byte("a: 1\nm: {y: [1, 2], x: 3, gone: null}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[a (same value as the demo policy) m.y (same value as the demo policy) m.gone (removes a key the demo policy does not have)]"; fmt.Sprint(restated) != want {
		t.Errorf("overlayRestates = %v, want %s", restated, want)
	}
}
