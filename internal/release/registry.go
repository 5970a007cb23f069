package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// RegistrySchema is the MCP Registry's server.json schema version written.
const RegistrySchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// RegistryEntry is the MCP Registry's server.json for a release: one mcpb
// package per bundle, each with the GitHub release asset's URL and its
// SHA-256 (the registry requires both; clients check the hash before
// running anything), and the settings as environment variables, from the
// same table as the bundle's form.
func RegistryEntry(version string, bundles []string) ([]byte, error) {
	type envVar struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		IsRequired  bool   `json:"isRequired"`
		IsSecret    bool   `json:"isSecret"`
		Format      string `json:"format,omitempty"`
		Default     string `json:"default,omitempty"`
	}
	type pkg struct {
		RegistryType         string            `json:"registryType"`
		Identifier           string            `json:"identifier"`
		Version              string            `json:"version"`
		FileSHA256           string            `json:"fileSha256"`
		Transport            map[string]string `json:"transport"`
		EnvironmentVariables []envVar          `json:"environmentVariables"`
	}
	var vars []envVar
	for _, s := range Settings {
		v := envVar{Name: s.Variable, Description: s.Option.Title + ": " + s.Option.Description, IsSecret: s.Option.Sensitive}
		switch s.Option.Type {
		case "boolean":
			v.Format = "boolean"
		case "file":
			v.Format = "filepath"
		}
		switch d := s.Option.Default.(type) {
		case bool:
			v.Default = fmt.Sprint(d)
		case string:
			v.Default = d
		}
		vars = append(vars, v)
	}
	var pkgs []pkg
	for _, b := range bundles {
		sum, err := fileSHA256(b)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, pkg{
			RegistryType:         "mcpb",
			Identifier:           fmt.Sprintf("%s/releases/download/v%s/%s", repositoryURL, version, filepath.Base(b)),
			Version:              version,
			FileSHA256:           sum,
			Transport:            map[string]string{"type": "stdio"},
			EnvironmentVariables: vars,
		})
	}
	entry := map[string]any{
		"$schema":     RegistrySchema,
		"name":        registryName,
		"title":       "Parse MCP",
		"description": "Query a Parse Server app's MongoDB database in Parse's format, read-only behind a policy layer.",
		"version":     version,
		"websiteUrl":  repositoryURL + "#readme",
		"repository":  map[string]string{"url": repositoryURL, "source": "github"},
		"packages":    pkgs,
	}
	b, err := json.MarshalIndent(entry, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
