// Package doclinks holds the tests that keep the repository's documents
// connected: every relative link and #anchor in README.md, SECURITY.md,
// ARCHITECTURE.md and docs/*.md resolves, and every section a code comment
// or document cites by name (README.md "…", docs/writes.md "…") exists.
package doclinks
