package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// LoadFile reads a policy file (YAML, or JSON by extension or content).
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("PARSE_MCP_POLICY_FILE: %w", err)
	}
	f, err := Parse(b, strings.HasSuffix(strings.ToLower(path), ".json"))
	if err != nil {
		return nil, fmt.Errorf("PARSE_MCP_POLICY_FILE %s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a policy document. Unknown keys are errors: a typo in a
// security policy must not be silently ignored.
func Parse(b []byte, isJSON bool) (*File, error) {
	var f File
	trimmed := bytes.TrimSpace(b)
	if isJSON || (len(trimmed) > 0 && trimmed[0] == '{') {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, err
		}
		return &f, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && err.Error() != "EOF" {
		return nil, err
	}
	normalizeYAML(&f)
	return &f, nil
}

// normalizeYAML converts YAML-decoded generic values (map[string]any with
// int values) to the JSON shapes the rest of the code expects (float64).
func normalizeYAML(f *File) {
	for _, cp := range f.Classes {
		if cp == nil {
			continue
		}
		cp.CanonicalFilter = jsonShape(cp.CanonicalFilter)
	}
	for k, v := range f.Agent.Filters {
		f.Agent.Filters[k] = jsonShape(v)
	}
}

func jsonShape(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return m
	}
	return out
}
